"""Grounding: a lifted task instantiated over its objects, reduced by reachability, compiled to a goap `Domain`.

See `goap.pddl` for the rules (delete-relaxed reachability, static predicates folded, fact and action names).

Grounding is bounded (`GroundingLimits`): a schema of six parameters over 30 objects has 729 million argument
tuples, and a task can reach millions of atoms. Instances and atoms are counted as they are made, before
anything is compiled or allocated for them, and the work is stopped at a deadline; each bound ends in a
`PddlError` naming the action (or predicate) and the count, so the user knows which schema to blame.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import product
from typing import Any

from goap import domain as _domain_module
from goap.domain import BOOL, Action, Condition, Domain, DomainError, Effect, Fact, Goal, When, domain_from_spec
from goap.pddl.lifted import Atom, LiftedDomain, LiftedProblem, Schema, Term
from goap.pddl.normal import GOAL_ATOM, goal_schemas, variants
from goap.pddl.reader import PddlError

GOAL_NAME = "goal"


@dataclass(frozen=True)
class GroundingLimits:
    """Bounds on one grounding; the defaults are far above what the IPC optimal-track STRIPS tasks need.

    Attributes:
        max_actions: ground action instances (counted in each reachability round, before they are kept).
        max_facts: reachable atoms of changing predicates (each becomes one bool fact).
        max_table_bytes: the planner's action tables (four uint64 words per action and state word).
        seconds: wall time for the whole grounding; None for no deadline.
    """

    max_actions: int = 200_000
    max_facts: int = 100_000
    max_table_bytes: int = 512 * 2**20
    seconds: float | None = 60.0


class _Budget:
    """Counts work and checks the deadline every few thousand steps, naming what was being grounded."""

    def __init__(self, limits: GroundingLimits, file: str):
        self.limits = limits
        self.file = file
        self.t0 = time.perf_counter()
        self.deadline = None if limits.seconds is None else self.t0 + limits.seconds
        self.steps = 0
        self.where: tuple[str, int | None] = ("", None)  # (item, line) of the schema being grounded

    def step(self) -> None:
        self.steps += 1
        if self.steps & 4095 == 0 and self.deadline is not None and time.perf_counter() > self.deadline:
            item, line = self.where
            raise PddlError(
                f"grounding took more than {self.limits.seconds:g} s (stopped while instantiating it, after "
                f"{self.steps:,} steps); raise the grounding time limit or simplify the task",
                item=item or None, file=self.file, line=line,
            )

GroundAtom = tuple[str, tuple[str, ...]]


class _Rule:
    """One action schema as a Datalog rule: its positive preconditions are the body, its instances the head.

    ``plans[i]`` is the join plan used when a new atom matches body atom ``i`` (the trigger): the order of the
    other body atoms, chosen once per trigger (at each step the atom with the fewest unbound arguments; static
    before changing; then the smaller relation), and where each test runs (the first step after which its
    variables are bound). Static predicates are all known before the fixpoint starts, so only atoms of changing
    predicates trigger; a rule with none fires once, at the start.
    """

    def __init__(self, s: Schema, index: int, allowed: list[set[str] | None], fluent: set[str],
                 sizes: dict[str, int]):
        self.schema, self.index, self.allowed = s, index, allowed
        self.n = len(s.params)
        self.triggers = [i for i, a in enumerate(s.pos) if a.pred in fluent]
        self.plans: dict[int | None, _Plan] = {}
        for i in self.triggers or [None]:
            self.plans[i] = _Plan(s, i, allowed, fluent, sizes)


class _Plan:
    """The join for one trigger: compiled steps, each a lookup in an index of reached atoms (see `_Rule`)."""

    def __init__(self, s: Schema, trigger: int | None, allowed: list[set[str] | None], fluent: set[str],
                 sizes: dict[str, int]):
        n = len(s.params)
        bound: set[int] = set()
        self.trigger: tuple[str, tuple[Any, ...]] | None = None
        if trigger is not None:
            t = s.pos[trigger]
            self.trigger = (t.pred, self._unify(t, bound, allowed))
            bound |= {x for x in t.args if isinstance(x, int)}
        #: (predicate, positions looked up, their terms, how the other positions bind) per step
        self.steps: list[tuple[str, tuple[int, ...], tuple[Term, ...], tuple[Any, ...]]] = []
        left = [a for i, a in enumerate(s.pos) if i != trigger]
        while left:
            def score(a: Atom, bound: set[int] = bound) -> tuple[int, bool, int]:
                free = len({x for x in a.args if isinstance(x, int) and x not in bound})
                return (free, a.pred in fluent, sizes.get(a.pred, 0))

            best = min(left, key=score)
            left.remove(best)
            positions = tuple(p for p, x in enumerate(best.args) if not isinstance(x, int) or x in bound)
            key = tuple(best.args[p] for p in positions)
            self.steps.append((best.pred, positions, key, self._unify(best, bound, allowed, skip=set(positions))))
            bound |= {x for x in best.args if isinstance(x, int)}
        self.rest = [i for i in range(n) if i not in bound]
        # Each test runs after the first step that binds all its variables (0: after the trigger, before any step).
        seen: list[set[int]] = []
        acc: set[int] = set()
        if self.trigger is not None:
            acc |= {x for x in s.pos[trigger].args if isinstance(x, int)}  # type: ignore[index]
        seen.append(set(acc))
        for st in self.steps:
            acc |= {x for x in st[2] if isinstance(x, int)} | {x for _, x, _ in st[3]}
            seen.append(set(acc))
        acc |= set(self.rest)
        seen.append(set(acc))
        self.checks: list[list[tuple[str, Any, Any]]] = [[] for _ in seen]

        def place(kind: str, x: Any, y: Any, vars_: set[int]) -> None:
            k = next(i for i, st in enumerate(seen) if vars_ <= st)
            self.checks[k].append((kind, x, y))

        for x, y in s.eq:
            place("eq", x, y, {v for v in (x, y) if isinstance(v, int)})
        for x, y in s.neq:
            place("neq", x, y, {v for v in (x, y) if isinstance(v, int)})
        for a in s.neg:
            if a.pred not in fluent:
                place("neg", a.pred, a.args, {v for v in a.args if isinstance(v, int)})

    @staticmethod
    def _unify(a: Atom, bound: set[int], allowed: list[set[str] | None], skip: set[int] | None = None
               ) -> tuple[tuple[int, int, Any], ...]:
        """(position, variable, kind) for each argument not looked up: kind is the allowed set (bind, with a type
        test) or None (bind), or -1 (the variable already appeared earlier in this atom: test equality) or the
        constant itself for a constant position of a trigger."""
        out: list[tuple[int, int, Any]] = []
        here: set[int] = set()
        for p, x in enumerate(a.args):
            if skip is not None and p in skip:
                continue
            if not isinstance(x, int):
                out.append((p, -1, x))  # a constant in a trigger atom
            elif x in here or x in bound:
                out.append((p, x, -1))
            else:
                here.add(x)
                out.append((p, x, allowed[x]))
        return tuple(out)




def _subtypes(parents: dict[str, str | None]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {t: set() for t in parents}
    for t in parents:
        seen, u = set(), t
        while u is not None and u not in seen:
            seen.add(u)
            out.setdefault(u, set()).add(t)
            u = parents.get(u)
    return out


def _objects_of(lifted: LiftedDomain, problem: LiftedProblem) -> dict[str, set[str]]:
    """Every type's objects, its subtypes' included."""
    subtypes = _subtypes(lifted.parents)
    objects_of: dict[str, set[str]] = {t: set() for t in lifted.parents}
    for obj, t in problem.objects.items():
        for sup in (u for u, subs in subtypes.items() if t in subs):
            objects_of[sup].add(obj)
    return objects_of


def reach(
    lifted: LiftedDomain, problem: LiftedProblem, limits: GroundingLimits, budget: _Budget,
    objects_of: dict[str, set[str]], fluent: set[str], schemas: list[Schema] | None = None,
    predicates: Iterable[str] | None = None,
) -> tuple[dict[str, set[tuple[str, ...]]], list[tuple[Schema, tuple[str, ...]]]]:
    """Delete-relaxed reachability as a semi-naive Datalog fixpoint: (reached atoms by predicate, instances).

    A queue holds atoms reached but not yet joined. Popping one makes it visible in the indexes and joins it, as
    the trigger, with the visible atoms of every rule whose body has its predicate (`_Rule`); each new instance
    adds its add effects' new atoms to the queue. Every instance is found when its last body atom is popped, so
    no join is repeated, unlike a round-by-round fixpoint; the indexes grow with the atoms, never rebuilt.

    ``schemas`` (default: the domain's) are STRIPS schemas; the variants of `goap.pddl.normal` also carry
    conditional effects, whose atoms are added for every binding whose static conditions hold (their changing
    conditions are ignored: an over-approximation, as reachability may be).
    """
    schemas = lifted.schemas if schemas is None else schemas
    predicates = list(lifted.predicates if predicates is None else predicates)
    every = set(problem.objects)
    allowed_of: list[list[set[str] | None]] = []
    for s in schemas:
        allowed = []
        for _, types in s.params:
            objs = set().union(*(objects_of.get(t, set()) for t in types))
            allowed.append(None if objs >= every else objs)
        allowed_of.append(allowed)
    reached: dict[str, set[tuple[str, ...]]] = {p: set() for p in predicates}
    for pred, args in problem.init:
        reached[pred].add(args)
    sizes = {p: len(v) for p, v in reached.items()}
    rules = [_Rule(s, i, allowed_of[i], fluent, sizes) for i, s in enumerate(schemas)]
    by_pred: dict[str, list[tuple[_Rule, _Plan]]] = {}
    for r in rules:
        for i in r.triggers:
            by_pred.setdefault(r.schema.pos[i].pred, []).append((r, r.plans[i]))

    visible: dict[str, list[tuple[str, ...]]] = {p: [] for p in predicates}
    tables: dict[str, list[tuple[tuple[int, ...], dict[tuple[str, ...], list[tuple[str, ...]]]]]] = {}
    table_of: dict[tuple[str, tuple[int, ...]], dict[tuple[str, ...], list[tuple[str, ...]]]] = {}

    def show(pred: str, args: tuple[str, ...]) -> None:
        visible[pred].append(args)
        for positions, tab in tables.get(pred, ()):
            k = tuple(args[p] for p in positions)
            bucket = tab.get(k)
            if bucket is None:
                tab[k] = [args]
            else:
                bucket.append(args)

    def table(pred: str, positions: tuple[int, ...]) -> dict[tuple[str, ...], list[tuple[str, ...]]]:
        t = table_of.get((pred, positions))
        if t is None:
            t = {}
            for args in visible[pred]:
                t.setdefault(tuple(args[p] for p in positions), []).append(args)
            table_of[(pred, positions)] = t
            tables.setdefault(pred, []).append((positions, t))
        return t

    for pred in predicates:
        if pred not in fluent:
            for args in sorted(reached[pred]):
                show(pred, args)
    queue: list[tuple[str, tuple[str, ...]]] = sorted((p, a) for p, a in problem.init if p in fluent)
    seen: set[tuple[int, tuple[str, ...]]] = set()
    instances: list[tuple[Schema, tuple[str, ...]]] = []
    count = [0] * len(rules)
    n_fluent = len(queue)
    compiled: dict[int, list[tuple[Any, ...]]] = {}  # each plan's steps with their index tables resolved

    def steps_of(plan: _Plan) -> list[tuple[Any, ...]]:
        out = compiled.get(id(plan))
        if out is None:
            out = [(table(pred, positions) if positions else None, key, unify, pred)
                   for pred, positions, key, unify in plan.steps]
            compiled[id(plan)] = out
        return out

    def found(r: _Rule, b: tuple[str, ...]) -> None:
        nonlocal n_fluent
        if (r.index, b) in seen:
            return
        seen.add((r.index, b))
        s = r.schema
        instances.append((s, b))
        count[r.index] += 1
        if len(instances) > limits.max_actions:
            raise _too_many_actions(s, count[r.index], len(instances), objects_of, limits, budget.file, problem.file)
        adds = [(a.pred, tuple(b[x] if isinstance(x, int) else x for x in a.args)) for a in s.add]
        for eff in getattr(s, "effects", ()):
            for full in effect_bindings(eff, b, objects_of, reached, fluent, budget):
                adds += [(a.pred, tuple(full[x] if isinstance(x, int) else x for x in a.args)) for a in eff.add]
        for pred, args in adds:
            got = reached[pred]
            if args not in got:
                got.add(args)
                queue.append((pred, args))
                n_fluent += 1
                if n_fluent > limits.max_facts:
                    biggest = max(fluent, key=lambda p: len(reached[p]))
                    raise PddlError(
                        f"grounding stopped: more than {limits.max_facts:,} reachable atoms (predicate "
                        f"'{biggest}' alone has {len(reached[biggest]):,}, reached through action '{s.name}'); "
                        "raise the fact limit or simplify the task",
                        item=f"predicate '{biggest}'", file=budget.file, line=s.line,
                    )

    def run(r: _Rule, plan: _Plan, binding: list[str | None]) -> None:
        checks = plan.checks
        steps = steps_of(plan)
        last = len(steps)
        rest = plan.rest

        def ok(k: int) -> bool:
            for kind, x, y in checks[k]:
                if kind == "neg":
                    if tuple(binding[v] if isinstance(v, int) else v for v in y) in reached[x]:
                        return False
                    continue
                vx = binding[x] if isinstance(x, int) else x
                vy = binding[y] if isinstance(y, int) else y
                if (vx == vy) != (kind == "eq"):
                    return False
            return True

        def join(k: int) -> None:
            if k == last:
                if not rest:
                    found(r, tuple(binding))  # type: ignore[arg-type]
                    return
                pools = [sorted(r.allowed[i] if r.allowed[i] is not None else every) for i in rest]
                for combo in product(*pools):
                    budget.step()
                    for i, o in zip(rest, combo, strict=True):
                        binding[i] = o
                    if not checks[last + 1] or ok(last + 1):
                        found(r, tuple(binding))  # type: ignore[arg-type]
                for i in rest:
                    binding[i] = None
                return
            tab, key, unify, pred = steps[k]
            if tab is None:
                candidates = visible[pred]
            else:
                candidates = tab.get(tuple(binding[t] if isinstance(t, int) else t for t in key))
                if not candidates:
                    return
            nxt = checks[k + 1]
            for args in candidates:
                budget.step()
                good = True
                for p, x, kind in unify:
                    if kind is None:
                        binding[x] = args[p]
                    elif isinstance(kind, int):  # -1: the variable is bound already
                        if binding[x] != args[p]:
                            good = False
                            break
                    elif args[p] in kind:
                        binding[x] = args[p]
                    else:
                        good = False
                        break
                if good and (not nxt or ok(k + 1)):
                    join(k + 1)
            for _, x, kind in unify:
                if not isinstance(kind, int):
                    binding[x] = None

        if checks[0] and not ok(0):
            return
        join(0)

    for r in rules:  # rules without a changing precondition: all their atoms are known now
        if not r.triggers:
            budget.where = (f"action '{r.schema.name}'", r.schema.line)
            run(r, r.plans[None], [None] * r.n)
    head = 0
    while head < len(queue):
        pred, args = queue[head]
        head += 1
        show(pred, args)
        for r, plan in by_pred.get(pred, ()):
            budget.where = (f"action '{r.schema.name}'", r.schema.line)
            binding: list[str | None] = [None] * r.n
            good = True
            for p, x, kind in plan.trigger[1]:  # type: ignore[index]
                if x == -1:  # a constant of the atom
                    if args[p] != kind:
                        good = False
                        break
                elif isinstance(kind, int):  # the same variable twice in the atom
                    if binding[x] != args[p]:
                        good = False
                        break
                elif kind is None or args[p] in kind:
                    binding[x] = args[p]
                else:
                    good = False
                    break
            if good:
                run(r, plan, binding)
    return reached, instances


def effect_bindings(
    eff: Any, b: tuple[str, ...], objects_of: dict[str, set[str]], reached: dict[str, set[tuple[str, ...]]],
    fluent: set[str], budget: _Budget,
) -> Iterator[tuple[str, ...]]:
    """Every binding of a conditional effect's variables (after the action's ``b``) whose static conditions
    hold: ``b`` extended, one tuple per binding."""
    pools = [sorted(set().union(*(objects_of.get(t, set()) for t in types))) for _, types in eff.vars]
    static = [(p, lit) for p, lit in eff.lits if lit[0] == "eq" or lit[1].pred not in fluent]
    for combo in product(*pools):
        budget.step()
        full = b + combo
        good = True
        for positive, lit in static:
            if lit[0] == "eq":
                x, y = (full[t] if isinstance(t, int) else t for t in lit[1:])
                holds = x == y
            else:
                holds = tuple(full[t] if isinstance(t, int) else t for t in lit[1].args) in reached[lit[1].pred]
            if holds != positive:
                good = False
                break
        if good:
            yield full


def ground(
    lifted: LiftedDomain, problem: LiftedProblem, name: str, limits: GroundingLimits | None = None
) -> tuple[Domain, dict[str, bool], int]:
    """The goap domain of a lifted task, its initial facts and the number of static initial atoms."""
    limits = limits or GroundingLimits()
    file = problem.file
    budget = _Budget(limits, lifted.file or file)
    objects_of = _objects_of(lifted, problem)
    # ADL compiled away (goap.pddl.normal): STRIPS variants with conditional effects, and goal actions.
    schemas = [v for s in lifted.schemas for v in variants(s, objects_of, lifted.file or file)]
    predicates = list(lifted.predicates)
    goal_lits: list[tuple[bool, tuple]] | None = None
    if problem.goal_formula is not None:
        goal_actions, goal_lits = goal_schemas(problem, objects_of)
        if goal_actions:
            schemas += goal_actions
            predicates.append(GOAL_ATOM)
    fluent = {a.pred for s in schemas for a in (*s.add, *s.delete)}
    fluent |= {a.pred for s in schemas for e in getattr(s, "effects", ()) for a in (*e.add, *e.delete)}
    static_init = {(p, a) for p, a in problem.init if p not in fluent}
    reached, instances = reach(lifted, problem, limits, budget, objects_of, fluent, schemas, predicates)
    n_fluent = sum(len(reached[p]) for p in fluent)
    table_bytes = 4 * 8 * len(instances) * max(1, math.ceil((n_fluent + 1) / 64))
    if table_bytes > limits.max_table_bytes:
        biggest_schema = max(schemas, key=lambda s: sum(1 for x, _ in instances if x is s))
        raise PddlError(
            f"grounding stopped: {len(instances):,} actions over {n_fluent:,} facts need "
            f"{table_bytes / 2**20:,.0f} MiB of action tables (limit {limits.max_table_bytes / 2**20:,.0f} MiB); "
            f"action '{biggest_schema.name}' has the most instances",
            item=f"action '{biggest_schema.name}'", file=budget.file, line=biggest_schema.line,
        )

    def fact_name(pred: str, args: tuple[str, ...]) -> str:
        return f"{pred}({','.join(args)})" if args else pred

    facts: dict[GroundAtom, str] = {}
    for pred in predicates:
        if pred in fluent:
            for args in sorted(reached[pred]):
                facts[(pred, args)] = fact_name(pred, args)

    def ground(a: Atom, b: tuple[str, ...]) -> GroundAtom:
        return a.pred, tuple(b[x] if isinstance(x, int) else x for x in a.args)

    # Goal: static atoms are decided now; unreachable ones stay as facts no action makes true (NO_PLAN).
    want: dict[str, bool] = {}
    extra_facts: dict[str, bool] = {}  # facts that exist only for the goal, with their initial value
    if goal_lits is None:
        goal_lits = [(True, ("atom", a)) for a in problem.goal_pos] + [(False, ("atom", a)) for a in problem.goal_neg]
    for positive, lit in goal_lits:  # equalities are decided already (goap.pddl.normal)
        if lit[0] == "atom":
            a = lit[1]
            g = ground(a, ())
            holds_initially = g in problem.init
            if g in facts:
                want[facts[g]] = positive
            elif (a.pred not in fluent and holds_initially == positive) or (a.pred in fluent and not positive):
                continue  # always true: a static atom as wanted, or a never-reached atom wanted false
            else:
                extra_facts[fact_name(*g)] = holds_initially
                want[fact_name(*g)] = positive
    if not want:
        extra_facts["goal-holds-statically"] = True
        want["goal-holds-statically"] = True

    # Build the domain directly: every name is a PDDL name (checked by the reader) with '(', ')' and ',', every
    # value a bool, every cost checked by `_cost`, so `domain_from_spec`'s per-item validation (most of the
    # import time on tasks of 50,000 actions) has nothing to find; its table-size bound is checked here.
    # Conditions and effects are shared objects, one per fact and value. `test_direct_domain_equals_spec`
    # checks that the result equals `domain_from_spec` of the same spec.
    fact_list: list[Fact] = [Fact(name=n, kind=BOOL, default=int(atom in problem.init)) for atom, n in facts.items()]
    fact_list += [Fact(name=n, kind=BOOL, default=int(v)) for n, v in extra_facts.items()]
    true_of = {f.name: Condition(f.name, "==", 1) for f in fact_list}
    false_of = {f.name: Condition(f.name, "==", 0) for f in fact_list}
    add_of = {f.name: Effect(f.name, "=", 1) for f in fact_list}
    del_of = {f.name: Effect(f.name, "=", 0) for f in fact_list}
    actions: list[Action] = []
    rank = {id(s): i for i, s in enumerate(schemas)}
    names: dict[str, int] = {}
    for s, b in sorted(instances, key=lambda sb: (rank[id(sb[0])], sb[1])):  # the same order in every run
        pre: dict[str, bool] = {}
        dead = False
        for a in s.pos:
            if a.pred in fluent:
                pre[facts[a.pred, tuple(b[x] if isinstance(x, int) else x for x in a.args)]] = True
        for a in s.neg:
            if a.pred in fluent:
                n = facts.get((a.pred, tuple(b[x] if isinstance(x, int) else x for x in a.args)))
                if n is not None:
                    if pre.get(n) is True:
                        dead = True  # needs p and not p
                    pre[n] = False
        if dead:
            continue
        effects: dict[str, bool] = {}
        for a in s.delete:
            n = facts.get((a.pred, tuple(b[x] if isinstance(x, int) else x for x in a.args)))
            if n is not None:
                effects[n] = False
        for a in s.add:
            effects[facts[a.pred, tuple(b[x] if isinstance(x, int) else x for x in a.args)]] = True  # add wins
        when = _ground_when(s, b, pre, effects, facts, fluent, objects_of, reached, budget) if s.effects else ()
        if not when and all(pre.get(f) is v for f, v in effects.items()):
            continue  # changes nothing wherever it applies (move(a,a)): never useful, so dropped
        aname = fact_name(s.name, b[:s.arity] if s.arity >= 0 else b)
        k = names.get(aname, 0)
        names[aname] = k + 1
        actions.append(Action(
            name=aname if k == 0 else f"{aname}~{k + 1}", cost=_cost(s, b, lifted, problem),
            pre=tuple(true_of[f] if v else false_of[f] for f, v in pre.items()),
            effects=tuple(add_of[f] if v else del_of[f] for f, v in effects.items()),
            when=tuple(When(tuple(true_of[f] if v else false_of[f] for f, v in c.items()),
                            tuple(add_of[f] if v else del_of[f] for f, v in e.items())) for c, e in when),
        ))
    if not actions:
        raise PddlError("no action can ever apply in this task (after grounding)", file=file, line=problem.goal_line)
    words = max(1, -(-len(fact_list) // 64))
    table_bytes = 8 * words * (4 * len(actions) + 2)
    max_bytes = getattr(_domain_module, "MAX_TABLE_BYTES", 2**30)
    if table_bytes > max_bytes:
        raise PddlError(
            f"too large to encode: {len(actions):,} actions over {len(fact_list):,} facts ({words:,} state words) "
            f"need at least {table_bytes / 2**20:,.0f} MiB of tables (at most {max_bytes // 2**20:,} MiB)", file=file,
        )
    goal = Goal(name=GOAL_NAME, want=tuple(true_of[f] if v else false_of[f] for f, v in want.items()), priority=1.0)
    domain = Domain(name=name, facts=tuple(fact_list), actions=tuple(actions), goals=(goal,))
    start = {f.name: True for f in fact_list if f.default}
    return domain, start, len(static_init)


def spec_of(domain: Domain) -> dict[str, Any]:
    """The domain-file structure of a grounded domain (for `domain_from_spec`, which validates every item)."""
    return {
        "name": domain.name,
        "facts": {f.name: bool(f.default) for f in domain.facts},
        "actions": {a.name: {"cost": a.cost, "pre": {c.fact: bool(c.value) for c in a.pre},
                             "effects": {e.fact: bool(e.value) for e in a.effects}} for a in domain.actions},
        "goals": {g.name: {"priority": g.priority, "want": {c.fact: bool(c.value) for c in g.want}}
                  for g in domain.goals},
    }


def _ground_when(
    s: Schema, b: tuple[str, ...], pre: dict[str, bool], effects: dict[str, bool], facts: dict[GroundAtom, str],
    fluent: set[str], objects_of: dict[str, set[str]], reached: dict[str, set[tuple[str, ...]]], budget: _Budget,
) -> list[tuple[dict[str, bool], dict[str, bool]]]:
    """One instance's conditional effects as (condition, effects) on goap facts, deletes before adds.

    Static conditions are decided here; a condition the precondition already decides is dropped (or the effect,
    when it contradicts it); an effect with no condition left joins ``effects`` (updated in place). PDDL
    applies every firing effect at once, deletes first: a conditional delete of an atom the action adds
    anyway is dropped, and the entries that delete come before the ones that add, so that add wins.
    """
    dels: list[tuple[dict[str, bool], dict[str, bool]]] = []
    adds: list[tuple[dict[str, bool], dict[str, bool]]] = []
    always_added = {f for f, v in effects.items() if v}
    for eff in s.effects:  # type: ignore[attr-defined]
        for full in effect_bindings(eff, b, objects_of, reached, fluent, budget):
            cond: dict[str, bool] = {}
            dead = False
            for positive, lit in eff.lits:
                if lit[0] == "eq" or lit[1].pred not in fluent:
                    continue  # decided by effect_bindings
                n = facts.get((lit[1].pred, tuple(full[x] if isinstance(x, int) else x for x in lit[1].args)))
                if n is None:  # never reached: false
                    dead = dead or positive
                    continue
                if pre.get(n, positive) != positive or cond.get(n, positive) != positive:
                    dead = True
                elif n not in pre:
                    cond[n] = positive
            if dead:
                continue
            d = {}
            for a in eff.delete:
                n = facts.get((a.pred, tuple(full[x] if isinstance(x, int) else x for x in a.args)))
                if n is not None and n not in always_added:
                    d[n] = False
            ad = {facts[a.pred, tuple(full[x] if isinstance(x, int) else x for x in a.args)]: True for a in eff.add}
            if not cond:
                for n in d:
                    if effects.get(n) is not True:
                        effects[n] = False
                effects.update(ad)
                always_added |= set(ad)
                continue
            if d:
                dels.append((cond, d))
            if ad:
                adds.append((cond, ad))
    return [(c, {f: v for f, v in e.items() if f not in always_added or v}) for c, e in dels] + adds


def _too_many_actions(
    s: Schema, count: int, total: int, objects_of: dict[str, set[str]], limits: GroundingLimits, dfile: str, pfile: str
) -> PddlError:
    sizes = [len(set().union(*(objects_of.get(t, set()) for t in types))) for _, types in s.params]
    tuples = math.prod(sizes)
    shape = " x ".join(str(k) for k in sizes) if len(set(sizes)) > 1 else f"{sizes[0]}^{len(sizes)}" if sizes else "1"
    alone = "" if count == total else f" ({count:,} of them of this action)"
    return PddlError(
        f"grounding stopped: more than {limits.max_actions:,} ground actions{alone}; its {len(sizes)} parameter(s) "
        f"range over {shape} = {tuples:,} argument tuples in {pfile}; raise the ground-action limit or add "
        "preconditions that restrict them",
        item=f"action '{s.name}'", file=dfile, line=s.line,
    )


def _zero_cost_supported() -> bool:
    """Whether this build's domain model accepts actions of cost 0 (the IPC optimal-track sokoban has them)."""
    global _ZERO_COST
    if _ZERO_COST is None:
        spec = {
            "name": "probe", "facts": {"p": False}, "actions": {"a": {"cost": 0, "pre": {}, "effects": {"p": True}}},
            "goals": {"g": {"priority": 1, "want": {"p": True}}},
        }
        try:
            domain_from_spec(spec)
            _ZERO_COST = True
        except DomainError:
            _ZERO_COST = False
    return _ZERO_COST


_ZERO_COST: bool | None = None


def _cost(s: Schema, b: tuple[str, ...], lifted: LiftedDomain, problem: LiftedProblem) -> float:
    """The cost of one instance, checked where it was written (the domain's increase, or the problem's value)."""
    if s.cost is None:
        return 1.0
    item = f"action '{s.name}'"
    if isinstance(s.cost, Atom):
        key = (s.cost.pred, tuple(b[x] if isinstance(x, int) else x for x in s.cost.args))
        term = f"({' '.join((key[0], *key[1]))})"
        if key not in problem.values:
            raise PddlError(f"no value for {term} in the problem's :init (the cost of {item}, "
                            f"{lifted.file}:{s.cost.line})", item=item, file=problem.file)
        cost, file, line = problem.values[key], problem.file, problem.value_lines.get(key)
        what = f"cost {cost:g} (from {term})"
    else:
        cost, file, line = float(s.cost), lifted.file, s.cost_line or s.line
        what = f"cost {cost:g}"
    max_cost = getattr(_domain_module, "MAX_COST", None)
    if max_cost is not None and cost > max_cost:
        raise PddlError(f"{what} is above the engine's largest cost {max_cost:g}", item=item, file=file, line=line)
    if cost == 0 and not _zero_cost_supported():
        raise PddlError(f"{what}: this version of the engine needs costs > 0 (zero-cost actions are not supported)",
                        item=item, file=file, line=line)
    return cost

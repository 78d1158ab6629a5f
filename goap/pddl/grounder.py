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
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import product
from typing import Any

from goap import domain as _domain_module
from goap.domain import Domain, DomainError, domain_from_spec
from goap.pddl.lifted import Atom, LiftedDomain, LiftedProblem, Schema, Term
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


class _Index:
    """Per-predicate lookup of reachable atoms by the values at some argument positions."""

    def __init__(self, atoms: dict[str, set[tuple[str, ...]]]):
        self.atoms = atoms
        self.cache: dict[tuple[str, tuple[int, ...]], dict[tuple[str, ...], list[tuple[str, ...]]]] = {}

    def lookup(self, pred: str, positions: tuple[int, ...], key: tuple[str, ...]) -> list[tuple[str, ...]]:
        table = self.cache.get((pred, positions))
        if table is None:
            table = {}
            for args in self.atoms.get(pred, ()):
                table.setdefault(tuple(args[p] for p in positions), []).append(args)
            self.cache[(pred, positions)] = table
        return table.get(key, [])


def _subtypes(parents: dict[str, str | None]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {t: set() for t in parents}
    for t in parents:
        seen, u = set(), t
        while u is not None and u not in seen:
            seen.add(u)
            out.setdefault(u, set()).add(t)
            u = parents.get(u)
    return out


def ground(
    lifted: LiftedDomain, problem: LiftedProblem, name: str, limits: GroundingLimits | None = None
) -> tuple[Domain, dict[str, bool], int]:
    """The goap domain of a lifted task, its initial facts and the number of static initial atoms."""
    limits = limits or GroundingLimits()
    file = problem.file
    budget = _Budget(limits, lifted.file or file)
    subtypes = _subtypes(lifted.parents)
    objects_of: dict[str, set[str]] = {t: set() for t in lifted.parents}
    for obj, t in problem.objects.items():
        for sup in (u for u, subs in subtypes.items() if t in subs):
            objects_of[sup].add(obj)

    fluent = {a.pred for s in lifted.schemas for a in (*s.add, *s.delete)}
    reached: dict[str, set[tuple[str, ...]]] = {p: set() for p in lifted.predicates}
    for pred, args in problem.init:
        reached[pred].add(args)
    static_init = {(p, a) for p, a in problem.init if p not in fluent}

    instances: list[tuple[Schema, tuple[str, ...]]] = []
    n_fluent = sum(len(reached[p]) for p in fluent)
    for _ in range(1_000_000):
        index = _Index(reached)
        instances = []
        for s in lifted.schemas:
            budget.where = (f"action '{s.name}'", s.line)
            count = 0
            for b in _bindings(s, index, objects_of, reached, fluent, budget):
                instances.append((s, b))
                count += 1
                if len(instances) > limits.max_actions:
                    raise _too_many_actions(s, count, len(instances), objects_of, limits, budget.file, file)
        grew = False
        for s, b in instances:
            for a in s.add:
                args = tuple(b[x] if isinstance(x, int) else x for x in a.args)
                if args not in reached[a.pred]:
                    reached[a.pred].add(args)
                    grew = True
                    n_fluent += 1
                    if n_fluent > limits.max_facts:
                        biggest = max(fluent, key=lambda p: len(reached[p]))
                        raise PddlError(
                            f"grounding stopped: more than {limits.max_facts:,} reachable atoms (predicate "
                            f"'{biggest}' alone has {len(reached[biggest]):,}, reached through action '{s.name}'); "
                            "raise the fact limit or simplify the task",
                            item=f"predicate '{biggest}'", file=budget.file, line=s.line,
                        )
        if not grew:
            break
    table_bytes = 4 * 8 * len(instances) * max(1, math.ceil((n_fluent + 1) / 64))
    if table_bytes > limits.max_table_bytes:
        biggest_schema = max(lifted.schemas, key=lambda s: sum(1 for x, _ in instances if x is s))
        raise PddlError(
            f"grounding stopped: {len(instances):,} actions over {n_fluent:,} facts need "
            f"{table_bytes / 2**20:,.0f} MiB of action tables (limit {limits.max_table_bytes / 2**20:,.0f} MiB); "
            f"action '{biggest_schema.name}' has the most instances",
            item=f"action '{biggest_schema.name}'", file=budget.file, line=biggest_schema.line,
        )

    def fact_name(pred: str, args: tuple[str, ...]) -> str:
        return f"{pred}({','.join(args)})" if args else pred

    facts: dict[GroundAtom, str] = {}
    for pred in lifted.predicates:
        if pred in fluent:
            for args in sorted(reached[pred]):
                facts[(pred, args)] = fact_name(pred, args)

    def ground(a: Atom, b: tuple[str, ...]) -> GroundAtom:
        return a.pred, tuple(b[x] if isinstance(x, int) else x for x in a.args)

    # Goal: static atoms are decided now; unreachable ones stay as facts no action makes true (NO_PLAN).
    want: dict[str, bool] = {}
    extra_facts: dict[str, bool] = {}  # facts that exist only for the goal, with their initial value
    for positive, atoms in ((True, problem.goal_pos), (False, problem.goal_neg)):
        for a in atoms:
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

    actions: dict[str, dict[str, Any]] = {}
    rank = {id(s): i for i, s in enumerate(lifted.schemas)}
    for s, b in sorted(instances, key=lambda sb: (rank[id(sb[0])], sb[1])):  # the same order in every run
        pre: dict[str, bool] = {}
        dead = False
        for a in s.pos:
            g = ground(a, b)
            if a.pred in fluent:
                pre[facts[g]] = True
        for a in s.neg:
            g = ground(a, b)
            if a.pred in fluent and g in facts:
                if pre.get(facts[g]) is True:
                    dead = True  # needs p and not p
                pre[facts[g]] = False
        if dead:
            continue
        effects: dict[str, bool] = {}
        for a in s.delete:
            g = ground(a, b)
            if g in facts:
                effects[facts[g]] = False
        for a in s.add:
            effects[facts[ground(a, b)]] = True  # add wins over delete
        if all(pre.get(f) is v for f, v in effects.items()):
            continue  # changes nothing wherever it applies (move(a,a)): never useful, so dropped
        aname = fact_name(s.name, b)
        cost = _cost(s, b, lifted, problem)
        actions[aname] = {"cost": cost, "pre": pre, "effects": effects}
    if not actions:
        raise PddlError("no action can ever apply in this task (after grounding)", file=file, line=problem.goal_line)

    spec_facts: dict[str, Any] = {n: (atom in problem.init) for atom, n in facts.items()}
    spec_facts.update(extra_facts)
    spec = {
        "name": name,
        "facts": spec_facts,
        "actions": actions,
        "goals": {GOAL_NAME: {"priority": 1, "want": want}},
    }
    try:
        domain = domain_from_spec(spec)
    except DomainError as e:
        line = problem.goal_line if e.item == "goal" else None
        raise PddlError(e.message, item=e.item, file=file, line=line) from None
    start = {n: True for n, v in spec_facts.items() if v}
    return domain, start, len(static_init)


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


def _bindings(
    s: Schema,
    index: _Index,
    objects_of: dict[str, set[str]],
    reached: dict[str, set[tuple[str, ...]]],
    fluent: set[str],
    budget: _Budget,
) -> Iterator[tuple[str, ...]]:
    """Every parameter tuple whose positive preconditions are all reached and whose static negative
    preconditions and (in)equalities hold: a join over the preconditions, static ones first."""
    n = len(s.params)
    allowed = [set().union(*(objects_of.get(t, set()) for t in types)) for _, types in s.params]

    # Order the atoms: at each step the one with the most bound arguments, static before changing, then smaller.
    bound: set[int] = set()
    order: list[Atom] = []
    left = list(s.pos)
    while left:
        def score(a: Atom, bound: set[int] = bound) -> tuple[int, int, int]:
            free = len({x for x in a.args if isinstance(x, int) and x not in bound})
            return (free, a.pred in fluent, len(reached.get(a.pred, ())))

        best = min(left, key=score)
        left.remove(best)
        order.append(best)
        bound |= {x for x in best.args if isinstance(x, int)}
    rest = [i for i in range(n) if i not in bound]

    # Each check runs at the first step after which all its variables are bound.
    steps: list[set[int]] = []
    seen: set[int] = set()
    for a in order:
        seen |= {x for x in a.args if isinstance(x, int)}
        steps.append(set(seen))
    for i in rest:
        seen.add(i)
        steps.append(set(seen))
    checks: list[list[tuple[str, Any]]] = [[] for _ in range(len(steps) + 1)]

    def place(kind: str, payload: Any, vars_: set[int]) -> None:
        k = next((i + 1 for i, st in enumerate(steps) if vars_ <= st), 0)
        checks[k].append((kind, payload))

    for pair in s.eq:
        place("eq", pair, {x for x in pair if isinstance(x, int)})
    for pair in s.neq:
        place("neq", pair, {x for x in pair if isinstance(x, int)})
    for a in s.neg:
        if a.pred not in fluent:
            place("neg", a, {x for x in a.args if isinstance(x, int)})

    binding: list[str | None] = [None] * n

    def val(x: Term) -> str:
        return binding[x] if isinstance(x, int) else x  # type: ignore[return-value]

    def ok(k: int) -> bool:
        for kind, payload in checks[k]:
            if kind == "eq" and val(payload[0]) != val(payload[1]):
                return False
            if kind == "neq" and val(payload[0]) == val(payload[1]):
                return False
            if kind == "neg" and tuple(val(x) for x in payload.args) in reached[payload.pred]:
                return False
        return True

    if not ok(0):
        return

    def search(k: int) -> Iterator[tuple[str, ...]]:
        if k == len(order):
            if not rest:
                yield tuple(binding)  # type: ignore[arg-type]
                return
            for combo in product(*(sorted(allowed[i]) for i in rest)):
                budget.step()
                for i, o in zip(rest, combo, strict=True):
                    binding[i] = o
                if all(ok(len(order) + 1 + j) for j in range(len(rest))):
                    yield tuple(binding)  # type: ignore[arg-type]
            for i in rest:
                binding[i] = None
            return
        a = order[k]
        positions = tuple(p for p, x in enumerate(a.args) if not isinstance(x, int) or binding[x] is not None)
        key = tuple(val(a.args[p]) for p in positions)
        free = [(p, a.args[p]) for p in range(len(a.args)) if p not in positions]
        for args in index.lookup(a.pred, positions, key):
            budget.step()
            newly: list[int] = []
            good = True
            for p, x in free:
                if binding[x] is None:
                    if args[p] not in allowed[x]:
                        good = False
                        break
                    binding[x] = args[p]
                    newly.append(x)
                elif binding[x] != args[p]:  # the same variable twice in one atom
                    good = False
                    break
            if good and ok(k + 1):
                yield from search(k + 1)
            for x in newly:
                binding[x] = None

    yield from search(0)

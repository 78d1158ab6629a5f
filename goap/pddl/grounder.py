"""Grounding: a lifted task instantiated over its objects, reduced by reachability, compiled to a goap `Domain`.

See `goap.pddl` for the rules (delete-relaxed reachability, static predicates folded, fact and action names).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product
from typing import Any

from goap.domain import Domain, DomainError, domain_from_spec
from goap.pddl.lifted import Atom, LiftedDomain, LiftedProblem, Schema, Term
from goap.pddl.reader import PddlError

GOAL_NAME = "goal"

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


def ground(lifted: LiftedDomain, problem: LiftedProblem, name: str, file: str) -> tuple[Domain, dict[str, bool], int]:
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
    for _ in range(1_000_000):
        index = _Index(reached)
        instances = [(s, b) for s in lifted.schemas for b in _bindings(s, index, objects_of, reached, fluent)]
        grew = False
        for s, b in instances:
            for a in s.add:
                args = tuple(b[x] if isinstance(x, int) else x for x in a.args)
                if args not in reached[a.pred]:
                    reached[a.pred].add(args)
                    grew = True
        if not grew:
            break

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
        cost = _cost(s, b, problem, file)
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
        raise PddlError(e.message, item=e.item, file=file) from None
    start = {n: True for n, v in spec_facts.items() if v}
    return domain, start, len(static_init)


def _cost(s: Schema, b: tuple[str, ...], problem: LiftedProblem, file: str) -> float:
    if s.cost is None:
        return 1.0
    if isinstance(s.cost, Atom):
        key = (s.cost.pred, tuple(b[x] if isinstance(x, int) else x for x in s.cost.args))
        if key not in problem.values:
            raise PddlError(f"no value for ({key[0]} {' '.join(key[1])}) in :init", item=f"action '{s.name}'",
                            file=file, line=s.cost.line)
        cost = problem.values[key]
    else:
        cost = float(s.cost)
    if not cost > 0:
        raise PddlError(f"action cost {cost:g}: the engine needs costs > 0", item=f"action '{s.name}'", file=file,
                        line=s.line)
    return cost


def _bindings(
    s: Schema,
    index: _Index,
    objects_of: dict[str, set[str]],
    reached: dict[str, set[tuple[str, ...]]],
    fluent: set[str],
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

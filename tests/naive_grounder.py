"""The grounder's reachability as it was before the Datalog-style fixpoint: the oracle of tests/test_pddl_grounder.py.

Every round re-instantiates every schema against all atoms reached so far (a join over the preconditions, static
ones first), adds the instances' add effects, and stops when a round adds nothing. Slow (each round redoes all
the work) but simple; the new grounder must reach the same atoms and the same action instances.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product
from typing import Any

from goap.pddl.grounder import GroundingLimits, _Budget, _objects_of
from goap.pddl.lifted import Atom, LiftedDomain, LiftedProblem, Schema, Term


def naive_reach(
    lifted: LiftedDomain, problem: LiftedProblem, limits: GroundingLimits | None = None
) -> tuple[dict[str, set[tuple[str, ...]]], list[tuple[Schema, tuple[str, ...]]]]:
    """(reached atoms by predicate, action instances) by the round-by-round fixpoint."""
    limits = limits or GroundingLimits(seconds=None)
    budget = _Budget(limits, lifted.file)
    objects_of = _objects_of(lifted, problem)
    fluent = {a.pred for s in lifted.schemas for a in (*s.add, *s.delete)}
    reached: dict[str, set[tuple[str, ...]]] = {p: set() for p in lifted.predicates}
    for pred, args in problem.init:
        reached[pred].add(args)
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
                    raise AssertionError("too many actions")
        grew = False
        for s, b in instances:
            for a in s.add:
                args = tuple(b[x] if isinstance(x, int) else x for x in a.args)
                if args not in reached[a.pred]:
                    reached[a.pred].add(args)
                    grew = True
                    n_fluent += 1
                    if n_fluent > limits.max_facts:
                        raise AssertionError("too many facts")
        if not grew:
            break
    return reached, instances


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

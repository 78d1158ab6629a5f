"""Mutex groups of a PDDL task by invariant synthesis, as in Helmert's translator (2009, "Concise finite-domain
representations for PDDL planning tasks", section 5).

An *invariant* is a set of *parts*, each a predicate whose arguments are split into the invariant's parameters
(the same for every part, in the part's ``order``) and at most one *counted* argument (``omitted``). An instance
of the invariant, one tuple of objects for its parameters, covers the atoms of every part whose parameter
positions hold those objects (the counted one holding anything). The invariant claims that in every reachable
state at most one atom of each instance is true (its *weight* is at most 1): ``{on(x, *), ontable(x),
holding(x)}`` with parameter ``x`` says a block is on one thing, on the table or held, never two of these.

Synthesis (guess, check, refine, as the paper does):

* Candidates: every predicate that some action changes, with all arguments as parameters or all but one.
* Check against every action schema (the STRIPS variants `goap.pddl.normal` makes, conditional effects
  included), by induction over states that satisfy the invariant:
  - *too heavy*: the action may add two different atoms of one instance, at least one of them false before;
    then nothing can repair it and the candidate is dropped;
  - *unbalanced*: an add effect of an atom that may be false before needs a delete, in the same instance, of an
    atom the action's precondition (or the effect's condition) makes true, firing whenever the add fires; then
    the other atom of the instance, if any, is that one and goes away.
  Both are decided on the schema by unification (a most general unifier over the action's variables, with the
  parameters' types, its equalities and inequalities), so a scenario is ruled out only when the unifier makes it
  contradictory: an atom both required and excluded, or two distinct atoms of one instance required at once
  (impossible in a state satisfying the invariant).
* Refine: an unbalanced add effect of an action that deletes some other predicate gives one new candidate per
  way that delete can be a part of the same instance.
* Bounded: at most ``max_candidates`` candidates are examined (`MAX_CANDIDATES`, as Fast Downward caps them) and
  the search stops at ``seconds``; what was proven by then is used, so a large domain gives fewer groups, never
  a hang.

Instantiation (as Fast Downward's ``useful_groups`` does): an invariant is used only when no instance holds two
atoms in the initial state (the induction starts there); its instances with exactly one atom true initially
are mutex groups over the reachable atoms. `choose_groups` then covers the atoms greedily, largest group first,
each atom in one group.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import combinations, product
from typing import Any

from goap.pddl.lifted import Atom, LiftedDomain, LiftedProblem, Schema

#: Most candidate invariants examined in one task (Fast Downward's translator allows 100,000; the IPC tasks here
#: need a few hundred).
MAX_CANDIDATES = 20_000
#: Wall time for the synthesis, in seconds; the invariants proven by then are used.
MAX_SECONDS = 10.0

Term = tuple  # ("v", i): an action variable; ("e", k, i[, copy]): variable i of conditional effect k; ("c", obj)
GroundAtom = tuple[str, tuple[str, ...]]


@dataclass(frozen=True, order=True)
class Part:
    """One predicate of an invariant: ``order[j]`` is the argument position of the invariant's parameter j;
    ``omitted`` is the counted position (-1: none)."""

    pred: str
    order: tuple[int, ...]
    omitted: int = -1

    def params(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(args[p] for p in self.order)

    def show(self) -> str:
        n = len(self.order) + (self.omitted >= 0)
        names = ["*"] * n
        for j, p in enumerate(self.order):
            names[p] = f"?{j}"
        return f"{self.pred}({', '.join(names)})" if n else self.pred


@dataclass(frozen=True)
class Invariant:
    """A set of parts, one per predicate, all with the same number of parameters."""

    parts: tuple[Part, ...]  # sorted

    @property
    def arity(self) -> int:
        return len(self.parts[0].order)

    def part(self, pred: str) -> Part | None:
        for p in self.parts:
            if p.pred == pred:
                return p
        return None

    def with_part(self, part: Part) -> Invariant:
        return Invariant(tuple(sorted((*self.parts, part))))

    def show(self) -> str:
        return "{" + ", ".join(p.show() for p in self.parts) + "}"


@dataclass
class _Effect:
    atom: tuple[str, tuple[Term, ...]]
    group: int | None  # the conditional effect it belongs to (None: unconditional)
    cond_pos: list[tuple[str, tuple[Term, ...]]] = field(default_factory=list)
    cond_neg: list[tuple[str, tuple[Term, ...]]] = field(default_factory=list)
    qvars: tuple[Term, ...] = ()


class _Action:
    """A schema in the terms the checks use: every argument a term, equalities of the precondition merged."""

    def __init__(self, s: Schema, objects_of: dict[str, set[str]], fluent: set[str]):
        self.name = s.name
        self.allowed: dict[Term, frozenset[str] | None] = {}
        parent: dict[Term, Term] = {}
        every = set().union(*objects_of.values()) if objects_of else set()

        def pool(types: tuple[str, ...]) -> frozenset[str] | None:
            objs = set().union(*(objects_of.get(t, set()) for t in types))
            return None if objs >= every else frozenset(objs)

        for i, (_, types) in enumerate(s.params):
            self.allowed[("v", i)] = pool(types)
        effects = getattr(s, "effects", ())
        evars: list[dict[int, Term]] = []
        for k, e in enumerate(effects):
            m = {}
            for idx, types in e.vars:
                m[idx] = ("e", k, idx)
                self.allowed[("e", k, idx)] = pool(types)
            evars.append(m)

        def term(x: Any, k: int | None = None) -> Term:
            if isinstance(x, int):
                if k is not None and x in evars[k]:
                    return evars[k][x]
                return ("v", x)
            t = ("c", x)
            self.allowed.setdefault(t, frozenset((x,)))
            return t

        def atom(a: Atom, k: int | None = None) -> tuple[str, tuple[Term, ...]]:
            return a.pred, tuple(term(x, k) for x in a.args)

        self.neq: list[tuple[Term, Term]] = [(term(x), term(y)) for x, y in s.neq]
        self.base = _Classes(parent, self.allowed, self.neq)
        self.dead = False
        for x, y in s.eq:
            if not self.base.union(term(x), term(y)):
                self.dead = True
        self.pre_pos = [atom(a) for a in s.pos if a.pred in fluent]
        self.pre_neg = [atom(a) for a in s.neg if a.pred in fluent]
        self.adds = [_Effect(atom(a), None) for a in s.add]
        self.dels = [_Effect(atom(a), None) for a in s.delete]
        for k, e in enumerate(effects):
            pos = [atom(lit[1], k) for p, lit in e.lits if p and lit[0] == "atom" and lit[1].pred in fluent]
            neg = [atom(lit[1], k) for p, lit in e.lits if not p and lit[0] == "atom" and lit[1].pred in fluent]
            q = tuple(evars[k].values())
            self.adds += [_Effect(atom(a, k), k, pos, neg, q) for a in e.add]
            self.dels += [_Effect(atom(a, k), k, pos, neg, q) for a in e.delete]
        self.added = {e.atom[0] for e in self.adds}


class _Classes:
    """Union-find over terms with each class's allowed objects (None: any) and the inequalities to respect."""

    def __init__(self, parent: dict[Term, Term], allowed: dict[Term, frozenset[str] | None],
                 neq: list[tuple[Term, Term]]):
        self.parent = parent
        self.allowed = allowed
        self.neq = neq

    def copy(self) -> _Classes:
        return _Classes(dict(self.parent), dict(self.allowed), self.neq)

    def find(self, t: Term) -> Term:
        root = t
        while root in self.parent:
            root = self.parent[root]
        while t != root:  # path compression
            nxt = self.parent[t]
            self.parent[t] = root
            t = nxt
        return root

    def pool(self, t: Term) -> frozenset[str] | None:
        r = self.find(t)
        if r in self.allowed:
            return self.allowed[r]
        if r[0] == "c":
            return frozenset((r[1],))
        if r[0] == "e" and len(r) == 4:  # a second binding of a quantified variable: the first one's objects
            return self.allowed.get(r[:3])
        return None

    def union(self, a: Term, b: Term) -> bool:
        """Merge the classes of a and b; False when that is contradictory (objects, inequalities)."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return True
        pa, pb = self.pool(ra), self.pool(rb)
        both = pa if pb is None else pb if pa is None else pa & pb
        if both is not None and not both:
            return False
        self.parent[rb] = ra
        self.allowed[ra] = both
        for x, y in self.neq:
            if self.find(x) == self.find(y):
                return False
        return True

    def same(self, a: Term, b: Term) -> bool:
        if self.find(a) == self.find(b):
            return True
        pa, pb = self.pool(a), self.pool(b)
        return pa is not None and pa == pb and len(pa) == 1

    def distinct(self, a: Term, b: Term) -> bool:
        """Whether a and b name different objects in every assignment the classes allow."""
        pa, pb = self.pool(a), self.pool(b)
        if pa is not None and pb is not None and not (pa & pb):
            return True
        ra, rb = self.find(a), self.find(b)
        return any({self.find(x), self.find(y)} == {ra, rb} for x, y in self.neq)

    def identical(self, a: tuple[str, tuple[Term, ...]], b: tuple[str, tuple[Term, ...]]) -> bool:
        return a[0] == b[0] and len(a[1]) == len(b[1]) and all(self.same(x, y) for x, y in zip(a[1], b[1],
                                                                                                strict=True))

    def different(self, a: tuple[str, tuple[Term, ...]], b: tuple[str, tuple[Term, ...]]) -> bool:
        return a[0] != b[0] or len(a[1]) != len(b[1]) or any(self.distinct(x, y) for x, y in zip(a[1], b[1],
                                                                                                  strict=True))


def _copy_effect(e: _Effect) -> _Effect:
    """The same effect for another binding of its quantified variables (renamed apart)."""
    def t(x: Term) -> Term:
        return (*x, 2) if x in e.qvars else x

    def a(at: tuple[str, tuple[Term, ...]]) -> tuple[str, tuple[Term, ...]]:
        return at[0], tuple(t(x) for x in at[1])

    return _Effect(a(e.atom), e.group, [a(x) for x in e.cond_pos], [a(x) for x in e.cond_neg],
                   tuple(t(x) for x in e.qvars))


def _consistent(inv: Invariant, cls: _Classes, pos: list, neg: list) -> bool:
    """Whether a state satisfying ``inv`` can make ``pos`` true and ``neg`` false, as far as ``cls`` decides."""
    for n in neg:
        for p in pos:
            if cls.identical(n, p):
                return False
    for a, b in combinations(pos, 2):
        pa, pb = inv.part(a[0]), inv.part(b[0])
        if pa is None or pb is None:
            continue
        if all(cls.same(x, y) for x, y in zip(pa.params(a[1]), pb.params(b[1]), strict=True)) and cls.different(a, b):
            return False  # two atoms of one instance
    return True


def _too_heavy(inv: Invariant, act: _Action) -> bool:
    adds = [e for e in act.adds if inv.part(e.atom[0]) is not None]
    pairs = list(combinations(adds, 2))  # one binding of each quantified effect
    # and two bindings of one quantified effect: an atom with another binding's atom (itself included)
    pairs += [(e1, _copy_effect(e2)) for i, e1 in enumerate(adds) for e2 in adds[i:]
              if e1.qvars and e1.group == e2.group]
    for e1, e2 in pairs:
        cls = act.base.copy()
        p1, p2 = inv.part(e1.atom[0]), inv.part(e2.atom[0])
        ok = all(cls.union(x, y) for x, y in zip(p1.params(e1.atom[1]), p2.params(e2.atom[1]), strict=True))
        if not ok or cls.identical(e1.atom, e2.atom):
            continue
        pos = act.pre_pos + e1.cond_pos + e2.cond_pos
        neg = act.pre_neg + e1.cond_neg + e2.cond_neg
        for fresh in (e1, e2):  # at least one of the two is false before (else nothing grows)
            if _consistent(inv, cls, pos, [*neg, fresh.atom]):
                return True
    return False


def _balanced(inv: Invariant, act: _Action, add: _Effect) -> bool:
    part = inv.part(add.atom[0])
    cls = act.base
    pos = act.pre_pos + add.cond_pos
    if any(cls.identical(add.atom, p) for p in pos):
        return True  # true before: adding it changes no weight
    if not _consistent(inv, cls, pos, act.pre_neg + add.cond_neg + [add.atom]):
        return True  # the add never fires on a state satisfying the invariant with the atom false
    want = part.params(add.atom[1])
    for d in act.dels:
        if d.group is not None and d.group != add.group:
            continue
        dp = inv.part(d.atom[0])
        if dp is None or not all(cls.same(x, y) for x, y in zip(dp.params(d.atom[1]), want, strict=True)):
            continue
        if any(cls.identical(d.atom, p) for p in pos):
            return True
    return False


def _refinements(inv: Invariant, act: _Action, add: _Effect) -> Iterable[Invariant]:
    want = inv.part(add.atom[0]).params(add.atom[1])  # type: ignore[union-attr]
    cls = act.base
    for d in act.dels:
        if d.group is not None and d.group != add.group:
            continue
        pred, args = d.atom
        if inv.part(pred) is not None:
            continue
        choices = [[p for p, x in enumerate(args) if cls.same(x, w)] for w in want]
        for order in product(*choices):
            if len(set(order)) < len(order):
                continue
            rest = [p for p in range(len(args)) if p not in order]
            if len(rest) <= 1:
                yield inv.with_part(Part(pred, tuple(order), rest[0] if rest else -1))


@dataclass
class SynthesisReport:
    """What the synthesis did: candidates examined, invariants proven, and whether a bound stopped it."""

    candidates: int = 0
    proven: list[Invariant] = field(default_factory=list)
    stopped: str | None = None  # "candidates" or "seconds" when a bound cut the search short
    seconds: float = 0.0


def find_invariants(
    schemas: list[Schema], objects_of: dict[str, set[str]], fluent: set[str], arities: dict[str, int],
    max_candidates: int = MAX_CANDIDATES, seconds: float | None = MAX_SECONDS,
) -> SynthesisReport:
    """Invariants proven against every schema (see the module docstring), breadth first from the initial ones."""
    t0 = time.perf_counter()
    report = SynthesisReport()
    acts = [a for a in (_Action(s, objects_of, fluent) for s in schemas) if not a.dead]
    by_added: dict[str, list[_Action]] = {}
    for a in acts:
        for pred in a.added:
            by_added.setdefault(pred, []).append(a)
    queue: deque[Invariant] = deque()
    seen: set[Invariant] = set()

    def push(inv: Invariant) -> None:
        if inv in seen:
            return
        if len(seen) >= max_candidates:
            report.stopped = report.stopped or "candidates"
            return
        seen.add(inv)
        queue.append(inv)

    for pred in sorted(fluent):
        n = arities.get(pred, 0)
        for omitted in range(-1, n):
            push(Invariant((Part(pred, tuple(p for p in range(n) if p != omitted), omitted),)))
    while queue:
        if seconds is not None and time.perf_counter() - t0 > seconds:
            report.stopped = "seconds"
            break
        inv = queue.popleft()
        report.candidates += 1
        good = True
        touching = {id(a): a for part in inv.parts for a in by_added.get(part.pred, ())}
        for act in touching.values():
            if _too_heavy(inv, act):
                good = False
                break
            unbalanced = [e for e in act.adds if inv.part(e.atom[0]) is not None and not _balanced(inv, act, e)]
            if unbalanced:
                for e in unbalanced:
                    for r in _refinements(inv, act, e):
                        push(r)
                good = False
                break
        if good:
            report.proven.append(inv)
    report.seconds = time.perf_counter() - t0
    return report


def mutex_groups(
    invariants: Iterable[Invariant], atoms: Iterable[GroundAtom], init: set[GroundAtom]
) -> list[list[GroundAtom]]:
    """The instances of the invariants over ``atoms`` (the reachable ones) with exactly one atom true in
    ``init``; an invariant with an instance of two or more atoms true in ``init`` is not used at all."""
    atoms = list(atoms)
    by_pred: dict[str, list[GroundAtom]] = {}
    for a in atoms:
        by_pred.setdefault(a[0], []).append(a)
    groups: list[list[GroundAtom]] = []
    seen: set[frozenset[GroundAtom]] = set()
    for inv in invariants:
        instances: dict[tuple[str, ...], list[GroundAtom]] = {}
        for part in inv.parts:
            for a in by_pred.get(part.pred, ()):
                if len(a[1]) == len(part.order) + (part.omitted >= 0):
                    instances.setdefault(part.params(a[1]), []).append(a)
        true_count = {k: sum(a in init for a in v) for k, v in instances.items()}
        if any(c > 1 for c in true_count.values()):
            continue
        for k in sorted(instances):
            if true_count[k] != 1:
                continue
            g = sorted(set(instances[k]))
            key = frozenset(g)
            if key not in seen:
                seen.add(key)
                groups.append(g)
    return groups


def choose_groups(groups: list[list[GroundAtom]], atoms: Iterable[GroundAtom]) -> list[list[GroundAtom]]:
    """A greedy cover, as Fast Downward's ``choose_groups``: repeatedly the group with the most atoms not yet
    covered (ties: the first found), those atoms only; stops when no group covers two new atoms. The atoms left
    are not in any returned group (they stay binary)."""
    left = set(atoms)
    pool = [list(g) for g in groups]
    out = []
    while True:
        best, size = -1, 1
        for i, g in enumerate(pool):
            n = sum(a in left for a in g)
            if n > size:
                best, size = i, n
        if best < 0:
            return out
        chosen = [a for a in pool[best] if a in left]
        left.difference_update(chosen)
        out.append(chosen)
        pool.pop(best)


def task_invariants(
    lifted: LiftedDomain, problem: LiftedProblem, max_candidates: int = MAX_CANDIDATES,
    seconds: float | None = MAX_SECONDS,
) -> SynthesisReport:
    """`find_invariants` on a task's own schemas (its ADL compiled away as the grounder does it)."""
    from goap.pddl.grounder import _objects_of
    from goap.pddl.normal import GOAL_ATOM, goal_schemas, variants

    objects_of = _objects_of(lifted, problem)
    file = lifted.file or problem.file
    schemas = [v for s in lifted.schemas for v in variants(s, objects_of, file)]
    arities = {p: len(types) for p, types in lifted.predicates.items()}
    if problem.goal_formula is not None:
        goal_actions, _ = goal_schemas(problem, objects_of)
        schemas += goal_actions
        if goal_actions:
            arities[GOAL_ATOM] = 0
    fluent = {a.pred for s in schemas for a in (*s.add, *s.delete)}
    fluent |= {a.pred for s in schemas for e in getattr(s, "effects", ()) for a in (*e.add, *e.delete)}
    return find_invariants(schemas, objects_of, fluent, arities, max_candidates, seconds)

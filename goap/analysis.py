"""Static checks on a domain: which actions can ever apply and which goals can ever hold.

The check is a relaxed reachability analysis from a start state (by default the domain's defaults) in which the
facts a world senses (``sensed``: a world's ``sensed_facts``) may hold any value of their range: every
fact keeps the set of values it could reach (bools and enums exactly, ints as an interval), actions only add
values and never remove them, and this is repeated until nothing changes. Relaxation over-approximates what is
reachable, so what it calls unreachable truly is; what it calls reachable may still be impossible.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from goap.domain import BOOL, ENUM, Action, Condition, Domain, State, achieves


@dataclass
class Report:
    """What `check_domain` found: warnings are facts about the domain, not errors."""

    never_applicable: list[str]
    unreachable_goals: list[str]
    no_achiever: list[tuple[str, str]]  # (goal, fact) pairs no action can change towards the goal
    unused_facts: list[str]
    start: str = "the default state"

    @property
    def warnings(self) -> list[str]:
        out = [f"action '{a}' can never apply from {self.start}" for a in self.never_applicable]
        out += [f"goal '{g}' can never be reached from {self.start}" for g in self.unreachable_goals]
        out += [f"goal '{g}': no action changes fact '{f}' the way the goal wants" for g, f in self.no_achiever]
        out += [f"fact '{f}' is used by no action and no goal" for f in self.unused_facts]
        return out


class _Values:
    """Reachable values of one fact: a set for bools and enums, an interval for ints."""

    def __init__(self, kind: str, value: int):
        self.kind = kind
        self.set = {value}
        self.lo = self.hi = value

    def can_hold(self, c: Condition) -> bool:
        if self.kind in (BOOL, ENUM):
            return any(c.holds(v) for v in self.set)
        if c.op == "==":
            return self.lo <= c.value <= self.hi
        if c.op == "!=":
            return self.lo != self.hi or self.lo != c.value
        if c.op in ("<", "<="):
            return c.holds(self.lo)
        return c.holds(self.hi)

    def widen(self, lo: int, hi: int) -> None:
        """Any value of lo..hi (a fact the world senses)."""
        if self.kind in (BOOL, ENUM):
            self.set = set(range(lo, hi + 1))
        self.lo, self.hi = lo, hi

    def add(self, value: int) -> bool:
        if self.kind in (BOOL, ENUM):
            grew = value not in self.set
            self.set.add(value)
            return grew
        lo, hi = min(self.lo, value), max(self.hi, value)
        grew = (lo, hi) != (self.lo, self.hi)
        self.lo, self.hi = lo, hi
        return grew


def check_domain(domain: Domain, start: State | None = None, sensed: Iterable[str] = ()) -> Report:
    """Which actions never apply and which goals never hold, from ``start`` with the ``sensed`` facts free."""
    start = start if start is not None else domain.default_state()
    values = [_Values(f.kind, v) for f, v in zip(domain.facts, start, strict=True)]
    fi = {f.name: i for i, f in enumerate(domain.facts)}
    sensed = list(sensed)
    for name in sensed:
        if name not in fi:
            raise ValueError(f"sensed fact '{name}' is not a fact of domain '{domain.name}'")
        f = domain.facts[fi[name]]
        values[fi[name]].widen(f.min, f.max)
    # A worklist, linear in the domain's size: values only grow, so a condition that can hold stays so, and an
    # action becomes applicable at most once and adds its effects' values once. When a fact's values grow, only
    # the actions with a precondition on that fact are looked at again.
    watchers: list[list[int]] = [[] for _ in domain.facts]
    for a, action in enumerate(domain.actions):
        for i in {fi[c.fact] for c in action.pre}:
            watchers[i].append(a)
    applied = [False] * len(domain.actions)
    pending = list(range(len(domain.actions)))
    while pending:
        a = pending.pop()
        action = domain.actions[a]
        if applied[a] or not all(values[fi[c.fact]].can_hold(c) for c in action.pre):
            continue
        applied[a] = True
        for e in _all_effects(action):  # a conditional effect may fire: the check over-approximates
            i = fi[e.fact]
            fact = domain.facts[i]
            value = e.value if e.op == "=" else (fact.max if e.op == "+=" else fact.min)
            if values[i].add(value):
                pending.extend(b for b in watchers[i] if not applied[b])
    unreachable = [g.name for g in domain.goals if not all(values[fi[c.fact]].can_hold(c) for c in g.want)]
    changers: dict[str, list[Action]] = {}  # fact -> the actions with an effect on it, for the achiever check
    for action in domain.actions:
        for f in {e.fact for e in _all_effects(action)}:
            changers.setdefault(f, []).append(action)
    no_achiever = [
        (g.name, c.fact)
        for g in domain.goals
        for c in g.want
        if not any(achieves(a, c) for a in changers.get(c.fact, ()))
    ]
    used = {c.fact for a in domain.actions for c in (*a.pre, *(c for w in a.when for c in w.cond))}
    used |= {e.fact for a in domain.actions for e in _all_effects(a)}
    used |= {c.fact for g in domain.goals for c in g.want}
    return Report(
        never_applicable=[a.name for a, ok in zip(domain.actions, applied, strict=True) if not ok],
        unreachable_goals=unreachable,
        no_achiever=no_achiever,
        unused_facts=[f.name for f in domain.facts if f.name not in used],
        start="the default state" if not sensed else f"the default state with {len(sensed)} sensed fact(s) free",
    )


def _all_effects(action: Action) -> tuple:
    """An action's effects, its conditional ones included."""
    return (*action.effects, *(e for w in action.when for e in w.effects))

"""Static checks on a domain: which actions can ever apply and which goals can ever hold.

The check is a relaxed reachability analysis from a start state (by default the domain's defaults) in which the
facts a world senses (``sensed``: a world's ``sensed_facts``) may hold any value of their range: every
fact keeps the set of values it could reach (bools and enums exactly, ints as an interval), actions only add
values and never remove them, and this is repeated until nothing changes. Relaxation over-approximates what is
reachable, so what it calls unreachable truly is; what it calls reachable may still be impossible.

Agent types: each declared type is checked on its own, from its default state (`Domain.type_state`) with only the
actions it may use: a goal it selects (priority > 0) that it cannot reach, or a type with no actions, is a warning
naming the type. Cost terms: an action whose cost can fall below zero (base plus each term at its cheaper end) is
a warning; the planners clamp such costs to 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from goap.domain import BOOL, ENUM, Action, Condition, Domain, State, achieves


@dataclass
class Report:
    """What `check_domain` found: warnings are facts about the domain, not errors.

    ``blocked`` maps an action that can never apply to (precondition that never holds, the condition at the root
    of it) pairs: the root is a condition that no usable action, no start value and no sensed fact makes true,
    which is what the designer has to add or change. ``goal_blocked`` is the same for an unreachable goal's
    conditions. ``lines`` (filled by the caller from the file, optional) maps ``("actions", name, fact)`` or
    ``("goals", name, fact)`` to the line of that condition.
    """

    never_applicable: list[str]
    unreachable_goals: list[str]
    no_achiever: list[tuple[str, str]]  # (goal, fact) pairs no action can change towards the goal
    unused_facts: list[str]
    start: str = "the default state"
    blocked: dict[str, list[tuple[Condition, Condition]]] = field(default_factory=dict)
    goal_blocked: dict[str, list[tuple[Condition, Condition]]] = field(default_factory=dict)
    lines: dict[tuple[str, str, str], int] = field(default_factory=dict)
    domain: Domain | None = None
    type_unreachable: list[tuple[str, str]] = field(default_factory=list)  # (type, goal) the type cannot reach
    type_no_actions: list[str] = field(default_factory=list)
    negative_costs: list[tuple[str, float]] = field(default_factory=list)  # (action, its least unclamped cost)

    @property
    def warnings(self) -> list[str]:
        out = [f"action '{a}' can never apply from {self.start}{self._why('actions', a, self.blocked)}"
               for a in self.never_applicable]
        out += [f"goal '{g}' can never be reached from {self.start}{self._why('goals', g, self.goal_blocked)}"
                for g in self.unreachable_goals]
        out += [f"goal '{g}': no action changes fact '{f}' the way the goal wants{self._at('goals', g, f)}"
                for g, f in self.no_achiever]
        out += [f"fact '{f}' is used by no action and no goal" for f in self.unused_facts]
        out += [f"type '{t}' may use no action" for t in self.type_no_actions]
        out += [
            f"type '{t}': goal '{g}' can never be reached with this type's actions from its default state"
            for t, g in self.type_unreachable
        ]
        out += [
            f"action '{a}': its cost can fall below 0 (base plus terms at least {m:g}); the planners clamp it to 0"
            for a, m in self.negative_costs
        ]
        return out

    def _at(self, section: str, item: str, fact: str) -> str:
        line = self.lines.get((section, item, fact))
        return f" (line {line})" if line else ""

    def _root_at(self, root: Condition) -> str:
        """Where the root condition is written: the first action that has it as a precondition."""
        assert self.domain is not None
        for a in self.domain.actions:
            if root in a.pre:
                line = self.lines.get(("actions", a.name, root.fact))
                return f" (action '{a.name}'" + (f", line {line})" if line else ")")
        return ""

    def _why(self, section: str, item: str, table: dict[str, list[tuple[Condition, Condition]]]) -> str:
        """``: precondition 'x' (line 12) never holds: no action or start value makes 'y' true``."""
        pairs = table.get(item) or []
        if not pairs or self.domain is None:
            return ""
        what = "precondition" if section == "actions" else "condition"
        parts = []
        for c, root in pairs[:3]:
            text = f"{what} '{condition_text(self.domain, c)}'{self._at(section, item, c.fact)} never holds"
            if root != c:
                text += f": it needs '{condition_text(self.domain, root)}'{self._root_at(root)}"
            text += ", which no action, start value or sensed fact makes true"
            parts.append(text)
        more = f" (and {len(pairs) - 3} more)" if len(pairs) > 3 else ""
        return ": " + "; ".join(parts) + more


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


@dataclass
class Relaxed:
    """What the relaxed analysis reached: each fact's reachable values and which actions can ever apply.

    ``achievers[k]`` are the usable actions that can make condition ``k`` of a query true (see `blocked`); the
    explanation of a failed search and ``goap validate`` both read their blocked preconditions from here, so the
    two say the same thing about the same domain.
    """

    domain: Domain
    values: list[_Values]
    applied: list[bool]
    usable: list[bool]
    sensed: frozenset[str]

    def can_hold(self, c: Condition) -> bool:
        return self.values[self.domain.fact_index(c.fact)].can_hold(c)

    def blocking(self, action: Action) -> list[Condition]:
        """The preconditions of ``action`` that no reachable value satisfies (empty when it can apply)."""
        return [c for c in action.pre if not self.can_hold(c)]

    def achievers(self, c: Condition) -> list[int]:
        """Indices of the actions (usable or not) whose effect on ``c.fact`` can make ``c`` true."""
        return [a for a, action in enumerate(self.domain.actions) if achieves(action, c)]

    def roots(self, c: Condition, limit: int = 8) -> list[Condition]:
        """The conditions at the bottom of why ``c`` cannot hold: following the blocked preconditions of ``c``'s
        usable achievers down to conditions that no usable action can make true at all (nor the start, nor a
        sensed fact). Bounded: each condition is visited once, at most ``limit`` roots are returned."""
        out: list[Condition] = []
        seen: set[Condition] = set()
        stack = [c]
        while stack and len(out) < limit:
            cur = stack.pop()
            if cur in seen:
                continue
            seen.add(cur)
            usable = [a for a in self.achievers(cur) if self.usable[a]]
            if not usable:
                out.append(cur)
                continue
            for a in usable:
                stack.extend(b for b in self.blocking(self.domain.actions[a]) if b not in seen)
        return out


def relax(domain: Domain, start: State | None = None, sensed: Iterable[str] = (),
          usable: Iterable[bool] | None = None) -> Relaxed:
    """Relaxed reachability from ``start`` (default: the domain's defaults) with the ``sensed`` facts free and
    only the ``usable`` actions (default: all; an agent's ``enabled`` row, say)."""
    start = start if start is not None else domain.default_state()
    values = [_Values(f.kind, v) for f, v in zip(domain.facts, start, strict=True)]
    fi = {f.name: i for i, f in enumerate(domain.facts)}
    sensed = list(sensed)
    for name in sensed:
        if name not in fi:
            raise ValueError(f"sensed fact '{name}' is not a fact of domain '{domain.name}'")
        f = domain.facts[fi[name]]
        values[fi[name]].widen(f.min, f.max)
    ok = [True] * len(domain.actions) if usable is None else [bool(u) for u in usable]
    if len(ok) != len(domain.actions):
        raise ValueError(f"usable has {len(ok)} entries, domain '{domain.name}' has {len(domain.actions)} actions")
    # A worklist, linear in the domain's size: values only grow, so a condition that can hold stays so, and an
    # action becomes applicable at most once and adds its effects' values once. When a fact's values grow, only
    # the actions with a precondition on that fact are looked at again.
    watchers: list[list[int]] = [[] for _ in domain.facts]
    for a, action in enumerate(domain.actions):
        for i in {fi[c.fact] for c in action.pre}:
            watchers[i].append(a)
    applied = [False] * len(domain.actions)
    pending = [a for a in range(len(domain.actions)) if ok[a]]
    while pending:
        a = pending.pop()
        action = domain.actions[a]
        if applied[a] or not ok[a] or not all(values[fi[c.fact]].can_hold(c) for c in action.pre):
            continue
        applied[a] = True
        for e in _all_effects(action):  # a conditional effect may fire: the check over-approximates
            i = fi[e.fact]
            fact = domain.facts[i]
            value = e.value if e.op == "=" else (fact.max if e.op == "+=" else fact.min)
            if values[i].add(value):
                pending.extend(b for b in watchers[i] if not applied[b] and ok[b])
    return Relaxed(domain, values, applied, ok, frozenset(sensed))


def check_domain(domain: Domain, start: State | None = None, sensed: Iterable[str] = ()) -> Report:
    """Which actions never apply and which goals never hold, from ``start`` with the ``sensed`` facts free; per
    declared agent type, which goals it selects but cannot reach; which actions' costs can fall below 0."""
    sensed = list(sensed)
    r = relax(domain, start, sensed)
    type_unreachable, type_no_actions = [], []
    if domain.declares_types:
        for t in domain.types:
            if not any(t.actions):
                type_no_actions.append(t.name)
            rt = relax(domain, domain.type_state(t.name), sensed, usable=t.actions)
            type_unreachable += [(t.name, g.name) for g, p in zip(domain.goals, t.priority, strict=True)
                                 if p > 0 and not all(rt.can_hold(c) for c in g.want)]
    negative = []
    for action in domain.actions:
        if action.cost_terms:
            least = float(action.cost) + sum(
                min(k * domain.facts[f].min, k * domain.facts[f].max) for f, k in action.cost_terms)
            if least < 0:
                negative.append((action.name, least))
    unreachable = [g.name for g in domain.goals if not all(r.can_hold(c) for c in g.want)]
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
    never = [a for a, ok in zip(domain.actions, r.applied, strict=True) if not ok]
    blocked = {a.name: _roots_of(r, r.blocking(a)) for a in never}
    goal_blocked = {g.name: _roots_of(r, [c for c in g.want if not r.can_hold(c)])
                    for g in domain.goals if g.name in unreachable}
    return Report(
        never_applicable=[a.name for a in never],
        unreachable_goals=unreachable,
        no_achiever=no_achiever,
        unused_facts=[f.name for f in domain.facts if f.name not in used],
        start="the default state" if not sensed else f"the default state with {len(sensed)} sensed fact(s) free",
        blocked=blocked,
        goal_blocked=goal_blocked,
        domain=domain,
        type_unreachable=type_unreachable,
        type_no_actions=type_no_actions,
        negative_costs=negative,
    )


def _roots_of(r: Relaxed, conditions: list[Condition]) -> list[tuple[Condition, Condition]]:
    """(blocked condition, a root of it) pairs, roots as `Relaxed.roots` finds them, without repeats."""
    out: list[tuple[Condition, Condition]] = []
    for c in conditions:
        for root in r.roots(c):
            if (c, root) not in out:
                out.append((c, root))
    return out


def condition_text(domain: Domain, c: Condition) -> str:
    """A condition as a domain file writes it: ``ammo >= 1``, ``at == cover``, ``ripe == true``."""
    return f"{c.fact} {c.op} {domain.fact(c.fact).format(c.value)}"


def _all_effects(action: Action) -> tuple:
    """An action's effects, its conditional ones included."""
    return (*action.effects, *(e for w in action.when for e in w.effects))

"""The planning domain as plain data: facts, actions, goals.

A state is a tuple of ints, one per fact in declaration order: a bool is 0 or 1, a bounded int is its value,
an enum is the index of its label. An action applies when every precondition holds; applying it runs its
effects, clamping ints to their range. A goal is a set of conditions. Nothing here knows about bits or
Warp: `goap.encoding` packs these states into words and `goap.planners` search over them.

Domains come from a file (`goap.domain_file.load_domain`) or from `DomainBuilder`; both go through
`domain_from_spec`, so a domain is validated the same way whichever way it was made.

Costs that depend on the state. An action's cost is a base, optionally with *cost terms*, a per-unit coefficient
for int or bool facts (``cost = { base = 2, per = { fatigue = 0.5 } }``). Agent types scale costs per action.
Every planner applies one rule (`Domain.action_cost`), evaluated in float64, terms summed in declaration order,
in the state the action is applied to::

    cost_i(a, s) = scale[type_i][a] * max(0, base_i(a) + sum_k per_k * value(s, fact_k))

``base_i(a)`` is the agent's cost row when it has one, else the domain's base. The heuristics use each action's
least cost over the facts' ranges (`Domain.action_min_cost`): ``scale * max(0, base + sum_k min(per_k * lo_k,
per_k * hi_k))``, which no state undercuts, so they stay admissible (and consistent where they were).

Agent types (`AgentType`, ``[types.medic]`` in a file): per type the actions it may use, cost multipliers, goal
priorities and default facts. A domain always has at least one type; one that declares none has "default".
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

BOOL, INT, ENUM = "bool", "int", "enum"
CONDITION_OPS = ("==", "!=", "<", "<=", ">", ">=")
EFFECT_OPS = ("=", "+=", "-=")

#: Largest action cost accepted. The planners sum costs in float64, which is exact for integer costs while sums
#: stay below 2**53; 1e12 leaves room for plans of thousands of steps, and is finite in float32 too.
MAX_COST = 1e12
#: Largest goal priority (in absolute value) accepted: finite in float32, where the device keeps priorities.
MAX_PRIORITY = 1e30
#: An int fact's ``min`` and ``max`` must fit a signed 64-bit integer (how the encoder and the kernels hold
#: values), and the range may hold at most 2**62 values (the widest field a state word takes).
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
MAX_INT_VALUES = 2**62
#: Most bytes the encoded tables of a domain may take (four words per action and state word, two per goal), so
#: that a file of a few megabytes cannot ask `goap.encoding.encode` for gigabytes.
MAX_TABLE_BYTES = 2**30

_NAME_RE = re.compile(r"[^\s=\"'\[\]{}#]+")
_OPS_TEXT = " ".join(CONDITION_OPS)
_COND_RE = re.compile(r"^\s*(==|!=|<=|>=|<|>)?\s*([^\s]+)\s*$")
_EFFECT_RE = re.compile(r"^\s*(\+=|-=|=)?\s*([^\s]+)\s*$")


class DomainError(ValueError):
    """A domain that cannot be built, with where it went wrong.

    Attributes:
        message: what is wrong.
        item: the offending item, such as ``action 'reload'`` or ``fact 'ammo'``.
        file: the domain file, when the domain came from one.
        line: the 1-based line in that file, when it could be found.
    """

    def __init__(self, message: str, item: str | None = None, file: str | None = None, line: int | None = None):
        self.message = message
        self.item = item
        self.file = file
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        what = f"{self.item}: " if self.item else ""
        return f"{where}{what}{self.message}"


@dataclass(frozen=True)
class Fact:
    """One variable of the world state.

    A bool has range 0..1; an int has ``min..max``; an enum has ``labels`` and range 0..len(labels)-1.
    """

    name: str
    kind: str = BOOL
    min: int = 0
    max: int = 1
    default: int = 0
    labels: tuple[str, ...] = ()

    def format(self, value: int) -> str:
        """The value as a domain file would write it."""
        if self.kind == BOOL:
            return "true" if value else "false"
        if self.kind == ENUM:
            return self.labels[value] if 0 <= value < len(self.labels) else f"<{value}>"
        return str(value)

    def parse_value(self, raw: Any, what: str = "value") -> int:
        """A literal from a file or the builder, checked against this fact's type and range."""
        if self.kind == BOOL:
            if isinstance(raw, bool):
                return int(raw)
            if isinstance(raw, str) and raw.lower() in ("true", "false"):
                return int(raw.lower() == "true")
            raise ValueError(f"{what} for bool fact '{self.name}' must be true or false, got {_show(raw)}")
        if self.kind == ENUM:
            if isinstance(raw, str) and raw in self.labels:
                return self.labels.index(raw)
            labels = _show(list(self.labels), 200)
            raise ValueError(f"{what} for enum fact '{self.name}' must be one of {labels}, got {_show(raw)}")
        value = _as_int(raw)
        if value is None:
            raise ValueError(f"{what} for int fact '{self.name}' must be an integer, got {_show(raw)}")
        if not self.min <= value <= self.max:
            raise ValueError(f"{what} {_show(value)} for fact '{self.name}' is out of range {self.min}..{self.max}")
        return value


@dataclass(frozen=True)
class Condition:
    """``fact op value``; for bools and enums ``op`` is ``==`` or ``!=``."""

    fact: str
    op: str
    value: int

    def holds(self, actual: int) -> bool:
        return _compare(actual, self.op, self.value)


@dataclass(frozen=True)
class Effect:
    """``fact = value``, ``fact += value`` or ``fact -= value``; ints are clamped to the fact's range."""

    fact: str
    op: str
    value: int

    def apply(self, actual: int, fact: Fact) -> int:
        if self.op == "=":
            return self.value
        moved = actual + self.value if self.op == "+=" else actual - self.value
        return min(max(moved, fact.min), fact.max)


@dataclass(frozen=True)
class When:
    """A conditional effect: ``effects`` apply when every condition in ``cond`` holds in the state before the
    action (after its unconditional effects, in order; a later effect on the same fact wins)."""

    cond: tuple[Condition, ...]
    effects: tuple[Effect, ...]


@dataclass(frozen=True)
class Action:
    """An action. ``cost`` is its base cost; ``cost_terms`` are (fact index, per-unit coefficient) pairs in file
    order, added to the base in the state the action is applied to (see the module docstring)."""

    name: str
    cost: float
    pre: tuple[Condition, ...] = ()
    effects: tuple[Effect, ...] = ()
    cost_terms: tuple[tuple[int, float], ...] = ()
    #: False: once started, the action runs until the world reports DONE or FAILED; a new goal or a commanded
    #: replan waits for it (`goap.kernels.tick.decide`).
    interruptible: bool = True
    when: tuple[When, ...] = ()  # conditional effects (see `When`)


@dataclass(frozen=True)
class Goal:
    name: str
    want: tuple[Condition, ...]
    priority: float = 1.0


@dataclass(frozen=True)
class AgentType:
    """One kind of agent: what it may do, how much it pays, what it wants and how it starts.

    Attributes:
        name: the type's name (``[types.medic]``).
        actions: per action of the domain, whether this type may use it.
        cost_scale: per action, a multiplier (> 0, finite) of the action's cost for this type.
        priority: per goal, this type's priority (the goal's own unless overridden; <= 0: never selected).
        facts: default facts of agents spawned of this type, (fact index, value as a `State` holds it: 0/1 for a
            bool, the int itself, the label's index for an enum), overriding the domain's defaults.
    """

    name: str
    actions: tuple[bool, ...]
    cost_scale: tuple[float, ...]
    priority: tuple[float, ...]
    facts: tuple[tuple[int, int], ...] = ()


#: The name of the one type of a domain that declares none.
DEFAULT_TYPE = "default"


def default_type(actions: Sequence[Action], goals: Sequence[Goal]) -> AgentType:
    """The type of a domain that declares none: every action at scale 1, the goals' own priorities."""
    return AgentType(
        name=DEFAULT_TYPE, actions=(True,) * len(actions), cost_scale=(1.0,) * len(actions),
        priority=tuple(float(g.priority) for g in goals),
    )


State = tuple[int, ...]


@dataclass(frozen=True)
class Domain:
    """A validated planning domain. Build it with `domain_from_spec`, `DomainBuilder` or `load_domain`."""

    name: str
    facts: tuple[Fact, ...]
    actions: tuple[Action, ...]
    goals: tuple[Goal, ...]
    types: tuple[AgentType, ...] = ()
    _fact_index: dict[str, int] = field(init=False, repr=False, compare=False)
    _action_index: dict[str, int] = field(init=False, repr=False, compare=False)
    _goal_index: dict[str, int] = field(init=False, repr=False, compare=False)
    _type_index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.types:  # a domain always has a type: agents are of type 0 unless told otherwise
            object.__setattr__(self, "types", (default_type(self.actions, self.goals),))
        object.__setattr__(self, "_fact_index", {f.name: i for i, f in enumerate(self.facts)})
        object.__setattr__(self, "_action_index", {a.name: i for i, a in enumerate(self.actions)})
        object.__setattr__(self, "_goal_index", {g.name: i for i, g in enumerate(self.goals)})
        object.__setattr__(self, "_type_index", {t.name: i for i, t in enumerate(self.types)})

    # --- lookups -------------------------------------------------------------------------------------------
    def fact_index(self, name: str) -> int:
        try:
            return self._fact_index[name]
        except KeyError:
            raise KeyError(f"unknown fact '{name}' in domain '{self.name}'") from None

    def fact(self, name: str) -> Fact:
        return self.facts[self.fact_index(name)]

    def action_index(self, name: str) -> int:
        try:
            return self._action_index[name]
        except KeyError:
            raise KeyError(f"unknown action '{name}' in domain '{self.name}'") from None

    def goal_index(self, name: str) -> int:
        try:
            return self._goal_index[name]
        except KeyError:
            raise KeyError(f"unknown goal '{name}' in domain '{self.name}'") from None

    def type_index(self, name: str) -> int:
        try:
            return self._type_index[name]
        except KeyError:
            known = ", ".join(t.name for t in self.types)
            raise KeyError(f"unknown agent type '{name}' in domain '{self.name}' (types: {known})") from None

    @property
    def action_names(self) -> list[str]:
        return [a.name for a in self.actions]

    @property
    def declares_types(self) -> bool:
        """Whether the domain's types are more than the implicit "default" one (which changes nothing)."""
        return self.types != (default_type(self.actions, self.goals),)

    @property
    def has_cost_terms(self) -> bool:
        return any(a.cost_terms for a in self.actions)

    # --- costs ---------------------------------------------------------------------------------------------
    def action_cost(self, a: int | str, state: State, base: float | None = None, scale: float = 1.0) -> float:
        """The cost of action ``a`` applied in ``state``: ``scale * max(0, base + sum_k per_k * value_k)``.

        The rule every planner follows (float64, terms in declaration order). ``base`` replaces the action's
        own base cost (an agent's cost row); ``scale`` is the agent type's multiplier.
        """
        action = self.actions[a] if isinstance(a, int) else self.actions[self.action_index(a)]
        acc = float(action.cost if base is None else base)
        for f, per in action.cost_terms:
            acc = acc + per * float(state[f])
        return scale * max(0.0, acc)

    def action_min_cost(self, a: int | str, base: float | None = None, scale: float = 1.0) -> float:
        """The least `action_cost` of ``a`` over every state (each term at its fact's cheaper end): what the
        heuristics charge, so that they never overestimate."""
        action = self.actions[a] if isinstance(a, int) else self.actions[self.action_index(a)]
        acc = float(action.cost if base is None else base)
        for f, per in action.cost_terms:
            fact = self.facts[f]
            acc = acc + min(per * float(fact.min), per * float(fact.max))
        return scale * max(0.0, acc)

    # --- states --------------------------------------------------------------------------------------------
    def default_state(self) -> State:
        return tuple(f.default for f in self.facts)

    def type_state(self, t: int | str) -> State:
        """The default state of an agent of type ``t`` (index or name): the domain's defaults with its facts."""
        agent_type = self.types[t] if isinstance(t, int) else self.types[self.type_index(t)]
        out = list(self.default_state())
        for f, v in agent_type.facts:
            out[f] = v
        return tuple(out)

    def state(self, values: Mapping[str, Any] | None = None, strict: bool = False) -> State:
        """A state from ``{fact: literal}``; facts not named take their default.

        ``strict`` (problem files): each value must have its fact's own JSON type, true or false for a bool,
        an integer for an int, a label for an enum; ``"3"``, ``2.0`` or ``"TRUE"`` are refused rather than read
        as something they only resemble.
        """
        out = list(self.default_state())
        for name, raw in (values or {}).items():
            if name not in self._fact_index:
                raise DomainError(f"unknown fact {_show(name)}", item="start")
            fact = self.facts[self._fact_index[name]]
            if strict and not _has_type(fact, raw):
                want = {BOOL: "true or false", INT: "an integer", ENUM: "a label (a string)"}[fact.kind]
                raise DomainError(f"start value for {fact.kind} fact '{fact.name}' must be {want}, got {_show(raw)}")
            try:
                out[self._fact_index[name]] = fact.parse_value(raw)
            except ValueError as e:
                raise DomainError(str(e), item="start") from None
        return tuple(out)

    def conditions(self, want: Mapping[str, Any], item: str = "goal") -> tuple[Condition, ...]:
        """Conditions parsed from ``{fact: condition literal}``, as in a goal's ``want``."""
        try:
            return tuple(_parse_conditions(self, want))
        except _ItemError as e:
            raise DomainError(e.message, item=item) from None

    def satisfies(self, state: State, conditions: Iterable[Condition]) -> bool:
        return all(c.holds(state[self._fact_index[c.fact]]) for c in conditions)

    def is_applicable(self, state: State, action: Action) -> bool:
        return self.satisfies(state, action.pre)

    def apply(self, state: State, action: Action) -> State:
        out = list(state)
        for e in action.effects:
            i = self._fact_index[e.fact]
            out[i] = e.apply(out[i], self.facts[i])
        for w in action.when:
            if self.satisfies(state, w.cond):  # judged on the state before the action
                for e in w.effects:
                    i = self._fact_index[e.fact]
                    out[i] = e.apply(out[i], self.facts[i])
        return tuple(out)

    def describe_state(self, state: State) -> str:
        return " ".join(f"{f.name}={f.format(v)}" for f, v in zip(self.facts, state, strict=True))

    def replay(self, start: State, plan: Sequence[int | str]) -> State:
        """Apply a plan step by step; raises ValueError naming the first step whose preconditions fail."""
        state = start
        for step, a in enumerate(plan):
            action = self.actions[a] if isinstance(a, int) else self.actions[self.action_index(a)]
            if not self.is_applicable(state, action):
                raise ValueError(f"step {step} '{action.name}' is not applicable in {self.describe_state(state)}")
            state = self.apply(state, action)
        return state


# --- building -------------------------------------------------------------------------------------------------
Locator = Callable[[tuple[str, ...]], int | None]


def domain_from_spec(spec: Mapping[str, Any], file: str | None = None, locate: Locator | None = None) -> Domain:
    """Build and validate a domain from the file structure (a dict as TOML or JSON gives it).

    Args:
        spec: ``{"name", "facts", "actions", "goals"}`` as in the domain file format.
        file: the file it came from, named in errors.
        locate: maps a key path such as ``("actions", "reload", "cost")`` to its line in the file.
    """

    def fail(message: str, item: str | None, path: tuple[str, ...]) -> DomainError:
        line = locate(path) if locate else None
        return DomainError(message, item=item, file=file, line=line)

    def named(kind: str, section: str, key: Any, forms: _NormalForms) -> str:
        """The item label of ``key`` in ``section``, after checking the name and that no other differs by case."""
        item = _item(kind, key)
        problem = name_error(key)
        if problem:
            raise fail(problem, item, (section, key))
        other = forms.twin(key)
        if other is not None:
            raise fail(_twin_error(key, other), item, (section, key))
        return item

    if not isinstance(spec, Mapping):
        raise DomainError("a domain must be a table/object at the top level", file=file)
    unknown = set(spec) - {"name", "facts", "actions", "goals", "types"}
    if unknown:
        key = sorted(unknown)[0]
        raise fail(f"unknown top-level key {_show(key)} (expected name, facts, actions, goals, types)", None, (key,))
    name = spec.get("name")
    if not isinstance(name, str) or not name.strip():
        raise fail(f"'name' must be a non-empty string, got {_show(name)}", None, ("name",))
    bad = _bad_char(name)
    if bad is not None:
        raise fail(f"'name' may not contain control characters (found {ascii(bad)})", None, ("name",))

    facts_spec = spec.get("facts")
    if not isinstance(facts_spec, Mapping) or not facts_spec:
        raise fail("'facts' must be a non-empty table", None, ("facts",))
    facts = []
    forms = _NormalForms()
    for fname, fspec in facts_spec.items():
        item = _item("fact", fname)
        try:
            facts.append(_parse_fact(fname, fspec))
        except ValueError as e:
            raise fail(str(e), item, ("facts", fname)) from None
        other = forms.twin(fname)
        if other is not None:
            raise fail(_twin_error(fname, other), item, ("facts", fname))
    skeleton = Domain(name=name, facts=tuple(facts), actions=(), goals=())

    actions = []
    actions_spec = spec.get("actions", {})
    if not isinstance(actions_spec, Mapping) or not actions_spec:
        raise fail("'actions' must be a non-empty table of actions", None, ("actions",))
    goals_spec = spec.get("goals", {})
    words = max(1, -(-sum(max(1, (f.max - f.min).bit_length()) for f in facts) // 64))
    table_bytes = 8 * words * (4 * len(actions_spec) + 2 * (len(goals_spec) if isinstance(goals_spec, Mapping) else 0))
    if table_bytes > MAX_TABLE_BYTES:
        raise fail(
            f"too large to encode: {len(actions_spec):,} actions over {len(facts):,} facts ({words:,} state words) "
            f"need at least {table_bytes / 2**20:,.0f} MiB of tables (at most {MAX_TABLE_BYTES // 2**20:,} MiB)",
            None, ("actions",),
        )
    forms = _NormalForms()
    for aname, aspec in actions_spec.items():
        item = named("action", "actions", aname, forms)
        if not isinstance(aspec, Mapping):
            raise fail("an action must be a table with cost, pre and effects", item, ("actions", aname))
        extra = set(aspec) - {"cost", "pre", "effects", "when", "interruptible"}
        if extra:
            key = sorted(extra)[0]
            raise fail(f"unknown key {_show(key)} (expected cost, pre, effects, when, interruptible)", item,
                       ("actions", aname, key))
        interruptible = aspec.get("interruptible", True)
        if not isinstance(interruptible, bool):
            raise fail(f"'interruptible' must be true or false, got {_show(interruptible)}", item,
                       ("actions", aname, "interruptible"))
        if "cost" not in aspec:
            raise fail("missing 'cost'", item, ("actions", aname))
        try:
            cost, terms = _parse_cost(skeleton, aspec["cost"])
        except _ItemError as e:
            raise fail(e.message, item, ("actions", aname, "cost", *e.path)) from None
        try:
            pre = _parse_conditions(skeleton, _table(aspec.get("pre", {}), "pre"))
        except _ItemError as e:
            raise fail(e.message, item, ("actions", aname, "pre", *e.path)) from None
        try:
            effects = _parse_effects(skeleton, _table(aspec.get("effects", {}), "effects"))
        except _ItemError as e:
            raise fail(e.message, item, ("actions", aname, "effects", *e.path)) from None
        when = _parse_when(skeleton, aspec.get("when", []),
                           lambda m, *path, _i=item, _a=aname: fail(m, _i, ("actions", _a, *path)))
        if not effects and not when:
            raise fail("an action needs at least one effect", item, ("actions", aname))
        actions.append(Action(name=str(aname), cost=float(cost), pre=tuple(pre), effects=tuple(effects),
                              cost_terms=terms, interruptible=interruptible, when=when))

    goals = []
    if not isinstance(goals_spec, Mapping):
        raise fail("'goals' must be a table of goals", None, ("goals",))
    forms = _NormalForms()
    for gname, gspec in goals_spec.items():
        item = named("goal", "goals", gname, forms)
        if not isinstance(gspec, Mapping):
            raise fail("a goal must be a table with priority and want", item, ("goals", gname))
        extra = set(gspec) - {"priority", "want"}
        if extra:
            key = sorted(extra)[0]
            raise fail(f"unknown key {_show(key)} (expected priority, want)", item, ("goals", gname, key))
        priority = gspec.get("priority", 1)
        if not _number_within(priority, -MAX_PRIORITY, MAX_PRIORITY):
            bound = _limit(MAX_PRIORITY)
            message = f"priority must be a finite number in -{bound}..{bound}, got {_show(priority)}"
            raise fail(message, item, ("goals", gname, "priority"))
        try:
            want = _parse_conditions(skeleton, _table(gspec.get("want", {}), "want"))
        except _ItemError as e:
            raise fail(e.message, item, ("goals", gname, "want", *e.path)) from None
        if not want:
            raise fail("'want' is empty: a goal needs at least one condition", item, ("goals", gname))
        goals.append(Goal(name=str(gname), want=tuple(want), priority=float(priority)))

    types_spec = spec.get("types", {})
    if not isinstance(types_spec, Mapping):
        raise fail("'types' must be a table of agent types", None, ("types",))
    partial = Domain(name=name, facts=tuple(facts), actions=tuple(actions), goals=tuple(goals))
    types = []
    forms = _NormalForms()
    for tname, tspec in types_spec.items():
        item = named("type", "types", tname, forms)
        try:
            types.append(_parse_type(partial, str(tname), tspec))
        except _ItemError as e:
            raise fail(e.message, item, ("types", tname, *e.path)) from None

    return Domain(name=name, facts=tuple(facts), actions=tuple(actions), goals=tuple(goals), types=tuple(types))


#: Keys of an agent type's table.
TYPE_KEYS = ("actions", "cost", "priority", "goals", "facts")
#: Largest cost multiplier of an agent type: scaled costs stay finite in float32 and far below 1e300.
MAX_COST_SCALE = 1e12


def _parse_cost(domain: Domain, raw: Any) -> tuple[float, tuple[tuple[int, float], ...]]:
    """An action's ``cost``: a number, or ``{ base = 2, per = { fatigue = 0.5 } }`` (terms over int/bool facts)."""
    bound = _limit(MAX_COST)
    if not isinstance(raw, Mapping):
        if not _number_within(raw, 0, MAX_COST):
            raise _ItemError(f"cost must be a finite number in 0..{bound}, got {_show(raw)}")
        return float(raw), ()
    extra = set(raw) - {"base", "per"}
    if extra:
        key = sorted(extra)[0]
        raise _ItemError(f"unknown key {_show(key)} in a cost table (expected base, per)", key)
    if "base" not in raw:
        raise _ItemError("a cost table needs 'base' (the cost before its terms), as in { base = 2, per = { f = 0.5 } }")
    base = raw["base"]
    if not _number_within(base, 0, MAX_COST):
        raise _ItemError(f"cost base must be a finite number in 0..{bound}, got {_show(base)}", "base")
    per = raw.get("per", {})
    if not isinstance(per, Mapping):
        raise _ItemError(f"'per' must be a table of fact = cost per unit, got {_show(per)}", "per")
    terms = []
    for fname, k in per.items():
        if fname not in domain._fact_index:
            raise _ItemError(f"cost term: unknown fact {_show(fname)}", "per", fname)
        f = domain._fact_index[fname]
        if domain.facts[f].kind == ENUM:
            raise _ItemError(f"cost term over enum fact '{fname}': only int and bool facts have a value to scale",
                             "per", fname)
        if not _number_within(k, -MAX_COST, MAX_COST):
            raise _ItemError(f"cost per unit of '{fname}' must be a finite number in -{bound}..{bound}, got "
                             f"{_show(k)}", "per", fname)
        terms.append((f, float(k)))
    fact_of = domain.facts
    most = float(base) + sum(max(k * float(fact_of[f].min), k * float(fact_of[f].max)) for f, k in terms)
    if most > MAX_COST:
        raise _ItemError(f"cost can reach {most:.3g} with its terms at their fact's ends, above {bound} "
                         "(the most an action may cost)", "per")
    return float(base), tuple(terms)


def _names(domain: Domain, raw: Any, key: str, kind: str, index: Mapping[str, int]) -> list[int]:
    """A type's list of action or goal names, as indices (unknown names refused, naming them)."""
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise _ItemError(f"'{key}' must be a list of {kind} names, got {_show(raw)}", key)
    out = []
    for x in raw:
        if x not in index:
            raise _ItemError(f"'{key}': unknown {kind} {_show(x)}", key)
        out.append(index[x])
    return out


def _parse_type(domain: Domain, name: str, spec: Any) -> AgentType:
    """One ``[types.<name>]`` table against the domain's facts, actions and goals (errors carry the key path)."""
    if not isinstance(spec, Mapping):
        raise _ItemError(f"an agent type must be a table with keys among {', '.join(TYPE_KEYS)}, got {_show(spec)}")
    extra = set(spec) - set(TYPE_KEYS)
    if extra:
        key = sorted(extra)[0]
        raise _ItemError(f"unknown key {_show(key)} (expected {', '.join(TYPE_KEYS)})", key)
    A, G = len(domain.actions), len(domain.goals)
    allowed = [True] * A
    if "actions" in spec:
        allowed = [False] * A
        for a in _names(domain, spec["actions"], "actions", "action", domain._action_index):
            allowed[a] = True
    scale = [1.0] * A
    cost = spec.get("cost", {})
    if not isinstance(cost, Mapping):
        raise _ItemError(f"'cost' must be a table of action = multiplier, got {_show(cost)}", "cost")
    for aname, k in cost.items():
        if aname not in domain._action_index:
            raise _ItemError(f"'cost': unknown action {_show(aname)}", "cost", aname)
        if not _number_within(k, 0, MAX_COST_SCALE) or k == 0:
            raise _ItemError(f"cost multiplier of '{aname}' must be a finite number in (0, {_limit(MAX_COST_SCALE)}], "
                             f"got {_show(k)}", "cost", aname)
        scale[domain._action_index[aname]] = float(k)
    priority = [float(g.priority) for g in domain.goals]
    if "goals" in spec:
        chosen = set(_names(domain, spec["goals"], "goals", "goal", domain._goal_index))
        priority = [p if g in chosen else 0.0 for g, p in enumerate(priority)]
    else:
        chosen = set(range(G))
    over = spec.get("priority", {})
    if not isinstance(over, Mapping):
        raise _ItemError(f"'priority' must be a table of goal = priority, got {_show(over)}", "priority")
    for gname, p in over.items():
        if gname not in domain._goal_index:
            raise _ItemError(f"'priority': unknown goal {_show(gname)}", "priority", gname)
        if not _number_within(p, -MAX_PRIORITY, MAX_PRIORITY):
            bound = _limit(MAX_PRIORITY)
            raise _ItemError(f"priority of '{gname}' must be a finite number in -{bound}..{bound}, got {_show(p)}",
                             "priority", gname)
        g = domain._goal_index[gname]
        if g not in chosen:
            raise _ItemError(f"'priority' sets goal '{gname}', which is not in this type's 'goals'", "priority", gname)
        priority[g] = float(p)
    facts = spec.get("facts", {})
    if not isinstance(facts, Mapping):
        raise _ItemError(f"'facts' must be a table of fact = value, got {_show(facts)}", "facts")
    values = []
    for fname, raw in facts.items():
        if fname not in domain._fact_index:
            raise _ItemError(f"'facts': unknown fact {_show(fname)}", "facts", fname)
        f = domain._fact_index[fname]
        try:
            values.append((f, domain.facts[f].parse_value(raw, "default")))
        except ValueError as e:
            raise _ItemError(str(e), "facts", fname) from None
    return AgentType(name=name, actions=tuple(allowed), cost_scale=tuple(scale), priority=tuple(priority),
                     facts=tuple(values))


class DomainBuilder:
    """Build a domain in Python with the same rules as the file format.

    Example::

        domain = (DomainBuilder("soldier")
                  .bool("weapon_drawn")
                  .int("ammo", 0, 6)
                  .action("reload", cost=2, pre={"weapon_drawn": True, "ammo": "< 6"}, effects={"ammo": 6})
                  .goal("armed", priority=5, want={"ammo": "> 0"})
                  .build())
    """

    def __init__(self, name: str):
        self._spec: dict[str, Any] = {"name": name, "facts": {}, "actions": {}, "goals": {}}

    def _add(self, section: str, name: str, value: Any) -> DomainBuilder:
        table = self._spec.setdefault(section, {})
        if name in table:
            kind = section[:-1]
            raise DomainError(f"duplicate {kind} name", item=f"{kind} '{name}'")
        table[name] = value
        return self

    def bool(self, name: str, default: bool = False) -> DomainBuilder:
        return self._add("facts", name, bool(default))

    def int(self, name: str, min: int, max: int, default: int | None = None) -> DomainBuilder:  # noqa: A002
        spec = {"type": INT, "min": min, "max": max}
        if default is not None:
            spec["default"] = default
        return self._add("facts", name, spec)

    def enum(self, name: str, values: Sequence[str], default: str | None = None) -> DomainBuilder:
        spec: dict[str, Any] = {"type": ENUM, "values": list(values)}
        if default is not None:
            spec["default"] = default
        return self._add("facts", name, spec)

    def action(
        self, name: str, cost: float | Mapping[str, Any] = 1.0, pre: Mapping[str, Any] | None = None,
        effects: Mapping[str, Any] = (), cost_per: Mapping[str, float] | None = None, interruptible: bool = True,
    ) -> DomainBuilder:
        """An action; ``cost_per`` (or a dict ``cost``, as in a file) adds cost terms: ``{fact: cost per unit}``;
        ``interruptible=False``: once started it runs to its end (see `Action`)."""
        if cost_per:
            if isinstance(cost, Mapping):
                raise DomainError("give cost terms either in a cost table or as cost_per, not both",
                                  item=f"action '{name}'")
            cost = {"base": cost, "per": dict(cost_per)}
        elif isinstance(cost, Mapping):
            cost = dict(cost)
        spec: dict[str, Any] = {"cost": cost, "pre": dict(pre or {}), "effects": dict(effects or {})}
        if interruptible is not True:
            spec["interruptible"] = interruptible
        return self._add("actions", name, spec)

    def goal(self, name: str, want: Mapping[str, Any], priority: float = 1.0) -> DomainBuilder:
        return self._add("goals", name, {"priority": priority, "want": dict(want)})

    def agent_type(
        self, name: str, actions: Sequence[str] | None = None, cost: Mapping[str, float] | None = None,
        priority: Mapping[str, float] | None = None, facts: Mapping[str, Any] | None = None,
        goals: Sequence[str] | None = None,
    ) -> DomainBuilder:
        """An agent type, as ``[types.<name>]`` in a file: allowed ``actions`` (default all), ``cost`` multipliers,
        ``priority`` overrides, the ``goals`` it may select (default all) and default ``facts``."""
        spec: dict[str, Any] = {}
        for key, value in (("actions", actions), ("goals", goals)):
            if value is not None:
                spec[key] = list(value)
        for key, value in (("cost", cost), ("priority", priority), ("facts", facts)):
            if value is not None:
                spec[key] = dict(value)
        return self._add("types", name, spec)

    def spec(self) -> dict[str, Any]:
        """The domain as the file structure (what `goap.domain_file.save_domain` writes)."""
        return self._spec

    def build(self) -> Domain:
        return domain_from_spec(self._spec)


# --- parsing helpers ------------------------------------------------------------------------------------------
class _ItemError(Exception):
    def __init__(self, message: str, *path: str):
        self.message = message
        self.path = path


#: Characters never accepted in a name: control characters (newlines, tabs, escapes), lone surrogates (not
#: text: they cannot be written as UTF-8) and the bidirectional overrides that make printed text misleading.
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _bad_char(text: str) -> str | None:
    """The first character of ``text`` that may not be in a name (see `_BIDI_CONTROLS`), else None."""
    for ch in text:
        if ch in _BIDI_CONTROLS or unicodedata.category(ch) in ("Cc", "Cs"):
            return ch
    return None


def name_error(name: Any) -> str | None:
    """Why ``name`` cannot name a fact, action, goal or enum value; None when it can.

    A name is one or more characters, none of them whitespace, a quote, a bracket, ``=``, ``#`` or a control
    character, so that it reads the same in a domain file, a problem line, a plan and a table.
    """
    if not isinstance(name, str):
        return f"a name must be a string, got {_show(name)}"
    bad = _bad_char(name)
    if bad is not None:
        return f"names may not contain control characters (found {ascii(bad)})"
    if not _NAME_RE.fullmatch(name):
        return "names may not be empty or contain spaces, quotes, brackets, '#' or '='"
    return None


def show(raw: Any, limit: int = 60) -> str:
    """``repr(raw)`` for an error message: escaped (no raw newlines or control characters) and shortened.

    A message must stay one line and short whatever the file held: a 400-digit number, a megabyte string or a
    list nested a thousand deep.
    """
    if isinstance(raw, int) and not isinstance(raw, bool) and raw.bit_length() > 200:
        n = abs(raw)
        digits = int(math.log10(n)) + 1
        digits += (10**digits <= n) - (10 ** (digits - 1) > n)  # exact, whatever log10 rounded to
        return f"{'a negative' if raw < 0 else 'an'} integer of {digits} digits"
    if isinstance(raw, str) and len(raw) > 4 * limit:
        raw = raw[: 4 * limit]
    try:
        text = repr(raw)  # escapes every character that is not printable
    except (RecursionError, ValueError):  # nested too deep, or an integer past Python's digit limit inside
        return f"a deeply nested {type(raw).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


_show = show


#: An integer as a domain file writes one in a string (``">= 12"``): ASCII digits only. Python's ``int()`` also
#: reads ``"1_000"`` and other scripts' digits (``"١٢"``), which would make a condition mean a number it does not
#: show.
_INT_TEXT = re.compile(r"[+-]?[0-9]+")


def _as_int(raw: Any) -> int | None:
    """``raw`` as an exact integer, or None: a float only when it is integral and below 2**53 in magnitude (from
    2**53 on, floats skip integers: the parser has already rounded ``9007199254740993.0`` to 2**53, so 2**53
    itself may stand for another number), a string only of ASCII digits with an optional sign."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and raw.is_integer() and abs(raw) < 2**53:
        return int(raw)
    if isinstance(raw, str):
        text = raw.strip()
        return int(text) if _INT_TEXT.fullmatch(text) else None
    return None


def _has_type(fact: Fact, raw: Any) -> bool:
    """Whether ``raw`` has the JSON type of ``fact``'s values (bool, integer, string label)."""
    if fact.kind == BOOL:
        return isinstance(raw, bool)
    if fact.kind == INT:
        return isinstance(raw, int) and not isinstance(raw, bool)
    return isinstance(raw, str)


class _NormalForms:
    """Names seen so far by their NFC form: two names that differ only in Unicode normalisation (NFC ``é`` and
    NFD ``e`` + U+0301) print the same, so a domain holding both would have two things no one can tell apart."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def twin(self, name: str) -> str | None:
        """The earlier name that prints as ``name`` but is not it, if any; records ``name``."""
        key = unicodedata.normalize("NFC", name)
        other = self.seen.setdefault(key, name)
        return other if other != name else None


def _twin_error(name: str, other: str) -> str:
    return f"{ascii(name)} and {ascii(other)} differ only in Unicode normalisation (NFC / NFD): rename one"


def _item(kind: str, name: Any) -> str:
    """``fact 'ammo'``; a name that could not be printed as it is (a newline in it) is shown escaped."""
    text = str(name)
    return f"{kind} '{text}'" if text.isprintable() and len(text) <= 80 else f"{kind} {_show(text, 80)}"


def _limit(x: float) -> str:
    return f"{x:.0e}".replace("e+", "e")


def _number_within(raw: Any, lo: float, hi: float) -> bool:
    """Whether ``raw`` is an int or float (not a bool) in ``lo..hi``; NaN is not. Compares ints exactly, so a
    400-digit integer is simply out of range (converting it to float would overflow)."""
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return False
    return lo <= raw <= hi


def _table(raw: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise _ItemError(f"'{what}' must be a table of fact = value, got {_show(raw)}")
    return raw


def _parse_fact(name: str, spec: Any) -> Fact:
    problem = name_error(name)
    if problem:
        raise ValueError(problem)
    if isinstance(spec, bool):
        return Fact(name=name, kind=BOOL, min=0, max=1, default=int(spec))
    if not isinstance(spec, Mapping):
        raise ValueError(
            f"a fact is `name = false` (bool) or a table with type = \"int\" or \"enum\", got {_show(spec)}"
        )
    kind = spec.get("type", BOOL)
    allowed = {BOOL: {"type", "default"}, INT: {"type", "min", "max", "default"}, ENUM: {"type", "values", "default"}}
    if not isinstance(kind, str) or kind not in allowed:
        raise ValueError(f"unknown fact type {_show(kind)} (expected \"bool\", \"int\" or \"enum\")")
    extra = set(spec) - allowed[kind]
    if extra:
        raise ValueError(f"unknown key {_show(sorted(extra)[0])} for a {kind} fact")
    if kind == BOOL:
        fact = Fact(name=name, kind=BOOL)
        return Fact(name=name, kind=BOOL, default=fact.parse_value(spec.get("default", False), "default"))
    if kind == ENUM:
        labels = spec.get("values")
        if not isinstance(labels, list) or len(labels) < 2 or not all(isinstance(x, str) for x in labels):
            raise ValueError("an enum fact needs 'values', a list of at least two strings")
        if len(set(labels)) != len(labels):
            raise ValueError("enum values must be distinct")
        forms = _NormalForms()
        for label in labels:
            other = forms.twin(label)
            if other is not None:
                raise ValueError(f"enum values {_twin_error(label, other)}")
        for label in labels:
            problem = name_error(label)
            if problem or label[0] in "<>!=":
                why = problem or "enum values may not start with an operator (< > ! =)"
                raise ValueError(f"enum value {_show(label)}: {why}")
        fact = Fact(name=name, kind=ENUM, min=0, max=len(labels) - 1, labels=tuple(labels))
        default = fact.parse_value(spec.get("default", labels[0]), "default")
        return Fact(name=name, kind=ENUM, min=0, max=len(labels) - 1, default=default, labels=tuple(labels))
    lo, hi = _as_int(spec.get("min")), _as_int(spec.get("max"))
    if lo is None or hi is None or isinstance(spec.get("min"), str) or isinstance(spec.get("max"), str):
        raise ValueError("an int fact needs integer 'min' and 'max'")
    for key, v in (("min", lo), ("max", hi)):
        if not INT_MIN <= v <= INT_MAX:
            raise ValueError(
                f"{key} {_show(v)} does not fit the 64-bit encoding: min and max must be in -2**63..2**63-1"
            )
    if lo >= hi:
        raise ValueError(f"min ({lo}) must be less than max ({hi})")
    if hi - lo >= MAX_INT_VALUES:
        raise ValueError(f"range {lo}..{hi} is too wide (at most 2**62 values)")
    fact = Fact(name=name, kind=INT, min=lo, max=hi, default=lo)
    default = spec.get("default", lo)
    if isinstance(default, str):
        raise ValueError(f"default for int fact '{name}' must be an integer, got {_show(default)}")
    return Fact(name=name, kind=INT, min=lo, max=hi, default=fact.parse_value(default, "default"))


def _parse_per_fact(domain: Domain, spec: Mapping[str, Any], parse: Callable[[Fact, Any], Any]) -> list[Any]:
    """``{fact: literal}`` parsed fact by fact; errors name the fact as the key path below the item."""
    out = []
    for fname, raw in spec.items():
        if fname not in domain._fact_index:
            raise _ItemError(f"unknown fact {_show(fname)}", fname)
        try:
            out.append(parse(domain.facts[domain._fact_index[fname]], raw))
        except ValueError as e:
            raise _ItemError(str(e), fname) from None
    return out


def _parse_conditions(domain: Domain, spec: Mapping[str, Any]) -> list[Condition]:
    return _parse_per_fact(domain, spec, _parse_condition)


def _parse_condition(fact: Fact, raw: Any) -> Condition:
    if fact.kind == BOOL:
        return Condition(fact.name, "==", fact.parse_value(raw, "condition"))
    if isinstance(raw, str):
        m = _COND_RE.match(raw)
        if not m:
            raise ValueError(f"cannot parse condition {_show(raw)}: expected 'op k' with op in {_OPS_TEXT}")
        op, literal = m.group(1) or "==", m.group(2)
        if fact.kind == ENUM:
            if op not in ("==", "!="):
                raise ValueError(f"enum fact '{fact.name}' only takes == and != conditions, got {_show(raw)}")
            return Condition(fact.name, op, fact.parse_value(literal, "condition"))
        if _as_int(literal) is None:
            raise ValueError(f"cannot parse condition {_show(raw)}: expected 'op k' with op in {_OPS_TEXT}")
        return Condition(fact.name, op, fact.parse_value(literal, "condition"))
    if fact.kind == ENUM:
        raise ValueError(f"condition for enum fact '{fact.name}' must be a label, got {_show(raw)}")
    return Condition(fact.name, "==", fact.parse_value(raw, "condition"))


#: Most conditional effects one action may have (each is a row of the planner's tables).
MAX_WHEN = 64


def _parse_when(domain: Domain, raw: Any, fail: Callable[..., DomainError]) -> tuple[When, ...]:
    """``when = [{ if = {fact = value, ...}, then = {fact = effect, ...} }, ...]``: conditional effects."""
    if not isinstance(raw, list | tuple):
        raise fail(f"'when' must be a list of {{ if = {{...}}, then = {{...}} }} tables, got {_show(raw)}", "when")
    if len(raw) > MAX_WHEN:
        raise fail(f"at most {MAX_WHEN} conditional effects per action, got {len(raw)}", "when")
    out = []
    for k, entry in enumerate(raw):
        where = ("when", str(k))
        if not isinstance(entry, Mapping) or set(entry) != {"if", "then"}:
            raise fail("each conditional effect is a table with exactly the keys 'if' and 'then', got "
                       f"{_show(entry)}", *where)
        try:
            cond = _parse_conditions(domain, _table(entry["if"], "if"))
        except _ItemError as e:
            raise fail(e.message, *where, "if", *e.path) from None
        try:
            effects = _parse_effects(domain, _table(entry["then"], "then"))
        except _ItemError as e:
            raise fail(e.message, *where, "then", *e.path) from None
        if not cond or not effects:
            raise fail("a conditional effect needs at least one condition ('if') and one effect ('then')", *where)
        out.append(When(tuple(cond), tuple(effects)))
    return tuple(out)


def _parse_effects(domain: Domain, spec: Mapping[str, Any]) -> list[Effect]:
    return _parse_per_fact(domain, spec, _parse_effect)


def _parse_effect(fact: Fact, raw: Any) -> Effect:
    if fact.kind != INT or not isinstance(raw, str):
        return Effect(fact.name, "=", fact.parse_value(raw, "effect"))
    m = _EFFECT_RE.match(raw)
    delta = _as_int(m.group(2)) if m else None
    if not m or delta is None:
        raise ValueError(f"cannot parse effect {_show(raw)}: expected k, '+= k' or '-= k'")
    op = m.group(1) or "="
    if op == "=":
        return Effect(fact.name, "=", fact.parse_value(delta, "effect"))
    if delta <= 0 or delta > fact.max - fact.min:
        raise ValueError(f"effect {_show(raw)}: the step must be in 1..{fact.max - fact.min}")
    return Effect(fact.name, op, delta)


def _compare(actual: int, op: str, value: int) -> bool:
    if op == "==":
        return actual == value
    if op == "!=":
        return actual != value
    if op == "<":
        return actual < value
    if op == "<=":
        return actual <= value
    if op == ">":
        return actual > value
    if op == ">=":
        return actual >= value
    raise ValueError(f"unknown operator {op!r}")


def achieves(action: Action, condition: Condition) -> bool:
    """Whether the action can make a false condition true, judged from its effect on that fact alone.

    This over-approximates (it ignores the current value except for the direction of a step), which is what
    the planners' admissible heuristic needs: any action that actually makes the condition true is counted.
    """
    for e in (*action.effects, *(e for w in action.when for e in w.effects)):
        if e.fact != condition.fact:
            continue
        if e.op == "=":
            hit = _compare(e.value, condition.op, condition.value)
        elif e.op == "+=":
            hit = condition.op in ("==", "!=", ">", ">=")
        else:
            hit = condition.op in ("==", "!=", "<", "<=")
        if hit or not action.when:  # one effect per fact without conditional effects: its verdict is final
            return hit
    return False

"""Pattern databases (``heuristic="pdb"``): per goal, exact goal distances in projections of the domain.

A *pattern* is a list of facts; its abstract states are the combinations of their values, numbered in mixed radix
(the first fact's encoded value, ``value - min``, has stride 1). Projecting the domain onto a pattern keeps every
action that changes a pattern fact, with only its conditions on pattern facts: a precondition on another fact is
assumed to hold, a conditional effect (`goap.domain.When`) whose condition reads another fact may or may not apply
(both outcomes are successors; at most `WHEN_CAP` such effects per action in one pattern, see `select_patterns`),
ints step and clamp as in the domain (``+=`` / ``-=`` to the fact's range, ``=`` sets). Each action costs its
least cost over every state at the domain's own costs (`goap.encoding.DomainTables.min_cost`: cost terms at their
cheaper end, the union of every agent type's actions at scale 1). A real plan projects onto an abstract one of no
greater cost, so the abstract goal distance ``d[s]`` is a lower bound; where no abstract plan exists ``d`` is inf,
and the state is a dead end (exactly: no real plan exists either).

Patterns per goal (`select_patterns`): the goal's *cone* is its facts plus, recursively, the facts in the
preconditions of every action that changes a cone fact and in the conditions of its conditional effects on cone
facts. When the product of the cone's ranges is at most ``pdb_states`` the one pattern is the whole cone and the
projection is exact for the actions that matter: h is the true optimal cost at the domain's costs (no cost terms)
from every state. Otherwise the goal's facts are split first-fit into at most `MAX_PATTERNS` groups of at most
``pdb_states // groups`` states, and each group grows by cone facts in order of causal closeness (breadth-first
from the group over the facts that decide how its facts change) while it fits; h is the max over the patterns.

Distances: ``d[s] = 0`` where the goal's conditions on pattern facts hold, else the least fixpoint of
``d[s] = min over abstract transitions (a, s') of c_a + d[s']``, which is unique (float64 addition is monotone,
so the fixpoint is the least right-folded sum over simple abstract paths, whatever the order of the updates). The
reference planner computes it here with numpy (`distances`, Jacobi sweeps over the explicit transitions from the
domain's own semantics); the Warp planner on its device from the flattened tables (`PatternTables`, Gauss-Seidel
sweeps in `goap.kernels.pdb`). Both give the same floats.

Per agent, without rebuilding: with c_a the domain's least costs and c'_a an agent's (inf where it may not use a),
``h_agent = factor * max_p d_p[s]``, ``factor = min over a with c_a > 0 of c'_a / c_a``. Every agent path costs at
least factor times its cost at the domain's costs (an action with c_a = 0 is charged 0 in the tables), so this is
admissible; factor is 1 for agents on the domain's costs. A ``d`` of 0 stays 0; a positive ``d`` with factor inf
(no positive-cost action usable) is inf: every abstract plan, hence every real one, needs such an action.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from goap.domain import Condition, Domain

#: Abstract states per goal, all its patterns together (planner option ``pdb_states``): the default and the
#: accepted range. A table holds one float64 per abstract state.
DEFAULT_PDB_STATES = 1 << 16
MIN_PDB_STATES = 16
MAX_PDB_STATES = 1 << 24
#: The most patterns one goal's heuristic maxes over.
MAX_PATTERNS = 4
#: The most conditional effects of one action whose condition reads a fact outside the pattern (each may or may
#: not apply: up to 2**WHEN_CAP successors); a fact that would exceed it is left out of the pattern.
WHEN_CAP = 6
#: The most bytes the distance tables of one goal table may take (checked before anything is allocated).
MAX_PDB_BYTES = 1 << 30

_OPS = ("==", "!=", "<", "<=", ">", ">=")


def check_pdb_states(pdb_states: Any) -> int:
    """``pdb_states`` as an int, or a ValueError naming the accepted range."""
    if isinstance(pdb_states, bool) or not isinstance(pdb_states, int | np.integer) or not (
        MIN_PDB_STATES <= pdb_states <= MAX_PDB_STATES
    ):
        raise ValueError(
            f"pdb_states must be an integer in {MIN_PDB_STATES}..{MAX_PDB_STATES:,} (abstract states per goal, all "
            f"its patterns together; a table holds 8 bytes per state), got {pdb_states!r}"
        )
    return int(pdb_states)


# --- pattern selection (shared by both planners) ---------------------------------------------------------------
def _radix(domain: Domain) -> list[int]:
    return [f.max - f.min + 1 for f in domain.facts]


_PER_DOMAIN: dict[tuple[int, str], tuple[Domain, Any]] = {}


def _per_domain(domain: Domain, key: str, make: Any) -> Any:
    """``make(domain)``, kept for the last few domains (by identity; domains are immutable). Callers must not
    modify what it returns."""
    got = _PER_DOMAIN.get((id(domain), key))
    if got is not None and got[0] is domain:
        return got[1]
    if len(_PER_DOMAIN) >= 16:
        _PER_DOMAIN.clear()
    value = make(domain)
    _PER_DOMAIN[(id(domain), key)] = (domain, value)
    return value


def _action_facts(domain: Domain) -> list[tuple[set[int], set[int], list[tuple[set[int], set[int]]]]]:
    """Per action: facts of its preconditions, facts its unconditional effects change, and per conditional effect
    (the facts of its condition, the facts it changes)."""
    return _per_domain(domain, "action_facts", _make_action_facts)


def _make_action_facts(domain: Domain) -> list[tuple[set[int], set[int], list[tuple[set[int], set[int]]]]]:
    fi = domain.fact_index
    out = []
    for action in domain.actions:
        pre = {fi(c.fact) for c in action.pre}
        eff = {fi(e.fact) for e in action.effects}
        whens = [({fi(c.fact) for c in w.cond}, {fi(e.fact) for e in w.effects}) for w in action.when]
        out.append((pre, eff, whens))
    return out


def causal_parents(domain: Domain) -> list[list[int]]:
    """Per fact f, the facts that decide whether and how f changes: the preconditions of every action changing f,
    and the conditions of its conditional effects on f (sorted, f itself left out)."""
    return [list(p) for p in _per_domain(domain, "causal_parents", _make_causal_parents)]


def _make_causal_parents(domain: Domain) -> list[list[int]]:
    parents: list[set[int]] = [set() for _ in domain.facts]
    for pre, eff, whens in _action_facts(domain):
        for f in eff:
            parents[f] |= pre
        for cond, weff in whens:
            for f in weff:
                parents[f] |= pre | cond
    return [sorted(p - {f}) for f, p in enumerate(parents)]


def cone(domain: Domain, want: Sequence[Condition]) -> list[int]:
    """The goal's cone: its facts and, recursively, their causal parents (in breadth-first order)."""
    return _closeness(causal_parents(domain), _goal_facts(domain, want))


def _goal_facts(domain: Domain, want: Sequence[Condition]) -> list[int]:
    out: list[int] = []
    for c in want:
        f = domain.fact_index(c.fact)
        if f not in out:
            out.append(f)
    return out


def _closeness(parents: list[list[int]], seeds: list[int]) -> list[int]:
    """``seeds``, then the facts they depend on, layer by layer (ascending ids within a layer)."""
    order, seen = list(seeds), set(seeds)
    layer = list(seeds)
    while layer:
        nxt = sorted({p for f in layer for p in parents[f]} - seen)
        seen.update(nxt)
        order += nxt
        layer = nxt
    return order


def _unknown_whens(facts: list[tuple[set[int], set[int], list[tuple[set[int], set[int]]]]], pattern: set[int]) -> int:
    """The most conditional effects of one action that change a pattern fact under a condition reading another."""
    most = 0
    for _pre, _eff, whens in facts:
        n = sum(1 for cond, weff in whens if weff & pattern and not cond <= pattern)
        most = max(most, n)
    return most


def select_patterns(domain: Domain, want: Sequence[Condition], pdb_states: int) -> tuple[tuple[int, ...], ...]:
    """The patterns (fact indices, in stride order) of the goal ``want``, within ``pdb_states`` states in all.

    See the module docstring: the whole cone when it fits, else up to `MAX_PATTERNS` groups of goal facts (first
    fit, in the goal's order), each grown by cone facts in order of causal closeness while it fits. A fact whose
    range alone does not fit, or that would give an action more than `WHEN_CAP` undecided conditional effects, is
    left out (the bound only weakens).
    """
    radix = _radix(domain)
    parents = causal_parents(domain)
    action_facts = _action_facts(domain)
    goal = _goal_facts(domain, want)
    groups: list[list[int]] = []
    for n in range(1, MAX_PATTERNS + 1):
        per = pdb_states // n
        groups = []
        sizes: list[int] = []
        for f in goal:
            if radix[f] > per:
                continue
            for i, size in enumerate(sizes):
                if size * radix[f] <= per:
                    groups[i].append(f)
                    sizes[i] *= radix[f]
                    break
            else:
                groups.append([f])
                sizes.append(radix[f])
        if len(groups) <= n:
            break
    groups = groups[:MAX_PATTERNS]
    per = pdb_states // max(1, len(groups))
    patterns = []
    for group in groups:
        pattern: list[int] = []
        size = 1
        for f in _closeness(parents, group):
            if size * radix[f] > per or _unknown_whens(action_facts, {*pattern, f}) > WHEN_CAP:
                continue
            pattern.append(f)
            size *= radix[f]
        if pattern:
            patterns.append(tuple(pattern))
    return tuple(patterns)


def pattern_size(domain: Domain, pattern: Sequence[int]) -> int:
    return math.prod(domain.facts[f].max - domain.facts[f].min + 1 for f in pattern)


def strides(domain: Domain, pattern: Sequence[int]) -> list[int]:
    out, s = [], 1
    for f in pattern:
        out.append(s)
        s *= domain.facts[f].max - domain.facts[f].min + 1
    return out


def relevant_actions(domain: Domain, pattern: Sequence[int]) -> list[int]:
    """The actions that may change a pattern fact (unconditionally or by a conditional effect), ascending."""
    changers = _changers(domain)
    return sorted({a for f in pattern for a in changers[f]})


def _changers(domain: Domain) -> list[list[int]]:
    """Per fact, the actions that may change it."""
    return _per_domain(domain, "changers", _make_changers)


def _make_changers(domain: Domain) -> list[list[int]]:
    names = {f.name: i for i, f in enumerate(domain.facts)}
    out: list[list[int]] = [[] for _ in domain.facts]
    for a, action in enumerate(domain.actions):
        for f in sorted({names[e.fact] for e in action.effects} | {names[e.fact] for w in action.when
                                                                   for e in w.effects}):
            out[f].append(a)
    return out


def check_table_bytes(domain: Domain, patterns: Sequence[Sequence[Sequence[int]]], what: str) -> int:
    """The states of every pattern of every goal, or a ValueError when their tables exceed `MAX_PDB_BYTES`."""
    total = sum(pattern_size(domain, p) for goal in patterns for p in goal)
    if 8 * total > MAX_PDB_BYTES:
        raise ValueError(
            f"the pattern databases of {what} ({len(patterns)} goals) need {8 * total:,} bytes, more than "
            f"{MAX_PDB_BYTES:,}: lower pdb_states"
        )
    return total


# --- the reference: distances by numpy, from the domain's own semantics -------------------------------------------
def _holds(values: np.ndarray, op: str, k: int) -> np.ndarray:
    if op == "==":
        return values == k
    if op == "!=":
        return values != k
    if op == "<":
        return values < k
    if op == "<=":
        return values <= k
    if op == ">":
        return values > k
    return values >= k


def _apply(values: np.ndarray, effect: Any, lo: int, hi: int) -> np.ndarray:
    if effect.op == "=":
        return np.full_like(values, effect.value)
    step = effect.value if effect.op == "+=" else -effect.value
    return np.clip(values + step, lo, hi)


def distances(domain: Domain, pattern: Sequence[int], costs: Sequence[float], want: Sequence[Condition],
              saturated: bool = False) -> Any:
    """float64[n]: the abstract goal distance of every abstract state of ``pattern`` (inf: no abstract plan), with
    action costs ``costs`` (the domain's least costs), by Jacobi sweeps of the backward fixpoint over the explicit
    abstract transitions, made from the domain's own rules (`goap.domain.Condition`, `goap.domain.Effect`; see the
    module docstring).

    With ``saturated``, ``(d, sat)``: also float64[A], per domain action its saturated cost (`goap.planners.scp`),
    ``max(0, max over its abstract transitions s -> s' with d[s] and d[s'] finite of d[s] - d[s'])``, 0 for an
    action with no such transition (one that changes no pattern fact among them)."""
    n = pattern_size(domain, pattern)
    where = {f: j for j, f in enumerate(pattern)}
    stride = strides(domain, pattern)
    lo = [domain.facts[f].min for f in pattern]
    hi = [domain.facts[f].max for f in pattern]
    # The decoded value of each pattern fact in every abstract state (mixed radix, the first fact fastest).
    digits = np.unravel_index(np.arange(n, dtype=np.int64), [h - low + 1 for low, h in zip(lo, hi, strict=True)][::-1])
    columns = [digits[len(pattern) - 1 - j].astype(np.int64) + lo[j] for j in range(len(pattern))]
    fi = domain.fact_index

    def value(j: int) -> np.ndarray:
        return columns[j]

    def conds_hold(conds: Sequence[Condition]) -> tuple[np.ndarray, bool]:
        """Rows where the pattern's part of ``conds`` holds, and whether some condition reads another fact."""
        ok = np.ones(n, dtype=bool)
        outside = False
        for c in conds:
            f = fi(c.fact)
            if f in where:
                ok &= _holds(value(where[f]), c.op, c.value)
            else:
                outside = True
        return ok, outside

    def successor(rows: np.ndarray, changed: dict[int, np.ndarray]) -> np.ndarray:
        dst = rows.copy()
        for j, v in changed.items():
            dst += (v - value(j)[rows]) * stride[j]
        return dst

    goal_ok, _ = conds_hold(want)
    parts = []  # (sources, successors, cost): within one part each source appears once
    for a in relevant_actions(domain, pattern):
        action = domain.actions[a]
        ok, _ = conds_hold(action.pre)
        rows = np.flatnonzero(ok)
        if not len(rows):
            continue
        after: dict[int, np.ndarray] = {}  # pattern fact -> its value after the unconditional effects
        for e in action.effects:
            f = fi(e.fact)
            if f in where:
                j = where[f]
                after[j] = _apply(after.get(j, value(j)[rows]), e, lo[j], hi[j])
        whens = []  # (rows where it may apply, rows where it must, its effects on the pattern, reads another fact)
        for w in action.when:
            effects = [e for e in w.effects if fi(e.fact) in where]
            if not effects:
                continue
            may, outside = conds_hold(w.cond)
            may = may[rows]
            whens.append((may, may & (not outside), effects, outside))
        undecided = [i for i, (_, _, _, outside) in enumerate(whens) if outside]
        for combo in range(1 << len(undecided)):
            valid = np.ones(len(rows), dtype=bool)
            out = dict(after)
            for i, (may, must, effects, outside) in enumerate(whens):
                if outside:
                    on = (combo >> undecided.index(i)) & 1
                    if not on:
                        continue
                    valid &= may
                    apply = np.ones(len(rows), dtype=bool)
                else:
                    apply = must
                for e in effects:
                    j = where[fi(e.fact)]
                    cur = out.get(j, value(j)[rows])
                    out[j] = np.where(apply, _apply(cur, e, lo[j], hi[j]), cur)
            keep = np.flatnonzero(valid)
            dst = successor(rows, out)[keep]
            parts.append((rows[keep].astype(np.int32), dst.astype(np.int32), float(costs[a]), a))
    columns.clear()
    del digits
    d = np.where(goal_ok, 0.0, np.inf)
    for _sweep in range(n + 1):
        new = d.copy()
        for src, dst, c, _a in parts:
            new[src] = np.minimum(new[src], c + d[dst])
        if np.array_equal(new, d):
            break
        d = new
    if not saturated:
        return d
    sat = np.zeros(len(domain.actions), dtype=np.float64)
    for src, dst, _c, a in parts:
        live = np.isfinite(d[src]) & np.isfinite(d[dst])
        if live.any():
            sat[a] = max(sat[a], float(np.max(d[src][live] - d[dst][live])))
    return d, sat


def agent_factor(min_cost: Sequence[float], costs: Sequence[float], enabled: Sequence[bool]) -> float:
    """min over actions with a positive domain least cost of the agent's least cost over it (inf: disabled): the
    per-agent factor of the module docstring."""
    factor = math.inf
    for a, c in enumerate(min_cost):
        if c > 0.0:
            factor = min(factor, (costs[a] if enabled[a] else math.inf) / c)
    return factor


def abstract_index(state: Sequence[int], facts: Sequence[int], lo: Sequence[int], hi: Sequence[int],
                   stride: Sequence[int]) -> int:
    """The abstract state of ``state`` in a pattern (its facts, their ranges and strides); -1 where a fact holds a
    value outside its range (not a valid state)."""
    idx = 0
    for f, low, high, s in zip(facts, lo, hi, stride, strict=True):
        v = state[f]
        if not low <= v <= high:
            return -1
        idx += (v - low) * s
    return idx


class ReferencePatterns:
    """The reference planner's pattern databases, per goal (by its conditions), built on first use."""

    def __init__(self, domain: Domain, min_cost: np.ndarray, pdb_states: int):
        self.domain = domain
        self.min_cost = [float(c) for c in min_cost]
        self.pdb_states = check_pdb_states(pdb_states)
        self._goals: dict[tuple[Condition, ...], list[tuple[list[int], list[int], list[int], list[int], Any]]] = {}

    def tables(self, want: Sequence[Condition]) -> list[tuple[list[int], list[int], list[int], list[int], Any]]:
        """Per pattern of the goal: (facts, their minimum, their maximum, strides, distances)."""
        key = tuple(want)
        got = self._goals.get(key)
        if got is None:
            if len(self._goals) >= 256:
                self._goals.clear()
            domain = self.domain
            patterns = select_patterns(domain, want, self.pdb_states)
            check_table_bytes(domain, [patterns], "a goal")
            got = self._goals[key] = [
                (list(p), [domain.facts[f].min for f in p], [domain.facts[f].max for f in p], strides(domain, p),
                 distances(domain, p, self.min_cost, want))
                for p in patterns
            ]
        return got

    def factor(self, costs: Sequence[float], enabled: Sequence[bool]) -> float:
        return agent_factor(self.min_cost, costs, enabled)

    def value(self, want: Sequence[Condition], state: Sequence[int], factor: float) -> float:
        """``factor * max_p d_p[state]`` (0 where that max is 0, inf where it is inf); a pattern whose fact holds
        a value outside its range (not a valid state) counts 0."""
        top = 0.0
        for facts, lo, hi, stride, d in self.tables(want):
            idx = abstract_index(state, facts, lo, hi, stride)
            if idx >= 0:
                top = max(top, float(d[idx]))
        if math.isinf(top):
            return math.inf
        if top == 0.0:
            return 0.0
        return top * factor


# --- the Warp planner's flattened tables ------------------------------------------------------------------------
@dataclass(frozen=True)
class PatternTables:
    """The pattern databases of one goal table, flattened for `goap.kernels.pdb` (the Warp mirror has the same
    names). Goal g's patterns are ``goal_start[g]:goal_start[g + 1]``; pattern p's facts ``fact_start[p]:...``
    (domain fact index, radix, stride), its distances ``dist[dist_start[p]:dist_start[p + 1]]``. The projected
    actions, for the build: pattern p's are rows ``act_start[p]:...`` (cost ``act_cost``), each with conditions
    ``pre_*`` and effects ``eff_*`` on pattern positions (``pos``: index among the pattern's facts), and conditional
    effects ``when_start``, each with conditions ``wcond_*``, effects ``weff_*`` and ``wunknown`` (1: its condition
    also reads a fact outside the pattern). The goal's conditions on pattern facts: ``gcond_*`` per pattern.
    Conditions are ``digit op k`` on encoded values (``k`` clamped to -1..radix); effects set ``value`` (op 0) or
    add it, clamped to 0..radix-1 (op 1). A goal's patterns come in *orders* (`goap.planners.scp`): a run of
    patterns from one with ``order_first`` 1 to the next; for ``pdb`` each pattern is an order of its own. Row r is
    domain action ``act_action[r]`` (the saturated costs' build reads it).
    """

    goal_start: np.ndarray  # int32[G + 1]
    fact_start: np.ndarray  # int32[P + 1]
    fact: np.ndarray  # int32[K]
    radix: np.ndarray  # int32[K]
    stride: np.ndarray  # int32[K]
    dist_start: np.ndarray  # int32[P + 1]
    act_start: np.ndarray  # int32[P + 1]
    act_cost: np.ndarray  # float64[R]
    pre_start: np.ndarray  # int32[R + 1]
    pre_pos: np.ndarray
    pre_op: np.ndarray
    pre_k: np.ndarray
    eff_start: np.ndarray  # int32[R + 1]
    eff_pos: np.ndarray
    eff_op: np.ndarray
    eff_value: np.ndarray
    when_start: np.ndarray  # int32[R + 1]
    wunknown: np.ndarray  # int32[WR]
    wcond_start: np.ndarray  # int32[WR + 1]
    wcond_pos: np.ndarray
    wcond_op: np.ndarray
    wcond_k: np.ndarray
    weff_start: np.ndarray  # int32[WR + 1]
    weff_pos: np.ndarray
    weff_op: np.ndarray
    weff_value: np.ndarray
    gcond_start: np.ndarray  # int32[P + 1]
    gcond_pos: np.ndarray
    gcond_op: np.ndarray
    gcond_k: np.ndarray
    act_action: np.ndarray  # int32[R]: the domain action of each projected action row
    order_first: np.ndarray  # int32[P]: 1 where pattern p begins an order (every pattern, for pdb)
    patterns: tuple[tuple[tuple[int, ...], ...], ...] = ()  # per goal, its patterns (host only)

    @property
    def n_patterns(self) -> int:
        return len(self.fact_start) - 1

    @property
    def pattern_rows(self) -> np.ndarray:
        """int32[P + 1, 3]: per pattern (fact_start, dist_start, order_first), what a search reads
        (`goap.kernels.pdb`; the last row's order_first is 0)."""
        first = np.append(np.asarray(self.order_first, dtype=np.int32), np.int32(0))
        return np.stack([self.fact_start, self.dist_start, first], axis=1).astype(np.int32)

    @property
    def fact_rows(self) -> np.ndarray:
        """int32[K, 3]: per pattern fact (fact, radix, stride)."""
        return np.stack([self.fact, self.radix, self.stride], axis=1).astype(np.int32).reshape(-1, 3)

    @property
    def n_states(self) -> int:
        return int(self.dist_start[-1])


def pattern_tables(domain: Domain, goals: Sequence[Any], min_cost: np.ndarray, pdb_states: int) -> PatternTables:
    """Select every goal's patterns and flatten their projections (distances are computed on the device)."""
    pdb_states = check_pdb_states(pdb_states)
    per_goal = [select_patterns(domain, g.want, pdb_states) for g in goals]
    check_table_bytes(domain, per_goal, "the goal table")
    return flatten_patterns(domain, goals, [tuple((p,) for p in patterns) for patterns in per_goal], min_cost)


def flatten_patterns(domain: Domain, goals: Sequence[Any], per_goal: Sequence[Sequence[Sequence[Sequence[int]]]],
                     min_cost: np.ndarray) -> PatternTables:
    """Flatten the projections of every goal's orders of patterns (``per_goal[g]``: its orders, each a sequence
    of patterns) into `PatternTables`, each row at the domain's least cost ``min_cost`` (sizes checked by the
    caller, `check_table_bytes`)."""
    fi = domain.fact_index
    lists: dict[str, list] = {name: [] for name in (
        "goal_start", "fact_start", "fact", "radix", "stride", "dist_start", "act_start", "act_cost", "pre_start",
        "pre_pos", "pre_op", "pre_k", "eff_start", "eff_pos", "eff_op", "eff_value", "when_start", "wunknown",
        "wcond_start", "wcond_pos", "wcond_op", "wcond_k", "weff_start", "weff_pos", "weff_op", "weff_value",
        "gcond_start", "gcond_pos", "gcond_op", "gcond_k", "act_action", "order_first")}
    L = lists
    for name in ("goal_start", "fact_start", "dist_start", "act_start", "pre_start", "eff_start", "when_start",
                 "wcond_start", "weff_start", "gcond_start"):
        L[name].append(0)

    def cond_items(conds: Sequence[Condition], where: dict[int, int], prefix: str) -> bool:
        outside = False
        for c in conds:
            f = fi(c.fact)
            if f not in where:
                outside = True
                continue
            fact = domain.facts[f]
            L[prefix + "pos"].append(where[f])
            L[prefix + "op"].append(_OPS.index(c.op))
            L[prefix + "k"].append(min(max(c.value - fact.min, -1), fact.max - fact.min + 1))
        return outside

    def effect_items(effects: Sequence[Any], where: dict[int, int], prefix: str) -> None:
        for e in effects:
            f = fi(e.fact)
            if f not in where:
                continue
            fact = domain.facts[f]
            span = fact.max - fact.min
            L[prefix + "pos"].append(where[f])
            if e.op == "=":
                L[prefix + "op"].append(0)
                L[prefix + "value"].append(e.value - fact.min)
            else:
                L[prefix + "op"].append(1)
                step = e.value if e.op == "+=" else -e.value
                L[prefix + "value"].append(min(max(step, -span - 1), span + 1))

    total = 0
    flat: list[tuple[tuple[int, ...], ...]] = []
    for goal, orders in zip(goals, per_goal, strict=True):
        flat.append(tuple(tuple(p) for order in orders for p in order))
        firsts = [int(i == 0) for order in orders for i in range(len(order))]
        for p, first in zip(flat[-1], firsts, strict=True):
            L["order_first"].append(first)
            where = {f: j for j, f in enumerate(p)}
            for f, s in zip(p, strides(domain, p), strict=True):
                L["fact"].append(f)
                L["radix"].append(domain.facts[f].max - domain.facts[f].min + 1)
                L["stride"].append(s)
            L["fact_start"].append(len(L["fact"]))
            total += pattern_size(domain, p)
            L["dist_start"].append(total)
            cond_items(goal.want, where, "gcond_")
            L["gcond_start"].append(len(L["gcond_pos"]))
            for a in relevant_actions(domain, p):
                action = domain.actions[a]
                L["act_cost"].append(float(min_cost[a]))
                L["act_action"].append(a)
                cond_items(action.pre, where, "pre_")
                L["pre_start"].append(len(L["pre_pos"]))
                effect_items(action.effects, where, "eff_")
                L["eff_start"].append(len(L["eff_pos"]))
                for w in action.when:
                    if not any(fi(e.fact) in where for e in w.effects):
                        continue
                    L["wunknown"].append(int(cond_items(w.cond, where, "wcond_")))
                    L["wcond_start"].append(len(L["wcond_pos"]))
                    effect_items(w.effects, where, "weff_")
                    L["weff_start"].append(len(L["weff_pos"]))
                L["when_start"].append(len(L["wunknown"]))
            L["act_start"].append(len(L["act_cost"]))
        L["goal_start"].append(len(L["fact_start"]) - 1)
    if total >= 2**31:
        raise ValueError(f"the pattern databases need {total:,} states, more than 2**31: lower pdb_states")
    arrays = {name: np.array(v, dtype=np.float64 if name == "act_cost" else np.int32) for name, v in L.items()}
    return PatternTables(**arrays, patterns=tuple(flat))

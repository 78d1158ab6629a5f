"""Saturated cost partitioning over projections (``heuristic="scp"`` and ``"max_lmcut_scp"``).

The projections and their distances are those of `goap.planners.pdb`; what differs is which patterns and how they
combine. Patterns per goal (`scp_patterns`): systematic ones over the goal's cone (`goap.planners.pdb.cone`), every
cone fact alone and every pair of cone facts one of which is a causal parent of the other
(`goap.planners.pdb.causal_parents`), a pattern dropped when it has more than `SCP_PATTERN_STATES` abstract states
or would give an action more than `goap.planners.pdb.WHEN_CAP` undecided conditional effects.

An *order* is a sequence of those patterns. Along it, with remaining costs ``rc`` starting at the domain's least
costs (`goap.encoding.DomainTables.min_cost`), each pattern p in turn gets its distances ``d_p`` under ``rc`` and
the *saturated* cost of each action a, ``sat_p(a) = min(rc(a), max(0, max over abstract transitions s -a-> s'
with d_p[s] and d_p[s'] finite of d_p[s] - d_p[s']))`` (0 when a has no such transition): the least cost that
keeps every finite ``d_p`` (Seipp, Keller and Helmert 2020); then ``rc -= sat_p``. The saturated costs of an
order sum to at most each action's least cost, so ``sum_p d_p[s]`` is admissible (a cost partitioning: every
real plan costs at least sum over p of its cost under sat_p, which is at least d_p). The ``min`` with rc changes
nothing in exact arithmetic (d_p[s] <= rc(a) + d_p[s'] on every transition) and keeps rc >= 0 in float64.

Orders (the planners' option ``scp_orders``, 1..`MAX_SCP_ORDERS`): the goal's `candidates` are its systematic
patterns in a fixed order (per goal fact its pairs, then the fact alone; then the other pairs in cone order, then
the other facts alone), kept while they fit ``pdb_states // orders`` abstract states and ``SCP_ROWS // orders``
projected action rows. Each order is a greedy
ranking of all of them (`rank_orders`) by a score from each pattern's distances and saturated costs under the full
least costs, computed once per goal (no state is sampled): order 0 by the largest finite distance over the
saturated costs' sum (plus 1), order 1 by the mean finite distance over the same, order 2 by the largest over the
costs it takes that others also want (Scorpion's "stolen" costs), order 3 the candidates' own order. h is
``factor * max over orders of sum over the order's patterns of d_p[s]`` (the per-agent factor of
`goap.planners.pdb`, which keeps it admissible), inf where any ``d_p`` is inf (an abstract dead end is a real
one), 0 where the sum is 0.

The reference planner computes the distances and saturated costs with numpy (`goap.planners.pdb.distances`); the
Warp planner on its device (`goap.kernels.pdb`: the same Gauss-Seidel sweeps with each pattern's own cost rows,
then one thread per abstract state taking ``wp.atomic_max`` of ``d[s] - d[s']`` per projected action, then one per
action row subtracting), twice: the candidates at full costs (what the orders are ranked from), then the orders.
Both give the same float64 tables, so both rank the same orders.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from goap.domain import Condition, Domain
from goap.planners.pdb import (
    WHEN_CAP,
    _action_facts,
    _goal_facts,
    _radix,
    _unknown_whens,
    abstract_index,
    agent_factor,
    causal_parents,
    check_pdb_states,
    check_table_bytes,
    cone,
    distances,
    flatten_patterns,
    pattern_size,
    relevant_actions,
    strides,
)

#: The most abstract states of one systematic pattern: a larger one is left out (its tables would crowd out the
#: rest of the goal's share of ``pdb_states``).
SCP_PATTERN_STATES = 1 << 12
#: The most projected action rows (one per pattern and action that changes one of its facts) of one goal's orders,
#: all together: a pattern that would pass it is left out (building the tables costs about their rows).
SCP_ROWS = 1 << 17
#: Orders per goal (planner option ``scp_orders``): the default and the most.
DEFAULT_SCP_ORDERS = 2
MAX_SCP_ORDERS = 4


def check_scp_orders(scp_orders: Any) -> int:
    """``scp_orders`` as an int, or a ValueError naming the accepted range."""
    if isinstance(scp_orders, bool) or not isinstance(scp_orders, int | np.integer) or not (
        1 <= scp_orders <= MAX_SCP_ORDERS
    ):
        raise ValueError(
            f"scp_orders must be an integer in 1..{MAX_SCP_ORDERS} (orders of the saturated cost partitioning per "
            f"goal, h the max over them), got {scp_orders!r}"
        )
    return int(scp_orders)


def systematic_patterns(domain: Domain, want: Sequence[Condition], bound: int = SCP_PATTERN_STATES
                        ) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """The goal's systematic patterns of sizes 1 and 2 (see the module docstring), at most ``bound`` states each:
    (the pairs, the single facts), each in cone order (a pair's facts in cone order too)."""
    radix = _radix(domain)
    parents = causal_parents(domain)
    facts = [f for f in _action_facts(domain) if f[2]]  # the actions with conditional effects
    order = cone(domain, want)
    rank = {f: i for i, f in enumerate(order)}
    singles = [(f,) for f in order if radix[f] <= bound and _unknown_whens(facts, {f}) <= WHEN_CAP]
    pairs: set[tuple[int, int]] = set()
    for f in order:
        for p in parents[f]:
            if p in rank:
                pairs.add((f, p) if rank[f] < rank[p] else (p, f))
    kept = [pair for pair in sorted(pairs, key=lambda q: (rank[q[0]], rank[q[1]]))
            if radix[pair[0]] * radix[pair[1]] <= bound and _unknown_whens(facts, set(pair)) <= WHEN_CAP]
    return kept, singles


def candidates(domain: Domain, want: Sequence[Condition], pdb_states: int, n_orders: int = DEFAULT_SCP_ORDERS
               ) -> tuple[tuple[int, ...], ...]:
    """The goal's patterns (see the module docstring), within ``pdb_states // n_orders`` states and
    ``SCP_ROWS // n_orders`` projected action rows: per goal fact its pairs then the fact alone, then the other
    pairs, then the other facts alone, each kept while it fits."""
    per = pdb_states // n_orders
    pairs, singles = systematic_patterns(domain, want, min(SCP_PATTERN_STATES, per))
    single = set(singles)
    seq: list[tuple[int, ...]] = []
    taken: set[tuple[int, ...]] = set()
    for f in _goal_facts(domain, want):
        for q in (*[q for q in pairs if f in q], (f,)):
            if q not in taken and (len(q) == 2 or q in single):
                taken.add(q)
                seq.append(q)
    seq += [q for q in pairs if q not in taken] + [q for q in singles if q not in taken]
    kept: list[tuple[int, ...]] = []
    used = rows = 0
    for q in seq:
        n, m = pattern_size(domain, q), len(relevant_actions(domain, q))
        if used + n <= per and rows + m <= SCP_ROWS // n_orders:
            kept.append(q)
            used += n
            rows += m
    return tuple(kept)


def sparse_saturated(sat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A pattern's saturated costs as (actions, costs), its positive ones in ascending action order."""
    acts = np.flatnonzero(sat > 0.0)
    return acts, sat[acts]


def rank_orders(patterns: Sequence[tuple[int, ...]], full: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
                n_orders: int) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """The orders of ``patterns`` (the goal's `candidates`), from each one's distances and saturated costs under
    the domain's full least costs (``full[i] = (d, actions, costs)``, `sparse_saturated`): greedy, best score first
    (ties in candidate order). With ``h`` the largest finite distance, ``m`` their mean, ``S`` the sum of the
    saturated costs and ``T`` the costs it takes that the other patterns also want (per action, the least of its
    saturated cost and the others' sum): order 0 by ``h / (1 + S)``, 1 by ``m / (1 + S)``, 2 by ``h / (1 + T)``,
    3 the candidates' own order (goal facts first). Sums are `math.fsum` (the same float whatever the order), so
    both planners rank the same floats the same way."""
    heights, means, spent = [], [], []
    demand: dict[int, list[float]] = {}
    for d, acts, costs in full:
        finite = d[np.isfinite(d)]
        heights.append(float(finite.max()) if len(finite) else 0.0)
        means.append(math.fsum(finite.tolist()) / len(finite) if len(finite) else 0.0)
        spent.append(math.fsum(costs.tolist()))
        for a, c in zip(acts.tolist(), costs.tolist(), strict=True):
            demand.setdefault(a, []).append(c)
    total = {a: math.fsum(v) for a, v in demand.items()}
    stolen = [math.fsum(min(c, total[a] - c) for a, c in zip(acts.tolist(), costs.tolist(), strict=True))
              for _d, acts, costs in full]
    scores = [
        [h / (1.0 + s) for h, s in zip(heights, spent, strict=True)],
        [m / (1.0 + s) for m, s in zip(means, spent, strict=True)],
        [h / (1.0 + t) for h, t in zip(heights, stolen, strict=True)],
        [0.0] * len(patterns),
    ]
    out = []
    for k in range(n_orders):
        rank = sorted(range(len(patterns)), key=lambda i, sc=scores[k]: -sc[i])  # stable: ties in candidate order
        out.append(tuple(patterns[i] for i in rank))
    return tuple(out)


def scp_orders(domain: Domain, want: Sequence[Condition], pdb_states: int, min_cost: Sequence[float],
               n_orders: int = DEFAULT_SCP_ORDERS) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """The orders of the goal ``want`` by numpy (the reference's; the Warp planner ranks its device's tables,
    the same floats, with `rank_orders`)."""
    patterns = candidates(domain, want, pdb_states, n_orders)
    full = []
    for p in patterns:
        d, sat = distances(domain, p, min_cost, want, saturated=True)
        full.append((d, *sparse_saturated(np.minimum(sat, np.asarray(min_cost, dtype=np.float64)))))
    return rank_orders(patterns, full, n_orders)


def partition(domain: Domain, orders: Sequence[Sequence[Sequence[int]]], min_cost: Sequence[float],
              want: Sequence[Condition]) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    """Per order, per pattern: (its distances under the remaining costs, its saturated costs, float64[A]), by
    numpy (`goap.planners.pdb.distances`); see the module docstring."""
    out = []
    for order in orders:
        rc = np.array(min_cost, dtype=np.float64)
        got = []
        for p in order:
            d, sat = distances(domain, p, rc.tolist(), want, saturated=True)
            sat = np.minimum(sat, rc)
            rc = rc - sat
            got.append((d, sat))
        out.append(got)
    return out


class ReferencePartitions:
    """The reference planner's saturated cost partitionings, per goal (by its conditions), built on first use."""

    def __init__(self, domain: Domain, min_cost: np.ndarray, pdb_states: int, n_orders: int = DEFAULT_SCP_ORDERS):
        self.domain = domain
        self.min_cost = [float(c) for c in min_cost]
        self.pdb_states = check_pdb_states(pdb_states)
        self.n_orders = check_scp_orders(n_orders)
        self._goals: dict[tuple[Condition, ...], Any] = {}

    def orders(self, want: Sequence[Condition]) -> tuple[tuple[tuple[int, ...], ...], ...]:
        return scp_orders(self.domain, want, self.pdb_states, self.min_cost, self.n_orders)

    def tables(self, want: Sequence[Condition]) -> list[list[tuple[list[int], list[int], list[int], list[int], Any,
                                                                   Any]]]:
        """Per order, per pattern: (facts, their minimum, their maximum, strides, distances, saturated costs)."""
        key = tuple(want)
        got = self._goals.get(key)
        if got is None:
            if len(self._goals) >= 256:
                self._goals.clear()
            domain = self.domain
            orders = self.orders(want)
            check_table_bytes(domain, [[p for order in orders for p in order]], "a goal")
            parts = partition(domain, orders, self.min_cost, want)
            got = self._goals[key] = [
                [(list(p), [domain.facts[f].min for f in p], [domain.facts[f].max for f in p], strides(domain, p),
                  d, sat) for p, (d, sat) in zip(order, part, strict=True)]
                for order, part in zip(orders, parts, strict=True)
            ]
        return got

    def factor(self, costs: Sequence[float], enabled: Sequence[bool]) -> float:
        return agent_factor(self.min_cost, costs, enabled)

    def value(self, want: Sequence[Condition], state: Sequence[int], factor: float) -> float:
        """``factor * max over orders of sum_p d_p[state]`` (0 where that max is 0, inf where any d_p is inf); a
        pattern whose fact holds a value outside its range (not a valid state) counts 0."""
        top = 0.0
        for order in self.tables(want):
            total = 0.0
            for facts, lo, hi, stride, d, _sat in order:
                idx = abstract_index(state, facts, lo, hi, stride)
                if idx >= 0:
                    x = float(d[idx])
                    if math.isinf(x):
                        return math.inf
                    total += x
            top = max(top, total)
        if top == 0.0:
            return 0.0
        return top * factor


def candidate_tables(domain: Domain, goals: Sequence[Any], min_cost: np.ndarray, pdb_states: int,
                     n_orders: int = DEFAULT_SCP_ORDERS) -> Any:
    """Every goal's `candidates`, each pattern an order of its own at the full least costs, flattened
    (`goap.planners.pdb.PatternTables`): what the Warp planner ranks the orders from."""
    pdb_states = check_pdb_states(pdb_states)
    n_orders = check_scp_orders(n_orders)
    per_goal = [candidates(domain, g.want, pdb_states, n_orders) for g in goals]
    check_table_bytes(domain, per_goal, "the goal table")
    return flatten_patterns(domain, goals, [tuple((p,) for p in patterns) for patterns in per_goal], min_cost)


def device_orders(host: Any, dist: np.ndarray, sat: np.ndarray, n_orders: int
                  ) -> list[tuple[tuple[tuple[int, ...], ...], ...]]:
    """Per goal of `candidate_tables` ``host``, its orders (`rank_orders`) from the device's distances ``dist``
    and saturated costs per action row ``sat`` (`goap.planners.warp_astar.build_tables`)."""
    out = []
    for g, patterns in enumerate(host.patterns):
        full = []
        for k in range(int(host.goal_start[g]), int(host.goal_start[g + 1])):
            rows = np.arange(host.act_start[k], host.act_start[k + 1])
            keep = sat[rows] > 0.0
            order = np.argsort(host.act_action[rows][keep], kind="stable")
            acts = host.act_action[rows][keep][order].astype(np.int64)
            full.append((dist[host.dist_start[k]:host.dist_start[k + 1]], acts, sat[rows][keep][order]))
        out.append(rank_orders(patterns, full, n_orders))
    return out


def partition_tables(domain: Domain, goals: Sequence[Any], min_cost: np.ndarray, pdb_states: int,
                     n_orders: int = DEFAULT_SCP_ORDERS, orders: Sequence[Any] | None = None) -> Any:
    """Every goal's orders (``orders``, per goal; default: `scp_orders`, by numpy), flattened
    (`goap.planners.pdb.PatternTables`; the distances and saturated costs are computed on the device)."""
    pdb_states = check_pdb_states(pdb_states)
    n_orders = check_scp_orders(n_orders)
    if orders is None:
        orders = [scp_orders(domain, g.want, pdb_states, min_cost, n_orders) for g in goals]
    check_table_bytes(domain, [[p for order in o for p in order] for o in orders], "the goal table")
    return flatten_patterns(domain, goals, orders, min_cost)

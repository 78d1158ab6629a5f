"""The reference planner: forward A* in plain Python over value tuples, written to be obviously correct.

It is the oracle every fast planner is tested against, so it works on the domain's own semantics
(`Domain.is_applicable`, `Domain.apply`, `Condition.holds`, `achieves`), not on the bit encoding.

The search, which the Warp planner follows step for step:

* Heuristics (admissible; the h_max family also consistent), over *conditions*: the goal's conditions and every
  action's preconditions, each ``fact op value``. An action b *achieves* a condition when its effect on that fact
  can make it true (`goap.domain.achieves`). This is a relaxation: a condition true at some step was true at the
  start or was made true by one of its achievers (ints included: ``+=`` achieves ``n >= k`` whatever n is). Let
  U be the goal conditions false in s; h(s) = 0 when U is empty, otherwise the larger of
  - ``hmax``: full h_max. h(c) = 0 for a condition true in s, else the least fixpoint of
    h(c) = min over enabled achievers b of cost(b) + max over b's preconditions p of h(p); the goal term is
    max over j in U of min over enabled achievers b of j of cost(b) + max_p h(p). Computed by a generalized
    Dijkstra (conditions popped in order of their final value; an action fires when its last precondition is
    popped and relaxes what it achieves with cost(b) + that precondition's value), over the goal's backward cone.
  - ``lmcut``: LM-cut (Helmert & Domshlak 2009, as Fast Downward's ``lmcut``) over the same relaxation, with the goal's
    conditions as nodes (one node with an equal action precondition), an artificial goal action needing the conditions
    in U, and an always-true precondition for actions without one. Per state, with remaining costs rc = the agent's
    costs: repeat { h_max with rc; stop when h_max(goal) is 0 (inf: dead end); each reached action's *pcf* is its
    precondition of largest h_max, ties to the highest condition id (with ``lmcut_ties="stable"``: the last round's pcf
    while it is still a maximum, else the first maximum in the action's precondition order; the goal action's: the
    condition of U of largest value, ties to the highest id, a goal-only condition counting as id C + its place in the
    goal); the goal zone is the goal's pcf and, backwards, the pcf of every reached zero-rc achiever of a zone
    condition; from the conditions true in s (and the always-true one), follow reached actions from their pcf to what
    they achieve, stopping at actions that achieve a zone condition: those are the cut; h += m = min rc over the cut;
    rc -= m on the cut }. At most (cone actions + 1) rounds. At least h_max, usually far above it on deep tasks; not
    consistent in general. The tie rule matters on unit-cost tasks: ties to the highest id (the precondition h_max's
    queue, ordered by value then id, reaches last when costs are positive, as Fast Downward's h_max supporter) give the
    initial values of Fast Downward's lmcut on the IPC tasks measured (depot/task03: 17; the lowest id gives 14); the
    stable rule gives higher values on costed tasks (parcprinter, barman) and lower ones on some unit-cost tasks
    (docs/measured.md); ``lmcut_ties="max"`` computes both and takes the larger, ``"auto"`` both on the search's
    first stored states, then the rule that gave the larger values more often (`goap.planners.base.LMCUT_TIES_AUTO`).
    With ``lmcut_zone_ties`` (the
    default), as the zone is marked a zero-cost achiever's pcf becomes the first of its maximal preconditions that is
    in the zone or has no zero-rc achiever, and the goal's pcf the first condition of U at the max without one,
    zone conditions taken first in, first out (`goap.planners.base.DEFAULT_LMCUT_ZONE_TIES`);
    ``lmcut_zone_ties="max"`` takes the larger value with and without the rule; ``"auto"`` both on the search's
    first stored states, then the rule that gave the larger values more often (`goap.planners.base.LMCUT_ZONE_AUTO`).
  - ``hmax_depth2`` (default): h_max truncated after two regression levels: a precondition p
    of an achiever, false in s, counts as the cheapest enabled achiever of p (instead of h(p)). Cheaper per node,
    weaker.
  - ``hmax_depth1``: h_max truncated after one level: the cheapest enabled achiever of each condition in U only.
  - ``pdb``: pattern databases (`goap.planners.pdb`): the max over the goal's patterns of the exact abstract goal
    distance of the state's projection, at the domain's least costs, times the agent's factor (min over actions
    of positive least domain cost of the agent's least cost over it); inf at an abstract dead end.
  - ``scp``: saturated cost partitioning over projections of one and two facts (`goap.planners.scp`): the max
    over orders of the sum of the patterns' distances under costs saturated along the order, times the same
    factor; inf at an abstract dead end.
  - ``max_lmcut_pdb`` / ``max_lmcut_scp``: the larger of LM-cut and the tables' value (the tables first; LM-cut
    only where they leave the state open).
  (``hmax2`` / ``hmax1``, their names before, are deprecated aliases: `goap.planners.base.RENAMED_HEURISTICS`.)
  and ceil(|U| / e) * c_min, where e is the most conditions of this goal a single action can make true and
  c_min the cheapest enabled action (each step fixes at most e conditions and costs at least c_min; c_min may
  be 0). A goal condition with no usable achiever gives h = inf: the state is a dead end and is not stored.
* Costs, g, h and f are float64: the reported cost of a plan is its true cost (see `goap.planners.base`).
* Agent types and cost terms: an agent's usable actions are those its enabled row and its type both allow; the
  heuristics above charge each action its least cost over every state, ``scale * max(0, base + sum_k min(per_k *
  lo_k, per_k * hi_k))`` (`goap.domain.Domain.action_min_cost`), which no state undercuts, so they stay
  admissible, and consistent where they were; an expansion charges the exact cost in the state it expands
  (`goap.domain.Domain.action_cost`), never below that.
* Open list ordered by (f, h, node id); ties therefore go to the deeper node, then to the older one.
  f = g + h for A*; g + w * h for weighted A* (``weight``, plans within w x optimal); h for greedy.
* A state's g may improve while it is open: its open entry moves up (here: pushed again, the stale entry is
  skipped when popped). A* (weight 1, not greedy) also reopens a closed state reached again more cheaply: only
  an inconsistent heuristic does that (LM-cut is admissible but not consistent; the h_max family is
  consistent and never reopens), and with reopening the first goal popped is optimal for any admissible
  heuristic. The goal test happens when a node is popped, and for A* also when a successor is stored or
  improved: a goal reached at g <= f of the node being expanded is optimal (that node had the least f open, and
  the least f open bounds the optimal cost from below), so the search ends there without popping it (about a
  fifth of a soldier query's work: the rest of the last expansion and its pop). Weighted A* and greedy search
  never reopen.
* A delete-relaxed reachability check (`relaxed_reachable`) proves many unreachable goals unreachable at once,
  instead of exhausting the space. It runs only where it can save work: when a level-0 search fills its pool
  (NO_PLAN, with the expansions made so far, instead of escalating), and before every escalated search (NO_PLAN
  with no expansions). Searches that end within the first pool never pay for it.
* Budget: a pool of at most ``pool`` stored states (the open list never holds more than the pool); storing
  one more gives BUDGET, and so does a pop past ``pop_limit(pool)`` (`goap.planners.base.POP_FACTOR`; only
  reopening can get there). Pools escalate by level (`goap.planners.base`): the search at level l has pool
  ``pools[l]``. A plan with more than ``max_plan_length`` steps gives TOO_LONG with its cost, length and first
  ``max_plan_length`` steps.
"""

from __future__ import annotations

import heapq
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from goap.domain import Condition, Domain, Goal, State, achieves
from goap.encoding import RELAXED_MAX_VALUES, DomainTables, GoalTables, encode
from goap.planners.base import (
    DEFAULT_GROWTH,
    DEFAULT_HEURISTIC,
    DEFAULT_LMCUT_TIES,
    DEFAULT_LMCUT_ZONE_TIES,
    DEFAULT_MAX_NODES,
    DEFAULT_MAX_PLAN_LENGTH,
    DEFAULT_NODE_CEILING,
    LMCUT_PROBE,
    LMCUT_TIES_AUTO,
    LMCUT_ZONE_AUTO,
    LMCUT_ZONE_MAX,
    PDB_HEURISTICS,
    RELAXED_CHECK_AFTER,
    RELAXED_CHECK_HEURISTICS,
    SCP_HEURISTICS,
    PlanBatch,
    Status,
    check_inputs,
    check_lmcut_ties_heuristic,
    check_lmcut_zone_heuristic,
    check_options,
    check_types,
    heuristic_name,
    host_view,
    pool_levels,
    pop_limit,
)
from goap.planners.pdb import DEFAULT_PDB_STATES, ReferencePatterns, check_pdb_states
from goap.planners.scp import DEFAULT_SCP_ORDERS, ReferencePartitions, check_scp_orders
from goap.planners.stubborn import (
    DEFAULT_MIN_PRUNING_RATIO,
    DEFAULT_PRUNING,
    DEFAULT_PRUNING_CHECK_AFTER,
    check_pruning,
    interferes,
    pruning_off,
    stubborn_tables,
)


class ReferencePlanner:
    """Plain-Python A*, one agent at a time; the oracle of the fast planners (same options, same results).

    Args:
        domain: the domain (or its tables).
        max_nodes: the first node pool (level 0).
        max_plan_length: the longest plan returned whole; longer optimal plans give TOO_LONG and a segment.
        weight: order the open list by g + weight * h (plans cost at most weight x optimal).
        greedy: order it by h alone.
        heuristic: "hmax_depth2" (default), "pdb", "scp", "lmcut", "hmax", "hmax_depth1", "max_lmcut_pdb" or
            "max_lmcut_scp" (see the module docstring).
        growth: pool growth per escalation level (1: no escalation).
        node_ceiling: the largest pool (default ``DEFAULT_NODE_CEILING``, at least ``max_nodes``).
        device: accepted for a common signature: this planner runs on the host.
        pdb_states: with ``heuristic="pdb"`` or ``"scp"`` (and their max with LM-cut), the abstract states per
            goal, all its patterns together (see `goap.planners.pdb`); each goal's tables are built on first use.
        scp_orders: with ``heuristic="scp"`` / ``"max_lmcut_scp"``, the orders of the saturated cost partitioning
            per goal, h the max over them (1..4, `goap.planners.scp`).
        lmcut_ties: LM-cut's pcf among equal maxima (with the heuristics that run LM-cut): "highest" (default),
            "stable", "max" of the two values, or (with ``heuristic="lmcut"``) "auto": both on a search's first
            states, then the one that won there (`goap.planners.base.LMCUT_TIES`, `LMCUT_TIES_AUTO`).
        lmcut_zone_ties: LM-cut's goal-zone tie rule for zero-cost actions' pcfs, on by default
            (`goap.planners.base.DEFAULT_LMCUT_ZONE_TIES`); ``"max"``: the larger of LM-cut with and without it;
            ``"auto"``: both on the search's first states, then the one that won there (`LMCUT_ZONE_AUTO`).
        pruning: "none" (default) or "stubborn": expand only the applicable actions of each state's strong
            stubborn set (`goap.planners.stubborn`; optimal costs kept).
        pruning_min_ratio / pruning_check_after: a search switches pruning off when, after that many expansions,
            it pruned less than that share of the applicable actions (Fast Downward's ``limited_pruning``).
    """

    name = "reference"

    def __init__(
        self,
        domain: Domain | DomainTables,
        max_nodes: int = DEFAULT_MAX_NODES,
        max_plan_length: int = DEFAULT_MAX_PLAN_LENGTH,
        weight: float = 1.0,
        greedy: bool = False,
        heuristic: str = DEFAULT_HEURISTIC,
        growth: int = DEFAULT_GROWTH,
        node_ceiling: int | None = None,
        device: str | None = None,
        pdb_states: int = DEFAULT_PDB_STATES,
        scp_orders: int = DEFAULT_SCP_ORDERS,
        lmcut_ties: str = DEFAULT_LMCUT_TIES,
        lmcut_zone_ties: bool | str = DEFAULT_LMCUT_ZONE_TIES,
        pruning: str = DEFAULT_PRUNING,
        pruning_min_ratio: float = DEFAULT_MIN_PRUNING_RATIO,
        pruning_check_after: int = DEFAULT_PRUNING_CHECK_AFTER,
    ):
        heuristic = heuristic_name(heuristic)
        check_options(max_nodes, max_plan_length, weight, heuristic, growth, node_ceiling)
        self.pruning = check_pruning(pruning, pruning_min_ratio, pruning_check_after)
        self.pruning_min_ratio = float(pruning_min_ratio)
        self.pruning_check_after = int(pruning_check_after)
        self.heuristic = heuristic
        self.tables = domain if isinstance(domain, DomainTables) else encode(domain)
        self.domain = self.tables.domain
        self.pdb_states = check_pdb_states(pdb_states)
        self.scp_orders = check_scp_orders(scp_orders)
        self.lmcut_ties = check_lmcut_ties_heuristic(lmcut_ties, heuristic)
        self.lmcut_zone_ties = check_lmcut_zone_heuristic(lmcut_zone_ties, heuristic)
        if heuristic in SCP_HEURISTICS:  # the same interface (factor, value), the tables summed along orders
            self.patterns: Any = ReferencePartitions(self.domain, self.tables.min_cost, self.pdb_states,
                                                     self.scp_orders)
        else:
            self.patterns = ReferencePatterns(self.domain, self.tables.min_cost, self.pdb_states)
        self.max_nodes = int(max_nodes)
        self.max_plan_length = int(max_plan_length)
        self.weight = float(weight)
        self.greedy = bool(greedy)
        self.reopened = 0  # closed states reopened by this planner's searches so far (LM-cut only: see above)
        ceiling = max(self.max_nodes, DEFAULT_NODE_CEILING) if node_ceiling is None else int(node_ceiling)
        self.pools = pool_levels(self.max_nodes, int(growth), ceiling)
        # Conditions for h_max: every distinct action precondition, and for each action its precondition ids.
        self._conditions: list[Condition] = []
        ids: dict[Condition, int] = {}
        self._pre_ids: list[list[int]] = []
        for action in self.domain.actions:
            row = []
            for c in action.pre:
                if c not in ids:
                    ids[c] = len(self._conditions)
                    self._conditions.append(c)
                row.append(ids[c])
            self._pre_ids.append(row)
        self._cond_achievers = [
            [b for b, action in enumerate(self.domain.actions) if achieves(action, c)] for c in self._conditions
        ]
        # The same graph read the other way: per condition the actions needing it, per action what it achieves.
        self._pre_of: list[list[int]] = [[] for _ in self._conditions]
        for a, row in enumerate(self._pre_ids):
            for c in row:
                self._pre_of[c].append(a)
        self._effects: list[list[int]] = [[] for _ in self.domain.actions]
        for c, row in enumerate(self._cond_achievers):
            for b in row:
                self._effects[b].append(c)
        self._cond_id = ids
        self._interferers: dict[int, list[int]] = {}
        if self.pruning == "stubborn":
            refused = stubborn_tables(self.domain, self._conditions).refused  # the Warp planner's cap, the same way
            if refused:
                warnings.warn(refused, stacklevel=2)
                self.pruning = "none"

    @property
    def n_levels(self) -> int:
        return len(self.pools)

    def order(self, g: float, h: float) -> float:
        """The open-list key of a node: f = g + weight * h, or h alone when greedy."""
        return h if self.greedy else g + self.weight * h

    def plan(
        self,
        states: Any,
        goals: Any,
        costs: Any = None,
        enabled: Any = None,
        *,
        types: Any = None,
        goal_table: GoalTables | None = None,
        agents: Any = None,
        count: Any = None,
        out: PlanBatch | None = None,
        max_escalated_nodes: int | None = None,
    ) -> PlanBatch:
        """Plan agent by agent; escalation and deferral follow `goap.planners.base` exactly."""
        goal_table = goal_table or self.tables.goals
        types = host_view(types)
        states, goals, costs, enabled, agents = check_inputs(
            self.tables, goal_table, host_view(states), host_view(goals), host_view(costs), host_view(enabled),
            host_view(agents), types,
        )
        types = check_types(self.tables, types, states.shape[0], agents)
        n = states.shape[0]
        batch = out if out is not None else PlanBatch.empty(n, self.max_plan_length)
        host = batch.numpy()
        rows = list(range(n)) if agents is None else [int(a) for a in agents]
        if count is not None:
            rows = rows[: int(host_view(count)[0])]
        values = self.tables.unpack_states(states)
        default_costs = [float(c) for c in self.tables.cost]
        results: dict[int, tuple] = {}
        level = {i: min(max(int(host.level[i]), 0), self.n_levels) for i in rows}
        for i in rows:
            base = default_costs if costs is None else [float(c) for c in costs[i]]
            agent_type = self.domain.types[0 if types is None else int(types[i])]
            agent_enabled = [
                bool(agent_type.actions[a]) and (enabled is None or bool(enabled[i, a])) for a in range(len(base))
            ]
            least, step_cost = self.agent_costs(base, agent_type.cost_scale)
            start = tuple(int(v) for v in values[i])
            results[i] = self.search(start, goal_table.goals[goals[i]], least, agent_enabled, self.pools, step_cost)

        # Replay the waves: level by level, agents in order, escalated searches within the call's budget.
        budget = math.inf if max_escalated_nodes is None else int(max_escalated_nodes)
        escalated = 0
        last_expanded: dict[int, int] = {}
        final: dict[int, tuple] = {}
        for lv in range(self.n_levels):
            for i in rows:
                if i in final or level[i] != lv:
                    continue
                if lv > 0:
                    if escalated > 0 and budget < self.pools[lv]:
                        final[i] = (Status.BUDGET, math.nan, [], last_expanded.get(i, 0), 0, 0)  # deferred
                        continue
                    budget -= self.pools[lv]
                    escalated += 1
                status, cost, plan, expanded, length, fits, overflow, jump = results[i]
                if math.isinf(fits):  # relaxed-unreachable, found when the first pool filled up
                    final[i] = (Status.NO_PLAN, math.nan, [], overflow[0] if lv == 0 else 0, 0, 0)
                elif lv >= fits:
                    final[i] = (status, cost, plan, expanded, length, jump)
                else:
                    level[i] = lv + 1  # the next pool; past the last one: every pool was tried
                    last_expanded[i] = overflow[lv]
                    if lv == self.n_levels - 1:
                        final[i] = (Status.BUDGET, math.nan, [], overflow[lv], 0, 0)
        for i in rows:
            status, cost, plan, expanded, length, jump = final.get(i, (Status.BUDGET, math.nan, [], 0, 0, 0))
            host.status[i] = status
            host.cost[i] = cost
            host.length[i] = length
            host.expanded[i] = expanded
            if host.expanded_before_last_f is not None:
                host.expanded_before_last_f[i] = jump
            host.level[i] = level[i]
            host.actions[i, :] = -1
            host.actions[i, : len(plan)] = plan
        _write_back(batch, host)
        return batch

    def agent_costs(self, base: list[float], scale: tuple[float, ...] | None = None) -> tuple[list[float], Any]:
        """An agent's per-action least costs (what the heuristics charge, `Domain.action_min_cost`) and the exact
        cost of an action in a state (`Domain.action_cost`; None when no action has cost terms: then the least
        cost is the cost), from its base costs and its type's multipliers."""
        domain = self.domain
        scale = scale if scale is not None else (1.0,) * len(base)
        least = [domain.action_min_cost(a, base[a], scale[a]) for a in range(len(base))]
        if not domain.has_cost_terms:
            return least, None
        termed = [bool(action.cost_terms) for action in domain.actions]

        def step_cost(a: int, state: State) -> float:
            return domain.action_cost(a, state, base[a], scale[a]) if termed[a] else least[a]

        return least, step_cost

    def search(
        self, start: State, goal: Goal, costs: list[float], enabled: list[bool], pools: list[int] | None = None,
        step_cost: Any = None,
    ) -> tuple[Status, float, list[int], int, int, int, list[int], int]:
        """One A* search with the largest pool of ``pools``.

        ``costs`` are the actions' least costs (the heuristics'), ``step_cost(a, state)`` the exact cost of a in
        the state it is applied to (None: ``costs[a]``; see `agent_costs`).

        Returns (status, cost, plan, expanded, length, fits, overflow, jump): ``fits`` is the first pool level whose
        search ends as this one did (``len(pools)``: none; inf: the goal is relaxed-unreachable, found when the
        first pool overflowed), ``overflow[k]`` the expansions made when the search first needed more than
        ``pools[k]`` states or more than ``pop_limit(pools[k])`` pops (a search with that pool ends there with
        BUDGET; the search is deterministic, so a larger pool replays the smaller one's search up to that
        point), ``jump`` the expansions made before the first pop of a node at the largest f = g + h popped
        (Fast Downward's "expanded until last jump"; 0 unless a goal was popped).
        """
        pools = pools or self.pools
        domain = self.domain
        overflow = [0] * len(pools)
        if domain.satisfies(start, goal.want):
            return Status.SATISFIED, 0.0, [], 0, 0, 0, overflow, 0

        usable = [a for a in range(len(domain.actions)) if enabled[a]]
        heuristic = self.heuristic_function(goal, costs, enabled)

        h0 = heuristic(start)
        if math.isinf(h0):
            return Status.NO_PLAN, math.nan, [], 0, 0, 0, overflow, 0

        # Node arrays, indexed by node id (the order states were first stored).
        state_of: list[State] = [start]
        g_of: list[float] = [0.0]
        h_of: list[float] = [h0]
        parent: list[int] = [-1]
        via: list[int] = [-1]
        closed: list[bool] = [False]
        index: dict[State, int] = {start: 0}
        open_list: list[tuple[float, float, int]] = [(self.order(0.0, h0), h0, 0)]
        expanded = 0
        f_top, jump = -math.inf, 0  # the largest f popped so far, and the expansions made before it was first popped
        pool = pools[-1]
        next_pool = 0  # the smallest pool not yet overflowed

        reopen = self.weight == 1.0 and not self.greedy  # A*: a closed state reached more cheaply is reopened
        pops = 0
        prune = self.pruning == "stubborn"
        usable_set = set(usable)
        before = after = 0  # applicable actions and those kept, over the first pruning_check_after expansions
        while open_list:
            _, _, node = heapq.heappop(open_list)
            if closed[node]:
                continue  # a stale entry: the node was reached again more cheaply and already expanded
            while next_pool < len(pools) and pops >= pop_limit(pools[next_pool]):
                overflow[next_pool] = expanded  # that pool's search ends here (its pop limit)
                next_pool += 1
                if next_pool == 1 and not self.relaxed_reachable(start, goal, usable):
                    return Status.NO_PLAN, math.nan, [], expanded, 0, math.inf, overflow, 0
            if pops >= pop_limit(pool):
                return Status.BUDGET, math.nan, [], expanded, 0, len(pools), overflow, 0
            pops += 1
            if g_of[node] + h_of[node] > f_top:
                f_top, jump = g_of[node] + h_of[node], expanded
            state = state_of[node]
            if domain.satisfies(state, goal.want):
                return (*self._finish(node, g_of, parent, via, expanded), next_pool, overflow, jump)
            f_node = g_of[node] + h_of[node]
            closed[node] = True
            expanded += 1
            if expanded == RELAXED_CHECK_AFTER and next_pool == 0 and self.heuristic in RELAXED_CHECK_HEURISTICS:
                if not self.relaxed_reachable(start, goal, usable):  # proved now, in every pool (as an overflow's)
                    overflow[0] = expanded
                    return Status.NO_PLAN, math.nan, [], expanded, 0, math.inf, overflow, 0
            kept = None
            if prune and not pruning_off(before, after, expanded, self.pruning_min_ratio, self.pruning_check_after):
                kept = self.stubborn_set(state, goal, usable_set)
                if expanded <= self.pruning_check_after:
                    before += sum(1 for a in usable if domain.is_applicable(state, domain.actions[a]))
                    after += len(kept)
            for a in usable:
                action = domain.actions[a]
                if kept is not None and a not in kept:
                    continue
                if not domain.is_applicable(state, action):
                    continue
                child = domain.apply(state, action)
                g = g_of[node] + (costs[a] if step_cost is None else step_cost(a, state))
                known = index.get(child)
                if known is None:
                    h = heuristic(child)
                    if math.isinf(h):
                        continue
                    while next_pool < len(pools) and len(state_of) >= pools[next_pool]:
                        overflow[next_pool] = expanded
                        next_pool += 1
                        if next_pool == 1 and not self.relaxed_reachable(start, goal, usable):
                            # Every larger pool would search in vain: NO_PLAN from the first pool on.
                            return Status.NO_PLAN, math.nan, [], expanded, 0, math.inf, overflow, 0
                    if len(state_of) >= pool:
                        return Status.BUDGET, math.nan, [], expanded, 0, len(pools), overflow, 0
                    known = len(state_of)
                    index[child] = known
                    state_of.append(child)
                    g_of.append(g)
                    h_of.append(h)
                    parent.append(node)
                    via.append(a)
                    closed.append(False)
                elif g >= g_of[known] or (closed[known] and not reopen):
                    continue
                else:
                    g_of[known], parent[known], via[known] = g, node, a
                    if closed[known]:
                        closed[known] = False
                        self.reopened += 1
                if reopen and g <= f_node and domain.satisfies(child, goal.want):
                    # A goal reached at the f of the node expanded is optimal (every open node has f >= it, and f
                    # bounds the optimal cost from below): the search ends here, without popping it.
                    return (*self._finish(known, g_of, parent, via, expanded), next_pool, overflow, jump)
                heapq.heappush(open_list, (self.order(g, h_of[known]), h_of[known], known))
        return Status.NO_PLAN, math.nan, [], expanded, 0, next_pool, overflow, 0

    def stubborn_set(self, state: State, goal: Goal, usable: set[int]) -> set[int]:
        """The applicable actions of the strong stubborn set of ``state`` (not a goal) over the ``usable`` actions:
        the least set holding the achievers of the goal's first false condition, every action interfering with an
        applicable member (`goap.planners.stubborn.interferes`) and the achievers of an inapplicable member's
        first false precondition (see `goap.planners.stubborn`)."""
        domain = self.domain

        def holds(c: Condition) -> bool:
            return c.holds(state[domain.fact_index(c.fact)])

        members: set[int] = set()
        queue: list[int] = []

        def add(actions: Any) -> None:
            for b in actions:
                if b in usable and b not in members:
                    members.add(b)
                    queue.append(b)

        for c in goal.want:
            if not holds(c):
                add(b for b, action in enumerate(domain.actions) if achieves(action, c))
                break
        kept: set[int] = set()
        while queue:
            a = queue.pop()
            unmet = next((c for c in domain.actions[a].pre if not holds(c)), None)
            if unmet is not None:
                add(self._cond_achievers[self._cond_id[unmet]])
                continue
            kept.add(a)
            if a not in self._interferers:
                self._interferers[a] = [b for b in range(len(domain.actions)) if interferes(domain, a, b)]
            add(self._interferers[a])
        return kept

    def heuristic_function(
        self, goal: Goal, costs: list[float] | None = None, enabled: list[bool] | None = None
    ) -> Any:
        """h(state) of this planner's heuristic for one goal, action costs and enabled actions (default: the
        domain's costs, all enabled): the function a search calls on every new state (`State` -> float)."""
        domain = self.domain
        costs = [float(c) for c in self.tables.cost] if costs is None else [float(c) for c in costs]
        enabled = [True] * len(costs) if enabled is None else [bool(e) for e in enabled]
        usable = [a for a in range(len(domain.actions)) if enabled[a]]
        c_min = min((costs[a] for a in usable), default=math.inf)
        achievers = [[a for a in usable if achieves(domain.actions[a], c)] for c in goal.want]
        per_action = [sum(achieves(act, c) for c in goal.want) for act in domain.actions]
        most_fixed = max(per_action, default=0)
        return self._heuristic(goal, costs, enabled, achievers, usable, c_min, most_fixed)

    def _heuristic(self, goal, costs, enabled, achievers, usable, c_min, most_fixed):
        """h(state) for one search: the chosen heuristic's goal term, maxed with the step-count bound."""
        domain = self.domain
        conditions, pre_ids = self._conditions, self._pre_ids
        fact_of = [domain.fact_index(c.fact) for c in conditions]
        goal_facts = [domain.fact_index(c.fact) for c in goal.want]

        def cheapest(c: Condition) -> float:
            return min((costs[b] for b in usable if achieves(domain.actions[b], c)), default=math.inf)

        pre_cost = {a: [cheapest(p) for p in domain.actions[a].pre] for row in achievers for a in row}

        # The goal's backward cone: its achievers, their preconditions, those conditions' achievers, and so on.
        # h_max inside the cone does not depend on anything outside it (the kernel restricts itself the same way).
        cone_actions = {a for j, c in enumerate(goal.want) for a in range(len(domain.actions))
                        if achieves(domain.actions[a], c)}
        frontier, cone = list(cone_actions), set()
        while frontier:
            for c in pre_ids[frontier.pop()]:
                if c not in cone:
                    cone.add(c)
                    for b in self._cond_achievers[c]:
                        if b not in cone_actions:
                            cone_actions.add(b)
                            frontier.append(b)
        cone_list = sorted(cone)
        cost_of = {a: costs[a] if enabled[a] else math.inf for a in cone_actions}
        cone_acts = sorted(cone_actions)
        pre_of, effects = self._pre_of, self._effects

        def hmax_values(state: State, cost: dict[int, float]) -> tuple[dict[int, float], dict[int, float]]:
            """h_max of the cone's conditions and, per cone action, the max over its preconditions (inf while
            one is unreachable), with action costs ``cost`` (inf: disabled), by a generalized Dijkstra: the
            conditions in order of their final value; an action fires when its last precondition is popped."""
            hc = {c: 0.0 if conditions[c].holds(state[fact_of[c]]) else math.inf for c in cone_list}
            hp = {a: math.inf for a in cone_acts}
            left = {a: len(pre_ids[a]) for a in cone_acts if not math.isinf(cost[a])}
            heap = [(0.0, c) for c in cone_list if hc[c] == 0.0]

            def fire(a: int) -> None:
                hp[a] = max((hc[p] for p in pre_ids[a]), default=0.0)
                for e in effects[a]:
                    if e in hc and cost[a] + hp[a] < hc[e]:
                        hc[e] = cost[a] + hp[a]
                        heapq.heappush(heap, (hc[e], e))

            for a in cone_acts:
                if left.get(a) == 0:
                    fire(a)
            done: set[int] = set()
            while heap:
                v, c = heapq.heappop(heap)
                if c in done or v > hc[c]:
                    continue
                done.add(c)
                for a in pre_of[c]:
                    if left.get(a, 0) > 0:
                        left[a] -= 1
                        if left[a] == 0:
                            fire(a)
            return hc, hp

        pdb: Callable[[State], float] | None = None
        if self.heuristic in PDB_HEURISTICS or self.heuristic in SCP_HEURISTICS:
            patterns = self.patterns
            factor = patterns.factor(costs, enabled)
            want = goal.want

            def pdb(state: State) -> float:
                unsat = sum(1 for j, c in enumerate(want) if not c.holds(state[goal_facts[j]]))
                if not unsat:
                    return 0.0
                term = patterns.value(want, state, factor)
                if math.isinf(term):
                    return math.inf
                return max(term, -(-unsat // most_fixed) * c_min)

            if self.heuristic in ("pdb", "scp"):
                return pdb

        n_cond = len(conditions)
        atom_key = [self._cond_id.get(c, n_cond + j) for j, c in enumerate(goal.want)]
        ties = self.lmcut_ties
        zone_ties = self.lmcut_zone_ties
        atom_cond = [self._cond_id.get(c) for c in goal.want]
        # Every achiever of each goal condition (disabled ones too: the zone rule asks for zero remaining costs).
        atom_achievers = [self._cond_achievers[k] if k is not None else
                          [b for b, action in enumerate(domain.actions) if achieves(action, c)]
                          for k, c in zip(atom_cond, goal.want, strict=True)]

        rules = (True, False) if ties == "max" else (ties == "stable",)
        zones = (True, False) if zone_ties == LMCUT_ZONE_MAX else (zone_ties,)
        zone_auto, ties_auto = zone_ties == LMCUT_ZONE_AUTO, ties == LMCUT_TIES_AUTO
        # "auto": the states stored while probing (this search's), the zone rule's wins less its losses, and
        # "highest"'s wins less its losses against "stable"
        probe = [0, 0, 0]

        def lmcut(state: State, unsat: list[int], zones: tuple = zones, rules: tuple = rules) -> float:
            """LM-cut with the planner's tie rules; "max" (of either): the largest value over the rules (a dead
            end for one is a dead end for all)."""
            best = 0.0
            for zone in zones:
                for stable in rules:
                    value = lmcut_rule(state, unsat, stable, zone)
                    if math.isinf(value):
                        return value
                    best = max(best, value)
            return best

        def lmcut_rule(state: State, unsat: list[int], stable: bool, zone_ties: bool) -> float:
            """LM-cut (Helmert & Domshlak 2009) over the condition relaxation; see the module docstring."""
            rc = {a: costs[a] if enabled[a] else math.inf for a in cone_acts}
            true = [c for c in cone_list if conditions[c].holds(state[fact_of[c]])]
            total = 0.0
            prev: dict[int, int | None] = {}
            chosen: dict[int, tuple[int, float]] = {}  # "highest": pcfs the zone rule chose, with their values
            for _round in range(len(cone_acts) + 2):
                hc, hp = hmax_values(state, rc)
                top, goal_pcf, goal_border = -1.0, -1, False
                for j in unsat:
                    hj = min((rc[a] + hp[a] for a in achievers[j]), default=math.inf)
                    if goal_pcf >= 0 and hj < top:
                        continue
                    # The zone rule: the first at the max that no zero-cost action achieves, else the highest id.
                    border = zone_ties and all(rc.get(b, math.inf) != 0.0 for b in atom_achievers[j])
                    if (goal_pcf < 0 or hj > top or (not goal_border and border)
                            or (not goal_border and atom_key[j] > atom_key[goal_pcf])):
                        top, goal_pcf, goal_border = hj, j, border
                if math.isinf(top):
                    return math.inf
                if top == 0.0:
                    break
                reached = [a for a in cone_acts if not math.isinf(hp[a])]
                # pcf: a precondition of largest h_max (None: no precondition); "highest": ties to the highest
                # condition id; "stable": the last round's while it still is one, else the first in the action's
                # precondition order.
                if stable:
                    pcf = {a: prev[a] if a in prev and prev[a] is not None and hc[prev[a]] == hp[a]
                           else next((p for p in pre_ids[a] if hc[p] == hp[a]), None) for a in reached}
                    prev = pcf
                else:  # (a pcf the zone rule chose is kept while its value stands, as the kernel keeps it)
                    pcf = {a: chosen[a][0] if a in chosen and hc[chosen[a][0]] == chosen[a][1]
                           else max((p for p in pre_ids[a] if hc[p] == hp[a]), default=None) for a in reached}
                    chosen = {a: v for a, v in chosen.items() if pcf[a] == v[0]}
                # The goal zone: the goal's pcf and, backwards through reached zero-cost achievers, their pcfs, in
                # the kernel's order (zone conditions first in, first out; each one's achievers by id).
                zone: set[int] = set()
                zone_list: list[int] = []
                zone_achievers: set[int] = set()
                gc = atom_cond[goal_pcf]
                if gc is not None:
                    zone.add(gc)
                    zone_list.append(gc)
                batch = [] if gc is not None else achievers[goal_pcf]
                head = 0
                while True:
                    for b in batch:
                        zone_achievers.add(b)
                        if b not in pcf or rc[b] != 0.0:
                            continue
                        p = pcf[b]
                        if zone_ties and p is not None:  # the first maximum on the zone's border or in the zone
                            q = next((q for q in pre_ids[b] if hc[q] == hp[b] and (
                                q in zone or all(rc.get(x, math.inf) != 0.0 for x in self._cond_achievers[q]))), p)
                            if q != p:
                                pcf[b] = p = q
                                chosen[b] = (q, hc[q])
                        if p is not None and p not in zone:
                            zone.add(p)
                            zone_list.append(p)
                    if head == len(zone_list):
                        break
                    batch = self._cond_achievers[zone_list[head]]
                    head += 1
                # Before the zone: from the state (and the always-true precondition), along pcf edges, not
                # through an action that achieves a zone condition; those actions are the cut.
                before = set(true)
                cut: set[int] = set()
                todo = [a for a in reached if pcf[a] is None] + [a for c in true for a in pre_of[c]]
                while todo:
                    a = todo.pop()
                    if a not in pcf or not (pcf[a] is None or pcf[a] in before):
                        continue
                    if a in zone_achievers:
                        cut.add(a)
                        continue
                    for e in effects[a]:
                        if e in hc and e not in before:
                            before.add(e)
                            todo.extend(pre_of[e])
                if not cut:
                    break
                m = min(rc[a] for a in cut)
                total += m
                for a in cut:
                    rc[a] -= m
            return total

        def lmcut_bound(state: State, unsat: list[int], zones: tuple, rules: tuple) -> float:
            term = lmcut(state, unsat, zones, rules)
            return term if math.isinf(term) else max(term, -(-len(unsat) // most_fixed) * c_min)

        def auto_heuristic(state: State) -> float:
            """LM-cut under ``lmcut_zone_ties="auto"`` and / or ``lmcut_ties="auto"``
            (`goap.planners.base.LMCUT_ZONE_AUTO`, `LMCUT_TIES_AUTO`): every value over the "auto" settings and a
            vote for each on the first LMCUT_PROBE states this search stores (it stores every new state of finite h
            until it ends, so those are the ones evaluated), then the settings that won."""
            unsat = [j for j, c in enumerate(goal.want) if not c.holds(state[goal_facts[j]])]
            zone_options = (True, False) if zone_auto else (zones,)
            tie_options = ((False,), (True,)) if ties_auto else (rules,)
            if probe[0] >= LMCUT_PROBE:
                zone = (probe[1] >= 0,) if zone_auto else zones
                rule = (probe[2] < 0,) if ties_auto else rules
                return lmcut_bound(state, unsat, zone, rule) if unsat else 0.0
            votes = [0, 0]
            value = 0.0
            if unsat:
                # values[z][r]: zone option z (the rule first), tie option r ("highest" first)
                values = []
                for zone in zone_options:
                    values.append([])
                    for rule in tie_options:
                        term = lmcut_bound(state, unsat, zone if isinstance(zone, tuple) else (zone,), rule)
                        if math.isinf(term):
                            return term
                        values[-1].append(term)
                value = max(max(row) for row in values)
                if zone_auto:
                    on, off = max(values[0]), max(values[1])
                    votes[0] = (on > off) - (on < off)
                if ties_auto:
                    high, stable = max(row[0] for row in values), max(row[1] for row in values)
                    votes[1] = (high > stable) - (high < stable)
            probe[0] += 1
            probe[1] += votes[0]
            probe[2] += votes[1]
            return value

        def heuristic(state: State) -> float:
            if zone_auto or ties_auto:
                return auto_heuristic(state)
            if pdb is not None:  # max_lmcut_pdb / _scp: the tables first, LM-cut unless they prove a dead end
                hp = pdb(state)
                if math.isinf(hp):
                    return math.inf
            unsat = [j for j, c in enumerate(goal.want) if not c.holds(state[goal_facts[j]])]
            if not unsat:
                return 0.0
            if pdb is not None:
                term = lmcut(state, unsat)
                if math.isinf(term):
                    return math.inf
                return max(hp, term, -(-len(unsat) // most_fixed) * c_min)
            if self.heuristic == "lmcut":
                term = lmcut(state, unsat)
            elif self.heuristic == "hmax":
                _, hp = hmax_values(state, cost_of)
                term = max(min((costs[a] + hp[a] for a in achievers[j]), default=math.inf) for j in unsat)
            elif self.heuristic == "hmax_depth2":

                def through(a: int) -> float:
                    pending = [
                        pre_cost[a][i]
                        for i, p in enumerate(domain.actions[a].pre)
                        if not p.holds(state[domain.fact_index(p.fact)])
                    ]
                    return costs[a] + max(pending, default=0.0)

                term = max(min((through(a) for a in achievers[j]), default=math.inf) for j in unsat)
            else:
                term = max(min((costs[a] for a in achievers[j]), default=math.inf) for j in unsat)
            if math.isinf(term):
                return math.inf
            steps = -(-len(unsat) // most_fixed)
            return max(term, steps * c_min)

        return heuristic

    def relaxed_reachable(self, start: State, goal: Goal, usable: list[int]) -> bool:
        """Whether the goal can hold when actions only ever add values (delete relaxation), from ``start``.

        Each fact keeps the set of values reached so far; an action applies when each of its conditions holds
        for some reached value, and adds what its effects give from every reached value. If even that never
        satisfies the goal, no plan exists and the search is skipped. Facts with more than
        ``RELAXED_MAX_VALUES`` values are not tracked: every value counts as reached (a weaker check, and no
        set as large as the fact's range is ever built, so a 0..2**62 counter costs nothing).
        """
        domain = self.domain
        reached: list[set[int] | None] = []
        for fact, value in zip(domain.facts, start, strict=True):
            reached.append(None if fact.max - fact.min + 1 > RELAXED_MAX_VALUES else {value})

        def can_hold(c) -> bool:
            values = reached[domain.fact_index(c.fact)]
            return values is None or any(c.holds(v) for v in values)

        tracked = sum(f.max - f.min + 1 for f, r in zip(domain.facts, reached, strict=True) if r is not None)
        for _ in range(1 + tracked):
            grew = False
            for a in usable:
                action = domain.actions[a]
                if not all(can_hold(c) for c in action.pre):
                    continue
                for e in (*action.effects, *(e for w in action.when for e in w.effects)):  # conditions relaxed too
                    i = domain.fact_index(e.fact)
                    values = reached[i]
                    if values is None:
                        continue
                    new = {e.apply(v, domain.facts[i]) for v in values} - values
                    if new:
                        values |= new
                        grew = True
            if not grew:
                break
        return all(can_hold(c) for c in goal.want)

    def _finish(
        self, goal_node: int, g_of: list[float], parent: list[int], via: list[int], expanded: int
    ) -> tuple[Status, float, list[int], int, int]:
        plan, node = [], goal_node
        while parent[node] >= 0:
            plan.append(via[node])
            node = parent[node]
        plan.reverse()
        if len(plan) > self.max_plan_length:
            return Status.TOO_LONG, g_of[goal_node], plan[: self.max_plan_length], expanded, len(plan)
        return Status.OK, g_of[goal_node], plan, expanded, len(plan)


def _write_back(batch: PlanBatch, host: PlanBatch) -> None:
    """Copy host rows into a batch of device arrays (nothing to do when the batch is on the host)."""
    for name in ("status", "cost", "length", "actions", "expanded", "level"):
        target = getattr(batch, name)
        if not isinstance(target, np.ndarray):
            view = getattr(host, name)
            if not (target.device.is_cpu and np.shares_memory(view, target.numpy())):
                target.assign(view)

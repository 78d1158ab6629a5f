"""The reference planner: forward A* in plain Python over value tuples, written to be obviously correct.

It is the oracle every fast planner is tested against, so it works on the domain's own semantics
(`Domain.is_applicable`, `Domain.apply`, `Condition.holds`), not on the bit encoding.

The search, which the Warp planner follows step for step:

* Heuristic (admissible and consistent). Let U be the goal conditions false in s. h(s) = 0 when U is empty;
  otherwise the larger of
  - max over j in U of: min over the enabled actions a that can make j true of cost(a) + the largest, over
    a's preconditions p false in s, of the cheapest enabled action that can make p true. (Some action must
    make j true, and before it, each of its false preconditions must be made true by some action: this is
    h_max cut off after two levels, cheap enough to compute at every node.) With ``heuristic="h1"``, only the
    cheapest enabled achiever of j: weaker, cheaper per node.
  - ceil(|U| / e) * c_min, where e is the most conditions of this goal a single action can make true and
    c_min the cheapest enabled action (each step fixes at most e conditions and costs at least c_min).
  A condition with no usable achiever gives h = inf: the state is a dead end and is not stored.
* Open list ordered by (f, h, node id); ties therefore go to the deeper node, then to the older one.
  f = g + h for A*; g + w * h for weighted A* (``weight``, plans within w x optimal); h for greedy.
  Costs are summed in float32, like the kernels, so both planners order nodes identically.
* A state's g may improve while it is open: it is pushed again and the stale entry is skipped when popped
  (closed). The goal test happens when a node is popped, so the first goal popped is optimal.
* Before searching, a delete-relaxed reachability check (`relaxed_reachable`) proves many unreachable goals
  unreachable at once: NO_PLAN with no expansions, instead of exhausting the space.
* Budget: at most ``max_nodes`` stored states and ``max_nodes`` open-list entries; exceeding either gives
  BUDGET. A plan with more than ``max_plan_length`` steps gives TOO_LONG (with its cost and length).
"""

from __future__ import annotations

import heapq
import math
from typing import Any

import numpy as np

from goap.domain import Domain, Goal, State, achieves
from goap.encoding import RELAXED_MAX_VALUES, DomainTables, GoalTables, encode
from goap.planners.base import (
    DEFAULT_MAX_NODES,
    DEFAULT_MAX_PLAN_LENGTH,
    PlanBatch,
    Status,
    check_inputs,
    check_options,
)


def f32(x: float) -> float:
    """Round to the nearest float32, as the kernels' arithmetic does."""
    return float(np.float32(x))


class ReferencePlanner:
    name = "reference"

    def __init__(
        self,
        domain: Domain | DomainTables,
        max_nodes: int = DEFAULT_MAX_NODES,
        max_plan_length: int = DEFAULT_MAX_PLAN_LENGTH,
        weight: float = 1.0,
        greedy: bool = False,
        heuristic: str = "h2",
        device: str | None = None,
    ):
        """``weight`` > 1 orders the open list by g + weight * h (plans cost at most weight x optimal);
        ``greedy`` orders it by h alone. ``heuristic`` is "h2" or "h1" (see the module docstring). ``device`` is
        accepted for a common signature: this planner runs on the host."""
        check_options(max_nodes, max_plan_length, weight, heuristic)
        self.heuristic = heuristic
        self.tables = domain if isinstance(domain, DomainTables) else encode(domain)
        self.domain = self.tables.domain
        self.max_nodes = int(max_nodes)
        self.max_plan_length = int(max_plan_length)
        self.weight = f32(weight)  # the kernels receive it as a float32
        self.greedy = bool(greedy)

    def order(self, g: float, h: float) -> float:
        """The open-list key of a node: f = g + weight * h (float32), or h alone when greedy."""
        return h if self.greedy else f32(g + f32(self.weight * h))

    def plan(
        self,
        states: Any,
        goals: Any,
        costs: Any = None,
        enabled: Any = None,
        *,
        goal_table: GoalTables | None = None,
        agents: Any = None,
        out: PlanBatch | None = None,
    ) -> PlanBatch:
        goal_table = goal_table or self.tables.goals
        states, goals, costs, enabled, agents = check_inputs(
            self.tables, goal_table, _host(states), _host(goals), _host(costs), _host(enabled), _host(agents)
        )
        n = states.shape[0]
        out = out if out is not None else PlanBatch.empty(n, self.max_plan_length)
        rows = range(n) if agents is None else agents
        values = self.tables.unpack_states(states)
        default_costs = [float(c) for c in self.tables.cost]
        for i in rows:
            agent_costs = default_costs if costs is None else [float(c) for c in costs[i]]
            agent_enabled = [True] * len(agent_costs) if enabled is None else [bool(e) for e in enabled[i]]
            status, cost, plan, expanded, length = self.search(
                tuple(int(v) for v in values[i]), goal_table.goals[goals[i]], agent_costs, agent_enabled
            )
            out.status[i] = status
            out.cost[i] = cost
            out.length[i] = length
            out.expanded[i] = expanded
            out.actions[i, :] = -1
            out.actions[i, : len(plan)] = plan
        return out

    def search(
        self, start: State, goal: Goal, costs: list[float], enabled: list[bool]
    ) -> tuple[Status, float, list[int], int, int]:
        """One A* search; returns (status, cost, plan, expanded, length)."""
        domain = self.domain
        if domain.satisfies(start, goal.want):
            return Status.SATISFIED, 0.0, [], 0, 0

        usable = [a for a in range(len(domain.actions)) if enabled[a]]
        c_min = min((costs[a] for a in usable), default=math.inf)
        achievers = [[a for a in usable if achieves(domain.actions[a], c)] for c in goal.want]
        per_action = [sum(achieves(act, c) for c in goal.want) for act in domain.actions]
        most_fixed = max(per_action, default=0)

        def cheapest_achiever(c) -> float:
            return min((costs[b] for b in usable if achieves(domain.actions[b], c)), default=math.inf)

        # For every precondition of every achiever of a goal condition: its cheapest usable achiever.
        pre_cost = {a: [cheapest_achiever(p) for p in domain.actions[a].pre] for row in achievers for a in row}

        def holds(c, state: State) -> bool:
            return c.holds(state[domain.fact_index(c.fact)])

        def through(a: int, state: State) -> float:
            """The cost of achiever a plus the dearest of its preconditions not yet true."""
            if self.heuristic == "h1":
                return costs[a]
            pending = [pre_cost[a][i] for i, p in enumerate(domain.actions[a].pre) if not holds(p, state)]
            return f32(costs[a] + max(pending, default=0.0))

        def heuristic(state: State) -> float:
            unsat = [j for j, c in enumerate(goal.want) if not holds(c, state)]
            if not unsat:
                return 0.0
            h_two = max(min((through(a, state) for a in achievers[j]), default=math.inf) for j in unsat)
            if math.isinf(h_two):
                return math.inf
            steps = -(-len(unsat) // most_fixed)
            return max(h_two, f32(steps * c_min))

        h0 = heuristic(start)
        if math.isinf(h0) or not self.relaxed_reachable(start, goal, usable):
            return Status.NO_PLAN, math.nan, [], 0, 0

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

        while open_list:
            _, _, node = heapq.heappop(open_list)
            if closed[node]:
                continue  # a stale entry: the node was reached again more cheaply and already expanded
            state = state_of[node]
            if domain.satisfies(state, goal.want):
                return self._finish(node, g_of, parent, via, expanded)
            closed[node] = True
            expanded += 1
            for a in usable:
                action = domain.actions[a]
                if not domain.is_applicable(state, action):
                    continue
                child = domain.apply(state, action)
                g = f32(g_of[node] + costs[a])
                known = index.get(child)
                if known is None:
                    h = heuristic(child)
                    if math.isinf(h):
                        continue
                    if len(state_of) >= self.max_nodes:
                        return Status.BUDGET, math.nan, [], expanded, 0
                    known = len(state_of)
                    index[child] = known
                    state_of.append(child)
                    g_of.append(g)
                    h_of.append(h)
                    parent.append(node)
                    via.append(a)
                    closed.append(False)
                elif closed[known] or g >= g_of[known]:
                    continue
                else:
                    g_of[known], parent[known], via[known] = g, node, a
                if len(open_list) >= self.max_nodes:
                    return Status.BUDGET, math.nan, [], expanded, 0
                heapq.heappush(open_list, (self.order(g, h_of[known]), h_of[known], known))
        return Status.NO_PLAN, math.nan, [], expanded, 0

    def relaxed_reachable(self, start: State, goal: Goal, usable: list[int]) -> bool:
        """Whether the goal can hold when actions only ever add values (delete relaxation), from ``start``.

        Each fact keeps the set of values reached so far; an action applies when each of its conditions holds
        for some reached value, and adds what its effects give from every reached value. If even that never
        satisfies the goal, no plan exists and the search is skipped. Facts with more than
        ``RELAXED_MAX_VALUES`` values are taken to reach every value (which only makes the check weaker).
        """
        domain = self.domain
        reached = []
        for fact, value in zip(domain.facts, start, strict=True):
            free = fact.max - fact.min + 1 > RELAXED_MAX_VALUES
            reached.append(set(range(fact.min, fact.max + 1)) if free else {value})

        def can_hold(c) -> bool:
            return any(c.holds(v) for v in reached[domain.fact_index(c.fact)])

        for _ in range(1 + sum(len(r) for r in reached) + sum(f.max - f.min + 1 for f in domain.facts)):
            grew = False
            for a in usable:
                action = domain.actions[a]
                if not all(can_hold(c) for c in action.pre):
                    continue
                for e in action.effects:
                    i = domain.fact_index(e.fact)
                    new = {e.apply(v, domain.facts[i]) for v in reached[i]} - reached[i]
                    if new:
                        reached[i] |= new
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
            return Status.TOO_LONG, g_of[goal_node], [], expanded, len(plan)
        return Status.OK, g_of[goal_node], plan, expanded, len(plan)


def _host(x: Any) -> Any:
    """numpy view of a Warp array (the reference runs on the host), anything else unchanged."""
    if x is None or isinstance(x, np.ndarray):
        return x
    numpy = getattr(x, "numpy", None)
    return numpy() if callable(numpy) else x

"""``PlanBatch.expanded_before_last_f``: the expansions before the last f-layer (Fast Downward's "expanded until
last jump"), against a count that shares nothing with the planners.

With a consistent heuristic (h_max is one) A* pops f values in order and never reopens a state, so the expansions
made before the first pop at f = C* are exactly the states s with g*(s) + h(s) < C*: Dijkstra gives g*, the
reference's heuristic function h.
"""

from __future__ import annotations

import heapq
import math
import os

import numpy as np
import pytest

from goap import Status
from goap.bench.random_domains import random_domain, random_problems
from goap.planners.reference import ReferencePlanner
from goap.planners.warp_astar import WarpAStarPlanner

DEVICE = os.environ.get("GOAP_TEST_DEVICE", "cpu")


def states_below(domain, start, goal, costs, enabled, h) -> tuple[float, int]:
    """(C*, the number of states with g* + h < C*) by Dijkstra over the domain's own semantics."""
    best = {start: 0.0}
    frontier = [(0.0, start)]
    done: dict = {}
    c_star = math.inf
    while frontier:
        g, state = heapq.heappop(frontier)
        if state in done:
            continue
        done[state] = g
        assert len(done) <= 100_000, "state space too large for the brute-force count"
        if domain.satisfies(state, goal.want):
            c_star = min(c_star, g)
            continue
        for a, action in enumerate(domain.actions):
            if enabled[a] and domain.is_applicable(state, action):
                child = domain.apply(state, action)
                if g + costs[a] < best.get(child, math.inf):
                    best[child] = g + costs[a]
                    heapq.heappush(frontier, (g + costs[a], child))
    return c_star, sum(1 for s, g in done.items() if g + h(s) < c_star)


@pytest.mark.parametrize(("seed", "n_facts", "int_fraction"), [(7, 14, 0.2), (11, 13, 0.4), (8, 16, 0.0)])
def test_counts_the_states_below_the_optimal_f(seed, n_facts, int_fraction):
    domain = random_domain(seed, n_facts, int_fraction=int_fraction)
    problems = random_problems(domain, 24, seed=seed)
    rng = np.random.default_rng(seed)
    A = len(domain.actions)
    costs = (rng.integers(1, 17, size=(24, A)) / 4).astype(np.float32)  # positive: h_max is consistent
    enabled = rng.random((24, A)) < 0.9
    ref = ReferencePlanner(domain, max_nodes=4096, growth=1, heuristic="hmax")
    fast = WarpAStarPlanner(ref.tables, max_nodes=4096, growth=1, heuristic="hmax", device=DEVICE)
    states = ref.tables.pack_states(problems.values)
    r = ref.plan(states, problems.goals, costs, enabled)
    f = fast.plan(states, problems.goals, costs, enabled).numpy()
    np.testing.assert_array_equal(f.expanded_before_last_f, r.expanded_before_last_f)
    checked = layered = 0
    for i in range(24):
        goal = ref.tables.goals.goals[int(problems.goals[i])]
        row_costs = [float(c) for c in costs[i]]
        row_enabled = [bool(e) for e in enabled[i]]
        start = tuple(int(v) for v in problems.values[i])
        h = ref.heuristic_function(goal, row_costs, row_enabled)
        c_star, below = states_below(domain, start, goal, row_costs, row_enabled, h)
        if r.status[i] == Status.OK:
            assert r.cost[i] == pytest.approx(c_star)
            assert r.expanded_before_last_f[i] == below, i
            assert r.expanded_before_last_f[i] <= r.expanded[i]
            checked += 1
            layered += int(r.expanded_before_last_f[i] > 0)
        else:
            assert r.expanded_before_last_f[i] == 0
    assert checked >= 8 and layered >= 2, "too few solvable rows with searches below C* to test the count"


def test_continued_escalation_keeps_the_count():
    """A search that outgrows its first pool and continues in the next counts as the same search in one pool."""
    domain = random_domain(31, 20, int_fraction=0.3)
    problems = random_problems(domain, 120, seed=31)
    small = ReferencePlanner(domain, max_nodes=16, growth=4, node_ceiling=1024, heuristic="hmax")
    fast = WarpAStarPlanner(small.tables, max_nodes=16, growth=4, node_ceiling=1024, heuristic="hmax", device=DEVICE)
    whole = ReferencePlanner(small.tables, max_nodes=1024, growth=1, heuristic="hmax")
    states = small.tables.pack_states(problems.values)
    f = fast.plan(states, problems.goals).numpy()
    w = whole.plan(states, problems.goals)
    escalated = (f.level > 0) & (f.status == Status.OK)
    assert escalated.sum() >= 3 and (f.expanded_before_last_f[escalated] > 0).any()
    np.testing.assert_array_equal(f.expanded_before_last_f, w.expanded_before_last_f)

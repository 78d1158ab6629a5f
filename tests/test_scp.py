"""Saturated cost partitioning over projections (heuristics ``scp`` and ``max_lmcut_scp``): the device tables
against numpy bit for bit, the cost partition property, admissibility and optimality against brute force, the
Warp planner against the reference node for node, IPC tasks, the CLI and the size limits."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from goap import Status, load_domain
from goap.bench.random_domains import random_domain, random_problems
from goap.encoding import encode
from goap.pddl import load_pddl, optimal_costs, pddl_tasks
from goap.planners import make_planner
from goap.planners import pdb as pdb_module
from goap.planners.pdb import causal_parents, cone, distances, pattern_size
from goap.planners.reference import ReferencePlanner
from goap.planners.scp import (
    MAX_SCP_ORDERS,
    SCP_PATTERN_STATES,
    candidates,
    partition,
    partition_tables,
    rank_orders,
    scp_orders,
    systematic_patterns,
)
from goap.planners.warp_astar import WarpAStarPlanner, build_tables
from tests.conftest import PDDL_DIR
from tests.test_heuristics import uniform_cost
from tests.test_pdb import assert_same, capped_optimum, game_domain
from tests.test_types_costs import agent_rows, check_against_brute_force, typed_problems

DEVICE = os.environ.get("GOAP_TEST_DEVICE", "cpu")


# --- the patterns ---------------------------------------------------------------------------------------------
def test_systematic_patterns_are_the_cone_facts_and_its_causal_pairs():
    domain = game_domain(7, 30)
    parents = causal_parents(domain)
    radix = [f.max - f.min + 1 for f in domain.facts]
    for goal in domain.goals:
        whole = set(cone(domain, goal.want))
        pairs, singles = systematic_patterns(domain, goal.want)
        assert {f for (f,) in singles} <= whole
        # every small cone fact is a pattern (unless it gives an action too many undecided effects)
        assert len(singles) >= len([f for f in whole if radix[f] <= SCP_PATTERN_STATES]) - 2
        for a, b in pairs:
            assert a in whole and b in whole and a != b
            assert a in parents[b] or b in parents[a]
            assert radix[a] * radix[b] <= SCP_PATTERN_STATES
        want = {(a, b) for b in whole for a in parents[b] if a in whole and radix[a] * radix[b] <= SCP_PATTERN_STATES}
        assert {frozenset(q) for q in pairs} == {frozenset(q) for q in want} or any(a.when for a in domain.actions)


@pytest.mark.parametrize("n_orders", [1, 3])
def test_orders_rank_every_candidate_and_fit_pdb_states(n_orders):
    domain = game_domain(9, 40)
    least = encode(domain).min_cost
    for goal in domain.goals:
        goal_facts = {domain.fact_index(c.fact) for c in goal.want}
        for pdb_states in (64, 1 << 16):
            cands = candidates(domain, goal.want, pdb_states, n_orders)
            assert sum(pattern_size(domain, p) for p in cands) <= pdb_states // n_orders
            assert len(set(cands)) == len(cands) and set(cands[0]) & goal_facts  # goal facts first
            orders = scp_orders(domain, goal.want, pdb_states, least, n_orders)
            assert len(orders) == n_orders
            for order in orders:
                assert sorted(order) == sorted(cands)
        assert len(candidates(domain, goal.want, 1 << 16, n_orders)) >= len(candidates(domain, goal.want, 64,
                                                                                       n_orders))


def test_rank_orders_scores():
    """Order 0 by the largest finite distance over 1 + the saturated costs' sum, order 1 by the mean, order 2 by
    the largest over 1 + the costs others also want, order 3 as given; ties keep the given order."""
    inf = math.inf
    full = [(np.array([0.0, 2.0, inf]), np.array([0]), np.array([1.0])),  # h 2, m 1, S 1, T 1 (pattern 2 wants 0)
            (np.array([0.0, 6.0, 6.0, 6.0]), np.array([1]), np.array([5.0])),  # h 6, m 4.5, S 5, T 0
            (np.array([0.0, 1.0]), np.array([0, 2]), np.array([3.0, 1.0]))]  # h 1, m 0.5, S 4, T 1
    patterns = [(0,), (1,), (2,)]
    orders = rank_orders(patterns, full, 4)
    assert orders[0] == ((0,), (1,), (2,))  # 1.0, 1.0 (a tie: the given order), 0.2
    assert orders[1] == ((1,), (0,), (2,))  # 0.5, 0.75, 0.1
    assert orders[2] == ((1,), (0,), (2,))  # 1.0, 6.0, 0.5
    assert orders[3] == tuple(patterns)
    full[1] = (np.array([0.0, 3.0, 0.0, 0.0]), np.array([0]), np.array([5.0]))  # h 3, m 0.75, S 5, T 4
    orders = rank_orders(patterns, full, 3)
    assert [o[0] for o in orders] == [(0,), (0,), (0,)]  # 1.0 / 0.5 / 1.0 against 0.5 / 0.125 / 0.6
    assert orders[2] == ((0,), (1,), (2,))  # pattern 2: T = 3 (min(3, 9 - 3) + min(1, 0)), 0.25


# --- the tables -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("source", "n_orders", "pdb_states"),
                         [("random", 1, 1 << 16), ("random", 3, 1 << 12), ("soldier", 2, 1 << 14)])
def test_device_tables_equal_numpy_bit_for_bit(source, n_orders, pdb_states, worlds_dir):
    """The Warp build (sweeps under each pattern's remaining costs, atomic-max saturation, subtraction) gives the
    reference's distances and saturated costs, the same float64 values."""
    domain = game_domain(5, 14) if source == "random" else load_domain(worlds_dir / source / "domain.toml")
    fast = WarpAStarPlanner(domain, heuristic="scp", pdb_states=pdb_states, scp_orders=n_orders, device=DEVICE)
    least = fast.tables.min_cost
    host = partition_tables(domain, domain.goals, least, pdb_states, n_orders)  # the orders by numpy
    pt, sat = build_tables(host, fast.device, saturate=True)
    dist, sat = pt.dist.numpy(), sat.numpy()
    # the planner's own tables are the same build
    np.testing.assert_array_equal(fast._goal_struct(fast.tables.goals)[2].dist.numpy(), dist)
    k = positive = 0
    for g, goal in enumerate(domain.goals):
        orders = scp_orders(domain, goal.want, pdb_states, least, n_orders)
        parts = partition(domain, orders, least, goal.want)
        for order, part in zip(orders, parts, strict=True):
            for p, (d, s) in zip(order, part, strict=True):
                assert host.patterns[g][k - host.goal_start[g]] == p
                np.testing.assert_array_equal(dist[host.dist_start[k]:host.dist_start[k + 1]], d)
                rows = range(host.act_start[k], host.act_start[k + 1])
                np.testing.assert_array_equal(sat[list(rows)], s[host.act_action[list(rows)]])
                positive += int((s > 0).sum())
                k += 1
    assert k == host.n_patterns and positive > 0
    if source == "random":
        assert any(a.when for a in domain.actions)


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_saturated_costs_partition_the_costs_and_keep_every_distance(seed):
    """Along each order the saturated costs sum to at most each action's least cost, and each pattern's
    distances under its saturated costs alone are the distances it got under the remaining costs (what makes
    them saturated: no cost it leaves off is needed); the sum over an order is then at most the true optimum."""
    domain = game_domain(seed, 9, max_int=4, depth=4)
    ref = ReferencePlanner(domain, heuristic="scp", scp_orders=2)
    least = np.asarray(ref.tables.min_cost, dtype=np.float64)
    checked = 0
    for goal in domain.goals:
        orders = scp_orders(domain, goal.want, ref.pdb_states, least, 2)
        for order, part in zip(orders, partition(domain, orders, least, goal.want), strict=True):
            total = np.zeros_like(least)
            for p, (d, s) in zip(order, part, strict=True):
                assert (s >= 0).all()
                total += s
                again = distances(domain, p, s.tolist(), goal.want)
                np.testing.assert_array_equal(np.isinf(again), np.isinf(d))
                np.testing.assert_allclose(again[np.isfinite(d)], d[np.isfinite(d)], rtol=1e-12, atol=1e-12)
                checked += 1
            assert (total <= least * (1 + 1e-12) + 1e-12).all(), (total, least)
    assert checked > 20
    # h(s) <= h*(s) at the domain's own costs, from random states
    problems = random_problems(domain, 60, seed=seed, walk=6)
    costs = [a.cost for a in domain.actions]
    finite = 0
    for values, g in zip(problems.values, problems.goals, strict=True):
        start = tuple(int(v) for v in values)
        goal = domain.goals[g]
        best = uniform_cost(domain, start, goal, costs, [True] * len(costs))
        h = ref.heuristic_function(goal)(start)
        assert h <= best + 1e-9, (h, best)
        finite += 0 < h < math.inf
    assert finite >= 10


def test_the_first_pattern_gets_every_cost():
    """The first pattern of an order (one holding a goal fact) is built under the domain's full least costs: scp
    is at least its distance at those costs, and the rest of the order adds to it on some states."""
    domain = random_domain(71, 9, int_fraction=0.4, max_int=4, depth=4)
    ref = ReferencePlanner(domain, heuristic="scp")
    least = list(ref.tables.min_cost)
    problems = random_problems(domain, 60, seed=72, walk=6)
    above = 0
    for values, g in zip(problems.values, problems.goals, strict=True):
        goal = domain.goals[g]
        start = tuple(int(v) for v in values)
        h = ref.heuristic_function(goal)(start)
        first = scp_orders(domain, goal.want, ref.pdb_states, least, 1)[0][0]
        d = distances(domain, first, least, goal.want)
        idx = sum((start[f] - domain.facts[f].min) * s for f, s in zip(first, pdb_module.strides(domain, first),
                                                                     strict=True))
        assert h >= d[idx]
        above += d[idx] < h < math.inf
    assert above > 0


# --- admissible, optimal, node for node ---------------------------------------------------------------------------
@pytest.mark.parametrize(("seed", "heuristic", "pdb_states", "n_orders"),
                         [(41, "scp", 16, 1), (42, "scp", 1 << 16, 3), (43, "max_lmcut_scp", 256, 2)])
def test_admissible_and_optimal_against_brute_force(seed, heuristic, pdb_states, n_orders):
    domain = game_domain(seed, 8, max_int=4, depth=4)
    problems, costs, enabled, types = typed_problems(domain, 30, seed)
    costs[::5] = 0.0  # zero-cost rows: the factor is 0, h falls back to the step bound
    costs[1::7, :] = domain.actions[0].cost  # flat rows
    enabled[2::9] = False  # nothing usable: the factor is inf, every unmet goal a dead end
    options = {"max_nodes": 4096, "heuristic": heuristic, "pdb_states": pdb_states, "scp_orders": n_orders}
    ref = ReferencePlanner(domain, **options)
    fast = make_planner("warp", ref.tables, device=DEVICE, **options)
    states = ref.tables.pack_states(problems.values)
    solved = 0
    for c, e, t in ((None, None, None), (costs, enabled, types)):
        r = ref.plan(states, problems.goals, c, e, types=t)
        assert_same(r, fast.plan(states, problems.goals, c, e, types=t))
        solved += check_against_brute_force(domain, ref, r, problems, c, e, t)
    assert solved >= 10


@pytest.mark.parametrize(("seed", "n_facts", "words", "heuristic", "n_orders"),
                         [(51, 24, 1, "scp", 1), (52, 110, 3, "scp", 2), (54, 190, 6, "max_lmcut_scp", 1)])
def test_warp_matches_reference(seed, n_facts, words, heuristic, n_orders):
    domain = game_domain(seed, n_facts)
    n = 60
    problems, costs, enabled, types = typed_problems(domain, n, seed)
    costs[: n // 3] = [a.cost for a in domain.actions]
    options = {"max_nodes": 64, "node_ceiling": 512, "heuristic": heuristic, "pdb_states": 4096,
               "scp_orders": n_orders}
    ref = ReferencePlanner(domain, **options)
    assert ref.tables.n_words == words
    fast = WarpAStarPlanner(ref.tables, device=DEVICE, **options)
    states = ref.tables.pack_states(problems.values)
    seen = set()
    for c, e, t in ((None, None, None), (costs, enabled, types)):
        r = ref.plan(states, problems.goals, c, e, types=t)
        assert_same(r, fast.plan(states, problems.goals, c, e, types=t))
        seen |= set(r.status.tolist())
    assert Status.OK in seen and len(seen) >= 2, seen
    checked = 0
    for i in range(0, n, 4):
        base, scale, usable = agent_rows(domain, i, costs, enabled, types)
        start = tuple(int(v) for v in problems.values[i])
        goal = domain.goals[problems.goals[i]]
        best = capped_optimum(domain, start, goal, base, scale, usable, limit=4000)
        if best is None:
            continue
        least, _ = ref.agent_costs(base, tuple(scale))
        assert ref.heuristic_function(goal, least, usable)(start) <= best + 1e-9
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("world", ["soldier", "village"])
def test_warp_matches_reference_on_worlds(world, worlds_dir):
    domain = load_domain(worlds_dir / world / "domain.toml")
    ref = ReferencePlanner(domain, heuristic="scp", pdb_states=1 << 12)
    fast = WarpAStarPlanner(ref.tables, heuristic="scp", pdb_states=1 << 12, device=DEVICE)
    problems = random_problems(domain, 120, seed=3, walk=8)
    states = ref.tables.pack_states(problems.values)
    r, f = ref.plan(states, problems.goals), fast.plan(states, problems.goals)
    assert_same(r, f)
    assert (r.status == Status.OK).sum() > 30
    hmax = ReferencePlanner(ref.tables, heuristic="hmax").plan(states, problems.goals)
    np.testing.assert_array_equal(r.cost, hmax.cost)


def test_max_lmcut_scp_is_the_max_of_both():
    domain = game_domain(71, 10, max_int=4, depth=4)
    problems, costs, enabled, types = typed_problems(domain, 40, 71)
    both = ReferencePlanner(domain, max_nodes=4096, heuristic="max_lmcut_scp", pdb_states=256)
    lm = ReferencePlanner(both.tables, max_nodes=4096, heuristic="lmcut")
    scp = ReferencePlanner(both.tables, max_nodes=4096, heuristic="scp", pdb_states=256)
    states = both.tables.pack_states(problems.values)
    r = both.plan(states, problems.goals, costs, enabled, types=types)
    for other in (lm, scp):
        o = other.plan(states, problems.goals, costs, enabled, types=types)
        np.testing.assert_array_equal(r.status, o.status)
        np.testing.assert_array_equal(r.cost, o.cost)
        assert r.expanded.sum() <= o.expanded.sum()
    checked = 0
    for i in range(len(problems.goals)):
        goal = domain.goals[problems.goals[i]]
        usable = [True] * len(domain.actions)
        least = [a.cost for a in domain.actions]
        start = tuple(int(v) for v in problems.values[i])
        h = both.heuristic_function(goal, least, usable)(start)
        assert h == max(lm.heuristic_function(goal, least, usable)(start),
                        scp.heuristic_function(goal, least, usable)(start))
        checked += 0.0 < h < math.inf
    assert checked >= 10


# --- IPC tasks ----------------------------------------------------------------------------------------------------
TASKS = {name: (dom, prob) for dom, prob, name in pddl_tasks(PDDL_DIR)}


@pytest.mark.parametrize(("name", "heuristic"), [
    ("gripper/task01", "scp"), ("blocks/task05", "scp"), ("miconic/task02", "scp"), ("logistics/task02", "scp"),
    ("gripper/task01", "max_lmcut_scp"), ("logistics/task02", "max_lmcut_scp"), ("zenotravel/task01", "scp"),
])
def test_ipc_tasks_optimal(name, heuristic):
    if name not in TASKS:
        pytest.skip(f"{name} is not in the task set")
    task = load_pddl(*TASKS[name])
    ref = ReferencePlanner(task.domain, heuristic=heuristic)
    fast = WarpAStarPlanner(ref.tables, heuristic=heuristic, device=DEVICE, threads=1)
    states = ref.tables.pack(task.state)[None]
    goals = np.array([task.goal])
    r, f = ref.plan(states, goals), fast.plan(states, goals)
    assert_same(r, f)
    assert Status(int(f.status[0])) == Status.OK and f.cost[0] == optimal_costs(PDDL_DIR)[name]
    end = task.domain.replay(task.state, f.plan(0))
    assert task.domain.satisfies(end, task.domain.goals[task.goal].want)
    if heuristic == "max_lmcut_scp":
        lm = WarpAStarPlanner(ref.tables, heuristic="lmcut", device=DEVICE, threads=1).plan(states, goals)
        assert f.expanded[0] <= lm.expanded[0]


@pytest.mark.parametrize("name", ["depot/task03", "elevators/task03", "gripper/task04"])
def test_larger_ipc_tasks_optimal_with_scp(name):
    """The IPC tasks LM-cut takes longest on: optimal with scp (the Warp planner alone: the reference is Python),
    each within seconds."""
    if name not in TASKS:
        pytest.skip(f"{name} is not in the task set")
    task = load_pddl(*TASKS[name])
    fast = WarpAStarPlanner(task.domain, heuristic="scp", device=DEVICE, threads=1)
    f = fast.plan(fast.tables.pack(task.state)[None], np.array([task.goal]))
    assert Status(int(f.status[0])) == Status.OK and f.cost[0] == optimal_costs(PDDL_DIR)[name]
    end = task.domain.replay(task.state, f.plan(0))
    assert task.domain.satisfies(end, task.domain.goals[task.goal].want)


def test_solve_cli_takes_the_heuristic(capsys):
    from goap.cli import main

    name = "gripper/task01"
    if name not in TASKS:
        pytest.skip(f"{name} is not in the task set")
    dom, prob = TASKS[name]
    assert main(["solve", str(dom), str(prob), "--heuristic", "scp", "--device", DEVICE]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert rows and rows[0]["cost"] == optimal_costs(PDDL_DIR)[name]
    with pytest.raises(SystemExit):
        main(["solve", str(dom), str(prob), "--heuristic", "scpp"])


# --- sizes --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [0, MAX_SCP_ORDERS + 1, 1.5, True, "2"])
@pytest.mark.parametrize("planner", ["reference", "warp"])
def test_scp_orders_out_of_range_is_refused(bad, planner):
    with pytest.raises(ValueError, match=r"scp_orders must be an integer in 1\.\.4"):
        make_planner(planner, random_domain(3, 6), heuristic="scp", scp_orders=bad, device=DEVICE)


@pytest.mark.parametrize("planner", ["reference", "warp"])
def test_tables_over_the_byte_limit_are_refused_before_allocating(planner, monkeypatch):
    domain = game_domain(5, 14)
    smallest = min(sum(pattern_size(domain, p) for p in candidates(domain, g.want, 1 << 16, 2))
                   for g in domain.goals)
    monkeypatch.setattr(pdb_module, "MAX_PDB_BYTES", 8 * smallest - 8)  # no goal's tables fit
    problems = random_problems(domain, 4, seed=1)
    with pytest.raises(ValueError, match="lower pdb_states"):
        p = make_planner(planner, domain, heuristic="scp", device=DEVICE)
        p.plan(p.tables.pack_states(problems.values), problems.goals)

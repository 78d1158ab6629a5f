"""The batched Warp planner against the reference oracle: same statuses, costs and expansions."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from goap import DomainBuilder, Goal, Status, load_domain
from goap.bench.random_domains import random_domain, random_problems
from goap.planners import make_planner
from goap.planners.reference import ReferencePlanner
from goap.planners.warp_astar import WarpAStarPlanner, scratch_bytes_per_agent

DEVICE = os.environ.get("GOAP_TEST_DEVICE", "cpu")


def assert_same(ref, fast, domain, states_values, goals, goal_table, costs=None, enabled=None):
    np.testing.assert_array_equal(fast.status, ref.status)
    np.testing.assert_array_equal(fast.cost, ref.cost)
    np.testing.assert_array_equal(fast.length, ref.length)
    np.testing.assert_array_equal(fast.expanded, ref.expanded)
    np.testing.assert_array_equal(fast.actions, ref.actions)
    for i in np.flatnonzero(fast.status == Status.OK):
        state = tuple(int(v) for v in states_values[i])
        total = 0.0
        for a in fast.plan(i):
            assert enabled is None or enabled[i, a]
            assert domain.is_applicable(state, domain.actions[a])
            state = domain.apply(state, domain.actions[a])
            total += domain.actions[a].cost if costs is None else float(costs[i, a])
        assert domain.satisfies(state, goal_table.goals[goals[i]].want)
        assert total == float(fast.cost[i])  # float64 sums in plan order: exact


# Facts chosen so that states take 1, 2, 3, 4 and 5 words.
@pytest.mark.parametrize(
    ("seed", "n_facts", "words", "heuristic"),
    [(11, 24, 1, "hmax"), (12, 60, 2, "hmax"), (13, 110, 3, "hmax_depth2"), (14, 150, 4, "hmax_depth1"),
     (15, 190, 5, "hmax_depth2"), (16, 24, 1, "lmcut")],
)
def test_warp_matches_reference(seed, n_facts, words, heuristic):
    domain = random_domain(seed, n_facts, int_fraction=0.3)
    problems = random_problems(domain, 80, seed=seed)
    # Pools of 64 and 512 states: some searches escalate, some end in a final BUDGET.
    ref = ReferencePlanner(domain, max_nodes=64, node_ceiling=512, heuristic=heuristic)
    assert ref.tables.n_words == words
    fast = WarpAStarPlanner(ref.tables, max_nodes=64, node_ceiling=512, heuristic=heuristic, device=DEVICE)
    states = ref.tables.pack_states(problems.values)
    rng = np.random.default_rng(seed)
    A = len(domain.actions)
    costs = rng.integers(1, 33, size=(len(states), A)).astype(np.float32) / 4
    costs[: len(states) // 3] = ref.tables.cost  # a third keep the domain costs
    enabled = rng.random((len(states), A)) < 0.9
    for c, e in ((None, None), (costs, enabled)):
        r = ref.plan(states, problems.goals, c, e)
        f = fast.plan(states, problems.goals, c, e)
        assert_same(r, f, domain, problems.values, problems.goals, ref.tables.goals, c, e)
        np.testing.assert_array_equal(f.level, r.level)
    statuses = set(r.status.tolist())
    assert Status.OK in statuses and len(statuses) >= 2, statuses


@pytest.mark.parametrize("ties", ["stable", "max"])
@pytest.mark.parametrize(("seed", "n_facts"), [(17, 20), (18, 70)])
def test_lmcut_tie_rules_match_reference(seed, n_facts, ties):
    """LM-cut's other tie rules, node for node with the reference, on one and two words, with per-agent costs and
    enabled masks."""
    domain = random_domain(seed, n_facts, int_fraction=0.3)
    problems = random_problems(domain, 40, seed=seed)
    ref = ReferencePlanner(domain, max_nodes=256, node_ceiling=1024, heuristic="lmcut", lmcut_ties=ties)
    fast = WarpAStarPlanner(ref.tables, max_nodes=256, node_ceiling=1024, heuristic="lmcut", lmcut_ties=ties,
                            device=DEVICE)
    states = ref.tables.pack_states(problems.values)
    rng = np.random.default_rng(seed)
    A = len(domain.actions)
    costs = rng.integers(1, 33, size=(len(states), A)).astype(np.float32) / 4
    enabled = rng.random((len(states), A)) < 0.9
    for c, e in ((None, None), (costs, enabled)):
        r = ref.plan(states, problems.goals, c, e)
        f = fast.plan(states, problems.goals, c, e)
        assert_same(r, f, domain, problems.values, problems.goals, ref.tables.goals, c, e)
    assert Status.OK in set(r.status.tolist())


@pytest.mark.parametrize("ties", ["highest", "stable", "max", "auto"])
@pytest.mark.parametrize(("seed", "n_facts"), [(19, 24), (20, 70)])
def test_lmcut_zone_rule_matches_reference(seed, n_facts, ties):
    """LM-cut's goal-zone tie rule, on, off and the larger of both ("max"), node for node with the reference where
    a third of the actions cost nothing for each agent (the rule only moves zero-cost actions' pcfs and the goal's):
    on one and two words, with enabled masks. (Random domains seldom have the ties it breaks:
    `tests/test_pddl_fdr.py` shows it changing searches and values on parcprinter.)"""
    domain = random_domain(seed, n_facts, int_fraction=0.3)
    problems = random_problems(domain, 40, seed=seed)
    rng = np.random.default_rng(seed)
    A = len(domain.actions)
    costs = (rng.integers(1, 9, size=(40, A)) * (rng.random((40, A)) > 0.35)).astype(np.float32)
    enabled = rng.random((40, A)) < 0.9
    for zone in (True, False, "max", "auto"):
        ref = ReferencePlanner(domain, max_nodes=256, node_ceiling=1024, heuristic="lmcut", lmcut_ties=ties,
                               lmcut_zone_ties=zone)
        fast = WarpAStarPlanner(ref.tables, max_nodes=256, node_ceiling=1024, heuristic="lmcut", lmcut_ties=ties,
                                lmcut_zone_ties=zone, device=DEVICE)
        states = ref.tables.pack_states(problems.values)
        r = ref.plan(states, problems.goals, costs, enabled)
        f = fast.plan(states, problems.goals, costs, enabled)
        assert_same(r, f, domain, problems.values, problems.goals, ref.tables.goals, costs, enabled)
        assert Status.OK in set(r.status.tolist())


def test_lmcut_zone_ties_must_be_a_boolean_or_max():
    with pytest.raises(ValueError, match="lmcut_zone_ties"):
        WarpAStarPlanner(small_domain(), heuristic="lmcut", lmcut_zone_ties="no", device=DEVICE)
    with pytest.raises(ValueError, match="lmcut_zone_ties"):
        ReferencePlanner(small_domain(), heuristic="lmcut", lmcut_zone_ties=1)
    for planner in (WarpAStarPlanner, ReferencePlanner):  # "auto" compares LM-cut's values: LM-cut only
        with pytest.raises(ValueError, match='lmcut_zone_ties="auto" needs heuristic="lmcut"'):
            planner(small_domain(), heuristic="max_lmcut_pdb", lmcut_zone_ties="auto")
        with pytest.raises(ValueError, match='lmcut_ties="auto" needs heuristic="lmcut"'):
            planner(small_domain(), heuristic="max_lmcut_scp", lmcut_ties="auto")
        with pytest.raises(ValueError, match="lmcut_ties must be one of highest, stable, max, auto"):
            planner(small_domain(), heuristic="lmcut", lmcut_ties="lowest")


@pytest.mark.parametrize("world", ["soldier", "village"])
def test_warp_matches_reference_on_worlds(world, worlds_dir):
    domain = load_domain(worlds_dir / world / "domain.toml")
    ref = ReferencePlanner(domain)
    fast = WarpAStarPlanner(ref.tables, device=DEVICE)
    problems = random_problems(domain, 200, seed=3, walk=8)
    states = ref.tables.pack_states(problems.values)
    r = ref.plan(states, problems.goals)
    f = fast.plan(states, problems.goals)
    assert_same(r, f, domain, problems.values, problems.goals, ref.tables.goals)
    assert (r.status == Status.OK).sum() > 50


def small_domain():
    return (
        DomainBuilder("edge")
        .bool("a")
        .bool("b")
        .int("n", 0, 5)
        .action("make_a", cost=1, effects={"a": True})
        .action("make_b", cost=2, pre={"a": True}, effects={"b": True})
        .action("count", cost=1, pre={"b": True}, effects={"n": "+= 1"})
        .goal("b", want={"b": True})
        .goal("five", want={"n": 5})
        .goal("never", want={"n": "< 0"} if False else {"a": False, "b": True})
        .build()
    )


@pytest.fixture(scope="module")
def edge():
    domain = small_domain()
    return domain, WarpAStarPlanner(domain, device=DEVICE), ReferencePlanner(domain)


def test_empty_batch(edge):
    domain, fast, _ = edge
    batch = fast.plan(np.zeros((0, 1), np.uint64), np.zeros(0, np.int32))
    assert len(batch) == 0 and batch.actions.shape == (0, fast.max_plan_length)


def test_single_agent_and_satisfied(edge):
    domain, fast, _ = edge
    t = fast.tables
    one = fast.plan(t.pack({})[None], [domain.goal_index("b")])
    assert one.status[0] == Status.OK and one.plan_names(0, domain) == ["make_a", "make_b"] and one.cost[0] == 3
    done = fast.plan(t.pack({"b": True})[None], [domain.goal_index("b")])
    assert done.status[0] == Status.SATISFIED and done.cost[0] == 0 and done.expanded[0] == 0


def test_unreachable_and_disabled(edge):
    domain, fast, ref = edge
    t = fast.tables
    s = np.repeat(t.pack({})[None], 2, axis=0)
    enabled = np.array([[True, True, True], [False, False, False]])
    goals = [domain.goal_index("never"), domain.goal_index("b")]
    f = fast.plan(s, goals, enabled=enabled)
    r = ref.plan(s, goals, enabled=enabled)
    assert list(f.status) == [Status.NO_PLAN, Status.NO_PLAN]
    np.testing.assert_array_equal(f.expanded, r.expanded)


def test_budget_is_reported_not_a_wrong_plan(edge):
    domain, _, _ = edge
    tiny = WarpAStarPlanner(domain, max_nodes=3, growth=1, device=DEVICE)
    batch = tiny.plan(tiny.tables.pack({})[None], [domain.goal_index("five")])
    assert batch.status[0] == Status.BUDGET and (batch.actions[0] == -1).all() and np.isnan(batch.cost[0])
    # The same planner still gets the next search right: nothing is left behind in its scratch.
    again = tiny.plan(tiny.tables.pack({"b": True, "n": 4})[None], [domain.goal_index("five")])
    assert again.status[0] == Status.OK and again.plan_names(0, domain) == ["count"]


def test_too_long(edge):
    domain, _, _ = edge
    short = WarpAStarPlanner(domain, max_plan_length=3, device=DEVICE)
    batch = short.plan(short.tables.pack({})[None], [domain.goal_index("five")])
    assert batch.status[0] == Status.TOO_LONG and batch.length[0] == 7 and batch.cost[0] == 8
    # The first three steps come back as a segment to execute before planning again.
    assert [domain.actions[a].name for a in batch.segment(0)] == ["make_a", "make_b", "count"]


def test_agent_subset_and_mask_leave_other_rows(edge):
    domain, fast, _ = edge
    t = fast.tables
    states = np.repeat(t.pack({})[None], 5, axis=0)
    goals = np.full(5, domain.goal_index("b"), np.int32)
    batch = fast.plan(states, goals, agents=[3, 1])
    assert list(batch.status) == [Status.NOT_PLANNED, Status.OK, Status.NOT_PLANNED, Status.OK, Status.NOT_PLANNED]
    mask = np.array([True, False, False, False, True])
    again = fast.plan(states, goals, agents=mask, out=batch)
    assert (again.status == Status.OK).sum() == 4 and again.status[2] == Status.NOT_PLANNED


def test_warp_array_inputs(edge):
    import warp as wp

    domain, fast, _ = edge
    t = fast.tables
    host = np.stack([t.pack({}), t.pack({"a": True})])
    states = wp.array(host, dtype=wp.uint64, device=DEVICE)
    goals = wp.array(np.zeros(2, np.int32), dtype=wp.int32, device=DEVICE)
    batch = fast.plan(states, goals)
    assert list(batch.cost) == [3, 2]


def test_ad_hoc_goal_table(edge):
    domain, fast, ref = edge
    table = fast.tables.encode_goals([Goal("three", want=domain.conditions({"n": ">= 3", "a": True}))])
    s = fast.tables.pack({})[None]
    f = fast.plan(s, [0], goal_table=table)
    r = ref.plan(s, [0], goal_table=table)
    assert f.status[0] == Status.OK and f.cost[0] == r.cost[0] == 6


def test_many_chunks_and_threads_agree():
    domain = random_domain(5, 32)
    problems = random_problems(domain, 1500, seed=5)
    one = WarpAStarPlanner(domain, device=DEVICE, threads=1, chunk_size=4096)
    many = WarpAStarPlanner(domain, device=DEVICE, threads=2, chunk_size=17)
    states = one.tables.pack_states(problems.values)
    a, b = one.plan(states, problems.goals), many.plan(states, problems.goals)
    np.testing.assert_array_equal(a.status, b.status)
    np.testing.assert_array_equal(a.actions, b.actions)


def test_registry_and_memory_formula():
    domain = small_domain()
    planner = make_planner("warp", domain, device=DEVICE, max_nodes=1024, max_plan_length=32,
                           heuristic="hmax_depth2")
    assert isinstance(planner, WarpAStarPlanner)
    # hmax_depth2: 8W(M+1) + 28M + 4H + 8A + 8P + 36 + 36 + 8F + 4L + 18 with W=1, M=1024, H=2048,
    # A=3 actions, P=2 preconditions, F=3 facts, L=32 (36 and 44: one element of each h_max and LM-cut array)
    nodes = 8 * 1025 + 28 * 1024 + 4 * 2048
    assert planner.bytes_per_agent() == nodes + 8 * 3 + 8 * 2 + 36 + 44 + 8 * 3 + 4 * 32 + 18
    full = make_planner("warp", domain, device=DEVICE, max_nodes=1024, max_plan_length=32, heuristic="hmax")
    # hmax: 8A + 8 + 12A + 20C + 4(K + 1) + 44 instead (C=2 distinct preconditions, K=64 buckets)
    assert full.bytes_per_agent() == nodes + 8 * 3 + 8 + 12 * 3 + 20 * 2 + 4 * 65 + 44 + 8 * 3 + 4 * 32 + 18
    lm = make_planner("warp", domain, device=DEVICE, max_nodes=1024, max_plan_length=32, heuristic="lmcut")
    # lmcut: 8A + 8 + 12A + 20C + 4(K + 1) + 32A + 12C
    assert lm.bytes_per_agent() == (nodes + 8 * 3 + 8 + 12 * 3 + 20 * 2 + 4 * 65 + 32 * 3 + 12 * 2 + 8 * 3 + 4 * 32
                                    + 18)
    for p in (planner, full, lm):  # the formula counts exactly what the scratch allocates
        sc = p._new_scratch(1, 1024)
        held = sum(getattr(sc, f).capacity for f in ("node_state", "node_g", "node_h", "node_parent", "node_pos",
                   "heap", "table", "act_cost", "pre_cost", "cond_h", "act_h", "cond_heap", "cond_pos", "act_left",
                   "act_rc", "act_pcf", "act_pcf0", "act_round", "act_mark", "cond_mark", "cond_list", "cond_child",
                   "act_next", "act_prev", "bucket", "cond_prev", "reached"))
        assert held + 4 * 32 + 18 == p.bytes_per_agent() == p._row_bytes(1024) + 4 * 32 + 18
    # No more than the float32 planner's 8W(M+1) + 29M + 4H + ... at the first pool.
    assert planner.bytes_per_agent() <= 8 * 1025 + 29 * 1024 + 4 * 2048 + 4 * 3 + 4 * 2 + 8 * 3 + 4 * 32 + 13
    # The village at the defaults: 100,000 agents in one GPU launch fit in a few GiB.
    assert scratch_bytes_per_agent(1, 1024, 34, 100, 32, 26) * 100_000 < 5 * 2**30


def test_bad_device():
    with pytest.raises(ValueError, match="device"):
        WarpAStarPlanner(small_domain(), device="cuda:7")


@pytest.mark.parametrize(
    ("name", "options"),
    [("warp-wastar", {"weight": 2.0}), ("warp-wastar", {"weight": 1.3}), ("warp-greedy", {"greedy": True})],
)
def test_suboptimal_planners_match_their_reference_and_bounds(name, options):
    domain = random_domain(21, 48, int_fraction=0.3)
    problems = random_problems(domain, 200, seed=21)
    optimal = ReferencePlanner(domain, max_nodes=4096, node_ceiling=4096)
    states = optimal.tables.pack_states(problems.values)
    best = optimal.plan(states, problems.goals)
    ref = ReferencePlanner(optimal.tables, max_nodes=4096, node_ceiling=4096, **options)
    weight = {k: v for k, v in options.items() if k == "weight"}
    fast = make_planner(name, optimal.tables, max_nodes=4096, node_ceiling=4096, device=DEVICE, **weight)
    r, f = ref.plan(states, problems.goals), fast.plan(states, problems.goals)
    assert_same(r, f, domain, problems.values, problems.goals, optimal.tables.goals)
    both = (best.status == Status.OK) & (f.status == Status.OK)
    assert both.sum() > 50
    assert (f.cost[both] >= best.cost[both] - 1e-4).all()
    if name == "warp-wastar":
        assert (f.cost[both] <= options["weight"] * best.cost[both] + 1e-4).all()
    # NO_PLAN means the space was exhausted (or the goal is relaxed-unreachable): never where a plan exists.
    assert not ((f.status == Status.NO_PLAN) & (best.status == Status.OK)).any()
    assert not ((best.status == Status.NO_PLAN) & (f.status == Status.OK)).any()


def test_weight_must_be_at_least_one():
    with pytest.raises(ValueError, match="weight"):
        make_planner("warp-wastar", small_domain(), weight=0.5, device=DEVICE)


def test_cpu_scratch_stays_within_the_memory_cap():
    domain = small_domain()
    cap = 64 << 20
    big = WarpAStarPlanner(domain, max_nodes=1 << 18, device=DEVICE, threads=2, max_scratch_bytes=cap)
    states = np.repeat(big.tables.pack({})[None], 40, axis=0)
    batch = big.plan(states, np.full(40, domain.goal_index("five"), np.int32))
    assert (batch.status == Status.OK).all() and (batch.cost == 8).all()  # make_a, make_b, count x 5
    assert 0 < big.scratch_bytes <= cap


@pytest.mark.parametrize("weaker", ["hmax_depth1", "hmax_depth2"])
def test_weaker_heuristics_match_their_reference_and_expand_more(weaker):
    domain = load_domain(Path(__file__).resolve().parent.parent / "worlds/village/domain.toml")
    problems = random_problems(domain, 150, seed=4, walk=8)
    two = ReferencePlanner(domain, heuristic="hmax")  # full h_max
    states = two.tables.pack_states(problems.values)
    ref = ReferencePlanner(two.tables, heuristic=weaker)
    fast = WarpAStarPlanner(two.tables, heuristic=weaker, device=DEVICE)
    r, f, best = ref.plan(states, problems.goals), fast.plan(states, problems.goals), two.plan(states, problems.goals)
    assert_same(r, f, domain, problems.values, problems.goals, two.tables.goals)
    both = (best.status == Status.OK) & (f.status == Status.OK)
    np.testing.assert_array_equal(f.cost[both], best.cost[both])  # both admissible: the same optimal costs
    assert f.expanded[both].sum() > best.expanded[both].sum()  # full h_max is the stronger one
    with pytest.raises(ValueError, match="unknown heuristic"):
        WarpAStarPlanner(domain, heuristic="hmax3", device=DEVICE)
    with pytest.raises(ValueError, match="'h2' is now called 'hmax_depth2'"):
        WarpAStarPlanner(domain, heuristic="h2", device=DEVICE)

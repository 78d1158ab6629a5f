"""Escalating node pools, exact float64 costs, the scratch cap and device batches: Warp against the reference."""

from __future__ import annotations

import os

import numpy as np
import pytest

from goap import DomainBuilder, Status
from goap.bench.random_domains import random_domain, random_problems
from goap.planners.base import LMCUT_PROBE, MAX_COST, PlanBatch
from goap.planners.reference import ReferencePlanner
from goap.planners.warp_astar import WarpAStarPlanner
from tests.conftest import brute_force_cost

DEVICE = os.environ.get("GOAP_TEST_DEVICE", "cpu")
FIELDS = ("status", "cost", "length", "expanded", "actions", "level", "expanded_before_last_f")


def assert_batches_equal(fast: PlanBatch, ref: PlanBatch) -> None:
    fast, ref = fast.numpy(), ref.numpy()
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(fast, name), getattr(ref, name), err_msg=name)


def random_case(seed: int, n_facts: int, n: int):
    domain = random_domain(seed, n_facts, int_fraction=0.3)
    problems = random_problems(domain, n, seed=seed)
    rng = np.random.default_rng(seed)
    A = len(domain.actions)
    costs = (rng.integers(0, 33, size=(n, A)) / 4).astype(np.float32)  # zero-cost actions included
    enabled = rng.random((n, A)) < 0.9
    return domain, problems, costs, enabled


@pytest.mark.parametrize("heuristic", ["hmax", "hmax_depth2", "hmax_depth1"])
@pytest.mark.parametrize(
    ("seed", "n_facts", "n"), [(31, 20, 120), pytest.param(32, 48, 50, marks=pytest.mark.slow)]
)
def test_escalation_matches_reference(heuristic, seed, n_facts, n):
    domain, problems, costs, enabled = random_case(seed, n_facts, n)
    ref = ReferencePlanner(domain, max_nodes=16, growth=4, node_ceiling=1024, heuristic=heuristic)
    fast = WarpAStarPlanner(ref.tables, max_nodes=16, growth=4, node_ceiling=1024, heuristic=heuristic, device=DEVICE)
    states = ref.tables.pack_states(problems.values)
    for c, e in ((None, None), (costs, enabled)):
        r = ref.plan(states, problems.goals, c, e)
        f = fast.plan(states, problems.goals, c, e)
        assert_batches_equal(f, r)
        assert (r.level > 0).sum() >= 5, "the first pool must overflow for some agents"
        # Escalated searches end as the same search with the final pool from the start would.
        top = ReferencePlanner(ref.tables, max_nodes=ref.pools[-1], growth=1, heuristic=heuristic)
        whole = top.plan(states, problems.goals, c, e)
        np.testing.assert_array_equal(r.status, whole.status)
        np.testing.assert_array_equal(r.cost, whole.cost)


def test_deferred_escalation_within_a_per_call_budget():
    domain, problems, costs, enabled = random_case(33, 40, 40)
    ref = ReferencePlanner(domain, max_nodes=16, growth=4, node_ceiling=1024, heuristic="hmax_depth1")
    fast = WarpAStarPlanner(ref.tables, max_nodes=16, growth=4, node_ceiling=1024, heuristic="hmax_depth1",
                            device=DEVICE)
    states = ref.tables.pack_states(problems.values)
    r_out, f_out = PlanBatch.empty(40, ref.max_plan_length), PlanBatch.empty(40, fast.max_plan_length)
    final = ref.plan(states, problems.goals, costs, enabled)
    calls = 0
    agents = np.arange(40, dtype=np.int32)
    while True:
        r = ref.plan(states, problems.goals, costs, enabled, agents=agents, out=r_out, max_escalated_nodes=200)
        f = fast.plan(states, problems.goals, costs, enabled, agents=agents, out=f_out, max_escalated_nodes=200)
        assert_batches_equal(f, r)
        calls += 1
        waiting = r.deferred(ref.n_levels)
        if not waiting.any():
            break
        agents = np.flatnonzero(waiting).astype(np.int32)  # the deferred rows only, their levels kept
        assert calls < 200
    assert calls > 2  # the budget really spread the work over calls
    np.testing.assert_array_equal(r_out.status, final.status)
    np.testing.assert_array_equal(r_out.cost, final.cost)


def test_final_budget_at_the_ceiling():
    domain, problems, _, _ = random_case(34, 48, 60)
    ref = ReferencePlanner(domain, max_nodes=8, growth=2, node_ceiling=32)
    fast = WarpAStarPlanner(ref.tables, max_nodes=8, growth=2, node_ceiling=32, device=DEVICE)
    assert ref.pools == fast.pools == [8, 16, 32]
    states = ref.tables.pack_states(problems.values)
    r, f = ref.plan(states, problems.goals), fast.plan(states, problems.goals)
    assert_batches_equal(f, r)
    budget = r.status == Status.BUDGET
    assert budget.any() and (r.level[budget] == 3).all() and not r.deferred(3).any()  # past the last pool: final


def exactness_domain():
    return (
        DomainBuilder("exact")
        .bool("a").bool("b").bool("c").bool("done")
        .action("big", cost=16777216, effects={"a": True})
        .action("one", cost=1, pre={"a": True}, effects={"b": True})
        .action("two", cost=1, pre={"b": True}, effects={"c": True})
        .action("three", cost=1, pre={"c": True}, effects={"done": True})
        .action("direct", cost=16777218, effects={"done": True})
        .action("huge", cost=MAX_COST, effects={"a": True, "b": True, "c": True})
        .goal("done", want={"done": True})
        .build()
    )


@pytest.mark.parametrize("heuristic", ["hmax", "hmax_depth2", "hmax_depth1"])
def test_float32_counterexample_gives_the_direct_action_and_its_true_cost(heuristic):
    domain = exactness_domain()
    for planner in (ReferencePlanner(domain, heuristic=heuristic),
                    WarpAStarPlanner(domain, heuristic=heuristic, device=DEVICE)):
        batch = planner.plan(planner.tables.pack({})[None], [0])
        assert batch.status[0] == Status.OK
        assert batch.plan_names(0, domain) == ["direct"]
        assert batch.cost.dtype == np.float64 and batch.cost[0] == 16777218.0


def limit_domain(big: float, direct: float):
    return (
        DomainBuilder("limit")
        .bool("a").bool("b").bool("done")
        .action("big", cost=big, effects={"a": True})
        .action("one", cost=1, pre={"a": True}, effects={"b": True})
        .action("two", cost=1, pre={"b": True}, effects={"done": True})
        .action("direct", cost=direct, effects={"done": True})
        .goal("done", want={"done": True})
        .build()
    )


@pytest.mark.parametrize(
    ("big", "direct", "plan", "cost"),
    [
        (MAX_COST - 2, MAX_COST - 1, ["direct"], MAX_COST - 1),  # the chain costs MAX_COST: one more
        (MAX_COST - 3, MAX_COST, ["big", "one", "two"], MAX_COST - 1),
        (0.5, MAX_COST, ["big", "one", "two"], 2.5),
    ],
)
def test_costs_near_the_limit_are_exact(big, direct, plan, cost):
    domain = limit_domain(big, direct)
    for planner in (ReferencePlanner(domain), WarpAStarPlanner(domain, device=DEVICE)):
        batch = planner.plan(planner.tables.pack({})[None], [0])
        assert batch.status[0] == Status.OK and batch.plan_names(0, domain) == plan and batch.cost[0] == cost


def test_zero_cost_rows_are_exact():
    domain = exactness_domain()
    costs = np.array([[0, 0, 0, 0, 5, 7], [3, 0, 0, 0, 4, 2**24]], np.float32)
    states = np.repeat(ReferencePlanner(domain).tables.pack({})[None], 2, axis=0)
    for planner in (ReferencePlanner(domain), WarpAStarPlanner(domain, device=DEVICE)):
        batch = planner.plan(states, [0, 0], costs)
        assert list(batch.status) == [Status.OK] * 2
        assert batch.cost[0] == 0.0 and len(batch.plan(0)) == 4
        assert batch.cost[1] == 3.0 and batch.plan_names(1, domain) == ["big", "one", "two", "three"]
        for i in range(2):
            assert batch.cost[i] == brute_force_cost(domain, domain.state({}), domain.goals[0],
                                                     [float(c) for c in costs[i]])


def test_costs_over_the_limit_are_refused():
    domain = exactness_domain()
    costs = np.full((1, len(domain.actions)), 2e12, np.float32)
    for planner in (ReferencePlanner(domain), WarpAStarPlanner(domain, device=DEVICE)):
        with pytest.raises(ValueError, match="costs must be finite and in 0..1e"):
            planner.plan(planner.tables.pack({})[None], [0], costs)


def test_zero_cost_cycles_match_reference_and_brute_force():
    domain = (
        DomainBuilder("free")
        .bool("lamp").int("n", 0, 6)
        .action("toggle_on", cost=0, pre={"lamp": False}, effects={"lamp": True})
        .action("toggle_off", cost=0, pre={"lamp": True}, effects={"lamp": False})
        .action("up", cost=1, pre={"lamp": True}, effects={"n": "+= 2"})
        .action("down", cost=0, effects={"n": "-= 1"})
        .goal("five", want={"n": 5, "lamp": False})
        .build()
    )
    ref, fast = ReferencePlanner(domain), WarpAStarPlanner(domain, device=DEVICE)
    values = np.array([[lamp, n] for lamp in (0, 1) for n in range(7)], dtype=np.int64)
    states = ref.tables.pack_states(values)
    goals = np.zeros(len(states), np.int32)
    r, f = ref.plan(states, goals), fast.plan(states, goals)
    assert_batches_equal(f, r)
    for i, v in enumerate(values):
        assert r.cost[i] == brute_force_cost(domain, tuple(int(x) for x in v), domain.goals[0])


def test_huge_first_pool_is_refused_with_a_clear_error():
    domain = exactness_domain()
    with pytest.raises(ValueError, match=r"max_nodes=268,435,456 needs .* max_scratch_bytes"):
        WarpAStarPlanner(domain, max_nodes=268435456, device=DEVICE)


def test_scratch_cap_is_honoured_for_one_huge_search():
    # A search that needs ~40,000 states escalates through pools of 64 * 8**l; the cap drops the levels whose
    # single search would not fit, and the scratch held never passes the cap.
    domain = DomainBuilder("deep").int("x", 0, 199).int("y", 0, 199)
    domain = (domain.action("xu", cost=1, effects={"x": "+= 1"}).action("yu", cost=1, effects={"y": "+= 1"})
              .action("xd", cost=1, effects={"x": "-= 1"}).action("yd", cost=1, effects={"y": "-= 1"})
              .goal("corner", want={"x": 199, "y": 199}).build())
    cap = 8 << 20
    fast = WarpAStarPlanner(domain, max_nodes=64, device=DEVICE, threads=2, max_scratch_bytes=cap)
    assert all(fast.bytes_per_agent(p) <= cap // 2 for p in fast.pools)
    assert fast.bytes_per_agent(fast.pools[-1] * 8) > cap // 2  # the next level was dropped
    states = np.repeat(fast.tables.pack({})[None], 3, axis=0)
    batch = fast.plan(states, [0, 0, 0])
    assert 0 < fast.scratch_bytes <= cap
    ref = ReferencePlanner(fast.tables, max_nodes=64, node_ceiling=fast.pools[-1])
    assert_batches_equal(batch, ref.plan(states, [0, 0, 0]))


def test_wide_int_facts_do_not_blow_up_the_relaxed_check():
    # A 0..2**62-1 counter: the reachability check must not enumerate its values.
    domain = (
        DomainBuilder("wide")
        .int("gold", 0, 2**62 - 1).bool("rich")
        .action("mine", cost=1, effects={"gold": "+= 1000"})
        .action("buy", cost=1, pre={"gold": ">= 3000"}, effects={"rich": True})
        .goal("rich", want={"rich": True})
        .build()
    )
    for planner in (ReferencePlanner(domain), WarpAStarPlanner(domain, device=DEVICE)):
        batch = planner.plan(planner.tables.pack({})[None], [0])
        assert batch.status[0] == Status.OK and batch.cost[0] == 4
        assert batch.plan_names(0, domain) == ["mine", "mine", "mine", "buy"]


def test_device_batch_rows_written_in_place_with_a_device_count():
    import warp as wp

    domain, problems, costs, enabled = random_case(35, 24, 50)
    fast = WarpAStarPlanner(domain, max_nodes=16, growth=4, node_ceiling=1024, device=DEVICE)
    host_states = fast.tables.pack_states(problems.values)
    expected = fast.plan(host_states, problems.goals, costs, enabled)
    states = wp.array(host_states, dtype=wp.uint64, device=DEVICE)
    goals = wp.array(problems.goals, dtype=wp.int32, device=DEVICE)
    d_costs = wp.array(costs, dtype=wp.float32, device=DEVICE)
    d_enabled = wp.array(enabled, dtype=wp.bool, device=DEVICE)
    queue = wp.array(np.arange(50, dtype=np.int32)[::-1].copy(), dtype=wp.int32, device=DEVICE)
    count = wp.array([30], dtype=wp.int32, device=DEVICE)  # only the first 30 queued agents: rows 49..20
    out = PlanBatch.on_device(50, fast.max_plan_length, DEVICE)
    batch = fast.plan(states, goals, d_costs, d_enabled, agents=queue, count=count, out=out)
    assert batch is out and isinstance(out.status, wp.array)
    got = out.numpy()
    rows = np.arange(20, 50)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(got, name)[rows], getattr(expected, name)[rows], err_msg=name)
    assert (got.status[:20] == Status.NOT_PLANNED).all()


@pytest.mark.parametrize("heuristic", ["hmax_depth2", "lmcut"])
def test_escalated_searches_continue_where_the_smaller_pool_stopped(heuristic):
    """A search that fills its pool is kept and the next level takes it up (no work redone); the results are those
    of the reference, which starts over, and of a planner that keeps nothing: statuses, costs, plans, expansions
    and levels. With too few slots for every such search, the rest start over, with the same results."""
    domain, problems, costs, enabled = random_case(34, 30, 80)
    ref = ReferencePlanner(domain, max_nodes=16, growth=4, node_ceiling=4096, heuristic=heuristic)
    states = ref.tables.pack_states(problems.values)

    def planner(carry_room: int | None) -> WarpAStarPlanner:
        p = WarpAStarPlanner(ref.tables, max_nodes=16, growth=4, node_ceiling=4096, heuristic=heuristic,
                             device=DEVICE)
        if carry_room is not None:
            p._carry_room = carry_room
        return p

    keeps, none = planner(None), planner(0)
    few = planner(3 * keeps._carry_slot_bytes(0) * (keeps.n_levels - 1))  # three slots a level
    for c, e in ((None, None), (costs, enabled)):
        r = ref.plan(states, problems.goals, c, e)
        assert (r.level >= 2).sum() >= 3, "some searches must climb two levels or more"
        for p in (keeps, none, few):
            assert_batches_equal(p.plan(states, problems.goals, c, e), r)
        kept = keeps._taken.numpy().reshape(keeps.n_levels, -1).sum(axis=1)  # slots taken per level, all lanes
        assert kept[0] >= (r.level >= 1).sum() - (r.status == Status.NO_PLAN).sum() and kept[1] > 0
        assert not any(none._carry_slots) and none._taken.numpy().sum() == 0
        wanted = few._taken.numpy().reshape(few.n_levels, -1).sum(axis=1)
        assert few._carry_slots[0] == 3 and wanted[0] > 3  # more searches wanted a slot than there were


def _deep_dead_end():
    """The goal needs ``g``, made from ``y``, made from ``z``, which nothing makes: relaxed-unreachable, but two
    regression levels see only finite costs. A counter and a few switches give hundreds of reachable states."""
    b = (DomainBuilder("dead-end").int("x", 0, 31).bool("z").bool("y").bool("g")
         .bool("s1").bool("s2").bool("s3"))
    b.action("inc", cost=1, pre={"x": "< 31"}, effects={"x": "+= 1"})
    b.action("dec", cost=1, pre={"x": "> 0"}, effects={"x": "-= 1"})
    for k in (1, 2, 3):
        b.action(f"on{k}", cost=1, pre={f"s{k}": False}, effects={f"s{k}": True})
        b.action(f"off{k}", cost=1, pre={f"s{k}": True}, effects={f"s{k}": False})
    b.action("make_y", cost=2, pre={"z": True}, effects={"y": True})
    b.action("make_g", cost=3, pre={"y": True}, effects={"g": True})
    return b.goal("g", want={"g": True}).build()


@pytest.mark.parametrize("heuristic", ["hmax_depth2", "hmax_depth1", "lmcut"])
def test_a_dead_end_the_truncated_heuristics_miss_is_proved_after_a_few_expansions(heuristic):
    from goap.planners.base import RELAXED_CHECK_AFTER, RELAXED_CHECK_HEURISTICS

    domain = _deep_dead_end()
    ref = ReferencePlanner(domain, heuristic=heuristic)
    fast = WarpAStarPlanner(ref.tables, heuristic=heuristic, device=DEVICE)
    states = ref.tables.pack_states(np.array([domain.default_state()], dtype=np.int64))
    goals = np.zeros(1, np.int32)
    r = ref.plan(states, goals)
    assert_batches_equal(fast.plan(states, goals), r)
    assert r.status[0] == Status.NO_PLAN and r.level[0] == 0
    h0 = ref.heuristic_function(domain.goals[0], [float(a.cost) for a in domain.actions])(domain.default_state())
    if heuristic in RELAXED_CHECK_HEURISTICS:  # finite at the start: proved by the check, not by exhausting
        assert np.isfinite(h0) and r.expanded[0] == RELAXED_CHECK_AFTER
    else:  # h_max-based: infinite at the start already
        assert np.isinf(h0) and r.expanded[0] == 0
    # Starting at a higher level (a row deferred earlier), the escalated search's own check proves it at once.
    start = PlanBatch.empty(1, fast.max_plan_length)
    start.level[0] = 1
    deferred = fast.plan(states, goals, out=start)
    assert deferred.status[0] == Status.NO_PLAN and deferred.expanded[0] == 0
    again = PlanBatch.empty(1, ref.max_plan_length)
    again.level[0] = 1
    assert_batches_equal(deferred, ref.plan(states, goals, out=again))


@pytest.mark.parametrize("ties", ["highest", "auto"])
def test_kept_searches_resume_the_zone_probe_where_it_stopped(ties):
    """``lmcut_zone_ties="auto"`` (and ``lmcut_ties`` "auto" too) with searches kept across pools: elevators p01
    (zero-cost actions, where the goal-zone rule changes LM-cut's values) from a few states of a seeded walk, pools
    of 16 nodes growing 4x. Kept searches continue mid-probe (a 64-node pool fills before the probe's 128 states)
    and past it (a 256-node pool); each must resume the probe's count and scores with the rest of its search, so
    that its expansions and plan are those of a planner that keeps nothing (each level starts over) and of one pool
    large enough from the start."""
    from pathlib import Path

    from goap.pddl import load_pddl

    folder = Path(__file__).resolve().parent / "fixtures" / "pddl" / "elevators"
    task = load_pddl(folder / "domain.pddl", folder / "p01.pddl")
    domain = task.domain
    rng = np.random.default_rng(3)
    state = tuple(int(v) for v in task.state)
    starts = [state]
    while len(starts) < 4:
        usable = [a for a in domain.actions if domain.is_applicable(state, a)]
        state = domain.apply(state, usable[int(rng.integers(len(usable)))])
        starts.append(state)

    def planner(zone, carry_room: int | None = None, max_nodes: int = 16, rule: str = ties) -> WarpAStarPlanner:
        p = WarpAStarPlanner(domain, max_nodes=max_nodes, growth=4, node_ceiling=16384, heuristic="lmcut",
                             lmcut_zone_ties=zone, lmcut_ties=rule, device=DEVICE)
        if carry_room is not None:
            p._carry_room = carry_room
        return p

    keeps, none, whole = planner("auto"), planner("auto", 0), planner("auto", max_nodes=16384)
    states = keeps.tables.pack_states(np.array(starts))
    goals = np.full(len(starts), task.goal, dtype=np.int32)
    kept_batch = keeps.plan(states, goals)
    kept = keeps._taken.numpy().reshape(keeps.n_levels, -1).sum(axis=1)  # slots taken per level, all lanes
    assert keeps.pools[1] < LMCUT_PROBE < keeps.pools[2] and kept[1] > 0 and kept[2] > 0
    assert_batches_equal(kept_batch, none.plan(states, goals))
    assert none._taken.numpy().sum() == 0
    a, b = kept_batch.numpy(), whole.plan(states, goals).numpy()
    assert (a.status == Status.OK).all() and (a.level >= 3).all()
    for name in ("status", "cost", "length", "expanded", "actions"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    # The probe decides something here: its searches expand other numbers of states than either rule alone (the
    # zone's, or with both "auto" the tie rule's).
    others = [planner(zone) for zone in (True, False)] if ties == "highest" else \
        [planner("auto", rule=rule) for rule in ("highest", "stable")]
    for p in others:
        other = p.plan(states, goals).numpy()
        np.testing.assert_array_equal(other.cost, a.cost)
        assert (other.expanded != a.expanded).any()

"""The Warp planner's call path: recorded launches replayed across calls, shared scratch rows on the CPU.

Each test compares against the reference planner (the oracle) or a fresh planner, so a launch replayed with a
stale argument (an old goal table, an old result batch, code freed by a module reload) shows up as a wrong row.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from goap.bench.random_domains import random_domain, random_problems
from goap.planners.base import PlanBatch, Status
from goap.planners.reference import ReferencePlanner
from goap.planners.warp_astar import WarpAStarPlanner

DEVICE = os.environ.get("GOAP_TEST_DEVICE", "cpu")


def fields(batch: PlanBatch) -> tuple:
    b = batch.numpy()
    return (b.status.copy(), b.cost.copy(), b.length.copy(), b.actions.copy(), b.expanded.copy(), b.level.copy())


def assert_equal(a: PlanBatch, b: PlanBatch) -> None:
    for x, y in zip(fields(a), fields(b), strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.fixture(scope="module")
def case():
    domain = random_domain(21, 40, int_fraction=0.3)
    problems = random_problems(domain, 120, seed=21)
    ref = ReferencePlanner(domain, max_nodes=64, node_ceiling=512)
    states = ref.tables.pack_states(problems.values)
    rng = np.random.default_rng(21)
    costs = (rng.integers(1, 17, size=(len(states), len(domain.actions))) / 2).astype(np.float32)
    return domain, ref, states, problems.goals, costs


def test_replayed_calls_follow_new_batches_goal_tables_and_costs(case):
    domain, ref, states, goals, costs = case
    fast = WarpAStarPlanner(ref.tables, max_nodes=64, node_ceiling=512, device=DEVICE, threads=2, chunk_size=16)
    other = ref.tables.encode_goals(tuple(reversed(domain.goals)))
    for _round in range(2):  # the second round replays every launch the first one recorded
        assert_equal(fast.plan(states, goals), ref.plan(states, goals))
        assert_equal(fast.plan(states, goals, costs), ref.plan(states, goals, costs))
        assert_equal(fast.plan(states, goals, goal_table=other), ref.plan(states, goals, goal_table=other))
        half = slice(0, len(states) // 2)
        out = PlanBatch.empty(len(states) // 2, fast.max_plan_length)  # another batch: another result struct
        assert_equal(fast.plan(states[half], goals[half], out=out), ref.plan(states[half], goals[half]))
    assert Status.OK in set(fast.plan(states, goals).status.tolist())


def test_a_planner_still_works_after_another_word_count_reloads_the_module(case):
    domain, ref, states, goals, _ = case
    fast = WarpAStarPlanner(ref.tables, max_nodes=64, node_ceiling=512, device=DEVICE, threads=2)
    before = fields(fast.plan(states, goals))
    wide = random_domain(22, 150, int_fraction=0.3)  # more words per state: another kernel, more functions
    wide_ref = ReferencePlanner(wide, max_nodes=64, node_ceiling=512)
    assert wide_ref.tables.n_words != ref.tables.n_words
    wide_fast = WarpAStarPlanner(wide_ref.tables, max_nodes=64, node_ceiling=512, device=DEVICE, threads=2)
    wp_problems = random_problems(wide, 30, seed=22)
    wide_states = wide_ref.tables.pack_states(wp_problems.values)
    assert_equal(wide_fast.plan(wide_states, wp_problems.goals), wide_ref.plan(wide_states, wp_problems.goals))
    after = fields(fast.plan(states, goals))
    for x, y in zip(before, after, strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(("threads", "chunk_size"), [(1, 1), (1, 7), (2, 5), (2, 512)])
def test_shared_scratch_rows_give_the_same_results_for_any_chunking(case, threads, chunk_size):
    _, ref, states, goals, costs = case
    fast = WarpAStarPlanner(ref.tables, max_nodes=64, node_ceiling=512, device=DEVICE, threads=threads,
                            chunk_size=chunk_size)
    assert_equal(fast.plan(states, goals, costs), ref.plan(states, goals, costs))
    expected = ref.plan(states, goals, costs)
    assert Status.OK in set(expected.status.tolist()) and (expected.level > 0).any()  # some searches escalate
    if fast.device.is_cpu:  # one scratch row per worker, whatever the batch
        assert fast.scratch_bytes <= fast.threads * fast.bytes_per_agent() + sum(
            min(fast.threads, len(states)) * fast.bytes_per_agent(p) for p in fast.pools[1:])


def test_count_limits_the_rows_planned_and_leaves_the_others_untouched(case):
    import warp as wp

    _, ref, states, goals, _ = case
    fast = WarpAStarPlanner(ref.tables, max_nodes=64, node_ceiling=512, device=DEVICE, threads=2, chunk_size=4)
    n = len(states)
    ids = np.random.default_rng(5).permutation(n).astype(np.int32)
    expected = ref.plan(states, goals)
    for k in (0, 1, 17, n):
        out = PlanBatch.empty(n, fast.max_plan_length)
        out.status[:] = 99  # rows that are not planned keep this
        count = wp.array([k], dtype=wp.int32, device=fast.device)
        fast.plan(states, goals, agents=wp.array(ids, dtype=wp.int32, device=fast.device), count=count, out=out)
        done = ids[:k]
        np.testing.assert_array_equal(out.status[done], expected.status[done])
        np.testing.assert_array_equal(out.cost[done], expected.cost[done])
        np.testing.assert_array_equal(out.actions[done], expected.actions[done])
        assert (out.status[ids[k:]] == 99).all()

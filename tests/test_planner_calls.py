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
    assert 0 < fast.carry_bytes <= fast.max_scratch_bytes // 8 + 4 * len(states)  # kept searches: their share
    if fast.device.is_cpu:  # one scratch row per worker, whatever the batch
        assert fast.scratch_bytes - fast.carry_bytes <= fast.threads * fast.bytes_per_agent() + sum(
            min(fast.threads, len(states)) * fast.bytes_per_agent(p) for p in fast.pools[1:])


@pytest.mark.parametrize("chunk_size", [3, 512])
def test_one_thread_looping_over_a_span_equals_one_query_a_thread(case, chunk_size):
    """A CPU launch over shared scratch runs a span of queries in one thread (the arguments copied once); with a
    row per thread each query is a thread of its own. Same statuses, costs, plans, expansions and levels, first
    pool and escalated, with and without per-agent costs, and on states of several words."""
    domain, ref, states, goals, costs = case
    spans = WarpAStarPlanner(ref.tables, max_nodes=64, node_ceiling=512, device=DEVICE, threads=2,
                             chunk_size=chunk_size)
    single = WarpAStarPlanner(ref.tables, max_nodes=64, node_ceiling=512, device=DEVICE, threads=2,
                              chunk_size=chunk_size, scratch_layout="per_thread")
    assert spans._row_step == 0 and single._row_step == 1
    for c in (None, costs):
        a, b = spans.plan(states, goals, c), single.plan(states, goals, c)
        assert_equal(a, b)
        assert (a.level > 0).any() and (a.status == Status.SATISFIED).any() and (a.status == Status.OK).any()
    wide = random_domain(23, 150, int_fraction=0.3)
    problems = random_problems(wide, 40, seed=23)
    wide_ref = ReferencePlanner(wide, max_nodes=64, node_ceiling=512)
    wide_states = wide_ref.tables.pack_states(problems.values)
    assert wide_ref.tables.n_words > 1
    a = WarpAStarPlanner(wide_ref.tables, max_nodes=64, node_ceiling=512, device=DEVICE, chunk_size=chunk_size)
    b = WarpAStarPlanner(wide_ref.tables, max_nodes=64, node_ceiling=512, device=DEVICE, chunk_size=chunk_size,
                         scratch_layout="per_thread")
    assert_equal(a.plan(wide_states, problems.goals), b.plan(wide_states, problems.goals))


def test_span_sizes_follow_the_cost_of_a_search():
    """A call of a few dozen easy queries runs as one span on the calling thread (a hand-off costs more than the
    work), while the same number of expensive searches is shared out; results are the same either way."""
    from goap.planners import warp_astar

    domain = random_domain(21, 40, int_fraction=0.3)
    problems = random_problems(domain, 54, seed=3)
    fast = WarpAStarPlanner(domain, device=DEVICE, threads=2)
    states = fast.tables.pack_states(problems.values)
    spans: list[int] = []
    first = fast._first_wave

    def spy(run_span, rows, host):
        def counted(first_row, n, sc, sf, lane=0):
            spans.append(n)
            run_span(first_row, n, sc, sf, lane)
        first(counted, rows, host)

    fast._first_wave = spy
    before = fields(fast.plan(states, problems.goals))  # no estimate yet: the default spans
    assert len(spans) > 1 and fast._search_seconds is not None
    fast._search_seconds = warp_astar.SPAN_SECONDS / 1000  # cheap searches: one span
    spans.clear()
    for x, y in zip(fields(fast.plan(states, problems.goals)), before, strict=True):
        np.testing.assert_array_equal(x, y)
    assert spans == [len(states)]
    fast._search_seconds = warp_astar.SPAN_SECONDS  # each search worth a span: spread over the workers
    spans.clear()
    fast.plan(states, problems.goals)
    assert len(spans) > 1


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

"""DedupingPlanner: grouping equal queries and the plan cache return exactly what planning each agent alone does."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from goap.bench.random_domains import random_domain, random_problems
from goap.encoding import encode
from goap.planners.base import PlanBatch, Status
from goap.planners.dedupe import COUNTERS, DedupingPlanner, wrap
from goap.planners.reference import ReferencePlanner
from goap.planners.warp_astar import WarpAStarPlanner

FIELDS = ("status", "cost", "length", "actions", "expanded", "expanded_before_last_f")


def assert_same(a: PlanBatch, b: PlanBatch, rows=None) -> None:
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if x is None and y is None:
            continue
        x, y = np.asarray(x), np.asarray(y)
        if rows is not None:
            x, y = x[rows], y[rows]
        np.testing.assert_array_equal(x, y, err_msg=f"field {f.name}")


def distinct_queries(states, goals, costs, enabled, rows) -> int:
    """The number of distinct (state, goal, cost bits, enabled) rows, counted independently with numpy."""
    parts = [states[rows].view(np.uint8), goals[rows, None].astype(np.int32).view(np.uint8)]
    if costs is not None:
        parts.append(costs[rows].astype(np.float32).view(np.uint8))
    if enabled is not None:
        parts.append(enabled[rows].astype(np.uint8))
    keys = np.ascontiguousarray(np.concatenate(parts, axis=1))
    return len(np.unique(keys.view([("", np.void, keys.shape[1])])))


def near_duplicate_batch(tables, seed: int, n: int = 600, pool: int = 30):
    """``n`` queries drawn from ``pool`` base problems and ``pool`` near copies of them, each differing from its
    base by one state bit, one cost (by one float32 ulp, or by a lot), one enabled bit or the goal, so that a key
    that misses any of them merges rows that must stay apart."""
    domain = tables.domain
    rng = np.random.default_rng(seed)
    rp = random_problems(domain, pool, seed=seed)
    A = tables.n_actions
    states = np.concatenate([tables.pack_states(rp.values)] * 2)
    goals = np.concatenate([rp.goals] * 2).astype(np.int32)
    costs = np.repeat(tables.cost[None].astype(np.float32), 2 * pool, axis=0)
    enabled = np.ones((2 * pool, A), dtype=bool)
    bools = [j for j, fact in enumerate(domain.facts) if fact.max - fact.min == 1]
    for i in range(pool, 2 * pool):
        kind = i % 5
        if kind == 0:  # one state bit (a bool fact's, so the state stays valid)
            f = rng.choice(bools)
            states[i, tables.layout.word[f]] ^= np.uint64(1) << np.uint64(tables.layout.shift[f])
        elif kind == 1:  # one cost, by one ulp
            a = rng.integers(0, A)
            costs[i, a] = np.nextafter(costs[i, a], np.float32(np.inf), dtype=np.float32)
        elif kind == 2:  # one cost, by a lot
            costs[i, rng.integers(0, A)] += 50.0
        elif kind == 3:  # one action off
            enabled[i, rng.integers(0, A)] = False
        else:  # another goal
            goals[i] = (goals[i] + 1) % tables.goals.n_goals
    pick = rng.integers(0, 2 * pool, n)
    return states[pick], goals[pick], costs[pick], enabled[pick]


@pytest.fixture(scope="module", params=[(11, 12), (5, 40), (7, 70)], ids=["12f", "40f", "70f-2words"])
def domain_tables(request):
    seed, facts = request.param
    return encode(random_domain(seed=seed, n_facts=facts))


#: Node pools that escalate (where the planner has them), within a small ceiling: the level a search starts at is
#: then part of its query, and random problems with no plan stay quick.
POOLS = (
    {"max_nodes": 64, "growth": 4, "node_ceiling": 1024}
    if "growth" in inspect.signature(WarpAStarPlanner).parameters
    else {"max_nodes": 256}
)
# The cheapest heuristic keeps these tests quick; which one searches does not matter to grouping.
POOLS["heuristic"] = "hmax_depth1"


@pytest.fixture(scope="module")
def warp_inner(domain_tables):
    planner = WarpAStarPlanner(domain_tables, device="cpu", **POOLS)
    yield planner
    planner.close()


def test_dedupe_matches_each_agent_planned_alone(domain_tables, warp_inner):
    states, goals, costs, enabled = near_duplicate_batch(domain_tables, seed=3)
    alone = warp_inner.plan(states, goals, costs, enabled)
    dp = DedupingPlanner(warp_inner)
    got = dp.plan(states, goals, costs, enabled)
    assert_same(got, alone)
    st = dp.stats()
    n = len(goals)
    assert st["requests"] == n
    assert st["distinct"] == distinct_queries(states, goals, costs, enabled, np.arange(n))
    assert st["distinct"] < n // 4  # the batch really is mostly duplicates
    assert st["dedupe_rate"] == pytest.approx(1 - st["distinct"] / n)


def test_near_duplicates_get_their_own_results(domain_tables, warp_inner):
    """A row whose only difference is the first action of its twin's plan switched off, or made dearer, gets the
    different result that planning it alone gives: the key must see that bit and that cost."""
    states, goals, costs, enabled = near_duplicate_batch(domain_tables, seed=9, n=300, pool=30)
    base = warp_inner.plan(states, goals, costs, enabled)
    ok = np.flatnonzero((base.status == Status.OK) & (base.length > 0))[:10]
    assert len(ok) >= 3
    twins_off = len(states) + np.arange(len(ok))
    twins_dear = twins_off + len(ok)
    first = base.actions[ok, 0]
    states2 = np.concatenate([states, states[ok], states[ok]])
    goals2 = np.concatenate([goals, goals[ok], goals[ok]])
    costs2 = np.concatenate([costs, costs[ok], costs[ok]])
    enabled2 = np.concatenate([enabled, enabled[ok], enabled[ok]])
    enabled2[twins_off, first] = False
    costs2[twins_dear, first] = np.nextafter(costs2[twins_dear, first], np.float32(np.inf), dtype=np.float32) * 8
    alone = warp_inner.plan(states2, goals2, costs2, enabled2)
    got = DedupingPlanner(warp_inner).plan(states2, goals2, costs2, enabled2)
    assert_same(got, alone)
    changed = (alone.status[twins_off] != alone.status[ok]) | (alone.cost[twins_off] != alone.cost[ok])
    assert changed.all()
    assert (alone.cost[twins_dear] != alone.cost[ok]).any()


def test_agents_subset_count_and_untouched_rows(domain_tables, warp_inner):
    import warp as wp

    states, goals, costs, enabled = near_duplicate_batch(domain_tables, seed=4, n=300)
    rng = np.random.default_rng(1)
    agents = np.sort(rng.choice(300, 120, replace=False)).astype(np.int32)
    alone = warp_inner.plan(states, goals, costs, enabled, agents=agents[:80])
    dp = DedupingPlanner(warp_inner)
    out = PlanBatch.empty(300, warp_inner.max_plan_length)
    out.expanded[:] = -7  # rows not planned keep what they held
    count = wp.array([80], dtype=wp.int32, device="cpu")
    dp.plan(states, goals, costs, enabled, agents=wp.array(agents, dtype=wp.int32, device="cpu"), count=count,
            out=out)
    assert_same(out, alone, rows=agents[:80])
    rest = np.setdiff1d(np.arange(300), agents[:80])
    assert (out.status[rest] == Status.NOT_PLANNED).all()
    assert (out.expanded[rest] == -7).all()
    assert dp.stats()["requests"] == 80
    # repeated indices and a mask
    twice = np.concatenate([agents[:10], agents[:10]])
    out2 = dp.plan(states, goals, costs, enabled, agents=twice)
    assert_same(out2, warp_inner.plan(states, goals, costs, enabled, agents=agents[:10]), rows=agents[:10])
    mask = np.zeros(300, bool)
    mask[agents] = True
    assert_same(dp.plan(states, goals, costs, enabled, agents=mask),
                warp_inner.plan(states, goals, costs, enabled, agents=agents))


def test_defaults_without_costs_or_enabled(domain_tables, warp_inner):
    states, goals, _, _ = near_duplicate_batch(domain_tables, seed=5)
    dp = DedupingPlanner(warp_inner, cache_capacity=128)
    assert_same(dp.plan(states, goals), warp_inner.plan(states, goals))
    # the same queries with an all-true enabled row are the same queries (cache hits); a cost row is a new query
    n = len(goals)
    ones = np.ones((n, domain_tables.n_actions), bool)
    before = dp.stats()
    assert_same(dp.plan(states, goals, None, ones), warp_inner.plan(states, goals))
    after = dp.stats()
    assert after["hits"] - before["hits"] == min(after["entries"], before["distinct"])
    dom_costs = np.repeat(domain_tables.cost[None].astype(np.float32), n, axis=0)
    dp.plan(states, goals, dom_costs)
    assert dp.stats()["hits"] == after["hits"]


@pytest.mark.parametrize("bits", [1, 3, 8])
def test_hash_collisions_never_merge_queries(domain_tables, warp_inner, bits):
    states, goals, costs, enabled = near_duplicate_batch(domain_tables, seed=6, n=400)
    alone = warp_inner.plan(states, goals, costs, enabled)
    dp = DedupingPlanner(warp_inner, cache_capacity=32, hash_bits=bits)
    for _ in range(2):  # the second call goes through the cache, where every key shares a few home slots
        got = dp.plan(states, goals, costs, enabled)
        assert_same(got, alone)
    st = dp.stats()
    assert st["distinct"] == 2 * distinct_queries(states, goals, costs, enabled, np.arange(400))
    assert st["hits"] > 0


@pytest.mark.parametrize("bits", [64, 2])
def test_spans_of_several_workers_group_as_one_call(domain_tables, monkeypatch, bits):
    """On the CPU a large batch is grouped in spans, one per worker thread, each with its own table, and the spans'
    groups are then joined: equal queries in different spans are still one group (searched once), different queries
    with equal hashes (2 bits: everything collides) still apart, and the results those of planning alone."""
    from goap.planners import dedupe as module

    monkeypatch.setattr(module, "_PARALLEL_ROWS", 1)  # spread even a small batch over the workers
    inner = WarpAStarPlanner(domain_tables, device="cpu", threads=3, **POOLS)
    try:
        states, goals, costs, enabled = near_duplicate_batch(domain_tables, seed=14, n=500)
        alone = inner.plan(states, goals, costs, enabled)
        dp = DedupingPlanner(inner, cache_capacity=64, hash_bits=bits)
        assert dp._parts(500) == 3 * module._SPANS_PER_WORKER
        for _ in range(2):  # the second call partly through the cache
            assert_same(dp.plan(states, goals, costs, enabled), alone)
        st = dp.stats()
        assert st["distinct"] == 2 * distinct_queries(states, goals, costs, enabled, np.arange(500))
        assert st["hits"] > 0
        # a subset with repeated rows, a count, rows left alone
        rng = np.random.default_rng(2)
        agents = rng.integers(0, 500, 300).astype(np.int32)
        out = PlanBatch.empty(500, inner.max_plan_length)
        out.expanded[:] = -3
        dp.plan(states, goals, costs, enabled, agents=agents, count=np.array([250], np.int32), out=out)
        assert_same(out, alone, rows=agents[:250])
        rest = np.setdiff1d(np.arange(500), agents[:250])
        assert (out.expanded[rest] == -3).all()
    finally:
        inner.close()


def test_each_distinct_query_searched_once_by_its_first_row(monkeypatch):
    """Which rows are searched: exactly the first row of each distinct query, in request order, however the rows
    are spread over workers (hash_bits=1 puts every query in one or two probe chains)."""
    from goap.planners import dedupe as module

    tables = encode(random_domain(seed=1, n_facts=10))
    rng = np.random.default_rng(5)
    n = 400
    states = tables.pack_states(random_problems(tables.domain, 25, seed=3).values)[rng.integers(0, 25, n)]
    goals = rng.integers(0, 2, n).astype(np.int32)
    keys = [(states[i].tobytes(), int(goals[i])) for i in range(n)]
    first = sorted({key: i for i, key in reversed(list(enumerate(keys)))}.values())
    for workers, bits in ((1, 64), (1, 1), (4, 64), (4, 1)):
        monkeypatch.setattr(module, "_PARALLEL_ROWS", 1 if workers > 1 else 1 << 30)
        echo = QueryEcho(tables)
        echo.threads = workers
        dp = DedupingPlanner(echo, hash_bits=bits)
        assert dp._parts(n) == (workers * module._SPANS_PER_WORKER if workers > 1 else 1)
        got = dp.plan(states, goals, out=wide_batch(n, np.zeros(n)))
        expected = QueryEcho(tables).plan(states, goals, agents=np.arange(n), out=wide_batch(n, np.zeros(n)))
        assert_same(got, expected)
        assert echo.planned == first, (workers, bits)
        dp.close()


@pytest.mark.parametrize("bits", [64, 3])
def test_one_thread_per_request_as_on_a_gpu(domain_tables, warp_inner, bits):
    """The GPU's sequence of kernels (keys first, then one thread per request inserting into one shared table, heads
    appended with an atomic count), run on the CPU where a launch's threads run one after another: the same groups
    and results. (Concurrent claims on a real GPU are not exercised here.)"""
    states, goals, costs, enabled = near_duplicate_batch(domain_tables, seed=16, n=500)
    alone = warp_inner.plan(states, goals, costs, enabled)
    dp = DedupingPlanner(warp_inner, cache_capacity=64, hash_bits=bits, per_row=True)
    for _ in range(2):
        assert_same(dp.plan(states, goals, costs, enabled), alone)
    st = dp.stats()
    assert st["distinct"] == 2 * distinct_queries(states, goals, costs, enabled, np.arange(500))
    assert st["hits"] > 0


@pytest.mark.parametrize("n_actions", [15, 16])
def test_cost_rows_in_any_layout(n_actions):
    """Cost rows are hashed and compared two costs a word when they line up (even A, 8-byte aligned) and one at a
    time otherwise (odd A, or rows that start 4 bytes into a buffer): the same groups, the same results, and the
    same keys, so a query cached from one layout hits from the other."""
    tables = encode(random_domain(seed=3, n_facts=14, n_actions=n_actions))
    inner = WarpAStarPlanner(tables, device="cpu", threads=1, **POOLS)
    try:
        states, goals, costs, enabled = near_duplicate_batch(tables, seed=15, n=300)
        alone = inner.plan(states, goals, costs, enabled)
        buffer = np.zeros(costs.size + 2, np.float32)
        start = 1 if buffer.ctypes.data % 8 == 0 else 2
        shifted = buffer[start : start + costs.size].reshape(costs.shape)  # rows 4 bytes past an 8-byte line
        shifted[...] = costs
        assert shifted.ctypes.data % 8 == 4 and shifted.flags.c_contiguous
        dp = DedupingPlanner(inner, cache_capacity=512)
        assert_same(dp.plan(states, goals, costs, enabled), alone)
        first = dp.stats()
        assert first["distinct"] == distinct_queries(states, goals, costs, enabled, np.arange(len(goals)))
        assert_same(dp.plan(states, goals, shifted, enabled), alone)
        second = dp.stats()
        assert second["distinct"] == 2 * first["distinct"]
        assert second["hits"] == first["inserted"] > 0
    finally:
        inner.close()


def test_cache_hits_return_the_stored_results(domain_tables, warp_inner):
    states, goals, costs, enabled = near_duplicate_batch(domain_tables, seed=7)
    alone = warp_inner.plan(states, goals, costs, enabled)
    dp = DedupingPlanner(warp_inner, cache_capacity=1024)
    first = dp.plan(states, goals, costs, enabled)
    s1 = dp.stats()
    distinct = s1["distinct"]
    cacheable = distinct - s1["uncacheable"]
    assert s1["hits"] == 0 and s1["misses"] == distinct and s1["inserted"] == cacheable == s1["entries"]
    # A second call in a batch of another shape, rows permuted: every cacheable query hits.
    perm = np.random.default_rng(0).permutation(len(goals))
    second = dp.plan(states[perm], goals[perm], costs[perm], enabled[perm])
    s2 = dp.stats()
    assert s2["hits"] == cacheable
    assert s2["misses"] - s1["misses"] == s1["uncacheable"]
    assert_same(first, alone)
    permuted = {f.name: getattr(alone, f.name) for f in dataclasses.fields(alone)}
    assert_same(second, PlanBatch(**{name: None if x is None else x[perm] for name, x in permuted.items()}))
    assert s2["hit_rate"] == pytest.approx(cacheable / (2 * distinct))
    dp.clear()
    assert dp.stats()["entries"] == 0
    dp.plan(states, goals, costs, enabled)
    assert dp.stats()["hits"] == s2["hits"]
    dp.reset_stats()
    assert all(dp.stats()[name] == 0 for name in COUNTERS)


def test_budget_results_are_not_cached(domain_tables):
    fixed = {"growth": 1} if "growth" in inspect.signature(WarpAStarPlanner).parameters else {}  # no escalation
    inner = WarpAStarPlanner(domain_tables, device="cpu", max_nodes=4, **fixed)
    states, goals, costs, enabled = near_duplicate_batch(domain_tables, seed=8)
    alone = inner.plan(states, goals, costs, enabled)
    budget = alone.status == Status.BUDGET
    assert budget.any()
    dp = DedupingPlanner(inner, cache_capacity=1024)
    dp.plan(states, goals, costs, enabled)
    s1 = dp.stats()
    n_budget = distinct_queries(states, goals, costs, enabled, np.flatnonzero(budget))
    assert s1["uncacheable"] >= n_budget
    assert_same(dp.plan(states, goals, costs, enabled), alone)
    s2 = dp.stats()
    assert s2["misses"] - s1["misses"] == s1["uncacheable"]  # searched again
    # BUDGET may be declared cacheable when budgets are fixed
    dp2 = DedupingPlanner(inner, cache_capacity=1024, cacheable=[*Status][:4])
    dp2.plan(states, goals, costs, enabled)
    assert dp2.stats()["uncacheable"] < s1["uncacheable"]
    assert_same(dp2.plan(states, goals, costs, enabled), alone)
    inner.close()


def test_capacity_bound_eviction_and_refusal(domain_tables, warp_inner):
    states, goals, costs, enabled = near_duplicate_batch(domain_tables, seed=10, n=400, pool=40)
    alone = warp_inner.plan(states, goals, costs, enabled)
    cacheable = np.isin(alone.status, [Status.OK, Status.SATISFIED, Status.NO_PLAN])
    # one row per distinct cacheable query
    _, first_rows = np.unique(np.concatenate([states.view(np.uint8), goals[:, None].view(np.uint8),
                                              costs.view(np.uint8), enabled.view(np.uint8)], axis=1),
                              axis=0, return_index=True)
    rows = np.sort(first_rows[cacheable[first_rows]])
    assert len(rows) >= 12
    a, b = rows[:4], rows[4:7]
    dp = DedupingPlanner(warp_inner, cache_capacity=4, cache_probes=4)  # the window is the whole table
    dp.plan(states, goals, costs, enabled, agents=a)
    s = dp.stats()
    assert s["inserted"] == 4 and s["entries"] == 4
    # entries hit in this call are never evicted: the three new queries are refused
    out = dp.plan(states, goals, costs, enabled, agents=np.concatenate([a, b]))
    s = dp.stats()
    assert (s["hits"], s["refused"], s["evicted"], s["entries"]) == (4, 3, 0, 4)
    assert_same(out, alone, rows=np.concatenate([a, b]))
    # the next call evicts the least recently used entries
    dp.plan(states, goals, costs, enabled, agents=b)
    s = dp.stats()
    assert (s["evicted"], s["entries"], s["inserted"]) == (3, 4, 7)
    # b hits; of a, one entry is left (ties in age go to the first slot of the window)
    out = dp.plan(states, goals, costs, enabled, agents=np.concatenate([b, a]))
    s2 = dp.stats()
    assert (s2["hits"] - s["hits"], s2["misses"] - s["misses"]) == (4, 3)
    assert_same(out, alone, rows=np.concatenate([b, a]))
    # a large batch through a tiny cache: never more entries than its capacity, results exact
    big = DedupingPlanner(warp_inner, cache_capacity=8)
    for _ in range(3):
        assert_same(big.plan(states, goals, costs, enabled), alone)
        assert big.stats()["entries"] <= 8
    assert big.cache_bytes > 0


def test_goal_table_is_part_of_the_key(domain_tables, warp_inner):
    states, goals, costs, enabled = near_duplicate_batch(domain_tables, seed=12, n=200)
    other = domain_tables.encode_goals(tuple(reversed(domain_tables.domain.goals)))
    dp = DedupingPlanner(warp_inner, cache_capacity=512)
    dp.plan(states, goals, costs, enabled)
    got = dp.plan(states, goals, costs, enabled, goal_table=other)
    assert_same(got, warp_inner.plan(states, goals, costs, enabled, goal_table=other))
    assert dp.stats()["hits"] == 0


def test_reference_inner_matches_reference_alone():
    tables = encode(random_domain(seed=2, n_facts=14))
    ref = ReferencePlanner(tables, max_nodes=200)
    states, goals, costs, enabled = near_duplicate_batch(tables, seed=2, n=120, pool=8)
    rows = np.arange(len(goals))
    alone = PlanBatch.empty(len(goals), ref.max_plan_length)
    for i in rows:  # one search per call: literally each agent alone
        ref.plan(states, goals, costs, enabled, agents=[i], out=alone)
    dp = DedupingPlanner(ref, cache_capacity=64)
    assert_same(dp.plan(states, goals, costs, enabled), alone)
    assert_same(dp.plan(states, goals, costs, enabled), alone)
    assert dp.stats()["hits"] > 0


# --- a planner whose result is a known function of the query: every field, and the level it reads --------------
@dataclasses.dataclass
class WideBatch(PlanBatch):
    """A batch with fields a planner may gain: int8 level (read and written) and a float64 extra."""

    level: np.ndarray = None
    extra: np.ndarray = None


class QueryEcho:
    """Writes a digest of each row's query into every field; counts the rows it was asked to plan."""

    name = "echo"
    max_nodes = 1
    max_plan_length = 3

    def __init__(self, tables):
        self.tables = tables
        self.domain = tables.domain
        self.planned: list[int] = []

    def plan(self, states, goals, costs=None, enabled=None, *, goal_table=None, agents=None, count=None, out=None):
        states, goals, costs, enabled, agents = (
            x.numpy() if hasattr(x, "numpy") else x for x in (states, goals, costs, enabled, agents)
        )
        if count is not None:
            agents = agents[: int(count.numpy()[0])]
        for i in agents:
            d = int(states[i].sum() % 1000) + 7 * int(goals[i]) + 13 * int(out.level[i])
            if costs is not None:
                d += int(np.asarray(costs[i], dtype=np.float64).sum() * 1000)
            if enabled is not None:
                d += 3 * int(np.asarray(enabled[i]).sum())
            out.status[i] = d % 3
            out.cost[i] = d / 7.0
            out.length[i] = d % 4
            out.actions[i] = [d, d + 1, d + 2]
            out.expanded[i] = d
            out.extra[i] = d * 0.5
            out.level[i] = out.level[i] + 1
        self.planned.extend(int(i) for i in agents)
        return out


def wide_batch(n: int, level: np.ndarray) -> WideBatch:
    base = PlanBatch.empty(n, 3)
    fields = {f: getattr(base, f) for f in FIELDS}
    return WideBatch(**fields, level=level.astype(np.int8), extra=np.zeros(n, np.float64))


def test_every_field_copied_and_level_is_part_of_the_key():
    tables = encode(random_domain(seed=1, n_facts=10))
    echo = QueryEcho(tables)
    rng = np.random.default_rng(0)
    n = 90
    states = tables.pack_states(random_problems(tables.domain, 3, seed=0).values)[rng.integers(0, 3, n)]
    goals = np.zeros(n, np.int32)
    level = rng.integers(0, 2, n)
    expected = QueryEcho(tables).plan(states, goals, agents=np.arange(n), out=wide_batch(n, level))
    dp = DedupingPlanner(echo, cache_capacity=16, cacheable=[0, 1, 2])
    got = dp.plan(states, goals, out=wide_batch(n, level))
    assert_same(got, expected)
    assert len(echo.planned) == len({(states[i].tobytes(), level[i]) for i in range(n)}) <= 6
    # level written by the search is not mistaken for the level read: a cached hit needs the same input level
    again = dp.plan(states, goals, out=wide_batch(n, level))
    assert_same(again, expected)
    assert len(echo.planned) <= 6  # all hits


def test_device_arrays_in_and_out():
    import warp as wp

    tables = encode(random_domain(seed=1, n_facts=10))
    n = 40
    states = tables.pack_states(random_problems(tables.domain, 4, seed=1).values)[np.arange(n) % 4]
    goals = np.zeros(n, np.int32)
    host = wide_batch(n, np.zeros(n))
    expected = QueryEcho(tables).plan(states, goals, agents=np.arange(n), out=wide_batch(n, np.zeros(n)))
    dev = WideBatch(**{f.name: wp.array(getattr(host, f.name), device="cpu") for f in dataclasses.fields(host)})

    class DeviceEcho(QueryEcho):
        def plan(self, states, goals, costs=None, enabled=None, *, out=None, **kw):
            view = WideBatch(**{f.name: getattr(out, f.name).numpy() for f in dataclasses.fields(out)})
            return super().plan(states, goals, out=view, **kw)

    dp = DedupingPlanner(DeviceEcho(tables))
    dp.plan(wp.array(states, dtype=wp.uint64, device="cpu"), wp.array(goals, dtype=wp.int32, device="cpu"), out=dev)
    assert_same(WideBatch(**{f.name: getattr(dev, f.name).numpy() for f in dataclasses.fields(dev)}), expected)
    assert len(dp.inner.planned) == len({row.tobytes() for row in states})
    with pytest.raises(ValueError, match="goals must be a Warp array of int32"):
        dp.plan(wp.array(states, dtype=wp.uint64, device="cpu"), wp.array(goals, dtype=wp.int64, device="cpu"))


def test_options_are_checked_and_wrap(domain_tables, warp_inner):
    for bad in (dict(cache_capacity=-1), dict(cache_probes=0), dict(hash_bits=0), dict(hash_bits=65),
                dict(cacheable=[Status.NOT_PLANNED]), dict(cache_capacity=1.5)):
        with pytest.raises(ValueError):
            DedupingPlanner(warp_inner, **bad)
    assert wrap(warp_inner, dedupe=False) is warp_inner
    wrapped = wrap(warp_inner, plan_cache=64)
    assert isinstance(wrapped, DedupingPlanner) and wrapped.cache_capacity == 64
    assert wrapped.max_nodes == warp_inner.max_nodes and wrapped.bytes_per_agent() == warp_inner.bytes_per_agent()
    with pytest.raises(ValueError, match="cache_capacity"):
        wrap(warp_inner, plan_cache=1.5)
    from goap.planners import make_planner

    made = make_planner("warp", domain_tables, device="cpu", dedupe=True, plan_cache=32, **POOLS)
    assert isinstance(made, DedupingPlanner) and made.cache_capacity == 32
    assert made.inner.max_nodes == POOLS["max_nodes"]
    assert isinstance(make_planner("reference", domain_tables, dedupe=True).inner, ReferencePlanner)
    assert not isinstance(make_planner("warp", domain_tables, device="cpu", dedupe=False), DedupingPlanner)


def test_bad_input_refused_before_anything_is_written(domain_tables, warp_inner):
    states, goals, costs, enabled = near_duplicate_batch(domain_tables, seed=13, n=200)
    dp = DedupingPlanner(warp_inner, cache_capacity=256)
    dp.plan(states, goals, costs, enabled)  # the cache now answers most rows
    bad_costs = costs.copy()
    bad_costs[7, 0] = np.nan
    bad_goals = goals.copy()
    bad_goals[9] = domain_tables.goals.n_goals
    for args, match in (((states, goals, bad_costs, enabled), "costs"), ((states, bad_goals, costs, enabled), "goal")):
        out = PlanBatch.empty(len(goals), warp_inner.max_plan_length)
        with pytest.raises(ValueError, match=match):
            dp.plan(*args, out=out)
        assert (np.asarray(out.status) == Status.NOT_PLANNED).all()
    with pytest.raises(ValueError, match="agent indices"):
        dp.plan(states, goals, costs, enabled, agents=[0, len(goals)])
    with pytest.raises(ValueError, match="states must have shape"):
        dp.plan(states[:, :0], goals)


def test_brain_runs_the_same_with_the_wrapper():
    """A world run through the Brain with dedupe and a cache ends in the same state as without (same seed)."""
    from goap.runtime import Brain
    from worlds import make_world

    hashes, stats = [], None
    for wrapped in (False, True):
        world = make_world("soldier")
        brain = Brain(world.domain, 300, world=world, seed=3, plan_budget=100)
        if wrapped:
            brain.planner = DedupingPlanner(brain.planner, cache_capacity=512)
        for _ in range(25):
            brain.tick()
        hashes.append(brain.state_hash())
        if wrapped:
            stats = brain.planner.stats()
    assert hashes[0] == hashes[1]
    assert stats["requests"] > 0 and stats["distinct"] < stats["requests"]


def test_group_tag_wraps_round_on_the_device():
    """Once in 2**31 calls the group tables' tag would come round to values slots still hold: `start_call` then
    empties the tables and counts from 1 again, on the device (a captured call has no host counter to do it)."""
    import warp as wp

    from goap.kernels import dedupe as k

    r = k.Requests()
    r.agents, r.count = wp.zeros(1, dtype=wp.int32), wp.zeros(1, dtype=wp.int32)
    r.use_agents, r.has_count, r.n = 0, 0, 5
    for tag, cleared in ((int(k.EPOCH_LIMIT) - 1, False), (int(k.EPOCH_LIMIT), True)):
        epoch = wp.array([7, tag], dtype=wp.int32)
        table, join = wp.full(16, 12345, dtype=wp.uint64), wp.full(4, 9, dtype=wp.uint64)
        n_heads, n_miss = wp.full(2, 3, dtype=wp.int32), wp.full(1, 4, dtype=wp.int32)
        counters = wp.zeros(len(COUNTERS), dtype=wp.int64)
        wp.launch(k.start_call, dim=1, inputs=[r, epoch, n_heads, n_miss, counters, table, join])
        np.testing.assert_array_equal(epoch.numpy(), [8, 1 if cleared else tag + 1])
        assert (table.numpy() == (0 if cleared else 12345)).all() and (join.numpy() == (0 if cleared else 9)).all()
        assert not n_heads.numpy().any() and not n_miss.numpy().any()
        assert counters.numpy()[COUNTERS.index("calls")] == 1 and counters.numpy()[COUNTERS.index("requests")] == 5

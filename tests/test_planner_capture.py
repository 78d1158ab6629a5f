"""Plan calls captured as graphs and replayed: on the CPU, the proof of the planners' GPU path.

A call is captured once (`goap.launch.Launcher.capture`: on the CPU the launches are recorded, not run), then new
inputs are written into the same device arrays (states, goals, costs, enabled, the request queue and its count)
and the graph replayed. Each replay must equal, bit for bit, a plain call on the same inputs (the host-sized path,
made by the same planner in between, so the two paths also share their buffers), and the reference planner on every
field (the oracle). Node pools are small so that searches escalate, and a bound on escalated work defers some rows.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from goap.bench.random_domains import random_domain, random_problems
from goap.encoding import encode
from goap.launch import CaptureError, Launcher, capturing
from goap.planners.base import DEFAULT_MAX_PLAN_LENGTH, PlanBatch, Status
from goap.planners.dedupe import DedupingPlanner
from goap.planners.reference import ReferencePlanner
from goap.planners.warp_astar import WarpAStarPlanner, WarpGreedyPlanner, WarpWeightedAStarPlanner

DEVICE = os.environ.get("GOAP_TEST_DEVICE", "cpu")
FIELDS = ("status", "cost", "length", "actions", "expanded", "level", "expanded_before_last_f")
POOLS = {"max_nodes": 16, "growth": 4, "node_ceiling": 1024}
N, CAPACITY = 96, 80  # agents, and the request queue's length (the count is below it)


@pytest.fixture(scope="module")
def tables():
    """One-word states of bools and bounded ints (20 facts), two-word states (70 facts)."""
    return {1: encode(random_domain(31, 20, int_fraction=0.3)), 2: encode(random_domain(9, 70, int_fraction=0.3))}


class Call:
    """The device arrays of one plan call, allocated once (as a brain's are) and refilled between replays."""

    def __init__(self, tables, max_plan_length: int):
        import warp as wp

        self.wp, self.tables = wp, tables
        W, A = tables.n_words, tables.n_actions
        self.states = wp.zeros((N, W), dtype=wp.uint64, device=DEVICE)
        self.goals = wp.zeros(N, dtype=wp.int32, device=DEVICE)
        self.costs = wp.zeros((N, A), dtype=wp.float32, device=DEVICE)
        self.enabled = wp.zeros((N, A), dtype=wp.bool, device=DEVICE)
        self.ids = wp.zeros(CAPACITY, dtype=wp.int32, device=DEVICE)
        self.count = wp.zeros(1, dtype=wp.int32, device=DEVICE)
        self.out = PlanBatch.on_device(N, max_plan_length, DEVICE)
        self.host: dict = {}

    def fill(self, seed: int, count: int, repeats: int = 0, order: int | None = None) -> None:
        """New inputs in the same arrays; a fresh ``out`` (every row NOT_PLANNED at level 0). ``repeats``: draw the
        agents' states and goals from that many distinct problems, so that queries repeat. ``order``: another seed
        for the request queue's order (the same agents and queries, requested in another order)."""
        rng = np.random.default_rng(seed)
        t = self.tables
        problems = random_problems(t.domain, repeats or N, seed=seed)
        pick = rng.integers(0, repeats, N) if repeats else np.arange(N)
        A = t.n_actions
        costs = (rng.integers(0, 33, size=(N, A)) / 4).astype(np.float32)
        enabled = rng.random((N, A)) < 0.9
        if repeats:  # repeated queries: the same cost and enabled rows for the same problem
            costs, enabled = costs[pick % repeats], enabled[pick % repeats]
        self.host = {
            "states": t.pack_states(problems.values)[pick], "goals": problems.goals[pick].astype(np.int32),
            "costs": costs, "enabled": enabled,
            "ids": np.random.default_rng(seed if order is None else order).permutation(N)[:CAPACITY].astype(np.int32),
            "count": np.array([count], dtype=np.int32),
        }
        for name, x in self.host.items():
            getattr(self, name).assign(x)
        self.reset()

    def reset(self) -> None:
        o = self.out
        o.status.fill_(int(Status.NOT_PLANNED))
        o.cost.fill_(float("nan"))
        o.length.zero_()
        o.actions.fill_(-1)
        o.expanded.zero_()
        o.level.zero_()
        o.expanded_before_last_f.zero_()

    def plan(self, planner, bound=None, defaults=False, inner=False):
        target = planner.inner if inner else planner
        costs, enabled = (None, None) if defaults else (self.costs, self.enabled)
        return target.plan(self.states, self.goals, costs, enabled, agents=self.ids, count=self.count, out=self.out,
                           max_escalated_nodes=bound)

    def results(self) -> dict[str, np.ndarray]:
        b = self.out.numpy()
        return {name: np.array(getattr(b, name), copy=True) for name in FIELDS}

    def reference(self, ref: ReferencePlanner, bound=None, defaults=False) -> dict[str, np.ndarray]:
        h = self.host
        out = PlanBatch.empty(N, ref.max_plan_length)
        ref.plan(h["states"], h["goals"], None if defaults else h["costs"], None if defaults else h["enabled"],
                 agents=h["ids"][: int(h["count"][0])], out=out, max_escalated_nodes=bound)
        return {name: getattr(out, name) for name in FIELDS}


def assert_same(got: dict, want: dict, what: str) -> None:
    for name in FIELDS:
        np.testing.assert_array_equal(got[name], want[name], err_msg=f"{what}: {name}")


def capture(planner, fn):
    return Launcher(planner.device).capture(fn, "plan")


def replay_rounds(planner, call: Call, ref: ReferencePlanner, bound, defaults=False, inner=False, repeats=0):
    """Capture once, then per round: new inputs, replay, the same inputs planned plainly, the reference."""
    graph = capture(planner, lambda: call.plan(planner, bound, defaults, inner))
    assert not capturing(planner.device)
    seen = set()
    for seed, count in ((1, CAPACITY - 17), (2, 0), (3, CAPACITY), (4, 23)):
        call.fill(seed, count, repeats)
        Launcher(planner.device).replay(graph)
        replayed = call.results()
        call.reset()
        call.plan(planner, bound, defaults, inner)
        assert_same(replayed, call.results(), f"round {seed}: replay against a plain call")
        assert_same(replayed, call.reference(ref, bound, defaults), f"round {seed}: replay against the reference")
        planned = call.host["ids"][:count]
        assert (replayed["status"][np.setdiff1d(np.arange(N), planned)] == Status.NOT_PLANNED).all()
        seen |= set(replayed["status"][planned].tolist())
        if bound is None or count == 0:
            continue
        assert (replayed["level"][planned] > 0).any(), "some searches must escalate"
    return seen


@pytest.mark.parametrize("layout", ["auto", "per_thread"])
@pytest.mark.parametrize("bound", [None, 40, 160])  # 40: the first escalated search overdraws the budget
@pytest.mark.parametrize("words", [1, 2])
def test_captured_astar_equals_plain_calls_and_the_reference(tables, words, bound, layout):
    t = tables[words]
    fast = WarpAStarPlanner(t, heuristic="hmax_depth1", device=DEVICE, scratch_layout=layout, **POOLS)
    ref = ReferencePlanner(t, heuristic="hmax_depth1", **POOLS)
    fast.reserve(CAPACITY, max_escalated_nodes=bound)
    seen = replay_rounds(fast, Call(t, fast.max_plan_length), ref, bound)
    assert Status.BUDGET in seen and len(seen) >= 2, seen  # BUDGET: deferred (bounded) or final at the ceiling
    print("SEEN", words, bound, layout, sorted(seen))
    assert Status.OK in seen or bound == 40, seen  # (one escalated search a call: none of them ends OK)


@pytest.mark.parametrize("heuristic", ["hmax", "hmax_depth2", "lmcut", "pdb"])
def test_captured_astar_with_every_heuristic_and_the_domain_costs(tables, heuristic):
    t = tables[1]
    fast = WarpAStarPlanner(t, heuristic=heuristic, device=DEVICE, **POOLS)
    ref = ReferencePlanner(t, heuristic=heuristic, **POOLS)
    fast.reserve(CAPACITY)
    replay_rounds(fast, Call(t, fast.max_plan_length), ref, 300, defaults=True)


@pytest.mark.parametrize("kind", ["greedy", "weighted"])
def test_captured_greedy_and_weighted_planners(tables, kind):
    t = tables[1]
    cls, options = (WarpGreedyPlanner, {"greedy": True}) if kind == "greedy" else (
        WarpWeightedAStarPlanner, {"weight": 2.0})
    fast = cls(t, heuristic="hmax_depth2", device=DEVICE, scratch_layout="per_thread", **POOLS)
    ref = ReferencePlanner(t, heuristic="hmax_depth2", **options, **POOLS)
    fast.reserve(CAPACITY, max_escalated_nodes=200)
    replay_rounds(fast, Call(t, fast.max_plan_length), ref, 200)


@pytest.mark.parametrize(("mode", "per_row", "bound"), [
    ("dedupe", False, None), ("dedupe", True, 200), ("cache", False, 200), ("cache", True, None), ("off", False, 200),
])
def test_captured_grouping_planner(tables, mode, per_row, bound):
    """Dedupe on (repeated queries), with the plan cache (replays hit what earlier replays stored), and off (the
    brain then plans with ``.inner``): replays equal a twin planner's plain calls, counters included, and the
    reference (unbounded calls, or every row searched: with a bound, grouping defers other rows than planning
    each row does, since equal queries spend the budget once); the group tables' tag wraps round meanwhile."""
    from goap.kernels.dedupe import EPOCH_LIMIT

    t = tables[1]

    inner = mode == "off"
    call = Call(t, DEFAULT_MAX_PLAN_LENGTH)

    def grouping():
        planner = DedupingPlanner(WarpAStarPlanner(t, heuristic="hmax_depth1", device=DEVICE, **POOLS),
                                  cache_capacity=64 if mode == "cache" else 0, per_row=per_row)
        planner.reserve(CAPACITY)
        for _ in range(2):  # plain calls leave tags 1 and 2 in the group tables, for all 80 requests in another order
            call.fill(6, CAPACITY, repeats=12, order=99)
            call.plan(planner, bound, inner=inner)
        epoch = planner._epoch.numpy()  # the tag comes round to 1 at the second replay: the tables are emptied
        planner._epoch.assign(np.array([epoch[0], int(EPOCH_LIMIT) - 1], dtype=np.int32))
        return planner

    captured, plain = grouping(), grouping()
    ref = ReferencePlanner(t, heuristic="hmax_depth1", **POOLS)
    graph = capture(captured, lambda: call.plan(captured, bound, inner=inner))
    for seed, count in ((6, 40), (6, 40), (5, CAPACITY - 9), (7, CAPACITY), (6, 40)):
        call.fill(seed, count, repeats=12)
        Launcher(captured.device).replay(graph)
        replayed = call.results()
        call.reset()
        call.plan(plain, bound, inner=inner)
        assert_same(replayed, call.results(), f"round {seed}: replay against a twin's plain call")
        if bound is None or inner:
            assert_same(replayed, call.reference(ref, bound), f"round {seed}: replay against the reference")
    got, want = captured.stats(), plain.stats()
    assert got == want
    if inner:
        assert got["calls"] == 0
        return
    assert got["calls"] == 7 and got["distinct"] < got["requests"]
    if mode == "cache":
        assert got["hits"] > 0 and got["inserted"] > 0


def test_capture_without_reserve_raises_and_reserve_fixes_it(tables):
    """The choice made: `reserve` is explicit. A capture that would allocate a buffer raises CaptureError naming
    reserve (and leaves no capture open); after `reserve` the same capture works. Outside capture, plan allocates
    on first use (on a GPU its first call does: the same device path)."""
    t = tables[1]
    for grouping in (False, True):
        fast = WarpAStarPlanner(t, device=DEVICE, scratch_layout="per_thread", **POOLS)
        planner = DedupingPlanner(fast, cache_capacity=32) if grouping else fast
        call = Call(t, planner.max_plan_length)
        call.fill(8, CAPACITY)
        with pytest.raises(CaptureError, match=r"reserve\(capacity\)"):
            capture(planner, lambda p=planner, c=call: c.plan(p, 200))
        assert not capturing(planner.device)
        planner.reserve(CAPACITY)
        graph = capture(planner, lambda p=planner, c=call: c.plan(p, 200))
        Launcher(planner.device).replay(graph)
        replayed = call.results()
        call.reset()
        call.plan(fast, 200)
        assert_same(replayed, call.results(), "after reserve")


def test_capture_refuses_host_data_and_a_goal_table_it_has_not_seen(tables):
    import warp as wp

    t = tables[1]
    fast = WarpAStarPlanner(t, device=DEVICE, **POOLS)
    fast.reserve(CAPACITY)
    call = Call(t, fast.max_plan_length)
    call.fill(9, CAPACITY)
    host_states = call.host["states"]
    with pytest.raises(CaptureError, match="host data given for states"):
        capture(fast, lambda: fast.plan(host_states, call.goals, agents=call.ids, count=call.count, out=call.out))
    with pytest.raises(CaptureError, match="out"):
        capture(fast, lambda: fast.plan(call.states, call.goals, agents=call.ids, count=call.count))
    other = t.encode_goals(tuple(reversed(t.domain.goals)))
    with pytest.raises(CaptureError, match="goal_tables"):
        capture(fast, lambda: fast.plan(call.states, call.goals, goal_table=other, agents=call.ids,
                                        count=call.count, out=call.out))
    fast.reserve(CAPACITY, goal_tables=(other,))
    graph = capture(fast, lambda: fast.plan(call.states, call.goals, goal_table=other, agents=call.ids,
                                            count=call.count, out=call.out))
    wp.capture_launch(graph)
    replayed = call.results()
    call.reset()
    fast.plan(call.states, call.goals, goal_table=other, agents=call.ids, count=call.count, out=call.out)
    assert_same(replayed, call.results(), "ad-hoc goal table")
    with pytest.raises(CaptureError, match="before the capture"):
        capture(fast, lambda: fast.reserve(CAPACITY))


@pytest.mark.parametrize("grouping", [False, True])
def test_host_calls_that_grow_the_buffers_leave_a_captured_graph_intact(tables, grouping):
    """A plain call larger than what was reserved allocates larger buffers: the ones a graph captured are kept
    (their addresses are baked into it), so replaying it still gives the plain call's results."""
    t = tables[1]
    fast = WarpAStarPlanner(t, heuristic="hmax_depth1", device=DEVICE, scratch_layout="per_thread", **POOLS)
    planner = DedupingPlanner(fast) if grouping else fast
    planner.reserve(CAPACITY)
    call = Call(t, planner.max_plan_length)
    graph = capture(planner, lambda: call.plan(planner, 200))
    held = fast.scratch_bytes
    problems = random_problems(t.domain, 3000, seed=12)
    big = planner.plan(t.pack_states(problems.values), problems.goals, max_escalated_nodes=200)
    assert Status.OK in set(big.status.tolist())
    assert fast.scratch_bytes > held  # larger sets now, the captured ones kept beside them
    call.fill(13, CAPACITY - 5, repeats=20 if grouping else 0)
    Launcher(planner.device).replay(graph)
    replayed = call.results()
    call.reset()
    call.plan(planner, 200)
    assert_same(replayed, call.results(), "replay after a larger plain call")

"""The batched Warp A* planner (registered as ``warp``): every agent searches in its own thread.

A call runs in waves. The first wave covers every requested agent with the level-0 pool (``max_nodes`` states).
Agents whose pool filled up are then searched again, level by level, with pools ``growth`` times larger and as many
agents at once as the other half of ``max_scratch_bytes`` holds (found, compacted and counted on the device).
``max_escalated_nodes`` bounds that escalated work per call; what is left is deferred (BUDGET below the last
level; see `goap.planners.base`). Each launch is recorded once and replayed (see `WarpAStarPlanner._recorded`).

Two paths, the same results (status, cost, length, actions, expanded, level), chosen by `goap.launch.host_sized`:

* **Host-sized** (the CPU outside a graph capture, where a Warp launch is a serial loop on one core that releases
  the GIL and reading a device array is free): the first wave in chunks over the shared worker pool
  (`goap.launch.run_parallel`), the searches of a chunk one after another in one scratch row of their worker (which
  stays in cache); ``count`` and the rows waiting at each level are read on the host, so launches cover exactly
  the rows to search.
* **Device** (a GPU, or any device while a graph is being captured, `goap.launch.capturing`): nothing is read from
  or copied to the host; launches are sized by capacities (the ``agents`` array, the level's slots), ``count`` is
  read on the device, every escalation level is launched for its fixed dimensions (threads past the rows granted
  return at once), and the call's counters and budget are reset by memsets and a kernel. On the CPU under capture
  each wave is one launch whose searches share one scratch row; ``scratch_layout="per_thread"`` gives the GPU's
  layout there (one row per thread) so that it runs on the CPU too.

A capture must not allocate what its replays read: `WarpAStarPlanner.reserve` allocates every buffer the device
path needs for a capacity, and `plan` under capture raises `goap.launch.CaptureError` naming it when something is
missing. Outside capture the buffers are allocated on first use (on a GPU by the first call: its device path is the
same with or without a capture); once a device-path call or `reserve` has used a buffer it is never freed while the
planner lives (a graph may hold its address), only set aside when a larger one replaces it.

Scratch per search (bytes) for a pool of M states: `goap.encoding.scratch_bytes_per_agent` (about 8 W + 36 bytes
per state; 45 KB at the default M = 1024 with one-word states). The first pool is held per worker thread on the
CPU, per agent of a wave on a GPU (or with ``scratch_layout="per_thread"``). The escalated levels share one arena
(they run one after another): a level-l search holds ``growth**l`` times the first pool's scratch, for few searches
at a time. ``max_scratch_bytes`` is a hard cap on the scratch one path holds: a first pool that does not fit in half
of it is refused when the planner is made, and levels whose single search would not fit in the other half are
dropped (``n_levels`` says how many remain).

Escalation continues, it does not start over: a search whose pool fills up is kept (its nodes, open list, counters
and the action it stopped at: a `goap.kernels.astar.Carry` slot per search, ``carry_bytes`` in all), and the next
level's search of that row takes it up where it stopped, in the larger pool, with the hash table rebuilt. A pool's
size changes nothing in a search until it is full, so the result is exactly that of a fresh search in the larger
pool (statuses, costs, plans, expansions and levels as the reference planner's), without redoing the smaller
pool's work. Slots are sized by the rows a level may grant and by a quarter of the first pool's half of the cap
(taken from it); searches past the slots, and rows deferred to a later call, start over as before.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import time
import warnings
from typing import Any

import numpy as np

from goap.domain import Domain
from goap.encoding import HMAX_BUCKETS, DomainTables, GoalTables, encode, hash_size, scratch_bytes_per_agent
from goap.kernels import init_warp
from goap.launch import CaptureError, Launcher, capturing, cpu_pool, host_sized, run_parallel
from goap.planners.base import (
    DEFAULT_GROWTH,
    DEFAULT_HEURISTIC,
    DEFAULT_LMCUT_TIES,
    DEFAULT_LMCUT_ZONE_TIES,
    DEFAULT_MAX_NODES,
    DEFAULT_MAX_PLAN_LENGTH,
    DEFAULT_MAX_SCRATCH_BYTES,
    DEFAULT_NODE_CEILING,
    MAX_LMCUT_HEURISTICS,
    PDB_HEURISTICS,
    SCP_HEURISTICS,
    PlanBatch,
    check_capturable,
    check_inputs,
    check_lmcut_ties_heuristic,
    check_lmcut_zone_heuristic,
    check_options,
    check_types,
    condition_tables,
    heuristic_name,
    host_view,
    lmcut_ties_code,
    lmcut_zone_code,
    pool_levels,
    pop_limit,
    relevance,
)
from goap.planners.pdb import DEFAULT_PDB_STATES, check_pdb_states, pattern_tables
from goap.planners.scp import (
    DEFAULT_SCP_ORDERS,
    candidate_tables,
    check_scp_orders,
    device_orders,
    partition_tables,
)
from goap.planners.stubborn import (
    DEFAULT_MIN_PRUNING_RATIO,
    DEFAULT_PRUNING,
    DEFAULT_PRUNING_CHECK_AFTER,
    check_pruning,
    distinct_preconditions,
    stubborn_tables,
)

__all__ = [
    "SCRATCH_LAYOUTS", "WarpAStarPlanner", "WarpGreedyPlanner", "WarpWeightedAStarPlanner", "scratch_bytes_per_agent",
]

_RESULT_FIELDS = (("status", "int8"), ("cost", "float64"), ("length", "int32"), ("actions", "int32"),
                  ("expanded", "int32"), ("level", "int8"), ("expanded_before_last_f", "int32"))

#: Scratch layouts: "auto" is the device's own (on the CPU the searches of a launch share one row of their worker's
#: set, on a GPU one row per thread); "per_thread" forces one row per thread on the CPU too, the GPU's layout, so
#: that tests run the GPU's exact sequence of launches and scratch rows there.
SCRATCH_LAYOUTS = ("auto", "per_thread")
#: The least search work (seconds, by the planner's running estimate) worth a span of its own on the CPU worker
#: pool: handing a span to another thread costs tens of microseconds.
SPAN_SECONDS = 300e-6


class WarpAStarPlanner:
    """A* for N agents at once on a Warp device; the same results as `ReferencePlanner`, node for node.

    Args:
        domain: the domain (or its tables).
        max_nodes: the first node pool (level 0): states one search may store before it escalates.
        max_plan_length: the longest plan returned whole; a longer optimal plan gives TOO_LONG and its first steps.
        device: a Warp device ("cpu", "cuda:0"); the default device when None.
        threads: CPU worker threads (default: the number of cores), taken from the shared pool
            (`goap.launch.cpu_pool`).
        chunk_size: agents per CPU launch (default: about 4 chunks a thread, 16..512 agents each, each worth a
            hand-off to another thread by the last calls' cost a search: `SPAN_SECONDS`).
        max_scratch_bytes: hard cap on the search scratch held at once, all threads and levels together (4 GiB).
        weight: order the open list by g + weight * h: plans cost at most weight x optimal, found faster.
        greedy: order the open list by h alone (greedy best-first): fastest, no bound on the cost.
        heuristic: "hmax_depth2" (default), "pdb", "scp", "lmcut", "hmax", "hmax_depth1", "max_lmcut_pdb" or
            "max_lmcut_scp": see `goap.planners.reference`.
        growth: pool growth per escalation level (1: no escalation).
        node_ceiling: the largest pool (default 2**25 states, at least ``max_nodes``).
        max_escalated_nodes: default per-call bound on escalated work (pool states summed over the escalated
            searches run); None: escalate until every search ends. `plan` takes it per call too.
        scratch_layout: one of `SCRATCH_LAYOUTS` ("per_thread": the GPU's layout on the CPU).
        pdb_states: with ``heuristic="pdb"`` or ``"scp"`` (and their max with LM-cut), the abstract states per
            goal, all its patterns together (see `goap.planners.pdb`); the tables are built on the device once per
            goal table.
        scp_orders: with ``heuristic="scp"`` / ``"max_lmcut_scp"``, the orders of the saturated cost partitioning
            per goal, h the max over them (1..4, `goap.planners.scp`).
        lmcut_ties: LM-cut's pcf among equal maxima (with the heuristics that run LM-cut): "highest" (default),
            "stable", "max" of the two values, or (with ``heuristic="lmcut"``) "auto": both on a search's first
            states, then the one that won there (`goap.planners.base.LMCUT_TIES`, `LMCUT_TIES_AUTO`).
        lmcut_zone_ties: LM-cut's goal-zone tie rule for zero-cost actions' pcfs, on by default
            (`goap.planners.base.DEFAULT_LMCUT_ZONE_TIES`); ``"max"``: the larger of LM-cut with and without it;
            ``"auto"``: both on a search's first states, then the one that won there
            (`goap.planners.base.LMCUT_ZONE_AUTO`).
        pruning: "none" (default) or "stubborn": strong stubborn sets (`goap.planners.stubborn`), computed per
            expanded state in the kernel (`goap.kernels.stubborn`); optimal costs kept, the reference's nodes.
        pruning_min_ratio / pruning_check_after: a search switches pruning off when, after that many expansions,
            it pruned less than that share of the applicable actions (Fast Downward's ``limited_pruning``).
    """

    name = "warp"

    def __init__(
        self,
        domain: Domain | DomainTables,
        max_nodes: int = DEFAULT_MAX_NODES,
        max_plan_length: int = DEFAULT_MAX_PLAN_LENGTH,
        device: str | None = None,
        threads: int | None = None,
        chunk_size: int | None = None,
        max_scratch_bytes: int = DEFAULT_MAX_SCRATCH_BYTES,
        weight: float = 1.0,
        greedy: bool = False,
        heuristic: str = DEFAULT_HEURISTIC,
        growth: int = DEFAULT_GROWTH,
        node_ceiling: int | None = None,
        max_escalated_nodes: int | None = None,
        scratch_layout: str = "auto",
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
        self.pdb_states = check_pdb_states(pdb_states)
        self.scp_orders = check_scp_orders(scp_orders)
        self.lmcut_ties = check_lmcut_ties_heuristic(lmcut_ties, heuristic)
        self.lmcut_zone_ties = check_lmcut_zone_heuristic(lmcut_zone_ties, heuristic)
        if scratch_layout not in SCRATCH_LAYOUTS:
            raise ValueError(f"scratch_layout must be one of {', '.join(SCRATCH_LAYOUTS)}, got {scratch_layout!r}")
        wp = init_warp()
        from goap.kernels import astar
        from goap.kernels.semantics import DomainTables as DomainStruct
        from goap.kernels.semantics import to_device

        self._k = astar
        self.heuristic = heuristic
        self.weight = float(weight)
        self.greedy = bool(greedy)
        self.tables = domain if isinstance(domain, DomainTables) else encode(domain)
        self.domain = self.tables.domain
        self.max_nodes = int(max_nodes)
        self.max_plan_length = int(max_plan_length)
        self.max_escalated_nodes = max_escalated_nodes
        try:
            self.device = wp.get_device(device)
        except (ValueError, RuntimeError) as e:
            raise ValueError(f"unknown or unavailable Warp device {device!r}: {e}") from None
        self.threads = max(1, int(threads or os.cpu_count() or 1)) if self.device.is_cpu else 1
        self.chunk_size = chunk_size
        self.max_scratch_bytes = int(max_scratch_bytes)
        self.scratch_layout = scratch_layout
        self._wp = wp
        self._conds = condition_tables(self.tables)
        self._stubborn = None  # the stubborn-set tables (pruning "stubborn"), on the host
        if self.pruning == "stubborn":
            self._stubborn = stubborn_tables(self.domain, distinct_preconditions(self.domain))
            if self._stubborn.refused:
                warnings.warn(self._stubborn.refused, stacklevel=2)
                self.pruning, self._stubborn = "none", None

        # Levels: the first pool must fit in half the cap (for one agent), each escalated pool in the other half.
        ceiling = max(self.max_nodes, DEFAULT_NODE_CEILING) if node_ceiling is None else int(node_ceiling)
        half = self.max_scratch_bytes // 2
        first = self.bytes_per_agent(self.max_nodes)
        if first > half:
            raise ValueError(
                f"max_nodes={self.max_nodes:,} needs {first:,} bytes of scratch for one search, more than half of "
                f"max_scratch_bytes={self.max_scratch_bytes:,} (the first pool's share); lower max_nodes or raise "
                f"max_scratch_bytes"
            )
        self._first_bytes = first
        self._room = self.max_scratch_bytes - half  # the escalated levels' share
        # The kept searches' share (see the module docstring), taken from the first pool's half.
        self._carry_room = max(0, min(half // 4, half - first))
        self._half0 = half - self._carry_room
        self.pools = [p for p in pool_levels(self.max_nodes, int(growth), ceiling)
                      if p == self.max_nodes or self.bytes_per_agent(p) <= self._room]

        dev = self.device
        self.kernel = astar.astar_kernel(self.tables.n_words, bool(self.tables.has_terms), bool(self.tables.typed),
                                         self._stubborn is not None)
        self.launcher = Launcher(dev, threads=self.threads)
        if self.threads > 1:
            cpu_pool(self.threads)  # the shared pool, grown to this planner's threads
        # The searches of a CPU launch run one after another, so they share one scratch row (row_step 0); a GPU's
        # threads run at once, one row each (row_step 1): see plan_astar.
        self._row_step = 0 if dev.is_cpu and scratch_layout == "auto" else 1
        self._dt = to_device(self.tables, DomainStruct, dev)
        self._ct = to_device(self._conds, astar.ConditionTables, dev)
        self._ct.lm_stable = lmcut_ties_code(self.lmcut_ties)
        self._ct.lm_zone = lmcut_zone_code(self.lmcut_zone_ties)
        self._goal_structs: dict[int, tuple[GoalTables, Any]] = {}
        #: Seconds spent building heuristic tables (the pattern databases of each goal table, once per table).
        self.table_seconds = 0.0
        # The pruning struct of each scratch set (its marks, one row per scratch row), by the set's id: (set, struct).
        self._prunings: dict[int, tuple[Any, Any]] = {}
        self._pruning_tables = self._no_pruning = None
        self._no_pruning = self._pruning_struct(0)
        self._no_patterns: Any = None  # the pattern struct of every heuristic but pdb and scp (never read)
        self._sets: list[Any] = []  # level-0 scratch sets (one per CPU worker), each of _set_rows rows
        self._set_rows = 0
        self._arena: Any = None  # the escalated levels' shared scratch (bytes), and views of it by (level, rows)
        self._views: dict[tuple[int, int], Any] = {}
        self._kept: list[Any] = []  # buffers replaced after a device-path call used them: a graph may read them
        self._kept_bytes = 0
        self._pinned = False  # set by the first device-path call or `reserve`
        self._dummy_costs = wp.zeros((1, 1), dtype=wp.float32, device=dev)
        self._dummy_enabled = wp.zeros((1, 1), dtype=wp.bool, device=dev)
        self._dummy_ids = wp.zeros(1, dtype=wp.int32, device=dev)
        self._count = wp.zeros(1, dtype=wp.int32, device=dev)
        self._pending = wp.zeros(1, dtype=wp.int32, device=dev)
        self._granted = wp.zeros(1, dtype=wp.int32, device=dev)
        self._budget = wp.zeros(2, dtype=wp.int64, device=dev)
        cpu = dev.is_cpu  # host views for the host-sized path (zero-copy, made once here: never under capture)
        self._count_view = self._count.numpy() if cpu else None
        self._pending_view = self._pending.numpy() if cpu else None
        self._granted_view = self._granted.numpy() if cpu else None
        self._budget_view = self._budget.numpy() if cpu else None
        self._wrapped: dict[tuple, tuple[np.ndarray, Any]] = {}  # zero-copy wrappers of host arrays (CPU)
        self._results_cache: tuple[tuple, Any, Any] | None = None
        self._compact: tuple[int, Any, Any, Any] | None = None  # (capacity, flags, offsets, rows)
        self._launches: dict[tuple, list] = {}  # see _recorded
        self._calls = 0  # plan calls so far: a recorded launch is checked once per call
        self._search_seconds: float | None = None  # first-pool seconds a query, host-sized calls (_first_wave)
        self._query = astar.Query()
        self._level_query = astar.Query()
        self._searches = [self._search_struct(lv) for lv in range(self.n_levels)]
        # Kept searches: per level, the Carry its searches keep into and the one they continue from (level 0
        # continues nothing, the last level keeps nothing); one slot_of over the rows, taken counters per level.
        self._carry_held = 0
        self._carry_rows = 0  # rows slot_of covers
        self._carry_slots = [0] * self.n_levels
        # Concurrent CPU launches (the workers') do not share Warp's atomics safely: each worker takes slots from its
        # own lane (a counter and a share of the slots); a GPU's launches run one at a time, in one lane.
        self._lanes = self.threads if dev.is_cpu else 1
        self._taken = wp.zeros(max(1, self.n_levels) * self._lanes, dtype=wp.int32, device=dev)
        self._taken_view = self._taken.numpy() if cpu else None
        self._no_carry = self._carry_struct(None, 0, 0)
        self._keeps = self._carry_keeps = [self._no_carry] * self.n_levels  # this call's, and those allocated
        self._resumes = self._carry_resumes = [self._no_carry] * self.n_levels
        self._goal_struct(self.tables.goals)  # the domain's own goal table: ready for any call, captured ones too

    # --- public ---------------------------------------------------------------------------------------------
    @property
    def n_levels(self) -> int:
        """Pool levels a search may climb through (level ``n_levels - 1`` has the largest pool)."""
        return len(self.pools)

    def bytes_per_agent(self, pool: int | None = None) -> int:
        """Scratch one search holds with ``pool`` states (default: the first pool, ``max_nodes``)."""
        t = self.tables
        return scratch_bytes_per_agent(
            t.n_words, self.max_nodes if pool is None else pool, t.n_actions, t.relaxed.n_pre, self.max_plan_length,
            len(self.domain.facts), self._conds.n_conditions, self.heuristic,
        ) + self._pruning_row_bytes()

    @property
    def scratch_bytes(self) -> int:
        """Device memory held by search scratch now: the level-0 sets and the escalated levels' arena (and buffers
        kept for graphs captured before they were replaced)."""
        held = len(self._sets) * self._set_rows * self._row_bytes(self.max_nodes)
        held += 0 if self._arena is None else self._arena.capacity
        held += sum(pr.act_mark.shape[0] for _, pr in self._prunings.values()) * self._pruning_row_bytes()
        return held + self._kept_bytes + self.carry_bytes

    @property
    def carry_bytes(self) -> int:
        """Device memory held for searches kept across levels (see the module docstring)."""
        return self._carry_held

    def load(self) -> None:
        """Compile or load the kernel modules now rather than on the first call."""
        self._wp.load_module(self.kernel.module, device=self.device)
        self._wp.load_module(self._k.select_level.module, device=self.device)

    def reserve(
        self, capacity: int, *, max_escalated_nodes: int | None = None, goal_tables: tuple[GoalTables, ...] = (),
    ) -> None:
        """Allocate every buffer the device path needs for calls of up to ``capacity`` requested rows, so that such a
        call can be captured (`goap.launch.Launcher.capture`): a capture may not allocate what its replays read.

        Call it outside any capture. ``max_escalated_nodes``: the bound the captured calls pass (escalated waves
        bounded by it need fewer scratch rows; None, the planner's default or unbounded, reserves for the most).
        ``goal_tables``: ad-hoc goal tables the captured calls pass (the domain's own is made with the planner). Also
        loads the kernel modules. Buffers reserved are never freed while the planner lives.
        """
        if capturing(self.device):
            raise CaptureError("reserve() allocates: call it before the capture, not inside it")
        capacity = int(capacity)
        self.load()
        self._pinned = True
        for table in goal_tables:
            self._goal_struct(table)
        if capacity <= 0:
            return
        self._level0_sets(self._device_rows0(capacity), 1)
        if self.n_levels > 1:
            self._compaction(capacity)
            self._carries(capacity, capacity, self.max_escalated_nodes if max_escalated_nodes is None
                          else max_escalated_nodes)
            bound = self.max_escalated_nodes if max_escalated_nodes is None else max_escalated_nodes
            rows = {lv: self._device_level_rows(lv, capacity, bound) for lv in range(1, self.n_levels)}
            # One arena for the largest level's need, host-sized calls on the CPU included (at most a row per
            # worker there), so that no later call replaces it.
            host = {lv: min(self.threads, self._level_fit(lv)) if self.device.is_cpu else 0 for lv in rows}
            need = max(self._row_bytes(self.pools[lv]) * max(rows[lv], host[lv]) for lv in rows)
            self._ensure_arena(need, "escalated scratch")
            for lv, r in rows.items():
                self._level_scratch(lv, r)

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
        """Plan for every agent (or those in ``agents``, or ``agents[:count[0]]``); see `goap.planners.base`.

        Inputs may be numpy arrays (zero-copy on the CPU) or Warp arrays on this planner's device; with Warp
        arrays and a batch from `PlanBatch.on_device`, rows are written in place and nothing is copied to the host
        (``count`` may then be a device array, so a device-side request queue needs no readback). Under a graph
        capture every input and ``out`` must be Warp arrays on the device, and the buffers must have been
        reserved (`reserve`); the call is then recorded, not run (see the module docstring).
        """
        wp = self._wp
        host = host_sized(self.device)
        if capturing(self.device):
            check_capturable(wp, states=states, goals=goals, costs=costs, enabled=enabled, types=types,
                              agents=agents, count=count, out=out)
        goal_table = goal_table or self.tables.goals
        if isinstance(states, wp.array):
            _check_device_inputs(self.tables, states, goals, costs, enabled, agents, types)
        else:
            states, goals, costs, enabled, agents = check_inputs(
                self.tables, goal_table, states, goals, costs, enabled, agents, host_view(types)
            )
            types = check_types(self.tables, host_view(types), states.shape[0], agents)
        n = states.shape[0]
        out = out if out is not None else PlanBatch.empty(n, self.max_plan_length)
        if tuple(out.actions.shape) != (n, self.max_plan_length):
            raise ValueError(f"out.actions must have shape [{n}, {self.max_plan_length}], got {out.actions.shape}")
        capacity = n if agents is None else int(agents.shape[0])
        if capacity == 0:
            return out
        bound = self.max_escalated_nodes if max_escalated_nodes is None else max_escalated_nodes
        if not host:
            self._pinned = True
        self._calls += 1

        dev, k = self.device, self._k
        q = self._query
        _assign(q, "states", self._to_device(states, wp.uint64))
        _assign(q, "goals", self._to_device(goals, wp.int32))
        _assign(q, "costs", self._dummy_costs if costs is None else self._to_device(costs, wp.float32))
        _assign(q, "has_costs", int(costs is not None))
        _assign(q, "enabled", self._dummy_enabled if enabled is None else self._to_device(enabled, wp.bool))
        _assign(q, "has_enabled", int(enabled is not None))
        _assign(q, "ids", self._dummy_ids if agents is None else self._to_device(agents, wp.int32))
        _assign(q, "use_ids", int(agents is not None))
        _assign(q, "types", self._dummy_ids if types is None else self._to_device(types, wp.int32))
        _assign(q, "has_types", int(types is not None))
        if count is None:
            if host:
                self._count_view[0] = capacity
            else:
                self._count.fill_(capacity)
            _assign(q, "count", self._count)
        else:
            count = self._to_device(count, wp.int32)
            _assign(q, "count", count)
            if host:  # host memory: size the launches by the rows requested, not by the whole ids array
                capacity = max(0, min(capacity, int(count.numpy()[0])))
                if capacity == 0:
                    return out
        gt, rel, pt = self._goal_struct(goal_table)
        results, copy_back = self._results(out)
        if host:
            self._pending_view[0] = 0
        else:
            self._pending.zero_()

        def launch(qs: Any, first: int, rows: int, lv: int, sc: Any, scratch_first: int, lane: int = 0) -> None:
            entry = self._recorded(qs, lv, sc, scratch_first, gt, rel, results, pt)
            cmd = entry[0]
            cmd.set_param_at_index_from_ctype(1, first)
            # Searches sharing a scratch row run one after another anyway: one thread takes them all, so that the
            # arguments are copied once (see plan_astar); one row per thread: one query per thread.
            threads, per = (1, rows) if self._row_step == 0 else (rows, 1)
            if entry[7] != per:
                cmd.set_param_at_index_from_ctype(2, per)
                entry[7] = per
            if entry[10] != lane:  # the worker's own carry slots and counter (see Carry)
                cmd.set_param_at_index_from_ctype(15, lane)
                entry[10] = lane
            if entry[5] != threads:  # set_dim rebuilds the launch bounds: only when the thread count changes
                cmd.set_dim(threads)
                entry[5] = threads
            cmd.launch()

        if self.n_levels > 1:  # searches kept across levels: slots for this call, none taken yet
            self._carries(capacity, n, bound)
            if host:
                self._taken_view[:] = 0
            else:
                self._taken.zero_()

        # Wave 0: every requested row, first pool.
        started = time.perf_counter()
        self._first_wave(lambda first, rows, sc, sf, lane=0: launch(q, first, rows, 0, sc, sf, lane), capacity, host)
        if host:  # what a first-pool search costs here, to size the next calls' spans (see _first_wave)
            per = (time.perf_counter() - started) / capacity
            self._search_seconds = per if self._search_seconds is None else 0.5 * (self._search_seconds + per)

        # Escalated waves: rows whose pool filled up (or that arrived at a higher level), level by level.
        if self.n_levels > 1 and (not host or int(self._pending_view[0]) > 0):
            if host:
                self._budget_view[0], self._budget_view[1] = (0 if bound is None else int(bound)), 0
            else:
                wp.launch(k.start_budget, dim=1, inputs=[self._budget, wp.int64(0 if bound is None else int(bound))],
                          device=dev)
            flags, offsets, rows_at = self._compaction(capacity)
            lq = self._level_query
            lq.states, lq.goals, lq.costs, lq.has_costs = q.states, q.goals, q.costs, q.has_costs
            lq.enabled, lq.has_enabled = q.enabled, q.has_enabled
            lq.types, lq.has_types = q.types, q.has_types
            lq.ids, lq.use_ids, lq.count = rows_at, 1, self._granted
            for lv in range(1, self.n_levels):
                pool = self.pools[lv]
                slots = self._level_slots(lv, capacity, bound)
                wp.launch(k.select_level, dim=capacity, inputs=[q, results, lv, flags], device=dev)
                wp.utils.array_scan(flags, offsets, inclusive=False)
                wp.launch(k.compact_level, dim=capacity, inputs=[q, flags, offsets, rows_at], device=dev)
                wp.launch(k.grant_level, dim=1, device=dev,
                          inputs=[flags, offsets, capacity, pool, slots if bound is not None else capacity,
                                  int(bound is not None), self._budget, self._granted])

                def run(first: int, rows: int, sc: Any, sf: int, lane: int = 0, lv: int = lv) -> None:
                    launch(lq, first, rows, lv, sc, sf, lane)

                if host:
                    granted = int(self._granted_view[0])
                    if granted:
                        self._escalate_host(run, lv, granted, slots)
                else:
                    self._escalate_device(run, lv, capacity if bound is None else slots, slots)
        copy_back()
        return out

    def close(self) -> None:
        """Nothing to stop: the planner has no threads of its own (the CPU worker pool is shared). Kept for the
        planner protocol; the planner stays usable."""

    # --- the waves ------------------------------------------------------------------------------------------
    def _first_wave(self, run_span: Any, rows: int, host: bool) -> None:
        """Wave 0 over ``rows`` requested rows: CPU chunks over the shared pool, each worker with its own scratch
        set (host-sized), or fixed waves within the cap on the device path."""
        half = self._half0
        per = self._first_bytes
        if host:
            # Spans of work for the pool: about four a worker, 16..512 queries each, and worth a hand-off to
            # another thread (at least SPAN_SECONDS of search, by the last calls' cost a search: a call with a few
            # dozen easy queries runs on the calling thread alone, one with as many deep ones is shared).
            least = 16 if self._search_seconds is None else math.ceil(SPAN_SECONDS / max(self._search_seconds, 1e-9))
            chunk = self.chunk_size or min(512, max(16, least, -(-rows // (4 * self.threads))))
            chunk = max(1, min(chunk, rows))
            if self._row_step:  # one row per thread: a chunk's set must fit in the first pool's share
                chunk = max(1, min(chunk, half // per))
            set_rows = chunk if self._row_step else 1
            spans = [(s, min(chunk, rows - s)) for s in range(0, rows, chunk)]
            workers = max(1, min(self.threads, half // (set_rows * per), len(spans)))
            sets = self._level0_sets(set_rows, workers)
            if workers == 1:
                for first, n in spans:
                    run_span(first, n, sets[0], 0)
                return
            taken = itertools.count()  # next() is atomic under the GIL: each span is taken once

            def work(sc: Any, lane: int) -> None:
                i = next(taken)
                while i < len(spans):
                    run_span(spans[i][0], spans[i][1], sc, 0, lane)
                    i = next(taken)

            run_parallel([functools.partial(work, sc, lane) for lane, sc in enumerate(sets)])
            return
        sc = self._level0_sets(self._device_rows0(rows), 1)[0]
        wave = rows if self._row_step == 0 else self._device_rows0(rows)
        for first in range(0, rows, wave):
            run_span(first, min(wave, rows - first), sc, 0)

    def _escalate_host(self, run: Any, lv: int, searches: int, slots: int) -> None:
        """``searches`` granted rows of level ``lv`` (read on the host) in waves of ``slots``, each split across the
        CPU workers: with a shared row per worker, part k in row k; one row per thread, part k from its first row."""
        fit = self._level_fit(lv)
        if self._row_step == 0:
            parts = max(1, min(self.threads, searches, fit))
            sc = self._level_scratch(lv, parts)
            step = math.ceil(searches / parts)
            run_parallel([functools.partial(run, s, min(step, searches - s), sc, k, k)
                          for k, s in enumerate(range(0, searches, step))])
            return
        wave = max(1, min(slots, searches))
        sc = self._level_scratch(lv, wave)
        for start in range(0, searches, wave):
            span = min(wave, searches - start)
            step = math.ceil(span / max(1, min(self.threads, span)))
            run_parallel([functools.partial(run, start + s, min(step, span - s), sc, s, lane)
                          for lane, s in enumerate(range(0, span, step))])

    def _escalate_device(self, run: Any, lv: int, threads: int, slots: int) -> None:
        """Level ``lv`` for fixed dimensions: ``threads`` (the slots granted at most, or every requested row when
        the call is unbounded) in launches of ``slots``; threads past the rows granted return at once."""
        sc = self._level_scratch(lv, 1 if self._row_step == 0 else slots)
        for start in range(0, threads, slots):
            run(start, min(slots, threads - start), sc, 0)

    def _level_fit(self, lv: int) -> int:
        """Searches of level ``lv`` the escalated share of the cap holds at once (at least one: see `pools`)."""
        return max(1, self._room // self.bytes_per_agent(self.pools[lv]))

    def _level_slots(self, lv: int, capacity: int, bound: int | None) -> int:
        """The most searches one wave of level ``lv`` may be granted: all rows when the searches of a launch share a
        scratch row, else as many as fit in the cap; and within the call's bound (at least one)."""
        slots = capacity if self._row_step == 0 else min(capacity, self._level_fit(lv))
        if bound is not None:
            slots = min(slots, max(1, int(bound) // self.pools[lv]))
        return max(1, slots)

    def _device_rows0(self, capacity: int) -> int:
        """Level-0 scratch rows of the device path: one shared row (CPU), or one per thread of a wave in the cap."""
        if self._row_step == 0:
            return 1
        return max(1, min(capacity, self._half0 // self._first_bytes))

    def _device_level_rows(self, lv: int, capacity: int, bound: int | None) -> int:
        return 1 if self._row_step == 0 else self._level_slots(lv, capacity, bound)

    # --- recorded launches -----------------------------------------------------------------------------------
    def _recorded(
        self, qs: Any, lv: int, sc: Any, scratch_first: int, gt: Any, rel: Any, results: Any, pt: Any
    ) -> list:
        """The search kernel's launch for this query struct, level, scratch set and scratch row, recorded once
        (``[launch, its inputs as recorded, goal struct, relevance, results, thread count, call checked in,
        queries per thread, keep, resume, lane, pattern tables]``).

        Packing the kernel's seventeen arguments (the table structs hold dozens of arrays) is most of a small call's
        cost; a recorded launch is replayed with only ``first``, the queries per thread and the thread count set.
        The recording itself is `goap.launch.Launcher.recorded`'s (under its lock, recorded again when Warp has
        reloaded the module), keyed by the inputs the entry was first made with, and asked once per call (Warp
        reloads a module only when one is loaded, not in the middle of a call); a goal table or result struct of
        another identity only re-packs that argument. Structs are passed by reference to their C image, so later
        field changes (``_assign``) show through. One entry per scratch set and row: two CPU workers never share
        one.
        """
        key = (id(qs), lv, id(sc), scratch_first)
        entry = self._launches.get(key)
        if entry is None:
            if len(self._launches) >= 256:
                self._launches.clear()
            inputs = [qs, 0, 1, scratch_first, self._row_step, self._dt, gt, self._ct, rel, self._searches[lv], sc,
                      results, self._pending, self._keeps[lv], self._resumes[lv], 0, pt,
                      self._prunings.get(id(sc), (None, self._no_pruning))[1]]
            entry = self._launches[key] = [None, inputs, gt, rel, results, 1, 0, 1, inputs[13], inputs[14], 0, pt]
        if entry[6] != self._calls:
            entry[6] = self._calls
            cmd = self.launcher.recorded(self.kernel, entry[1])
            if cmd is not entry[0]:  # recorded just now: with the entry's first inputs, for one thread
                inputs = entry[1]
                entry[0], entry[2], entry[3], entry[4], entry[5], entry[7] = cmd, inputs[6], inputs[8], inputs[11], 1, 1
                entry[8], entry[9], entry[10], entry[11] = inputs[13], inputs[14], 0, inputs[16]
        cmd = entry[0]
        for index, slot, value in ((6, 2, gt), (8, 3, rel), (11, 4, results), (13, 8, self._keeps[lv]),
                                   (14, 9, self._resumes[lv]), (16, 11, pt)):
            if entry[slot] is not value:
                cmd.set_param_at_index(index, value)
                entry[slot] = value
        return entry

    # --- buffers --------------------------------------------------------------------------------------------
    def _allocating(self, what: str) -> None:
        """Refuse an allocation inside a capture (the graph would replay a memset, or read memory it never
        filled): the caller should have reserved it."""
        if capturing(self.device):
            raise CaptureError(
                f"plan() under capture needs {what}, not allocated yet: call reserve(capacity) on the planner before "
                f"capturing (a captured call may not allocate what its replays read)"
            )

    def _keep(self, buffers: list[Any], nbytes: int) -> None:
        """Buffers being replaced (``nbytes`` in all): kept alive when a device-path call may have captured their
        addresses; their recorded launches are dropped either way."""
        if not buffers:
            return
        ids = {id(b) for b in buffers}
        self._launches = {key: e for key, e in self._launches.items() if id(e[1][10]) not in ids}
        prunings = [self._prunings.pop(i) for i in ids if i in self._prunings]
        if self._pinned:
            self._kept.extend(buffers)
            self._kept.extend(prunings)
            self._kept_bytes += nbytes + sum(pr.act_mark.shape[0] for _, pr in prunings) * self._pruning_row_bytes()

    def _level0_sets(self, rows: int, count: int) -> list[Any]:
        """``count`` level-0 scratch sets of at least ``rows`` rows (grown, never shrunk)."""
        if rows > self._set_rows or count > len(self._sets):
            self._allocating(f"{count} level-0 scratch set(s) of {rows} row(s)")
            if rows > self._set_rows:
                self._keep(self._sets, len(self._sets) * self._set_rows * self._row_bytes(self.max_nodes))
                self._sets, self._set_rows = [], rows
            while len(self._sets) < count:
                self._sets.append(self._new_scratch(self._set_rows, self.max_nodes))
        return self._sets[:count]

    def _level_scratch(self, lv: int, rows: int) -> Any:
        """A scratch set of ``rows`` rows with level ``lv``'s pool, over the escalated levels' shared arena.

        The levels of a call run one after another, so one arena serves them all: the cap holds for the largest
        level alone, not their sum. A view's hash tables may hold another level's data; the kernel empties a row's
        table before its first escalated search of a launch (see plan_astar).
        """
        key = (lv, rows)
        sc = self._views.get(key)
        if sc is not None:
            return sc
        specs = self._scratch_specs(rows, self.pools[lv])
        self._ensure_arena(sum(_spec_bytes(s) for s in specs),
                           f"escalated scratch for {rows} search(es) of {self.pools[lv]:,} states (level {lv})")
        wp, arena = self._wp, self._arena
        s = self._k.Scratch()
        offset = 0
        for name, shape, dtype in specs:  # 8-byte fields first, so every field is aligned with no padding
            size = _spec_bytes((name, shape, dtype))
            setattr(s, name, wp.array(ptr=arena.ptr + offset, dtype=dtype, shape=shape, capacity=size,
                                      device=self.device))
            offset += size
        self._views[key] = s
        if self._stubborn is not None:
            self._prunings[id(s)] = (s, self._pruning_struct(rows))
        return s

    def _ensure_arena(self, need: int, what: str) -> None:
        """The escalated levels' arena of at least ``need`` bytes (a larger one replaces it, with its views)."""
        if self._arena is not None and self._arena.capacity >= need:
            return
        self._allocating(what)
        old = [] if self._arena is None else [self._arena, *self._views.values()]
        self._keep(old, 0 if self._arena is None else self._arena.capacity)
        self._arena = self._wp.empty(need, dtype=self._wp.uint8, device=self.device)
        self._views = {}

    def _row_bytes(self, pool: int) -> int:
        return sum(_spec_bytes(s) for s in self._scratch_specs(1, pool))

    def _scratch_specs(self, rows: int, pool: int) -> list[tuple[str, tuple[int, ...], Any]]:
        """The Scratch struct's arrays for ``rows`` searches with ``pool`` states: (name, shape, dtype), 8-byte
        types first; arrays the heuristic does not read take one element per row."""
        wp, W, m = self._wp, self.tables.n_words, pool
        A = max(1, self.tables.n_actions)
        C = max(1, self._conds.n_conditions)
        lm = self.heuristic == "lmcut" or self.heuristic in MAX_LMCUT_HEURISTICS  # only what the heuristic reads
        hmax, depth2 = lm or self.heuristic == "hmax", self.heuristic == "hmax_depth2"
        return [
            ("node_state", (rows * (m + 1), W), wp.uint64),
            ("node_g", (rows, m), wp.float64),
            ("node_h", (rows, m), wp.float64),
            ("act_cost", (rows, A), wp.float64),
            ("act_h", (rows, A if hmax else 1), wp.float64),
            ("pre_cost", (rows, max(1, self.tables.relaxed.n_pre) if depth2 else 1), wp.float64),
            ("cond_h", (rows, C if hmax else 1), wp.float64),
            ("act_rc", (rows, A if lm else 1), wp.float64),
            ("reached", (rows, max(1, len(self.domain.facts))), wp.uint64),
            ("node_parent", (rows, m), wp.int32),
            ("node_pos", (rows, m), wp.int32),
            ("heap", (rows, m), wp.int32),
            ("table", (rows, hash_size(m)), wp.int32),
            ("cond_heap", (rows, C if hmax else 1), wp.int32),
            ("cond_pos", (rows, C if hmax else 1), wp.int32),
            ("act_left", (rows, A if hmax else 1), wp.int32),
            ("act_pcf", (rows, A if lm else 1), wp.int32),
            ("act_pcf0", (rows, A if lm else 1), wp.int32),
            ("act_round", (rows, A if lm else 1), wp.int32),
            ("act_mark", (rows, A if lm else 1), wp.int32),
            ("cond_mark", (rows, C if lm else 1), wp.int32),
            ("cond_list", (rows, C if lm else 1), wp.int32),
            ("cond_child", (rows, C if lm else 1), wp.int32),
            ("act_next", (rows, A if lm else 1), wp.int32),
            ("act_prev", (rows, A if lm else 1), wp.int32),
            ("bucket", (rows, HMAX_BUCKETS + 1 if hmax else 1), wp.int32),
            ("cond_prev", (rows, C if hmax else 1), wp.int32),
        ]

    def _new_scratch(self, rows: int, pool: int) -> Any:
        """A level-0 scratch set: its own arrays, the hash tables empty (-1), as every search leaves them."""
        wp, dev = self._wp, self.device
        s = self._k.Scratch()
        for name, shape, dtype in self._scratch_specs(rows, pool):
            arr = wp.full(shape, -1, dtype=dtype, device=dev) if name == "table" else wp.empty(
                shape, dtype=dtype, device=dev)
            setattr(s, name, arr)
        if self._stubborn is not None:
            self._prunings[id(s)] = (s, self._pruning_struct(rows))
        return s

    def _pruning_row_bytes(self) -> int:
        """Bytes of stubborn-set marks one scratch row holds (`goap.kernels.stubborn`; 0 without pruning)."""
        st = self._stubborn
        if st is None:
            return 0
        return 4 * (2 * self.tables.n_actions + 2 * st.n_keys + 3 * self._conds.n_conditions + 4 * st.n_facts + 1)

    def _pruning_struct(self, rows: int) -> Any:
        """The pruning of a scratch set of ``rows`` rows: the tables and zeroed marks (``rows`` 0: pruning off, one
        element per array, never read)."""
        from goap.kernels import stubborn as ks
        from goap.kernels.semantics import to_device

        wp, dev = self._wp, self.device
        pr = ks.Pruning()
        st = self._stubborn
        on = st is not None and rows > 0
        pr.on = int(on)
        pr.min_ratio = self.pruning_min_ratio
        pr.check_after = self.pruning_check_after
        if on and self._pruning_tables is None:
            self._pruning_tables = to_device(st, ks.StubbornTables, dev)
        if not on and self._no_pruning is not None:
            return self._no_pruning
        pr.tables = self._pruning_tables if on else to_device(
            stubborn_tables(self.domain, [], limit=-1), ks.StubbornTables, dev)
        n = max(1, rows)
        A, K, C, F = self.tables.n_actions, st.n_keys if on else 1, self._conds.n_conditions, st.n_facts if on else 1
        sizes = {"act_mark": A, "queue": A, "key_mark": K, "key_walk": K, "cond_mark": C, "cond_walk": C,
                 "cond_ach": C, "fact_mark": F, "fact_all": F, "fact_but": F, "fact_but_key": F}
        for name, size in sizes.items():
            setattr(pr, name, wp.zeros((n, max(1, size) if on else 1), dtype=wp.int32, device=dev))
        pr.epoch = wp.zeros(n, dtype=wp.int32, device=dev)
        return pr

    def _carry_slot_bytes(self, lv: int) -> int:
        """Bytes one kept search of level ``lv`` takes: its pool's states, g, h, parent, position and heap."""
        pool = self.pools[lv]
        return pool * (8 * self.tables.n_words + 8 + 8 + 4 + 4 + 4) + self._k.CARRY_HEAD * 4 + 8

    def _carries(self, capacity: int, rows: int, bound: int | None) -> None:
        """Carry slots for a call of ``capacity`` requested rows over ``rows`` state rows: per level below the last,
        as many as the next level may grant (`_level_slots`) within that level's part of the carry share (grown,
        never shrunk)."""
        levels = self.n_levels - 1
        share = self._carry_room // max(1, levels)
        want = [min(self._level_slots(lv + 1, capacity, bound), share // self._carry_slot_bytes(lv))
                for lv in range(levels)]
        grow = rows > self._carry_rows or any(w > have for w, have in zip(want, self._carry_slots, strict=False))
        if grow and capturing(self.device):
            # Not reserved for this many rows: this call keeps nothing (its results are the same; escalated
            # searches start over), rather than allocate inside the capture.
            self._keeps = self._resumes = [self._no_carry] * self.n_levels
            return
        self._keeps, self._resumes = self._carry_keeps, self._carry_resumes
        if not grow:
            return
        old = [c for c in self._carry_keeps if c is not self._no_carry]
        self._keep(old, 0)
        if old and self._pinned:
            self._kept_bytes += self._carry_held
        wp, dev = self._wp, self.device
        n_rows = max(rows, self._carry_rows, 1)
        slot_of = wp.full(n_rows, -1, dtype=wp.int32, device=dev)
        slots = [max(w, have) for w, have in zip(want, self._carry_slots, strict=False)]
        held = 4 * n_rows
        keeps = []
        for lv in range(levels):
            c = self._carry_struct(slot_of, lv, slots[lv])
            held += 0 if slots[lv] == 0 else slots[lv] * self._carry_slot_bytes(lv)
            keeps.append(c)
        self._carry_rows, self._carry_slots, self._carry_held = n_rows, slots + [0], held
        self._keeps = self._carry_keeps = keeps + [self._no_carry]
        self._resumes = self._carry_resumes = [self._no_carry] + keeps

    def _carry_struct(self, slot_of: Any, lv: int, slots: int) -> Any:
        """A Carry of ``slots`` kept searches of level ``lv`` (arrays of one element when it keeps none)."""
        wp, dev = self._wp, self.device
        c = self._k.Carry()
        pool = self.pools[lv] if slots else 1
        k = max(1, slots)
        c.state = wp.empty((k * pool, self.tables.n_words), dtype=wp.uint64, device=dev)
        for name, dtype in (("g", wp.float64), ("h", wp.float64), ("parent", wp.int32), ("pos", wp.int32),
                            ("heap", wp.int32)):
            setattr(c, name, wp.empty((k, pool), dtype=dtype, device=dev))
        c.head = wp.empty((k, self._k.CARRY_HEAD), dtype=wp.int32, device=dev)
        c.top = wp.empty(k, dtype=wp.float64, device=dev)
        c.slot_of = slot_of if slot_of is not None else wp.full(1, -1, dtype=wp.int32, device=dev)
        c.taken = self._taken
        c.level = lv
        c.slots = slots
        c.lanes = self._lanes
        c.lane_slots = slots // self._lanes
        c.pool = pool
        return c

    def _compaction(self, capacity: int) -> tuple[Any, Any, Any]:
        if self._compact is None or self._compact[0] < capacity:
            self._allocating(f"the escalation's compaction arrays for {capacity} rows")
            wp, dev = self._wp, self.device
            if self._compact is not None:
                self._keep(list(self._compact[1:]), 12 * self._compact[0])
            self._compact = (capacity, wp.zeros(capacity, dtype=wp.int32, device=dev),
                             wp.zeros(capacity, dtype=wp.int32, device=dev),
                             wp.zeros(capacity, dtype=wp.int32, device=dev))
        _, flags, offsets, rows = self._compact
        if flags.shape[0] != capacity:
            return flags[:capacity], offsets[:capacity], rows
        return flags, offsets, rows

    def _search_struct(self, lv: int) -> Any:
        s = self._k.Search()
        s.level = lv
        s.last_level = self.n_levels - 1
        s.entry = int(lv == 0)
        s.pool = self.pools[lv]
        s.hash_mask = hash_size(self.pools[lv]) - 1
        s.weight = self.weight
        s.greedy = int(self.greedy)
        s.heuristic = self._k.HEURISTIC_CODES[self.heuristic]
        s.reopen = int(self.weight == 1.0 and not self.greedy)
        s.max_pops = pop_limit(self.pools[lv])
        return s

    # --- inputs and results ---------------------------------------------------------------------------------
    def _to_device(self, x: Any, dtype: Any) -> Any:
        wp = self._wp
        if isinstance(x, wp.array):
            if x.device != self.device:
                raise ValueError(f"array on {x.device} given to a planner on {self.device}")
            if x.dtype != dtype:
                if dtype is wp.bool and x.dtype == wp.uint8:
                    return wp.array(ptr=x.ptr, dtype=wp.bool, shape=x.shape, device=x.device, strides=x.strides)
                raise ValueError(f"expected a Warp array of {dtype.__name__}, got {x.dtype.__name__}")
            return x
        return self._wrap(np.ascontiguousarray(x), dtype)

    def _wrap(self, x: np.ndarray, dtype: Any) -> Any:
        """A Warp array over a host array: zero-copy on the CPU, remembered so that a caller passing the same
        arrays every call (a game loop) pays for no wrapping; a copy on a GPU."""
        wp = self._wp
        if not self.device.is_cpu:
            return wp.array(x, dtype=dtype, device=self.device)
        key = (x.__array_interface__["data"][0], x.shape, x.dtype.str, dtype)
        hit = self._wrapped.get(key)
        if hit is not None:
            return hit[1]
        if len(self._wrapped) >= 32:  # a small bound: the entries keep their host arrays alive
            self._wrapped.clear()
        arr = wp.array(x, dtype=dtype, device=self.device, copy=False)
        self._wrapped[key] = (x, arr)  # holding x keeps its memory, so the address cannot be reused meanwhile
        return arr

    def _results(self, out: PlanBatch) -> tuple[Any, Any]:
        """The Results struct over ``out``'s fields, and what copies device rows back into a host batch."""
        key = tuple(id(getattr(out, name)) for name, _ in _RESULT_FIELDS)
        if self._results_cache is not None and self._results_cache[0] == key and self.device.is_cpu:
            return self._results_cache[1], _nothing
        wp = self._wp
        r = self._k.Results()
        host: list[tuple[np.ndarray, Any]] = []
        for name, dtype in _RESULT_FIELDS:
            arr = getattr(out, name)
            wtype = getattr(wp, dtype)
            if arr is None:  # an optional field the batch does not keep: an empty array, never written
                setattr(r, name, wp.zeros(0, dtype=wtype, device=self.device))
                continue
            if isinstance(arr, wp.array):
                if arr.device != self.device or arr.dtype != wtype:
                    raise ValueError(f"out.{name} must be a {dtype} array on {self.device}")
                d = arr
            else:
                if arr.dtype != np.dtype(dtype) or not arr.flags.c_contiguous:
                    raise ValueError(f"out.{name} must be a contiguous {dtype} array")
                d = wp.array(arr, dtype=wtype, device=self.device, copy=not self.device.is_cpu)
                if not self.device.is_cpu:
                    host.append((arr, d))
            setattr(r, name, d)

        def copy_back() -> None:
            for arr, d in host:
                arr[...] = d.numpy()

        # Keep the batch's arrays (so their ids stay theirs) with the struct, for the next call with this batch.
        self._results_cache = (key, r, [getattr(out, name) for name, _ in _RESULT_FIELDS])
        return r, copy_back

    def _goal_struct(self, gt: GoalTables) -> Any:
        cached = self._goal_structs.get(id(gt))
        if cached is not None and cached[0] is gt:
            return cached[1]
        if capturing(self.device):
            raise CaptureError(
                "plan() under capture got a goal table whose device copy is not made yet: pass it to "
                "reserve(capacity, goal_tables=(table,)) before capturing"
            )
        from goap.kernels.semantics import GoalTables as GoalStruct
        from goap.kernels.semantics import to_device

        s = to_device(gt, GoalStruct, self.device)
        rel = to_device(relevance(self._conds, gt), self._k.Relevance, self.device)
        t0 = time.perf_counter()
        pt = self._pattern_struct(gt)
        if self.heuristic in PDB_HEURISTICS or self.heuristic in SCP_HEURISTICS:
            self.table_seconds += time.perf_counter() - t0
        if len(self._goal_structs) > 64:
            self._goal_structs.clear()
        self._goal_structs[id(gt)] = (gt, (s, rel, pt))
        return s, rel, pt

    def _pattern_struct(self, gt: GoalTables) -> Any:
        """The pattern databases of goal table ``gt`` on the device (heuristics pdb and scp), built there once:
        patterns selected and projections flattened on the host (`goap.planners.pdb.pattern_tables`,
        `goap.planners.scp.partition_tables`), the distances (and scp's saturated costs) by `build_tables`.
        Returns what the search reads (`goap.kernels.pdb.PatternLookup`, over the same distances); other
        heuristics get one lookup of empty tables, never read."""
        from goap.kernels import pdb as kp
        from goap.kernels.semantics import to_device

        dev = self.device
        scp = self.heuristic in SCP_HEURISTICS
        if self.heuristic not in PDB_HEURISTICS and not scp:
            if self._no_patterns is None:
                empty = pattern_tables(self.domain, (), self.tables.min_cost, self.pdb_states)
                self._no_patterns = to_device(_WithDistances(empty), kp.PatternLookup, dev)
            return self._no_patterns
        if scp:  # the candidates at full costs first, ranked into orders (goap.planners.scp.rank_orders)
            least = self.tables.min_cost
            first = candidate_tables(self.domain, gt.goals, least, self.pdb_states, self.scp_orders)
            pt, sat = build_tables(first, dev, True)
            orders = device_orders(first, pt.dist.numpy(), sat.numpy(), self.scp_orders)
            host = partition_tables(self.domain, gt.goals, least, self.pdb_states, self.scp_orders, orders)
        else:
            host = pattern_tables(self.domain, gt.goals, self.tables.min_cost, self.pdb_states)
        pt, _sat = build_tables(host, dev, scp)
        lookup = to_device(_WithDistances(host, 0), kp.PatternLookup, dev)
        lookup.dist = pt.dist
        return lookup


def build_tables(host: Any, device: Any, saturate: bool = False) -> tuple[Any, Any]:
    """The distances of every pattern of ``host`` (`goap.planners.pdb.PatternTables`) on ``device``: returns the
    build's struct (`goap.kernels.pdb.PatternTables`, its ``dist`` filled) and, with ``saturate`` (scp), the
    saturated cost of each action row (float64[R] on the device; else None). Per pattern: `goap.kernels.pdb`'s
    init and sweeps until one changes nothing (at most one per abstract state); with ``saturate`` each order starts
    from the domain's least costs (``host.act_cost`` holds them per row), and each pattern's rows first take the
    order's remaining costs, its saturated costs then come off them (`goap.planners.scp`)."""
    from goap.kernels import pdb as kp
    from goap.kernels.semantics import to_device

    wp = init_warp()
    pt = to_device(_WithDistances(host), kp.PatternTables, device)
    changed = wp.zeros(1, dtype=wp.int32, device=device)
    sat = remaining = least = None
    if saturate:
        A = int(host.act_action.max()) + 1 if len(host.act_action) else 1
        row_cost = np.zeros(A, dtype=np.float64)
        row_cost[host.act_action] = host.act_cost  # every row of an action holds its least cost
        least = wp.array(row_cost, dtype=wp.float64, device=device)
        remaining = wp.empty(A, dtype=wp.float64, device=device)
        sat = wp.zeros(max(1, len(host.act_cost)), dtype=wp.float64, device=device)
    starts, rows = host.dist_start, host.act_start
    for p in range(host.n_patterns):
        n = int(starts[p + 1] - starts[p])
        m = int(rows[p + 1] - rows[p])
        if saturate:
            if host.order_first[p]:
                wp.copy(remaining, least)
            if m:
                wp.launch(kp.scp_costs, dim=m, inputs=[pt, p, remaining], device=device)
        wp.launch(kp.pdb_init, dim=n, inputs=[pt, p], device=device)
        for _sweep in range(n + 1):  # a shortest abstract path has fewer than n steps: n sweeps at most
            changed.zero_()
            wp.launch(kp.pdb_sweep, dim=n, inputs=[pt, p, changed], device=device)
            if int(changed.numpy()[0]) == 0:
                break
        if saturate and m:
            wp.launch(kp.scp_saturate, dim=n, inputs=[pt, p, sat], device=device)
            wp.launch(kp.scp_subtract, dim=m, inputs=[pt, p, sat, remaining], device=device)
    return pt, sat


class _WithDistances:
    """A `goap.planners.pdb.PatternTables` with room for its distances (``dist``, filled on the device)."""

    def __init__(self, host: Any, n: int | None = None):
        self._host = host
        self.dist = np.zeros(max(1, host.n_states if n is None else n), dtype=np.float64)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._host, name)


def _spec_bytes(spec: tuple[str, tuple[int, ...], Any]) -> int:
    _, shape, dtype = spec
    return math.prod(shape) * init_warp().types.type_size_in_bytes(dtype)


def _nothing() -> None:
    return None


def _assign(struct: Any, name: str, value: Any) -> bool:
    """Set a struct field only when it changes (each assignment rebuilds part of the struct's C image)."""
    if getattr(struct, name) is not value:
        setattr(struct, name, value)
        return True
    return False


def _check_device_inputs(
    tables: DomainTables, states: Any, goals: Any, costs: Any, enabled: Any, agents: Any, types: Any = None
) -> None:
    """Shape checks for inputs already on the device (values are not scanned: that would cost a copy; a row whose
    type index is out of range gets no usable action in the kernel, so NO_PLAN, never a read out of bounds)."""
    n, W, A = states.shape[0], tables.n_words, tables.n_actions
    if states.ndim != 2 or states.shape[1] != W:
        raise ValueError(f"states must have shape [N, {W}], got {states.shape}")
    if tuple(goals.shape) != (n,):
        raise ValueError(f"goals must have shape [{n}], got {goals.shape}")
    for name, x in (("costs", costs), ("enabled", enabled)):
        if x is not None and tuple(x.shape) != (n, A):
            raise ValueError(f"{name} must have shape [{n}, {A}], got {x.shape}")
    if agents is not None and len(agents.shape) != 1:
        raise ValueError("agents must be a 1-d array of agent indices")
    if types is not None and tuple(types.shape) != (n,):
        raise ValueError(f"types must have shape [{n}], got {types.shape}")


class WarpWeightedAStarPlanner(WarpAStarPlanner):
    """Weighted A* (registered as ``warp-wastar``): f = g + weight * h, plans within weight x optimal cost."""

    name = "warp-wastar"

    def __init__(self, domain: Domain | DomainTables, weight: float = 2.0, **options: Any):
        super().__init__(domain, weight=weight, **options)


class WarpGreedyPlanner(WarpAStarPlanner):
    """Greedy best-first search (registered as ``warp-greedy``): expands the lowest h first; no cost bound."""

    name = "warp-greedy"

    def __init__(self, domain: Domain | DomainTables, **options: Any):
        super().__init__(domain, greedy=True, **options)

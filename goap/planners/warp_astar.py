"""The batched Warp A* planner (registered as ``warp``): every agent searches in its own thread.

A call runs in waves. The first wave covers every requested agent with the level-0 pool (``max_nodes`` states):
on a GPU in one launch (or several when their scratch would pass half of ``max_scratch_bytes``); on the CPU, where
a Warp launch is a serial loop on one core that releases the GIL, in chunks launched from a small thread pool,
the searches of a chunk one after another in one scratch row of their worker (which stays in cache). Agents whose
pool filled up are then searched again, level by level, with pools ``growth`` times larger and as many agents at
once as the other half of ``max_scratch_bytes`` holds (found, compacted and counted on the device).
``max_escalated_nodes`` bounds that escalated work per call; what is left is deferred (BUDGET below the last
level; see `goap.planners.base`). Each launch is recorded once and replayed (see `WarpAStarPlanner._recorded`).

Scratch per search (bytes) for a pool of M states: `goap.encoding.scratch_bytes_per_agent` (about 8 W + 36 bytes
per state; 45 KB at the default M = 1024 with one-word states). On a GPU the first pool is held per agent of a
wave, on the CPU per worker thread; a level-l search holds ``growth**l`` times that, for few searches at a time.
``max_scratch_bytes`` is a hard cap on all scratch the planner holds: a first pool that does not fit in half of it
is refused when the planner is made, and levels whose single search would not fit in the other half are dropped
(``n_levels`` says how many remain).
"""

from __future__ import annotations

import math
import os
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from goap.domain import Domain
from goap.encoding import DomainTables, GoalTables, encode, hash_size, scratch_bytes_per_agent
from goap.kernels import init_warp
from goap.planners.base import (
    DEFAULT_GROWTH,
    DEFAULT_HEURISTIC,
    DEFAULT_MAX_NODES,
    DEFAULT_MAX_PLAN_LENGTH,
    DEFAULT_MAX_SCRATCH_BYTES,
    DEFAULT_NODE_CEILING,
    PlanBatch,
    check_inputs,
    check_options,
    condition_tables,
    pool_levels,
    pop_limit,
    relevance,
)

__all__ = ["WarpAStarPlanner", "WarpGreedyPlanner", "WarpWeightedAStarPlanner", "scratch_bytes_per_agent"]

_RESULT_FIELDS = (("status", "int8"), ("cost", "float64"), ("length", "int32"), ("actions", "int32"),
                  ("expanded", "int32"), ("level", "int8"))


class WarpAStarPlanner:
    """A* for N agents at once on a Warp device; the same results as `ReferencePlanner`, node for node.

    Args:
        domain: the domain (or its tables).
        max_nodes: the first node pool (level 0): states one search may store before it escalates.
        max_plan_length: the longest plan returned whole; a longer optimal plan gives TOO_LONG and its first steps.
        device: a Warp device ("cpu", "cuda:0"); the default device when None.
        threads: CPU worker threads (default: the number of cores).
        chunk_size: agents per CPU launch (default: enough chunks for 4 per thread, 16..512 agents each).
        max_scratch_bytes: hard cap on the search scratch held at once, all threads and levels together (4 GiB).
        weight: order the open list by g + weight * h: plans cost at most weight x optimal, found faster.
        greedy: order the open list by h alone (greedy best-first): fastest, no bound on the cost.
        heuristic: "hmax2" (default), "lmcut", "hmax" or "hmax1": see `goap.planners.reference`.
        growth: pool growth per escalation level (1: no escalation).
        node_ceiling: the largest pool (default 2**25 states, at least ``max_nodes``).
        max_escalated_nodes: default per-call bound on escalated work (pool states summed over the escalated
            searches run); None: escalate until every search ends. `plan` takes it per call too.
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
    ):
        check_options(max_nodes, max_plan_length, weight, heuristic, growth, node_ceiling)
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
        self._wp = wp
        self._conds = condition_tables(self.tables)

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
        self.pools = [p for p in pool_levels(self.max_nodes, int(growth), ceiling)
                      if p == self.max_nodes or self.bytes_per_agent(p) <= self.max_scratch_bytes - half]

        self.kernel = astar.astar_kernel(self.tables.n_words)
        self._dt = to_device(self.tables, DomainStruct, self.device)
        self._ct = to_device(self._conds, astar.ConditionTables, self.device)
        self._goal_structs: dict[int, tuple[GoalTables, Any]] = {}
        self._scratch: queue.SimpleQueue = queue.SimpleQueue()  # level-0 sets, one per worker
        self._scratch_rows = 0
        self._escalated: dict[int, tuple[int, Any]] = {}  # level -> (rows, scratch)
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="goap-astar") if self.threads > 1 else None
        dev = self.device
        self._dummy_costs = wp.zeros((1, 1), dtype=wp.float32, device=dev)
        self._dummy_enabled = wp.zeros((1, 1), dtype=wp.bool, device=dev)
        self._dummy_ids = wp.zeros(1, dtype=wp.int32, device=dev)
        self._row_step = 0 if dev.is_cpu else 1  # see plan_astar: CPU launches share one scratch row per worker
        self._count = wp.zeros(1, dtype=wp.int32, device=dev)
        self._pending = wp.zeros(1, dtype=wp.int32, device=dev)
        self._granted = wp.zeros(1, dtype=wp.int32, device=dev)
        self._budget = wp.zeros(2, dtype=wp.int64, device=dev)
        self._count_view = self._count.numpy() if dev.is_cpu else None
        self._pending_view = self._pending.numpy() if dev.is_cpu else None
        self._wrapped: dict[tuple, tuple[np.ndarray, Any]] = {}  # zero-copy wrappers of host arrays (CPU)
        self._results_cache: tuple[tuple, Any, Any] | None = None
        self._compact: tuple[int, Any, Any, Any] | None = None  # (capacity, flags, offsets, rows)
        self._launches: dict[tuple, list] = {}  # see _recorded
        self._record_lock = threading.Lock()
        self._query = astar.Query()
        self._level_query = astar.Query()
        self._searches = [self._search_struct(lv) for lv in range(self.n_levels)]

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
        )

    @property
    def scratch_bytes(self) -> int:
        """Device memory held by search scratch now (all workers and levels); never above ``max_scratch_bytes``."""
        sets = self.threads if self.device.is_cpu else 1
        held = self._scratch_rows * sets * self.bytes_per_agent() if self._scratch_rows else 0
        return held + sum(rows * self.bytes_per_agent(self.pools[lv]) for lv, (rows, _) in self._escalated.items())

    def load(self) -> None:
        """Compile or load the kernel modules now rather than on the first call."""
        self._wp.load_module(self.kernel.module, device=self.device)
        self._wp.load_module(self._k.select_level.module, device=self.device)

    def plan(
        self,
        states: Any,
        goals: Any,
        costs: Any = None,
        enabled: Any = None,
        *,
        goal_table: GoalTables | None = None,
        agents: Any = None,
        count: Any = None,
        out: PlanBatch | None = None,
        max_escalated_nodes: int | None = None,
    ) -> PlanBatch:
        """Plan for every agent (or those in ``agents``, or ``agents[:count[0]]``); see `goap.planners.base`.

        Inputs may be numpy arrays (zero-copy on the CPU) or Warp arrays on this planner's device; with Warp
        arrays and a batch from `PlanBatch.on_device`, rows are written in place and nothing is copied to the host
        (``count`` may then be a device array, so a device-side request queue needs no readback).
        """
        wp = self._wp
        goal_table = goal_table or self.tables.goals
        if isinstance(states, wp.array):
            _check_device_inputs(self.tables, states, goals, costs, enabled, agents)
        else:
            states, goals, costs, enabled, agents = check_inputs(
                self.tables, goal_table, states, goals, costs, enabled, agents
            )
        n = states.shape[0]
        out = out if out is not None else PlanBatch.empty(n, self.max_plan_length)
        if tuple(out.actions.shape) != (n, self.max_plan_length):
            raise ValueError(f"out.actions must have shape [{n}, {self.max_plan_length}], got {out.actions.shape}")
        capacity = n if agents is None else int(agents.shape[0])
        if capacity == 0:
            return out
        bound = self.max_escalated_nodes if max_escalated_nodes is None else max_escalated_nodes

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
        if count is None:
            self._set(self._count, capacity)
            _assign(q, "count", self._count)
        else:
            count = self._to_device(count, wp.int32)
            _assign(q, "count", count)
            if dev.is_cpu:  # host memory: size the launches by the rows requested, not by the whole ids array
                capacity = max(0, min(capacity, int(count.numpy()[0])))
                if capacity == 0:
                    return out
        gt, rel = self._goal_struct(goal_table)
        results, copy_back = self._results(out)
        self._set(self._pending, 0)

        def launch(qs: Any, first: int, rows: int, lv: int, sc: Any, scratch_first: int) -> None:
            entry = self._recorded(qs, lv, sc, scratch_first, gt, rel, results)
            cmd = entry[0]
            cmd.set_param_at_index_from_ctype(1, first)
            if entry[6] != rows:  # set_dim rebuilds the launch bounds: only when the thread count changes
                cmd.set_dim(rows)
                entry[6] = rows
            cmd.launch()

        # Wave 0: every requested row, first pool.
        self._waves(lambda first, rows, sc, sf: launch(q, first, rows, 0, sc, sf), capacity)

        # Escalated waves: rows whose pool filled up (or that arrived at a higher level), level by level.
        if self.n_levels > 1 and (not dev.is_cpu or int(self._pending_view[0]) > 0):
            self._set_budget(bound)
            flags, offsets, rows_at = self._compaction(capacity)
            lq = self._level_query
            lq.states, lq.goals, lq.costs, lq.has_costs = q.states, q.goals, q.costs, q.has_costs
            lq.enabled, lq.has_enabled = q.enabled, q.has_enabled
            lq.ids, lq.use_ids, lq.count = rows_at, 1, self._granted
            for lv in range(1, self.n_levels):
                pool = self.pools[lv]
                per = self.bytes_per_agent(pool)
                slots = max(1, min(capacity, (self.max_scratch_bytes - self.max_scratch_bytes // 2) // per))
                if self._row_step == 0:  # searches of a CPU launch run one after another in one scratch row
                    slots = capacity
                if bound is not None:
                    slots = min(slots, max(1, int(bound) // pool))
                wp.launch(k.select_level, dim=capacity, inputs=[q, results, lv, flags], device=dev)
                wp.utils.array_scan(flags, offsets, inclusive=False)
                wp.launch(k.compact_level, dim=capacity, inputs=[q, flags, offsets, rows_at], device=dev)
                wp.launch(k.grant_level, dim=1, device=dev,
                          inputs=[flags, offsets, capacity, pool, slots if bound is not None else capacity,
                                  int(bound is not None), self._budget, self._granted])
                if bound is not None:
                    sc = self._escalated_scratch(lv, self._escalated_rows(slots))
                    self._spread(lambda first, rows, sf, lv=lv, sc=sc: launch(lq, first, rows, lv, sc, sf), slots)
                else:
                    waiting = int(self._granted.numpy()[0])
                    if waiting == 0:
                        continue
                    sc = self._escalated_scratch(lv, self._escalated_rows(min(slots, waiting)))
                    for start in range(0, waiting, slots):
                        span = min(slots, waiting - start)
                        self._spread(lambda first, rows, sf, lv=lv, sc=sc, s0=start: launch(
                            lq, s0 + first, rows, lv, sc, sf), span)
        copy_back()
        return out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    # --- internals -----------------------------------------------------------------------------------------
    def _waves(self, run_span: Any, rows: int) -> None:
        """Wave 0: CPU chunks over worker threads (each with its own scratch), or GPU waves within the cap."""
        half = self.max_scratch_bytes // 2
        per = self._first_bytes
        if self.device.is_cpu:
            chunk = self.chunk_size or min(512, max(16, -(-rows // (4 * self.threads))))
            workers = max(1, min(self.threads, half // per))
            chunk = max(1, min(chunk, rows))
            self._ensure_scratch(chunk if self._row_step else 1, workers)  # row_step 0: one row per worker
            spans = [(s, min(chunk, rows - s)) for s in range(0, rows, chunk)]

            def run(span: tuple[int, int]) -> None:
                sc = self._scratch.get()
                try:
                    run_span(span[0], span[1], sc, 0)
                finally:
                    self._scratch.put(sc)

            if self._pool is None or len(spans) == 1 or workers == 1:
                for span in spans:
                    run(span)
            else:
                for f in [self._pool.submit(run, span) for span in spans]:
                    f.result()
        else:
            wave = max(1, min(rows, half // per))
            self._ensure_scratch(wave, 1)
            sc = self._scratch.get()
            try:
                for first in range(0, rows, wave):
                    run_span(first, min(wave, rows - first), sc, 0)
            finally:
                self._scratch.put(sc)

    def _escalated_rows(self, searches: int) -> int:
        """Scratch rows an escalated wave of ``searches`` needs: one per search on a GPU, one per worker on the CPU."""
        return min(searches, self.threads) if self._row_step == 0 else searches

    def _spread(self, run_span: Any, rows: int) -> None:
        """An escalated wave of ``rows`` threads over one shared scratch set: split across CPU workers, part k
        in scratch row k (on a GPU, thread i uses row i)."""
        if self._pool is None or rows < 2:
            run_span(0, rows, 0)
            return
        parts = min(self.threads, rows)
        step = math.ceil(rows / parts)
        futures = [self._pool.submit(run_span, s, min(step, rows - s), k) for k, s in enumerate(range(0, rows, step))]
        for f in futures:
            f.result()

    def _recorded(self, qs: Any, lv: int, sc: Any, scratch_first: int, gt: Any, rel: Any, results: Any) -> list:
        """The search kernel's launch for this query struct, level, scratch set and scratch row, recorded once
        (``[launch, code it was recorded against, goal struct, relevance, results, holds, thread count]``).

        Packing the kernel's twelve arguments (the table structs hold dozens of arrays) is most of a small call's
        cost; a recorded launch is replayed with only ``first`` and the thread count set. Structs are passed by
        reference to their C image, so later field changes (``_assign``) show through; a goal table or result
        struct of another identity re-packs that argument. One entry per scratch set and row: two CPU workers
        never share one. Warp frees a module's code when it reloads the module (a planner for another word count
        adds functions to it), so an entry recorded against code no longer loaded is recorded again.
        """
        key = (id(qs), lv, id(sc), scratch_first)
        entry = self._launches.get(key)
        execs = self.kernel.module.execs
        if entry is None or not any(e is entry[1] for e in execs.values()):
            # Recorded under a lock: CPU workers call this concurrently, and recording two launches of a kernel at
            # once from two threads crashes inside Warp (replaying them concurrently is safe).
            with self._record_lock:
                if len(self._launches) >= 256:
                    self._launches.clear()
                cmd = self._wp.launch(
                    self.kernel, dim=1, device=self.device, record_cmd=True,
                    inputs=[qs, 0, scratch_first, self._row_step, self._dt, gt, self._ct, rel, self._searches[lv],
                            sc, results, self._pending])
                ctx = self.device.context
                loaded = next((e for k, e in self.kernel.module.execs.items() if k[0] == ctx), None)
                entry = self._launches[key] = [cmd, loaded, gt, rel, results, (qs, sc), 1]  # holds what it points to
                return entry
        for index, slot, value in ((5, 2, gt), (7, 3, rel), (10, 4, results)):
            if entry[slot] is not value:
                entry[0].set_param_at_index(index, value)
                entry[slot] = value
        return entry

    def _set(self, arr: Any, value: int) -> None:
        if self.device.is_cpu:
            (self._count_view if arr is self._count else self._pending_view)[0] = value
        else:
            arr.fill_(value)

    def _set_budget(self, bound: int | None) -> None:
        values = np.array([0 if bound is None else int(bound), 0], dtype=np.int64)
        if self.device.is_cpu:
            self._budget.numpy()[...] = values
        else:
            self._budget.assign(values)

    def _compaction(self, capacity: int) -> tuple[Any, Any, Any]:
        if self._compact is None or self._compact[0] < capacity:
            wp, dev = self._wp, self.device
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
        from goap.kernels.semantics import GoalTables as GoalStruct
        from goap.kernels.semantics import to_device

        s = to_device(gt, GoalStruct, self.device)
        rel = to_device(relevance(self._conds, gt), self._k.Relevance, self.device)
        if len(self._goal_structs) > 64:
            self._goal_structs.clear()
        self._goal_structs[id(gt)] = (gt, (s, rel))
        return s, rel

    def _new_scratch(self, rows: int, pool: int) -> Any:
        wp, dev, W = self._wp, self.device, self.tables.n_words
        m = pool
        s = self._k.Scratch()
        s.node_state = wp.empty((rows * (m + 1), W), dtype=wp.uint64, device=dev)
        s.node_g = wp.empty((rows, m), dtype=wp.float64, device=dev)
        s.node_h = wp.empty((rows, m), dtype=wp.float64, device=dev)
        s.node_parent = wp.empty((rows, m), dtype=wp.int32, device=dev)
        s.node_pos = wp.empty((rows, m), dtype=wp.int32, device=dev)
        s.heap = wp.empty((rows, m), dtype=wp.int32, device=dev)
        s.table = wp.full((rows, hash_size(m)), -1, dtype=wp.int32, device=dev)
        A = max(1, self.tables.n_actions)
        C = max(1, self._conds.n_conditions)
        lm = self.heuristic == "lmcut"  # only what the heuristic reads
        hmax, hmax2 = lm or self.heuristic == "hmax", self.heuristic == "hmax2"
        s.act_cost = wp.empty((rows, A), dtype=wp.float64, device=dev)
        s.act_h = wp.empty((rows, A if hmax else 1), dtype=wp.float64, device=dev)
        s.pre_cost = wp.empty((rows, max(1, self.tables.relaxed.n_pre) if hmax2 else 1), dtype=wp.float64, device=dev)
        s.cond_h = wp.empty((rows, C if hmax else 1), dtype=wp.float64, device=dev)
        s.cond_heap = wp.empty((rows, C if hmax else 1), dtype=wp.int32, device=dev)
        s.cond_pos = wp.empty((rows, C if hmax else 1), dtype=wp.int32, device=dev)
        s.act_left = wp.empty((rows, A if hmax else 1), dtype=wp.int32, device=dev)
        s.act_rc = wp.empty((rows, A if lm else 1), dtype=wp.float64, device=dev)
        s.act_pcf = wp.empty((rows, A if lm else 1), dtype=wp.int32, device=dev)
        s.act_mark = wp.empty((rows, A if lm else 1), dtype=wp.int32, device=dev)
        s.cond_mark = wp.empty((rows, C if lm else 1), dtype=wp.int32, device=dev)
        s.reached = wp.empty((rows, max(1, len(self.domain.facts))), dtype=wp.uint64, device=dev)
        return s

    def _ensure_scratch(self, rows: int, count: int) -> None:
        """Make sure ``count`` level-0 scratch sets of at least ``rows`` threads exist (reallocated only to grow)."""
        if rows <= self._scratch_rows:
            return
        rows = max(rows, self._scratch_rows)
        while not self._scratch.empty():
            self._scratch.get()
        for _ in range(count):
            self._scratch.put(self._new_scratch(rows, self.max_nodes))
        self._scratch_rows = rows

    def _escalated_scratch(self, lv: int, rows: int) -> Any:
        """One scratch set of ``rows`` threads with level ``lv``'s pool; other levels' sets are freed to make room."""
        held = self._escalated.get(lv)
        if held is not None and held[0] >= rows:
            return held[1]
        room = self.max_scratch_bytes - self.max_scratch_bytes // 2
        need = rows * self.bytes_per_agent(self.pools[lv])
        used = sum(r * self.bytes_per_agent(self.pools[o]) for o, (r, _) in self._escalated.items() if o != lv)
        for other in sorted(self._escalated, key=lambda o: -self.pools[o]):
            if used + need <= room:
                break
            if other != lv:
                used -= self._escalated[other][0] * self.bytes_per_agent(self.pools[other])
                del self._escalated[other]
        self._escalated.pop(lv, None)
        sc = self._new_scratch(rows, self.pools[lv])
        self._escalated[lv] = (rows, sc)
        return sc


def _nothing() -> None:
    return None


def _assign(struct: Any, name: str, value: Any) -> bool:
    """Set a struct field only when it changes (each assignment rebuilds part of the struct's C image)."""
    if getattr(struct, name) is not value:
        setattr(struct, name, value)
        return True
    return False


def _check_device_inputs(tables: DomainTables, states: Any, goals: Any, costs: Any, enabled: Any, agents: Any) -> None:
    """Shape checks for inputs already on the device (values are not scanned: that would cost a copy)."""
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

"""Each distinct query planned once: a planner wrapper that groups equal queries on the device, plus a plan cache.

In a game thousands of agents often ask the same question (a squad spawned in one state, chasing one goal), and
ask it again on the next tick. `DedupingPlanner` wraps any planner with the same ``plan()`` contract:

* Within a call, the requested rows are grouped by their *query* (state words, goal, action-cost row, enabled
  row, agent type, and the node-pool level the search starts at, ``PlanBatch.level``, which the planner reads): a
  hash per row and an insert into a hash table of the call's queries, where a row whose hash matches is compared with
  the slot's row word by word, so a hash collision never merges two different queries (see `goap.kernels.dedupe`).
  Only one row per group (its first in request order, on the CPU) is planned; every field of the PlanBatch
  (status, cost, length, actions, expanded, level and whatever fields it gains) is then copied to the other rows,
  all in Warp kernels on the planner's device. Results are exactly those of planning each row alone, since a
  search is a function of its query.
* Across calls, an optional plan cache of ``cache_capacity`` entries (fixed memory, open addressing on the
  device; see `goap.kernels.dedupe`) answers queries it has seen. An entry keeps its full key, verified on every
  hit, and the result rows. Only statuses in ``cacheable`` are stored: by default OK, SATISFIED and NO_PLAN,
  which depend on the query alone. BUDGET is never stored by default: with node pools that escalate across calls
  (``level``) or a per-call escalation budget, a BUDGET row means "not yet", not an answer. TOO_LONG is left out
  too: the plan buffer's length is not part of the key. When the cache is full in a query's probe window, the
  least recently used entry of the window gives way; an entry hit or written in the current call never does.

What counts as the same query: ``costs=None`` (the domain's costs) and an explicit cost row are different
queries even when the values agree (the planner may sum the domain's costs at a higher precision), while
``enabled=None`` is the same as an all-true row, and ``types=None`` as a row of type 0. Costs compare as float32 bit
patterns. The goal table is part of the key (as a token per table object): a new table object means new queries.

Counters live in a small device array (``counters``, int64, names in `COUNTERS`, the table
`goap.codes.DEDUPE_COUNTERS`) so a captured tick needs no readback; `DedupingPlanner.stats` reads them once on the
host and adds the rates.

Two paths, the same results, as in `goap.planners.warp_astar` (`goap.launch.host_sized`): on the CPU outside a
graph capture the count of rows to plan, of distinct queries and of cache misses are read from host-visible arrays
(free) and size the launches; on a GPU, or while a graph is being captured, nothing is read on the host: every
launch covers the call's capacity (threads past the device count return at once) and the inner planner gets the
whole list of rows to search with its count on the device. A capture must not allocate: `DedupingPlanner.reserve`
allocates the grouping scratch, the cache's result rows and the inner planner's buffers for a capacity first.

Cost per call: four launches besides the search (start, group, join, copy; on the CPU outside capture the group
and copy launches run one span of rows per worker thread of the shared pool), plus the cache's when there is one.
Memory: scratch of about 100 bytes per requested row (grown on demand, reused: keys, groups, lists, and group
tables of at least twice as many slots as rows), and for the cache ``capacity * (8 W + 4 A + A + 33 + R)`` bytes,
R the bytes of one PlanBatch row (status, cost, length, actions, expanded, level: 4 L + 18 with float64 costs).
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from goap.codes import DEDUPE_COUNTERS
from goap.encoding import GoalTables
from goap.kernels import init_warp
from goap.launch import CaptureError, capturing, cpu_pool, host_sized, run_parallel
from goap.planners.base import PlanBatch, Status, check_capturable, check_inputs

#: Names of the entries of `DedupingPlanner.counters`, in order (the table `goap.codes.DEDUPE_COUNTERS`).
COUNTERS = DEDUPE_COUNTERS
#: Statuses the plan cache stores by default: results that depend on the query alone.
DEFAULT_CACHEABLE = (Status.OK, Status.SATISFIED, Status.NO_PLAN)
MAX_CACHE_CAPACITY = 1 << 26
_MAX_TOKENS = 1024
_PARALLEL_ROWS = 16384  # below this, one CPU launch beats handing chunks to threads
_SPANS_PER_WORKER = 2  # spans of a large CPU batch per worker thread (taken in turn)


class DedupingPlanner:
    """Plans each distinct query of a call once (and, with a cache, once across calls); same results as ``inner``.

    Args:
        inner: the planner that searches (any planner with the ``plan()`` contract of `goap.planners.base`).
        cache_capacity: entries of the plan cache; 0 (default) disables it.
        cache_probes: slots a lookup or insert may visit from a query's home slot (1..256).
        cacheable: the statuses the cache stores (see the module docstring for why BUDGET is not among them).
        hash_bits: bits of the 64-bit query hash used for grouping and cache slots; fewer bits force collisions,
            which must never change a result (a test hook; 64 in use).
        per_row: one thread per request and one shared group table claimed by compare-and-swap (the GPU's way;
            None: on a GPU only). True on the CPU runs the GPU's sequence of kernels there (a test hook: a CPU
            launch's threads run one after another, so concurrent claims are not exercised).

    Attributes:
        counters: wp.array int64 [len(COUNTERS)] on the device, accumulated over calls (see `stats`).
    """

    def __init__(
        self,
        inner: Any,
        cache_capacity: int = 0,
        *,
        cache_probes: int = 16,
        cacheable: Iterable[Status | int] = DEFAULT_CACHEABLE,
        hash_bits: int = 64,
        per_row: bool | None = None,
    ):
        if isinstance(cache_capacity, bool) or not isinstance(cache_capacity, int | np.integer):
            raise ValueError(f"cache_capacity must be an integer, got {cache_capacity!r}")
        if not 0 <= cache_capacity <= MAX_CACHE_CAPACITY:
            raise ValueError(f"cache_capacity must be in 0..{MAX_CACHE_CAPACITY}, got {cache_capacity}")
        if isinstance(cache_probes, bool) or not isinstance(cache_probes, int | np.integer):
            raise ValueError(f"cache_probes must be an integer, got {cache_probes!r}")
        if not 1 <= cache_probes <= 256:
            raise ValueError(f"cache_probes must be in 1..256, got {cache_probes}")
        if isinstance(hash_bits, bool) or not isinstance(hash_bits, int | np.integer) or not 1 <= hash_bits <= 64:
            raise ValueError(f"hash_bits must be an integer in 1..64, got {hash_bits!r}")
        statuses = sorted({int(Status(s)) for s in cacheable})
        if Status.NOT_PLANNED in statuses:
            raise ValueError("NOT_PLANNED is not a result and cannot be cached")

        wp = init_warp()
        from goap.kernels import dedupe as kernels

        self._wp = wp
        self._k = kernels
        self.inner = inner
        self.name = f"{inner.name}+dedupe"
        self.tables = inner.tables
        self.domain = self.tables.domain
        self.device = wp.get_device(getattr(inner, "device", None) or "cpu")
        self.cache_capacity = int(cache_capacity)
        self.cache_probes = int(min(cache_probes, max(1, cache_capacity)))
        self.cacheable = tuple(Status(s) for s in statuses)
        self._cacheable_bits = sum(1 << s for s in statuses)
        self.hash_bits = int(hash_bits)
        self._hash_mask = (1 << self.hash_bits) - 1
        self._inner_takes_count = "count" in inspect.signature(inner.plan).parameters

        dev = self.device
        self.counters = wp.zeros(len(COUNTERS), dtype=wp.int64, device=dev)
        # [0]: the cache's clock, [1]: the group table's tag; both advance once per call (in `hash_queries`).
        self._epoch = wp.zeros(2, dtype=wp.int32, device=dev)
        self._n_reps = wp.zeros(1, dtype=wp.int32, device=dev)
        self._n_miss = wp.zeros(1, dtype=wp.int32, device=dev)
        self._dummy_u32 = wp.zeros((1, 1), dtype=wp.uint32, device=dev)
        self._dummy_u8 = wp.zeros((1, 1), dtype=wp.uint8, device=dev)
        self._dummy_u64 = wp.zeros((1, 1), dtype=wp.uint64, device=dev)
        self._dummy_i8 = wp.zeros(1, dtype=wp.int8, device=dev)
        self._dummy_i32 = wp.zeros(1, dtype=wp.int32, device=dev)
        self._type_class = wp.array(type_classes(self.tables.domain), dtype=wp.int32, device=dev)
        self._tokens: dict[int, tuple[GoalTables, int]] = {id(self.tables.goals): (self.tables.goals, 0)}
        self._rows = 0
        self._scratch_parts = 0
        self._scratch: dict[str, Any] = {}
        self._kept: list[Any] = []  # scratch replaced after a device-path call used it: a graph may read it
        self._pinned = False
        self._inner_rows: tuple[Any, int, Any] | None = None
        self._results_views: tuple[tuple, Any, list] | None = None
        self._views: dict[str, tuple[Any, Any, Any]] = {}
        self._entries = self._cache_entries() if self.cache_capacity else None
        # Loaded here, before any launch from the thread pool: threads that find a module unloaded would each try
        # to load it.
        wp.load_module(kernels, device=dev)
        self._threads = max(1, int(getattr(inner, "threads", 0) or os.cpu_count() or 1)) if dev.is_cpu else 1
        if self._threads > 1:
            cpu_pool(self._threads)  # the shared pool, grown to the inner planner's threads
        # One thread per request, one shared group table claimed by compare-and-swap: the GPU's way. On the CPU
        # workers take spans of requests instead.
        self._per_row = (not dev.is_cpu) if per_row is None else bool(per_row)
        self._cached: dict[str, Any] = {}  # field name -> [capacity, units] words of results
        self._cached_res: Any = None  # the standard fields of ``_cached`` as a ResultFields

    # --- delegation --------------------------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        # Options and helpers of the planner inside (max_nodes, bytes_per_agent, load, ...): only reached for
        # attributes this class does not define.
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def max_nodes(self) -> int:
        return self.inner.max_nodes

    @property
    def max_plan_length(self) -> int:
        return self.inner.max_plan_length

    def load(self) -> None:
        """Compile or load the inner planner's kernels now rather than on the first call (these are loaded when
        the wrapper is made)."""
        if hasattr(self.inner, "load"):
            self.inner.load()

    def close(self) -> None:
        """Close the inner planner (the wrapper has no threads of its own: the CPU worker pool is shared)."""
        if hasattr(self.inner, "close"):
            self.inner.close()

    def reserve(self, capacity: int, *, out: PlanBatch | None = None, **inner_options: Any) -> None:
        """Allocate what the device path needs for calls of up to ``capacity`` requested rows, so that such a call
        can be captured (a capture may not allocate what its replays read): the grouping scratch and tables, the
        cache's result rows laid out like ``out`` (default: a `PlanBatch.on_device` batch), and the inner
        planner's buffers (its ``reserve``, with ``inner_options``) for the rows it may be asked to search, also
        when the caller plans with ``.inner`` directly. Call it outside any capture; buffers reserved are never
        freed while the planner lives.
        """
        if capturing(self.device):
            raise CaptureError("reserve() allocates: call it before the capture, not inside it")
        capacity = int(capacity)
        self._pinned = True
        if capacity > 0:
            self._ensure_scratch(capacity, 1)
        if self._entries is not None:
            if out is None:
                out = PlanBatch.on_device(1, self.max_plan_length, self.device)
            self._cache_fields(self._field_views(out, int(out.status.shape[0]), remember=False))
        inner_reserve = getattr(self.inner, "reserve", None)
        if inner_reserve is not None:
            inner_reserve(max(capacity, self._rows), **inner_options)

    # --- counters and cache ---------------------------------------------------------------------------------------
    def stats(self) -> dict[str, float | int]:
        """The counters since creation (or `reset_stats`), read once from the device, with the derived rates.

        ``dedupe_rate``: the share of requested rows that were not searched because an equal query in the same
        call was (1 - distinct / requests). ``hit_rate``: the share of distinct queries the cache answered.
        ``entries``: valid cache entries now.
        """
        values = self.counters.numpy()
        out: dict[str, float | int] = {name: int(v) for name, v in zip(COUNTERS, values, strict=True)}
        out["dedupe_rate"] = 1.0 - out["distinct"] / out["requests"] if out["requests"] else 0.0
        lookups = out["hits"] + out["misses"]
        out["hit_rate"] = out["hits"] / lookups if lookups else 0.0
        out["searched"] = out["misses"] if self._entries is not None else out["distinct"]
        out["entries"] = int(np.count_nonzero(self._entries.state.numpy())) if self._entries is not None else 0
        out["capacity"] = self.cache_capacity
        return out

    def reset_stats(self) -> None:
        self.counters.zero_()

    def clear(self) -> None:
        """Empty the plan cache (counters are kept; see `reset_stats`). Call it when the domain's semantics change
        under the planner, e.g. a new ``tables`` object, or to drop plans from an earlier scene."""
        if self._entries is not None:
            # The epoch keeps counting: claims and uses are compared with the current call's epoch only.
            for arr in (self._entries.state, self._entries.used, self._entries.claim):
                arr.zero_()

    @property
    def cache_bytes(self) -> int:
        """Device memory the plan cache holds: keys and bookkeeping, plus the result rows once allocated."""
        if self._entries is None:
            return 0
        e = self._entries
        arrays = [e.hash, e.state, e.used, e.claim, e.states, e.goal, e.token, e.level, e.agent_type, e.cost_bits,
                  e.enabled]
        return sum(a.capacity for a in arrays) + sum(a.capacity for a in self._cached.values())

    # --- planning -------------------------------------------------------------------------------------------------
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
        **options: Any,
    ) -> PlanBatch:
        """The inner planner's ``plan()`` (same arguments, same results), searching each distinct query once.

        ``options`` (``max_escalated_nodes``, say) go to the inner planner unchanged. Under a graph capture every
        input and ``out`` must be Warp arrays on the device and the buffers reserved (`reserve`).
        """
        wp, k, dev = self._wp, self._k, self.device
        host = host_sized(dev)
        if capturing(dev):
            check_capturable(wp, states=states, goals=goals, costs=costs, enabled=enabled, types=types,
                             agents=agents, count=count, out=out)
        if not host:
            self._pinned = True
        goal_table = goal_table or self.tables.goals
        token = self._token(goal_table)
        host_check = None

        if isinstance(states, wp.array):
            self._check_device_inputs(states, goals, costs, enabled, agents, count, types)
            n = states.shape[0]
            if out is None:
                on_device = getattr(PlanBatch, "on_device", None)
                out = (
                    on_device(n, self.max_plan_length, dev)
                    if on_device is not None and not dev.is_cpu
                    else PlanBatch.empty(n, self.max_plan_length)
                )
            inner_in = (states, goals, costs, enabled, types)
            k_states, k_goals, k_costs, k_enabled, k_agents = states, goals, costs, enabled, agents
            k_count, k_types = count, types
        else:
            states, goals, costs, enabled, h_agents = self._host_inputs(states, goals, costs, enabled, agents)
            n = states.shape[0]
            if types is not None:
                types = np.ascontiguousarray(types.numpy() if isinstance(types, wp.array) else types)
                if types.shape != (n,) or types.dtype.kind not in "iu":
                    raise ValueError(f"types must be an integer array of shape [{n}], got {types.dtype} {types.shape}")
                types = types.astype(np.int32, copy=False)
            if out is None:
                out = PlanBatch.empty(n, self.max_plan_length)
            # On the CPU device these are zero-copy views of the caller's arrays; on a GPU, copies made once.
            k_states = self._device(states, wp.uint64)
            k_goals = self._device(goals, wp.int32)
            k_costs = None if costs is None else self._device(costs, wp.float32)
            k_enabled = None if enabled is None else self._device(enabled, wp.bool)
            k_agents = None if h_agents is None else self._device(h_agents, wp.int32)
            k_types = None if types is None else self._device(types, wp.int32)
            k_count = self._count_array(count)
            if not self._inner_takes_count and dev.is_cpu:
                inner_in = (states, goals, costs, enabled, types)  # an older planner: host arrays, checked by it
            else:
                # Device views for the planner (it then checks shapes only); the values of the rows it searches are
                # checked here first, the way `check_inputs` checks a host call. Rows not searched share a searched
                # row's query, or a cached one's, which was checked when it was searched.
                inner_in = (k_states, k_goals, k_costs, k_enabled, k_types)
                host_check = (goal_table, states, goals, costs, enabled, types)
                if not dev.is_cpu:
                    check_inputs(self.tables, goal_table, states, goals, costs, enabled, None, types)
                    host_check = None

        if tuple(out.status.shape) != (n,):
            raise ValueError(f"out.status must have shape [{n}], got {tuple(out.status.shape)}")
        rows = n if k_agents is None else int(k_agents.shape[0])
        if k_count is not None and host:
            # On the CPU the count is host memory (reading it is free): plan agents[:count] as a plain list.
            rows, k_count = int(np.clip(k_count.numpy()[0], 0, rows)), None
        if rows == 0:
            return out

        # Device views of the result fields; a host batch on a GPU is mirrored and copied back at the end.
        mirror = self._mirror(out) if not dev.is_cpu and not isinstance(out.status, wp.array) else None
        work_out = mirror if mirror is not None else out
        fields = self._field_views(work_out, n)
        level = getattr(work_out, "level", None)

        q = k.Queries()
        q.states = k_states
        q.goals = k_goals
        q.has_costs = int(k_costs is not None)
        q.cost_bits = self._dummy_u32 if k_costs is None else k_costs.view(wp.uint32)
        words = None if k_costs is None else self._cost_words(k_costs)
        q.has_cost_words = int(words is not None)
        q.cost_words = self._dummy_u64 if words is None else words
        q.has_enabled = int(k_enabled is not None)
        q.enabled = self._dummy_u8 if k_enabled is None else k_enabled.view(wp.uint8)
        q.has_level = int(level is not None)
        q.level = self._dummy_i8 if level is None else self._device_view(level, wp.int8, "level")
        q.has_types = int(k_types is not None)
        q.types = self._dummy_i32 if k_types is None else k_types
        q.type_class = self._type_class
        q.n_actions = self.tables.n_actions
        q.token = token
        r = k.Requests()
        r.agents = self._dummy_i32 if k_agents is None else k_agents
        r.use_agents = int(k_agents is not None)
        r.count = self._dummy_i32 if k_count is None else k_count
        r.has_count = int(k_count is not None)
        r.n = rows

        spans = self._parts(rows)
        per = -(-rows // spans)
        s = self._ensure_scratch(rows, spans)
        mask = wp.uint64(self._hash_mask)
        wp.launch(k.start_call, dim=1, device=dev,
                  inputs=[r, self._epoch, s["n_heads"], self._n_miss, self.counters, s["table"], s["join_table"]])
        if not self._per_row:
            # Each worker hashes and groups its own span of requests, in its own table; one thread then joins the
            # spans' groups (their heads only) in a table for the call.
            self._spread(k.group_queries, rows, [q, r], [0, 0, s["table_bits"], mask, s["keys"], self._epoch,
                                                         s["table"], s["local"], s["heads"], s["n_heads"]])
        else:
            wp.launch(k.hash_queries, dim=rows, inputs=[q, r, 0, 1, mask, s["keys"]], device=dev)
            wp.launch(k.group_queries, dim=rows, device=dev,
                      inputs=[q, r, 0, 1, 1, 1, s["table_bits"], mask, s["keys"], self._epoch, s["table"], s["local"],
                              s["heads"], s["n_heads"]])
        joined = int(spans > 1)
        if joined:
            wp.launch(k.join_groups, dim=1, device=dev,
                      inputs=[q, r, spans, per, s["join_bits"], s["keys"], self._epoch, s["join_table"], s["heads"],
                              s["n_heads"], s["rep_of"], s["reps"], s["rep_key"], self._n_reps, self.counters])
        else:
            self._spread(k.list_heads, rows, [r], [s["keys"], s["heads"], s["n_heads"], s["reps"], s["rep_key"],
                                                   self._n_reps, self.counters])
        groups = [s["local"], s["rep_of"], joined]

        plan_rows, plan_count = s["reps"], self._n_reps
        res, actions, extra = self._result_fields(work_out, n, fields)
        if self._entries is not None:
            cached, cached_res = self._cache_fields(fields)
            # The cache's kernels run over the distinct queries: their number when host-sized (free to read), else
            # up to every row, threads past the count returning at once.
            reps_dim = max(1, int(self._n_reps.numpy()[0]) if host else rows)
            wp.launch(
                k.cache_lookup, dim=reps_dim,
                inputs=[q, self._entries, s["reps"], s["rep_key"], self._n_reps, self._epoch, s["hit_slot"],
                        s["misses"], s["miss_key"], s["miss_level"], self._n_miss, self.counters], device=dev,
            )
            plan_rows, plan_count = s["misses"], self._n_miss

        # The search comes before anything is written to ``out``: if the planner refuses the input, ``out`` is
        # left as it was.
        if host_check is not None:
            self._check_searched_rows(host_check, plan_rows, plan_count)
        self._plan_inner(inner_in, goal_table, plan_rows, plan_count, rows, work_out, options)

        if self._entries is not None:
            hits = [s["reps"], s["hit_slot"]]
            fused = res is not None and cached_res is not None
            if fused:
                wp.launch(k.FETCH_RESULTS[actions.dtype], dim=reps_dim, device=dev,
                          inputs=[*hits, cached_res, cached["actions"], res, actions])
            for name, view in (extra if fused else fields).items():
                wp.launch(k.FETCH_CACHED[view.dtype], dim=reps_dim, inputs=[*hits, cached[name], view], device=dev)
            status = self._device_view(work_out.status, wp.int8, "status")
            miss_dim = max(1, int(self._n_miss.numpy()[0]) if host else rows)
            wp.launch(
                k.cache_insert, dim=miss_dim,
                inputs=[q, self._entries, s["misses"], s["miss_key"], s["miss_level"], self._n_miss, status,
                        self._cacheable_bits, self._epoch, s["ins_slot"], self.counters], device=dev,
            )
            inserted = [s["misses"], s["ins_slot"]]
            if fused:
                wp.launch(k.STORE_RESULTS[actions.dtype], dim=miss_dim, device=dev,
                          inputs=[*inserted, res, actions, cached_res, cached["actions"]])
            for name, view in (extra if fused else fields).items():
                wp.launch(k.STORE_CACHED[view.dtype], dim=miss_dim, inputs=[*inserted, view, cached[name]], device=dev)
        if res is not None:
            self._spread(k.COPY_RESULTS[actions.dtype], rows, [r], [*groups, res, actions])
        for view in (extra if res is not None else fields).values():
            self._spread(k.COPY_ROWS[view.dtype], rows, [r], [*groups, view])

        if mirror is not None:
            for f in dataclasses.fields(out):
                host, dev_arr = getattr(out, f.name), getattr(mirror, f.name)
                if host is not None and dev_arr is not None:
                    host[...] = dev_arr.numpy()
        return out

    # --- internals -------------------------------------------------------------------------------------------------
    def _plan_inner(
        self, inner_in: tuple, goal_table: GoalTables, plan_rows: Any, plan_count: Any, rows: int, out: PlanBatch,
        options: dict[str, Any],
    ) -> None:
        """Plan the representatives (or the cache's misses): ``plan_rows[:plan_count[0]]``."""
        states, goals, costs, enabled, types = inner_in
        if self._inner_takes_count and not host_sized(self.device):
            # The whole scratch array, not a slice: ``count`` bounds the rows on the device, with no readback.
            agents, count = plan_rows, plan_count
        elif not host_sized(self.device):
            raise CaptureError(f"{self.inner.name} takes no device count: it cannot plan inside a captured region")
        elif self._inner_takes_count and isinstance(states, self._wp.array):
            # On the CPU the count is host memory: the planner gets exactly the rows to search (launching threads
            # for the whole scratch array, all but a few returning at once, costs milliseconds at 100,000 rows).
            # The same view object while the count stays, so the planner's structs need no update.
            agents, count = self._rows_view(plan_rows, int(plan_count.numpy()[0])), None
        elif self._inner_takes_count:  # a host call stays a host call: numpy rows
            agents, count = plan_rows.numpy()[: int(plan_count.numpy()[0])], None
        else:
            # Without ``count`` the planner needs the number of rows on the host: free on the CPU device (host
            # memory), one small readback on a GPU.
            m = int(plan_count.numpy()[0])
            agents, count = (plan_rows.numpy()[:m] if self.device.is_cpu else plan_rows[:m]), None
        if count is None and len(agents) == 0:
            return
        kwargs: dict[str, Any] = dict(goal_table=goal_table, agents=agents, out=out, **options)
        if count is not None:
            kwargs["count"] = count
        if types is not None:  # (a planner without agent types is never given them)
            kwargs["types"] = types
        self.inner.plan(states, goals, costs, enabled, **kwargs)

    def _cost_words(self, costs: Any) -> Any:
        """The cost rows as rows of 64-bit words (two costs each) when their layout allows it (an even number of
        actions, contiguous, 8-byte aligned): half the loads for hashing and comparing them. None otherwise."""
        A = self.tables.n_actions
        if A % 2 or not costs.is_contiguous or costs.ptr % 8:
            return None
        n = costs.shape[0]
        return self._wp.array(ptr=costs.ptr, dtype=self._wp.uint64, shape=(n, A // 2), strides=(4 * A, 8),
                              capacity=n * 4 * A, device=costs.device)

    def _rows_view(self, rows: Any, m: int) -> Any:
        """``rows[:m]``, the same object as last call's when ``rows`` and ``m`` are."""
        kept = self._inner_rows
        if kept is None or kept[0] is not rows or kept[1] != m:
            kept = self._inner_rows = (rows, m, rows[:m])
        return kept[2]

    def _check_searched_rows(self, host: tuple, plan_rows: Any, plan_count: Any) -> None:
        """`check_inputs` on the rows about to be searched (host arrays on the CPU device: reading is free)."""
        goal_table, states, goals, costs, enabled, types = host
        ids = plan_rows.numpy()[: int(plan_count.numpy()[0])]
        if len(ids) == 0:
            return
        check_inputs(self.tables, goal_table, states[ids], goals[ids], None if costs is None else costs[ids],
                     None if enabled is None else enabled[ids], None, None if types is None else types[ids])

    def _parts(self, rows: int) -> int:
        """Spans a call's requests are cut into on the CPU: ``_SPANS_PER_WORKER`` per worker thread for a large
        batch (a worker that finishes early, or starts late on a busy machine, leaves its spans to the others),
        else one (always under capture: one launch). A GPU launch is one thread per request whatever this says."""
        if self._threads == 1 or rows < _PARALLEL_ROWS or self._per_row or not host_sized(self.device):
            return 1
        return min(rows, self._threads * _SPANS_PER_WORKER)

    def _spread(self, kernel: Any, rows: int, before: list, after: list) -> None:
        """Launch a kernel over requests ``0..rows-1`` that takes ``first`` and ``per`` between ``before`` and
        ``after``: thread g serves requests ``[g * per, (g + 1) * per)``.

        On a GPU: one thread per request. On the CPU, where a launch is a serial loop on one core that releases the
        GIL, one single-thread launch per span (`_parts`): this thread and workers of the shared pool take the next
        span until none is left, so no core waits on another that is slow to start.
        """
        wp, dev = self._wp, self.device
        if self._per_row:
            wp.launch(kernel, dim=rows, inputs=[*before, 0, 1, *after], device=dev)
            return
        spans = self._parts(rows)
        per = -(-rows // spans)
        if spans == 1:
            wp.launch(kernel, dim=1, inputs=[*before, 0, per, *after], device=dev)
            return
        taken = itertools.count()  # next() is atomic under the GIL

        def work() -> None:
            g = next(taken)
            while g < spans:
                wp.launch(kernel, dim=1, inputs=[*before, g, per, *after], device=dev)
                g = next(taken)

        run_parallel([work] * min(self._threads, spans))

    def _host_inputs(self, states: Any, goals: Any, costs: Any, enabled: Any, agents: Any) -> tuple:
        """Host inputs as contiguous arrays of the contract's dtypes, shapes checked and agent indices in range.

        Values (finite costs, goal indices) are checked by the inner planner on the rows it searches, before
        anything is written: a query that fails there was never cached, so it cannot be answered without it.
        """
        states = np.ascontiguousarray(states, dtype=np.uint64)
        W, A = self.tables.n_words, self.tables.n_actions
        if states.ndim != 2 or states.shape[1] != W:
            raise ValueError(f"states must have shape [N, {W}], got {states.shape}")
        n = states.shape[0]
        goals = np.ascontiguousarray(goals, dtype=np.int32).reshape(-1)
        if goals.shape != (n,):
            raise ValueError(f"goals must have shape [{n}], got {goals.shape}")
        if costs is not None:
            costs = np.ascontiguousarray(costs, dtype=np.float32)
            if costs.shape != (n, A):
                raise ValueError(f"costs must have shape [{n}, {A}], got {costs.shape}")
        if enabled is not None:
            enabled = np.ascontiguousarray(enabled, dtype=np.bool_)
            if enabled.shape != (n, A):
                raise ValueError(f"enabled must have shape [{n}, {A}], got {enabled.shape}")
        if agents is not None:
            agents = agents.numpy() if isinstance(agents, self._wp.array) else np.asarray(agents)
            if agents.dtype == np.bool_:
                if agents.shape != (n,):
                    raise ValueError(f"an agent mask must have shape [{n}], got {agents.shape}")
                agents = np.flatnonzero(agents)
            agents = np.ascontiguousarray(agents, dtype=np.int32).reshape(-1)
            if len(agents) and (agents.min() < 0 or agents.max() >= n):
                raise ValueError(f"agent indices must be in 0..{n - 1}")
        return states, goals, costs, enabled, agents

    def _token(self, goal_table: GoalTables) -> int:
        known = self._tokens.get(id(goal_table))
        if known is not None and known[0] is goal_table:
            return known[1]
        if len(self._tokens) >= _MAX_TOKENS:
            if capturing(self.device):
                raise CaptureError("plan() under capture got a new goal table while the token table is full (the "
                                   "cache would be emptied once, at capture): plan with it once before capturing")
            # Tokens are never reused while entries may hold them: start over with an empty cache.
            self._tokens = {id(self.tables.goals): (self.tables.goals, 0)}
            self.clear()
            if goal_table is self.tables.goals:
                return 0
        token = max(t for _, t in self._tokens.values()) + 1
        self._tokens[id(goal_table)] = (goal_table, token)
        return token

    def _device(self, x: np.ndarray, dtype: Any) -> Any:
        """A host array on the device: a zero-copy view on the CPU, a copy on a GPU."""
        wp = self._wp
        if dtype is wp.bool:
            return wp.array(x.view(np.bool_), dtype=wp.bool, device=self.device, copy=not self.device.is_cpu)
        return wp.array(x, dtype=dtype, device=self.device, copy=not self.device.is_cpu)

    def _count_array(self, count: Any) -> Any:
        wp = self._wp
        if count is None:
            return None
        if isinstance(count, wp.array):
            if count.device != self.device:
                raise ValueError(f"count is on {count.device}, the planner on {self.device}")
            return count
        value = np.ascontiguousarray(count, dtype=np.int32).reshape(-1)
        if value.shape != (1,):
            raise ValueError(f"count must be a one-element array, got shape {value.shape}")
        return wp.array(value, dtype=wp.int32, device=self.device)

    def _device_view(self, x: Any, dtype: Any, name: str) -> Any:
        wp = self._wp
        if isinstance(x, wp.array):
            if x.dtype != dtype:
                raise ValueError(f"PlanBatch.{name} must be {dtype.__name__}, got {x.dtype.__name__}")
            return x
        if not self.device.is_cpu:
            raise ValueError(f"PlanBatch.{name} is a host array but the planner runs on {self.device}")
        return wp.array(x, dtype=dtype, device=self.device, copy=False)

    def _mirror(self, out: PlanBatch) -> PlanBatch:
        """Device copies of a host batch's fields (a GPU planner given numpy results)."""
        wp = self._wp
        arrays = {}
        for f in dataclasses.fields(out):
            x = getattr(out, f.name)
            arrays[f.name] = None if x is None else wp.array(np.ascontiguousarray(x), device=self.device)
        return PlanBatch(**arrays)

    def _allocating(self, what: str) -> None:
        """Refuse an allocation inside a capture (a graph cannot depend on memory it never filled)."""
        if capturing(self.device):
            raise CaptureError(
                f"plan() under capture needs {what}, not allocated yet: call reserve(capacity) on the planner before "
                f"capturing (a captured call may not allocate what its replays read)"
            )

    def _field_views(self, out: PlanBatch, n: int, remember: bool = True) -> dict[str, Any]:
        """Each per-row field of ``out`` as a 2-D array of words on the device, one row per agent.

        The word is the widest unsigned type (32, 8, 4, 2 or 1 bytes) dividing the row, so one copy kernel per word
        size serves every field whatever its dtype; a field a later PlanBatch gains is copied with no change here.
        """
        wp = self._wp
        views: dict[str, Any] = {}
        for f in dataclasses.fields(out):
            x = getattr(out, f.name)
            if x is None or len(x.shape) == 0 or x.shape[0] != n:
                continue
            cached = self._views.get(f.name)
            if cached is not None and cached[0] is x:
                views[f.name] = cached[1]
                continue
            arr = x if isinstance(x, wp.array) else self._host_field(x, f.name)
            if not arr.is_contiguous:
                raise ValueError(f"PlanBatch.{f.name} must be a contiguous array")
            itemsize = arr.strides[-1] if len(arr.shape) > 1 else wp.types.type_size_in_bytes(arr.dtype)
            row_bytes = int(np.prod(arr.shape[1:], dtype=np.int64)) * itemsize
            # 32-byte words need only 8-byte alignment (four uint64); the others their own size.
            unit = next(u for u in (32, 8, 4, 2, 1) if row_bytes % u == 0 and arr.ptr % min(u, 8) == 0)
            word = {32: self._k.WIDE_WORD, 8: wp.uint64, 4: wp.uint32, 2: wp.uint16, 1: wp.uint8}[unit]
            view = wp.array(
                ptr=arr.ptr, dtype=word, shape=(n, row_bytes // unit), strides=(row_bytes, unit),
                capacity=n * row_bytes, device=arr.device,
            )
            if remember:
                self._views[f.name] = (x, view, arr)
            views[f.name] = view
        if "status" not in views:
            raise ValueError("out has no status field")
        return views

    def _result_fields(self, out: PlanBatch, n: int, fields: dict[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
        """The struct of ``out``'s standard fields for `copy_results` (one pass copies them all), the ``actions``
        word view, and the word views of the fields it does not cover (those a subclass adds). ``(None, None,
        fields)`` when a standard field is missing or of another dtype: every field is then copied on its own."""
        wp = self._wp
        standard = {"status": (wp.int8, np.int8), "cost": (wp.float64, np.float64), "length": (wp.int32, np.int32),
                    "expanded": (wp.int32, np.int32), "level": (wp.int8, np.int8)}
        arrays = [getattr(out, name, None) for name in standard]
        key = tuple(id(x) for x in arrays) + (id(fields.get("actions")),)
        kept = self._results_views
        if kept is not None and kept[0] == key:
            return kept[1]
        typed = {}
        for (name, (dtype, np_dtype)), x in zip(standard.items(), arrays, strict=True):
            if isinstance(x, wp.array) and x.dtype == dtype and x.is_contiguous and tuple(x.shape) == (n,):
                typed[name] = x
            elif (isinstance(x, np.ndarray) and x.dtype == np_dtype and x.shape == (n,) and x.flags.c_contiguous
                  and self.device.is_cpu):
                typed[name] = wp.array(x, dtype=dtype, device=self.device, copy=False)
        if len(typed) < len(standard) or "actions" not in fields:
            result: tuple[Any, Any, dict[str, Any]] = (None, None, fields)
        else:
            res = self._k.ResultFields()
            for name, x in typed.items():
                setattr(res, name, x)
            extra = {name: v for name, v in fields.items() if name not in standard and name != "actions"}
            result = (res, fields["actions"], extra)
        # The arrays are kept with the key so that their ids stay theirs.
        self._results_views = (key, result, arrays)
        return result

    def _host_field(self, x: Any, name: str) -> Any:
        if not isinstance(x, np.ndarray) or not x.flags.c_contiguous:
            raise ValueError(f"PlanBatch.{name} must be a contiguous numpy or Warp array")
        return self._wp.array(x.view(np.uint8).reshape(x.shape[0], -1), dtype=self._wp.uint8, device="cpu",
                              copy=False)

    def _cache_fields(self, fields: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        """The cache's result rows, laid out like ``fields`` (and its standard fields as a `ResultFields` over them,
        for the one-pass fetch and store); a batch with other fields or row sizes (a longer plan buffer, say)
        empties the cache and lays it out anew."""
        wp = self._wp
        layout = {name: (v.dtype, v.shape[1]) for name, v in fields.items()}
        if {name: (a.dtype, a.shape[1]) for name, a in self._cached.items()} != layout:
            self._allocating("the plan cache's result rows for this batch's layout (reserve(capacity, out=batch))")
            if self._pinned:
                self._kept.append(self._cached)
            self.clear()
            K = self.cache_capacity
            self._cached = {
                name: wp.zeros((K, units), dtype=dtype, device=self.device) for name, (dtype, units) in layout.items()
            }
            res = self._k.ResultFields()
            for name, dtype in (("status", wp.int8), ("cost", wp.float64), ("length", wp.int32),
                                ("expanded", wp.int32), ("level", wp.int8)):
                words = self._cached.get(name)
                if words is None or words.shape[1] * wp.types.type_size_in_bytes(words.dtype) != (
                        wp.types.type_size_in_bytes(dtype)):
                    res = None  # not a standard layout: `_result_fields` then copies field by field too
                    break
                setattr(res, name, wp.array(ptr=words.ptr, dtype=dtype, shape=(K,), capacity=words.capacity,
                                            device=self.device))
            self._cached_res = res
        return self._cached, self._cached_res

    def _cache_entries(self) -> Any:
        wp, dev, K = self._wp, self.device, self.cache_capacity
        e = self._k.CacheEntries()
        e.hash = wp.zeros(K, dtype=wp.uint64, device=dev)
        e.state = wp.zeros(K, dtype=wp.int32, device=dev)
        e.used = wp.zeros(K, dtype=wp.int32, device=dev)
        e.claim = wp.zeros(K, dtype=wp.int32, device=dev)
        e.states = wp.zeros((K, self.tables.n_words), dtype=wp.uint64, device=dev)
        e.goal = wp.zeros(K, dtype=wp.int32, device=dev)
        e.token = wp.zeros(K, dtype=wp.int32, device=dev)
        e.level = wp.zeros(K, dtype=wp.int8, device=dev)
        e.agent_type = wp.zeros(K, dtype=wp.int32, device=dev)
        e.cost_bits = wp.zeros((K, max(1, self.tables.n_actions)), dtype=wp.uint32, device=dev)
        e.enabled = wp.zeros((K, max(1, self.tables.n_actions)), dtype=wp.uint8, device=dev)
        e.capacity = K
        e.probes = self.cache_probes
        return e

    def _ensure_scratch(self, rows: int, spans: int) -> dict[str, Any]:
        """Per-request scratch for grouping and the cache, grown on demand and reused.

        The group tables are never cleared (but once in 2**31 calls, by `start_call`): a slot carries the epoch of
        the call that claimed it. Each span's table
        (on a GPU the call's) has at least twice as many slots as the span has requests, the join table twice as
        many as the call has.
        """
        wp, dev = self._wp, self.device
        per = -(-rows // spans)
        bits = max(1, (2 * per - 1).bit_length())
        join_bits = max(1, (2 * rows - 1).bit_length()) if spans > 1 else 1
        if rows > self._rows or spans > self._scratch_parts:
            self._allocating(f"grouping scratch for {rows} rows")
            if self._pinned:
                self._kept.append(self._scratch)
            cap = max(rows, 2 * self._rows) if self._rows else rows
            i32 = ("local", "heads", "rep_of", "reps", "hit_slot", "misses", "miss_level", "ins_slot")
            fresh: dict[str, Any] = {name: wp.zeros(cap, dtype=wp.int32, device=dev) for name in i32}
            for name in ("keys", "rep_key", "miss_key"):
                fresh[name] = wp.zeros(cap, dtype=wp.uint64, device=dev)
            fresh["n_heads"] = wp.zeros(max(spans, self._scratch_parts), dtype=wp.int32, device=dev)
            for name in ("table", "join_table"):
                fresh[name] = self._scratch.get(name)
            self._scratch, self._rows, self._scratch_parts = fresh, cap, max(spans, self._scratch_parts)
        s = self._scratch
        for name, slots in (("table", spans << bits), ("join_table", 1 << join_bits)):
            if s.get(name) is None or s[name].shape[0] < slots:
                self._allocating(f"a group table of {slots} slots")
                if self._pinned and s.get(name) is not None:
                    self._kept.append(s[name])
                # Zero: tag 0, which no call has (the tag counts on from 1, and `start_call` empties the tables
                # before it could come round to a value a slot still holds), so every slot is empty; a graph
                # captured with the old table keeps its own, tagged by the same counter.
                s[name] = wp.zeros(slots, dtype=wp.uint64, device=dev)
        s["table_bits"], s["join_bits"] = bits, join_bits
        return s

    def _check_device_inputs(
        self, states: Any, goals: Any, costs: Any, enabled: Any, agents: Any, count: Any, types: Any = None
    ) -> None:
        """Shapes, dtypes and devices of inputs already on the device (values are not scanned: that would copy)."""
        wp, W, A = self._wp, self.tables.n_words, self.tables.n_actions
        n = states.shape[0]
        expect = [
            ("states", states, wp.uint64, (n, W)),
            ("goals", goals, wp.int32, (n,)),
            ("costs", costs, wp.float32, (n, A)),
            ("enabled", enabled, (wp.bool, wp.uint8), (n, A)),
            ("agents", agents, wp.int32, None),
            ("count", count, wp.int32, (1,)),
            ("types", types, wp.int32, (n,)),
        ]
        for name, x, dtype, shape in expect:
            if x is None:
                continue
            if not isinstance(x, wp.array):
                raise ValueError(f"{name} must be a Warp array when states is one, got {type(x).__name__}")
            if x.device != self.device:
                raise ValueError(f"{name} is on {x.device}, the planner on {self.device}")
            dtypes = dtype if isinstance(dtype, tuple) else (dtype,)
            if x.dtype not in dtypes:
                raise ValueError(f"{name} must be a Warp array of {dtypes[0].__name__}, got {x.dtype.__name__}")
            if shape is not None and tuple(x.shape) != shape:
                raise ValueError(f"{name} must have shape {list(shape)}, got {list(x.shape)}")
            if name == "agents" and len(x.shape) != 1:
                raise ValueError("agents must be a 1-d array of agent indices")
            if name in ("costs", "enabled", "states") and not x.is_contiguous:
                raise ValueError(f"{name} must be contiguous")


def wrap(planner: Any, dedupe: bool = True, plan_cache: int = 0, **options: Any) -> Any:
    """``planner`` behind a `DedupingPlanner` when ``dedupe`` or a ``plan_cache`` (entries) is asked for.

    The cache needs the grouping (its keys are the groups' keys), so ``plan_cache > 0`` wraps even with
    ``dedupe=False``; ``options`` go to `DedupingPlanner`.
    """
    if not dedupe and not plan_cache:
        return planner
    return DedupingPlanner(planner, cache_capacity=plan_cache or 0, **options)


def type_classes(domain: Any) -> np.ndarray:
    """int32 [T]: for each agent type, the lowest type with the same allowed actions and cost multipliers. Goal
    priorities do not reach the planners, so the agents of two such types ask the same queries: grouping keys on
    the class, not the type."""
    seen: dict[tuple, int] = {}
    return np.array([seen.setdefault((t.actions, t.cost_scale), k) for k, t in enumerate(domain.types)],
                    dtype=np.int32)

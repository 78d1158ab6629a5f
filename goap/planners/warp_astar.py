"""The batched Warp A* planner (registered as ``warp``): every agent searches in its own thread.

On a GPU the agents of a call go in one launch (or in waves when their scratch would exceed
``max_scratch_bytes``). On the CPU a Warp launch is a serial loop on one core that releases the GIL, so the agents
are split into chunks, several per core, launched from a small thread pool; each worker owns a chunk-sized
scratch, allocated once and reused across calls.

Scratch per agent (bytes), for W words per state, M = ``max_nodes``, H = the hash table size (the power of two
>= 2M), Q = the most conditions of any goal, L = ``max_plan_length``::

    8 W (M + 1)  node states
    + 17 M       g, h, parent, action, closed
    + 12 M       open list (f, h, node)
    + 4 H        hash table
    + 4 A        this agent's action costs
    + 4 P        cheapest achiever of each action precondition (P preconditions in all)
    + 8 F        the relaxed reachability check: the set of reached values of each fact
    + 4 L + 13   results

At the defaults (M = 1024, L = 32) with W = 1 that is about 46 KB: 100,000 agents in one GPU wave take 4.6 GB;
on the CPU only the chunks in flight hold scratch.
"""

from __future__ import annotations

import math
import os
import queue
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from goap.domain import Domain
from goap.encoding import CondList, DomainTables, GoalTables, encode
from goap.kernels import init_warp
from goap.planners.base import (
    DEFAULT_MAX_NODES,
    DEFAULT_MAX_PLAN_LENGTH,
    PlanBatch,
    check_inputs,
    check_options,
)


def hash_size(max_nodes: int) -> int:
    return 1 << max(1, (2 * max_nodes - 1).bit_length())


def scratch_bytes_per_agent(
    n_words: int, max_nodes: int, n_actions: int, n_pre: int, max_plan_length: int, n_facts: int = 1
) -> int:
    """The formula in the module docstring: device memory one agent's search needs."""
    m = max_nodes
    per_node = 8 * n_words * (m + 1) + 17 * m + 12 * m + 4 * hash_size(m)
    per_agent = 4 * max(1, n_actions) + 4 * max(1, n_pre) + 8 * max(1, n_facts)
    return per_node + per_agent + 4 * max_plan_length + 13


class WarpAStarPlanner:
    """A* for N agents at once on a Warp device; same results as `ReferencePlanner`, node for node.

    Args:
        domain: the domain (or its tables).
        max_nodes: states one search may store (and open-list entries it may hold); BUDGET beyond that.
        max_plan_length: the longest plan returned; a longer optimal plan gives TOO_LONG.
        device: a Warp device ("cpu", "cuda:0"); the default device when None.
        threads: CPU worker threads (default: the number of cores).
        chunk_size: agents per CPU launch (default: enough chunks for 4 per thread, 16..512 agents each).
        max_scratch_bytes: the scratch one GPU wave, or all CPU threads together, may use (default 4 GiB).
        weight: order the open list by g + weight * h: plans cost at most weight x optimal, found faster.
        greedy: order the open list by h alone (greedy best-first): fastest, no bound on the cost.
        heuristic: "h2" (default: h_max cut off after two levels) or "h1" (the cheapest achiever of each unmet
            goal condition only): see `goap.planners.reference`.
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
        max_scratch_bytes: int = 4 << 30,
        weight: float = 1.0,
        greedy: bool = False,
        heuristic: str = "h2",
    ):
        check_options(max_nodes, max_plan_length, weight, heuristic)
        self.heuristic = heuristic
        self.weight = float(weight)
        self.greedy = bool(greedy)
        wp = init_warp()
        from goap.kernels.astar import astar_kernel

        self.tables = domain if isinstance(domain, DomainTables) else encode(domain)
        self.domain = self.tables.domain
        self.max_nodes = int(max_nodes)
        self.max_plan_length = int(max_plan_length)
        try:
            self.device = wp.get_device(device)
        except (ValueError, RuntimeError) as e:
            raise ValueError(f"unknown or unavailable Warp device {device!r}: {e}") from None
        self.threads = max(1, int(threads or os.cpu_count() or 1)) if self.device.is_cpu else 1
        self.chunk_size = chunk_size
        self.max_scratch_bytes = int(max_scratch_bytes)
        self.kernel = astar_kernel(self.tables.n_words)
        self._wp = wp
        self._acts = self._action_arrays()
        self._rx = self._relax_arrays()
        self._goal_arrays: dict[int, tuple[GoalTables, Any]] = {}
        self._scratch: queue.SimpleQueue = queue.SimpleQueue()
        self._scratch_rows = 0
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="goap-astar") if self.threads > 1 else None
        self._dummy_costs = wp.zeros((1, 1), dtype=wp.float32, device=self.device)
        self._dummy_enabled = wp.zeros((1, 1), dtype=wp.uint8, device=self.device)
        self._dummy_ids = wp.zeros(1, dtype=wp.int32, device=self.device)

    # --- public ---------------------------------------------------------------------------------------------
    def bytes_per_agent(self) -> int:
        return self.tables.bytes_per_agent(self.max_nodes, self.max_plan_length)

    @property
    def scratch_bytes(self) -> int:
        """Device memory held by search scratch now (all workers): it grows with use and is then reused."""
        sets = self.threads if self.device.is_cpu else 1
        return self._scratch_rows * sets * self.bytes_per_agent() if self._scratch_rows else 0

    def load(self) -> None:
        """Compile or load the kernel module now rather than on the first call."""
        self._wp.load_module(self.kernel.module, device=self.device)

    def plan(
        self,
        states: Any,
        goals: Any,
        costs: Any = None,
        enabled: Any = None,
        *,
        goal_table: GoalTables | None = None,
        agents: Any = None,
        out: PlanBatch | None = None,
    ) -> PlanBatch:
        """Plan for every agent (or those in ``agents``); see `goap.planners.base` for the contract.

        Inputs may be numpy arrays (zero-copy on the CPU) or Warp arrays on this planner's device.
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
        if out.actions.shape != (n, self.max_plan_length):
            raise ValueError(f"out.actions must have shape [{n}, {self.max_plan_length}]")
        rows = n if agents is None else len(agents)
        if rows == 0:
            return out

        dev = self.device
        d_states = self._to_device(states, wp.uint64)
        d_goals = self._to_device(goals, wp.int32)
        d_costs = self._dummy_costs if costs is None else self._to_device(costs, wp.float32)
        d_enabled = self._dummy_enabled if enabled is None else self._to_device(_as_u8(enabled), wp.uint8)
        d_ids = self._dummy_ids if agents is None else self._to_device(agents, wp.int32)
        gt = self._goal_struct(goal_table)
        results, copy_back = self._results(out)

        max_pops = min(2**31 - 1, 1 + self.max_nodes * max(1, self.tables.n_actions))
        common = dict(
            costs=d_costs,
            has_costs=int(costs is not None),
            enabled=d_enabled,
            has_enabled=int(enabled is not None),
            agent_ids=d_ids,
            use_ids=int(agents is not None),
        )

        def launch(first: int, count: int, sc: Any) -> None:
            wp.launch(
                self.kernel,
                dim=count,
                inputs=[
                    d_states, d_goals, common["costs"], common["has_costs"], common["enabled"],
                    common["has_enabled"], common["agent_ids"], common["use_ids"], first, self._acts, gt, self._rx,
                    self.max_nodes, hash_size(self.max_nodes) - 1, max_pops, self.weight, int(self.greedy),
                    int(self.heuristic == "h2"), sc, results,
                ],
                device=dev,
            )

        if dev.is_cpu:
            chunk = self.chunk_size or int(np.clip(math.ceil(rows / (4 * self.threads)), 16, 512))
            # Never more scratch than the searches need: a few agents, or a budget so large (a PDDL task) that
            # max_scratch_bytes across all threads holds only a few agents at a time.
            fits = max(1, self.max_scratch_bytes // (self.threads * self.bytes_per_agent()))
            chunk = max(1, min(chunk, rows, fits))
            self._ensure_scratch(chunk, self.threads)
            spans = [(s, min(chunk, rows - s)) for s in range(0, rows, chunk)]

            def run(span: tuple[int, int]) -> None:
                sc = self._scratch.get()
                try:
                    launch(span[0], span[1], sc)
                finally:
                    self._scratch.put(sc)

            if self._pool is None or len(spans) == 1:
                for span in spans:
                    run(span)
            else:
                for f in [self._pool.submit(run, span) for span in spans]:
                    f.result()
        else:
            per_agent = self.bytes_per_agent()
            wave = max(1, min(rows, self.max_scratch_bytes // per_agent))
            self._ensure_scratch(wave, 1)
            sc = self._scratch.get()
            try:
                for first in range(0, rows, wave):
                    launch(first, min(wave, rows - first), sc)
            finally:
                self._scratch.put(sc)
            copy_back()
        return out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    # --- internals -----------------------------------------------------------------------------------------
    def _to_device(self, x: Any, dtype: Any) -> Any:
        wp = self._wp
        if isinstance(x, wp.array):
            if x.device != self.device:
                raise ValueError(f"array on {x.device} given to a planner on {self.device}")
            if x.dtype != dtype:
                raise ValueError(f"expected a Warp array of {dtype.__name__}, got {x.dtype.__name__}")
            return x
        return wp.array(np.ascontiguousarray(x), dtype=dtype, device=self.device, copy=not self.device.is_cpu)

    def _results(self, out: PlanBatch) -> tuple[Any, Any]:
        wp = self._wp
        r = _results_struct()
        fields = [("status", wp.int8), ("cost", wp.float32), ("length", wp.int32), ("actions", wp.int32),
                  ("expanded", wp.int32)]
        device_arrays = {}
        for name, dtype in fields:
            arr = getattr(out, name)
            d = wp.array(arr, dtype=dtype, device=self.device, copy=not self.device.is_cpu)
            device_arrays[name] = d
            setattr(r, name, d)

        def copy_back() -> None:
            for name, _ in fields:
                getattr(out, name)[...] = device_arrays[name].numpy()

        return r, copy_back

    def _action_arrays(self) -> Any:
        from goap.kernels.astar import ActionArrays

        t, s = self.tables, ActionArrays()
        s.pre_mask = self._const(t.pre_mask, "uint64")
        s.pre_value = self._const(t.pre_value, "uint64")
        s.pre_start, s.pre_word, s.pre_shift, s.pre_fmask, s.pre_op, s.pre_k = self._cond_arrays(t.pre_ints)
        s.eff_set = self._const(t.eff_set, "uint64")
        s.eff_clear = self._const(t.eff_clear, "uint64")
        st = t.eff_steps
        s.step_start = self._const(st.start, "int32")
        s.step_word = self._const(st.word, "int32")
        s.step_shift = self._const(st.shift, "int32")
        s.step_fmask = self._const(st.mask, "uint64")
        s.step_delta = self._const(st.delta, "int64")
        s.step_hi = self._const(st.hi, "uint64")
        s.cost = self._const(t.cost, "float32")
        s.n_actions = t.n_actions
        return s

    def _relax_arrays(self) -> Any:
        from goap.kernels.astar import RelaxArrays

        r, L, s = self.tables.relaxed, self.tables.layout, RelaxArrays()
        s.fact_word = self._const(L.word, "int32")
        s.fact_shift = self._const(L.shift, "int32")
        s.fact_mask = self._const(np.array([L.field_mask(f) for f in range(len(L.word))], np.uint64), "uint64")
        s.n_values = self._const(r.n_values, "int32")
        s.pre_start = self._const(r.pre_start, "int32")
        s.pre_fact = self._const(r.pre_fact, "int32")
        s.pre_op = self._const(r.pre_op, "int32")
        s.pre_k = self._const(r.pre_k, "uint64")
        s.pre_sat = self._const(r.pre_sat, "uint64")
        s.eff_start = self._const(r.eff_start, "int32")
        s.eff_fact = self._const(r.eff_fact, "int32")
        s.eff_op = self._const(r.eff_op, "int32")
        s.eff_value = self._const(r.eff_value, "int64")
        s.pre_ach_start = self._const(r.pre_ach_start, "int32")
        s.pre_ach_action = self._const(r.pre_ach_action, "int32")
        s.n_facts = len(L.word)
        s.total_values = r.total_values
        return s

    def _goal_struct(self, gt: GoalTables) -> Any:
        cached = self._goal_arrays.get(id(gt))
        if cached is not None and cached[0] is gt:
            return cached[1]
        from goap.kernels.astar import GoalArrays

        s = GoalArrays()
        s.mask = self._const(gt.mask, "uint64")
        s.value = self._const(gt.value, "uint64")
        s.int_start, s.int_word, s.int_shift, s.int_fmask, s.int_op, s.int_k = self._cond_arrays(gt.ints)
        s.atom_start, s.atom_word, s.atom_shift, s.atom_fmask, s.atom_op, s.atom_k = self._cond_arrays(gt.atoms)
        s.ach_start = self._const(gt.achievers, "int32")
        s.ach_action = self._const(gt.achiever_action, "int32")
        s.max_achieved = self._const(gt.max_achieved, "int32")
        s.atom_fact = self._const(gt.atom_fact, "int32")
        s.atom_sat = self._const(gt.atom_sat, "uint64")
        if len(self._goal_arrays) > 64:
            self._goal_arrays.clear()
        self._goal_arrays[id(gt)] = (gt, s)
        return s

    def _cond_arrays(self, c: CondList) -> tuple[Any, ...]:
        return (
            self._const(c.start, "int32"),
            self._const(c.word, "int32"),
            self._const(c.shift, "int32"),
            self._const(c.mask, "uint64"),
            self._const(c.op, "int32"),
            self._const(c.k, "uint64"),
        )

    def _const(self, x: np.ndarray, dtype: str) -> Any:
        """A read-only table on the device; empty tables get one padding element (never read)."""
        wp = self._wp
        x = np.ascontiguousarray(x, dtype=np.dtype(dtype))
        if x.size == 0:
            x = np.zeros((1,) * x.ndim if x.ndim > 1 else 1, dtype=x.dtype)
        return wp.array(x, dtype=getattr(wp, dtype), device=self.device)

    def _ensure_scratch(self, rows: int, count: int) -> None:
        """Make sure ``count`` scratch sets of at least ``rows`` threads exist (reallocated only to grow)."""
        if rows <= self._scratch_rows:
            return
        from goap.kernels.astar import Scratch

        wp, dev, m, W = self._wp, self.device, self.max_nodes, self.tables.n_words
        rows = max(rows, self._scratch_rows)
        while not self._scratch.empty():
            self._scratch.get()
        for _ in range(count):
            s = Scratch()
            s.node_state = wp.empty((rows, m + 1, W), dtype=wp.uint64, device=dev)
            s.node_g = wp.empty((rows, m), dtype=wp.float32, device=dev)
            s.node_h = wp.empty((rows, m), dtype=wp.float32, device=dev)
            s.node_parent = wp.empty((rows, m), dtype=wp.int32, device=dev)
            s.node_action = wp.empty((rows, m), dtype=wp.int32, device=dev)
            s.node_closed = wp.empty((rows, m), dtype=wp.uint8, device=dev)
            s.heap_f = wp.empty((rows, m), dtype=wp.float32, device=dev)
            s.heap_h = wp.empty((rows, m), dtype=wp.float32, device=dev)
            s.heap_node = wp.empty((rows, m), dtype=wp.int32, device=dev)
            s.table = wp.full((rows, hash_size(m)), -1, dtype=wp.int32, device=dev)
            s.act_cost = wp.empty((rows, max(1, self.tables.n_actions)), dtype=wp.float32, device=dev)
            s.pre_cost = wp.empty((rows, max(1, self.tables.relaxed.n_pre)), dtype=wp.float32, device=dev)
            s.reached = wp.empty((rows, max(1, len(self.domain.facts))), dtype=wp.uint64, device=dev)
            self._scratch.put(s)
        self._scratch_rows = rows


def _results_struct() -> Any:
    from goap.kernels.astar import Results

    return Results()


def _as_u8(x: Any) -> Any:
    if isinstance(x, np.ndarray) and x.dtype == np.bool_:
        return x.view(np.uint8)
    return x


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

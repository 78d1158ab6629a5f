"""Hash-distributed A* (registered as ``warp-hda``): one large query searched by K workers at once.

The batched planner (`goap.planners.warp_astar`) gives each query one thread: a single large PDDL task runs on one
core however many the machine has. This planner spreads one query over ``workers`` workers, each owning the states
whose hash falls to it, with its own node pool, hash table and open list, exchanging successors in batches (HDA*,
Kishimoto, Fukunaga and Botea 2009; the kernel and the round structure are described in `goap.kernels.hda`). On the
CPU each worker's round is one Warp launch, the K launches run at once on the shared worker pool
(`goap.launch.cpu_pool`), and the host joins them between rounds; on a GPU a round is one launch of K threads, each
expanding the best ``batch`` states of its open list (GA*-style), with as many workers as the device holds.

Results are the planner contract's (`goap.planners.base`): with an admissible heuristic every OK plan has the optimal
cost, the cost A* finds; plans may be other optimal plans than A*'s, and ``expanded`` sums every worker's
expansions (a few more than A*'s: a worker expands its own best states, not the global best). Queries of one call
are searched one after another, each by every worker (a batch of small queries belongs to ``warp``).

Memory: every worker's pool starts at ``ceil(max_nodes / workers)`` states and grows ``growth`` times when a worker
runs out of room (its nodes are moved, the search goes on), up to ``node_ceiling`` states a worker, as long as the
pools of all workers (the old and the new while they move), the per-worker heuristic rows and the message boxes fit
in ``max_scratch_bytes``. A worker that needs more than the largest pool ends the query BUDGET (``level`` is then
``n_levels``: final). Rounds are capped by the pop limits of the largest pool (`goap.planners.base.pop_limit`), so
no call runs unbounded.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any

import numpy as np

from goap.domain import Domain
from goap.encoding import HMAX_BUCKETS, DomainTables, GoalTables, encode, hash_size
from goap.kernels import init_warp
from goap.launch import Launcher, cpu_pool, cpu_workers
from goap.planners.base import (
    DEFAULT_GROWTH,
    DEFAULT_HEURISTIC,
    DEFAULT_LMCUT_TIES,
    DEFAULT_LMCUT_ZONE_TIES,
    DEFAULT_MAX_NODES,
    DEFAULT_MAX_PLAN_LENGTH,
    DEFAULT_MAX_SCRATCH_BYTES,
    DEFAULT_NODE_CEILING,
    LMCUT_TIES_AUTO,
    LMCUT_ZONE_AUTO,
    PlanBatch,
    check_inputs,
    check_lmcut_ties,
    check_lmcut_zone_ties,
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

__all__ = ["DEFAULT_BATCH", "FIRST_BATCH", "GPU_WORKERS", "HDA_HEURISTICS", "ROUND_SECONDS", "HdaPlanner",
           "one_task_planner"]

#: The most expansions per worker per round. On the CPU a round's batch adapts to about `ROUND_SECONDS` of a worker's
#: CPU time (by the last round's cost per expansion), from `FIRST_BATCH`: enough that a round's join and thread
#: hand-offs are small against its work, few enough that workers do not run far past the states A* would expand
#: (each round moves a dive towards the goal by about one step across workers: on tidybot p06, 434 expansions for
#: A*, a fixed 32 a round expanded 912). On a GPU the batch is fixed at this.
DEFAULT_BATCH = 256
FIRST_BATCH = 8
ROUND_SECONDS = 0.01
#: Workers by default on a GPU: each a thread of one launch expanding its own open list's best ``batch`` states.
GPU_WORKERS = 32
#: The heuristics the HDA* kernel computes (pattern databases are the batched planner's only).
HDA_HEURISTICS = ("lmcut", "hmax", "hmax_depth2", "hmax_depth1")
_RESULT_FIELDS = (("status", "int8"), ("cost", "float64"), ("length", "int32"), ("actions", "int32"),
                  ("expanded", "int32"), ("level", "int8"))


def one_task_planner(name: str, threads: int | None) -> tuple[str, dict[str, Any]]:
    """The registered planner and options that search one task over ``threads`` threads: ``warp`` with more than
    one is HDA* (``warp-hda``, `HdaPlanner`); one thread (or None) keeps the planner named. A ValueError for a
    planner that searches on one thread only."""
    if name == "warp-hda":
        return name, {} if threads is None else {"workers": int(threads)}
    if threads is None or int(threads) <= 1:
        return name, {}
    if name == "warp":
        return "warp-hda", {"workers": int(threads)}
    raise ValueError(f"--threads {threads}: planner '{name}' searches a task on one thread; the warp planner "
                     f"searches it over several (HDA*)")


class HdaPlanner:
    """A* for one query at a time over K workers (HDA*); the optimal costs of `WarpAStarPlanner`.

    Args:
        domain: the domain (or its tables).
        workers: workers sharing each query (default: ``threads``, else the machine's cores, 1..8, on the CPU, and
            `GPU_WORKERS` on a GPU). On the CPU each runs on a thread of the shared pool; on a GPU they are threads
            of one launch.
        threads: the same as ``workers`` (the option's name for the batched planner, so that one option sets it
            from the command line).
        max_nodes: states all workers together may store before the pools first grow.
        max_plan_length: the longest plan returned whole; a longer optimal plan gives TOO_LONG and its first steps.
        device: a Warp device ("cpu", "cuda:0"); the default device when None.
        max_scratch_bytes: hard cap on the search's memory: pools, heuristic rows and message boxes (4 GiB).
        heuristic: one of `HDA_HEURISTICS` (admissible: optimal plans).
        lmcut_ties: LM-cut's pcf among equal maxima: "highest" (default), "stable", or "max" of the two values
            (`goap.planners.base.LMCUT_TIES`; "auto" is refused, as below).
        lmcut_zone_ties: LM-cut's goal-zone tie rule for zero-cost actions' pcfs, on by default
            (`goap.planners.base.DEFAULT_LMCUT_ZONE_TIES`); ``"max"``: the larger of LM-cut with and without it
            (``"auto"`` is refused: the probe of `goap.planners.base.LMCUT_ZONE_AUTO` is per search, one worker).
        growth: pool growth when a worker runs out of room (1: the first pool is the last).
        node_ceiling: the largest pool of one worker (default 2**25 states, at least the first pool).
        batch: the most expansions per worker per round (on the CPU a round's adapts to about `ROUND_SECONDS`
            of work; on a GPU it is this).
        message_slots: successors one worker may send another in one round (default: ``batch`` times the
            domain's actions, 64..4096); a full box ends the sender's round early, never loses a state.
        chunk_size: accepted for the command line's sake (the batched planner's option), unused.
        shared_stop: on the CPU, a round ends for every worker soon after the first has expanded its batch (each
            after one pop at least), rather than at the slowest worker's batch (`goap.kernels.hda`).
        lazy: compute a state's h when it is first popped, not when it is stored (its parent's h less the action's
            cost bounds it until then): states never expanded cost no heuristic call, and a round's work is its
            batch, whatever its inbox holds. Default: on for ``lmcut`` and ``hmax``.
    """

    name = "warp-hda"

    def __init__(
        self,
        domain: Domain | DomainTables,
        workers: int | None = None,
        threads: int | None = None,
        max_nodes: int = DEFAULT_MAX_NODES,
        max_plan_length: int = DEFAULT_MAX_PLAN_LENGTH,
        device: str | None = None,
        max_scratch_bytes: int = DEFAULT_MAX_SCRATCH_BYTES,
        heuristic: str = DEFAULT_HEURISTIC,
        growth: int = DEFAULT_GROWTH,
        node_ceiling: int | None = None,
        batch: int = DEFAULT_BATCH,
        message_slots: int | None = None,
        chunk_size: int | None = None,
        lmcut_ties: str = DEFAULT_LMCUT_TIES,
        lmcut_zone_ties: bool | str = DEFAULT_LMCUT_ZONE_TIES,
        shared_stop: bool = True,
        lazy: bool | None = None,
    ):
        heuristic = heuristic_name(heuristic)
        self.lmcut_ties = check_lmcut_ties(lmcut_ties)
        self.lmcut_zone_ties = check_lmcut_zone_ties(lmcut_zone_ties)
        if self.lmcut_ties == LMCUT_TIES_AUTO:
            raise ValueError('lmcut_ties="auto" is an option of the one-worker A* (threads=1); hash-distributed '
                             'A* takes "highest", "stable" or "max"')
        if self.lmcut_zone_ties == LMCUT_ZONE_AUTO:
            raise ValueError('lmcut_zone_ties="auto" is an option of the one-worker A* (threads=1); hash-distributed '
                             'A* takes true, false or "max"')
        check_options(max_nodes, max_plan_length, 1.0, heuristic, growth, node_ceiling)
        if heuristic not in HDA_HEURISTICS:
            raise ValueError(f"heuristic {heuristic!r} is not computed by the HDA* planner (it takes "
                             f"{', '.join(HDA_HEURISTICS)})")
        k = workers if workers is not None else threads
        for name, v in (("workers", k), ("batch", batch), ("message_slots", message_slots)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | np.integer) or not 1 <= v <= 4096):
                raise ValueError(f"{name} must be an integer in 1..4096, got {v!r}")
        if workers is not None and threads is not None and workers != threads:
            raise ValueError(f"workers={workers} and threads={threads} disagree: give one of them")
        wp = init_warp()
        from goap.kernels import astar, hda
        from goap.kernels.semantics import DomainTables as DomainStruct
        from goap.kernels.semantics import to_device

        self._wp, self._k, self._hk = wp, astar, hda
        try:
            self.device = wp.get_device(device)
        except (ValueError, RuntimeError) as e:
            raise ValueError(f"unknown or unavailable Warp device {device!r}: {e}") from None
        self.workers = int(k) if k is not None else (cpu_workers() if self.device.is_cpu else GPU_WORKERS)
        self.threads = self.workers
        self.heuristic = heuristic
        self.tables = domain if isinstance(domain, DomainTables) else encode(domain)
        self.domain = self.tables.domain
        self.max_nodes = int(max_nodes)
        self.max_plan_length = int(max_plan_length)
        self.max_scratch_bytes = int(max_scratch_bytes)
        self.batch = int(batch)
        for name, value in (("shared_stop", shared_stop), ("lazy", lazy)):
            if not isinstance(value, (bool, np.bool_)) and not (name == "lazy" and value is None):
                raise ValueError(f"{name} must be true or false, got {value!r}")
        self.shared_stop = bool(shared_stop)
        # Lazy evaluation pays where h is dear (LM-cut, h_max: most stored states are never expanded); the truncated
        # h_max costs little more than the bookkeeping it would save.
        self.lazy = heuristic in ("lmcut", "hmax") if lazy is None else bool(lazy)
        A = max(1, self.tables.n_actions)
        self.message_slots = int(message_slots) if message_slots is not None else min(4096, max(64, self.batch * A))
        self._conds = condition_tables(self.tables)
        K = self.workers
        first = max(2, -(-self.max_nodes // K))
        ceiling = max(first, DEFAULT_NODE_CEILING if node_ceiling is None else int(node_ceiling))
        fixed = self._row_bytes() + self._message_bytes()
        levels: list[int] = []
        for p in pool_levels(first, int(growth), ceiling):
            moving = 0 if not levels else self._pool_bytes(levels[-1])
            if fixed + self._pool_bytes(p) + moving > self.max_scratch_bytes:
                break
            levels.append(p)
        if not levels:
            raise ValueError(
                f"{K} worker(s) with pools of {first:,} states need {fixed + self._pool_bytes(first):,} bytes of "
                f"scratch, more than max_scratch_bytes={self.max_scratch_bytes:,}; lower max_nodes or the workers, "
                f"or raise max_scratch_bytes")
        if levels[-1] <= self.tables.n_actions:
            raise ValueError(
                f"the largest pool ({levels[-1]:,} states a worker) must exceed the domain's {self.tables.n_actions:,} "
                f"actions (a worker expands a state only with room for all its successors); raise max_scratch_bytes "
                f"or node_ceiling")
        self.pools = levels

        dev = self.device
        self.kernel = hda.hda_kernel(self.tables.n_words, bool(self.tables.has_terms), bool(self.tables.typed))
        self.launcher = Launcher(dev, threads=K)
        if dev.is_cpu and K > 1:
            cpu_pool(K)
        self._dt = to_device(self.tables, DomainStruct, dev)
        self._ct = to_device(self._conds, astar.ConditionTables, dev)
        self._ct.lm_stable = lmcut_ties_code(self.lmcut_ties)
        self._ct.lm_zone = lmcut_zone_code(self.lmcut_zone_ties)
        self._goal_structs: dict[int, tuple[GoalTables, Any]] = {}
        self._level = -1  # the pool level allocated (-1: none yet)
        self._sc: Any = None
        self._options: dict[int, Any] = {}
        self._wk = self._workers_struct()
        self._ctl_view = self._wk.ctl.numpy() if dev.is_cpu else None
        self._query = astar.Query()
        self._dummy_costs = wp.zeros((1, 1), dtype=wp.float32, device=dev)
        self._dummy_enabled = wp.zeros((1, 1), dtype=wp.bool, device=dev)
        self._dummy_ids = wp.zeros(1, dtype=wp.int32, device=dev)
        self._count = wp.zeros(1, dtype=wp.int32, device=dev)
        self.rounds = 0  # rounds of the last query (a measure of its synchronisation)
        #: CPU seconds of the last query's critical path: per round the slowest worker's thread CPU time, plus the
        #: calling thread's own work between rounds. What the search would take on K idle cores, whatever else the
        #: machine runs (benchmarks/hda.py reports it beside the wall time).
        self.critical_cpu_seconds = 0.0

    # --- public ---------------------------------------------------------------------------------------------
    @property
    def n_levels(self) -> int:
        return len(self.pools)

    @property
    def scratch_bytes(self) -> int:
        """Device memory the search holds now: the pools of the level reached, heuristic rows and boxes."""
        pools = 0 if self._level < 0 else self._pool_bytes(self.pools[self._level])
        return pools + self._row_bytes() + self._message_bytes()

    def load(self) -> None:
        """Compile or load the kernel module now rather than on the first call."""
        self._wp.load_module(self.kernel.module, device=self.device)

    def close(self) -> None:
        """Nothing to stop: the CPU worker pool is shared. Kept for the planner protocol."""

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
        out: PlanBatch | None = None,
        max_escalated_nodes: int | None = None,
    ) -> PlanBatch:
        """Plan every requested row (see `goap.planners.base`), one query after another, each over every worker.

        Inputs are host arrays (or Warp arrays, read to the host once); ``max_escalated_nodes`` is accepted for the
        contract's sake: a query's pools grow within ``max_scratch_bytes`` alone.
        """
        wp = self._wp
        goal_table = goal_table or self.tables.goals
        states, goals, costs, enabled, agents, types = (host_view(x) for x in (states, goals, costs, enabled, agents,
                                                                               types))
        states, goals, costs, enabled, agents = check_inputs(self.tables, goal_table, states, goals, costs, enabled,
                                                             agents, types)
        types = check_types(self.tables, types, states.shape[0], agents)
        n = states.shape[0]
        out = out if out is not None else PlanBatch.empty(n, self.max_plan_length)
        if tuple(out.actions.shape) != (n, self.max_plan_length):
            raise ValueError(f"out.actions must have shape [{n}, {self.max_plan_length}], got {out.actions.shape}")
        rows = np.arange(n) if agents is None else agents
        if len(rows) == 0:
            return out
        q = self._query
        q.states = self._array(states, wp.uint64)
        q.goals = self._array(goals, wp.int32)
        q.costs = self._dummy_costs if costs is None else self._array(costs, wp.float32)
        q.has_costs = int(costs is not None)
        q.enabled = self._dummy_enabled if enabled is None else self._array(enabled, wp.bool)
        q.has_enabled = int(enabled is not None)
        q.ids, q.use_ids, q.count = self._dummy_ids, 0, self._count
        q.types = self._dummy_ids if types is None else self._array(types, wp.int32)
        q.has_types = int(types is not None)
        gt, rel = self._goal_struct(goal_table)
        results, host = self._results(out)
        self.load()
        self._current = (q, gt, rel, results)
        if self._level < 0:
            self._allocate(0)
        levels = [self._solve(int(row), q, gt, rel, results) for row in rows]
        for arr, d in host:  # a GPU's results back into the host batch
            arr[...] = d.numpy()
        host_view(out.level)[rows] = levels  # (written here: the kernel does not write levels)
        return out

    # --- one query ------------------------------------------------------------------------------------------------
    def _solve(self, row: int, q: Any, gt: Any, rel: Any, results: Any) -> int:
        """Search query ``row`` over every worker; returns the pool level it ended at (``n_levels``: BUDGET)."""
        hk = self._hk
        host_cpu = time.thread_time()
        self._round_cpu = [0.0, 0.0]  # per round: the slowest worker's thread CPU; the calling thread's share of it
        self._set_ctl(hk.CTL_ROW, row)
        self._step(hk.START, self.workers, q, gt, rel, results)
        rounds = 0
        verdict = self._ctl(hk.CTL_VERDICT)
        if verdict == hk.VERDICTS["going"]:
            cap = 2 * self.workers * pop_limit(self.pools[-1]) + 4 * self.n_levels + 8
            verdict = hk.VERDICTS["budget"]
            adapt = self.device.is_cpu and self.workers > 1
            batch = min(self.batch, FIRST_BATCH) if adapt else self.batch
            for rounds in range(1, cap + 1):  # noqa: B007 - the count is kept
                self._set_ctl(hk.CTL_BATCH, batch)
                slowest = self._round(q, gt, rel, results)
                if adapt and slowest > 0:  # the next round's batch: about ROUND_SECONDS of the slowest worker's CPU
                    batch = max(1, min(self.batch, int(batch * ROUND_SECONDS / slowest)))
                self._step(hk.JOIN, 1, q, gt, rel, results)
                v = self._ctl(hk.CTL_VERDICT)
                if v == hk.VERDICTS["done"]:
                    verdict = v
                    break
                if v == hk.VERDICTS["grow"]:
                    if self._level + 1 >= self.n_levels:
                        break  # every pool was tried: BUDGET
                    self._allocate(self._level + 1)
                elif self._ctl(hk.CTL_WORK) == 0:
                    raise RuntimeError("HDA*: a round made no progress and the search is not done (a bug)")
            if verdict != hk.VERDICTS["done"]:
                self._set_ctl(hk.CTL_VERDICT, hk.VERDICTS["budget"])
        self.rounds = rounds
        self._step(hk.FINISH, 1, q, gt, rel, results)
        slowest, own = self._round_cpu
        self.critical_cpu_seconds = slowest + (time.thread_time() - host_cpu - own)
        return self.n_levels if verdict == hk.VERDICTS["budget"] else self._level

    def _round(self, q: Any, gt: Any, rel: Any, results: Any) -> float:
        """One round: every worker's launch, at once on the CPU pool (one launch of K threads on a GPU); returns the
        slowest worker's thread CPU seconds (0 for a single launch, whose time is the calling thread's)."""
        hk = self._hk
        if not self.device.is_cpu or self.workers == 1:
            self._step(hk.ROUND, self.workers, q, gt, rel, results)
            return 0.0
        cpu = [0.0] * self.workers

        def job(w: int, cmd: Any) -> None:
            t = time.thread_time()
            cmd.launch()
            cpu[w] = time.thread_time() - t

        jobs = []
        for w in range(self.workers):
            cmd = self.launcher.recorded(self.kernel, self._inputs(hk.ROUND, w, q, gt, rel, results))
            cmd.set_dim(1)
            jobs.append(functools.partial(job, w, cmd))
        _run_all(jobs)
        self._round_cpu[0] += max(cpu)
        self._round_cpu[1] += cpu[0]  # (worker 0 ran on the calling thread)
        return max(cpu)

    def _step(self, mode: int, dim: int, q: Any, gt: Any, rel: Any, results: Any) -> None:
        self.launcher.launch(self.kernel, dim, self._inputs(mode, 0, q, gt, rel, results))

    def _inputs(self, mode: int, first: int, q: Any, gt: Any, rel: Any, results: Any) -> list[Any]:
        return [mode, first, q, self._dt, gt, self._ct, rel, self._options[self._level], self._sc, self._sc, 0,
                self._wk, results]

    def _ctl(self, slot: int) -> int:
        if self._ctl_view is not None:
            return int(self._ctl_view[slot])
        return int(self._wk.ctl.numpy()[slot])

    def _set_ctl(self, slot: int, value: int) -> None:
        if self._ctl_view is not None:
            self._ctl_view[slot] = value
            return
        host = self._wk.ctl.numpy()
        host[slot] = value
        self._wk.ctl.assign(host)

    # --- memory ---------------------------------------------------------------------------------------------------
    def _pool_bytes(self, pool: int) -> int:
        """Bytes the pools of all workers take at ``pool`` states each: states, g, h, parent, position, open list,
        lazy flag, table."""
        W = self.tables.n_words
        return self.workers * (8 * W * (pool + 1) + 29 * pool + 4 * hash_size(pool))

    def _row_specs(self) -> list[tuple[str, tuple[int, ...], Any]]:
        """The per-worker rows that do not depend on the pool (the heuristic's and the action costs), each row padded
        to a multiple of `hk.PAD` elements so that no two workers' rows share a cache line (h_max's bucket heads, 65
        of them, are written at every queue operation)."""
        return [(name, (K, -(-n // self._hk.PAD) * self._hk.PAD), dtype)
                for name, (K, n), dtype in self._unpadded_row_specs()]

    def _unpadded_row_specs(self) -> list[tuple[str, tuple[int, int], Any]]:
        wp, K = self._wp, self.workers
        A = max(1, self.tables.n_actions)
        C = max(1, self._conds.n_conditions)
        lm = self.heuristic == "lmcut"
        hmax, depth2 = lm or self.heuristic == "hmax", self.heuristic == "hmax_depth2"
        return [
            ("act_cost", (K, A), wp.float64),
            ("act_h", (K, A if hmax else 1), wp.float64),
            ("pre_cost", (K, max(1, self.tables.relaxed.n_pre) if depth2 else 1), wp.float64),
            ("cond_h", (K, C if hmax else 1), wp.float64),
            ("act_rc", (K, A if lm else 1), wp.float64),
            ("reached", (K, max(1, len(self.domain.facts))), wp.uint64),
            ("cond_heap", (K, C if hmax else 1), wp.int32),
            ("cond_pos", (K, C if hmax else 1), wp.int32),
            ("act_left", (K, A if hmax else 1), wp.int32),
            ("act_pcf", (K, A if lm else 1), wp.int32),
            ("act_pcf0", (K, A if lm else 1), wp.int32),
            ("act_round", (K, A if lm else 1), wp.int32),
            ("act_mark", (K, A if lm else 1), wp.int32),
            ("cond_mark", (K, C if lm else 1), wp.int32),
            ("cond_list", (K, C if lm else 1), wp.int32),
            ("cond_child", (K, C if lm else 1), wp.int32),
            ("act_next", (K, A if lm else 1), wp.int32),
            ("act_prev", (K, A if lm else 1), wp.int32),
            ("bucket", (K, HMAX_BUCKETS + 1 if hmax else 1), wp.int32),
            ("cond_prev", (K, C if hmax else 1), wp.int32),
        ]

    def _row_bytes(self) -> int:
        size = self._wp.types.type_size_in_bytes
        return sum(math.prod(shape) * size(dtype) for _, shape, dtype in self._row_specs())

    def _message_bytes(self) -> int:
        K, W = self.workers, self.tables.n_words
        pad = int(self._hk.PAD)
        return ((2 * K * K * self.message_slots + K * max(1, self.tables.n_actions)) * (8 * W + 20)
                + 4 * pad * (2 * K * K + K) + 60 * pad * K)  # boxes; the counters (9 int32, 3 float64)

    def _allocate(self, level: int) -> None:
        """Pools of level ``level`` for every worker; the nodes of the level before are moved into them."""
        wp, dev, K = self._wp, self.device, self.workers
        hk = self._hk
        pool = self.pools[level]
        sc = self._k.Scratch()
        if self._sc is None:
            for name, shape, dtype in self._row_specs():
                setattr(sc, name, wp.empty(shape, dtype=dtype, device=dev))
        else:
            for name, _, _ in self._row_specs():
                setattr(sc, name, getattr(self._sc, name))
        W = self.tables.n_words
        sc.node_state = wp.empty((K * (pool + 1), W), dtype=wp.uint64, device=dev)
        for name, dtype in (("node_g", wp.float64), ("node_h", wp.float64), ("node_parent", wp.int32),
                            ("node_pos", wp.int32), ("heap", wp.int32)):
            setattr(sc, name, wp.empty((K, pool), dtype=dtype, device=dev))
        sc.table = wp.empty((K, hash_size(pool)), dtype=wp.int32, device=dev)
        self._wk.lazy_old = self._wk.lazy  # (MOVE copies the flags of the nodes moved)
        self._wk.lazy = wp.zeros((K, pool), dtype=wp.int8, device=dev)
        op = hk.Options()
        op.workers = K
        op.pool = pool
        op.hash_mask = hash_size(pool) - 1
        op.batch = self.batch
        op.slots = self.message_slots
        op.max_pops = pop_limit(pool)
        op.heuristic = self._k.HEURISTIC_CODES[self.heuristic]
        op.plan_length = self.max_plan_length
        op.share_stop = int(self.shared_stop and dev.is_cpu and K > 1)
        op.lazy = int(self.lazy)
        self._options[level] = op
        previous, self._sc = self._sc, sc
        old_level, self._level = self._level, level
        # A new launcher: the recorded launches of the old one hold the old pools, which are dropped here.
        self.launcher = Launcher(dev, threads=K)
        if previous is not None and old_level >= 0:
            q, gt, rel, results = self._current
            self.launcher.launch(self.kernel, K, [hk.MOVE, 0, q, self._dt, gt, self._ct, rel, op, sc, previous,
                                                  self.pools[old_level], self._wk, results], record=False)
        self._wk.lazy_old = self._wk.lazy  # the old flags are dropped with the old pools

    def _workers_struct(self) -> Any:
        wp, dev, K = self._wp, self.device, self.workers
        hk = self._hk
        wk = hk.Workers()
        pad = int(hk.PAD)  # worker t's counters at t * pad: a cache line of its own (see goap.kernels.hda.PAD)
        for name in ("count", "heap_size", "pops", "expanded", "part_node", "part_action", "goal_node", "blocked",
                     "work"):
            setattr(wk, name, wp.zeros(K * pad, dtype=wp.int32, device=dev))
        for name in ("goal_cost", "low_f", "c_min"):
            setattr(wk, name, wp.zeros(K * pad, dtype=wp.float64, device=dev))
        # 2 K K boxes between workers (two phases) of message_slots each, then one self box a worker of A slots.
        messages = 2 * K * K * self.message_slots + K * max(1, self.tables.n_actions)
        wk.msg_state = wp.empty((messages, self.tables.n_words), dtype=wp.uint64, device=dev)
        wk.msg_g = wp.empty(messages, dtype=wp.float64, device=dev)
        wk.msg_h = wp.zeros(messages, dtype=wp.float64, device=dev)
        wk.msg_parent = wp.empty(messages, dtype=wp.int32, device=dev)
        wk.msg_count = wp.zeros((2 * K * K + K) * pad, dtype=wp.int32, device=dev)
        wk.ctl = wp.zeros(hk.CTL_SIZE, dtype=wp.int32, device=dev)
        wk.bound = wp.zeros(1, dtype=wp.float64, device=dev)
        wk.lazy = wk.lazy_old = wp.zeros((K, 1), dtype=wp.int8, device=dev)  # (the pools' come with them)
        return wk

    # --- inputs and results ---------------------------------------------------------------------------------------
    def _array(self, x: np.ndarray, dtype: Any) -> Any:
        """A Warp array over a host array: zero-copy on the CPU, a copy on a GPU."""
        return self._wp.array(np.ascontiguousarray(x), dtype=dtype, device=self.device, copy=not self.device.is_cpu)

    def _results(self, out: PlanBatch) -> tuple[Any, list[tuple[np.ndarray, Any]]]:
        wp = self._wp
        r = self._k.Results()
        host: list[tuple[np.ndarray, Any]] = []
        for name, dtype in _RESULT_FIELDS:
            arr = host_view(getattr(out, name))
            if arr.dtype != np.dtype(dtype) or not arr.flags.c_contiguous:
                raise ValueError(f"out.{name} must be a contiguous {dtype} array")
            d = wp.array(arr, dtype=getattr(wp, dtype), device=self.device, copy=not self.device.is_cpu)
            if not self.device.is_cpu:
                host.append((arr, d))
            setattr(r, name, d)
        r.expanded_before_last_f = wp.zeros(0, dtype=wp.int32, device=self.device)
        last_f = out.expanded_before_last_f
        if last_f is not None:  # no global f order across workers: not kept (-1)
            if isinstance(last_f, wp.array):
                last_f.fill_(-1)
            else:
                last_f[...] = -1
        return r, host

    def _goal_struct(self, gt: GoalTables) -> tuple[Any, Any]:
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


def _run_all(jobs: list[Any]) -> None:
    """Run ``jobs`` on the shared pool, the first in this thread, and wait for every one of them, even when a signal
    (a deadline) interrupts the wait: a round still running must not overlap the next query's start."""
    pool = cpu_pool()
    futures = [pool.submit(job) for job in jobs[1:]]
    error: BaseException | None = None
    try:
        jobs[0]()
    except BaseException as e:  # noqa: BLE001 - re-raised below, once every round has ended
        error = e
    for f in futures:
        while True:
            try:
                f.result()
                break
            except BaseException as e:  # noqa: BLE001
                if f.done():
                    error = error or e
                    break
                error = error or e
    if error is not None:
        raise error

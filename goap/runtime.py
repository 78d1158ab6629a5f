"""Brain: every agent's state, goal and plan in Warp arrays on one device, advanced one tick at a time.

The per-agent arrays are `goap.state.AgentArrays` (the table of every array, its shape, dtype and writer is in
`goap.state`); ``brain.states``, ``brain.goal``, ... are those arrays, on ``brain.device``. On the CPU device
``brain.states.numpy()`` is a zero-copy numpy view; ``wp.to_torch(brain.goal)`` a zero-copy torch view.

One tick (`Brain.tick`) runs its stages in a fixed order, each a Warp kernel over the agents
(`goap.kernels.tick`); only the tick's counters (a few dozen integers) come back to the host:

1. **sense**: the world writes facts into ``states`` (and may write ``costs``, ``enabled``, ``priorities``).
2. **select**: each agent takes its highest-scoring goal that is not satisfied, not cooling down and of
   priority > 0 (ties go to the lower goal index; the goal being pursued gets ``goal_hysteresis`` extra), or
   the goal pinned with `set_goal`. Reaching the current goal counts as an achievement.
3. **validate**: an agent needs a plan when its goal changed, its plan finished without reaching the goal, its
   last action failed, or its current action's preconditions no longer hold (or the action was disabled).
4. **plan**: the requests are compacted on the device (a scan) and, when more agents ask than ``plan_budget``
   allows, ordered longest waiting first, then by goal priority, then by index (two stable radix sorts). The
   planner reads the brain's arrays and writes plans straight into them. A failed search puts that goal on
   cooldown for ``cooldown_ticks`` ticks; a search that outgrew its node pool is deferred to a later tick with a
   larger pool (no cooldown); a plan longer than the plan buffer arrives in segments.
5. **act**: each agent's current action (``action``, always ``plan[step]``) starts or continues; the world
   advances it and reports RUNNING, DONE or FAILED in ``action_status``; a DONE action's symbolic effects are
   applied and the next step becomes the current action.
6. **metrics**: counters of the tick are read once; stage times go into bounded running statistics.

Without a world the game drives the actions: after `tick`, ``brain.action`` holds what each agent should be
doing; the game sets ``brain.action_status`` to DONE or FAILED when it is (RUNNING until then, for as many ticks
as the action takes), and the next `tick` takes it from there.

Events: ``brain.events`` gives the last tick's per-agent masks (``brain.events.action_finished`` is a bool array
on the device; ``brain.events.agents("goal_achieved")`` the host indices).
"""

from __future__ import annotations

import hashlib
import inspect
import io
import json
import os
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from goap.domain import Domain
from goap.encoding import DomainTables, encode, fingerprint
from goap.metrics import RunningSeries
from goap.outcomes import OutcomeLog
from goap.planners import PlanBatch, Status, make_planner
from goap.planners.base import DEFAULT_MAX_NODES
from goap.state import FIELD_NAMES, FIELDS, AgentArrays
from goap.world import DONE, FAILED, RUNNING, World

STAGES = ("sense", "select", "validate", "plan", "act", "metrics")

#: Why an agent needed a new plan (``Brain.replan_cause``).
CAUSES = ("none", "new_goal", "goal_changed", "plan_finished", "action_failed", "invalid", "commanded")
NEW_GOAL, GOAL_CHANGED, PLAN_FINISHED, ACTION_FAILED, INVALID, COMMANDED = 1, 2, 3, 4, 5, 6

#: Event bits of ``Brain.events`` (bit k is ``1 << k``), in this order.
EVENTS = (
    "action_started", "action_finished", "action_failed", "goal_achieved", "plan_found", "plan_failed",
    "goal_changed", "replan",
)

# Counter slots (goap.kernels.tick): name by slot.
_COUNTER_SLOTS = {
    0: "goals_achieved", 1: "plans_requested", 2: "plans_made", 3: "plans_failed", 4: "plans_satisfied",
    5: "plans_deferred", 6: "nodes_expanded", 7: "actions_started", 8: "actions_done", 9: "actions_failed",
    10: "idle", 11: "alive", 19: "plans_segmented",
}
_COUNTER_SLOTS.update({12 + c: f"replan_{name}" for c, name in enumerate(CAUSES) if c})
_COUNTER_SLOTS.update({20 + int(s): f"plans_failed_{s.label}" for s in Status if s > Status.SATISFIED})
_N_COUNTERS = 28
_PER_TICK = {"idle", "alive"}  # gauges, not totals: kept as series, not summed into ``counters``


class BrainError(ValueError):
    """Input from the game or the world that the brain cannot use (a bad action status, an out-of-range fact)."""


class SnapshotError(ValueError):
    """A snapshot that cannot be restored: the message names the file and the field; nothing was changed."""


@dataclass
class TickStats:
    """What one tick did: stage times in milliseconds and the tick's counters (non-zero ones)."""

    tick: int
    ms: dict[str, float]
    events: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class FactSlot:
    """Where one fact lives in a packed state, for a game's own kernels (`goap.kernels.semantics.read_field`)."""

    index: int
    word: int
    shift: int
    mask: int  # before shifting
    min: int
    max: int


class Events:
    """The last tick's events as per-agent masks on the device (`EVENTS` names them)."""

    def __init__(self, brain: Brain):
        self._brain = brain

    @property
    def bits(self) -> Any:
        """uint32 [N]: every event of each agent, bit k for ``EVENTS[k]``."""
        return self._brain.arrays.event_bits

    def mask(self, name: str) -> Any:
        """bool [N] on the device: the agents that had event ``name`` last tick."""
        wp, k = self._brain._wp, self._brain._kernels
        out = wp.zeros(self._brain.n_agents, dtype=wp.bool, device=self._brain.device)
        if self._brain.n_agents:
            wp.launch(k.event_mask, self._brain.n_agents, [self.bits, wp.uint32(_event_bit(name)), out],
                      device=self._brain.device)
        return out

    def agents(self, name: str) -> np.ndarray:
        """Host indices of the agents that had event ``name`` last tick."""
        return np.flatnonzero(self.bits.numpy() & np.uint32(_event_bit(name)))

    def count(self, name: str) -> int:
        return len(self.agents(name))

    def __getattr__(self, name: str) -> Any:
        if name in EVENTS:
            return self.mask(name)
        raise AttributeError(f"no event '{name}'; events are {', '.join(EVENTS)}")


def _event_bit(name: str) -> int:
    if name not in EVENTS:
        raise ValueError(f"unknown event '{name}'; events are {', '.join(EVENTS)}")
    return 1 << EVENTS.index(name)


class Brain:
    """The agents' minds: one struct of Warp arrays of N rows (see `goap.state`), and the tick over them.

    Args:
        domain: the planning domain (or its tables).
        n_agents: N, the capacity: rows allocated once.
        world: the `goap.world.World` that senses and acts; None for a brain the game drives by hand.
        planner: a registered planner name ("warp", "reference").
        device: the Warp device of the arrays and the planner ("cpu", "cuda:0"); Warp's default when None.
        plan_budget: most agents planned per tick (None: all that need a plan).
        cooldown_ticks: ticks a goal is skipped after its search failed.
        max_nodes, max_plan_length: planner budgets (the first node pool, the plan buffer).
        apply_effects: apply a finished action's symbolic effects to ``states``.
        seed: passed to ``world.reset``; the same seed and inputs give the same run on the same device.
        goal_hysteresis: score bonus of the goal an agent already pursues, when goals are compared (0: none).
        goal_scorer: called with the brain each tick; returns float32 [N, G] scores (a numpy array, a Warp array
            on the brain's device or a torch tensor) that replace ``priorities`` when goals are compared (a
            learned utility, say). Eligibility is unchanged: a goal that holds, cools down or has priority <= 0
            is never picked.
        n_alive: agents alive at the start (the first rows); the rest are free rows for `spawn`. Default: all.
        check_inputs: validate what the game and the world write (action statuses, action indices, packed
            states) every tick and raise `BrainError` naming the agent; turn off in release builds.
        capture: on a CUDA device, capture the tick's launches as a CUDA graph and replay it (the world's
            too when it declares ``capturable = True``); ignored on the CPU.
        dedupe: agents asking the same query (state, goal, costs, enabled) in one tick are searched once, on the
            device (`goap.planners.dedupe`); results are exactly those of planning each alone. "auto" (default)
            groups queries while that pays (at least 5% of a tick's queries are repeats) and otherwise plans
            directly, trying grouping again every 32 ticks; True always groups, False never.
        plan_cache: entries of a plan cache across ticks (0: none); hits and misses are in ``summary()``.
        search_nodes_per_tick: node-pool states the searches that outgrew their first pool may use per tick
            (None: 64 first pools); what does not fit waits for the next tick (deferred, no cooldown).
        planner_options: further options of the planner (``threads``, ``heuristic``, ``node_ceiling``, ...). A
            brain's default ``node_ceiling`` is 512 first pools (a search stops at BUDGET beyond it), so that one
            agent's hopeless search cannot hold the tick up for long.
    """

    def __init__(
        self,
        domain: Domain | DomainTables,
        n_agents: int,
        world: World | None = None,
        *,
        planner: str = "warp",
        device: str | None = None,
        plan_budget: int | None = None,
        cooldown_ticks: int = 30,
        max_nodes: int | None = None,
        max_plan_length: int | None = None,
        apply_effects: bool = True,
        seed: int = 0,
        goal_hysteresis: float = 0.0,
        goal_scorer: Callable[[Brain], Any] | None = None,
        n_alive: int | None = None,
        check_inputs: bool = True,
        capture: bool = False,
        dedupe: bool | str = "auto",
        plan_cache: int = 0,
        search_nodes_per_tick: int | None = None,
        planner_options: dict[str, Any] | None = None,
    ):
        if not isinstance(n_agents, int | np.integer) or isinstance(n_agents, bool) or n_agents < 0:
            raise ValueError(f"n_agents must be an integer >= 0, got {n_agents!r}")
        if plan_budget is not None and (not isinstance(plan_budget, int | np.integer) or plan_budget < 1):
            raise ValueError(f"plan_budget must be an integer >= 1, got {plan_budget!r}")
        if not isinstance(cooldown_ticks, int | np.integer) or cooldown_ticks < 0:
            raise ValueError(f"cooldown_ticks must be an integer >= 0, got {cooldown_ticks!r}")
        if not np.isfinite(goal_hysteresis) or goal_hysteresis < 0:
            raise ValueError(f"goal_hysteresis must be a finite number >= 0, got {goal_hysteresis}")
        if n_alive is not None and not 0 <= n_alive <= n_agents:
            raise ValueError(f"n_alive must be in 0..{n_agents}, got {n_alive}")
        from goap.kernels import init_warp

        wp = self._wp = init_warp()
        from goap.kernels import semantics, tick

        self._kernels = tick
        self.tables = domain if isinstance(domain, DomainTables) else encode(domain)
        self.domain = self.tables.domain
        try:
            self.device = wp.get_device(device)
        except (ValueError, RuntimeError) as e:
            raise ValueError(f"unknown or unavailable Warp device {device!r}: {e}") from None
        self.world = world
        self.n_agents = N = int(n_agents)
        options: dict[str, Any] = dict(planner_options or {})
        if max_nodes is not None:
            options["max_nodes"] = max_nodes
        if max_plan_length is not None:
            options["max_plan_length"] = max_plan_length
        if planner != "reference":
            options.setdefault("device", str(self.device))
            first_pool = int(options.get("max_nodes", DEFAULT_MAX_NODES))
            options.setdefault("node_ceiling", 512 * first_pool)
            if dedupe not in (True, False, "auto"):
                raise ValueError(f"dedupe must be True, False or 'auto', got {dedupe!r}")
            options.setdefault("dedupe", bool(dedupe))
            options.setdefault("plan_cache", int(plan_cache))
        elif plan_cache:
            raise ValueError("plan_cache needs a Warp planner (the reference planner plans on the host)")
        self.planner = make_planner(planner, self.tables, **options)
        self._dedupe_auto = dedupe == "auto" and hasattr(self.planner, "inner") and hasattr(self.planner, "counters")
        self._dedupe_on, self._dedupe_probe_at, self._dedupe_seen = True, 0, (0, 0)
        load = getattr(self.planner, "load", None)
        if callable(load):
            load()  # compile or load the planner's modules here, before its worker threads first launch them
        first_pool = int(getattr(self.planner, "max_nodes", DEFAULT_MAX_NODES))
        self.search_nodes_per_tick = 64 * first_pool if search_nodes_per_tick is None else int(search_nodes_per_tick)
        if self.search_nodes_per_tick < 1:
            raise ValueError(f"search_nodes_per_tick must be >= 1, got {search_nodes_per_tick}")
        self.plan_budget = None if plan_budget is None else int(plan_budget)
        self.cooldown_ticks = int(cooldown_ticks)
        self.apply_effects = bool(apply_effects)
        self.goal_hysteresis = float(goal_hysteresis)
        self.goal_scorer = goal_scorer
        self.check_inputs = bool(check_inputs)
        self.outcomes: OutcomeLog | None = None
        self._plan_hooks: list[Callable[..., None]] = []
        A, G = self.tables.n_actions, self.tables.goals.n_goals
        L = int(self.planner.max_plan_length)
        self._n_levels = int(getattr(self.planner, "n_levels", 1))

        self._default_state = self.tables.pack(self.domain.default_state())
        alive = np.zeros(N, dtype=bool)
        alive[: N if n_alive is None else n_alive] = True
        self.arrays = AgentArrays(
            N, {"W": self.tables.n_words, "G": G, "A": A, "L": L}, self.device,
            fills={
                "states": self._default_state,
                "priorities": self.tables.goals.priority.astype(np.float32),
                "costs": self.tables.cost.astype(np.float32),
                "alive": alive,
            },
        )
        self._tables_d = semantics.to_device(self.tables, semantics.DomainTables, self.device)
        dev = self.device
        self._tick = wp.zeros(1, dtype=wp.int64, device=dev)
        from goap.kernels.agents import make_agents
        from goap.launch import Launcher

        self.agents = make_agents(self.arrays)  # every per-agent array as one kernel argument
        self.launcher = Launcher(self.device)
        self.clock = self._tick  # int64 [1]: the tick number, for world kernels (tick k reads k)
        # CPU launches are serial loops on one core: the per-agent stages run in chunks on a small thread pool, each
        # chunk with its own row of counters (summed on the host), so no two threads ever add to the same cell.
        self._threads = max(1, min(os.cpu_count() or 1, 8)) if self.device.is_cpu else 1
        self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="goap-tick") if self._threads > 1 else None
        self._launches: dict[tuple, tuple[Any, list[Any], Any]] = {}
        self._counters = wp.zeros((self._threads, _N_COUNTERS), dtype=wp.int64, device=dev)
        self._action_counts = wp.zeros((self._threads, max(1, A)), dtype=wp.int64, device=dev)
        self._flag = wp.zeros(max(1, N), dtype=wp.int32, device=dev)
        self._pos = wp.zeros(max(1, N), dtype=wp.int32, device=dev)
        self._q_key = wp.zeros(max(2, 2 * N), dtype=wp.float32, device=dev)
        self._q_wait = wp.zeros(max(2, 2 * N), dtype=wp.int32, device=dev)
        self._q_ids = wp.zeros(max(2, 2 * N), dtype=wp.int32, device=dev)
        self._q_count = wp.zeros(2, dtype=wp.int32, device=dev)
        self._first_bad = wp.full(self._threads, 2**31 - 1, dtype=wp.int32, device=dev)
        self._layout_d = self._layout_arrays()
        self._batch = PlanBatch(
            status=self.arrays.plan_status, cost=self.arrays.plan_cost, length=self.arrays.plan_length,
            actions=self.arrays.plan, expanded=self.arrays.expanded, level=self.arrays.plan_level,
        )
        self._device_planner = _writes_device_batch(self.planner, self.device)
        self._host_batch = None if self._device_planner else PlanBatch.empty(N, L)
        self._open_row = np.full(N, -1, dtype=np.int64)  # outcome rows (opt-in host logging only)
        self._open_tick = np.zeros(N, dtype=np.int64)
        self.events = Events(self)
        self.tick_count = 0
        self.counters: Counter[str] = Counter()
        self.stage_stats = {s: RunningSeries() for s in (*STAGES, "search", "total")}
        self._search_ms = 0.0
        self.idle_series = RunningSeries()
        self.seed = int(seed)
        self.capture = bool(capture) and self.device.is_cuda
        self._graph = None
        if world is not None:
            world.reset(self, self.seed)

    def close(self) -> None:
        """Stop the brain's worker threads (and the planner's); the arrays stay readable."""
        if self._pool is not None:
            self._pool.shutdown()
            super().__setattr__("_pool", None)
            super().__setattr__("_threads", 1)
        close = getattr(self.planner, "close", None)
        if callable(close):
            close()

    # --- the per-agent arrays ----------------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name in FIELD_NAMES and "arrays" in self.__dict__:
            return getattr(self.__dict__["arrays"], name)
        raise AttributeError(f"'Brain' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in FIELD_NAMES:
            raise AttributeError(f"brain.{name} is allocated once; write into it (e.g. brain.{name}.numpy()[...] = x)")
        super().__setattr__(name, value)

    @property
    def n_alive(self) -> int:
        return int(self.arrays.alive.numpy().sum())

    @property
    def host_bytes_per_tick(self) -> int:
        """Bytes a tick reads back from the device: the tick's counters, plus the input checks' first bad agent
        when ``check_inputs`` is on, plus the request count on the CPU (a free read there). Nothing else crosses
        unless the caller asks (a goal scorer that returns host arrays, outcome logging, ``on_plan`` hooks)."""
        n = self._counters.shape[0] * self._counters.shape[1] * 8
        if self.check_inputs:
            n += 2 * 4 * self._first_bad.shape[0]
        if self.device.is_cpu:
            n += 8
        return n

    @property
    def action_counts(self) -> dict[str, int]:
        """Times each action was completed (DONE), by action name."""
        counts = self._action_counts.numpy().sum(axis=0)
        return {a.name: int(counts[i]) for i, a in enumerate(self.domain.actions)}

    # --- the tick ----------------------------------------------------------------------------------------------
    def tick(self, dt: float = 1.0) -> TickStats:
        """Advance every agent one tick (see the module docstring); returns the tick's times and counters."""
        ms: dict[str, float] = {}
        start = t = time.perf_counter()

        def lap(stage: str) -> None:
            nonlocal t
            now = time.perf_counter()
            ms[stage] = ms.get(stage, 0.0) + (now - t) * 1000.0
            t = now

        self.arrays.event_bits.zero_()
        self._counters.zero_()
        self._search_ms = 0.0
        if self._graph is not None:
            self._wp.capture_launch(self._graph)
            lap("act")
        else:
            if self.world is None:
                self._finish_actions()  # the statuses the game set since the last tick
            lap("act")
            if self.capture and self.tick_count >= 1 and self._capturable():
                self._capture_tick(dt)
                lap("act")
            else:
                self._stages(dt, lap)
        self.tick_count += 1
        counts = self._counters.numpy().sum(axis=0)
        events = {}
        for slot, name in _COUNTER_SLOTS.items():
            n = int(counts[slot])
            if n and name not in _PER_TICK:
                events[name] = n
        self.counters.update(events)
        alive, idle = int(counts[11]), int(counts[10])
        self.idle_series.add(idle / alive if alive else 0.0)
        lap("metrics")
        for stage in STAGES:
            self.stage_stats[stage].add(ms.get(stage, 0.0))
        self.stage_stats["search"].add(self._search_ms)
        self.stage_stats["total"].add((time.perf_counter() - start) * 1000.0)
        return TickStats(tick=self.tick_count, ms=ms, events=events)

    def _stages(self, dt: float, lap: Callable[[str], None]) -> None:
        if self.world is not None:
            self.world.sense(self)
        if self.check_inputs:
            self._check_states("after sense")
        lap("sense")
        self._select()
        lap("select")
        self._validate()
        lap("validate")
        self._plan()
        lap("plan")
        self._begin_actions()
        if self.world is not None:
            self.world.act(self, dt)
            self._finish_actions()
        self._launch(self._kernels.advance_tick, 1, [self._tick], record=True)
        lap("act")

    def _launch(self, kernel: Any, dim: int, inputs: list[Any], record: bool = False) -> None:
        """Launch over ``dim`` threads; ``record`` replays a recorded launch (only for the tick's fixed arrays: a
        recorded launch keeps its inputs alive)."""
        if not dim:
            return
        if not record:
            self._wp.launch(kernel, dim=dim, inputs=inputs, device=self.device)
            return
        cmd = self._recorded(kernel, inputs)
        cmd.set_dim(dim)
        cmd.launch()

    def _recorded(self, kernel: Any, inputs: list[Any]) -> Any:
        """A recorded launch of ``kernel`` with these inputs, made once and replayed.

        Packing a launch's arguments (the table structs hold dozens of arrays) costs far more than running a tick's
        kernel over thousands of agents on the CPU; the brain's arrays are allocated once, so their launches can be
        recorded once. Keyed by the identity of every array and struct and the value of every scalar; the entry
        keeps its inputs alive, so an identity cannot be reused while it is cached.
        """
        key = (id(kernel), *(_arg_key(x) for x in inputs))
        entry = self._launches.get(key)
        execs = kernel.module.execs
        if entry is None or not any(e is entry[2] for e in execs.values()):
            # new, or the module was reloaded since (its old code may be gone): record against the current code
            if len(self._launches) >= 256:
                self._launches.clear()
            cmd = self._wp.launch(kernel, dim=1, inputs=inputs, device=self.device, record_cmd=True)
            ctx = self.device.context
            loaded = next((e for k, e in kernel.module.execs.items() if k[0] == ctx), None)
            entry = self._launches[key] = (cmd, list(inputs), loaded)
        return entry[0]

    def _launch_agents(self, kernel: Any, dim: int, inputs: list[Any], record: bool = True) -> None:
        """Launch a per-agent kernel (its last two arguments: first row, counter row), in chunks on the CPU.

        The tick's launches are recorded once and replayed (``record``): their arrays are allocated once, and
        packing a launch's arguments costs more than running a stage over thousands of agents on the CPU.
        """
        if not dim:
            return
        chunks = self._threads if self._pool is not None and dim >= 2048 * self._threads else 1
        if chunks == 1:
            self._launch(kernel, dim, [*inputs, 0, 0], record=record)
            return
        size = -(-dim // chunks)
        spans = [(k, k * size, min(size, dim - k * size)) for k in range(chunks) if k * size < dim]
        if not record:
            jobs = [lambda k=k, first=first, n=n: self._wp.launch(kernel, dim=n, inputs=[*inputs, first, k],
                                                                  device=self.device) for k, first, n in spans]
        else:
            jobs = []
            for k, first, n in spans:
                cmd = self._recorded(kernel, [*inputs, first, k])
                cmd.set_dim(n)
                jobs.append(cmd.launch)
        for f in [self._pool.submit(job) for job in jobs]:
            f.result()

    def _select(self) -> None:
        a, k = self.arrays, self._kernels
        scores = a.priorities if self.goal_scorer is None else self._scores()
        self._launch_agents(k.select_goals, self.n_agents, [
            self._tick, a.states, self._tables_d.goals, a.alive, a.priorities, scores, a.cooldown_until,
            a.pinned_goal, self.goal_hysteresis, a.goal, a.plan_length, a.plan_level, a.step, a.needs_plan,
            a.replan_cause,
            a.action, a.action_ticks, a.event_bits, self._counters,
        ], record=self.goal_scorer is None)  # a scorer's array is new each tick: not worth keeping
        if self.outcomes is not None:
            self._close_outcomes()

    def _scores(self) -> Any:
        wp = self._wp
        s = self.goal_scorer(self)
        shape = tuple(self.arrays.priorities.shape)
        if isinstance(s, wp.array):
            if s.device != self.device or s.dtype != wp.float32 or tuple(s.shape) != shape:
                raise ValueError(f"goal_scorer returned a {s.dtype.__name__} array of shape {tuple(s.shape)} on "
                                 f"{s.device}; expected float32 {shape} on {self.device}")
            return s
        if type(s).__module__.startswith("torch"):
            s = wp.from_torch(s.detach().float().contiguous())
            if tuple(s.shape) != shape:
                raise ValueError(f"goal_scorer returned shape {tuple(s.shape)}, expected {shape}")
            return s if s.device == self.device else s.to(self.device)
        s = np.ascontiguousarray(s, dtype=np.float32)
        if s.shape != shape:
            raise ValueError(f"goal_scorer returned shape {s.shape}, expected {shape}")
        return wp.array(s, dtype=wp.float32, device=self.device)

    def _validate(self) -> None:
        a = self.arrays
        self._launch_agents(self._kernels.validate_plans, self.n_agents, [
            a.states, self._tables_d, a.alive, a.enabled, a.goal, a.plan, a.plan_length, a.step, a.action_status,
            a.needs_plan, a.replan_cause, a.action, a.action_ticks, a.event_bits, self._counters,
        ])

    def _plan(self) -> None:
        wp, a, k, N = self._wp, self.arrays, self._kernels, self.n_agents
        if not N:
            return
        self._launch_agents(k.queue_requests, N, [a.alive, a.needs_plan, a.goal, a.waiting, self._flag])
        wp.utils.array_scan(self._flag, self._pos, inclusive=False)
        self._launch_agents(k.compact_requests, N, [
            self._flag, self._pos, a.goal, a.priorities, self.plan_budget or 0, self._q_key, self._q_ids,
            self._q_count,
        ])
        if self.device.is_cpu:
            requests, n = (int(x) for x in self._q_count.numpy())
            if n == 0:
                return
            if n < requests:
                self._order_queue(requests)
            dim = n
        else:
            if self.plan_budget is not None:
                self._order_queue(N)
            dim = min(N, self.plan_budget or N)
            n = None
        planned_ids = self._q_ids[:dim]
        for hook in self._plan_hooks:
            hook(a.states, a.goal, a.costs, a.enabled, planned_ids, self._q_count[1:2])
        t_search = time.perf_counter()
        if self._device_planner:
            grouping = not self._dedupe_auto or self._dedupe_on or self.tick_count >= self._dedupe_probe_at
            planner = self.planner if grouping else self.planner.inner
            planner.plan(a.states, a.goal, a.costs, a.enabled, agents=planned_ids, count=self._q_count[1:2],
                         out=self._batch, max_escalated_nodes=self.search_nodes_per_tick)
            if self._dedupe_auto and grouping:
                self._judge_dedupe()
        else:
            self._plan_on_host(n if n is not None else int(self._q_count.numpy()[1]))
        self._search_ms += (time.perf_counter() - t_search) * 1000.0
        if self.outcomes is not None:
            self._open_outcomes(self._q_ids.numpy()[: int(self._q_count.numpy()[1])])
        self._launch_agents(k.accept_plans, dim, [
            self._tick, self._q_ids, self._q_count, self.cooldown_ticks, a.plan.shape[1], a.plan_status, a.plan_level,
            self._n_levels, a.expanded, a.goal, a.plan_length, a.step, a.needs_plan, a.waiting,
            a.last_failure, a.cooldown_until, a.action, a.event_bits, self._counters,
        ])

    def _judge_dedupe(self) -> None:
        """After a grouped call: keep grouping while at least 5% of the queries were repeats, else pause it."""
        from goap.planners.dedupe import COUNTERS

        c = self.planner.counters.numpy()
        seen = (int(c[COUNTERS.index("requests")]), int(c[COUNTERS.index("distinct")]))
        requests, distinct = seen[0] - self._dedupe_seen[0], seen[1] - self._dedupe_seen[1]
        self._dedupe_seen = seen
        if requests:
            self._dedupe_on = distinct <= 0.95 * requests
            self._dedupe_probe_at = self.tick_count + 32

    def _order_queue(self, count: int) -> None:
        """Longest waiting first, then highest priority, then lowest index: two stable sorts (priority, wait)."""
        wp = self._wp
        wp.utils.radix_sort_pairs(self._q_key, self._q_ids, count)
        self._launch(self._kernels.wait_keys, count, [self._q_ids, self._q_count, self.arrays.waiting, self._q_wait],
                     record=True)
        wp.utils.radix_sort_pairs(self._q_wait, self._q_ids, count)

    def _plan_on_host(self, n: int) -> None:
        """Planners that work on host arrays (the reference): plan, then write the rows into the brain."""
        if n <= 0:
            return
        wp, a = self._wp, self.arrays
        ids = self._q_ids.numpy()[:n].astype(np.int64)
        host = {name: arr.numpy() for name, arr in a.items()}  # views on the CPU, copies on a GPU
        batch = self.planner.plan(host["states"], host["goal"], host["costs"], host["enabled"], agents=ids,
                                  out=self._host_batch)
        L = host["plan"].shape[1]
        host["plan_status"][ids] = batch.status[ids]
        host["plan_cost"][ids] = batch.cost[ids]
        host["plan_length"][ids] = batch.length[ids]
        host["plan"][ids] = np.asarray(batch.actions)[ids, :L]
        host["expanded"][ids] = batch.expanded[ids]
        host["plan_level"][ids] = np.asarray(batch.level)[ids]
        if not self.device.is_cpu:
            for name in ("plan_status", "plan_cost", "plan_length", "plan", "expanded", "plan_level"):
                wp.copy(getattr(a, name), wp.array(host[name], device=self.device))

    def _begin_actions(self) -> None:
        a = self.arrays
        self._launch_agents(self._kernels.begin_actions, self.n_agents, [
            a.alive, a.goal, a.needs_plan, a.plan, a.plan_length, a.step, a.action, a.action_status,
            a.action_ticks, a.event_bits, self._counters,
        ])

    def _finish_actions(self) -> None:
        a = self.arrays
        if self.check_inputs:
            self._check_actions()
        self._launch_agents(self._kernels.finish_actions, self.n_agents, [
            a.states, self._tables_d, int(self.apply_effects), a.alive, a.plan, a.plan_length, a.step, a.action,
            a.action_status, a.action_ticks, self._action_counts, a.event_bits, self._counters,
        ])

    # --- input checks (a debug pass the game may turn off) ------------------------------------------------------
    def _first_bad_agent(self, kernel: Any, inputs: list[Any]) -> int:
        self._first_bad.fill_(2**31 - 1)
        self._launch_agents(kernel, self.n_agents, [*inputs, self._first_bad])
        bad = int(self._first_bad.numpy().min())
        return -1 if bad == 2**31 - 1 else bad

    def _check_actions(self) -> None:
        a = self.arrays
        bad = self._first_bad_agent(self._kernels.check_actions,
                                    [a.alive, a.action, a.action_status, self.tables.n_actions])
        if bad >= 0:
            act, st = int(a.action.numpy()[bad]), int(a.action_status.numpy()[bad])
            raise BrainError(f"agent {bad}: action {act} with action_status {st} (actions are -1.."
                             f"{self.tables.n_actions - 1}; statuses RUNNING={RUNNING}, DONE={DONE}, FAILED={FAILED})")

    def _check_states(self, when: str) -> None:
        bad = self._first_bad_agent(self._kernels.check_states, [self.arrays.alive, self.arrays.states,
                                                                  *self._layout_d])
        if bad >= 0:
            raise BrainError(f"agent {bad}: packed state {when} is invalid: {self._state_problem(bad)}")

    def _layout_arrays(self) -> tuple[Any, ...]:
        """What `check_states` needs: the facts whose field can hold a value above their range (a field of w bits
        holding a range that is not a power of two; bools and full-width ints cannot be out of range), and the
        bits of each word that some fact uses."""
        wp, L = self._wp, self.tables.layout
        mask = L.mask
        hi = np.array([f.max - f.min for f in self.domain.facts], dtype=np.uint64)
        used = np.zeros(self.tables.n_words, dtype=np.uint64)
        for f in range(len(self.domain.facts)):
            used[L.word[f]] |= np.uint64(int(mask[f]) << int(L.shift[f]))
        can_overflow = np.flatnonzero(hi < mask) if len(hi) else np.zeros(0, np.int64)

        def arr(x: np.ndarray, dtype: Any) -> Any:
            x = np.ascontiguousarray(x)
            return wp.array(x if len(x) else np.zeros(1, x.dtype), dtype=dtype, device=self.device)

        word = L.word.astype(np.int32)[can_overflow]
        return (arr(word, wp.int32) if len(word) else wp.zeros(0, dtype=wp.int32, device=self.device),
                arr(L.shift.astype(np.int32)[can_overflow], wp.int32), arr(mask[can_overflow], wp.uint64),
                arr(hi[can_overflow], wp.uint64), arr(used, wp.uint64))

    def _state_problem(self, i: int) -> str:
        return self.tables.state_problem(self.arrays.states.numpy()[i])

    # --- CUDA graphs --------------------------------------------------------------------------------------------
    def _capturable(self) -> bool:
        return (self._device_planner and self.goal_scorer is None and self.outcomes is None and not self._plan_hooks
                and (self.world is None or bool(getattr(self.world, "capturable", False))))

    def _capture_tick(self, dt: float) -> None:
        """Capture the tick's launches once (this tick runs them) and replay the graph from the next tick on."""
        wp = self._wp
        check = self.check_inputs
        self.check_inputs = False  # the checks read back to the host; they cannot be captured
        try:
            with wp.ScopedCapture(device=self.device) as capture:
                if self.world is not None:
                    self.world.sense(self)
                self._select()
                self._validate()
                self._plan()
                self._begin_actions()
                if self.world is not None:
                    self.world.act(self, dt)
                    self._finish_actions()
                self._launch(self._kernels.advance_tick, 1, [self._tick])
        finally:
            self.check_inputs = check
        self._graph = capture.graph
        wp.capture_launch(self._graph)

    # --- commands -----------------------------------------------------------------------------------------------
    def on_plan(self, callback: Callable[..., None]) -> None:
        """Call ``callback(states, goals, costs, enabled, agents, count)`` before each planning call: the brain's
        device arrays, and the rows about to be planned (``agents[:count[0]]``, both device arrays). For recorders
        and benchmarks (``goap bench --suite world:...``); a brain with hooks is not captured as a CUDA graph."""
        if not callable(callback):
            raise TypeError("on_plan needs a callable")
        self._plan_hooks.append(callback)

    def _rows(self, agents: Any) -> Any:
        """Agent indices as an int32 Warp array on the device, checked against the capacity."""
        wp = self._wp
        if agents is None:
            return wp.array(np.arange(self.n_agents, dtype=np.int32), dtype=wp.int32, device=self.device)
        if isinstance(agents, wp.array):
            if agents.dtype != wp.int32 or agents.ndim != 1:
                raise ValueError(f"agent indices must be a 1-D int32 Warp array, got {agents.dtype.__name__}")
            agents = agents.numpy()
        idx = np.atleast_1d(np.asarray(agents))
        if idx.dtype == bool:
            if idx.shape != (self.n_agents,):
                raise ValueError(f"an agent mask must have shape ({self.n_agents},), got {idx.shape}")
            idx = np.flatnonzero(idx)
        if idx.ndim != 1 or (len(idx) and not np.issubdtype(idx.dtype, np.integer)):
            raise ValueError("agents must be indices (a sequence of ints), a bool mask or None")
        if len(idx) and (idx.min() < 0 or idx.max() >= self.n_agents):
            bad = int(idx[(idx < 0) | (idx >= self.n_agents)][0])
            raise ValueError(f"agent {bad} is out of range 0..{self.n_agents - 1}")
        return wp.array(idx.astype(np.int32), dtype=wp.int32, device=self.device)

    def replan(self, agents: Any = None, cause: str = "commanded") -> None:
        """Drop the plans of ``agents`` and plan them again next tick; ``replan_cause`` records ``cause``."""
        if cause not in CAUSES or cause == "none":
            raise ValueError(f"unknown replan cause '{cause}'; causes are {', '.join(CAUSES[1:])}")
        rows, a = self._rows(agents), self.arrays
        self._launch(self._kernels.replan_agents, rows.shape[0], [
            rows, CAUSES.index(cause), a.alive, a.goal, a.plan_length, a.step, a.needs_plan, a.replan_cause,
            a.action, a.action_ticks, a.plan_level,
        ])

    def set_goal(self, agents: Any, goal: str | int) -> None:
        """Pin ``goal`` for ``agents``: they pursue it (whatever its priority) until it is reached or cleared."""
        g = self._goal_index(goal)
        rows = self._rows(agents)
        self._launch(self._kernels.pin_goals, rows.shape[0], [rows, g, self.arrays.pinned_goal])

    def clear_goal(self, agents: Any = None) -> None:
        """Release pinned goals; the agents choose by priority again from the next tick."""
        rows = self._rows(agents)
        self._launch(self._kernels.pin_goals, rows.shape[0], [rows, -1, self.arrays.pinned_goal])

    def _goal_index(self, goal: str | int) -> int:
        names = [g.name for g in self.domain.goals]
        if isinstance(goal, str):
            if goal not in names:
                raise ValueError(f"unknown goal '{goal}'; goals are {', '.join(names)}")
            return names.index(goal)
        if not isinstance(goal, int | np.integer) or not 0 <= goal < len(names):
            raise ValueError(f"goal index {goal!r} is out of range 0..{len(names) - 1}")
        return int(goal)

    def reset_agents(self, agents: Any = None, states: Any = None) -> None:
        """Clear goals, pins, plans, actions, cooldowns and events of ``agents``; write ``states`` (packed
        uint64 [K, W], or fact dicts) or the domain's default state; priorities, costs and enabled go back to the
        domain's values."""
        a = self.arrays
        rows = self._rows(agents)
        k = rows.shape[0]
        packed = self._packed_states(states, k)
        self._launch(self._kernels.reset_rows, k, [
            rows, packed, self._tables_d.goals.priority, self._tables_d.cost, a.states, a.priorities, a.costs,
            a.enabled, a.goal, a.pinned_goal, a.plan, a.plan_length, a.step, a.plan_status, a.plan_level,
            a.action, a.action_status, a.action_ticks, a.cooldown_until, a.waiting, a.needs_plan, a.replan_cause,
            a.last_failure, a.event_bits,
        ])

    def _packed_states(self, states: Any, k: int) -> Any:
        """``states`` for k agents as a uint64 [k, W] device array (one row broadcast to all; None: default)."""
        wp, W = self._wp, self.tables.n_words
        if states is None:
            host = self._default_state[None]
        elif isinstance(states, wp.array):
            host = states.numpy()
        elif isinstance(states, np.ndarray) and states.dtype != object:
            host = np.asarray(states, dtype=np.uint64).reshape(-1, W) if states.size % W == 0 else states
        else:
            host = np.stack([self.tables.pack(s) for s in states]) if len(states) else np.zeros((0, W), np.uint64)
        if host.ndim != 2 or host.shape[1] != W or host.shape[0] not in (1, k):
            raise ValueError(f"states must be uint64 [{k}, {W}] (or one row for all), got shape {host.shape}")
        host = np.ascontiguousarray(np.broadcast_to(host, (max(1, k), W)), dtype=np.uint64)
        bad = self.tables.invalid_states(host)
        if len(bad):
            raise ValueError(f"state {int(bad[0])} is invalid: {self.tables.state_problem(host[bad[0]])}")
        return wp.array(host, dtype=wp.uint64, device=self.device)

    def spawn(self, count: int | None = None, *, agents: Any = None, states: Any = None) -> np.ndarray:
        """Bring dead rows to life (the first ``count`` free ones, or ``agents``), reset, with ``states``.

        Returns the indices spawned. Raises ValueError when fewer free rows are left than asked for.
        """
        alive = self.arrays.alive.numpy()
        if agents is None:
            free = np.flatnonzero(~alive)
            count = len(free) if count is None else int(count)
            if count > len(free):
                raise ValueError(f"cannot spawn {count} agents: {len(free)} free rows of {self.n_agents}")
            idx = free[:count]
        else:
            idx = self._rows(agents).numpy()
            if alive[idx].any():
                raise ValueError(f"agent {int(idx[alive[idx]][0])} is already alive")
        self.reset_agents(idx, states)
        rows = self._rows(idx)
        self._launch(self._kernels.set_alive, rows.shape[0], [rows, 1, self.arrays.alive])
        return idx.astype(np.int64)

    def despawn(self, agents: Any) -> None:
        """Take agents out of the simulation: every stage skips them until they are spawned again."""
        rows = self._rows(agents)
        self.reset_agents(rows.numpy())
        self._launch(self._kernels.set_alive, rows.shape[0], [rows, 0, self.arrays.alive])

    # --- facts ----------------------------------------------------------------------------------------------
    def fact_slot(self, name: str) -> FactSlot:
        """Where fact ``name`` lives in the packed state (word, shift, mask, min, max)."""
        try:
            f = self.domain.fact_index(name)
        except (KeyError, ValueError):
            raise ValueError(f"unknown fact '{name}'") from None
        L, fact = self.tables.layout, self.domain.facts[f]
        return FactSlot(f, int(L.word[f]), int(L.shift[f]), L.field_mask(f), int(fact.min), int(fact.max))

    def read_fact(self, name: str, agents: Any = None) -> Any:
        """The values of fact ``name`` (int64; bools 0/1, enums their label index) as a device array."""
        wp, slot = self._wp, self.fact_slot(name)
        rows = self._rows(agents)
        out = wp.zeros(max(1, rows.shape[0]), dtype=wp.int64, device=self.device)
        self._launch(self._kernels.read_fact_values, rows.shape[0], [
            self.arrays.states, rows, slot.word, slot.shift, wp.uint64(slot.mask), wp.int64(slot.min), out,
        ])
        return out[: rows.shape[0]] if rows.shape[0] else wp.zeros(0, dtype=wp.int64, device=self.device)

    def write_fact(self, name: str, values: Any, agents: Any = None) -> None:
        """Write fact ``name`` for all (or the given) agents: one value, or one per agent (ints, bools, enum
        labels, or an int64 device array). Values out of the fact's range are refused, naming the first."""
        wp, slot = self._wp, self.fact_slot(name)
        rows = self._rows(agents)
        k = rows.shape[0]
        fact = self.domain.facts[slot.index]
        if isinstance(values, wp.array):
            if values.dtype != wp.int64 or tuple(values.shape) != (k,):
                raise ValueError(f"values for '{name}' must be an int64 Warp array of shape ({k},)")
            vals = values
            if self.check_inputs:
                _check_range(name, fact, values.numpy())
        else:
            host = np.asarray(values)
            if host.dtype.kind in "US" or host.dtype == object:
                host = np.vectorize(lambda v: fact.parse_value(v, "value"), otypes=[np.int64])(host)
            host = np.broadcast_to(host.astype(np.int64), (k,)) if host.ndim == 0 else host.astype(np.int64)
            if host.shape != (k,):
                raise ValueError(f"{len(host)} values for '{name}' given for {k} agents")
            _check_range(name, fact, host)
            vals = wp.array(np.ascontiguousarray(host), dtype=wp.int64, device=self.device)
        self._launch(self._kernels.write_fact_values, k, [
            self.arrays.states, rows, slot.word, slot.shift, wp.uint64(slot.mask), wp.int64(slot.min), vals,
        ])

    # --- outcome logging (opt-in; host work over the planned agents) ------------------------------------------
    def record_outcomes(self, log: OutcomeLog | None = None) -> OutcomeLog:
        """Log every planning call from now on (see `goap.outcomes`); returns the log, also ``self.outcomes``."""
        self.outcomes = log if log is not None else OutcomeLog.for_domain(self.domain, self.tables.n_words)
        if self.outcomes.fingerprint != fingerprint(self.domain):
            raise ValueError(f"outcome log is of domain '{self.outcomes.domain_name}', not '{self.domain.name}'")
        self._open_row[:] = -1
        return self.outcomes

    def _open_outcomes(self, planned: np.ndarray) -> None:
        if not len(planned):
            return
        log, a = self.outcomes, self.arrays
        stale = planned[self._open_row[planned] >= 0]  # replanned before reaching its goal: that plan failed
        log.update(self._open_row[stale], achieved=0)
        status = a.plan_status.numpy()[planned]
        goal = a.goal.numpy()[planned]
        achieved = np.where(status == Status.SATISFIED, 1, np.where(status == Status.OK, -1, 0))
        rows = log.add({
            "states": a.states.numpy()[planned], "tick": np.full(len(planned), self.tick_count),
            "goal": goal, "status": status, "cost": a.plan_cost.numpy()[planned],
            "length": a.plan_length.numpy()[planned], "expanded": a.expanded.numpy()[planned], "achieved": achieved,
            "ticks_to_goal": np.where(status == Status.SATISFIED, 0, -1),
            "reward": a.priorities.numpy()[planned, np.maximum(goal, 0)],
        })
        self._open_row[planned] = np.where(status == Status.OK, rows, -1)
        self._open_tick[planned] = self.tick_count

    def _close_outcomes(self) -> None:
        bits = self.arrays.event_bits.numpy()
        achieved = (bits & np.uint32(_event_bit("goal_achieved"))) != 0
        changed = (bits & np.uint32(_event_bit("goal_changed"))) != 0
        open_ = self._open_row >= 0
        done = np.flatnonzero(open_ & achieved)
        self.outcomes.update(self._open_row[done], achieved=1, ticks_to_goal=self.tick_count - self._open_tick[done])
        dropped = np.flatnonzero(open_ & changed & ~achieved)
        self.outcomes.update(self._open_row[dropped], achieved=0)
        self._open_row[done] = -1
        self._open_row[dropped] = -1

    # --- inspection -------------------------------------------------------------------------------------------
    def current_goal_satisfied(self) -> np.ndarray:
        """Host bool [N]: whether each agent's current goal holds now (False without a goal)."""
        wp = self._wp
        out = wp.zeros(max(1, self.n_agents), dtype=wp.bool, device=self.device)
        self._launch(self._kernels.goal_holds, self.n_agents, [self.arrays.states, self._tables_d.goals,
                                                               self.arrays.goal, out])
        return out.numpy()[: self.n_agents]

    def agent_plan(self, i: int) -> list[str]:
        plan, length = self.arrays.plan.numpy()[i], int(self.arrays.plan_length.numpy()[i])
        return [self.domain.actions[a].name for a in plan[:length]]

    def summary(self, warmup: int = 0) -> dict[str, Any]:
        """Per-stage ms (mean, p95) after ``warmup`` ticks, ms per tick, idle fraction, counters, actions done.

        ``search`` is the part of the plan stage spent inside the planner; the rest of the tick is the engine's
        own bookkeeping and the world.
        """
        return {
            "ticks": self.tick_count,
            "ms_per_tick": self.stage_stats["total"].summary(warmup),
            "stages": {s: self.stage_stats[s].summary(warmup) for s in STAGES},
            "search": self.stage_stats["search"].summary(warmup),
            "idle_fraction": self.idle_series.summary(warmup)["mean"],
            "planner": self.planner.stats() if callable(getattr(self.planner, "stats", None)) else {},
            "counters": dict(self.counters),
            "action_counts": self.action_counts,
        }

    # --- snapshots ----------------------------------------------------------------------------------------------
    def get_state(self) -> dict[str, np.ndarray]:
        """Host copies of every array that defines the simulation (brain fields, counters, the world's)."""
        out = {f"brain/{name}": arr for name, arr in self.arrays.host().items()}
        out["brain/tick_count"] = np.array(self.tick_count, dtype=np.int64)
        out["brain/counters"] = np.array(json.dumps(dict(self.counters), sort_keys=True))
        out["brain/action_counts"] = self._action_counts.numpy().sum(axis=0)
        out["brain/dedupe"] = np.array([int(self._dedupe_on), self._dedupe_probe_at], dtype=np.int64)
        if self.world is not None:
            out.update({f"world/{k}": np.asarray(v) for k, v in self.world.get_state().items()})
        return out

    def state_hash(self) -> str:
        """A hash of every agent and world array: equal hashes mean bit-identical simulations."""
        h = hashlib.sha256()
        for key, value in sorted(self.get_state().items()):
            if key in ("brain/counters", "brain/dedupe"):  # bookkeeping, not the simulation
                continue
            h.update(key.encode())
            arr = np.ascontiguousarray(value)
            h.update(str(arr.dtype).encode() + str(arr.shape).encode())
            h.update(arr.tobytes() if arr.dtype != object else repr(arr.tolist()).encode())
        return h.hexdigest()[:16]

    def snapshot(self, path: str | Path) -> None:
        """Save the brain and its world to a ``.npz`` file (written whole or not at all)."""
        path = Path(path)
        buf = io.BytesIO()
        np.savez_compressed(buf, **{"meta/fingerprint": np.array(fingerprint(self.domain))}, **self.get_state())
        tmp = path.with_name(path.name + ".tmp")
        try:
            tmp.write_bytes(buf.getvalue())
            tmp.replace(path)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            raise OSError(f"{path}: cannot write snapshot: {e.strerror or e}") from None

    def restore(self, path: str | Path) -> None:
        """Load a snapshot saved by `snapshot` from a brain of the same domain and size.

        Everything is read and checked before anything changes (shapes, dtypes, index ranges, packed states, the
        world's arrays); on any problem a `SnapshotError` names the file and the field and the brain and its world
        are left as they were.
        """
        data = _read_snapshot(path)
        where = str(path)
        mark = data.get("meta/fingerprint")
        if not isinstance(mark, np.ndarray) or mark.shape != () or str(mark) != fingerprint(self.domain):
            raise SnapshotError(f"{where}: snapshot is of another domain (or has no 'meta/fingerprint')")
        arrays = {name: data.get(f"brain/{name}") for name in FIELD_NAMES}
        missing = [n for n, v in arrays.items() if v is None]
        if missing:
            raise SnapshotError(f"{where}: field 'brain/{missing[0]}' is missing")
        try:
            self.arrays.check(arrays, where)
        except ValueError as e:
            raise SnapshotError(str(e).replace("field '", "field 'brain/")) from None
        self._check_snapshot_values(arrays, where)
        tick_count = _scalar_int(data, "brain/tick_count", where)
        counters = _counters(data, where)
        action_counts = data.get("brain/action_counts")
        n_counts = self._action_counts.shape[1]
        if (not isinstance(action_counts, np.ndarray) or action_counts.dtype != np.int64
                or action_counts.shape != (n_counts,) or (action_counts < 0).any()):
            raise SnapshotError(f"{where}: field 'brain/action_counts' is not {n_counts} counts >= 0")
        dedupe = data.get("brain/dedupe")
        if not isinstance(dedupe, np.ndarray) or dedupe.shape != (2,) or dedupe.dtype != np.int64:
            raise SnapshotError(f"{where}: field 'brain/dedupe' is not int64 [2]")
        if self.world is not None:
            world_arrays = {k[len("world/"):]: v for k, v in data.items() if k.startswith("world/")}
            try:
                self.world.set_state(world_arrays)  # the world checks everything before it writes anything
            except (ValueError, KeyError, TypeError) as e:
                raise SnapshotError(f"{where}: world state: {e}") from None
        self.arrays.load(arrays)
        rows = np.zeros(tuple(self._action_counts.shape), dtype=np.int64)
        rows[0] = action_counts
        self._wp.copy(self._action_counts, self._wp.array(rows, device=self.device))
        self._tick.fill_(tick_count)
        self.tick_count = tick_count
        self.counters = Counter(counters)
        self._dedupe_on, self._dedupe_probe_at = bool(dedupe[0]), int(dedupe[1])
        if self._dedupe_auto:
            from goap.planners.dedupe import COUNTERS

            c = self.planner.counters.numpy()
            self._dedupe_seen = (int(c[COUNTERS.index("requests")]), int(c[COUNTERS.index("distinct")]))
        self._graph = None

    def _check_snapshot_values(self, arrays: dict[str, np.ndarray], where: str) -> None:
        A, G, L = self.tables.n_actions, self.tables.goals.n_goals, self.arrays.plan.shape[1]
        ranges = {
            "goal": (-1, G - 1), "pinned_goal": (-1, G - 1), "plan": (-1, A - 1), "action": (-1, A - 1),
            "plan_length": (0, None), "step": (0, None), "action_status": (0, 2), "replan_cause": (0, len(CAUSES) - 1),
            "plan_status": (0, len(Status) - 1), "last_failure": (-1, len(Status) - 1), "waiting": (0, None),
            "action_ticks": (0, None), "plan_level": (0, self._n_levels),
        }
        for name, (lo, hi) in ranges.items():
            arr = arrays[name]
            bad = (arr < lo) | (arr > hi) if hi is not None else arr < lo
            if bad.any():
                i = np.argwhere(bad)[0]
                raise SnapshotError(f"{where}: field 'brain/{name}' holds {arr[tuple(i)]} at {tuple(int(x) for x in i)}"
                                    f", outside {lo}..{hi if hi is not None else 'any'}")
        if (arrays["step"] > np.maximum(arrays["plan_length"], 0)).any() or (arrays["plan_length"] > L).any():
            raise SnapshotError(f"{where}: field 'brain/step' or 'brain/plan_length' is past the plan")
        bad_rows = self.tables.invalid_states(arrays["states"])
        if len(bad_rows):
            i = int(bad_rows[0])
            problem = self.tables.state_problem(arrays["states"][i])
            raise SnapshotError(f"{where}: field 'brain/states' row {i}: {problem}")


# --- helpers ---------------------------------------------------------------------------------------------------
def _arg_key(x: Any) -> Any:
    """A launch argument as part of a cache key: arrays and structs by identity, scalars by type and value."""
    if isinstance(x, bool | int | float):
        return (type(x), x)
    value = getattr(x, "value", None)
    if value is not None and not hasattr(x, "shape"):
        return (type(x), value)  # a Warp scalar such as wp.uint64(k)
    return id(x)


def _writes_device_batch(planner: Any, device: Any) -> bool:
    """Whether the planner takes device arrays and writes results into them in place (``count`` in its plan)."""
    if getattr(planner, "device", None) != device:
        return False
    try:
        return "count" in inspect.signature(planner.plan).parameters
    except (TypeError, ValueError):
        return False


def _check_range(name: str, fact: Any, values: np.ndarray) -> None:
    bad = (values < fact.min) | (values > fact.max)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"value {int(values[i])} (item {i}) of fact '{name}' is out of range {fact.min}..{fact.max}")


def _read_snapshot(path: str | Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            out = {k: data[k] for k in data.files}
    except FileNotFoundError:
        raise SnapshotError(f"{path}: no such snapshot file") from None
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, KeyError) as e:
        raise SnapshotError(f"{path}: not a readable snapshot ({type(e).__name__}: {e})") from None
    return out


def _scalar_int(data: dict[str, np.ndarray], key: str, where: str) -> int:
    v = data.get(key)
    if not isinstance(v, np.ndarray) or v.shape != () or not np.issubdtype(v.dtype, np.integer) or int(v) < 0:
        raise SnapshotError(f"{where}: field '{key}' is not an integer >= 0")
    return int(v)


def _counters(data: dict[str, np.ndarray], where: str) -> dict[str, int]:
    v = data.get("brain/counters")
    try:
        counters = json.loads(str(v)) if isinstance(v, np.ndarray) and v.shape == () else None
    except (ValueError, RecursionError):
        counters = None
    if not isinstance(counters, dict) or not all(isinstance(k, str) and type(n) is int for k, n in counters.items()):
        raise SnapshotError(f"{where}: field 'brain/counters' is not a JSON object of integer counts")
    return counters


__all__ = [
    "Brain", "BrainError", "CAUSES", "EVENTS", "Events", "FactSlot", "FIELDS", "SnapshotError", "STAGES",
    "TickStats",
]

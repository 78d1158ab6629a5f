"""The tick: one list of steps, run as plain launches or replayed as captured graphs, the same on every device.

A tick is a fixed list of `Step`s (`Pipeline._steps`). A *device* step only launches work on the brain's device
(kernels, scans, sorts, memsets); a *host* step reads or writes host memory (an input check, a goal scorer, outcome
logging, ``on_plan`` hooks, a host planner). Consecutive device steps form a segment. Without capture a segment
runs its steps; with ``capture=True`` each segment is recorded once as a graph (`goap.launch.Launcher.capture`,
with the host guard on) and replayed every tick after, while host steps run between the graphs exactly as they do
without capture. So the captured path and the plain path run the same steps in the same order, and the CPU run of
the captured path is the GPU's path.

What a graph bakes in (scalar launch arguments, which arrays a launch reads, which planner is called) is named by
the tick's *graph key*: the live settings of `goap.runtime.config.BrainConfig`, ``dt``, the grouping choice of
``dedupe="auto"``, the goal scorer, outcome logging and the ``on_plan`` hooks, and the world's ``graph_key()``
(or its public scalar attributes when it defines none). A tick whose key differs from the key its graphs were
captured under captures new ones (a few keys are kept, so ``dedupe="auto"`` switching back and forth does not
capture every time).

On the CPU outside capture the cheaper host-sized variant runs where it pays (per-agent stages in chunks on the
shared pool; the planner and the accept stage sized by the request count read on the host); inside a capture,
and always on a GPU, launches have fixed dimensions and counts stay on the device.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from goap.codes import COUNTERS, DEDUPE_COUNTERS, GAUGES
from goap.launch import CaptureError, host_sized

#: Timing buckets of a tick, in order (``summary()["stages"]``). ``decide`` selects goals and validates plans in
#: one pass; ``plan`` includes the search (also reported alone as ``search``).
STAGES = ("sense", "decide", "plan", "act", "metrics")

_SLOT = {name: k for k, name in enumerate(COUNTERS)}
_KEPT_GRAPH_KEYS = 4


@dataclass(frozen=True)
class Step:
    """One step of the tick: its timing bucket, what it runs, and whether it needs the host."""

    stage: str
    run: Callable[[], None]
    host: bool = False
    search: bool = False  # the planner call: timed alone as "search" too


@dataclass
class TickStats:
    """What one tick did: stage times in milliseconds and the tick's counters (non-zero ones)."""

    tick: int
    ms: dict[str, float]
    events: dict[str, int]


def world_graph_key(world: Any) -> Any:
    """What a world's captured launches bake in: its ``graph_key()``, or its public scalar attributes."""
    key = getattr(world, "graph_key", None)
    if callable(key):
        return key()
    return tuple(sorted((k, v) for k, v in vars(world).items()
                        if not k.startswith("_") and isinstance(v, bool | int | float | str | type(None))))


class Pipeline:
    """The tick of `goap.runtime.Brain` (a mixin: the brain's wiring is in `goap.runtime.brain`)."""

    # --- the tick ----------------------------------------------------------------------------------------------
    def tick(self, dt: float = 1.0) -> TickStats:
        """Advance every agent one tick (see `goap.runtime`); returns the tick's times and counters.

        ``dt`` (the world's time step) must be a finite number >= 0: a NaN or infinite step would be integrated
        into every position the world moves."""
        if not isinstance(dt, int | float | np.integer | np.floating) or isinstance(dt, bool | np.bool_) \
                or not math.isfinite(dt) or dt < 0:
            raise ValueError(f"dt must be a finite number >= 0, got {dt!r}")
        dt = float(dt)
        grouping = self._grouping()
        steps = self._steps(dt, grouping)
        ms: dict[str, float] = {}
        start = time.perf_counter()
        self._search_ms = 0.0
        key = self._graph_key(dt, grouping) if self._capture_now() else None
        graphs = self._graphs_for(key) if key is not None else None
        t = start
        for k, segment in enumerate(self._segments(steps)):
            if segment[0].host:
                for step in segment:
                    step.run()
            elif graphs is None:
                for step in segment:
                    step.run()
            else:
                if k not in graphs:
                    graphs[k] = self.launcher.capture(lambda seg=segment: [s.run() for s in seg], segment[0].stage)
                    self.graph_captures += 1
                self.launcher.replay(graphs[k])
            if self.stage_timing or graphs is None:
                self.launcher.synchronize()
            now = time.perf_counter()
            elapsed = (now - t) * 1000.0
            ms[segment[0].stage] = ms.get(segment[0].stage, 0.0) + elapsed
            if segment[0].search:
                self._search_ms += elapsed
            t = now
        self.launcher.synchronize()
        self.tick_count += 1
        self._warm = True
        events = self._read_counters()
        if grouping and self._dedupe_auto:
            self._judge_dedupe()
        self._host_bytes_last, self._host_bytes = self._host_bytes, 0
        if self._event_hooks:
            self._call_event_hooks()
        ms["metrics"] = (time.perf_counter() - t) * 1000.0
        for stage in STAGES:
            self.stage_stats[stage].add(ms.get(stage, 0.0))
        self.stage_stats["search"].add(self._search_ms)
        self.stage_stats["total"].add((time.perf_counter() - start) * 1000.0)
        return TickStats(tick=self.tick_count, ms=ms, events=events)

    def _steps(self, dt: float, grouping: bool) -> list[Step]:
        """The tick's steps in order (see the module docstring)."""
        world, check = self.world, self.check_inputs
        s: list[Step] = [Step("act", self._clear_tick)]
        if world is None:  # the statuses the game set since the last tick
            if check:
                s.append(Step("act", self._check_actions, host=True))
            s.append(Step("act", self._finish_actions))
        if world is not None:
            s.append(Step("sense", lambda: world.sense(self)))
        if self._sensors:
            s.append(Step("sense", self._run_sensors))
        if check:
            s.append(Step("sense", lambda: self._check_states("after sense"), host=True))
            s.append(Step("sense", self._check_costs, host=True))
            s.append(Step("sense", self._check_types, host=True))
        if self.goal_scorer is not None:
            if callable(getattr(self.goal_scorer, "launch_scores", None)):
                s.append(Step("decide", self._score_on_device))
            else:
                s.append(Step("decide", self._score_goals, host=True))
        s.append(Step("decide", self._decide))
        if self.outcomes is not None:
            s.append(Step("decide", self._close_outcomes, host=True))
        s.append(Step("plan", self._queue))
        if self._plan_hooks:
            s.append(Step("plan", self._call_plan_hooks, host=True))
        if self._device_planner:
            s.append(Step("plan", lambda: self._search(grouping), search=True))
        else:
            s.append(Step("plan", self._plan_on_host, host=True, search=True))
        if self.outcomes is not None:
            s.append(Step("plan", self._open_outcomes, host=True))
        s.append(Step("plan", self._accept))
        s.append(Step("act", self._begin_actions))
        if world is not None:
            s.append(Step("act", lambda: world.act(self, dt)))
            if check:
                s.append(Step("act", self._check_actions, host=True))
            s.append(Step("act", self._finish_actions))
        s.append(Step("act", self._advance_tick))
        return s

    def _segments(self, steps: list[Step]) -> list[list[Step]]:
        """Runs of steps that share host-ness (and, with stage timing, a timing bucket and search-ness)."""
        out: list[list[Step]] = []
        for step in steps:
            last = out[-1][-1] if out else None
            same = (last is not None and last.host == step.host
                    and (not self.stage_timing or (last.stage == step.stage and last.search == step.search)))
            if same:
                out[-1].append(step)
            else:
                out.append([step])
        return out

    # --- capture bookkeeping -----------------------------------------------------------------------------------
    def _capture_now(self) -> bool:
        return self.config.capture and self._warm

    def _graph_key(self, dt: float, grouping: bool) -> tuple:
        world = None if self.world is None else (id(self.world), world_graph_key(self.world))
        scorer = self.goal_scorer
        scoring = None if scorer is None else (getattr(scorer, "every", None), getattr(scorer, "cache", None))
        return (dt, grouping, self.config.live_key(), scoring, self.outcomes is not None,
                tuple(id(h) for h in self._plan_hooks), world)

    def _graphs_for(self, key: tuple) -> dict[int, Any]:
        graphs = self._graph_cache.get(key)
        if graphs is None:
            self._prepare_capture()
            while len(self._graph_cache) >= _KEPT_GRAPH_KEYS:
                self._graph_cache.popitem(last=False)
            graphs = self._graph_cache[key] = {}
        self._graph_cache.move_to_end(key)
        return graphs

    def _prepare_capture(self) -> None:
        """Allocate what the device path needs before the first capture (a capture must not allocate buffers
        that later replays rely on being filled)."""
        reserve = getattr(self.planner, "reserve", None)
        if callable(reserve) and self._device_planner:
            options = {"max_escalated_nodes": self.search_nodes_per_tick}
            if hasattr(self.planner, "inner"):
                options["out"] = self._batch
            reserve(self._plan_capacity(), **options)

    def drop_graphs(self) -> None:
        """Forget every captured graph (the next tick captures again)."""
        self._graph_cache = OrderedDict()

    @property
    def captured(self) -> bool:
        """Whether the last tick replayed captured graphs."""
        return bool(self._graph_cache) and self._capture_now()

    # --- device steps ------------------------------------------------------------------------------------------
    def _clear_tick(self) -> None:
        self.arrays.event_bits.zero_()
        self.arrays.interrupted_action.fill_(-1)
        self._counters.zero_()

    def _decide(self) -> None:
        self.launcher.launch_rows(self._kernels.decide, self.n_agents, [
            self.agents, self._tick, self._tables_d.goals, self._tables_d, self._rules,
            int(self.goal_scorer is not None), self._score_mult, self._score_add,
            float(self.goal_hysteresis), self._flag, self._counters,
        ])

    def _queue(self) -> None:
        """Compact the requests on the device; order them (two stable radix sorts) only when more agents ask than
        ``plan_budget`` allows: a device-side condition, so the captured and plain paths order alike."""
        wp, k, N = self._wp, self._kernels, self.n_agents
        if not N:
            return
        wp.utils.array_scan(self._flag, self._pos, inclusive=False)
        self.launcher.launch_rows(k.compact_requests, N, [
            self.agents, self._flag, self._pos, int(self.plan_budget or 0), self._q_key, self._q_ids, self._q_count,
        ])
        if self.plan_budget is not None:
            wp.capture_if(self._q_order, on_true=self._order_queue)

    def _order_queue(self) -> None:
        """Longest waiting first, then highest priority, then lowest index: two stable sorts (priority, wait)."""
        wp, N = self._wp, self.n_agents
        count = int(self._q_count_view[0]) if host_sized(self.device) else N
        wp.utils.radix_sort_pairs(self._q_key, self._q_ids, count)
        self.launcher.launch(self._kernels.wait_keys, count, [self.agents, self._q_ids, self._q_count, self._q_wait])
        wp.utils.radix_sort_pairs(self._q_wait, self._q_ids, count)

    def _plan_capacity(self) -> int:
        return min(self.n_agents, self.plan_budget or self.n_agents)

    def _planned_ids(self) -> Any:
        """The head of the queue the planner may take (``plan_budget`` rows): one view per budget value."""
        cap = self._plan_capacity()
        view = self._ids_views.get(cap)
        if view is None:
            view = self._ids_views[cap] = self._q_ids[:cap]
        return view

    def _search(self, grouping: bool) -> None:
        if not self.n_agents:
            return
        a = self.arrays
        planner = self.planner if grouping else self.planner.inner
        planner.plan(a.states, a.goal, a.costs, a.enabled, types=self._plan_types, agents=self._planned_ids(),
                     count=self._q_planned, out=self._batch, max_escalated_nodes=self.search_nodes_per_tick)

    def _accept(self) -> None:
        dim = int(self._q_count_view[1]) if host_sized(self.device) else self._plan_capacity()
        self.launcher.launch_rows(self._kernels.accept_plans, dim, [
            self.agents, self._tick, self._q_ids, self._q_count, int(self.cooldown_ticks), self._n_levels,
            self._counters,
        ])

    def _begin_actions(self) -> None:
        self.launcher.launch_rows(self._kernels.begin_actions, self.n_agents, [self.agents, self._counters])

    def _finish_actions(self) -> None:
        self.launcher.launch_rows(self._kernels.finish_actions, self.n_agents, [
            self.agents, self._tables_d, int(self.apply_effects), self._action_counts, self._counters,
        ])

    def _advance_tick(self) -> None:
        self.launcher.launch(self._kernels.advance_tick, 1, [self._tick])

    # --- host steps --------------------------------------------------------------------------------------------
    def _score_goals(self) -> None:
        """Call the goal scorer and copy its scores into the device buffer ``decide`` reads: every agent's, or, for
        a row scorer, the due agents' rows (`_score_rows`)."""
        if callable(getattr(self.goal_scorer, "score_rows", None)):
            self._score_rows()
            return
        shape = tuple(self.arrays.priorities.shape)
        s = self._scores_on_device(self.goal_scorer(self), shape)
        if self.n_agents and s.shape[1]:
            self._score_writer = None  # a fused selector's cached rows no longer hold
            self.launcher.launch(self._kernels.copy_scores, shape, [s, self._score_mult, self._score_add],
                                 record=False)

    def _score_rows(self) -> None:
        """A row scorer: compact the due agents on the device, read their number (4 bytes), ask the scorer about
        them only, and scatter its rows into the score buffer."""
        wp, k, N = self._wp, self._kernels, self.n_agents
        if not N:
            return
        every = int(getattr(self.goal_scorer, "every", 1) or 1)
        if every < 1:
            raise ValueError(f"goal_scorer.every must be an integer >= 1, got {every!r}")
        ids, count = self._list_buffers("score")
        self.launcher.launch(k.select_due, N, [self.agents, self._tick, self._tables_d.goals, every,
                                               self._event_flag], record=False)
        wp.utils.array_scan(self._event_flag, self._event_pos, inclusive=False)
        self.launcher.launch(k.scatter_list, N, [self._event_flag, self._event_pos, ids, count], record=False)
        n = int(self._host(count)[0])
        if not n:
            return
        rows = ids[:n]
        G = self.arrays.priorities.shape[1]
        factors = getattr(self.goal_scorer, "score_factors", None)
        out = factors(self, rows) if callable(factors) else self.goal_scorer.score_rows(self, rows)
        affine = isinstance(out, tuple)
        if affine and len(out) != 2:
            raise ValueError(f"goal_scorer.score_rows returned a tuple of {len(out)}; expected scores or (factor, "
                             "term)")
        mult, add = (self._scores_on_device(x, (n, G)) for x in out) if affine else (None, None)
        if not affine:
            add = mult = self._scores_on_device(out, (n, G))
        if G:
            self._score_writer = None  # a fused selector's cached rows no longer hold
            self.launcher.launch(k.scatter_scores, (n, G), [rows, mult, add, int(affine), self._score_mult,
                                                            self._score_add], record=False)

    def _score_on_device(self) -> None:
        """A device scorer (``launch_scores``): its own launches score the agents due this tick
        (`goap.kernels.tick.scoring_due`, as for a row scorer, tested in the scorer's kernel, so no list is
        compacted) and write their rows of the score buffers (factor and term, see `goap.kernels.tick.decide`).
        Device work only, so it is captured with the tick."""
        N = self.n_agents
        if not N:
            return
        every = int(getattr(self.goal_scorer, "every", 1) or 1)
        if every < 1:
            raise ValueError(f"goal_scorer.every must be an integer >= 1, got {every!r}")
        self.goal_scorer.launch_scores(self, rows=None, count=None, dim=N, every=every, mult=self._score_mult,
                                       add=self._score_add, goals=self._tables_d.goals, rules=self._rules)

    def _scores_on_device(self, s: Any, shape: tuple[int, int]) -> Any:
        """A scorer's output (a Warp array on the brain's device, a torch tensor or host data) as a float32 Warp
        array of ``shape`` on the device, checked."""
        wp = self._wp
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

    def _call_plan_hooks(self) -> None:
        a = self.arrays
        for hook in self._plan_hooks:
            hook(a.states, a.goal, a.costs, a.enabled, self._planned_ids(), self._q_planned)

    def _plan_on_host(self) -> None:
        """Planners that work on host arrays (the reference): plan, then write the rows into the brain."""
        n = int(self._q_count.numpy()[1]) if self.n_agents else 0
        if n <= 0:
            return
        wp, a = self._wp, self.arrays
        ids = self._q_ids.numpy()[:n].astype(np.int64)
        host = {name: arr.numpy() for name, arr in a.items()}  # views on the CPU, copies on a GPU
        types = host["agent_type"] if self._plan_types is not None else None
        batch = self.planner.plan(host["states"], host["goal"], host["costs"], host["enabled"], types=types,
                                  agents=ids, out=self._host_batch)
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

    # --- metrics and the grouping choice ---------------------------------------------------------------------------
    def _read_counters(self) -> dict[str, int]:
        counts = self._host(self._counters).sum(axis=0)
        self._last_counts = counts
        events = {}
        for name, slot in _SLOT.items():
            n = int(counts[slot])
            if n and name not in GAUGES:
                events[name] = n
        self.counters.update(events)
        alive, idle = int(counts[_SLOT["alive"]]), int(counts[_SLOT["idle"]])
        self.idle_series.add(idle / alive if alive else 0.0)
        return events

    def _grouping(self) -> bool:
        """Whether this tick's queries go through the grouping planner (``dedupe``)."""
        if not self._device_planner or not hasattr(self.planner, "inner"):
            return True
        return not self._dedupe_auto or self._dedupe_on or self.tick_count >= self._dedupe_probe_at

    def _judge_dedupe(self) -> None:
        """After a grouped tick: keep grouping while at least 5% of the queries were repeats, else pause it."""
        c = self._host(self.planner.counters)
        seen = (int(c[DEDUPE_COUNTERS.index("requests")]), int(c[DEDUPE_COUNTERS.index("distinct")]))
        requests, distinct = seen[0] - self._dedupe_seen[0], seen[1] - self._dedupe_seen[1]
        self._dedupe_seen = seen
        if requests:
            self._dedupe_on = distinct <= 0.95 * requests
            self._dedupe_probe_at = self.tick_count + 32

    @property
    def host_bytes_per_tick(self) -> int:
        """Bytes the brain read back from the device from the end of the tick before the last to the end of the
        last: the tick's counters; the grouping planner's counters after a grouped tick under ``dedupe="auto"``;
        with ``check_inputs``, one int per CPU chunk per check; and whatever the game asked for since (an
        `Events.agents` list, `spawn`'s indices, `n_alive`). Events, commands and device index lists add nothing.
        Opt-in host work reads more (a goal scorer that returns host arrays, outcome logging, ``on_plan`` hooks
        that read). On the CPU outside capture, the host-sized launches also read the request counts: zero-copy
        views there, not counted (a GPU keeps them on the device)."""
        return self._host_bytes_last


def require_capturable(world: Any) -> None:
    """Raise CaptureError when ``world`` does not declare that its sense and act only launch device work."""
    if world is not None and not getattr(world, "capturable", False):
        raise CaptureError(
            f"world '{getattr(world, 'name', type(world).__name__)}' does not declare capturable = True, so "
            f"capture=True cannot record its sense and act; make them launch device work only (no host reads, no "
            f"per-tick Python scalars) and set capturable = True, or make the brain with capture=False")

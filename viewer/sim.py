"""The simulation side of the viewer: ticks the Brain and publishes snapshots for drawing.

Drawing never touches the Brain: after every tick (or on request while paused) the thread that owns the Brain
copies the few arrays a frame needs into a `Snapshot` and swaps it in under a lock. The window thread only
takes the latest snapshot, so a slow tick (a big planning batch) never blocks a frame, and a frame never sees
a half-updated tick. In synchronous mode (headless, tests) the caller ticks with `Simulation.step` instead.
With the thread, a snapshot is built only after the window took the previous one, so at most one per frame.

A snapshot holds only what a frame draws: per agent the position, the current action, its idle reason (one device
reduction after each tick, `goap.run_report.IdleStats`) and the world's drawing arrays (team, alive); the selected
agent's panel, its explanation (the "why" panel, `goap.explain`, when shown) and its goal's subgraph (when
shown); the score. Brain arrays are read through
`goap.worldview.to_host` (a zero-copy view on the CPU, one device-to-host copy from CUDA) once per snapshot,
and copied so the next tick cannot change a frame being drawn.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from goap.runtime import TickStats
from goap.worldview import WorldView, to_host
from viewer.inspector import goal_graph, inspector_lines, why_lines

#: Sim speeds the +/- keys step through (ticks per second; 0 means as fast as it goes).
SPEEDS = (1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 0.0)


@dataclass
class Snapshot:
    """What one frame draws, copied from the Brain and world at one tick boundary."""

    tick: int
    positions: np.ndarray  # float32 [N, 2]
    action: np.ndarray  # int32 [N]
    arrays: dict[str, np.ndarray]  # team, alive (per world)
    stats: TickStats | None
    waiting: int
    score: dict[str, float]
    ticks_per_second: float
    tick_ms: float
    selected: int = -1
    inspector: list[tuple[str, str]] = field(default_factory=list)
    target: tuple[float, float] | None = None
    idle_reasons: np.ndarray | None = None  # int8 [N]: goap.explain.IDLE_REASONS code of the last tick, -1 acting
    plan_budget: int | None = None
    why: list[tuple[str, str]] = field(default_factory=list)  # the selected agent's explanation (when shown)
    graph: Any = None  # (goap.graph.Graph, {node: (column, row)}) of the selected agent's goal (when shown)


class Simulation:
    """Owns the ticking of a Brain: in a background thread at a target rate, or stepped by the caller."""

    def __init__(self, brain: Any, view: WorldView, *, ticks_per_second: float = 20.0, threaded: bool = False):
        self.brain, self.view, self.world = brain, view, view.world
        self.ticks_per_second = float(ticks_per_second)
        self.threaded = threaded
        self.paused = False
        self.selected = -1
        self.show_why = False  # build the selected agent's explanation into each snapshot
        self.show_graph = False  # build its goal's subgraph
        from goap.run_report import IdleStats

        self.idle = IdleStats(brain)  # one reduction after each tick: every agent's idle reason
        self._lock = threading.Lock()  # guards _snap (and the request fields below)
        self._wake = threading.Condition(self._lock)
        self._steps = 0  # single steps requested while paused
        self._dirty = False  # a new snapshot is wanted (selection changed while paused)
        self._taken = True  # the window took the latest snapshot: the next tick's is worth building
        self._stale = False  # ticks ran since the latest snapshot (built only once the window took the last)
        self._stop = False
        self._busy = False  # the thread is inside a tick or a snapshot
        self._thread: threading.Thread | None = None
        self._stats: TickStats | None = None
        self._tick_ms = 0.0
        self._times: deque[float] = deque(maxlen=64)
        self.error: BaseException | None = None
        self.snapshot_ms = 0.0  # what building the last snapshot took (the viewer's own cost per tick)
        self.snapshots_built = 0
        self._snap = self._build()

    # --- control (any thread) -------------------------------------------------------------------------------
    def start(self) -> None:
        if self.threaded and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="goap-sim", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        with self._wake:
            self._stop = True
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def set_paused(self, paused: bool) -> None:
        with self._wake:
            self.paused = paused
            self._wake.notify_all()

    def request_step(self) -> None:
        """Advance exactly one tick while paused (now when synchronous, on the thread otherwise)."""
        if not self.threaded:
            self.step()
            return
        with self._wake:
            self._steps += 1
            self._wake.notify_all()

    def select(self, i: int) -> None:
        """Inspect agent i (-1: none); the next snapshot carries its panel."""
        with self._wake:
            self.selected = int(i)
            self._dirty = True
            self._wake.notify_all()
        if not self.threaded:
            self.refresh()

    def set_panels(self, why: bool | None = None, graph: bool | None = None) -> None:
        """Show or hide the why panel and the goal graph; the next snapshot carries (or drops) them."""
        with self._wake:
            if why is not None:
                self.show_why = bool(why)
            if graph is not None:
                self.show_graph = bool(graph)
            self._dirty = True
            self._wake.notify_all()
        if not self.threaded:
            self.refresh()

    def set_speed(self, ticks_per_second: float) -> None:
        with self._wake:
            self.ticks_per_second = float(ticks_per_second)
            self._wake.notify_all()

    def snapshot(self) -> Snapshot:
        """The latest published snapshot (never waits for a tick).

        Taking it tells the simulation thread that the next snapshot will be drawn: snapshots are built at most
        once per frame, not once per tick, so a simulation running faster than the frame rate does not pay for
        copies nobody sees (the frame shows the first tick boundary after the previous frame).
        """
        with self._wake:
            self._taken = True
            if self._stale:
                self._wake.notify_all()
            return self._snap

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait until requested steps and refreshes are done (for tests and scripted runs)."""
        end = time.perf_counter() + timeout
        while time.perf_counter() < end:
            with self._lock:
                if not self._steps and not self._dirty and not self._busy:
                    return True
            time.sleep(0.002)
        return False

    # --- the Brain's side (the owning thread only) ----------------------------------------------------------
    def step(self) -> TickStats:
        """One tick now, then publish a snapshot."""
        t = time.perf_counter()
        self._stats = self.brain.tick()
        self.idle.update()
        now = time.perf_counter()
        self._tick_ms = (now - t) * 1000.0
        self._times.append(now)
        if not self.threaded or self.paused or self._taken or self._dirty:
            self.refresh()
        else:
            self._stale = True
        return self._stats

    def refresh(self) -> None:
        t = time.perf_counter()
        snap = self._build()
        self.snapshot_ms = (time.perf_counter() - t) * 1000.0
        self.snapshots_built += 1
        with self._lock:
            self._snap = snap
            self._dirty = self._stale = self._taken = False

    def _rate(self) -> float:
        if len(self._times) < 2:
            return 0.0
        recent = [t for t in self._times if t >= self._times[-1] - 2.0]
        if len(recent) < 2:
            return 0.0
        return (len(recent) - 1) / max(recent[-1] - recent[0], 1e-9)

    def _build(self) -> Snapshot:
        b, view = self.brain, self.view
        score = dict(self.world.score()) if hasattr(self.world, "score") else {}  # cheap: under 1 ms at 10k agents
        sel = self.selected
        ok = 0 <= sel < b.n_agents
        arrays = view.agent_arrays()
        alive = getattr(b, "alive", None)  # the brain's own lifecycle mask (despawned agents), where it has one
        if alive is not None:
            mask = to_host(alive).astype(bool)
            arrays["alive"] = mask & arrays["alive"] if "alive" in arrays and len(arrays["alive"]) == len(mask) \
                else np.array(mask, copy=True)
        needs_plan = getattr(b, "needs_plan", None)
        why = why_lines(b, sel) if ok and self.show_why else []
        graph = goal_graph(b, sel) if ok and self.show_graph else None
        return Snapshot(
            tick=int(b.tick_count),
            positions=np.array(view.positions(), dtype=np.float32, copy=True),
            action=to_host(b.action, copy=True).astype(np.int32, copy=False),
            arrays=arrays,
            stats=self._stats,
            waiting=int(np.count_nonzero(to_host(needs_plan))) if needs_plan is not None else 0,
            score=score,
            ticks_per_second=self._rate(),
            tick_ms=self._tick_ms,
            selected=sel if ok else -1,
            inspector=inspector_lines(b, self.world, sel) if ok else [],
            target=view.target_of(sel) if ok else None,
            idle_reasons=to_host(self.idle.reasons, copy=True)[: b.n_agents],
            plan_budget=getattr(b, "plan_budget", None),
            why=why,
            graph=graph,
        )

    def _run(self) -> None:
        last = float("-inf")  # when the last tick started; ticks start 1/tps apart, late ones are not caught up
        try:
            while True:
                with self._wake:
                    while True:
                        if self._stop:
                            return
                        if self._dirty or (self._stale and self._taken) or (self.paused and self._steps):
                            break
                        if self.paused:
                            self._wake.wait(0.25)
                            continue
                        tps = self.ticks_per_second
                        left = last + (1.0 / tps if tps > 0 else 0.0) - time.perf_counter()
                        if left <= 0:
                            break
                        self._wake.wait(left)
                    tps = self.ticks_per_second
                    due = not self.paused and last + (1.0 / tps if tps > 0 else 0.0) <= time.perf_counter()
                    stepping = self.paused and self._steps > 0
                    if stepping:
                        self._steps -= 1
                    self._busy = True
                try:
                    if due or stepping:
                        last = time.perf_counter()
                        self.step()
                    else:
                        self.refresh()
                finally:
                    with self._lock:
                        self._busy = False
        except BaseException as exc:  # surfaced by the App, so a crash in a world is not silent
            self.error = exc

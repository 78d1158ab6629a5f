"""``goap view``: the viewer's command line, and `App`, the controller that turns input into camera, sim and
selection changes and draws a frame.

pygame is imported lazily (inside functions), so that importing this module, and the whole engine, works
without it; `require_pygame` raises `ViewerUnavailable` naming the extra to install. In a window the
simulation runs in a background thread at its own rate (see `viewer.sim`); headless, each frame ticks once
in the main loop so that a run is deterministic.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from goap.argtypes import (
    ascii_int,
    check_output_dir,
    check_output_file,
    non_negative_int,
    output_path,
    positive_int,
    random_seed,
)

INSTALL_HINT = 'pip install -e ".[viewer]"'


class ViewerUnavailable(RuntimeError):
    """pygame (pygame-ce) is not installed, or no window can be opened."""


def require_pygame(headless: bool = False) -> Any:
    """Import pygame (and set the dummy video driver first when ``headless``); ViewerUnavailable if missing."""
    if headless:
        os.environ["SDL_VIDEODRIVER"] = "dummy"
        os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    try:
        import pygame
    except ImportError as exc:
        raise ViewerUnavailable(f"the viewer needs pygame-ce: {INSTALL_HINT} ({exc})") from None
    return pygame


# --- command line ---------------------------------------------------------------------------------------------
#: The largest window or headless frame: 8K. pygame allocates the whole surface up front (4 bytes a pixel), so
#: ``--size 100000x100000`` would ask for 40 GB and end in a pygame.error rather than a usage message.
MAX_SIZE = (7680, 4320)


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (ascii_int(v) for v in text.lower().split("x"))
    except (ValueError, argparse.ArgumentTypeError):
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT such as 1280x800, got {text!r}") from None
    if w < 320 or h < 240:
        raise argparse.ArgumentTypeError(f"the window must be at least 320x240, got {text!r}")
    if w > MAX_SIZE[0] or h > MAX_SIZE[1]:
        raise argparse.ArgumentTypeError(f"the window must be at most {MAX_SIZE[0]}x{MAX_SIZE[1]}, got {text!r}")
    return w, h


def _speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of ticks per second, got {text!r}") from None
    if not np.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected ticks per second >= 0 (0: as fast as it goes), got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``goap view`` (`goap.cli` adds the subcommand and calls `run`)."""
    parser.add_argument("--world", required=True,
                        help="a world: village, soldier, a registered name, or package.module:Class")
    parser.add_argument("--agents", type=non_negative_int, default=2000, help="number of agents (default 2000)")
    parser.add_argument("--seed", type=random_seed, default=0)
    parser.add_argument("--device", default=None, help="Warp device for the planner (cpu, cuda:0); default: Warp's")
    parser.add_argument("--planner", default="warp", help="a registered planner (default warp)")
    parser.add_argument("--plan-budget", type=positive_int, default=None,
                        help="most agents planned per tick (default: as goap run, the world's replan_rate of "
                             "the agents, at least 256)")
    parser.add_argument("--headless", action="store_true",
                        help="no window (SDL dummy driver): render --frames frames, one tick each, and report timing")
    parser.add_argument("--frames", type=positive_int, default=None,
                        help="stop after this many frames (headless default 60)")
    parser.add_argument("--screenshot", type=output_path, default=None, metavar="PNG",
                        help="write the last frame to this PNG file")
    parser.add_argument("--select", type=ascii_int, default=None, metavar="ID",
                        help="inspect this agent from the start")
    parser.add_argument("--record", type=output_path, default=None, metavar="DIR",
                        help="write frames as DIR/frame_00000.png ...")
    parser.add_argument("--record-every", type=positive_int, default=1, metavar="K", help="with --record: every K-th")
    parser.add_argument("--size", type=_size, default=(1280, 800), metavar="WxH", help="window size (default 1280x800)")
    parser.add_argument("--ticks-per-second", type=_speed, default=20.0,
                        help="simulation speed in a window (default 20; 0: as fast as it goes)")
    parser.add_argument("--fps", type=positive_int, default=30,
                        help="frame-rate cap in a window (default 30: leaves the CPU to the simulation)")
    parser.add_argument("--sim-thread", action="store_true",
                        help="headless: tick in the background thread at --ticks-per-second instead of once a frame "
                             "(frames capped at --fps, as in a window)")


def run(args: argparse.Namespace) -> int:
    """Open the viewer (or render headless) as ``args`` says; prints ``mean frame: X ms`` last when headless."""
    if args.screenshot:  # refused before the window opens, not after the last frame
        check_output_file(args.screenshot, "--screenshot")
    if args.record:
        check_output_dir(args.record, "--record")
    pg = require_pygame(headless=args.headless)
    from goap.registry import load_world
    from goap.runtime import Brain

    world = load_world(args.world)  # a bad spec is bad input, as for goap run: `goap: error: ...`, status 1
    if args.select is not None and not 0 <= args.select < args.agents:
        print(f"goap view: error: --select {args.select} is not an agent (0..{args.agents - 1})", file=sys.stderr)
        return 2
    from goap.world import default_plan_budget

    budget = args.plan_budget or default_plan_budget(world, args.agents)
    brain = Brain(world.domain, args.agents, world=world, planner=args.planner, device=args.device,
                  plan_budget=budget, seed=args.seed)
    frames = args.frames if args.frames is not None else (60 if args.headless else None)
    try:
        app = App(brain, world, size=args.size, ticks_per_second=args.ticks_per_second, headless=args.headless,
                  threaded=not args.headless or args.sim_thread, selected=args.select)
    except pg.error as e:  # no display, or no memory for the surface: one line, not a traceback
        raise ValueError(f"cannot open a {args.size[0]}x{args.size[1]} window: {e}") from None
    interrupted = False
    try:
        app.loop(frames=frames, record=args.record, record_every=args.record_every,
                 fps=args.fps if not args.headless or args.sim_thread else None)  # threaded: capped as in a window
    except KeyboardInterrupt:
        interrupted = True
    finally:
        try:
            if args.screenshot and app.frame_index:
                app.save(args.screenshot)
        finally:
            app.close()
    n = len(app.frame_times)
    warm = min(5, max(0, n - 1)) if n > 1 else 0
    if n:
        sim, draw = np.array(app.sim_times[warm:]), np.array(app.draw_times[warm:])
        total = np.array(app.frame_times[warm:])
        head = f"{args.world}: {args.agents} agents, {n} frames ({warm} warm-up)"
        if app.sim.threaded:
            rate = brain.tick_count / app.loop_seconds if app.loop_seconds > 0 else 0.0
            print(f"{head}: draw {draw.mean():.2f} ms per frame, p95 {np.percentile(total, 95):.2f} ms; "
                  f"the simulation ran on its own thread at {rate:.1f} ticks/s")
        else:
            snap = np.array(app.snapshot_times[warm:])
            print(f"{head}: sim {sim.mean():.2f} ms (tick {sim.mean() - snap.mean():.2f} + snapshot "
                  f"{snap.mean():.2f}) + draw {draw.mean():.2f} ms per frame, "
                  f"p95 frame {np.percentile(total, 95):.2f} ms")
        print(f"mean frame: {total.mean():.2f} ms")
    return 130 if interrupted else 0


def main(argv: list[str] | None = None) -> int:
    """``python -m viewer``: the same as ``goap view`` (the same options and error handling)."""
    from goap.cli import main as goap_main

    return goap_main(["view", *(sys.argv[1:] if argv is None else argv)])


# --- the controller -------------------------------------------------------------------------------------------
class App:
    """One viewer: window, camera, renderer and simulation; input handling kept testable without events.

    ``threaded=False`` (the headless default) ticks once per `frame` in the caller's thread; ``threaded=True``
    runs the Brain in `viewer.sim.Simulation`'s background thread at ``ticks_per_second``.
    """

    def __init__(self, brain: Any, world: Any, *, size: tuple[int, int] = (1280, 800),
                 ticks_per_second: float = 20.0, headless: bool = True, threaded: bool = False,
                 selected: int | None = None):
        pg = self.pg = require_pygame(headless=headless)
        from viewer.render import Camera, Renderer, UiState
        from viewer.sim import SPEEDS, Simulation
        from viewer.worlds import make_view

        pg.display.init()
        pg.font.init()
        flags = pg.RESIZABLE
        try:
            self.screen = pg.display.set_mode(size, flags)
        except pg.error as exc:
            raise ViewerUnavailable(f"cannot open a window ({exc}); use --headless") from None
        pg.display.set_caption(f"warp-goap viewer: {getattr(world, 'name', 'world')}")
        self.brain, self.world = brain, world
        self.view = make_view(world)
        self.speeds = SPEEDS
        self.sim = Simulation(brain, self.view, ticks_per_second=ticks_per_second, threaded=threaded)
        self.renderer = Renderer(self.view, [a.name for a in brain.domain.actions], self.screen.get_size())
        self.camera = Camera(self.view.size(), self.renderer.layout.map.size)
        self.ui = UiState(target_tps=ticks_per_second, threaded=threaded, agents=brain.n_agents)
        self.running = True
        self.frame_times: list[float] = []
        self.sim_times: list[float] = []
        self.snapshot_times: list[float] = []  # of sim_times: building the snapshot (the rest is the tick)
        self.draw_times: list[float] = []
        self.frame_index = 0
        self.loop_seconds = 0.0
        self.last_snapshot = self.sim.snapshot()
        self._drag: tuple[int, int] | None = None
        self._dragging = False
        if selected is not None:
            self.select(selected)
        self.sim.start()

    # --- state --------------------------------------------------------------------------------------------------
    @property
    def paused(self) -> bool:
        return self.ui.paused

    @property
    def selected(self) -> int:
        return self.sim.selected

    def select(self, i: int | None) -> None:
        """Inspect agent i (None or -1: nobody)."""
        self.ui.scroll = 0
        n = self.brain.n_agents
        self.sim.select(-1 if i is None or n == 0 or not 0 <= i < n else int(i))

    def set_paused(self, paused: bool) -> None:
        self.ui.paused = paused
        self.sim.set_paused(paused)

    def toggle_highlight(self, label: str | None) -> None:
        """Highlight legend group ``label`` (or "idle"); the highlighted one again, or None, shows everyone."""
        if label is None:
            return
        self.renderer.set_highlight(None if self.renderer.highlight == label else label)

    def toggle_why(self) -> None:
        """The why panel (W): the selected agent's explanation (`goap.explain`) instead of its mind."""
        self.ui.show_why = not self.ui.show_why
        self.ui.scroll = 0
        self.sim.set_panels(why=self.ui.show_why)

    def toggle_graph(self) -> None:
        """The goal graph overlay (G): the selected agent's goal subgraph, its plan lit."""
        self.ui.show_graph = not self.ui.show_graph
        self.sim.set_panels(graph=self.ui.show_graph)

    def cycle_idle(self, reason: str) -> int:
        """Select the next agent (after the selected one, wrapping) that was idle for ``reason`` in the last tick
        (`goap.explain.IDLE_REASONS`); returns it, or -1 (the selection stays) when none was."""
        from goap.explain import IDLE_REASONS

        reasons = self.last_snapshot.idle_reasons
        if reasons is None or reason not in IDLE_REASONS:
            return -1
        agents = np.flatnonzero(reasons == IDLE_REASONS.index(reason))
        if not len(agents):
            return -1
        later = agents[agents > self.selected]
        pick = int(later[0] if len(later) else agents[0])
        self.select(pick)
        return pick

    def change_speed(self, direction: int) -> None:
        """Step through `viewer.sim.SPEEDS` (0, "as fast as it goes", is the fastest)."""
        order = sorted(self.speeds, key=lambda s: float("inf") if s <= 0 else s)
        cur = self.sim.ticks_per_second
        key = float("inf") if cur <= 0 else cur
        idx = int(np.searchsorted([float("inf") if s <= 0 else s for s in order], key))
        idx = min(max(idx + (1 if direction > 0 else -1), 0), len(order) - 1)
        self.sim.set_speed(order[idx])
        self.ui.target_tps = order[idx]

    # --- input --------------------------------------------------------------------------------------------------
    def handle_key(self, key: int, mod: int = 0) -> None:
        """One key press (pygame key code); see `viewer.render.HELP`."""
        pg = self.pg
        if key == pg.K_ESCAPE:
            self.running = False
        elif key == pg.K_SPACE:
            self.set_paused(not self.paused)
        elif key == pg.K_RIGHT:
            if self.paused:
                self.sim.request_step()
        elif key in (pg.K_PLUS, pg.K_EQUALS, pg.K_KP_PLUS):
            self.change_speed(+1)
        elif key in (pg.K_MINUS, pg.K_KP_MINUS):
            self.change_speed(-1)
        elif key == pg.K_TAB:
            n = self.brain.n_agents
            if n:
                step = -1 if mod & pg.KMOD_SHIFT else 1
                cur = self.selected
                self.select((cur + step) % n if cur >= 0 else (0 if step > 0 else n - 1))
        elif key == pg.K_f:
            self.ui.follow = not self.ui.follow
        elif key == pg.K_h:
            self.ui.show_help = not self.ui.show_help
        elif key == pg.K_w:
            self.toggle_why()
        elif key == pg.K_g:
            self.toggle_graph()
        elif key in (pg.K_HOME, pg.K_0, pg.K_KP0):
            self.ui.follow = False
            self.camera.fit()

    def agent_at(self, px: float, py: float, radius: float | None = None) -> int:
        """The agent nearest to window pixel (px, py) within a few pixels, or -1."""
        m = self.renderer.layout.map
        pos = self.last_snapshot.positions
        if not len(pos) or not m.collidepoint(px, py):
            return -1
        xy = self.camera.to_screen(pos)
        d2 = (xy[:, 0] - (px - m.x)) ** 2 + (xy[:, 1] - (py - m.y)) ** 2
        d2 = np.where(np.isfinite(d2), d2, np.inf)
        i = int(np.argmin(d2))
        r = radius if radius is not None else max(8.0, self.renderer.last_radius + 4.0)
        return i if d2[i] <= r * r else -1

    def handle_event(self, ev: Any) -> None:
        """One pygame event: quit, keys, wheel zoom, drag to pan, click to select, window resizes."""
        pg = self.pg
        m = self.renderer.layout.map
        if ev.type == pg.QUIT:
            self.running = False
        elif ev.type == pg.KEYDOWN:
            self.handle_key(ev.key, getattr(ev, "mod", 0))
        elif ev.type == pg.MOUSEWHEEL:
            mx, my = pg.mouse.get_pos()
            if self.renderer.layout.panel.collidepoint(mx, my):  # over the panel: scroll the inspector
                self.ui.scroll = max(0, self.renderer.inspector_scroll - 3 * int(ev.y))
                return
            if not m.collidepoint(mx, my):  # over the legend: zoom at the map's centre
                mx, my = m.centerx, m.centery
            self.camera.zoom_at(1.2 ** ev.y, mx - m.x, my - m.y)
        elif ev.type == pg.MOUSEBUTTONDOWN and ev.button == 1 and m.collidepoint(ev.pos):
            self._drag, self._dragging = ev.pos, False
        elif ev.type == pg.MOUSEBUTTONDOWN and ev.button == 1 and self.renderer.layout.legend.collidepoint(ev.pos):
            self.toggle_highlight(self.renderer.legend_at(*ev.pos))
        elif ev.type == pg.MOUSEBUTTONDOWN and ev.button == 1 and self.renderer.layout.panel.collidepoint(ev.pos):
            reason = self.renderer.idle_reason_at(*ev.pos)
            if reason is not None:
                self.cycle_idle(reason)
        elif ev.type == pg.MOUSEMOTION and self._drag is not None:
            if self._dragging or abs(ev.pos[0] - self._drag[0]) + abs(ev.pos[1] - self._drag[1]) > 3:
                self._dragging = True
                self.ui.follow = False
                self.camera.pan(*ev.rel)
        elif ev.type == pg.MOUSEBUTTONUP and ev.button == 1 and self._drag is not None:
            if not self._dragging:
                self.select(self.agent_at(*ev.pos))
            self._drag, self._dragging = None, False
        elif ev.type in (pg.VIDEORESIZE, getattr(pg, "WINDOWSIZECHANGED", -1)):
            self.resize(self.screen.get_size() if ev.type != pg.VIDEORESIZE else ev.size)

    def resize(self, size: tuple[int, int]) -> None:
        surf = self.pg.display.get_surface()
        if surf is not None:
            self.screen = surf
        size = self.screen.get_size() if surf is not None else size
        self.renderer.resize(size)
        self.camera.resize(self.renderer.layout.map.size)

    # --- frames -------------------------------------------------------------------------------------------------
    def frame(self) -> float:
        """Tick (synchronous mode, unless paused), draw and show one frame; its milliseconds."""
        t0 = time.perf_counter()
        stepped = not self.sim.threaded and not self.paused
        if stepped:
            self.sim.step()
        if self.sim.error is not None:
            raise RuntimeError("the simulation thread failed") from self.sim.error
        t1 = time.perf_counter()
        surf = self.pg.display.get_surface()
        if surf is not None and surf.get_size() != self.renderer.layout_size:  # resized without an event seen
            self.resize(surf.get_size())
        snap = self.last_snapshot = self.sim.snapshot()
        if self.ui.follow and 0 <= snap.selected < len(snap.positions):
            p = snap.positions[snap.selected]
            if np.isfinite(p).all():
                self.camera.center_on(float(p[0]), float(p[1]))
        self.renderer.draw(self.screen, snap, self.camera, self.ui)
        self.pg.display.flip()
        t2 = time.perf_counter()
        ms = (t2 - t0) * 1000.0
        self.sim_times.append((t1 - t0) * 1000.0)
        self.snapshot_times.append(self.sim.snapshot_ms if stepped else 0.0)
        self.draw_times.append((t2 - t1) * 1000.0)
        self.frame_times.append(ms)
        self.ui.frame_ms = ms if self.frame_index == 0 else 0.9 * self.ui.frame_ms + 0.1 * ms
        self.frame_index += 1
        return ms

    def loop(self, frames: int | None = None, record: str | Path | None = None, record_every: int = 1,
             fps: int | None = None) -> None:
        """Run frames until Esc / the window closes, or ``frames`` frames; optionally record every k-th.

        ``fps`` caps the frame rate (a window: frames beyond what the eye needs take CPU from the simulation).
        """
        pg = self.pg
        clock = pg.time.Clock()
        out = Path(record) if record else None
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
        done = 0
        start = time.perf_counter()
        while self.running and (frames is None or done < frames):
            for ev in pg.event.get():
                self.handle_event(ev)
            if not self.running:
                break
            self.frame()
            if out is not None and done % record_every == 0:
                self.save(out / f"frame_{done:05d}.png")
            done += 1
            if fps:
                clock.tick(fps)
            self.loop_seconds = time.perf_counter() - start

    def save(self, path: str | Path) -> None:
        """Write the current frame as PNG, whole or not at all (`goap.files.write_atomic`: a device or a pipe is
        written in place, never replaced); a failed write is a ValueError naming the path."""
        import io

        from goap.files import write_output

        path = Path(path)
        if path.parent and not path.parent.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        try:
            self.pg.image.save(self.screen, buf, "frame.png")
        except self.pg.error as e:  # out of memory for the encoder
            raise ValueError(f"cannot write {path}: {e}") from None
        write_output(path, buf.getvalue())

    def close(self) -> None:
        self.sim.stop()
        self.pg.display.quit()

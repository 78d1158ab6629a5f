"""The pygame viewer, headless: rendering both worlds, the inspector, pause/step, and life without pygame.

Everything here runs with SDL's dummy video driver; tests that need pygame skip when it is not installed, the
ones that check the engine and the viewer's error without pygame always run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from goap.planners import Status  # noqa: E402
from goap.runtime import CAUSES, Brain  # noqa: E402
from viewer.app import ViewerUnavailable, add_arguments, main, run  # noqa: E402
from viewer.inspector import inspector_lines  # noqa: E402
from worlds import make_world  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def pg():
    return pytest.importorskip("pygame")


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_arguments(p)
    return p.parse_args(list(argv))


def _brain(name: str, n: int = 300, ticks: int = 0, seed: int = 0) -> Brain:
    world = make_world(name)
    brain = Brain(world.domain, n, world=world, plan_budget=max(64, n // 4), seed=seed)
    for _ in range(ticks):
        brain.tick()
    return brain


def _app(brain: Brain, **kw):
    from viewer.app import App

    return App(brain, brain.world, headless=True, **kw)


# --- rendering ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("world", ["village", "soldier"])
def test_headless_run_writes_screenshot_and_timing(pg, world, tmp_path, capsys):
    png, rec = tmp_path / "shot.png", tmp_path / "rec"
    rc = run(_args("--world", world, "--agents", "300", "--headless", "--frames", "5", "--screenshot", str(png),
                   "--size", "960x600", "--select", "5", "--record", str(rec), "--record-every", "2"))
    assert rc == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("mean frame: ") and last.endswith(" ms")
    assert float(last.split()[2]) > 0
    assert sorted(p.name for p in rec.iterdir()) == ["frame_00000.png", "frame_00002.png", "frame_00004.png"]
    img = pg.image.load(str(png))
    assert img.get_size() == (960, 600)
    colours = np.unique(pg.surfarray.array3d(img).reshape(-1, 3), axis=0)
    assert len(colours) > 100  # terrain or floor, sites, agents in many action colours, text


@pytest.mark.parametrize("world", ["village", "soldier"])
def test_agents_are_drawn_in_their_action_colour(pg, world, tmp_path):
    app = _app(_brain(world), size=(1024, 640))
    try:
        for _ in range(4):
            app.frame()
        png = tmp_path / "frame.png"
        app.save(png)
        snap, r = app.last_snapshot, app.renderer
        img = pg.surfarray.array3d(pg.image.load(str(png)))
        m = r.layout.map
        xy = np.floor(app.camera.to_screen(snap.positions)).astype(int)
        inside = (xy[:, 0] >= 10) & (xy[:, 0] < m.w - 10) & (xy[:, 1] >= 10) & (xy[:, 1] < m.h - 40)
        d = np.abs(xy[:, None, :] - xy[None, :, :]).max(axis=2)
        np.fill_diagonal(d, 1 << 30)
        alone = inside & (d.min(axis=1) > 2 * (r.last_radius + 2))  # no neighbour's stamp reaches the centre
        alive = snap.arrays.get("alive", np.ones(len(xy), bool))
        checked = np.flatnonzero(alone & alive)
        assert len(checked) >= 10
        busy = 0
        for i in checked:
            want = r.agent_colour(int(snap.action[i]))
            got = tuple(int(v) for v in img[m.x + xy[i, 0], m.y + xy[i, 1]])
            assert got == want, (i, int(snap.action[i]), got, want)
            busy += snap.action[i] >= 0
        assert busy >= 3  # some of them are doing something, not all idle grey
    finally:
        app.close()


def test_click_and_tab_select_agents(pg):
    app = _app(_brain("village", ticks=2), size=(1024, 640))
    try:
        app.frame()
        snap, m = app.last_snapshot, app.renderer.layout.map
        xy = app.camera.to_screen(snap.positions)
        d = np.abs(xy[:, None, :] - xy[None, :, :]).max(axis=2)
        np.fill_diagonal(d, np.inf)
        inside = (xy[:, 0] > 5) & (xy[:, 0] < m.w - 5) & (xy[:, 1] > 5) & (xy[:, 1] < m.h - 5)
        i = int(np.argmax(np.where(inside, d.min(axis=1), -1)))  # the most isolated agent on the map
        assert d[i].min() >= 2
        pos = (int(m.x + xy[i, 0]), int(m.y + xy[i, 1]))
        app.handle_event(pg.event.Event(pg.MOUSEBUTTONDOWN, button=1, pos=pos))
        app.handle_event(pg.event.Event(pg.MOUSEBUTTONUP, button=1, pos=pos))
        assert app.selected == i
        assert app.sim.snapshot().inspector[0] == (f"Agent {i}", "title")
        app.handle_key(pg.K_TAB)
        assert app.selected == (i + 1) % app.brain.n_agents
        app.handle_key(pg.K_TAB, pg.KMOD_SHIFT)
        assert app.selected == i
        app.handle_key(pg.K_f)
        app.frame()  # following centres the camera on the agent
        c = app.camera.to_screen(app.last_snapshot.positions[i : i + 1])[0]
        assert abs(c[0] - m.w / 2) < 1 and abs(c[1] - m.h / 2) < 1
        app.handle_key(pg.K_h)
        assert app.ui.show_help
        app.frame()
        app.handle_key(pg.K_ESCAPE)
        assert not app.running
    finally:
        app.close()


def test_zoom_pan_and_resize(pg):
    app = _app(_brain("soldier", n=50), size=(1000, 700))
    try:
        app.frame()
        cam, m = app.camera, app.renderer.layout.map
        s0, w0 = cam.scale, cam.to_world(100, 120)
        cam.zoom_at(2.0, 100, 120)
        assert cam.scale == pytest.approx(2 * s0)
        assert cam.to_world(100, 120) == pytest.approx(w0)
        app.handle_event(pg.event.Event(pg.MOUSEWHEEL, x=0, y=1, flipped=False))
        assert cam.scale == pytest.approx(2.4 * s0)
        ox, sel = cam.ox, app.selected
        start = (m.x + 50, m.y + 50)
        app.handle_event(pg.event.Event(pg.MOUSEBUTTONDOWN, button=1, pos=start))
        app.handle_event(pg.event.Event(pg.MOUSEMOTION, pos=(start[0] + 30, start[1]), rel=(30, 0), buttons=(1, 0, 0)))
        app.handle_event(pg.event.Event(pg.MOUSEBUTTONUP, button=1, pos=(start[0] + 30, start[1])))
        assert cam.ox == pytest.approx(ox - 30 / cam.scale)
        assert app.selected == sel  # a drag is not a click
        pg.display.set_mode((800, 600), pg.RESIZABLE)
        app.handle_event(pg.event.Event(pg.VIDEORESIZE, size=(800, 600), w=800, h=600))
        app.frame()
        assert app.screen.get_size() == (800, 600)
        lay = app.renderer.layout
        assert lay.panel.right == 800 and lay.map.h == 600 and (cam.vw, cam.vh) == lay.map.size
        app.handle_key(pg.K_HOME)
        assert cam.scale == pytest.approx(0.98 * min(cam.vw / cam.ww, cam.vh / cam.wh))
    finally:
        app.close()


# --- the inspector --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("world", ["village", "soldier"])
def test_inspector_lines_match_the_brain(world):
    brain = _brain(world, n=200, ticks=6)
    with_plan = np.flatnonzero((brain.plan_length > 0) & (brain.goal >= 0) & ~brain.needs_plan)
    assert len(with_plan)
    i = int(with_plan[0])
    lines = inspector_lines(brain, brain.world, i)
    texts = [t for t, _ in lines]
    goal = brain.domain.goals[brain.goal[i]].name
    assert f"Goal: {goal}" in texts
    current = [t for t, s in lines if s == "goal_current"]
    assert len(current) == 1 and current[0].split()[1] == goal
    prios = [float(t.split()[-1] if "(" not in t else t.split("(")[0].split()[-1])
             for t, s in lines if s in ("goal", "goal_current", "dim") and t[:1] in (">", " ")
             and t.split()[-1] != "none"]
    assert prios == sorted(prios, reverse=True) and len(prios) == len(brain.domain.goals)
    steps = [t for t, s in lines if s.startswith("step_")]
    assert [t.split()[-1] for t in steps] == brain.agent_plan(i)
    cur = [t for t, s in lines if s == "step_current"]
    assert cur == [steps[int(brain.step[i])]]
    assert any(t.startswith("Plan:") and f"cost {brain.plan_cost[i]:.1f}" in t for t in texts)
    assert f"Last replan: {CAUSES[brain.replan_cause[i]]}" in texts
    fail = int(brain.last_failure[i])
    assert f"Last failure: {Status(fail).name if fail >= 0 else 'none'}" in texts
    assert [t for t, s in lines if s == "fact"] == brain.tables.describe(brain.states[i]).split()
    with pytest.raises(IndexError):
        inspector_lines(brain, brain.world, brain.n_agents)


# --- pause and step -------------------------------------------------------------------------------------------
def test_pause_and_single_step(pg):
    brain = _brain("village", n=200)
    app = _app(brain)
    try:
        app.frame()
        assert brain.tick_count == 1
        app.handle_key(pg.K_SPACE)
        assert app.paused
        app.frame()
        app.frame()
        assert brain.tick_count == 1
        app.handle_key(pg.K_RIGHT)
        assert brain.tick_count == 2
        app.frame()
        assert brain.tick_count == 2 and app.last_snapshot.tick == 2
        app.handle_key(pg.K_SPACE)
        app.frame()
        assert brain.tick_count == 3
        app.handle_key(pg.K_RIGHT)  # not paused: no extra tick
        assert brain.tick_count == 3
    finally:
        app.close()


def test_pause_and_single_step_with_the_sim_thread(pg):
    brain = _brain("soldier", n=200)
    app = _app(brain, threaded=True, ticks_per_second=200)
    try:
        deadline = time.perf_counter() + 10
        while brain.tick_count < 3 and time.perf_counter() < deadline:
            app.frame()
        assert brain.tick_count >= 3
        app.handle_key(pg.K_SPACE)
        assert app.sim.wait_idle()
        t = brain.tick_count
        time.sleep(0.05)
        assert brain.tick_count == t
        app.handle_key(pg.K_RIGHT)
        assert app.sim.wait_idle()
        assert brain.tick_count == t + 1
        time.sleep(0.05)
        app.frame()
        assert brain.tick_count == t + 1 and app.last_snapshot.tick == t + 1
        app.handle_key(pg.K_MINUS)
        assert app.sim.ticks_per_second == 120
        app.handle_key(pg.K_PLUS)
        app.handle_key(pg.K_PLUS)
        assert app.sim.ticks_per_second == 0  # as fast as it goes
    finally:
        app.close()
    assert app.sim.error is None


# --- without pygame -------------------------------------------------------------------------------------------
def test_engine_imports_without_pygame():
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'pygame' or name.startswith('pygame.'):\n"
        "            raise ImportError('pygame blocked by the test')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import goap, goap.runtime, goap.cli, worlds, worlds.village.world, worlds.soldier.world\n"
        "import viewer, viewer.app, viewer.inspector, viewer.sim, viewer.worlds\n"
        "assert not [m for m in sys.modules if m == 'pygame' or m.startswith('pygame.')]\n"
        "print('ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().endswith("ok")


def test_run_without_pygame_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pygame", None)  # makes `import pygame` raise ImportError
    with pytest.raises(ViewerUnavailable, match=r"warp-goap\[viewer\]"):
        run(_args("--world", "village", "--headless", "--frames", "1"))
    assert main(["--world", "village", "--headless", "--frames", "1"]) == 1
    assert "pip install warp-goap[viewer]" in capsys.readouterr().err

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
    h = {name: getattr(brain, name).numpy() for name in (
        "plan_length", "goal", "needs_plan", "step", "plan_cost", "replan_cause", "last_failure", "states")}
    with_plan = np.flatnonzero((h["plan_length"] > 0) & (h["goal"] >= 0) & ~h["needs_plan"])
    assert len(with_plan)
    i = int(with_plan[0])
    lines = inspector_lines(brain, brain.world, i)
    texts = [t for t, _ in lines]
    goal = brain.domain.goals[h["goal"][i]].name
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
    assert cur == [steps[int(h["step"][i])]]
    assert any(t.startswith("Plan:") and f"cost {h['plan_cost'][i]:.1f}" in t for t in texts)
    assert f"Last replan: {CAUSES[h['replan_cause'][i]]}" in texts
    fail = int(h["last_failure"][i])
    assert f"Last failure: {Status(fail).name if fail >= 0 else 'none'}" in texts
    assert [t for t, s in lines if s == "fact"] == brain.tables.describe(h["states"][i]).split()
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
    with pytest.raises(ViewerUnavailable, match=r'pip install -e "\.\[viewer\]"'):
        run(_args("--world", "village", "--headless", "--frames", "1"))
    assert main(["--world", "village", "--headless", "--frames", "1"]) == 1
    assert 'pip install -e ".[viewer]"' in capsys.readouterr().err


# --- one meaning of the current action ------------------------------------------------------------------------
@pytest.mark.parametrize("world", ["village", "soldier"])
def test_inspector_doing_is_the_highlighted_step(world):
    """After every tick, for every acting agent: "Doing: X" names brain.action, and the highlighted step is X."""
    brain = _brain(world, n=150)
    names = brain.domain.action_names
    checked = 0
    for _ in range(8):
        brain.tick()
        action, step = brain.action.numpy(), brain.step.numpy()
        plan, needs = brain.plan.numpy(), brain.needs_plan.numpy()
        for i in np.flatnonzero(action >= 0)[:40]:
            lines = inspector_lines(brain, brain.world, int(i))
            doing = [t for t, _ in lines if t.startswith("Doing: ")]
            assert doing and doing[0].split()[1] == names[action[i]]
            current = [t for t, s in lines if s == "step_current"]
            assert not needs[i] and current == [f"> {step[i] + 1:2d}. {names[action[i]]}"]
            assert plan[i, step[i]] == action[i]
            checked += 1
    assert checked >= 40


# --- snapshots and device arrays ------------------------------------------------------------------------------
def test_to_host_views_and_copies():
    import warp as wp

    from goap.worldview import to_host, to_host_row

    a = wp.array(np.arange(12, dtype=np.int32).reshape(6, 2), dtype=wp.int32, device="cpu")
    view, copy = to_host(a), to_host(a, copy=True)
    a.numpy()[0, 0] = 99
    assert view[0, 0] == 99 and copy[0, 0] == 0  # CPU: zero-copy view; copy=True owns its memory
    np.testing.assert_array_equal(to_host_row(a, 3), [6, 7])
    b = wp.array(np.arange(5, dtype=np.int8), dtype=wp.int8, device="cpu")
    assert to_host_row(b, 4).item() == 4 and to_host_row(np.arange(3), 1).item() == 1
    assert to_host([1, 2]).tolist() == [1, 2]


def test_snapshot_is_a_copy_the_next_tick_cannot_change():
    from viewer.sim import Simulation
    from viewer.worlds import make_view

    brain = _brain("village", n=200, ticks=3)
    sim = Simulation(brain, make_view(brain.world))
    snap = sim.snapshot()
    np.testing.assert_array_equal(snap.action, brain.action.numpy())
    assert not np.shares_memory(snap.action, brain.action.numpy())
    kept = snap.action.copy(), snap.positions.copy()
    for _ in range(3):
        sim.step()
    np.testing.assert_array_equal(snap.action, kept[0])
    np.testing.assert_array_equal(snap.positions, kept[1])
    now = sim.snapshot()
    assert now.tick == snap.tick + 3 == brain.tick_count
    assert now.waiting == int(brain.needs_plan.numpy().sum())


# --- legend groups and colours --------------------------------------------------------------------------------
def test_group_by_prefix():
    from goap.worldview import OTHER, group_by_prefix

    names = ["go_home", "eat", "go_mine", "pick_up_ammo", "pick_up_gun", "sleep"]
    groups = group_by_prefix(names)
    assert [(g.label, g.actions) for g in groups] == [("go", (0, 2)), ("eat", (1,)), ("pick", (3, 4)),
                                                      ("sleep", (5,))]
    many = [f"a{k}_x" for k in range(12)] + [f"go_{k}" for k in range(14)]  # 12 single prefixes: too many groups
    groups = group_by_prefix(many, max_groups=10)
    assert [g.label for g in groups] == ["go", OTHER]
    assert groups[1].actions == tuple(range(12)) and groups[0].actions == tuple(range(12, 26))
    flat = [f"act{k}" for k in range(30)]  # no structure: one group (one hue) each rather than one "other"
    assert [g.label for g in group_by_prefix(flat)] == flat
    mostly = [f"a{k}_x" for k in range(12)] + ["go_a", "go_b"]  # "other" would hold 12 of 14
    assert OTHER not in [g.label for g in group_by_prefix(mostly)]


def test_group_by_mapping_first_match_other_and_warnings():
    from goap.worldview import OTHER, LegendWarning, group_by_mapping

    names = ["go_home", "go_mine", "chop", "mine", "eat", "dance"]
    groups = group_by_mapping(names, {"work": ["chop", "mine*"], "travel": "go_*", "food": ["eat", "go_home"]})
    assert [(g.label, g.actions) for g in groups] == [("work", (2, 3)), ("travel", (0, 1)), ("food", (4,)),
                                                      (OTHER, (5,))]
    with pytest.warns(LegendWarning, match="legend group 'work': 'chopp' matches no action"):
        groups = group_by_mapping(names, {"work": ["chopp", "mine"]})
    assert groups[-1].label == OTHER and groups[-1].actions == (0, 1, 2, 4, 5)
    with pytest.raises(ValueError, match="'chopp' matches no action"):
        group_by_mapping(names, {"work": ["chopp"]}, strict=True)
    with pytest.raises(ValueError, match="'other' is given"):
        group_by_mapping(names, {"other": ["chop"]})


def test_check_legend_refuses_bad_overrides():
    from goap.worldview import LegendGroup, check_legend

    names = ["a", "b", "c"]
    assert check_legend([LegendGroup("x", (0, 2)), LegendGroup("y", (1,))], names)
    with pytest.raises(ValueError, match="action 'a' is in legend groups 'x' and 'y'"):
        check_legend([LegendGroup("x", (0, 2)), LegendGroup("y", (0, 1))], names)
    with pytest.raises(ValueError, match="in no legend group: c"):
        check_legend([LegendGroup("x", (0, 1))], names)
    with pytest.raises(ValueError, match="index 3 is not an action"):
        check_legend([LegendGroup("x", (0, 1, 2, 3))], names)


@pytest.mark.parametrize("world", ["village", "soldier"])
def test_every_action_of_the_built_in_worlds_is_in_a_named_group(world):
    from goap.worldview import OTHER, group_by_mapping
    from viewer.worlds import make_view

    w = make_world(world)
    view = make_view(w)
    assert view.legend is not None
    groups = group_by_mapping(w.domain.action_names, view.legend, strict=True)  # no stale names either
    assert OTHER not in [g.label for g in groups]
    assert 4 <= len(groups) <= 10 < len(w.domain.actions)


def test_colours_one_hue_per_group_shades_within():
    import colorsys

    from goap.worldview import LegendGroup
    from viewer.palette import IDLE, action_colours, group_colours

    groups = [LegendGroup("travel", (0, 1, 2, 3, 4, 5, 6, 7)), LegendGroup("work", (8, 9, 10)),
              LegendGroup("rest", (11,))]
    table = action_colours([f"a{k}" for k in range(12)], groups)
    assert table.shape == (13, 3) and tuple(table[-1]) == IDLE
    rgb = [tuple(int(v) for v in c) for c in table[:-1]]
    assert len(set(rgb)) == 12 and IDLE not in rgb
    hue = [colorsys.rgb_to_hls(*(v / 255 for v in c))[0] for c in rgb]

    def hue_gap(a, b):
        d = abs(a - b) % 1.0
        return min(d, 1 - d)

    for grp in groups:
        assert all(hue_gap(hue[k], hue[grp.actions[0]]) < 0.03 for k in grp.actions)  # one hue per group
        for a, b in zip(grp.actions, grp.actions[1:], strict=False):
            assert max(abs(x - y) for x, y in zip(rgb[a], rgb[b], strict=True)) >= 12  # neighbours distinct
    base = group_colours(groups)
    assert tuple(rgb[11]) == base[2]  # a group of one gets the group's own colour
    assert min(hue_gap(hue[groups[i].actions[0]], hue[groups[j].actions[0]])
               for i in range(3) for j in range(i + 1, 3)) > 0.05


def test_legend_rows_count_agents_per_group(pg):
    app = _app(_brain("village", n=400, ticks=8), size=(1280, 800))
    try:
        app.frame()
        r, snap = app.renderer, app.last_snapshot
        alive = snap.arrays.get("alive", np.ones(len(snap.action), bool))
        counts = np.bincount(snap.action[alive] + 1, minlength=len(r.colours))
        rows = r.legend_rows(counts, room=200)
        groups = {row[0]: row for row in rows if row[3] == 0}
        names = r.action_names
        for grp in r.groups:
            want = sum(int((snap.action[alive] == k).sum()) for k in grp.actions)
            assert groups[grp.label][2] == want
        children = [row for row in rows if row[3] == 1]
        assert [c[0] for c in children] == [names[k] for g in r.groups for k in g.actions]  # all expanded
        assert rows[-1][:3] == ("idle", (150, 150, 150), int((snap.action[alive] < 0).sum()))
        tight = r.legend_rows(counts, room=len(r.groups) + 1 + len(r.groups[0].actions))
        assert [row[0] for row in tight if row[3] == 1] == [names[k] for k in r.groups[0].actions]
        assert len(tight) == len(r.groups) + 1 + len(r.groups[0].actions)
        squeezed = r.legend_rows(counts, room=3)  # never fewer than the groups and idle
        assert [row[0] for row in squeezed] == [g.label for g in r.groups] + ["idle"]
    finally:
        app.close()


@pytest.mark.parametrize("world", ["village", "soldier"])
def test_no_label_is_cut_at_the_default_size(pg, world):
    """The HUD and the legend fit every label whole at 1280x800 (the ellipsis is only for tiny windows)."""
    app = _app(_brain(world, n=2000, ticks=3), size=(1280, 800), selected=1)  # four-digit counts
    try:
        for _ in range(3):
            app.frame()
        cut = [s for s in app.renderer._fits.values() if s.endswith("\u2026")]
        assert cut == []
        labels = {label for row in app.renderer.hud_lines(app.last_snapshot, app.ui) for label, _ in row}
        assert {"tick", "idle", "waiting for a plan"} <= labels
        score = {k.replace("_", " ") for k in app.last_snapshot.score} - {"goals achieved per agent minute"}
        assert score <= labels
        app.resize((700, 500))  # small: cut with an ellipsis rather than overflow
        app.frame()
        assert all(app.renderer.font.size(s)[0] <= app.renderer.layout.panel.width for s in app.renderer._fits.values())
    finally:
        app.close()


# --- a custom world in the viewer -----------------------------------------------------------------------------
def test_custom_world_in_the_viewer(pg, tmp_path, capsys):
    png = tmp_path / "lamps.png"
    rc = main(["--world", "tests.custom_world:LampWorld", "--agents", "40", "--headless", "--frames", "12",
               "--screenshot", str(png), "--size", "960x600", "--select", "3"])
    assert rc == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith("tests.custom_world:LampWorld: 40 agents, 12 frames")
    assert out[-1].startswith("mean frame: ")
    img = pg.surfarray.array3d(pg.image.load(str(png)))
    assert img.shape[:2] == (960, 600)


def test_custom_world_agents_drawn_where_they_are(pg):
    from tests.custom_world import LampWorld

    world = LampWorld()
    brain = Brain(world.domain, 30, world=world, planner="reference", seed=1)
    app = _app(brain, size=(1024, 640))
    try:
        for _ in range(6):
            app.frame()
        r, snap = app.renderer, app.last_snapshot
        assert [g.label for g in r.groups] == ["walk", "fetch_oil", "light_lamp", "rest"]  # default: by prefix
        surf = app.screen
        m = r.layout.map
        xy = np.floor(app.camera.to_screen(snap.positions)).astype(int)
        for i in range(len(xy)):
            got = tuple(surf.get_at((m.x + xy[i, 0], m.y + xy[i, 1])))[:3]
            assert got == r.agent_colour(int(snap.action[i])), i
        assert (snap.action >= 0).any()
    finally:
        app.close()


def test_inspector_lists_the_agents_last_events():
    brain = _brain("village", n=200)
    for _ in range(40):  # until some agents finish an action in the same tick
        brain.tick()
        finished = brain.events.agents("action_finished")
        if len(finished) >= 3:
            break
    started = set(brain.events.agents("action_started").tolist())
    assert len(finished)
    for i in finished[:10]:
        line = [t for t, _ in inspector_lines(brain, brain.world, int(i)) if t.startswith("Events: ")]
        names = line[0][len("Events: "):].split(", ")
        assert "action_finished" in names
        assert ("action_started" in names) == (int(i) in started)
    quiet = np.flatnonzero(brain.event_bits.numpy() == 0)
    if len(quiet):
        assert not any(t.startswith("Events") for t, _ in inspector_lines(brain, brain.world, int(quiet[0])))


class _FakeDeviceArray:
    """Stands in for a CUDA Warp array: ``.numpy()`` is a device-to-host copy, counted in elements."""

    def __init__(self, data: np.ndarray, copied: list[int]):
        self.data, self.copied, self.device = data, copied, "cuda:0"
        self.shape = data.shape

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, key):
        return _FakeDeviceArray(self.data[key], self.copied)

    def numpy(self) -> np.ndarray:
        self.copied.append(self.data.size)
        return self.data.copy()


def test_to_host_from_a_device_copies_only_what_is_read():
    from goap.worldview import to_host, to_host_row

    copied: list[int] = []
    a = _FakeDeviceArray(np.arange(4000, dtype=np.int32).reshape(1000, 4), copied)
    np.testing.assert_array_equal(to_host_row(a, 7), [28, 29, 30, 31])
    assert copied == [4]  # one row crossed, not the array
    full = to_host(a, copy=True)
    assert copied == [4, 4000] and full.shape == (1000, 4)  # one copy, not a copy of a copy


def test_threaded_sim_builds_a_snapshot_per_frame_not_per_tick():
    from tests.custom_world import LampWorld
    from viewer.sim import Simulation
    from viewer.worlds import make_view

    world = LampWorld()
    brain = Brain(world.domain, 50, world=world, planner="reference", seed=2)
    sim = Simulation(brain, make_view(world), ticks_per_second=0.0, threaded=True)  # as fast as it goes
    sim.start()
    try:
        frames, last = 10, -1
        for _ in range(frames):
            time.sleep(0.05)
            snap = sim.snapshot()
            assert snap.tick >= last  # never goes back
            last = snap.tick
        time.sleep(0.05)
        built, ticks = sim.snapshots_built, brain.tick_count
    finally:
        sim.stop()
    assert sim.error is None
    assert built <= frames + 2  # one for the start, one per frame taken, one in flight
    assert ticks > built
    assert sim.snapshot().tick >= last


def test_click_a_legend_group_to_highlight_its_agents(pg, tmp_path):
    app = _app(_brain("village", n=400, ticks=6), size=(1280, 800))
    try:
        app.set_paused(True)
        app.frame()
        r, snap = app.renderer, app.last_snapshot
        acting = {int(a) for a in snap.action if a >= 0}
        group = next(g for g in r.groups if acting & set(g.actions))
        row = next(rect for rect, label in r.legend_hits if label == group.label)
        app.handle_event(pg.event.Event(pg.MOUSEBUTTONDOWN, button=1, pos=row.center))
        assert r.highlight == group.label
        app.frame()
        img = pg.surfarray.array3d(app.screen)
        m = r.layout.map
        xy = np.floor(app.camera.to_screen(snap.positions)).astype(int)
        d = np.abs(xy[:, None, :] - xy[None, :, :]).max(axis=2)
        np.fill_diagonal(d, 1 << 30)
        inside = (xy[:, 0] >= 10) & (xy[:, 0] < m.w - 10) & (xy[:, 1] >= 10) & (xy[:, 1] < m.h - 40)
        alone = np.flatnonzero(inside & (d.min(axis=1) > 2 * (r.last_radius + 2)))
        lit = dim = 0
        for i in alone:
            a = int(snap.action[i])
            got = tuple(int(v) for v in img[m.x + xy[i, 0], m.y + xy[i, 1]])
            if a in group.actions:
                assert got == r.action_colour(a)
                lit += 1
            else:
                assert got == r.agent_colour(a) != r.action_colour(a)  # dimmed
                dim += 1
        assert dim >= 5
        app.handle_event(pg.event.Event(pg.MOUSEBUTTONDOWN, button=1, pos=row.center))  # again: everyone
        assert r.highlight is None and r.agent_colour(0) == r.action_colour(0)
        idle_row = next(rect for rect, label in r.legend_hits if label == "idle")
        app.toggle_highlight(r.legend_at(*idle_row.center))
        assert r.highlight == "idle" and r.agent_colour(-1) == r.action_colour(-1) != r.agent_colour(0)
        with pytest.raises(ValueError, match="no legend group 'nope'"):
            r.set_highlight("nope")
    finally:
        app.close()


@pytest.mark.parametrize("spec", ["village", "soldier", "tests.custom_world:LampWorld"])
def test_check_view_accepts_the_worlds(spec):
    from goap.registry import load_world
    from goap.worldview import check_view

    world = load_world(spec)
    brain = Brain(world.domain, 120, world=world, planner="reference", seed=0)
    view = check_view(world, brain.n_agents)
    assert view.positions().shape == (120, 2)


def test_check_view_names_every_problem():
    from goap.worldview import WorldView, check_view
    from tests.custom_world import LampWorld

    class BadView(WorldView):
        legend = {"walk": ["walk_*"], "fly": ["fly_*"]}

        def walls(self):
            return np.zeros((2, 3), np.float32)

        def background(self):
            return np.zeros((4, 4), np.float32)

    world = LampWorld()
    Brain(world.domain, 10, world=world, planner="reference")
    world.make_view = lambda: BadView(world)
    with pytest.raises(ValueError) as e:
        check_view(world, 12)
    msg = str(e.value)
    for part in ("positions() has shape (10, 2), expected (12, 2)", "background() is float32 (4, 4)",
                 "walls() has shape (2, 3)", "'fly_*' matches no action"):
        assert part in msg, part


def test_hud_cells_pack_in_columns_and_wide_ones_get_a_row(pg):
    app = _app(_brain("village", n=100, ticks=1), size=(1280, 800))
    try:
        r = app.renderer
        width = r.layout.panel.width - 24
        cells = [("wood", "12"), ("food", "3"), ("a label far too long to share a row with another", "7"),
                 ("ore", "0"), ("fish", "1")]
        rows = r.cell_rows(cells, width)
        assert [c for row in rows for c in row] == cells  # every cell once, in order
        assert [cells[2]] in rows
        assert all(len(row) <= r._cell_cols for row in rows) and r._cell_cols >= 2
        assert len(rows) < len(cells)
    finally:
        app.close()


def test_inspector_folds_dim_goals_only_when_short_of_room():
    from viewer.render import Renderer

    brain = _brain("village", n=100, ticks=5)
    lines = inspector_lines(brain, brain.world, 3)
    assert Renderer.fit_inspector(lines, 1000) == lines
    start = next(k for k, (t, s) in enumerate(lines) if t.startswith("Goal:"))
    end = next(k for k in range(start + 1, len(lines)) if lines[k][1] == "header")
    dim = [t for t, s in lines[start + 1 : end] if s == "dim"]
    short = Renderer.fit_inspector(lines, 20)
    folded = [t for t, s in short if "more goal" in t]
    assert folded == ([f"  + {len(dim)} more goal{'s' if len(dim) > 1 else ''} (met or priority 0)"] if dim else [])
    kept = [line for line in lines[start + 1 : end] if line[1] != "dim"]
    assert all(line in short for line in kept)  # goals that may be chosen stay
    assert [t for t, s in short if s == "fact"] == [t for t, s in lines if s == "fact"]  # the facts stay
    assert [t for t, s in short if s.startswith("step_")] == [t for t, s in lines if s.startswith("step_")]


# --- why panel, goal graph, idle counts, fact list ------------------------------------------------------------
def _agent_with_goal(brain: Brain) -> int:
    goals = brain.goal.numpy()
    have = np.flatnonzero((goals >= 0) & (brain.plan_length.numpy() > 0))
    assert len(have), "no agent with a goal and a plan"
    return int(have[0])


@pytest.mark.parametrize("world", ["village", "soldier"])
def test_why_panel_and_goal_graph_overlay(pg, world, tmp_path):
    from goap.explain import explain_agent
    from goap.graph import goal_cone
    from viewer.inspector import why_lines

    brain = _brain(world, 300, ticks=12)
    sel = _agent_with_goal(brain)
    app = _app(brain, selected=sel)
    try:
        app.frame()
        plain = pg.surfarray.array3d(app.screen).copy()
        app.handle_key(pg.K_w)
        app.frame()
        snap = app.last_snapshot
        assert app.ui.show_why and snap.why[0] == (f"Why: agent {sel}", "title")
        assert snap.why == why_lines(brain, sel)  # refreshed with the tick the frame shows
        assert snap.why[1][0] == explain_agent(brain, sel).headline()
        assert f"Why: agent {sel}" in app.renderer.inspector_drawn
        app.handle_key(pg.K_g)
        app.frame()
        snap = app.last_snapshot
        graph, cells = snap.graph
        goal = brain.domain.goals[int(brain.goal.numpy()[sel])].name
        cone = goal_cone(brain.domain, goal)
        assert [n.split(":", 1)[1] for n in graph.ids("action")] == cone
        plan = brain.agent_plan(sel)
        assert graph.highlight == {f"action:{a}" for a in plan if a in cone}
        assert set(cells) == {n.id for n in graph.nodes}
        lit = pg.surfarray.array3d(app.screen)
        m = app.renderer.layout.map
        assert (lit[m.x:m.right, m.y:m.bottom] != plain[m.x:m.right, m.y:m.bottom]).any()
        app.save(tmp_path / "why.png")
        assert (tmp_path / "why.png").stat().st_size > 0
        app.handle_key(pg.K_g)
        app.handle_key(pg.K_w)
        app.frame()
        assert app.last_snapshot.why == [] and app.last_snapshot.graph is None
    finally:
        app.close()


def test_hud_counts_idle_agents_by_reason_and_a_click_cycles_through_them(pg):
    from goap.explain import IDLE_REASONS, explain_agent
    from viewer.render import IDLE_CELLS

    world = make_world("soldier")
    brain = Brain(world.domain, 300, world=world, plan_budget=10, seed=0)  # a small budget: agents wait
    app = _app(brain)
    try:
        for _ in range(3):
            app.frame()
        snap = app.last_snapshot
        rows = app.renderer.hud_lines(snap, app.ui)
        idle_row = next(r for r in rows if [c[0] for c in r] == [label for label, _ in IDLE_CELLS])
        counts = np.bincount(snap.idle_reasons[snap.idle_reasons >= 0], minlength=len(IDLE_REASONS))
        assert [int(v) for _, v in idle_row] == [int(c) for c in counts]
        waiting = next(c for r in rows for c in r if c[0] == "waiting for a plan")
        assert waiting[1] == f"{snap.waiting} (budget 10/tick)"
        assert counts[IDLE_REASONS.index("waiting")] > 1
        rect = next(r for r, reason in app.renderer.idle_hits if reason == "waiting")
        picked = []
        for _ in range(2):
            app.handle_event(pg.event.Event(pg.MOUSEBUTTONDOWN, button=1, pos=rect.center))
            picked.append(app.selected)
            assert explain_agent(brain, app.selected).idle == "waiting"
        assert picked[1] != picked[0]
        assert app.cycle_idle("no such reason") == -1
    finally:
        app.close()


def test_fact_list_is_never_cut_silently_and_scrolls(pg):
    brain = _brain("soldier", 200, ticks=5)
    app = _app(brain, selected=_agent_with_goal(brain), size=(1280, 560))
    try:
        app.frame()
        r = app.renderer
        facts = {f"{f.name}" for f in brain.domain.facts}

        def drawn_facts():
            return {t.partition("=")[0] for t in r.inspector_drawn if t.partition("=")[0] in facts}

        hidden_rows, hidden_facts = r.inspector_hidden
        assert hidden_rows > 0 and len(drawn_facts()) + hidden_facts == len(facts)  # what is cut is counted
        seen = set(drawn_facts())
        for _ in range(20):
            app.ui.scroll = r.inspector_scroll + 3  # what the wheel over the panel does
            app.frame()
            seen |= drawn_facts()
        assert seen == facts and r.inspector_hidden == (0, 0)
    finally:
        app.close()

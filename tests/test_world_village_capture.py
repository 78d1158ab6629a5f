"""The village world captured as graphs: its sense and act, replayed every tick, give the run plain launches give.

On the CPU a capture records the launches without running them and a replay runs them on the arrays' current
contents, so a graph captured once and replayed on every tick proves that nothing the world launches depends on a
value read or chosen on the host during the tick (a per-tick scalar would be baked in at capture).
"""

from __future__ import annotations

import numpy as np
import pytest

from goap.launch import CaptureError, Launcher
from goap.runtime import Brain
from worlds.village.world import VillageWorld


def make(n: int, seed: int, **brain_options) -> tuple[Brain, VillageWorld]:
    world = VillageWorld()
    brain = Brain(world.domain, n, world=world, planner="warp", device="cpu", plan_budget=max(256, n // 10),
                  seed=seed, **brain_options)
    return brain, world


class Replayed:
    """A village world whose ``sense`` and ``act`` replay graphs captured from the real ones.

    Each stage is captured on its first call and again whenever ``graph_key()`` changes (what a capturing brain
    does); every other call only replays. Everything else is the wrapped world's.
    """

    def __init__(self, world: VillageWorld, launcher: Launcher):
        self.world = world
        self.launcher = launcher
        self.graphs: dict[str, object] = {}
        self.keys: dict[str, tuple] = {}
        self.captures = 0

    def __getattr__(self, name):
        return getattr(self.world, name)

    def _run(self, stage: str, fn) -> None:
        key = self.world.graph_key()
        if self.keys.get(stage) != key:
            self.graphs[stage] = self.launcher.capture(fn, stage)
            self.keys[stage] = key
            self.captures += 1
        self.launcher.replay(self.graphs[stage])

    def sense(self, brain: Brain) -> None:
        self._run("sense", lambda: self.world.sense(brain))

    def act(self, brain: Brain, dt: float) -> None:
        self._run("act", lambda: self.world.act(brain, dt))


def assert_same_world(a: VillageWorld, b: VillageWorld) -> None:
    sa, sb = a.get_state(), b.get_state()
    assert sa.keys() == sb.keys()
    for name in sa:
        np.testing.assert_array_equal(sa[name], sb[name], err_msg=name)


def test_sense_and_act_capture_without_the_host():
    brain, world = make(300, 3)
    for _ in range(3):
        brain.tick()
    before = brain.state_hash()
    launcher = Launcher(brain.launcher.device)
    sense = launcher.capture(lambda: world.sense(brain), "sense")
    act = launcher.capture(lambda: world.act(brain, 1.0), "act")
    assert sense is not None and act is not None
    assert brain.state_hash() == before  # a capture records; it runs nothing


def test_a_host_read_inside_the_world_would_be_refused():
    """The guard the capture test relies on is live: a world that read its positions mid-stage would raise."""
    brain, world = make(50, 3)
    launcher = Launcher(brain.launcher.device)
    with pytest.raises(CaptureError, match="sense"):
        launcher.capture(lambda: (world.sense(brain), world.positions), "sense")


@pytest.mark.parametrize("n", [300, 4200])  # 4200: plain sense runs in two chunks on two cores, a graph in one
def test_replayed_graphs_match_plain_launches(n):
    ticks = 40 if n < 1000 else 12
    plain, plain_world = make(n, 7)
    captured, world = make(n, 7)
    replayed = Replayed(world, captured.launcher)
    captured.world = replayed
    for t in range(ticks):
        plain.tick()
        captured.tick()
        if t in (0, ticks // 2):
            assert captured.state_hash() == plain.state_hash(), f"tick {t}"
    assert replayed.captures == 2  # captured once per stage, replayed on every other tick
    assert captured.state_hash() == plain.state_hash()
    assert_same_world(world, plain_world)
    assert world.tick == plain_world.tick == ticks
    assert world.score()["actions_taken"] > 0


def test_graph_key_names_what_a_graph_bakes_in(tmp_path):
    """Changing a tuning attribute or the map changes the key; a graph captured again then matches plain launches
    (a replay of the old graph would keep the old speed)."""
    plain, plain_world = make(300, 5)
    captured, world = make(300, 5)
    replayed = Replayed(world, captured.launcher)
    captured.world = replayed
    key = world.graph_key()
    assert key == plain_world.graph_key()
    for _ in range(10):
        plain.tick()
        captured.tick()
    assert world.graph_key() == key  # ticking changes nothing a graph bakes in
    for w in (plain_world, world):
        w.speed = 0.6
        w.storm_p = 0.01
    assert world.graph_key() != key
    for _ in range(20):
        plain.tick()
        captured.tick()
    assert replayed.captures == 4
    assert captured.state_hash() == plain.state_hash()
    assert_same_world(world, plain_world)
    # restoring a snapshot replaces the map's arrays: graphs over the old ones are stale
    key = world.graph_key()
    world.set_state(world.get_state())
    assert world.graph_key() != key


def test_captured_brain_matches_plain_brain():
    """Through the public Brain: ``capture=True`` gives the run plain launches give."""
    captured, _ = make(300, 9, capture=True)
    if not getattr(captured, "capture", False):
        pytest.skip("this brain captures its tick only on CUDA devices")
    plain, _ = make(300, 9)
    for _ in range(30):
        captured.tick()
        plain.tick()
    assert captured.state_hash() == plain.state_hash()

"""SoldierWorld captured as graphs: its sense and act stages touch no host memory, and replaying graphs captured from
them once runs the same simulation, bit for bit, as plain launches (the CPU run of the GPU's path)."""

from __future__ import annotations

import numpy as np
import pytest

wp = pytest.importorskip("warp")

from goap.launch import CaptureError, Launcher  # noqa: E402
from goap.runtime import Brain  # noqa: E402
from worlds.soldier.world import STATS, SoldierWorld  # noqa: E402

DEVICES = ["cpu", pytest.param("cuda:0", marks=[
    pytest.mark.gpu, pytest.mark.skipif(not wp.is_cuda_available(), reason="no CUDA device: this test needs a GPU")])]


class CapturedStages:
    """Drives ``world``'s sense and act through graphs: each stage is captured once (recorded, not run, on the CPU)
    and replayed every tick after, captured again only when ``world.graph_key()`` changes. The first tick runs the
    plain stages, as a capturing brain does (every module is loaded before a capture starts)."""

    def __init__(self, world: SoldierWorld, device: str):
        self.world = world
        self.launcher = Launcher(wp.get_device(device))
        self.plain_sense, self.plain_act = world.sense, world.act
        self.graphs: dict[str, tuple[tuple, object]] = {}
        self.captures = 0
        self.ticks = {"sense": 0, "act": 0}
        world.sense = self.sense
        world.act = self.act

    def _run(self, stage: str, fn) -> None:
        self.ticks[stage] += 1
        if self.ticks[stage] == 1:
            fn()
            return
        key = self.world.graph_key()
        held = self.graphs.get(stage)
        if held is None or held[0] != key:
            held = self.graphs[stage] = (key, self.launcher.capture(fn, stage))
            self.captures += 1
        self.launcher.replay(held[1])

    def sense(self, brain: Brain) -> None:
        self._run("sense", lambda: self.plain_sense(brain))

    def act(self, brain: Brain, dt: float) -> None:
        self._run("act", lambda: self.plain_act(brain, dt))


def run(n: int, ticks: int, device: str = "cpu", captured: bool = False, threads: int | None = None,
        change: dict | None = None, **options) -> tuple[str, dict[str, np.ndarray], int]:
    """(state hash, world state, captures) after ``ticks`` ticks from seed 3 of a world made with ``options``;
    ``change`` sets world attributes halfway."""
    world = SoldierWorld(**options)
    brain = Brain(world.domain, n, world=world, planner="warp", device=device, seed=3)
    if threads is not None:
        brain.launcher.threads = threads
    stages = CapturedStages(world, device) if captured else None
    for t in range(ticks):
        if change and t == ticks // 2:
            for key, value in change.items():
                setattr(world, key, value)
        brain.tick()
    return brain.state_hash(), world.get_state(), stages.captures if stages else 0


def assert_same(a: tuple, b: tuple) -> None:
    for key in a[1]:
        np.testing.assert_array_equal(a[1][key], b[1][key], err_msg=key)
    assert a[0] == b[0]


def test_sense_and_act_capture_with_no_host_access():
    world = SoldierWorld()
    brain = Brain(world.domain, 300, world=world, planner="warp", device="cpu", seed=1)
    brain.tick()
    before = world.get_state()
    launcher = Launcher(brain.device)
    sense = launcher.capture(lambda: world.sense(brain), "sense")
    act = launcher.capture(lambda: world.act(brain, 1.0), "act")
    assert sense is not None and act is not None
    # on the CPU a capture records and runs nothing: the world is as it was until the graphs are replayed
    after = world.get_state()
    for key in before:
        np.testing.assert_array_equal(after[key], before[key], err_msg=key)
    launcher.replay(act)  # and a replay runs them: the clock moves on
    assert world.get_state()["clock"][0] == before["clock"][0] + 1
    # the guard is on while capturing: a host hook of the world is refused, not baked into a graph
    with pytest.raises(CaptureError, match="stage 'hook'"):
        launcher.capture(lambda: world.mark_under_fire([0, 1]), "hook")


@pytest.mark.parametrize("device", DEVICES)
def test_captured_stages_match_plain_launches(device):
    """4096 soldiers on a crowded field (the fight starts at once, the first dead are back by tick 30): on the CPU
    the plain run splits sense_soldiers over two threads, the graph runs it whole."""
    plain = run(4096, 36, device, threads=2, width=100.0, height=100.0)
    captured = run(4096, 36, device, captured=True, threads=2, width=100.0, height=100.0)
    assert captured[2] == 2  # one graph for sense and one for act, replayed 35 times each
    assert_same(plain, captured)
    stats = dict(zip(STATS, captured[1]["stats"], strict=True))
    assert stats["hits"] > 0 and stats["deaths"] > 0 and stats["respawns"] > 0  # the fight was on


def test_a_rule_change_is_captured_again():
    change = {"speed": 4.5, "suppress_ticks": 20}
    plain = run(400, 30, change=change)
    captured = run(400, 30, captured=True, change=change)
    assert captured[2] == 4  # the change made a new key: sense and act were captured again
    assert_same(plain, captured)
    assert run(400, 30)[0] != plain[0]  # and the change did something


def test_graph_key_changes_with_every_rule_and_a_restore():
    world = SoldierWorld()
    brain = Brain(world.domain, 50, world=world, planner="warp", device="cpu", seed=2)
    brain.tick()
    key = world.graph_key()
    brain.tick()
    assert world.graph_key() == key  # ticks change arrays, never what a graph holds
    for rule, value in world.rules.items():
        setattr(world, rule, value * 2 if rule != "sight" else 30.0)
        assert world.graph_key() != key, rule
        setattr(world, rule, value)
        assert world.graph_key() == key
    world.set_state(world.get_state())  # a restore makes some field arrays anew: graphs hold the old ones
    assert world.graph_key() != key


def test_brain_with_capture_matches_plain():
    """The brain's own capture (``Brain(capture=True)``: the whole tick as one graph) runs the same simulation."""
    def hash_of(**options) -> str:
        world = SoldierWorld()
        brain = Brain(world.domain, 300, world=world, planner="warp", device="cpu", seed=5, **options)
        for _ in range(20):
            brain.tick()
        return brain.state_hash()

    assert hash_of(capture=True) == hash_of()

"""The village world driving a Brain: invariants over a short run, determinism, snapshot and restore."""

from __future__ import annotations

import numpy as np
import pytest

from goap.runtime import Brain
from goap.world import World
from worlds.village.world import VillageWorld


def make(n: int, seed: int) -> tuple[Brain, VillageWorld]:
    world = VillageWorld()
    brain = Brain(world.domain, n, world=world, planner="warp", device="cpu", plan_budget=1000, seed=seed)
    return brain, world


def test_protocol_and_layout():
    world = VillageWorld(width=64, height=48)
    assert isinstance(world, World)
    Brain(world.domain, 50, world=world, planner="warp", device="cpu", seed=3)  # resets the world
    assert world.terrain.shape == (48, 64) and world.terrain.dtype == np.uint8
    assert world.positions.shape == (50, 2) and world.positions.dtype == np.float32
    for name, pos in world.sites.items():
        assert len(pos) > 0, name
        assert (pos >= 0).all() and (pos[:, 0] < 64).all() and (pos[:, 1] < 48).all()
    assert np.isnan(world.targets).all()


def test_run_invariants():
    brain, world = make(300, 1)
    facts = brain.domain.facts
    for _ in range(50):
        brain.tick()
        values = brain.tables.unpack_states(brain.states)
        for f, fact in enumerate(facts):
            assert fact.min <= values[:, f].min() and values[:, f].max() <= fact.max, fact.name
        assert (world.site_stock >= 0).all() and (world.site_stock <= world.site_max).all()
        assert brain.action_ticks.max() <= 100
        claimed = world.site_claim[world.site_claim >= 0]
        assert len(np.unique(claimed)) == len(claimed)  # one site per agent at most
    assert brain.counters["goals_achieved"] > 0
    assert brain.counters["actions_done"] > 0
    score = world.score()
    for key in ("wood_produced", "food_produced", "ore_produced", "goals_achieved_per_agent_minute", "starving"):
        assert key in score
    assert score["wood_produced"] > 0
    targets = world.targets
    assert targets.shape == (300, 2)


def test_same_seed_same_hash():
    a, _ = make(200, 7)
    b, _ = make(200, 7)
    for _ in range(30):
        a.tick()
        b.tick()
    assert a.state_hash() == b.state_hash()
    c, _ = make(200, 8)
    for _ in range(30):
        c.tick()
    assert c.state_hash() != a.state_hash()


def test_snapshot_restore_continues_identically(tmp_path):
    brain, _ = make(200, 5)
    for _ in range(20):
        brain.tick()
    brain.snapshot(tmp_path / "s.npz")
    for _ in range(20):
        brain.tick()
    straight = brain.state_hash()

    other, _ = make(200, 99)
    other.restore(tmp_path / "s.npz")
    for _ in range(20):
        other.tick()
    assert other.state_hash() == straight


@pytest.mark.parametrize("n", [0, 1])
def test_tiny_populations(n):
    brain, world = make(n, 2)
    for _ in range(5):
        brain.tick()
    assert world.score()["starving"] >= 0

"""SoldierWorld driven by a Brain: invariants, determinism and snapshots, replanning under fire."""

from __future__ import annotations

import numpy as np
import pytest

from goap.runtime import Brain
from goap.world import World
from worlds.soldier.world import SoldierWorld

pytest.importorskip("warp")


def make(n: int = 200, seed: int = 1) -> tuple[Brain, SoldierWorld]:
    world = SoldierWorld()
    brain = Brain(world.domain, n, world=world, planner="warp", device="cpu", seed=seed)
    return brain, world


def fact_bounds(world: SoldierWorld) -> tuple[np.ndarray, np.ndarray]:
    lo = np.array([f.min for f in world.domain.facts])
    hi = np.array([f.max for f in world.domain.facts])
    return lo, hi


def test_invariants_over_50_ticks():
    brain, world = make()
    assert isinstance(world, World)
    lo, hi = fact_bounds(world)
    for _ in range(50):
        brain.tick()
        facts = brain.tables.unpack_states(brain.states)
        assert ((facts >= lo) & (facts <= hi)).all()
        assert (world.health >= 0).all() and (world.health <= 4).all()
        assert (world.ammo >= 0).all() and (world.magazines >= 0).all() and (world.grenades >= 0).all()
        assert (brain.action_ticks <= world.move_timeout).all()
        assert not brain.enabled[~world.alive].any()
        died_before = ~world.alive & (world.respawn_at - world.respawn_ticks < int(world.clock) - 1)
        assert (brain.goal[died_before] < 0).all() and (brain.action[died_before] < 0).all()
        assert world.positions.dtype == np.float32 and world.positions.shape == (200, 2)
        assert (world.positions >= 0).all() and (world.positions[:, 0] <= world.width).all()
    score = world.score()
    assert brain.counters["goals_achieved"] > 0
    assert score["hits"] > 0 and score["shots_fired"] >= score["hits"]
    assert score["alive_team0"] + score["alive_team1"] == world.alive.sum()
    for key in ("kills_team0", "kills_team1", "alive_team0", "alive_team1", "shots_fired", "hits", "heals"):
        assert key in score
    assert world.team.dtype == np.int8 and (world.team == 0).sum() == 100
    assert world.obstacles.shape[1] == 4 and set(world.sites) >= {"cover", "armory", "medbay"}


def test_determinism_and_snapshot(tmp_path):
    a, _ = make(seed=3)
    b, _ = make(seed=3)
    for _ in range(30):
        a.tick()
        b.tick()
    assert a.state_hash() == b.state_hash()
    c, _ = make(seed=4)
    for _ in range(30):
        c.tick()
    assert c.state_hash() != a.state_hash()

    straight, _ = make(seed=5)
    for _ in range(20):
        straight.tick()
    path = tmp_path / "snap.npz"
    straight.snapshot(path)
    for _ in range(20):
        straight.tick()
    restored, _ = make(seed=99)
    restored.restore(path)
    assert restored.tick_count == 20
    for _ in range(20):
        restored.tick()
    assert restored.state_hash() == straight.state_hash()


def test_being_shot_makes_an_agent_replan():
    brain, world = make()
    F, G = world.F, world.G
    for _ in range(3):
        brain.tick()
    facts = brain.tables.unpack_states(brain.states)
    mid_plan = (
        world.alive
        & (brain.goal >= 0)
        & (brain.goal != G["take_cover"])
        & (brain.goal != G["stay_alive"])
        & (brain.step < brain.plan_length)
        & ~world.in_cover
        & (facts[:, F["under_fire"]] == 0)
        & (brain.cooldown_until[:, G["take_cover"]] <= brain.tick_count)
    )
    assert mid_plan.any()
    i = int(np.flatnonzero(mid_plan)[0])
    goal, plan = int(brain.goal[i]), brain.agent_plan(i)
    world.mark_under_fire(i)
    brain.tick()
    assert brain.tables.unpack_states(brain.states)[i, F["under_fire"]] == 1
    assert brain.priorities[i, G["take_cover"]] > brain.priorities[i, goal]
    assert brain.goal[i] == G["take_cover"]
    assert brain.goal[i] != goal or brain.agent_plan(i) != plan
    assert brain.counters["replan_goal_changed"] > 0

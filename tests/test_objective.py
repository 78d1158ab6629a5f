"""The worlds' objectives: each agent's contribution adds up to the objective the world computes its own way, and
outcome logging records what each goal pursued gained it."""

from __future__ import annotations

import numpy as np
import pytest

from goap.runtime import Brain
from worlds.village.objective import STARVING_COST, WORTH, action_worth
from worlds.village.world import TALLIES, VillageWorld


def village(n=400, seed=3, **kw):
    world = VillageWorld()
    return Brain(world.domain, n, world=world, device="cpu", seed=seed, plan_budget=max(64, n // 4), **kw), world


def test_village_contributions_add_up_to_the_objective_from_the_tallies():
    brain, world = village()
    for _ in range(120):
        brain.tick()
    score = world.score()
    contributions = world.contribution(brain).numpy()
    tallies = world.tallies.numpy()
    from_tallies = sum(WORTH.get(name, 0.0) * float(v) for name, v in zip(TALLIES, tallies, strict=True)) \
        - STARVING_COST * float(world.starved.numpy()[0])
    assert from_tallies > 0 and score["objective_total"] == pytest.approx(from_tallies)
    assert contributions.sum() == pytest.approx(from_tallies, rel=1e-9)
    assert (contributions > 0).mean() > 0.5  # most villagers earned something in two minutes
    assert score["objective"] == pytest.approx(from_tallies / brain.n_agents / (brain.tick_count / 60.0))


def test_village_action_worth_follows_the_tally_table():
    names = list(VillageWorld().action_names)
    worth = action_worth(names)
    assert worth[names.index("forge_tool")] == WORTH["tools_forged"]
    assert worth[names.index("harvest")] == 3 * WORTH["food_produced"]
    assert worth[names.index("go_home")] == 0.0


def test_outcome_gains_of_the_village_add_up_to_the_contributions_earned_while_goals_were_open():
    brain, world = village(n=200, seed=5)
    log = brain.record_outcomes()
    for _ in range(150):
        brain.tick()
    c = log.columns
    closed = c["achieved"] >= 0
    assert closed.sum() > 100 and np.isfinite(c["gain"][closed]).all()
    assert (c["ticks_open"][closed] >= 0).all()
    # a goal's gain is the contribution earned between planning and closing: never more than the agent's total
    assert c["gain"][closed].sum() <= world.contribution(brain).numpy().sum() + 1e-9
    assert (c["gain"][closed] > 0).mean() > 0.3


def soldiers(n=400, seed=3):
    from worlds.soldier.world import SoldierWorld

    world = SoldierWorld()
    return Brain(world.domain, n, world=world, device="cpu", seed=seed, plan_budget=max(64, n // 4)), world


def test_soldier_contributions_add_up_to_the_objective_and_its_counts_match_the_battle():
    from worlds.soldier.objective import DEATH_COST, HOLD_WORTH, KILL_WORTH

    brain, world = soldiers()
    for _ in range(200):
        brain.tick()
    score = world.score()
    merit = world.merit.numpy()
    kills, deaths, held0, held1 = (int(x) for x in merit)
    assert deaths == int(score["deaths"]) and deaths > 0  # the battle's own count of deaths
    assert 0 < kills <= deaths  # every kill the world credits is one of its deaths
    assert held0 + held1 > 0
    total = KILL_WORTH * kills - DEATH_COST * deaths + HOLD_WORTH * (held0 + held1)
    assert score["objective_total"] == pytest.approx(total)
    assert world.contribution(brain).numpy().sum() == pytest.approx(total, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("make", [village, soldiers])
def test_the_objective_survives_a_snapshot(make, tmp_path):
    brain, world = make(200, 4)
    for _ in range(50):
        brain.tick()
    brain.snapshot(tmp_path / "s.npz")
    other, other_world = make(200, 4)
    other.restore(tmp_path / "s.npz")
    for b in (brain, other):
        for _ in range(30):
            b.tick()
    assert other.state_hash() == brain.state_hash()
    assert other_world.score()["objective_total"] == world.score()["objective_total"] != 0

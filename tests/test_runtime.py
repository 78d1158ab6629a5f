"""Brain: goal selection, validation, budgeted planning, execution, cooldowns and snapshots, on a tiny world."""

from __future__ import annotations

import numpy as np
import pytest

from goap import DomainBuilder
from goap.runtime import Brain
from goap.world import DONE, FAILED, RUNNING


def farm_domain():
    return (
        DomainBuilder("farm")
        .bool("hungry", default=True)
        .bool("has_food")
        .enum("at", ["home", "field"])
        .action("go_field", cost=2, pre={"at": "home"}, effects={"at": "field"})
        .action("go_home", cost=2, pre={"at": "field"}, effects={"at": "home"})
        .action("pick", cost=1, pre={"at": "field", "has_food": False}, effects={"has_food": True})
        .action("eat", cost=1, pre={"has_food": True}, effects={"has_food": False, "hungry": False})
        .goal("eat", want={"hungry": False}, priority=5)
        .goal("be_home", want={"at": "home"}, priority=1)
        .build()
    )


class FarmWorld:
    """Every action takes ``duration`` ticks; ``fail`` marks agents whose current action fails this tick."""

    name = "farm"

    def __init__(self, duration: int = 1):
        self.domain = farm_domain()
        self.duration = duration
        self.fail = None
        self.acted = None

    def reset(self, brain, seed):
        self.fail = np.zeros(brain.n_agents, bool)
        self.acted = np.zeros(brain.n_agents, np.int64)

    def sense(self, brain):
        pass

    def act(self, brain, dt):
        busy = brain.action >= 0
        self.acted += busy
        finished = busy & (brain.action_ticks >= self.duration - 1)
        brain.action_status[:] = RUNNING
        brain.action_status[finished] = DONE
        brain.action_status[busy & self.fail] = FAILED
        self.fail[:] = False

    def score(self):
        return {"actions": float(self.acted.sum())}

    def get_state(self):
        return {"acted": self.acted, "fail": self.fail}

    def set_state(self, arrays):
        self.acted[...] = arrays["acted"]
        self.fail[...] = arrays["fail"]


def make(n=20, duration=1, **kw):
    world = FarmWorld(duration)
    kw.setdefault("planner", "warp")
    kw.setdefault("device", "cpu")
    return Brain(world.domain, n, world=world, **kw), world


def names(brain, i):
    return brain.agent_plan(i)


def test_agents_plan_act_and_achieve_goals():
    brain, world = make(30)
    brain.tick()
    assert (brain.goal == brain.domain.goal_index("eat")).all()
    assert names(brain, 0) == ["go_field", "pick", "eat"]
    for _ in range(4):
        brain.tick()
    values = brain.tables.unpack_states(brain.states)
    hungry = brain.domain.fact_index("hungry")
    assert (values[:, hungry] == 0).all()
    assert brain.counters["goals_achieved"] >= 30
    # Then the next goal: walk home.
    for _ in range(3):
        brain.tick()
    at = brain.domain.fact_index("at")
    assert (brain.tables.unpack_states(brain.states)[:, at] == 0).all()


def test_fact_changed_mid_plan_replans_next_tick():
    brain, world = make(4, duration=3)
    brain.tick()  # plan; start go_field
    for _ in range(3):
        brain.tick()  # go_field done: next is pick
    assert brain.step[1] == 1 and brain.plan[1, 1] == brain.domain.action_index("pick")
    # Teleport agent 1 home under its plan: `pick` no longer applies.
    values = brain.tables.unpack_states(brain.states)
    values[1, brain.domain.fact_index("at")] = 0
    brain.states[:] = brain.tables.pack_states(values)
    before = brain.counters["replan_invalid"]
    brain.tick()
    assert brain.counters["replan_invalid"] == before + 1
    assert names(brain, 1) == ["go_field", "pick", "eat"] and brain.step[1] == 0


def test_failed_action_replans():
    brain, world = make(5, duration=2)
    brain.tick()
    world.fail[3] = True
    brain.tick()
    assert brain.counters["actions_failed"] == 1
    brain.tick()
    assert brain.counters["replan_action_failed"] == 1
    assert brain.step[3] == 0 and names(brain, 3)[0] == "go_field"


def test_failed_search_puts_goal_on_cooldown():
    brain, world = make(3, cooldown_ticks=5)
    eat, home = brain.domain.goal_index("eat"), brain.domain.goal_index("be_home")
    brain.enabled[0, :] = False
    brain.enabled[0, brain.domain.action_index("go_home")] = True  # eating is impossible for agent 0
    brain.tick()
    assert brain.counters["plans_failed"] == 1 and brain.cooldown_until[0, eat] == 0 + 5
    assert brain.goal[0] == -1 and brain.goal[1] == eat
    brain.tick()
    # be_home already holds, eat cools down: agent 0 has nothing to do, and is never given the cooling goal.
    assert brain.goal[0] == -1
    for _ in range(3):
        brain.tick()
        assert brain.goal[0] != eat
    brain.tick()  # tick 5: the cooldown is over and the goal is tried (and fails) again
    assert brain.counters["plans_failed"] == 2 and brain.cooldown_until[0, eat] == 5 + 5
    assert home not in brain.goal[:1]


def test_plan_budget_is_respected_and_fair():
    brain, world = make(20, plan_budget=7)
    stats = brain.tick()
    assert stats.events["plans_requested"] == 7
    assert (brain.plan_length[:7] == 3).all() and (brain.plan_length[7:] == 0).all()
    stats = brain.tick()
    assert stats.events["plans_requested"] == 7
    assert (brain.plan_length[7:14] == 3).all() and (brain.plan_length[14:] == 0).all()
    assert (brain.waiting[14:] == 2).all()


def test_budget_prefers_higher_priority_among_equal_waits():
    brain, world = make(6, plan_budget=2)
    eat = brain.domain.goal_index("eat")
    brain.priorities[:, eat] = [5, 5, 5, 9, 5, 8]
    brain.tick()
    assert sorted(np.flatnonzero(brain.plan_length > 0)) == [3, 5]


def test_snapshot_restore_is_bit_identical(tmp_path):
    straight, _ = make(25, duration=2)
    for _ in range(12):
        straight.tick()
    first, _ = make(25, duration=2)
    for _ in range(6):
        first.tick()
    first.snapshot(tmp_path / "s.npz")
    second, _ = make(25, duration=2)
    second.restore(tmp_path / "s.npz")
    for _ in range(6):
        second.tick()
    assert second.state_hash() == straight.state_hash()
    assert second.tick_count == 12 and second.counters == straight.counters


def test_restore_refuses_another_domain(tmp_path):
    brain, _ = make(3)
    brain.snapshot(tmp_path / "s.npz")
    other = Brain(DomainBuilder("x").bool("a").action("b", effects={"a": True}).build(), 3, planner="reference")
    with pytest.raises(ValueError, match="another domain"):
        other.restore(tmp_path / "s.npz")


def test_reference_and_warp_brains_agree():
    a, _ = make(15, duration=2, planner="reference")
    b, _ = make(15, duration=2)
    for _ in range(10):
        a.tick()
        b.tick()
    assert a.state_hash() == b.state_hash()


@pytest.mark.parametrize("kwargs", [{"n_agents": -1}, {"plan_budget": 0}, {"cooldown_ticks": -2}])
def test_bad_arguments(kwargs):
    args = {"n_agents": 2, **kwargs}
    with pytest.raises(ValueError):
        Brain(farm_domain(), args.pop("n_agents"), planner="reference", **args)

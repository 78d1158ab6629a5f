"""Outcome logging and the goal-scorer hook of the Brain."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from goap import DomainBuilder
from goap.kernels.agents import Agents
from goap.outcomes import OutcomeLog
from goap.planners import Status
from goap.runtime import Brain
from goap.world import DONE
from tests.test_runtime import FarmWorld, farm_domain


def make(n=12, **kw):
    world = FarmWorld(duration=2)
    return Brain(world.domain, n, world=world, planner="warp", device="cpu", **kw), world


def test_every_planning_call_is_logged_with_what_followed():
    brain, world = make(cooldown_ticks=3)
    brain.enabled.numpy()[0, :] = False  # agent 0 can never plan: its rows are failures
    log = brain.record_outcomes()
    for _ in range(16):
        brain.tick()
    cols = log.columns
    assert len(log) == brain.counters["plans_requested"]
    failed = cols["status"] == Status.NO_PLAN
    assert failed.sum() == brain.counters["plans_failed"] and (cols["achieved"][failed] == 0).all()
    # Failed rows name the goal that was planned (agent 0 wanted to eat), not the agent's goal afterwards.
    eat = brain.domain.goal_index("eat")
    assert (cols["goal"][failed] == eat).all() and (cols["reward"][failed] == 5).all()
    ok = cols["status"] == Status.OK
    achieved = ok & (cols["achieved"] == 1)
    assert achieved.sum() == brain.counters["goals_achieved"] > 0
    # A plan of n steps, each taking 2 ticks, reaches its goal 2n ticks after it was made.
    np.testing.assert_array_equal(cols["ticks_to_goal"][achieved], 2 * cols["length"][achieved])
    assert (cols["ticks_to_goal"][~achieved] == -1).all()
    eat = brain.domain.goal_index("eat")
    assert (cols["reward"][cols["goal"] == eat] == 5).all()
    first = brain.tables.unpack_states(cols["states"][:1])[0]
    assert brain.domain.describe_state(tuple(first)).startswith("hungry=true")


def test_save_append_load_and_refuse_other_domain(tmp_path):
    brain, _ = make()
    log = brain.record_outcomes()
    for _ in range(5):
        brain.tick()
    path = tmp_path / "out.npz"
    log.save(path)
    log.save(path, append=True)
    back = OutcomeLog.load(path)
    assert len(back) == 2 * len(log) and back.fingerprint == log.fingerprint
    np.testing.assert_array_equal(back.columns["states"][len(log):], log.columns["states"])
    other = DomainBuilder("other").bool("x").action("a", effects={"x": True}).build()
    foreign = OutcomeLog.from_columns(other, states=np.zeros((2, 1), np.uint64), goal=[0, 0])
    with pytest.raises(ValueError, match="domain 'farm'"):
        foreign.save(path, append=True)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a readable outcome log"):
        OutcomeLog.load(tmp_path / "junk.npz")


def test_goal_scorer_replaces_priorities_but_not_eligibility():
    domain = farm_domain()
    eat, home = domain.goal_index("eat"), domain.goal_index("be_home")

    def prefer_home(brain):
        scores = brain.priorities.numpy().copy()
        scores[:, home] = 100.0
        return scores

    brain, _ = make(4, goal_scorer=prefer_home)
    brain.tick()
    # be_home already holds at the start, so it is never picked however high it scores.
    assert (brain.goal.numpy() == eat).all()
    values = brain.tables.unpack_states(brain.states.numpy())
    values[:, domain.fact_index("at")] = 1  # everyone in the field: be_home is now open and scores highest
    brain.states.numpy()[:] = brain.tables.pack_states(values)
    brain.tick()
    assert (brain.goal.numpy() == home).all()
    brain.goal_scorer = lambda b: np.zeros((3, 3), np.float32)
    with pytest.raises(ValueError, match="goal_scorer returned shape"):
        brain.tick()


def test_outcome_log_from_columns_checks_names():
    with pytest.raises(ValueError, match="unknown column"):
        OutcomeLog.from_columns(farm_domain(), states=np.zeros((1, 1), np.uint64), goal=[0], colour=[1])
    empty = Brain(farm_domain(), 0, planner="reference").record_outcomes()
    assert len(empty) == 0 and empty.columns["states"].shape == (0, 1)


@wp.kernel
def _finish_and_pay(agents: Agents, pay: float, contribution: wp.array(dtype=wp.float32)):
    """Every action is DONE the tick it runs, and pays the agent ``pay`` towards the world objective."""
    i = wp.tid()
    if agents.action[i] >= 0:
        agents.action_status[i] = wp.int8(DONE)
        contribution[i] = contribution[i] + pay


class PayingWorld:
    """A tiny world whose objective is the sum of what the agents' actions paid (`contribution`)."""

    name = "paying"
    capturable = True
    sensed_facts = ()

    def __init__(self, domain, pay):
        self.domain, self.pay = domain, pay

    def reset(self, brain, seed):
        self.contrib = wp.zeros(brain.n_agents, dtype=wp.float32, device=brain.device)

    def sense(self, brain):
        pass

    def act(self, brain, dt):
        brain.launcher.launch(_finish_and_pay, brain.n_agents, [brain.agents, self.pay, self.contrib])

    def contribution(self, brain):
        return self.contrib

    def score(self):
        return {"objective": float(self.contrib.numpy().sum())}

    def get_state(self):
        return {"contrib": self.contrib.numpy().copy()}

    def set_state(self, arrays):
        self.contrib.assign(arrays["contrib"])


def test_the_gain_column_is_what_the_goal_earned_the_world_hand_worked():
    domain = (DomainBuilder("counter").int("x", 0, 3).int("y", 0, 1)
              .action("inc", cost=1, pre={"x": "< 3"}, effects={"x": "+= 1"})
              .action("flip", cost=1, pre={"y": 0}, effects={"y": 1})
              .goal("three", want={"x": 3}, priority=5).goal("flipped", want={"y": 1}, priority=1)
              .build())
    brain = Brain(domain, 2, PayingWorld(domain, 0.5), planner="reference", device="cpu")
    log = brain.record_outcomes()
    for _ in range(8):
        brain.tick()
    c = log.columns
    three, flipped = domain.goal_index("three"), domain.goal_index("flipped")
    rows = {int(g): i for i, g in enumerate(c["goal"]) if c["achieved"][i] == 1}
    # "three": plan [inc, inc, inc] at tick 1, done by the end of tick 3, seen reached at tick 4: 3 x 0.5, 3 ticks.
    assert c["gain"][rows[three]] == 1.5 and c["ticks_open"][rows[three]] == 3
    # "flipped": planned at tick 4, flip done the same tick, seen reached at tick 5: 0.5 in 1 tick.
    assert c["gain"][rows[flipped]] == 0.5 and c["ticks_open"][rows[flipped]] == 1
    total = float(np.nansum(c["gain"][c["achieved"] >= 0]))
    assert total == 2 * 2.0  # both agents: the sum of the closed gains is the objective earned
    assert brain.summary()["world_score"]["objective"] == 4.0

"""Outcome logging and the goal-scorer hook of the Brain."""

from __future__ import annotations

import numpy as np
import pytest

from goap import DomainBuilder
from goap.outcomes import OutcomeLog
from goap.planners import Status
from goap.runtime import Brain
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

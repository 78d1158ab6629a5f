"""The reference planner against brute force: optimal costs, valid plans, honest statuses."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from goap import DomainBuilder, Goal, Status, encode
from goap.bench.random_domains import random_domain, random_problems
from goap.planners import make_planner
from goap.planners.reference import ReferencePlanner
from tests.conftest import brute_force_cost


def replay_cost(domain, start, plan, costs) -> tuple[tuple[int, ...], float]:
    state, total = start, 0.0
    for a in plan:
        assert domain.is_applicable(state, domain.actions[a]), f"step {domain.actions[a].name} not applicable"
        state = domain.apply(state, domain.actions[a])
        total += costs[a]
    return state, total


@given(
    seed=st.integers(0, 10_000),
    n_facts=st.integers(3, 9),
    int_fraction=st.sampled_from([0.0, 0.3, 0.6]),
    per_agent=st.booleans(),
)
def test_reference_is_optimal_on_random_domains(seed, n_facts, int_fraction, per_agent):
    domain = random_domain(seed, n_facts, n_actions=n_facts + 2, int_fraction=int_fraction, max_int=3, depth=4)
    problems = random_problems(domain, 6, seed=seed + 1)
    planner = ReferencePlanner(domain, max_nodes=1 << 20, max_plan_length=64)
    rng = np.random.default_rng(seed)
    A = len(domain.actions)
    costs = rng.integers(1, 33, size=(6, A)).astype(np.float32) / 4 if per_agent else None
    enabled = rng.random((6, A)) < 0.85 if per_agent else None
    states = planner.tables.pack_states(problems.values)
    batch = planner.plan(states, problems.goals, costs, enabled)
    for i in range(6):
        start = tuple(int(v) for v in problems.values[i])
        goal = domain.goals[problems.goals[i]]
        agent_costs = [a.cost for a in domain.actions] if costs is None else [float(c) for c in costs[i]]
        agent_enabled = None if enabled is None else [bool(e) for e in enabled[i]]
        optimum = brute_force_cost(domain, start, goal, agent_costs, agent_enabled)
        status = Status(batch.status[i])
        if status == Status.SATISFIED:
            assert optimum == 0 and batch.cost[i] == 0 and batch.length[i] == 0
        elif status == Status.OK:
            plan = batch.plan(i)
            assert agent_enabled is None or all(agent_enabled[a] for a in plan)
            end, total = replay_cost(domain, start, plan, agent_costs)
            assert domain.satisfies(end, goal.want)
            assert total == pytest.approx(optimum) and batch.cost[i] == pytest.approx(optimum)
        else:
            assert status == Status.NO_PLAN, status
            assert math.isinf(optimum)


def soldier_like():
    return (
        DomainBuilder("t")
        .bool("armed")
        .int("ammo", 0, 3)
        .bool("enemy", default=True)
        .enum("at", ["base", "front"])
        .action("arm", cost=1, pre={"armed": False}, effects={"armed": True})
        .action("load", cost=2, pre={"armed": True, "ammo": "< 3"}, effects={"ammo": "+= 2"})
        .action("go", cost=3, pre={"at": "base"}, effects={"at": "front"})
        .action(
            "shoot",
            cost=1,
            pre={"armed": True, "ammo": ">= 1", "at": "front"},
            effects={"ammo": "-= 1", "enemy": False},
        )
        .goal("win", want={"enemy": False}, priority=5)
        .goal("stocked", want={"ammo": 3})
        .goal("impossible", want={"at": "base", "enemy": False})
        .build()
    )


def test_hand_checked_plan():
    domain = soldier_like()
    planner = make_planner("reference", domain)
    t = planner.tables
    batch = planner.plan(t.pack({})[None], [domain.goal_index("win")])
    plan = batch.plan_names(0, domain)
    # By hand: arm, go and load (in any order that keeps each precondition; arm and go are independent), then
    # shoot, for 7: the plan must be those four, end with the shot, and work when replayed.
    assert sorted(plan) == ["arm", "go", "load", "shoot"] and plan[-1] == "shoot"
    state = domain.default_state()
    for name in plan:
        action = domain.actions[domain.action_index(name)]
        assert domain.is_applicable(state, action), name
        state = domain.apply(state, action)
    assert domain.satisfies(state, domain.goals[domain.goal_index("win")].want)
    assert batch.cost[0] == 7 and batch.status[0] == Status.OK


def test_clamped_steps_reach_the_top():
    # ammo 0 -> +2 -> +2 clamps at 3: two loads, not three.
    domain = soldier_like()
    planner = make_planner("reference", domain)
    batch = planner.plan(planner.tables.pack({"armed": True})[None], [domain.goal_index("stocked")])
    assert batch.plan_names(0, domain) == ["load", "load"]


def test_statuses_satisfied_no_plan_budget_too_long():
    domain = soldier_like()
    t = encode(domain)
    win, impossible = domain.goal_index("win"), domain.goal_index("impossible")
    states = np.stack([t.pack({"enemy": False}), t.pack({}), t.pack({}), t.pack({})])
    goals = [win, impossible, win, win]
    big = ReferencePlanner(t).plan(states[:2], goals[:2])
    assert list(big.status) == [Status.SATISFIED, Status.NO_PLAN]
    assert math.isnan(big.cost[1])
    tiny = ReferencePlanner(t, max_nodes=3, growth=1).plan(states[2:3], goals[2:3])
    assert tiny.status[0] == Status.BUDGET and tiny.length[0] == 0 and (tiny.actions[0] == -1).all()
    assert tiny.level[0] == 1  # one level only: level 1 says every pool was tried, the BUDGET is final
    grown = ReferencePlanner(t, max_nodes=3, growth=4).plan(states[2:3], goals[2:3])
    assert grown.status[0] == Status.OK and grown.cost[0] == 7 and grown.level[0] == 1  # a 12-state pool did it
    short = ReferencePlanner(t, max_plan_length=2).plan(states[3:4], goals[3:4])
    assert short.status[0] == Status.TOO_LONG and short.length[0] == 4 and short.cost[0] == 7
    # The segment: the first two steps of an optimal plan, from which the rest is optimal.
    whole = ReferencePlanner(t).plan(states[3:4], goals[3:4])
    assert short.segment(0) == whole.plan(0)[:2] and short.plan(0) == []


def test_all_actions_disabled_means_no_plan():
    domain = soldier_like()
    t = encode(domain)
    batch = ReferencePlanner(t).plan(t.pack({})[None], [0], enabled=np.zeros((1, len(domain.actions)), bool))
    assert batch.status[0] == Status.NO_PLAN and batch.expanded[0] == 0


def test_per_agent_costs_change_the_plan():
    b = (
        DomainBuilder("detour")
        .bool("there")
        .action("walk", cost=5, effects={"there": True})
        .action("ride", cost=1, effects={"there": True})
        .goal("arrive", want={"there": True})
        .build()
    )
    planner = ReferencePlanner(b)
    states = np.repeat(planner.tables.pack({})[None], 2, axis=0)
    costs = np.array([[5, 1], [1, 9]], dtype=np.float32)
    batch = planner.plan(states, [0, 0], costs)
    assert [batch.plan_names(i, b) for i in range(2)] == [["ride"], ["walk"]]
    assert list(batch.cost) == [1, 1]


def test_ad_hoc_goals_and_agent_subset():
    domain = soldier_like()
    planner = ReferencePlanner(domain)
    t = planner.tables
    table = t.encode_goals([Goal("armed", want=domain.conditions({"armed": True}))])
    states = np.repeat(t.pack({})[None], 3, axis=0)
    batch = planner.plan(states, [0, 0, 0], goal_table=table, agents=[2])
    assert list(batch.status) == [Status.NOT_PLANNED, Status.NOT_PLANNED, Status.OK]
    assert batch.plan_names(2, domain) == ["arm"]


@pytest.mark.parametrize(
    "kwargs",
    [{"max_nodes": 0}, {"max_nodes": 1.5}, {"max_plan_length": 0}],
)
def test_bad_options(kwargs):
    with pytest.raises(ValueError):
        ReferencePlanner(soldier_like(), **kwargs)


def test_bad_inputs():
    domain = soldier_like()
    planner = ReferencePlanner(domain)
    s = planner.tables.pack({})[None]
    with pytest.raises(ValueError, match="goal indices"):
        planner.plan(s, [7])
    with pytest.raises(ValueError, match="states must have shape"):
        planner.plan(np.zeros((1, 3), np.uint64), [0])
    with pytest.raises(ValueError, match="costs must be finite"):
        planner.plan(s, [0], costs=np.full((1, len(domain.actions)), -1, np.float32))
    with pytest.raises(ValueError, match="unknown planner"):
        make_planner("nope", domain)

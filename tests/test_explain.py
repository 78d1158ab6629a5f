"""`goap.explain` on crafted domains whose cause is known: each explanation must name it (asserted on the
dataclass's causes, not on its wording), and the explanation of a waiting agent must agree with what the next
tick does."""

from __future__ import annotations

import numpy as np
import pytest

from goap import DomainBuilder
from goap.explain import CAUSE_KINDS, explain_agent, explain_problem, explain_rows
from goap.runtime import Brain


def camp() -> object:
    """warm needs a fire, a fire needs wood, wood needs chopping; fed needs a ripe crop nothing makes ripe."""
    b = DomainBuilder("camp")
    b.bool("wood").bool("fire").bool("warm").bool("ripe").bool("fed").bool("rested")
    b.action("chop", 1, effects={"wood": True})
    b.action("light", 1, pre={"wood": True}, effects={"fire": True})
    b.action("sit", 1, pre={"fire": True}, effects={"warm": True})
    b.action("harvest", 1, pre={"ripe": True}, effects={"fed": True})
    b.action("sleep", 1, effects={"rested": True})
    b.goal("fed", {"fed": True}, priority=5)
    b.goal("warm", {"warm": True}, priority=3)
    b.goal("rested", {"rested": True}, priority=1)
    return b.build()


def brain(domain, n=1, **kw) -> Brain:
    return Brain(domain, n, planner="reference", **kw)


def test_every_cause_kind_is_documented():
    d = camp()
    br = brain(d)
    br.tick()
    e = explain_agent(br, 0)
    assert all(c.kind in CAUSE_KINDS for c in e.causes)


def test_disabled_action_on_the_only_path_is_named_and_the_goal_cools_down():
    d = camp()
    br = brain(d)
    br.priorities.numpy()[0, d.goal_index("fed")] = 0.0  # warm is the best goal
    br.enabled.numpy()[0, d.action_index("chop")] = False
    br.tick()
    e = explain_agent(br, 0)
    assert e.failed_goal == "warm" and e.failure == "no_plan"
    assert e.has("no_plan", "warm")
    assert e.has("disabled_action", "chop")
    assert e.has("cooling_down", "warm")
    assert e.has("unreachable_condition", "warm == true")
    # sit and light are not disabled: they are blocked by preconditions that trace back to the disabled chop
    blockers = {b.action: b for u in e.unreachable for b in u.achievers}
    assert blockers["sit"].reason == "blocked_precondition" and blockers["sit"].precondition == "fire == true"
    cooling = next(g for g in e.goals if g.goal == "warm")
    assert cooling.status == "cooling_down" and cooling.cooling_until == br.tick_count - 1 + br.cooldown_ticks
    assert "chop" in e.text()
    # with chop enabled again the same agent plans warm once the cooldown is over
    br.enabled.numpy()[0, d.action_index("chop")] = True
    for _ in range(br.cooldown_ticks + 1):
        br.tick()
    assert explain_agent(br, 0).goal == "warm"


def test_precondition_no_action_makes_true_is_named_and_world_only_when_sensed():
    d = camp()
    br = brain(d)
    br.tick()  # fed (priority 5) fails: nothing makes ripe true
    e = explain_agent(br, 0)
    assert e.has("no_plan", "fed")
    assert e.has("blocked_precondition", "harvest")
    harvest = next(b for u in e.unreachable for b in u.achievers if b.action == "harvest")
    assert harvest.precondition == "ripe == true" and not harvest.world_only
    # the same rows explained for a world that senses ripe: only the world makes it true
    from goap.explain import agent_rows

    rows, _ = agent_rows(br, 0)
    e2 = explain_rows(d, rows, tick=br.tick_count, sensed=("ripe",), cooldown_ticks=br.cooldown_ticks)
    assert e2.has("world_only", "ripe")
    # and why rested was not taken instead: warm outscores it
    scores = {g.goal: g.status for g in e.goals}
    assert scores["warm"] in ("chosen",) and scores["rested"] == "lower_score"


def test_priority_zero_and_no_goal_left():
    d = camp()
    br = brain(d)
    br.priorities.numpy()[0, :] = 0.0
    br.tick()
    e = explain_agent(br, 0)
    assert e.idle == "no_goal" and e.goal is None
    assert all(e.has("priority_zero", g.name) for g in d.goals)
    assert e.has("no_goals")


def test_satisfied_goals_are_skipped():
    d = camp()
    br = brain(d)
    br.priorities.numpy()[0, d.goal_index("fed")] = 0.0
    start = d.state({"warm": True, "rested": True})
    br.reset_agents([0], states=[start])
    br.priorities.numpy()[0, d.goal_index("fed")] = 0.0
    br.tick()
    e = explain_agent(br, 0)
    assert e.has("satisfied", "warm") and e.has("satisfied", "rested") and e.idle == "no_goal"


def test_pinned_goal_is_named_and_the_others_are_skipped_for_it():
    d = camp()
    br = brain(d)
    br.set_goal([0], "rested")
    br.tick()
    e = explain_agent(br, 0)
    assert e.has("pinned", "rested") and e.pinned == "rested" and e.goal == "rested"
    status = {g.goal: g.status for g in e.goals}
    assert status["rested"] == "chosen" and status["fed"] == "skipped_for_pin" and status["warm"] == "skipped_for_pin"


def test_too_long_plan_names_the_plan_buffer():
    d = camp()
    br = brain(d, max_plan_length=2)
    br.priorities.numpy()[0, d.goal_index("fed")] = 0.0
    br.tick()  # warm takes chop, light, sit: three steps
    e = explain_agent(br, 0)
    assert e.plan_status == "too_long" and e.has("too_long", "warm")
    assert any("max_plan_length" in f for f in e.fixes)
    assert [s.action for s in e.plan] == ["chop", "light"]


def test_budget_names_the_search_settings():
    d = camp()
    br = brain(d, max_nodes=2, planner_options={"node_ceiling": 2})  # one pool of two states: warm needs four
    br.priorities.numpy()[0, d.goal_index("fed")] = 0.0
    br.tick()
    e = explain_agent(br, 0)
    assert e.failure == "budget" and e.failed_goal == "warm" and e.has("budget", "warm")
    assert any("max_nodes" in f for f in e.fixes)


def test_plan_steps_costs_and_states_reached():
    d = camp()
    br = brain(d)
    br.priorities.numpy()[0, d.goal_index("fed")] = 0.0
    br.costs.numpy()[0, d.action_index("light")] = 4.0
    br.tick()
    e = explain_agent(br, 0)
    assert e.goal == "warm" and e.action == "chop"
    assert [(s.action, s.cost) for s in e.plan] == [("chop", 1.0), ("light", 4.0), ("sit", 1.0)]
    assert e.plan[1].reaches == {"fire": "true"} and e.plan_cost == pytest.approx(6.0)
    # the heuristic is admissible: it never predicts more than the plan costs
    assert e.predicted_cost is not None and e.predicted_cost <= e.plan_cost
    assert e.has("running", "chop")


def test_waiting_agent_beyond_the_plan_budget_and_its_queue_position():
    d = camp()
    n, budget = 12, 3
    br = brain(d, n, plan_budget=budget)
    br.priorities.numpy()[:, d.goal_index("fed")] = 0.0
    br.tick()  # 12 ask for warm; 3 are planned
    waiting = [i for i in range(n) if explain_agent(br, i).idle == "waiting"]
    assert len(waiting) == n - budget
    explained = {i: explain_agent(br, i) for i in waiting}
    positions = sorted(e.queue_position for e in explained.values())
    assert positions == list(range(n - budget))  # a strict order: every waiting agent has its own place
    for e in explained.values():
        assert e.has("waiting", "warm") and e.plan_budget == budget
        assert e.has("beyond_plan_budget", "warm") == (e.queue_position >= budget)
    br.tick()  # the next tick plans exactly the agents the queue puts first
    planned_next = {i for i in waiting if explain_agent(br, i).idle != "waiting"}
    assert planned_next == {i for i, e in explained.items() if e.queue_position < budget}


def test_explain_copies_one_agents_rows_only():
    d = camp()
    small, large = brain(d, 2), brain(d, 500)
    small.tick()
    large.tick()
    a, b = explain_agent(small, 1), explain_agent(large, 1)
    assert a.bytes_copied == b.bytes_copied > 0
    row_bytes = sum(arr.numpy()[:1].nbytes for _, arr in large.arrays.items())
    assert a.bytes_copied == row_bytes


def test_explain_problem_plan_and_no_plan():
    d = camp()
    e = explain_problem(d, d.default_state(), d.goal_index("warm"))
    assert e.plan_status == "ok" and [s.action for s in e.plan] == ["chop", "light", "sit"]
    e = explain_problem(d, d.default_state(), d.goal_index("warm"),
                        enabled=[a.name != "chop" for a in d.actions])
    assert e.has("disabled_action", "chop") and e.failure == "no_plan"
    e = explain_problem(d, d.default_state(), d.goal_index("fed"))
    assert e.has("blocked_precondition", "harvest")
    assert e.to_dict()["causes"]


def test_bad_agent_index_is_refused():
    br = brain(camp(), 2)
    with pytest.raises(ValueError, match="agent 5"):
        explain_agent(br, 5)
    assert np.all(br.goal.numpy() == -1)


# --- goap explain ----------------------------------------------------------------------------------------------
CAMP_TOML = """name = "camp"

[facts]
wood = false
fire = false
warm = false
ripe = false
fed = false

[actions.chop]
cost = 1
effects = { wood = true }

[actions.light]
cost = 2
pre = { wood = true }
effects = { fire = true }

[actions.sit]
cost = 1
pre = { fire = true }
effects = { warm = true }

[actions.harvest]
cost = 1
pre = { ripe = true }
effects = { fed = true }

[goals.warm]
want = { warm = true }

[goals.fed]
want = { fed = true }
"""


def test_cli_explain_problem_text_and_json(tmp_path, capsys):
    import json

    from tests.conftest import run_cli

    path = tmp_path / "camp.toml"
    path.write_text(CAMP_TOML)
    code, out, _ = run_cli(capsys, "explain", path, "--problem", '{"start": {}, "goal": "warm"}')
    assert code == 0 and "chop" in out and "sit" in out
    code, out, _ = run_cli(capsys, "explain", path, "--problem", '{"start": {}, "goal": "fed"}', "--json")
    e = json.loads(out)
    assert code == 0 and e["failure"] == "no_plan"
    assert {"kind": "blocked_precondition", "subject": "harvest", "detail": "ripe == true"} in e["causes"]
    # an inline goal, and a problem file picked by id
    code, out, _ = run_cli(capsys, "explain", path, "--problem", '{"start": {"wood": true}, "goal": {"fire": true}}',
                           "--json")
    assert code == 0 and [s["action"] for s in json.loads(out)["plan"]] == ["light"]
    problems = tmp_path / "p.jsonl"
    problems.write_text('{"id": "a", "goal": "warm"}\n{"id": "b", "start": {"ripe": true}, "goal": "fed"}\n')
    code, out, _ = run_cli(capsys, "explain", path, "--problems", problems, "--id", "b", "--json")
    assert code == 0 and [s["action"] for s in json.loads(out)["plan"]] == ["harvest"]
    code, _, err = run_cli(capsys, "explain", path, "--problems", problems, "--id", "zz")
    assert code == 1 and "no problem with id 'zz'" in err and "Traceback" not in err
    code, _, err = run_cli(capsys, "explain", path)
    assert code == 1 and "--problem" in err


def test_cli_explain_world_agent(capsys):
    import json

    from tests.conftest import run_cli

    code, out, _ = run_cli(capsys, "explain", "--world", "soldier", "--agents", "40", "--ticks", "5", "--agent", "3",
                           "--json", "--planner", "reference")
    e = json.loads(out)
    assert code == 0 and e["agent"] == 3 and e["tick"] == 5 and len(e["goals"]) > 0
    assert e["bytes_copied"] > 0
    code, _, err = run_cli(capsys, "explain", "--world", "soldier", "--agents", "4", "--agent", "9")
    assert code == 1 and "--agent 9" in err


def test_dead_agent_is_named():
    br = brain(camp(), 2)
    br.tick()
    br.despawn([1])
    e = explain_agent(br, 1)
    assert e.has("dead") and e.idle is None and "not alive" in e.text()


def test_scorer_term_and_hysteresis_are_the_scores_compared():
    d = camp()
    G = len(d.goals)
    scores = np.zeros((1, G), np.float32)
    scores[0, d.goal_index("rested")] = 9.0  # the scorer prefers rested, whatever the priorities say
    scores[0, d.goal_index("warm")] = 8.0
    br = brain(d, goal_scorer=lambda b: scores, goal_hysteresis=2.0)
    br.priorities.numpy()[0, d.goal_index("fed")] = 0.0
    br.tick()
    e = explain_agent(br, 0)
    by = {g.goal: g for g in e.goals}
    assert e.goal == "rested" and by["rested"].status == "chosen"
    assert by["rested"].score == pytest.approx(11.0) and by["rested"].hysteresis == 2.0
    assert by["warm"].score == pytest.approx(8.0) and by["warm"].status == "lower_score"
    assert by["warm"].priority == pytest.approx(3.0)
    scores[0, d.goal_index("warm")] = 10.5  # beats 9 but not 9 + the bonus: the agent keeps rested
    br.tick()  # no world: sleep stays RUNNING, rested does not hold yet
    e = explain_agent(br, 0)
    by = {g.goal: g for g in e.goals}
    assert e.goal == "rested" and by["rested"].status == "chosen" and by["warm"].status == "lower_score"
    scores[0, d.goal_index("warm")] = 11.5  # now it beats the bonus too
    br.tick()
    e = explain_agent(br, 0)
    assert e.goal == "warm" and {g.goal: g for g in e.goals}["warm"].status == "chosen"

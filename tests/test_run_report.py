"""Idle agent-ticks by reason and by goal, failed searches by goal (`goap.run_report.IdleStats`), and what
``goap run`` prints and writes of them: checked against the brain's own counters and against `goap.explain`."""

from __future__ import annotations

import json

from goap.explain import IDLE_REASONS, explain_agent
from goap.run_report import IdleStats
from goap.runtime import Brain
from goap.world import EngineWorld
from tests.conftest import run_cli
from tests.test_explain import camp


def test_idle_counts_agree_with_the_brains_idle_counter_and_explain():
    d = camp()  # fed always fails (nothing makes ripe true); warm takes three actions; rested one
    world = EngineWorld(d, duration=2, drift_p=0.05)
    n = 30
    brain = Brain(d, n, world=world, planner="reference", plan_budget=4, seed=3)
    stats = IdleStats(brain)
    before = 0
    for _ in range(40):
        brain.tick()
        stats.update()
        total = sum(stats.report()["idle_ticks_by_reason"].values())
        assert total - before == round(brain.idle_series.last * n)  # the tick's idle agents, as the brain counts
        before = total
        reasons = stats.reasons.numpy()
        for i in range(n):  # every idle agent's reason is the one explain gives it
            if reasons[i] >= 0:
                assert explain_agent(brain, i, queue=False).idle == IDLE_REASONS[reasons[i]], i
    r = stats.report()
    assert r["alive_agent_ticks"] == 40 * n
    assert sum(sum(row.values()) for row in r["failed_searches_by_goal"].values()) == brain.counters["plans_failed"]
    assert set(r["failed_searches_by_goal"]) == {"fed"} and set(r["failed_searches_by_goal"]["fed"]) == {"no_plan"}
    assert r["idle_ticks_by_reason"]["waiting"] > 0  # 30 agents, 4 plans a tick
    assert r["idle_ticks_by_goal"]["failed"].get("fed", 0) > 0
    listed = stats.idle_agents(3)
    assert set(listed) == {*IDLE_REASONS, "action_failed"}
    for reason, agents in listed.items():
        assert len(agents) <= 3
        if reason != "action_failed":
            assert all(IDLE_REASONS[stats.reasons.numpy()[i]] == reason for i in agents)
    for i in listed["action_failed"]:
        assert explain_agent(brain, i, queue=False).has("action_failed")


def test_goap_run_prints_and_writes_the_breakdown(tmp_path, capsys):
    out = tmp_path / "run.json"
    code, text, err = run_cli(capsys, "run", "--world", "soldier", "--agents", "80", "--ticks", "25", "--warmup",
                              "5", "--quiet", "--plan-budget", "8", "--list-idle", "4", "--json", out,
                              "--planner", "reference")
    assert code == 0, err
    r = json.loads(out.read_text())
    assert set(r["idle_ticks_by_reason"]) == set(IDLE_REASONS)
    idle = sum(r["idle_ticks_by_reason"].values())
    assert r["ticks_counted"] == 20
    assert abs(idle / r["alive_agent_ticks"] - r["idle_fraction"]) < 0.02  # the same agents, the same ticks
    for reason, goals in r["idle_ticks_by_goal"].items():
        assert sum(goals.values()) == r["idle_ticks_by_reason"][reason]
    assert set(r["idle_agents"]) == {*IDLE_REASONS, "action_failed"}
    assert all(len(v) <= 4 for v in r["idle_agents"].values())
    assert "idle agent-ticks" in text and "failed searches by goal" in text
    assert "idle agents (waiting), last tick:" in text
    waited = r["idle_ticks_by_reason"]["waiting"] / r["alive_agent_ticks"]
    assert ("the plan budget (8 a tick) is below" in text) == (waited > 0.02)

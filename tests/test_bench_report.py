"""IPC scores, coverage and labels on a small hand-made table: the arithmetic checked by hand."""

from __future__ import annotations

import math

import pytest

from goap.bench.report import add_scores, agile_score, best_known_costs, coverage_table, quality_score, summarize
from goap.bench.runner import PlannerConfig


def _row(planner, problem, status="ok", cost=None, optimal=None, t=0.5, valid=True, group=None):
    return {"suite": "pddl", "group": group or problem.split("/")[0], "problem": problem, "planner": planner,
            "status": status, "cost": cost, "optimal": optimal, "total_seconds": t, "seconds": t,
            "valid": valid if status == "ok" else None, "timing": "solo"}


# Two domains, three tasks, two planners. a/1 has a known optimum 10; a/2 and b/1 do not (the best plan found
# in the run is the reference cost C*).
TABLE = [
    _row("A", "a/1", cost=10, optimal=10, t=0.5),     # quality 10/10 = 1,        agile 1 (under a second)
    _row("B", "a/1", cost=12.5, optimal=10, t=10),    # quality 10/12.5 = 0.8,    agile 1 - log 10 / log 100 = 0.5
    _row("A", "a/2", cost=8, t=100),                  # quality 6/8 = 0.75,       agile 1 - log 100/log 100 = 0
    _row("B", "a/2", cost=6, t=2),                    # quality 6/6 = 1,          agile 1 - log 2 / log 100
    _row("A", "b/1", status="timeout", t=100),        # 0, 0
    _row("B", "b/1", cost=3, valid=False, t=1),       # invalid plan: 0, 0 (and it does not set C*)
]


def test_best_known_costs():
    best = best_known_costs(TABLE)
    assert best == {("pddl", "a/1"): 10, ("pddl", "a/2"): 6}


def test_scores_by_hand():
    rows = [dict(r) for r in TABLE]
    add_scores(rows, time_limit=100)
    got = {(r["planner"], r["problem"]): (r["quality_score"], r["agile_score"]) for r in rows}
    assert got[("A", "a/1")] == (1.0, 1.0)
    assert got[("B", "a/1")] == pytest.approx((0.8, 0.5))
    assert got[("A", "a/2")] == pytest.approx((0.75, 0.0))
    assert got[("B", "a/2")] == pytest.approx((1.0, 1 - math.log(2) / math.log(100)))
    assert got[("A", "b/1")] == (0.0, 0.0) and got[("B", "b/1")] == (0.0, 0.0)
    summary = {(s["group"], s["planner"]): s for s in summarize(rows)}
    assert summary[("all", "A")]["quality_score"] == pytest.approx(1.75)
    assert summary[("all", "B")]["quality_score"] == pytest.approx(1.8)
    assert summary[("all", "B")]["agile_score"] == pytest.approx(1.5 - math.log(2) / math.log(100))
    assert summary[("a", "A")]["solved"] == 2 and summary[("a", "A")]["optimal"] == 1
    assert summary[("b", "B")]["solved"] == 0 and summary[("b", "B")]["invalid"] == 1
    header, table = coverage_table(summarize(rows))
    assert header == ["domain", "tasks", "A", "B"]
    assert table[0] == ["a", "2", "2 (1)", "2 (0)"] and table[1] == ["b", "1", "0 (0)", "0 (0)"]
    assert table[2] == ["total", "3", "2 (1)", "2 (0)"]
    assert table[4] == ["IPC quality", "", "1.75", "1.80"]


def test_single_scores():
    assert quality_score(_row("A", "x/1", cost=0), 0) == 1.0  # a zero-cost plan of a zero-cost task
    assert quality_score(_row("A", "x/1", status="no_plan"), 5) == 0.0
    assert agile_score(_row("A", "x/1", cost=1, t=1.0), 300) == 1.0
    assert agile_score(_row("A", "x/1", cost=1, t=301), 300) == 0.0
    assert agile_score(_row("A", "x/1", cost=1, t=300), 300) == pytest.approx(0.0)


def test_labels():
    assert PlannerConfig("warp").label == "warp"
    assert PlannerConfig("warp", {"chunk_size": 4, "max_scratch_bytes": 1 << 20}).label == "warp"
    assert PlannerConfig("warp", {"weight": 5, "chunk_size": 4}).label == "warp[weight=5]"
    assert PlannerConfig("warp", {"weight": 1.5, "heuristic": "hmax1"}).label == "warp[heuristic=hmax1,weight=1.5]"

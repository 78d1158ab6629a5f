"""IPC scores, coverage and labels on a small hand-made table: the arithmetic checked by hand; optimal.json read in
both forms, "unknown" where no optimum is known, the CPU model in the metadata."""

from __future__ import annotations

import json
import math
import re

import pytest

from goap.bench.report import (
    add_scores,
    agile_score,
    best_known_costs,
    coverage_table,
    expansion_comparison,
    quality_score,
    summarize,
)
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
    # b/1 has no known optimum: "unknown", not "0 optimal"
    assert table[0] == ["a", "2", "2 (1)", "2 (0)"] and table[1] == ["b", "1", "0 (unknown)", "0 (unknown)"]
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


# --- optimal.json, unknown optima, run metadata ----------------------------------------------------------------
TASKS = ["blocks/task01", "blocks/task02", "gripper/task01"]


@pytest.mark.parametrize("doc", [
    {"blocks/task01.pddl": 6, "blocks/task02": 10.5, "gripper/task01": None},
    {"problems": {"blocks/task01.pddl": {"optimal_cost": 6, "plan": []}, "blocks/task02.pddl": {"optimal_cost": 10.5},
                  "gripper/task01.pddl": {"optimal_cost": None, "status": "timeout"}}, "meta": {"note": "x"}},
    {"blocks/task01": {"optimal_cost": 6}, "blocks/task02.pddl": {"optimal_cost": 10.5}},
])
def test_optimal_json_both_forms(tmp_path, doc):
    from goap.bench.suites import read_optima

    path = tmp_path / "optimal.json"
    path.write_text(json.dumps(doc))
    optima, warnings = read_optima(path, TASKS)
    assert optima.get("blocks/task01") == 6.0 and optima.get("blocks/task02") == 10.5
    assert optima.get("gripper/task01") is None and warnings == []


def test_optimal_json_entry_matching_no_task_is_a_warning(tmp_path):
    from goap.bench.suites import read_optima

    path = tmp_path / "optimal.json"
    path.write_text(json.dumps({"blocks/task01.pddl": 6, "blocks/task1": 7, "blokcs/task02.pddl": 3}))
    optima, warnings = read_optima(path, TASKS)
    assert optima == {"blocks/task01": 6.0}
    assert len(warnings) == 1 and "2 entries match no task" in warnings[0]
    assert "'blocks/task1'" in warnings[0] and "'blokcs/task02.pddl'" in warnings[0] and str(path) in warnings[0]
    assert read_optima(tmp_path / "missing.json", TASKS) == ({}, [])


@pytest.mark.parametrize(("doc", "message"), [
    ({"blocks/task01.pddl": "six"}, "entry 'blocks/task01.pddl': the optimal cost must be a number"),
    ({"blocks/task01.pddl": -1}, "must be a number >= 0"),
    ({"blocks/task01.pddl": True}, "must be a number"),
    ([6, 10], "expected an object"),
])
def test_optimal_json_bad_entries_name_the_file_and_entry(tmp_path, doc, message):
    from goap.bench.suites import read_optima

    path = tmp_path / "optimal.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=re.escape(message)) as e:
        read_optima(path, TASKS)
    assert str(path) in str(e.value)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="cannot read the optima"):
        read_optima(path, TASKS)


def test_tables_say_unknown_without_optima():
    import io

    from goap.bench.report import print_summary

    rows = [_row("A", "x/1", cost=3, group="x"), _row("A", "x/2", cost=4, group="x"),
            _row("A", "y/1", cost=5, optimal=5, group="y")]
    add_scores(rows, time_limit=10)
    summary = summarize(rows)
    buf = io.StringIO()
    print_summary(summary, file=buf)
    lines = {line.split()[1]: line.split() for line in buf.getvalue().splitlines()[2:]}
    assert "unknown" in lines["x"] and "0/0" not in lines["x"] and "1/1" in lines["y"]
    _, table = coverage_table(summary)
    assert table[0] == ["x", "2", "2 (unknown)"] and table[1] == ["y", "1", "1 (1)"]


def test_cpu_model_is_the_model_name():
    from pathlib import Path

    from goap.bench.report import cpu_model, run_metadata

    info = Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in info.read_text().splitlines()
             if line.startswith("model name")] if info.is_file() else []
    if names:
        assert cpu_model() == names[0]
    assert run_metadata()["host"]["processor"] == cpu_model()


def test_expansions_against_an_external_planner():
    def row(planner, problem, before, total, status="ok", timing="solo"):
        r = _row(planner, problem, status=status, cost=3.0)
        r.update(expanded_before_last_f=before, expanded=total, timing=timing)
        return r

    rows = [
        row("fd", "p1", 10, 12, timing="process"), row("fd", "p2", 5, 9, timing="process"),
        row("fd", "p3", 7, 7, timing="process"), row("fd", "p4", 1, 1, status="timeout", timing="process"),
        row("warp", "p1", 10, 30),  # equal until the last layer, more in all (ties broken worse)
        row("warp", "p2", 6, 6),  # one more until the last layer, fewer in all
        row("warp", "p3", 3, 4),
        row("warp", "p4", 0, 2),  # the baseline did not solve it: not compared
        row("hda", "p1", None, 8),  # no count kept: not compared
    ]
    (c,) = expansion_comparison(rows)
    assert (c["planner"], c["against"], c["tasks"]) == ("warp", "fd", 3)
    assert c["at_most_before_last_f"] == 2 and c["at_most_expanded"] == 2
    assert c["median_ratio_before_last_f"] == pytest.approx(1.0)  # ratios 11/11, 7/6, 4/8

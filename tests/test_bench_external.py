"""External planners under `goap bench`: a fake planner script (so CI needs no Fast Downward), limits enforced,
every plan validated, an invalid plan counted invalid."""

from __future__ import annotations

import json
import sys
import time

import pytest

from goap.bench.cli import build_parser, run
from goap.bench.external import ExternalPlanner, parse_external, run_external
from tests.conftest import PDDL_DIR, ROOT

FAKE = ROOT / "tests" / "fixtures" / "fake_planner.py"
GRIPPER = PDDL_DIR / "gripper"


def _plan_file(tmp_path, drop_last: bool = False):
    steps = json.loads((PDDL_DIR / "optimal.json").read_text())["problems"]["gripper/task01.pddl"]["plan"]
    path = tmp_path / ("bad.plan" if drop_last else "good.plan")
    path.write_text("\n".join(steps[:-1] if drop_last else steps) + "\n; cost = 11 (unit cost)\n")
    return path


def _fake(mode: str) -> ExternalPlanner:
    return ExternalPlanner("fake", (sys.executable, str(FAKE), mode, "{domain}", "{problem}", "{plan}"))


def _texts():
    return (GRIPPER / "domain.pddl").read_text(), (GRIPPER / "task01.pddl").read_text()


def test_good_plan(tmp_path):
    res = run_external(_fake(f"copy:{_plan_file(tmp_path)}"), *_texts(), time_limit=30)
    assert res.status == "ok" and len(res.plan) == 11 and res.expanded == 7
    assert res.expanded_before_last_f == 3  # the log's "Expanded until last jump", not its total


def test_wall_time_limit_kills_the_process_group(tmp_path):
    t0 = time.perf_counter()
    res = run_external(_fake("sleep:30"), *_texts(), time_limit=0.5)
    assert res.status == "timeout" and res.plan is None
    assert 0.5 <= res.seconds < 10 and time.perf_counter() - t0 < 10


def test_memory_limit(tmp_path):
    res = run_external(_fake("alloc:2000"), *_texts(), time_limit=30, memory_limit=256 << 20)
    assert res.status == "memout" and res.plan is None
    ok = run_external(_fake("alloc:20"), *_texts(), time_limit=30, memory_limit=256 << 20)
    assert ok.status == "ok" and ok.plan == []


@pytest.mark.parametrize(("mode", "status"), [("crash", "error"), ("none", "no_plan"), ("garbage", "error")])
def test_failures(mode, status):
    res = run_external(_fake(mode), *_texts(), time_limit=30)
    assert res.status == status and res.plan is None


def test_parse_external():
    p = parse_external("mine=python -m x --plan {plan} {domain} {problem}")
    assert p.name == "mine" and p.command == ("python", "-m", "x", "--plan", "{plan}", "{domain}", "{problem}")
    for bad, message in [("mine", "expected NAME="), ("m/x=a {domain} {problem} {plan}", "letters, digits"),
                         ("m=a {domain} {plan}", "must contain {problem}")]:
        with pytest.raises(ValueError, match=message):
            parse_external(bad)


def _bench(tmp_path, mode: str, *extra: str):
    out = tmp_path / "out.json"
    argv = ["--suite", "pddl", "--tasks-dir", str(PDDL_DIR), "--domains", "gripper", "--tasks", "task01",
            "--planners", "warp,fake", "--device", "cpu", "--external",
            f"fake={sys.executable} {FAKE} {mode} {{domain}} {{problem}} {{plan}}", "--json", str(out), "--quiet",
            *extra]
    assert run(build_parser().parse_args(argv)) == 0
    return json.loads(out.read_text())


def test_bench_counts_an_invalid_plan_invalid(tmp_path):
    data = _bench(tmp_path, f"copy:{_plan_file(tmp_path, drop_last=True)}")
    rows = {r["planner"]: r for r in data["results"]}
    fake = rows["fake"]
    assert fake["valid"] is False and "the goal" in fake["invalid_reason"] and fake["timing"] == "process"
    assert rows["warp"]["valid"] is True and rows["warp"]["cost"] == 11
    summary = {s["planner"]: s for s in data["summary"]}
    assert summary["fake"]["solved"] == 0 and summary["fake"]["invalid"] == 1 and summary["fake"]["quality_score"] == 0
    assert summary["warp"]["solved"] == 1 and summary["warp"]["valid"] == 1
    assert data["meta"]["external"]["fake"]["command"][0] == sys.executable


def test_bench_good_external_plan_scores(tmp_path):
    data = _bench(tmp_path, f"copy:{_plan_file(tmp_path)}")
    fake = next(r for r in data["results"] if r["planner"] == "fake")
    assert fake["valid"] is True and fake["cost"] == 11 and fake["optimal"] == 11 and fake["quality_score"] == 1.0
    steps = json.loads((PDDL_DIR / "optimal.json").read_text())["problems"]["gripper/task01.pddl"]["plan"]
    assert fake["plan"] == [s.lower() for s in steps]


def test_bench_time_limit_holds_for_external_planners(tmp_path):
    data = _bench(tmp_path, "sleep:30", "--time-limit", "0.5")
    fake = next(r for r in data["results"] if r["planner"] == "fake")
    assert fake["status"] == "timeout" and fake["total_seconds"] < 10


def test_peak_memory_is_the_child_own(tmp_path):
    small = run_external(_fake("alloc:1"), *_texts(), time_limit=30, memory_limit=1 << 30)
    big = run_external(_fake("alloc:120"), *_texts(), time_limit=30, memory_limit=1 << 30)
    assert small.status == big.status == "ok"
    assert big.peak_rss_bytes >= 120 << 20
    # the child's own, not the largest child this process had, nor the memory it inherits when forked from a
    # large process (the bench's): a small run after the big one, from a process holding 300 MB more
    ballast = bytearray(300 << 20)
    again = run_external(_fake("alloc:1"), *_texts(), time_limit=30, memory_limit=1 << 30)
    del ballast
    assert again.status == "ok" and 0 < again.peak_rss_bytes < 100 << 20 and small.peak_rss_bytes < 100 << 20


#: The lines of a Fast Downward 24 log (up-fast-downward 1.0.0, blocks/task05) that state its parts.
FD_LOG = """\
INFO     Running translator.
Parsing...
Parsing: [0.010s CPU, 0.006s wall-clock]
Writing output... [0.000s CPU, 0.001s wall-clock]
Done! [0.020s CPU, 0.035s wall-clock]
translate exit code: 0
INFO     Running search (release).
[t=0.002885s, 10544 KB] Actual search time: 0.000684s
[t=0.002903s, 10544 KB] Search time: 0.000888s
[t=0.002903s, 10544 KB] Total time: 0.002903s
Solution found.
INFO     Planner time: 0.17s
"""


def test_fast_downward_log_gives_translator_and_search_apart():
    from goap.bench.external import log_phases

    assert log_phases(FD_LOG) == {"translate_seconds": 0.035, "search_seconds": 0.002903,
                                  "search_only_seconds": 0.000888}
    assert log_phases("some other planner's log\nSolution found.\n") == {}

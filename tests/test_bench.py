"""``goap bench`` end to end on tiny suites: files written whole with the documented keys, clear errors."""

from __future__ import annotations

import csv
import json

import pytest

from goap.bench.cli import build_parser, planner_options, run
from tests.conftest import PDDL_DIR

ROW = {"suite", "group", "problem", "planner", "status", "cost", "expanded", "seconds"}
SUMMARY = {"suite", "group", "planner", "problems", "solved", "optimal", "valid", "invalid", "quality_score",
           "agile_score", "mean_cost_ratio", "median_s", "p95_s", "timing"}


def _run(*argv: str) -> int:
    return run(build_parser().parse_args([*argv, "--quiet"]))


def _read(tmp_path):
    data = json.loads((tmp_path / "out.json").read_text())
    with open(tmp_path / "out.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return data, rows


def test_pddl_suite(tmp_path):
    out = ["--json", str(tmp_path / "out.json"), "--csv", str(tmp_path / "out.csv")]
    assert _run("--suite", "pddl", "--tasks-dir", str(PDDL_DIR), "--domains", "gripper", "--tasks", "01",
                "--planners", "reference,warp", "--device", "cpu", *out) == 0
    data, rows = _read(tmp_path)
    assert {(r["problem"], r["planner"]) for r in data["results"]} == {
        ("gripper/task01", "reference"), ("gripper/task01", "warp")
    }
    for r in data["results"]:
        assert ROW <= set(r)
        assert r["status"] == "ok" and r["cost"] == 11 and r["optimal"] == 11 and r["suite"] == "pddl"
        assert r["valid"] is True and len(r["plan"]) == 11 and r["plan"][0].startswith("(")
        assert r["timing"] == "solo" and r["total_seconds"] == pytest.approx(r["seconds"] + r["ground_seconds"])
    assert len(rows) == 2 and ROW <= set(rows[0])
    assert {(r["problem"], r["planner"], r["status"]) for r in rows} == {
        ("gripper/task01", "reference", "ok"), ("gripper/task01", "warp", "ok")
    }
    summary = {s["planner"]: s for s in data["summary"]}
    assert SUMMARY <= set(summary["warp"])
    assert summary["warp"]["solved"] == summary["warp"]["optimal"] == 1
    assert summary["reference"]["mean_cost_ratio"] == 1.0
    meta = data["meta"]
    assert meta["max_nodes"] == 1_000_000 and meta["max_plan_length"] == 256
    assert meta["versions"]["numpy"] and meta["host"]["cpus"] and "time_utc" in meta
    assert meta["git"] is None or len(meta["git"]["revision"]) == 40
    # the settings the planners ran with, defaults included: the PDDL heuristic though no option named it
    assert meta["planner_options"] == {"reference": {}, "warp": {}}
    for name in ("reference", "warp"):
        effective = meta["planner_settings"][name]
        assert effective["heuristic"] == "lmcut" and effective["max_nodes"] == 1_000_000 and effective["weight"] == 1
        # the PDDL defaults with LM-cut, though no option named them
        assert (effective["lmcut_zone_ties"], effective["lmcut_ties"]) == ("auto", "auto")
    assert meta["planner_settings"]["warp"]["class"] == "goap.planners.warp_astar:WarpAStarPlanner"
    assert all(r["peak_rss_bytes"] > 1 << 20 for r in data["results"])
    assert rows[0]["plan"].startswith("(")
    assert not list(tmp_path.glob("*.tmp"))


def test_random_suite(tmp_path):
    out = ["--json", str(tmp_path / "out.json"), "--csv", str(tmp_path / "out.csv")]
    assert _run("--suite", "random", "--facts", "16", "--problems", "20", "--planners", "reference,warp",
                "--device", "cpu", *out) == 0
    data, rows = _read(tmp_path)
    assert len(data["results"]) == len(rows) == 40
    assert {(r["problem"], r["planner"]) for r in data["results"]} == {
        (f"16f/{i}", p) for i in range(20) for p in ("reference", "warp")
    }
    by = {(r["problem"], r["planner"]): r for r in data["results"]}
    for i in range(20):  # the planners agree exactly (the Warp planner follows the reference node for node)
        ref, warp = by[(f"16f/{i}", "reference")], by[(f"16f/{i}", "warp")]
        assert (ref["status"], ref["cost"], ref["expanded"]) == (warp["status"], warp["cost"], warp["expanded"])
    # the batched planner's rows say what their time is: the batch's time over its problems, not a measurement
    assert all(r["batch"] == 20 and r["timing"] == "batch/n" for r in data["results"] if r["planner"] == "warp")
    assert all(r["valid"] is True for r in data["results"] if r["status"] == "ok")
    summary = {s["planner"]: s for s in data["summary"]}
    assert all(SUMMARY <= set(s) for s in summary.values())
    # the optimum of a random problem is the reference's cost: the Warp planner is judged against it,
    # the reference is not judged against itself
    assert summary["warp"]["optimal"] == summary["warp"]["optimum_known"] == summary["warp"]["solved"] > 0
    assert summary["reference"]["optimum_known"] == 0 and summary["reference"]["mean_cost_ratio"] is None


def test_world_suite(tmp_path):
    assert _run("--suite", "world:soldier", "--agents", "16", "--ticks", "5", "--problems", "10",
                "--planners", "reference,warp", "--device", "cpu", "--json", str(tmp_path / "w.json")) == 0
    data = json.loads((tmp_path / "w.json").read_text())
    problems = {r["problem"] for r in data["results"]}
    assert 0 < len(problems) <= 10 and all(p.startswith("soldier/t") for p in problems)
    assert len(data["results"]) == 2 * len(problems)


def test_reference_time_limit(tmp_path):
    # gripper/task03 takes the reference far longer than 0.05 s: interrupted, reported as a timeout
    assert _run("--suite", "pddl", "--tasks-dir", str(PDDL_DIR), "--domains", "gripper", "--tasks", "task03",
                "--planners", "reference", "--time-limit", "0.05", "--json", str(tmp_path / "t.json")) == 0
    (row,) = json.loads((tmp_path / "t.json").read_text())["results"]
    assert row["status"] == "timeout" and row["cost"] is None and row["seconds"] < 5


def test_solo_times_each_problem_alone(tmp_path):
    assert _run("--suite", "random", "--facts", "16", "--problems", "6", "--planners", "warp", "--device", "cpu",
                "--solo", "--json", str(tmp_path / "s.json")) == 0
    rows = json.loads((tmp_path / "s.json").read_text())["results"]
    assert len(rows) == 6 and all(r["timing"] == "solo" and r["batch"] == 1 for r in rows)
    assert len({r["seconds"] for r in rows}) > 1  # six measurements, not one average copied six times


def test_a_result_past_the_limit_is_a_timeout(tmp_path):
    # A Warp search cannot be interrupted; one that ends after the limit is still a timeout (its outcome kept).
    assert _run("--suite", "pddl", "--tasks-dir", str(PDDL_DIR), "--domains", "gripper", "--tasks", "task01",
                "--planners", "warp", "--device", "cpu", "--time-limit", "1e-9", "--in-process",
                "--json", str(tmp_path / "t.json")) == 0
    (row,) = json.loads((tmp_path / "t.json").read_text())["results"]
    assert row["status"] == "timeout" and row["late_status"] == "ok"
    summary = json.loads((tmp_path / "t.json").read_text())["summary"]
    assert summary[0]["solved"] == 0 and summary[0]["agile_score"] == 0


def test_isolated_search_is_killed_at_the_limit(tmp_path):
    # depot/task03 takes the Warp planner minutes on this machine; isolated (the pddl default), it is stopped
    import time

    t0 = time.perf_counter()
    assert _run("--suite", "pddl", "--tasks-dir", str(PDDL_DIR), "--domains", "depot", "--tasks", "task03",
                "--planners", "warp", "--device", "cpu", "--time-limit", "1", "--json", str(tmp_path / "k.json")) == 0
    data = json.loads((tmp_path / "k.json").read_text())
    (row,) = data["results"]
    assert row["status"] == "timeout" and row["late_status"] is None and row["total_seconds"] < 5
    assert data["meta"]["isolate"] is True and time.perf_counter() - t0 < 120


def test_algorithm_option_changes_the_label(tmp_path):
    assert _run("--suite", "random", "--facts", "16", "--problems", "4", "--planners", "warp", "--device", "cpu",
                "--planner-option", "weight=5", "--planner-option", "chunk_size=1", "--json",
                str(tmp_path / "w.json")) == 0
    data = json.loads((tmp_path / "w.json").read_text())
    assert {r["planner"] for r in data["results"]} == {"warp[weight=5]"}  # chunk_size changes no result
    assert data["meta"]["planner_options"] == {"warp[weight=5]": {"weight": 5, "chunk_size": 1}}


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--planners", "reference,nope"], "unknown planner 'nope'"),
        (["--suite", "pddl", "--domains", "nope"], "unknown PDDL domain 'nope'"),
        (["--suite", "nope"], "unknown suite 'nope'"),
        (["--suite", "world:nope"], "unknown world"),
        (["--suite", "random", "--facts", "1"], "--facts"),
        (["--suite", "random", "--facts", "a,b"], "--facts"),
        (["--planner-option", "weight"], "KEY=VALUE"),
        (["--planner-option", "other:weight=2"], "not in --planners"),
        (["--suite", "random", "--facts", "16", "--problems", "2", "--planners", "warp", "--device", "cpu",
          "--planner-option", "no_such_option=1"], "does not take"),
        (["--suite", "pddl", "--tasks-dir", "/nonexistent"], "no PDDL task folder"),
        (["--planners", "warp", "--planner-option", 'chunk_size="abc"'], "chunk_size: expected a positive integer"),
        (["--planners", "warp", "--planner-option", "max_scratch_bytes=-1"], "max_scratch_bytes: expected a positive"),
        (["--planners", "warp", "--planner-option", "weight=0.5"], "weight: expected a finite number >= 1"),
        (["--planners", "warp,fd-lmcut", "--suite", "random"], "external planners read PDDL files"),
        (["--external", "x=run {domain} {problem}"], "must contain {plan}"),
        (["--json", "/nonexistent/dir/out.json"], "no such directory"),
        (["--planners", "warp", "--scatter", "warp,nope"], "--scatter"),
    ],
)
def test_bad_arguments(argv, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        run(build_parser().parse_args([*argv, "--quiet", *(["--tasks-dir", str(PDDL_DIR)]
                                                           if "--domains" in argv else [])]))


def test_planner_options_parse():
    opts = planner_options(["weight=1.5", "warp:greedy=true", "heuristic=hmax"], ["reference", "warp"])
    assert opts == {"reference": {"weight": 1.5, "heuristic": "hmax"},
                    "warp": {"weight": 1.5, "greedy": True, "heuristic": "hmax"}}


def test_plot_needs_matplotlib(tmp_path):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="matplotlib"):
            _run("--suite", "random", "--facts", "16", "--problems", "2", "--plot", str(tmp_path / "p.png"))
    else:
        assert _run("--suite", "random", "--facts", "16", "--problems", "4", "--planners", "reference",
                    "--plot", str(tmp_path / "p.png")) == 0
        assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_selector_comparison_on_a_world(tmp_path):
    out = ["--json", str(tmp_path / "out.json"), "--csv", str(tmp_path / "out.csv")]
    assert _run("--suite", "world:soldier", "--selectors", "priority", "--agents", "40", "--ticks", "30",
                "--planners", "warp", "--device", "cpu", *out) == 0
    data, rows = _read(tmp_path)
    (row,) = data["results"]
    assert row["selector"] == "priority" and row["planner"] == "warp" and row["ticks"] == 30
    assert row["goals_achieved"] > 0
    assert row["planning_calls_per_goal"] >= row["failed_plans_per_goal"] >= 0
    assert row["goals_per_agent_minute"] == pytest.approx(row["goals_achieved"] / 40 / (30 / 60))
    assert rows[0]["selector"] == "priority" and "score_kills_team0" in rows[0]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--suite", "world:soldier", "--selectors", "utility"], "needs --model"),
        (["--suite", "world:soldier", "--selectors", "clever"], "unknown selector 'clever'"),
        (["--suite", "random", "--selectors", "priority"], "use --suite world:NAME"),
        (["--suite", "world:moon", "--selectors", "priority"], "unknown world 'moon'"),
    ],
)
def test_selector_comparison_bad_arguments(argv, message):
    with pytest.raises(ValueError, match=message):
        _run(*argv, "--agents", "5", "--ticks", "1", "--device", "cpu")


def test_ray_missing_is_a_clear_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(ValueError, match=r'--ray needs Ray: pip install -e "\.\[scale\]"'):
        _run("--suite", "random", "--facts", "16", "--problems", "2", "--planners", "reference", "--ray")


def test_subcommand_modules_do_not_import_the_cli():
    import subprocess
    import sys

    code = ("import sys, goap.bench.cli, goap.bench.sweep, goap.bench.runner, goap.bench.report, goap.pddl.commands; "
            "assert 'goap.cli' not in sys.modules, 'goap.cli imported'")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).returncode == 0
    out = subprocess.run([sys.executable, "-m", "goap.bench", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "--tasks-dir" in out.stdout


def test_isolated_worker_out_of_memory_is_memout(tmp_path):
    # 64 MiB of address space is not enough to start the worker: its task is reported memout, not a crash
    assert _run("--suite", "pddl", "--tasks-dir", str(PDDL_DIR), "--domains", "gripper", "--tasks", "task01",
                "--planners", "warp", "--device", "cpu", "--memory-limit", "64M",
                "--json", str(tmp_path / "m.json")) == 0
    (row,) = json.loads((tmp_path / "m.json").read_text())["results"]
    assert row["status"] == "memout" and row["valid"] is None


def test_sweep_grid(tmp_path):
    from goap.bench.sweep import build_parser as sweep_parser
    from goap.bench.sweep import run as sweep_run

    argv = ["--world", "soldier", "--agents", "8,12", "--plan-budget", "4,8", "--seeds", "3", "--ticks", "2",
            "--device", "cpu", "--quiet", "--json", str(tmp_path / "s.json"), "--csv", str(tmp_path / "s.csv")]
    assert sweep_run(sweep_parser().parse_args(argv)) == 0
    rows = json.loads((tmp_path / "s.json").read_text())["results"]
    assert [(r["agents"], r["plan_budget"], r["seed"], r["ticks"]) for r in rows] == [
        (8, 4, 3, 2), (8, 8, 3, 2), (12, 4, 3, 2), (12, 8, 3, 2)
    ]
    with open(tmp_path / "s.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 4
    with pytest.raises(ValueError, match="unknown world"):
        sweep_run(sweep_parser().parse_args(["--world", "moon", "--quiet"]))


def test_tasks_dir_reads_a_plain_optimal_json_and_warns_about_strays(tmp_path, capsys):
    tasks = tmp_path / "tasks"
    (tasks / "gripper").mkdir(parents=True)
    for name in ("domain.pddl", "task01.pddl"):
        (tasks / "gripper" / name).write_text((PDDL_DIR / "gripper" / name).read_text())
    out = ["--tasks-dir", str(tasks), "--planners", "warp", "--device", "cpu", "--in-process"]
    # no optimal.json: the optimum is unknown, and the table says so
    assert run(build_parser().parse_args(["--suite", "pddl", *out, "--json", str(tmp_path / "a.json")])) == 0
    printed = capsys.readouterr().out
    assert "unknown" in printed and "0/0" not in printed
    assert json.loads((tmp_path / "a.json").read_text())["results"][0]["optimal"] is None
    (tasks / "optimal.json").write_text(json.dumps({"gripper/task01.pddl": 11, "gripper/task02.pddl": 17}))
    assert _run("--suite", "pddl", *out, "--json", str(tmp_path / "b.json")) == 0
    err = capsys.readouterr().err
    assert "goap: warning:" in err and "'gripper/task02.pddl'" in err and "match no task" in err
    row = json.loads((tmp_path / "b.json").read_text())["results"][0]
    assert row["optimal"] == 11 and row["cost"] == 11


def test_from_json_merges_runs_split_by_domain(tmp_path, capsys):
    """Two runs over different domains, merged: the tables of one run over both, the rows of both, nothing run."""
    for domain in ("gripper", "blocks"):
        assert _run("--suite", "pddl", "--tasks-dir", str(PDDL_DIR), "--domains", domain, "--tasks", "01",
                    "--planners", "reference,warp", "--device", "cpu", "--time-limit", "60",
                    "--json", str(tmp_path / f"{domain}.json")) == 0
    parts = [json.loads((tmp_path / f"{d}.json").read_text()) for d in ("gripper", "blocks")]
    merged = tmp_path / "merged.json"
    assert run(build_parser().parse_args(["--from-json", str(tmp_path / "gripper.json"), str(tmp_path / "blocks.json"),
                                          "--json", str(merged), "--csv", str(tmp_path / "m.csv")])) == 0
    printed = capsys.readouterr().out
    assert "gripper" in printed and "blocks" in printed and "total" in printed
    doc = json.loads(merged.read_text())
    assert [(r["problem"], r["planner"]) for r in doc["results"]] == [
        (r["problem"], r["planner"]) for p in parts for r in p["results"]]
    totals = {s["planner"]: s for s in doc["summary"] if s["group"] == "all"}
    assert totals["warp"]["problems"] == 2 and totals["warp"]["solved"] == 2
    assert doc["meta"]["time_limit"] == 60 and doc["meta"]["planners"] == ["reference", "warp"]
    with open(tmp_path / "m.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 4


def test_from_json_bad_files_are_clear_errors(tmp_path):
    good = tmp_path / "a.json"
    assert _run("--suite", "pddl", "--tasks-dir", str(PDDL_DIR), "--domains", "gripper", "--tasks", "01",
                "--planners", "warp", "--device", "cpu", "--time-limit", "60", "--json", str(good)) == 0
    other = tmp_path / "b.json"
    doc = json.loads(good.read_text())
    doc["meta"]["time_limit"] = 30
    other.write_text(json.dumps(doc))
    broken = tmp_path / "c.json"
    broken.write_text('{"results": [')
    bad_row = tmp_path / "d.json"
    bad_row.write_text('{"results": [{"planner": "warp"}]}')
    bad_number = tmp_path / "e.json"
    row = dict(doc["results"][0], total_seconds="fast")
    bad_number.write_text(json.dumps({"results": [row]}))
    for files, message in (([good, good], "is in"), ([good, other], "different time limits"),
                           ([broken], "c.json: not a goap bench JSON"), ([bad_row], "d.json: result 0"),
                           ([bad_number], "e.json: result 0: not a number \\(or null\\): total_seconds"),
                           ([tmp_path / "none.json"], "none.json: cannot read")):
        with pytest.raises(ValueError, match=message):
            run(build_parser().parse_args(["--from-json", *map(str, files), "--quiet"]))


def test_pattern_database_builds_count_as_the_tasks_time(tmp_path, monkeypatch):
    """Kernel loading is set apart from a task's time; building its pattern databases is not (a baseline's
    heuristic construction counts in its time too)."""
    import time as clock

    import goap.planners.warp_astar as wa

    built = []

    def slow_tables(*args, **kwargs):
        if args[1]:  # a goal table's patterns (not the empty lookup of other heuristics)
            clock.sleep(0.5)
            built.append(1)
        return real(*args, **kwargs)

    real = wa.pattern_tables
    monkeypatch.setattr(wa, "pattern_tables", slow_tables)
    out = tmp_path / "out.json"
    assert _run("--suite", "pddl", "--tasks-dir", str(PDDL_DIR), "--domains", "gripper", "--tasks", "01",
                "--planners", "warp[heuristic=pdb]", "--device", "cpu", "--in-process", "--json", str(out)) == 0
    (row,) = json.loads(out.read_text())["results"]
    assert built and row["status"] == "ok"
    assert row["heuristic_seconds"] >= 0.5 and row["total_seconds"] >= row["heuristic_seconds"] + row["seconds"]

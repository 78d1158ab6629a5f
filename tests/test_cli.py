"""The `goap` command end to end: exit codes, output formats, errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from goap.domain_file import load_domain
from tests.conftest import brute_force_cost, run_cli

DOMAIN = """\
name = "mini"

[facts]
armed = false
ammo = { type = "int", min = 0, max = 3, default = 0 }
enemy = true
at = { type = "enum", values = ["base", "front"] }
radio = false

[actions.arm]
cost = 1
effects = { armed = true }

[actions.load]
cost = 2
pre = { armed = true, ammo = "< 3" }
effects = { ammo = "+= 2" }

[actions.go]
cost = 3
pre = { at = "base" }
effects = { at = "front" }

[actions.shoot]
cost = 1
pre = { armed = true, ammo = ">= 1", at = "front" }
effects = { ammo = "-= 1", enemy = false }

[goals.win]
priority = 5
want = { enemy = false }

[goals.call]
priority = 1
want = { radio = true }
"""

PROBLEMS = [
    {"id": "p1", "start": {}, "goal": "win"},
    {"id": "p2", "start": {"armed": True, "ammo": 2, "at": "front"}, "goal": "win"},
    {"id": "p3", "start": {"enemy": False}, "goal": "win"},
    {"id": "p4", "start": {}, "goal": {"ammo": ">= 3", "at": "front"}},
    {"id": "p5", "start": {}, "goal": "call"},
]


@pytest.fixture
def files(tmp_path):
    domain = tmp_path / "mini.toml"
    domain.write_text(DOMAIN)
    problems = tmp_path / "problems.jsonl"
    problems.write_text("\n".join(json.dumps(p) for p in PROBLEMS) + "\n")
    return domain, problems


run = run_cli  # the goap command in-process


@pytest.mark.parametrize("planner", ["reference", "warp"])
def test_solve_prints_optimal_plans_in_order(capsys, files, planner):
    domain_path, problems = files
    code, out, err = run(capsys, "solve", domain_path, "--problems", problems, "--planner", planner, "--device", "cpu")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in rows] == ["p1", "p2", "p3", "p4", "p5"]
    assert [r["status"] for r in rows] == ["ok", "ok", "satisfied", "ok", "no_plan"]
    domain = load_domain(domain_path)
    for r, p in zip(rows[:2], PROBLEMS[:2], strict=True):
        start = domain.state(p["start"])
        expected = brute_force_cost(domain, start, domain.goals[domain.goal_index(p["goal"])])
        assert r["cost"] == expected
        end = domain.replay(start, r["plan"])
        assert domain.satisfies(end, domain.goals[domain.goal_index("win")].want)
    assert sorted(rows[0]["plan"]) == ["arm", "go", "load", "shoot"]
    assert rows[3]["cost"] == 1 + 2 + 2 + 3 and rows[4]["cost"] is None


def test_solve_stats_is_the_last_stderr_line(capsys, files):
    domain, problems = files
    code, _, err = run(capsys, "solve", domain, "--problems", problems, "--stats")
    stats = json.loads(err.strip().splitlines()[-1])
    assert code == 0 and stats["plans"] == 5 and stats["plan_seconds"] > 0
    assert stats["planner"] == "reference"  # the default for a goap domain file (a PDDL pair defaults to warp)
    assert stats["plans_per_second"] == pytest.approx(5 / stats["plan_seconds"], rel=0.01)


@pytest.mark.parametrize(
    ("bad_line", "needle"),
    [
        ("{not json", "malformed JSON"),
        ('{"id": "x", "start": {"ammmo": 1}, "goal": "win"}', "unknown fact 'ammmo'"),
        ('{"id": "x", "start": {"ammo": 9}, "goal": "win"}', "out of range"),
        ('{"id": "x", "start": {}, "goal": "dance"}', "unknown goal 'dance'"),
        ('{"id": "x", "start": {}}', "missing 'goal'"),
        ('{"id": "x", "start": {}, "goal": {"ammo": "~2"}}', "cannot parse condition"),
    ],
)
def test_solve_bad_problem_line_names_the_line_and_writes_nothing(capsys, files, bad_line, needle):
    domain, problems = files
    lines = problems.read_text().splitlines()
    lines.insert(2, bad_line)
    problems.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "solve", domain, "--problems", problems)
    assert code == 1 and out == ""
    assert f"{problems}:3:" in err and needle in err and "Traceback" not in err


def test_validate_ok_and_warnings(capsys, files):
    domain, _ = files
    code, out, _ = run(capsys, "validate", domain)
    assert code == 0 and "is valid" in out
    assert "goal 'call' can never be reached" in out
    assert "no action changes fact 'radio'" in out
    code, _, _ = run(capsys, "validate", domain, "--strict")
    assert code == 1


def test_validate_bad_domain(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(DOMAIN.replace("cost = 2", "cost = -2"))
    code, out, err = run(capsys, "validate", bad)
    line = DOMAIN.splitlines().index("cost = 2") + 1
    assert code == 1 and f"{bad}:{line}: action 'load': cost must be" in err


def test_describe_shows_layout_and_memory(capsys, files):
    domain, _ = files
    code, out, _ = run(capsys, "describe", domain)
    assert code == 0
    fact_rows = {line.split()[0]: line.split() for line in out.splitlines() if line.split()}
    assert fact_rows["ammo"][1:4] == ["int", "0..3", "0"]
    assert fact_rows["at"][2] == "base|front"
    assert "bytes per agent" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["solve", "x.toml", "--problems", "p", "--planner", "nope"],
        ["solve", "x.toml", "--problems", "p", "--max-nodes", "0"],
        ["frobnicate"],
        [],
    ],
)
def test_bad_arguments_exit_2(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert code == 2 and "goap: error:" in err


def test_bad_device_is_an_error_not_a_traceback(capsys, files):
    domain, problems = files
    code, out, err = run(capsys, "solve", domain, "--problems", problems, "--planner", "warp", "--device", "cuda:9")
    assert code == 1 and out == "" and "device" in err


def test_console_script_runs_as_a_subprocess(files):
    domain, _ = files
    r = subprocess.run([sys.executable, "-m", "goap.cli", "validate", str(domain) + ".missing.toml"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "no such file" in r.stderr and "Traceback" not in r.stderr


def test_run_writes_summary_json_and_is_deterministic(capsys, tmp_path):
    hashes = []
    for k in range(2):
        out = tmp_path / f"run{k}.json"
        code, text, err = run(capsys, "run", "--world", "soldier", "--agents", "60", "--ticks", "15", "--seed", "3",
                              "--device", "cpu", "--warmup", "5", "--json", out, "--quiet")
        assert code == 0, err
        result = json.loads(out.read_text())
        for key in ("ms_per_tick", "ticks_per_second", "stages", "counters", "score", "state_hash"):
            assert key in result
        assert set(result["ms_per_tick"]) == {"mean", "p95"} and result["ticks"] == 15
        assert result["counters"]["plans_made"] > 0
        assert f"state hash {result['state_hash']}" in text
        hashes.append(result["state_hash"])
    assert hashes[0] == hashes[1]
    code, _, _ = run(capsys, "run", "--world", "soldier", "--agents", "60", "--ticks", "15", "--seed", "4",
                     "--device", "cpu", "--quiet", "--json", tmp_path / "other.json")
    assert json.loads((tmp_path / "other.json").read_text())["state_hash"] != hashes[0]


@pytest.mark.parametrize(
    ("argv", "code", "needle"),
    [
        (["run", "--world", "atlantis"], 1, "unknown world 'atlantis'"),
        (["run", "--world", "soldier", "--agents", "-5"], 2, "--agents"),
        (["run", "--world", "soldier", "--agents", "5", "--device", "tpu:3", "--ticks", "1"], 1, "device"),
    ],
)
def test_run_bad_arguments(capsys, argv, code, needle):
    got, out, err = run(capsys, *argv)
    assert got == code and needle in err and "Traceback" not in err


def test_run_logs_outcomes_and_appends(capsys, tmp_path):
    from goap.outcomes import OutcomeLog

    path = tmp_path / "outcomes.npz"
    sizes = []
    for _ in range(2):
        code, out, err = run(capsys, "run", "--world", "soldier", "--agents", "40", "--ticks", "10", "--device", "cpu",
                             "--quiet", "--log-outcomes", path, "--json", tmp_path / "r.json")
        assert code == 0, err
        sizes.append(len(OutcomeLog.load(path)))
        requested = json.loads((tmp_path / "r.json").read_text())["counters"]["plans_requested"]
        assert f"outcomes: {requested} planning calls logged" in out
    assert sizes[1] == 2 * sizes[0] > 0


# --- a lazy command line ----------------------------------------------------------------------------------------
#: What `goap --help` and the engine's own commands must start without: the tools and the heavy libraries.
HEAVY = ("warp", "torch", "pygame", "ray", "matplotlib", "goap.bench", "goap.learn", "viewer")


def loaded_after(argv: list[str]) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run ``goap ARGV`` in a fresh interpreter; the HEAVY modules it had loaded when it finished."""
    code = (
        "import json, sys\n"
        "from goap.cli import main\n"
        "try:\n"
        "    main(json.loads(sys.argv[1]))\n"
        "except SystemExit:\n"
        "    pass\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in heavy))))\n"
    )
    r = subprocess.run([sys.executable, "-c", code, json.dumps(argv)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r, json.loads(r.stdout.splitlines()[-1])


@pytest.mark.parametrize("argv", [["--help"], ["planners"], ["validate", "--help"], ["frobnicate"]])
def test_help_and_planners_import_no_tool_and_no_heavy_library(argv):
    r, heavy = loaded_after(argv)
    assert heavy == [], f"goap {' '.join(argv)} imported them"
    if argv == ["planners"]:
        assert "reference" in r.stdout.split() and "warp" in r.stdout.split()
    elif argv == ["frobnicate"]:
        assert "invalid choice: 'frobnicate'" in r.stderr  # every command is still a choice
    else:
        assert r.stdout.startswith("usage: goap")


def test_a_tool_is_imported_when_its_command_runs():
    _, heavy = loaded_after(["bench", "--help"])
    assert "goap.bench.cli" in heavy and not {"goap.learn", "viewer"} & set(heavy)


#: One option of each command: `goap CMD --help` shows it, built only when CMD is the one asked for.
OPTIONS = {"validate": "--strict", "describe": "--max-plan-length", "solve": "--plan-file", "run": "--plan-cache",
           "explain": "--agent", "graph": "--agent-type", "bench": "--time-limit", "sweep": "--seeds",
           "view": "--headless", "train": "--held-out", "planners": "--help", "worlds": "--help"}


def test_every_command_has_its_help_and_only_its_own_options(capsys):
    from goap.cli import COMMANDS, build_parser

    assert list(OPTIONS) == list(COMMANDS)
    top = " ".join(build_parser().format_help().split())  # unwrapped
    for name, cmd in COMMANDS.items():
        assert f" {name} {cmd.help}" in top  # listed with its line even while its options are not built
        code, out, err = run(capsys, name, "--help")
        assert code == 0 and out.startswith(f"usage: goap {name}") and OPTIONS[name] in out, (name, err)
        others = [o for n, o in OPTIONS.items() if n != name and o != "--help" and o not in out]
        assert others, name  # some other command's option is absent: each command has its own options
    code, _, err = run(capsys, "bench", "--frobnicate")
    assert code == 2 and "goap: error: unrecognized arguments: --frobnicate" in err and "Traceback" not in err
    code, _, err = run(capsys, "bench", "--time-limit", "soon")
    assert code == 2 and err.startswith("usage: goap bench") and "argument --time-limit" in err


def test_view_without_the_viewer_package_is_one_line(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "viewer.app", None)  # import viewer.app raises ImportError
    code, out, err = run(capsys, "view", "--world", "soldier", "--headless")
    assert code == 1 and out == ""
    assert err.startswith("goap: error: goap view needs the viewer package") and len(err.splitlines()) == 1
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "view" in out


@pytest.mark.parametrize("planner", ["reference", "warp"])
def test_solve_too_long_prints_the_segment(capsys, files, planner):
    domain_path, problems = files
    code, out, err = run(capsys, "solve", domain_path, "--problems", problems, "--planner", planner,
                         "--device", "cpu", "--max-plan-length", "2")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    full = [json.loads(line) for line in run(capsys, "solve", domain_path, "--problems", problems)[1].splitlines()]
    domain = load_domain(domain_path)
    long = [(r, f) for r, f in zip(rows, full, strict=True) if r["status"] == "too_long"]
    assert long
    for r, f in long:
        # The first max_plan_length steps of an optimal plan, with the whole plan's cost and length.
        assert len(r["plan"]) == 2 < r["length"] == f["length"] and r["cost"] == f["cost"]
        start = domain.state(next(p["start"] for p in PROBLEMS if p["id"] == r["id"]))
        domain.replay(start, r["plan"])  # applicable step by step

"""``goap bench --ray`` and ``goap sweep --ray`` on a local Ray cluster of two worker processes: the same rows as
a local run (statuses, costs, plans), in the same order."""

from __future__ import annotations

import json

import pytest

ray = pytest.importorskip("ray", reason='Ray is not installed (pip install -e ".[scale]")')

from goap.bench.cli import build_parser, run  # noqa: E402
from tests.conftest import PDDL_DIR  # noqa: E402

TASKS = ["--suite", "pddl", "--tasks-dir", str(PDDL_DIR), "--domains", "gripper,blocks,miconic", "--tasks",
         "task01,task02", "--planners", "reference,warp", "--device", "cpu", "--quiet"]


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


def _bench(path, *extra):
    assert run(build_parser().parse_args([*TASKS, "--json", str(path), *extra])) == 0
    return json.loads(path.read_text())


def test_ray_gives_the_local_rows(tmp_path, cluster):
    local = _bench(tmp_path / "local.json")
    remote = _bench(tmp_path / "ray.json", "--ray")
    key = ("problem", "planner", "status", "cost", "length", "valid", "plan", "expanded")
    assert [tuple(r[k] for k in key) for r in remote["results"]] == [tuple(r[k] for k in key) for r in local["results"]]
    assert len(local["results"]) == 12 and all(r["valid"] for r in local["results"])
    assert remote["meta"]["ray"]["cpus"] == 2 and local["meta"]["ray"] is None
    strip = ("median_s", "p95_s", "search_s", "agile_score")
    assert [{k: v for k, v in s.items() if k not in strip} for s in remote["summary"]] == \
        [{k: v for k, v in s.items() if k not in strip} for s in local["summary"]]


def test_sweep_on_ray(tmp_path, cluster):
    from goap.bench.sweep import build_parser as sweep_parser
    from goap.bench.sweep import run as sweep_run

    argv = ["--world", "soldier", "--agents", "8,16", "--plan-budget", "8", "--seeds", "0,1", "--ticks", "3",
            "--device", "cpu", "--quiet"]
    assert sweep_run(sweep_parser().parse_args([*argv, "--json", str(tmp_path / "l.json")])) == 0
    assert sweep_run(sweep_parser().parse_args([*argv, "--ray", "--json", str(tmp_path / "r.json")])) == 0
    local = json.loads((tmp_path / "l.json").read_text())["results"]
    remote = json.loads((tmp_path / "r.json").read_text())["results"]
    cells = [(r["world"], r["agents"], r["plan_budget"], r["seed"]) for r in local]
    assert cells == [("soldier", a, 8, s) for a in (8, 16) for s in (0, 1)]
    assert [(r["world"], r["agents"], r["seed"], r["state_hash"]) for r in remote] == \
        [(r["world"], r["agents"], r["seed"], r["state_hash"]) for r in local]

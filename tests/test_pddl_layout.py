"""The Fast Downward benchmark collection's layout: a domain file per folder or per task, problems of any name."""

from __future__ import annotations

import json
import shutil

import pytest

from goap.pddl import is_domain_file, pddl_tasks, task_domain
from tests.conftest import ROOT, run_cli

FIXTURE = ROOT / "tests" / "fixtures" / "pddl" / "fd_layout"
BLOCKS = ROOT / "benchmarks" / "pddl" / "blocks"


def test_per_task_domain_files_and_every_naming_are_found(tmp_path):
    d = tmp_path / "mixed"
    d.mkdir()
    shutil.copy(BLOCKS / "domain.pddl", d / "p01-domain.pddl")
    shutil.copy(BLOCKS / "task01.pddl", d / "p01-blocks-4-0.pddl")  # the collection's airport-style names
    shutil.copy(BLOCKS / "domain.pddl", d / "domain_p02.pddl")
    shutil.copy(BLOCKS / "task02.pddl", d / "p02.pddl")
    shutil.copy(BLOCKS / "domain.pddl", d / "domain-p03.pddl")
    shutil.copy(BLOCKS / "task03.pddl", d / "p03.pddl")
    shutil.copy(BLOCKS / "task04.pddl", d / "p04.pddl")  # no domain of its own, and no domain.pddl: skipped
    found = {name: dom.name for dom, _, name in pddl_tasks(tmp_path)}
    assert found == {"mixed/p01-blocks-4-0": "p01-domain.pddl", "mixed/p02": "domain_p02.pddl",
                     "mixed/p03": "domain-p03.pddl"}
    assert task_domain(d / "p04.pddl") is None
    shutil.copy(BLOCKS / "domain.pddl", d / "domain.pddl")
    assert task_domain(d / "p04.pddl").name == "domain.pddl"
    assert task_domain(d / "p02.pddl").name == "domain_p02.pddl"  # its own before the folder's
    assert all(is_domain_file(n) for n in ("domain.pddl", "p07-domain.pddl", "domain_p07.pddl", "domain-p07.pddl"))
    assert not any(is_domain_file(n) for n in ("p07.pddl", "task01.pddl", "domainless.pddl"))


def test_bench_reads_the_layout_with_optima(tmp_path, capsys):
    root = tmp_path / "tasks"
    shutil.copytree(FIXTURE, root)
    (root / "optimal.json").write_text(json.dumps({"blocks-per-task/p01": 6, "blocks-per-task/p02": 10}))
    out = tmp_path / "bench.json"
    code, _, err = run_cli(capsys, "bench", "--suite", "pddl", "--tasks-dir", root, "--planners", "warp",
                           "--time-limit", "60", "--json", out)
    assert code == 0, err
    rows = json.loads(out.read_text())["results"]
    assert sorted(r["problem"] for r in rows) == ["blocks-per-task/p01", "blocks-per-task/p02"]
    assert all(r["status"] == "ok" and r["valid"] for r in rows)
    assert {r["problem"]: (r["cost"], r["optimal"]) for r in rows} == {"blocks-per-task/p01": (6, 6),
                                                                        "blocks-per-task/p02": (10, 10)}


def test_solve_takes_a_problem_file_alone(capsys):
    code, out, _ = run_cli(capsys, "solve", FIXTURE / "blocks-per-task" / "p01.pddl")
    assert code == 0 and json.loads(out.splitlines()[-1])["cost"] == 6
    code, _, err = run_cli(capsys, "solve", FIXTURE / "blocks-per-task" / "p01-domain.pddl")
    assert code == 1 and "needs its problem file" in err


@pytest.mark.parametrize("folder", ["airport", "grid"])
def test_the_shared_collection_is_read_when_present(folder):
    shared = ROOT.parent / "shared" / "pddl-more"
    if not (shared / folder).is_dir():
        pytest.skip("the shared task collection is not beside this checkout")
    tasks = [t for t in pddl_tasks(shared) if t[2].startswith(folder + "/")]
    assert tasks and all(dom.is_file() and not is_domain_file(prob) for dom, prob, _ in tasks)


def test_optimal_costs_reads_both_forms_as_the_bench_does(tmp_path):
    from goap.pddl import optimal_costs

    root = tmp_path / "tasks"
    shutil.copytree(FIXTURE, root)
    (root / "optimal.json").write_text(json.dumps({"blocks-per-task/p01.pddl": 6, "blocks-per-task/p02": None}))
    assert optimal_costs(root) == {"blocks-per-task/p01": 6.0, "blocks-per-task/p02": None}
    (root / "optimal.json").write_text(json.dumps({"problems": {"blocks-per-task/p02": {"optimal_cost": 10}}}))
    assert optimal_costs(root) == {"blocks-per-task/p02": 10.0}
    (root / "optimal.json").write_text(json.dumps({"blocks-per-task/p01": -1}))
    with pytest.raises(ValueError, match="entry 'blocks-per-task/p01'"):
        optimal_costs(root)

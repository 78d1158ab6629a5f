"""``goap validate`` and ``goap solve`` on a PDDL domain + problem pair, as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys

from goap.cli import main
from tests.conftest import PDDL_DIR, ROOT

BLOCKS = PDDL_DIR / "blocks"


def test_validate_pair(capsys):
    assert main(["validate", str(BLOCKS / "domain.pddl"), str(BLOCKS / "task04.pddl")]) == 0
    out = capsys.readouterr().out
    assert "task 'blocks/task04'" in out and "41 facts" in out and "60 actions" in out


def test_solve_pair_writes_a_valid_ipc_plan(tmp_path, capsys):
    plan = tmp_path / "task04.plan"
    assert main(["solve", str(BLOCKS / "domain.pddl"), str(BLOCKS / "task04.pddl"), "--max-nodes", "100000",
                 "--plan-file", str(plan)]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["status"] == "ok" and row["cost"] == 12 and row["valid"] is True and len(row["plan"]) == 12
    text = plan.read_text().splitlines()
    assert text[:-1] == row["plan"] and text[-1] == "; cost = 12"


def test_pair_errors(capsys):
    assert main(["solve", str(BLOCKS / "domain.pddl")]) == 1
    assert "needs its problem file" in capsys.readouterr().err
    assert main(["validate", str(ROOT / "worlds" / "soldier" / "domain.toml"), str(BLOCKS / "task04.pddl")]) == 1
    assert "a second file is for a PDDL domain only" in capsys.readouterr().err
    assert main(["solve", str(BLOCKS / "domain.pddl"), str(BLOCKS / "task04.pddl"), "--problems", "x.jsonl"]) == 1
    assert "--problems is for goap domain files" in capsys.readouterr().err


def test_grounding_bound_from_the_command_line():
    blowup = ROOT / "tests" / "fixtures" / "pddl" / "grounding_blowup"
    out = subprocess.run([sys.executable, "-m", "goap.cli", "validate", str(blowup / "domain.pddl"),
                          str(blowup / "problem.pddl")], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert f"{blowup / 'domain.pddl'}:6: predicate 'linked': grounding stopped" in out.stderr



def test_solve_pair_defaults_to_the_warp_planner(capsys):
    assert main(["solve", str(BLOCKS / "domain.pddl"), str(BLOCKS / "task04.pddl"), "--stats"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.err.strip().splitlines()[-1])["planner"] == "warp"
    assert json.loads(captured.out)["cost"] == 12

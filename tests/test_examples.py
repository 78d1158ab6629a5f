"""Each example runs as a small complete program."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_plan_batch_example():
    r = subprocess.run(
        [sys.executable, str(ROOT / "examples/plan_batch.py"), "--agents", "300", "--device", "cpu"],
        capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "300 agents planned" in r.stdout and "the reference planner finds the same optimal cost" in r.stdout

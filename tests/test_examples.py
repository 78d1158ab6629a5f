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


def test_embed_minimal_example():
    r = subprocess.run(
        [sys.executable, str(ROOT / "examples/embed_minimal.py"), "--agents", "200", "--ticks", "40",
         "--device", "cpu"],
        capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stderr
    achieved = int(r.stdout.split(" goals reached")[0].rsplit(" ", 1)[1])
    assert achieved >= 200  # every villager ate at least once in 40 ticks
    hunger = float(r.stdout.split("mean hunger ")[1].split(",")[0])
    assert hunger < 2.0  # the world makes them hungrier every 20 ticks; eating keeps them below it
    assert "agent 0 pursues" in r.stdout


def test_embed_types_example():
    r = subprocess.run(
        [sys.executable, str(ROOT / "examples/embed_types.py"), "--agents", "400", "--ticks", "80", "--device", "cpu"],
        capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stderr
    done = dict(part.rsplit(" ", 1) for part in r.stdout.split("actions done: ")[1].strip().split(", "))
    assert int(done["heal"]) > 0 and int(done["rest"]) > 0  # medics heal; tired soldiers rest
    interrupted = int(r.stdout.split("interrupted actions ")[1].split(" ")[0])
    reported = int(r.stdout.split(" reported in ")[0].rsplit("(", 1)[1])
    assert interrupted == reported  # brain.on saw every interruption the counters did
    read = int(r.stdout.split(" bytes read from the device a tick")[0].rsplit(" ", 1)[1])
    assert read < 1024  # counters only: nothing in the loop reads an array of all agents

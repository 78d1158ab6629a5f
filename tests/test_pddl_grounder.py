"""goap.pddl.grounder: bounds on size and time (checked before anything is allocated), errors naming the action
and the count, cost errors naming the file where the cost was written."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from goap.pddl import GroundingLimits, PddlError, load_pddl
from goap.pddl.grounder import ground
from goap.pddl.lifted import read_domain, read_problem
from tests.conftest import ROOT
from tests.test_pddl import DOMAIN, PROBLEM

BLOWUP = ROOT / "tests" / "fixtures" / "pddl" / "grounding_blowup"  # 6 parameters over 30 objects
FACTS = ROOT / "tests" / "fixtures" / "pddl" / "grounding_facts"  # 4 parameters over 20 objects


def test_six_arguments_over_thirty_objects_stops_fast_and_small():
    """The reproducer of the issue (4.8 GB in 114 s before): a clear error in a child process held to 1 GB."""
    script = textwrap.dedent(f"""
        import resource, sys, time
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        from goap.pddl import PddlError, load_pddl
        t0 = time.perf_counter()
        try:
            load_pddl({str(BLOWUP / "domain.pddl")!r}, {str(BLOWUP / "problem.pddl")!r})
        except PddlError as e:
            print(round(time.perf_counter() - t0, 3), e, sep="\\n")
            sys.exit(0)
        sys.exit(3)
    """)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    seconds, message = out.stdout.strip().split("\n", 1)
    assert float(seconds) < 5 and time.perf_counter() - t0 < 30
    assert message.startswith(f"{BLOWUP / 'domain.pddl'}:6: action 'link': grounding stopped: more than 200,000")
    assert "30^6 = 729,000,000 argument tuples" in message


def test_facts_bound_names_the_predicate():
    with pytest.raises(PddlError) as e:
        load_pddl(FACTS / "domain.pddl", FACTS / "problem.pddl", limits=GroundingLimits(max_facts=5_000))
    assert e.value.item == "predicate 'tagged'" and e.value.file == str(FACTS / "domain.pddl") and e.value.line == 6
    assert "more than 5,000 reachable atoms" in str(e.value) and "action 'tag'" in str(e.value)


def test_action_bound_counts_the_action():
    with pytest.raises(PddlError) as e:
        load_pddl(FACTS / "domain.pddl", FACTS / "problem.pddl", limits=GroundingLimits(max_actions=1_000))
    assert e.value.item == "action 'tag'" and "more than 1,000 ground actions" in str(e.value)
    assert "20^4 = 160,000 argument tuples" in str(e.value)


def test_table_bound():
    with pytest.raises(PddlError) as e:
        load_pddl(FACTS / "domain.pddl", FACTS / "problem.pddl",
                  limits=GroundingLimits(max_actions=10**6, max_facts=10**6, max_table_bytes=2**20))
    assert e.value.item == "action 'tag'" and "MiB of action tables" in str(e.value)


def test_time_bound():
    t0 = time.perf_counter()
    with pytest.raises(PddlError) as e:
        load_pddl(BLOWUP / "domain.pddl", BLOWUP / "problem.pddl",
                  limits=GroundingLimits(max_actions=10**9, max_facts=10**9, max_table_bytes=2**50, seconds=0.3))
    assert time.perf_counter() - t0 < 10
    assert e.value.item == "action 'link'" and "grounding took more than 0.3 s" in str(e.value)


def test_within_the_bounds_nothing_changes(tmp_path):
    (tmp_path / "d.pddl").write_text(DOMAIN)
    (tmp_path / "p.pddl").write_text(PROBLEM)
    tight = GroundingLimits(max_actions=4, max_facts=4, max_table_bytes=4 * 8 * 4, seconds=5)
    task = load_pddl(tmp_path / "d.pddl", tmp_path / "p.pddl", limits=tight)
    assert task.n_actions == 4 and task.n_facts == 4
    with pytest.raises(PddlError, match="more than 3 ground actions"):
        load_pddl(tmp_path / "d.pddl", tmp_path / "p.pddl", limits=GroundingLimits(max_actions=3))


def test_cost_from_the_problem_is_reported_in_the_problem():
    lifted = read_domain(DOMAIN, "d.pddl")
    problem = read_problem(PROBLEM.replace("(= (dist hall yard) 4)", ""), "p.pddl", lifted)
    with pytest.raises(PddlError) as e:
        ground(lifted, problem, "mini")
    assert e.value.file == "p.pddl" and e.value.item == "action 'move'"
    assert "no value for (dist hall yard)" in str(e.value) and "d.pddl:11" in str(e.value)


def test_cost_above_the_engine_limit(monkeypatch):
    from goap import domain as domain_module

    monkeypatch.setattr(domain_module, "MAX_COST", 3.5, raising=False)
    lifted = read_domain(DOMAIN, "d.pddl")
    with pytest.raises(PddlError) as e:  # dist hall yard = 4, set on line 4 of the problem
        ground(lifted, read_problem(PROBLEM, "p.pddl", lifted), "mini")
    assert e.value.file == "p.pddl" and e.value.line == 4 and "largest cost 3.5" in str(e.value)


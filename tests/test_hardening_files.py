"""Input files of issue 19: reads bounded by the size limit, names PDDL does not allow, type cycles, numbers and
names in domain files, start values in problem files, and time bounds.

Every refusal is one `goap: error:` line naming the file (and the line where there is one), exit status 1, and
no traceback.
"""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from goap import domain_file
from goap.domain_file import MAX_FILE_BYTES, nesting_error
from tests.conftest import run_cli

INPUTS = Path(__file__).resolve().parent / "inputs"
BASE = INPUTS / "base.toml"


run = run_cli  # the goap command in-process


def one_error(err: str) -> str:
    lines = err.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("goap: error: "), err
    assert "Traceback" not in err
    return lines[0]


# --- defect 3: reads bounded by the limit, nesting checked in constant memory ---------------------------------
needs_dev_zero = pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")


@needs_dev_zero
def test_a_link_to_dev_zero_as_a_domain_is_refused_at_the_limit(capsys, tmp_path):
    link = tmp_path / "zero.toml"
    link.symlink_to("/dev/zero")
    code, out, err = run(capsys, "validate", link)
    assert code == 1 and out == ""
    assert f"{link}: too large: more than {MAX_FILE_BYTES:,} bytes" in one_error(err)


@needs_dev_zero
def test_dev_zero_as_a_problem_file_is_refused_at_the_limit(capsys):
    code, out, err = run(capsys, "solve", BASE, "--problems", "/dev/zero")
    assert code == 1 and out == ""
    assert f"/dev/zero: too large: more than {MAX_FILE_BYTES:,} bytes" in one_error(err)


@needs_dev_zero
def test_dev_zero_as_a_pddl_file_is_refused_at_the_limit(capsys, tmp_path):
    from goap.pddl.reader import MAX_PDDL_BYTES

    dom, prob = tmp_path / "domain.pddl", tmp_path / "task01.pddl"
    dom.symlink_to("/dev/zero")
    prob.symlink_to("/dev/zero")
    code, out, err = run(capsys, "validate", dom, prob)
    assert code == 1 and out == ""
    assert f"too large: more than {MAX_PDDL_BYTES:,} bytes" in one_error(err)


def test_a_file_one_byte_over_the_limit_is_refused_and_one_at_it_read(capsys, tmp_path, monkeypatch):
    text = BASE.read_text(encoding="utf-8")
    monkeypatch.setattr(domain_file, "MAX_FILE_BYTES", len(text.encode()))
    at = tmp_path / "at.toml"
    at.write_text(text, encoding="utf-8")
    assert run(capsys, "validate", at)[0] == 0
    over = tmp_path / "over.toml"
    over.write_text(text + "\n", encoding="utf-8")
    code, _, err = run(capsys, "validate", over)
    assert code == 1 and "too large" in one_error(err)


@pytest.mark.parametrize("fmt", ["toml", "json"])
def test_nesting_check_memory_does_not_grow_with_a_long_string(fmt):
    # The regex this replaced kept ~150 bytes of backtracking state per character of a string (300 MB for a
    # 2 MB string): a 50 MB domain file ran out of memory in the check, before the parser saw it.
    body = "x" * 2_000_000
    text = f'name = "{body}"\n[facts]\na = ' + "[" * 40 if fmt == "toml" else f'{{"a": "{body}", "b": ' + "[" * 40
    tracemalloc.start()
    try:
        line = nesting_error(text, fmt)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert line == (3 if fmt == "toml" else 1)
    assert peak < 1_000_000


@pytest.mark.parametrize(
    ("text", "fmt", "deep"),
    [
        ('a = "[[[[" # [[[[\nb = 1', "toml", False),
        ("a = '''\n[[[[\n'''\nb = [[[[1]]]]", "toml", True),
        ('a = """ \\""" [[[[ """\nb = 1', "toml", False),
        ('{"a": "\\\\", "b": [[[[1]]]]}', "json", True),
        ('{"a": "\\" [[[[ "}', "json", False),
        ("a = 'x\\'\nb = [[[[1]]]]", "toml", True),
    ],
)
def test_nesting_check_skips_strings_and_comments(text, fmt, deep):
    assert (nesting_error(text, fmt, limit=3) is not None) is deep


# --- defect 8 and the PDDL items of 9: names, types ------------------------------------------------------------
DOMAIN = """(define (domain d)
  (:requirements :strips :typing)
  (:types {types})
  (:predicates (at ?x - {ptype}) (link ?x ?y - thing))
  (:action go :parameters (?x ?y - thing)
    :precondition (link ?x ?y) :effect (at ?x)))
"""
PROBLEM = """(define (problem p) (:domain d)
  (:objects {objects})
  (:init (link a c))
  (:goal (at a)))
"""


def pddl_pair(tmp_path: Path, types: str = "thing", ptype: str = "thing", objects: str = "a c - thing"):
    dom, prob = tmp_path / "domain.pddl", tmp_path / "task01.pddl"
    dom.write_text(DOMAIN.format(types=types, ptype=ptype), encoding="utf-8")
    prob.write_text(PROBLEM.format(objects=objects), encoding="utf-8")
    return dom, prob


def test_the_pddl_pair_of_these_tests_is_valid(capsys, tmp_path):
    assert run(capsys, "validate", *pddl_pair(tmp_path))[0] == 0


def test_object_names_with_commas_are_refused_so_ground_names_cannot_collide(capsys, tmp_path):
    # (go a,b c) and (go a b,c) would both be the ground action go(a,b,c).
    dom, prob = pddl_pair(tmp_path, objects="a c - thing\n  a,b b,c - thing")
    code, out, err = run(capsys, "validate", dom, prob)
    assert code == 1 and out == ""
    assert one_error(err).startswith(f"goap: error: {prob}:3: not a PDDL name: 'a,b' in the objects")


@pytest.mark.parametrize(
    ("types", "ptype", "line", "message"),
    [
        ("thing a - thing b - a a - b", "thing", 3, "type 'a': declared twice with different parents"),
        ("thing a - b b - a", "thing", 3, "type cycle: "),
        ("thing a - a", "thing", 3, "type cycle: a - a"),
        ("thing " + " ".join(f"t{i} - t{(i + 1) % 50}" for i in range(50)), "thing", 3, "type cycle: "),
        ("thing", "thingy", 4, "predicate 'at': unknown type 'thingy'"),
        ("thing bad!name", "thing", 3, "not a PDDL name: 'bad!name'"),
    ],
)
def test_bad_types_are_refused_with_file_and_line(capsys, tmp_path, types, ptype, line, message):
    dom, prob = pddl_pair(tmp_path, types=types, ptype=ptype)
    code, out, err = run(capsys, "validate", dom, prob)
    assert code == 1 and out == ""
    error = one_error(err)
    assert error.startswith(f"goap: error: {dom}:{line}: ") and message in error


def test_an_invalid_plan_exits_1_with_its_error_line(capsys, tmp_path, monkeypatch):
    import goap.pddl.validate as validate

    monkeypatch.setattr(validate, "validate_plan", lambda *a: validate.PlanCheck(False, None, 1, "step 1: made up"))
    dom, prob = pddl_pair(tmp_path)
    code, out, err = run(capsys, "solve", dom, prob, "--planner", "reference")
    assert code == 1 and '"valid": false' in out
    assert one_error(err) == f"goap: error: {prob}: the plan found is not valid: step 1: made up"


# --- the domain-file items of 9: numbers that are not what they show, names that print the same ---------------
def domain_text(n_line: str = 'n = { type = "int", min = 0, max = 6 }', want: str = "a = true", extra: str = "") -> str:
    return (
        f'name = "t"\n\n[facts]\na = false\n{n_line}\n{extra}\n[actions.go]\ncost = 1\neffects = {{ a = true }}\n\n'
        f"[goals.g]\npriority = 1\nwant = {{ {want} }}\n"
    )


@pytest.mark.parametrize(
    ("n_line", "want", "message"),
    [
        ('n = { type = "int", min = 0, max = 9007199254740993.0 }', "a = true", "needs integer 'min' and 'max'"),
        ('n = { type = "int", min = -9007199254740993.0, max = 0 }', "a = true", "needs integer 'min' and 'max'"),
        ('n = { type = "int", min = 0, max = 2000 }', 'n = ">= 1_000"', "cannot parse condition '>= 1_000'"),
        ('n = { type = "int", min = 0, max = 20 }', 'n = "== \u0661\u0662"', "cannot parse condition"),
        ('n = { type = "int", min = 0, max = 20 }', 'n = "\u0661"', "cannot parse condition"),
    ],
)
def test_numbers_a_domain_file_does_not_show_exactly_are_refused(capsys, tmp_path, n_line, want, message):
    path = tmp_path / "d.toml"
    path.write_text(domain_text(n_line, want), encoding="utf-8")
    code, out, err = run(capsys, "validate", path)
    assert code == 1 and out == ""
    error = one_error(err)
    line = 5 if "min" in message else path.read_text(encoding="utf-8").split("\n").index(f"want = {{ {want} }}") + 1
    assert error.startswith(f"goap: error: {path}:{line}: ") and message in error


def test_exact_floats_and_plain_digits_still_read(capsys, tmp_path):
    path = tmp_path / "d.toml"
    path.write_text(domain_text('n = { type = "int", min = 0.0, max = 9007199254740991.0 }', 'n = ">= +12"'))
    assert run(capsys, "validate", path)[0] == 0


@pytest.mark.parametrize(
    ("extra", "line", "twin"),
    [
        ('"caf\u00e9" = false\n"cafe\u0301" = true', 7, "fact"),
        ('e = { type = "enum", values = ["caf\u00e9", "cafe\u0301"] }', 6, "fact 'e'"),
    ],
)
def test_names_that_differ_only_in_normalisation_are_refused(capsys, tmp_path, extra, line, twin):
    path = tmp_path / "d.toml"
    path.write_text(domain_text(extra=extra), encoding="utf-8")
    code, out, err = run(capsys, "validate", path)
    assert code == 1 and out == ""
    error = one_error(err)
    assert error.startswith(f"goap: error: {path}:{line}: {twin}") and "differ only in Unicode normalisation" in error


def test_action_and_goal_names_that_differ_only_in_normalisation_are_refused():
    from goap.domain import DomainError
    from goap.domain_file import loads_domain

    text = domain_text() + '\n[actions."caf\u00e9"]\ncost = 1\neffects = { a = true }\n'
    text += '\n[actions."cafe\u0301"]\ncost = 1\neffects = { a = true }\n'
    with pytest.raises(DomainError, match="normalisation") as exc:
        loads_domain(text)
    assert exc.value.line == text.split("\n").index('[actions."cafe\u0301"]') + 1


# --- the problem-file items of 9: start values of the wrong JSON type ------------------------------------------
@pytest.mark.parametrize(
    ("start", "fact"),
    [('{"n": "3"}', "n"), ('{"n": " 3 "}', "n"), ('{"n": 2.0}', "n"), ('{"n": true}', "n"),
     ('{"a": "TRUE"}', "a"), ('{"a": "true"}', "a"), ('{"a": 1}', "a"), ('{"a": 2.0}', "a")],
)
def test_start_values_of_the_wrong_type_are_refused_with_file_line_and_fact(capsys, tmp_path, start, fact):
    problems = tmp_path / "p.jsonl"
    problems.write_text(f'{{"id": 1, "start": {{}}, "goal": "g"}}\n{{"id": "x", "start": {start}, "goal": "g"}}\n')
    code, out, err = run(capsys, "solve", BASE, "--problems", problems, "--planner", "reference")
    assert code == 1 and out == ""
    error = one_error(err)
    assert error.startswith(f"goap: error: {problems}:2: problem 'x': start value for ") and f"fact '{fact}'" in error


def test_start_values_of_the_right_type_are_read(capsys, tmp_path):
    problems = tmp_path / "p.jsonl"
    problems.write_text('{"id": 1, "start": {"a": false, "n": 3}, "goal": "g"}\n')
    code, out, _ = run(capsys, "solve", BASE, "--problems", problems, "--planner", "reference")
    assert code == 0 and '"status": "ok"' in out


# --- defect 10: validation linear in the domain's size -----------------------------------------------------------
def reversed_chain(n: int):
    """Action i needs fact i+1 and makes fact i; only fact n starts true, and the actions are listed in the order
    that lets a round-by-round fixpoint apply one new action per pass over all of them (n passes of n)."""
    from goap.domain import DomainBuilder

    b = DomainBuilder("chain")
    for i in range(n + 1):
        b.bool(f"f{i}", default=i == n)
    for i in range(n):
        b.action(f"a{i}", cost=1, pre={f"f{i + 1}": True}, effects={f"f{i}": True})
    b.goal("g", {"f0": True})
    return b.build()


def test_reachability_looks_at_each_action_a_bounded_number_of_times(monkeypatch):
    from goap import analysis

    calls = 0
    can_hold = analysis._Values.can_hold

    def counted(self, c):
        nonlocal calls
        calls += 1
        return can_hold(self, c)

    monkeypatch.setattr(analysis._Values, "can_hold", counted)
    n = 2000
    report = analysis.check_domain(reversed_chain(n))
    assert report.never_applicable == [] and report.unreachable_goals == []
    assert calls <= 3 * n + 10  # the pass-by-pass fixpoint this replaced made about n * n / 2 = 2,000,000


def _fixpoint_by_rounds(domain, start):
    """The plain fixpoint: pass over every action until nothing changes (the oracle of the worklist)."""
    from goap.analysis import _Values

    fi = {f.name: i for i, f in enumerate(domain.facts)}
    values = [_Values(f.kind, v) for f, v in zip(domain.facts, start, strict=True)]
    applied = [False] * len(domain.actions)
    changed = True
    while changed:
        changed = False
        for a, action in enumerate(domain.actions):
            if all(values[fi[c.fact]].can_hold(c) for c in action.pre):
                changed |= not applied[a]
                applied[a] = True
                for e in action.effects:
                    f = domain.facts[fi[e.fact]]
                    changed |= values[fi[e.fact]].add(e.value if e.op == "=" else f.max if e.op == "+=" else f.min)
    return [a.name for a, ok in zip(domain.actions, applied, strict=True) if not ok]


@pytest.mark.parametrize("seed", range(40))
def test_reachability_worklist_matches_the_plain_fixpoint(seed):
    import random

    from goap.analysis import check_domain
    from goap.bench.random_domains import random_domain

    domain = random_domain(seed, n_facts=8 + seed % 9, chain=2 + seed % 4)
    rng = random.Random(seed)
    # Mostly minimal starts, from which many actions never apply (about 230 over the 40 seeds).
    start = tuple(f.min if rng.random() < 0.7 else f.max for f in domain.facts)
    assert check_domain(domain, start).never_applicable == _fixpoint_by_rounds(domain, start)


def test_goal_achievers_are_looked_for_only_among_the_actions_that_change_the_fact(monkeypatch):
    from goap import encoding
    from goap.domain import Goal

    calls = 0
    achieves = encoding.achieves

    def counted(action, c):
        nonlocal calls
        calls += 1
        return achieves(action, c)

    monkeypatch.setattr(encoding, "achieves", counted)
    n = 2000
    domain = reversed_chain(n)
    tables = encoding.encode(domain)
    calls = 0
    goal = Goal("many", want=tuple(domain.conditions({f"f{i}": True for i in range(0, n, 10)})), priority=0.0)
    table = tables.encode_goals([goal])
    assert calls == n // 10  # one changer per fact; the scan over every action made n * n / 10 = 400,000
    assert list(table.achiever_action) == list(range(0, n, 10))


# --- defect 10: goap solve --time-limit ---------------------------------------------------------------------------
class _SlowPlanner:
    """Wraps a planner; plans whose goal index is in ``slow`` sleep far past any limit first."""

    def __init__(self, inner, slow):
        self.inner, self.slow, self.tables = inner, slow, inner.tables

    def plan(self, states, goals, *args, **kwargs):
        import time

        if int(goals[0]) in self.slow:
            time.sleep(60)
        return self.inner.plan(states, goals, *args, **kwargs)


def test_solve_time_limit_gives_timeout_rows_and_plans_the_rest(capsys, tmp_path, monkeypatch):
    import json

    import goap.planners as planners

    make = planners.make_planner
    monkeypatch.setattr(planners, "make_planner", lambda *a, **k: _SlowPlanner(make(*a, **k), slow={1}))
    problems = tmp_path / "p.jsonl"
    problems.write_text('{"id": 1, "goal": "g"}\n{"id": 2, "goal": {"n": ">= 2"}}\n{"id": 3, "goal": "g"}\n')
    code, out, err = run(capsys, "solve", BASE, "--problems", problems, "--planner", "reference", "--time-limit", "0.2")
    assert code == 0 and err == ""
    rows = [json.loads(x) for x in out.splitlines()]
    assert [r["status"] for r in rows] == ["ok", "timeout", "ok"]
    assert rows[1] == {"id": 2, "status": "timeout", "cost": None, "plan": [], "length": 0, "expanded": None}
    assert rows[0]["plan"] == ["go"] and rows[2]["plan"] == ["go"]


def test_solve_time_limit_leaves_fast_problems_as_they_were(capsys, tmp_path):
    problems = tmp_path / "p.jsonl"
    problems.write_text('{"id": 1, "goal": "g"}\n{"id": 2, "start": {"a": true}, "goal": "g"}\n')
    without = run(capsys, "solve", BASE, "--problems", problems, "--planner", "reference")
    with_limit = run(capsys, "solve", BASE, "--problems", problems, "--planner", "reference", "--time-limit", "600")
    assert without[0] == with_limit[0] == 0 and without[1] == with_limit[1]


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "x"])
def test_solve_time_limit_must_be_a_positive_number(capsys, tmp_path, bad):
    problems = tmp_path / "p.jsonl"
    problems.write_text('{"id": 1, "goal": "g"}\n')
    code, out, err = run(capsys, "solve", BASE, "--problems", problems, "--time-limit", bad)
    assert code == 2 and out == "" and "--time-limit" in err and "Traceback" not in err


def test_solve_time_limit_on_a_pddl_pair(capsys, tmp_path, monkeypatch):
    import json

    import goap.planners as planners

    make = planners.make_planner
    monkeypatch.setattr(planners, "make_planner", lambda *a, **k: _SlowPlanner(make(*a, **k), slow={0}))
    dom, prob = pddl_pair(tmp_path)
    code, out, err = run(capsys, "solve", dom, prob, "--planner", "reference", "--time-limit", "0.2")
    assert code == 0 and err == ""
    assert json.loads(out) == {"id": f"{tmp_path.name}/task01", "status": "timeout", "phase": "search", "cost": None,
                               "length": None, "plan": None}

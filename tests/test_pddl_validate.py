"""goap.pddl.validate: plans replayed on the lifted task, independent of the grounder."""

from __future__ import annotations

import pytest

from goap.pddl.lifted import read_domain, read_problem
from goap.pddl.validate import goap_step, parse_plan, step_text, validate_plan
from tests.test_pddl import DOMAIN, PROBLEM

GOOD = "(light home)\n(MOVE b1 home hall) ; comment\n\n(move b1 hall yard)\n; cost = 9 (general cost)\n"


def _task():
    lifted = read_domain(DOMAIN, "d.pddl")
    return lifted, read_problem(PROBLEM, "p.pddl", lifted)


def test_parse():
    assert parse_plan(GOOD) == [
        ("light", ("home",)), ("move", ("b1", "home", "hall")), ("move", ("b1", "hall", "yard"))
    ]
    assert goap_step("move(b1,home,hall)") == ("move", ("b1", "home", "hall")) and goap_step("noop") == ("noop", ())
    assert step_text(("move", ("b1", "home", "hall"))) == "(move b1 home hall)"
    with pytest.raises(ValueError, match="line 2"):
        parse_plan("(light home)\n(light home\n")


def test_valid_plan_and_its_cost():
    check = validate_plan(*_task(), parse_plan(GOOD))
    assert check.valid and check.cost == 2 + 3 + 4 and check.length == 3 and check.error is None


@pytest.mark.parametrize(
    ("plan", "error"),
    [
        ("(move b1 home hall)\n(move b1 hall yard)", "the goal (lit home) is false at the end"),
        ("(move b1 hall yard)", "step 1 (move b1 hall yard): precondition (at b1 hall) is false"),
        ("(light home)\n(light home)", "step 2 (light home): precondition (not (lit home)) is false"),
        ("(light hall)", "'hall' is not of type room"),
        ("(fly b1)", "the domain has no action 'fly'"),
        ("(light home yard)", "takes 1 argument"),
        ("(light cellar)", "unknown object 'cellar'"),
        ("(move b1 hall hall)", "precondition (at b1 hall) is false"),
    ],
)
def test_invalid_plans(plan, error):
    check = validate_plan(*_task(), parse_plan(plan))
    assert not check.valid and check.cost is None and error in check.error


def test_equality_checked_after_preconditions():
    lifted, problem = _task()
    problem.init.add(("at", ("b1", "hall")))
    check = validate_plan(lifted, problem, parse_plan("(move b1 hall hall)"))
    assert not check.valid and "(not (= hall hall))" in check.error

"""goap.pddl.lifted: schemas, atoms, objects and costs read from files; what is refused, with file, line, item."""

from __future__ import annotations

import pytest

from goap.pddl.lifted import read_domain, read_problem
from goap.pddl.reader import PddlError
from tests.test_pddl import DOMAIN, PROBLEM


def test_schemas():
    lifted = read_domain(DOMAIN, "d.pddl")
    assert lifted.name == "mini" and lifted.file == "d.pddl"
    assert lifted.parents == {"object": None, "room": "place", "place": "object", "ball": "object"}
    move, light, toggle = lifted.schemas
    assert move.params == [("?b", ("ball",)), ("?from", ("place",)), ("?to", ("place",))]
    assert [(a.pred, a.args) for a in move.pos] == [("at", (0, 1)), ("door", (1, 2))]
    assert [(a.pred, a.args) for a in move.neg] == [("broken", ())] and move.neq == [(1, 2)]
    assert move.cost.pred == "dist" and move.cost.args == (1, 2) and move.cost_line == 11
    assert light.cost == 2.0 and light.cost_line == 15 and toggle.cost == 1.0


def test_problem():
    lifted = read_domain(DOMAIN, "d.pddl")
    problem = read_problem(PROBLEM, "p.pddl", lifted)
    assert problem.file == "p.pddl" and problem.objects == {"home": "room", "b1": "ball", "hall": "place",
                                                             "yard": "place"}
    assert ("at", ("b1", "home")) in problem.init and problem.values[("dist", ("home", "hall"))] == 3.0
    assert problem.value_lines[("dist", ("home", "hall"))] == 4
    assert [(a.pred, a.args) for a in problem.goal_neg] == [("at", ("b1", "home"))]


def test_no_increase_under_action_costs_is_cost_zero():
    # IPC semantics: under :action-costs an action that does not increase total-cost costs 0
    lifted = read_domain(DOMAIN.replace("(increase (total-cost) 1)", ""), "d.pddl")
    assert lifted.schemas[2].cost == 0.0 and lifted.schemas[2].cost_line == lifted.schemas[2].line


DOMAIN_ERRORS = [
    # (what, replacement in DOMAIN, line, item, message)
    ("nan cost", ("(increase (total-cost) 2)", "(increase (total-cost) nan)"), 15, "action 'light'",
     "expected a finite number >= 0"),
    ("negative cost", ("(increase (total-cost) 2)", "(increase (total-cost) -2)"), 15, "action 'light'",
     "expected a finite number >= 0"),
    ("word cost", ("(increase (total-cost) 2)", "(increase (total-cost) two)"), 15, "action 'light'",
     "expected a number"),
    ("numeric effect", ("(increase (total-cost) 2)", "(decrease (total-cost) 2)"), 15, "action 'light'",
     "numeric effect"),
    ("when as a condition", ("(and (not (lit ?p)))", "(when (lit ?p) (lit ?p))"), 14, "action 'light'",
     "(when ...) is an effect, not a condition"),
    ("cost in a when", ("(increase (total-cost) 2)", "(when (lit ?p) (increase (total-cost) 2))"), 15,
     "action 'light'", "(increase ...) inside (forall ...) or (when ...)"),
    ("quantifier syntax", ("(and (not (lit ?p)))", "(exists (?x))"), 14, "action 'light'",
     "takes a variable list and a formula"),
    ("durative", ("(:action toggle", "(:durative-action toggle"), 16, None, "durative actions"),
    ("duplicate action", ("(:action toggle", "(:action light"), 16, "action 'light'", "duplicate action name"),
]


@pytest.mark.parametrize(("what", "change", "line", "item", "message"), DOMAIN_ERRORS,
                         ids=[e[0] for e in DOMAIN_ERRORS])
def test_domain_errors(what, change, line, item, message):
    with pytest.raises(PddlError) as e:
        read_domain(DOMAIN.replace(*change), "d.pddl")
    assert e.value.file == "d.pddl" and e.value.line == line, str(e.value)
    assert e.value.item == item and message in str(e.value)


PROBLEM_ERRORS = [
    ("nan value", ("(= (dist home hall) 3)", "(= (dist home hall) nan)"), 4, "init", "finite number"),
    ("inf value", ("(= (dist hall yard) 4)", "(= (dist hall yard) inf)"), 4, "init", "finite number"),
    ("metric", ("(:metric minimize (total-cost))", "(:metric maximize (total-cost))"), 6, None, "only (:metric"),
    ("goal quantifier type", ("(lit home)", "(forall (?x - kitchen) (lit ?x))"), 5, "goal", "unknown type"),
]


@pytest.mark.parametrize(("what", "change", "line", "item", "message"), PROBLEM_ERRORS,
                         ids=[e[0] for e in PROBLEM_ERRORS])
def test_problem_errors(what, change, line, item, message):
    lifted = read_domain(DOMAIN, "d.pddl")
    with pytest.raises(PddlError) as e:
        read_problem(PROBLEM.replace(*change), "p.pddl", lifted)
    assert e.value.file == "p.pddl" and e.value.line == line, str(e.value)
    assert e.value.item == item and message in str(e.value)

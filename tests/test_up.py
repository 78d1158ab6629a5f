"""The Unified Planning engine: IPC tasks read by UP's own PDDLReader, plans checked by UP's own validator, costs
equal to ``goap solve``'s and to the known optima; problems built in UP (costs, unsolvable, already solved); kinds
the importer does not read refused through ``supports``; registration by name and by ``up.ini``."""

from __future__ import annotations

import json

import pytest

up = pytest.importorskip("unified_planning")

from unified_planning.engines import PlanGenerationResultStatus as Result  # noqa: E402
from unified_planning.io import PDDLReader  # noqa: E402
from unified_planning.shortcuts import (  # noqa: E402
    BoolType,
    Equals,
    Fluent,
    InstantaneousAction,
    IntType,
    MinimizeActionCosts,
    Not,
    Object,
    OneshotPlanner,
    PlanValidator,
    Problem,
    UserType,
    get_environment,
)

import goap.up  # noqa: E402
from tests.conftest import PDDL_DIR, run_cli  # noqa: E402

get_environment().credits_stream = None
goap.up.register()

#: One task of every domain whose files UP's reader takes as they are (zenotravel's `(either ...)` predicate
#: parameters it does not: see benchmarks/up_ipc.py), small enough for the test suite.
TASKS = ["blocks/task02", "depot/task01", "gripper/task01", "logistics/task01", "miconic/task02",
         "satellite/task01", "elevators/task02"]
OPTIMA = {k[:-5]: v["optimal_cost"] for k, v in json.loads((PDDL_DIR / "optimal.json").read_text())["problems"].items()}


def _read(name: str):
    dom, task = name.split("/")
    return PDDLReader().parse_problem(str(PDDL_DIR / dom / "domain.pddl"), str(PDDL_DIR / dom / f"{task}.pddl"))


def _validate(problem, plan):
    with PlanValidator(name="sequential_plan_validator") as validator:
        return validator.validate(problem, plan)


@pytest.mark.parametrize("name", TASKS)
def test_ipc_task_planned_validated_and_as_cheap_as_goap_solve(name, capsys):
    problem = _read(name)
    assert goap.up.WarpGoapEngine.supports(problem.kind)
    with OneshotPlanner(name="warp-goap", params={"device": "cpu"}) as planner:
        result = planner.solve(problem)
    assert result.status == Result.SOLVED_OPTIMALLY, result.log_messages
    assert result.engine_name == "warp-goap"
    check = _validate(problem, result.plan)
    assert check.status.name == "VALID", check.reason
    # the IPC tasks here are unit-cost: a plan's cost is its length
    assert len(result.plan.actions) == OPTIMA[name]
    assert float(result.metrics["cost"]) == OPTIMA[name]
    assert int(result.metrics["expansions"]) >= 1 and float(result.metrics["engine_internal_time"]) > 0
    dom, task = name.split("/")
    code, out, _ = run_cli(capsys, "solve", PDDL_DIR / dom / "domain.pddl", PDDL_DIR / dom / f"{task}.pddl",
                           "--device", "cpu")
    assert code == 0
    assert json.loads(out)["cost"] == len(result.plan.actions)


def _tour(cost_metric: bool = True) -> tuple[Problem, list[Object]]:
    """Four places, a move between any two (not to a visited one); moving l0 -> l3 -> l1 costs 2 against 10 for
    the direct move, so the optimal plan is the longer one."""
    loc = UserType("Loc")
    at = Fluent("at", BoolType(), l=loc)
    visited = Fluent("visited", BoolType(), l=loc)
    dist = Fluent("dist", IntType(), a=loc, b=loc)
    move = InstantaneousAction("move", a=loc, b=loc)
    a, b = move.parameters
    move.add_precondition(at(a))
    move.add_precondition(Not(Equals(a, b)))
    move.add_precondition(Not(visited(b)))
    move.add_effect(at(a), False)
    move.add_effect(at(b), True)
    move.add_effect(visited(b), True)
    problem = Problem("tour")
    problem.add_fluent(at, default_initial_value=False)
    problem.add_fluent(visited, default_initial_value=False)
    problem.add_fluent(dist, default_initial_value=10)
    problem.add_action(move)
    places = [Object(f"l{i}", loc) for i in range(4)]
    problem.add_objects(places)
    problem.set_initial_value(at(places[0]), True)
    problem.set_initial_value(visited(places[0]), True)
    problem.set_initial_value(dist(places[0], places[3]), 1)
    problem.set_initial_value(dist(places[3], places[1]), 1)
    problem.add_goal(at(places[1]))
    if cost_metric:
        problem.add_quality_metric(MinimizeActionCosts({move: dist(a, b)}))
    return problem, places


def test_action_costs_negative_conditions_and_equality():
    problem, _ = _tour()
    assert {"NEGATIVE_CONDITIONS", "EQUALITIES", "ACTIONS_COST"} <= set(problem.kind.features)
    with OneshotPlanner(name="warp-goap") as planner:
        result = planner.solve(problem)
    assert result.status == Result.SOLVED_OPTIMALLY
    assert [str(a) for a in result.plan.actions] == ["move(l0, l3)", "move(l3, l1)"]
    check = _validate(problem, result.plan)
    assert check.status.name == "VALID"
    assert [float(v) for v in check.metric_evaluations.values()] == [2.0]
    # without the metric every move costs 1: the direct move
    plain, _ = _tour(cost_metric=False)
    with OneshotPlanner(name="warp-goap") as planner:
        assert [str(a) for a in planner.solve(plain).plan.actions] == ["move(l0, l1)"]


def test_unsolvable_and_already_solved():
    problem, places = _tour(cost_metric=False)
    problem.clear_goals()
    problem.add_goal(Not(problem.fluent("at")(places[0])))
    problem.add_goal(problem.fluent("visited")(places[0]))
    problem.add_goal(Not(problem.fluent("visited")(places[2])))
    problem.add_goal(Not(problem.fluent("visited")(places[1])))
    problem.add_goal(Not(problem.fluent("visited")(places[3])))  # must leave l0 but visit nothing: impossible
    with OneshotPlanner(name="warp-goap") as planner:
        assert planner.solve(problem).status == Result.UNSOLVABLE_PROVEN
    problem.clear_goals()
    problem.add_goal(problem.fluent("at")(places[0]))
    with OneshotPlanner(name="warp-goap") as planner:
        result = planner.solve(problem)
    assert result.status == Result.SOLVED_OPTIMALLY and len(result.plan.actions) == 0


def test_a_conditional_effect_the_plan_needs_is_planned_and_validated():
    """Marking a place lights it only where the walker is (a conditional effect): the goal needs l1 lit, so the
    plan walks there and marks it; UP's validator replays the conditional effect."""
    problem, places = _tour(cost_metric=False)
    loc = problem.user_type("Loc")
    lit = Fluent("lit", BoolType(), l=loc)
    problem.add_fluent(lit, default_initial_value=False)
    mark = InstantaneousAction("mark", a=loc)
    a = mark.parameter("a")
    mark.add_effect(lit(a), True, problem.fluent("at")(a))
    problem.add_action(mark)
    problem.clear_goals()
    problem.add_goal(lit(places[1]))
    assert problem.kind.has_conditional_effects() and goap.up.WarpGoapEngine.supports(problem.kind)
    with OneshotPlanner(name="warp-goap") as planner:
        result = planner.solve(problem)
    assert result.status == Result.SOLVED_OPTIMALLY
    steps = [(str(s.action.name), [str(p) for p in s.actual_parameters]) for s in result.plan.actions]
    assert steps[-1] == ("mark", ["l1"]) and len(steps) == 2
    assert _validate(problem, result.plan).status.name == "VALID"


def test_numeric_fluents_refused_through_supports():
    problem, places = _tour(cost_metric=False)
    fuel = Fluent("fuel", IntType(0, 10))
    problem.add_fluent(fuel, default_initial_value=5)
    move = problem.action("move")
    move.add_decrease_effect(fuel, 1)
    assert problem.kind.has_numeric_fluents() or problem.kind.has_int_fluents()
    assert not goap.up.WarpGoapEngine.supports(problem.kind)
    # UP's own selection by kind never picks the engine for it ...
    factory = get_environment().factory
    names = [n for n in factory.engines if factory.engine(n).is_oneshot_planner()
             and factory.engine(n).supports(problem.kind)]
    assert "warp-goap" not in names
    # ... and a solve forced past UP's check (an engine asked for by name only warns) is a result, not a crash
    with pytest.warns(UserWarning, match="warp-goap"), OneshotPlanner(name="warp-goap") as planner:
        result = planner.solve(problem)
    assert result.status == Result.UNSUPPORTED_PROBLEM and result.plan is None
    assert "FLUENTS" in " ".join(m.message for m in result.log_messages)


def test_weighted_planner_is_satisficing_and_bad_params_are_usage_errors():
    problem, _ = _tour()
    with OneshotPlanner(name="warp-goap", params={"planner": "warp-wastar", "weight": 2}) as planner:
        result = planner.solve(problem)
    assert result.status == Result.SOLVED_SATISFICING
    assert _validate(problem, result.plan).status.name == "VALID"
    with pytest.raises(up.exceptions.UPUsageError, match="unknown planner 'astar'"):
        OneshotPlanner(name="warp-goap", params={"planner": "astar"})
    with pytest.raises(up.exceptions.UPUsageError, match="heuristic"):
        OneshotPlanner(name="warp-goap", params={"heuristic": "h2"})
    with pytest.raises(up.exceptions.UPUsageError, match="unknown parameter"):
        OneshotPlanner(name="warp-goap", params={"max_node": 5})


def test_too_small_a_plan_length_is_incomplete_not_wrong():
    problem, _ = _tour()
    with OneshotPlanner(name="warp-goap", params={"max_plan_length": 1}) as planner:
        result = planner.solve(problem)
    assert result.status == Result.UNSOLVABLE_INCOMPLETELY and result.plan is None
    assert "max_plan_length=1" in " ".join(m.message for m in result.log_messages)


def test_registration_is_idempotent_and_an_up_ini_registers_it(tmp_path):
    from unified_planning.environment import Environment

    goap.up.register()
    assert get_environment().factory.engines.count("warp-goap") == 1
    assert get_environment().factory.engines.count("warp-goap-anytime") == 1
    env = Environment()
    assert "warp-goap" not in env.factory.engines
    ini = tmp_path / "up.ini"
    ini.write_text("[engine warp-goap]\nmodule_name: goap.up\nclass_name: WarpGoapEngine\n")
    env.factory.configure_from_file(str(ini))
    assert env.factory.engine("warp-goap") is goap.up.WarpGoapEngine


def test_timeout_is_a_timeout_result():
    problem = _read("depot/task03")  # about 14,000 expansions: far beyond a tenth of a second in Python
    with OneshotPlanner(name="warp-goap", params={"planner": "reference"}) as planner:
        result = planner.solve(problem, timeout=0.1)
    assert result.status == Result.TIMEOUT and result.plan is None


def test_anytime_engine_gives_cheaper_plans_then_the_optimum():
    from unified_planning.engines import AnytimeGuarantee
    from unified_planning.shortcuts import AnytimePlanner

    problem = _read("blocks/task06")  # weighted A* at 5 finds a plan costlier than the optimum here
    assert goap.up.WarpGoapAnytimeEngine.ensures(AnytimeGuarantee.INCREASING_QUALITY)
    with AnytimePlanner(name="warp-goap-anytime", params={"device": "cpu"}) as planner:
        results = list(planner.get_solutions(problem))
    assert [r.status for r in results[:-1]] == [Result.INTERMEDIATE] * (len(results) - 1) and len(results) >= 2
    assert results[-1].status == Result.SOLVED_OPTIMALLY
    costs = [len(r.plan.actions) for r in results]
    assert costs == sorted(set(costs), reverse=True)  # strictly cheaper each time
    assert costs[-1] == OPTIMA["blocks/task06"] < costs[0]
    assert [r.metrics.get("weight") for r in results][0] == "5"
    for r in results:
        assert _validate(problem, r.plan).status.name == "VALID"
    with pytest.raises(up.exceptions.UPUsageError, match="strictly decreasing"):
        AnytimePlanner(name="warp-goap-anytime", params={"weights": [1, 2]})
    with pytest.raises(up.exceptions.UPUsageError, match="takes weights"):
        AnytimePlanner(name="warp-goap-anytime", params={"weight": 2})

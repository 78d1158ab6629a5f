"""ADL: conditional effects in goap domains and PDDL (both planners node for node, optimal against brute force,
the validator), and quantified and disjunctive preconditions and goals compiled away (hand-made tasks whose
optimal plans are known)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from goap.domain import DomainError, domain_from_spec
from goap.pddl import PddlError, load_pddl
from goap.pddl.validate import parse_plan, validate_plan


# --- conditional effects in goap domains -------------------------------------------------------------------------
def when_task(seed: int, n_problems: int = 24):
    """A random domain whose actions have conditional effects (``when``), start values and goal indices."""
    rng = random.Random(seed)
    kinds = []
    facts: dict = {}
    for i in range(rng.randint(3, 6)):
        kind = rng.choice(["bool", "bool", "int"])
        if kind == "bool":
            facts[f"f{i}"] = False
            kinds.append((kind, 1))
        else:
            hi = rng.randint(2, 5)
            facts[f"f{i}"] = {"type": "int", "min": 0, "max": hi}
            kinds.append((kind, hi))

    def condition(i: int):
        kind, hi = kinds[i]
        if kind == "bool":
            return rng.random() < 0.5
        op = rng.choice(["==", ">=", "<="])
        v = rng.randint(0, hi)
        return v if op == "==" else f"{op} {v}"

    def effect(i: int):
        kind, hi = kinds[i]
        if kind == "bool":
            return rng.random() < 0.6
        return f"+= {rng.randint(1, 2)}" if rng.random() < 0.5 else rng.randint(0, hi)

    idx = range(len(kinds))
    actions = {}
    for a in range(rng.randint(3, 8)):
        spec = {"cost": rng.choice([1, 1, 2, 3]),
                "pre": {f"f{i}": condition(i) for i in rng.sample(idx, rng.randint(0, 2))},
                "effects": {f"f{i}": effect(i) for i in rng.sample(idx, rng.randint(0, 1))}}
        spec["when"] = [{"if": {f"f{i}": condition(i) for i in rng.sample(idx, rng.randint(1, 2))},
                         "then": {f"f{i}": effect(i) for i in rng.sample(idx, rng.randint(1, 2))}}
                        for _ in range(rng.randint(0 if spec["effects"] else 1, 3))]
        actions[f"a{a}"] = spec
    goals = {f"g{g}": {"priority": 1, "want": {f"f{i}": condition(i) for i in rng.sample(idx, rng.randint(1, 3))}}
             for g in range(3)}
    domain = domain_from_spec({"name": f"when-{seed}", "facts": facts, "actions": actions, "goals": goals})
    values = np.array([[rng.randint(0, hi) for _, hi in kinds] for _ in range(n_problems)], dtype=np.int64)
    goal_ix = np.array([rng.randrange(3) for _ in range(n_problems)], dtype=np.int32)
    return domain, values, goal_ix


@pytest.mark.parametrize("heuristic", ["hmax_depth2", "hmax", "hmax_depth1", "lmcut", "pdb"])
def test_conditional_effects_reference_and_warp_agree_and_are_optimal(heuristic):
    from goap import Status
    from goap.planners.reference import ReferencePlanner
    from goap.planners.warp_astar import WarpAStarPlanner
    from tests.test_heuristics import uniform_cost
    from tests.test_warp_astar import DEVICE, assert_same

    solved = fired = 0
    for seed in range(25):
        domain, values, goals = when_task(seed)
        ref = ReferencePlanner(domain, max_nodes=4096, heuristic=heuristic)
        fast = WarpAStarPlanner(ref.tables, max_nodes=4096, heuristic=heuristic, device=DEVICE)
        states = ref.tables.pack_states(values)
        r, f = ref.plan(states, goals), fast.plan(states, goals)
        assert_same(r, f, domain, values, goals, ref.tables.goals)  # node for node, every plan replayed
        for i, status in enumerate(r.status):
            start = tuple(int(v) for v in values[i])
            best = uniform_cost(domain, start, domain.goals[goals[i]], [a.cost for a in domain.actions],
                                [True] * len(domain.actions))
            if best is None or status == Status.BUDGET:
                continue
            if status == Status.NO_PLAN:
                assert best == math.inf, (seed, i)
                continue
            assert math.isclose(r.cost[i], best), (seed, i, r.cost[i], best)
            solved += 1
            state = start
            for a in r.plan(i):
                action = domain.actions[a]
                fired += any(domain.satisfies(state, w.cond) for w in action.when)
                state = domain.apply(state, action)
    assert solved >= 100 and fired >= 50, (solved, fired)  # conditional effects did fire on the plans


def test_conditional_effect_semantics():
    """Conditions are judged on the state before the action; unconditional effects first, then each firing
    conditional effect in order."""
    domain = domain_from_spec({
        "name": "chop", "facts": {"has_axe": False, "wood": {"type": "int", "min": 0, "max": 9}, "tired": False},
        "actions": {
            "chop": {"cost": 1, "effects": {"wood": "+= 1"},
                     "when": [{"if": {"has_axe": True}, "then": {"wood": "+= 2"}},
                              {"if": {"tired": False}, "then": {"tired": True}},
                              {"if": {"tired": True}, "then": {"wood": "-= 1"}}]},
            "fetch_axe": {"cost": 3, "effects": {"has_axe": True}},
            "rest": {"cost": 1, "pre": {"tired": True}, "effects": {"tired": False}},
        },
        "goals": {"wood": {"want": {"wood": ">= 6"}}},
    })
    s = domain.default_state()
    chop = domain.actions[domain.action_index("chop")]
    s1 = domain.apply(s, chop)
    assert s1 == (0, 1, 1)  # +1, not tired before: now tired, and the -1 did not fire (judged before)
    assert domain.apply(s1, chop) == (0, 1, 1)  # +1 -1, tired stays (the second effect did not fire)
    with_axe = domain.apply(s, domain.actions[domain.action_index("fetch_axe")])
    assert domain.apply(with_axe, chop) == (1, 3, 1)
    from goap.planners.reference import ReferencePlanner

    p = ReferencePlanner(domain, max_nodes=10_000)
    batch = p.plan(p.tables.pack_states(np.array([s])), np.array([0]))
    # with the axe (3), chops give +3 then +2: three chops (cost 6) beat six plain chops and rests (cost 11)
    from tests.test_heuristics import uniform_cost

    assert batch.cost[0] == 6 == uniform_cost(domain, s, domain.goals[0], [3 if a.name == "fetch_axe" else 1
                                                                          for a in domain.actions], [True] * 3)
    assert domain.replay(s, batch.plan(0))[1] >= 6


@pytest.mark.parametrize("when,message", [
    ({"if": {"nope": True}, "then": {"wood": "+= 1"}}, "unknown fact 'nope'"),
    ({"if": {}, "then": {"wood": "+= 1"}}, "at least one condition"),
    ({"if": {"wood": 3}}, "exactly the keys 'if' and 'then'"),
    ({"if": {"wood": 3}, "then": {"wood": "+= 99"}}, "the step must be in 1..9"),
])
def test_bad_conditional_effects_are_named(when, message):
    spec = {"name": "d", "facts": {"wood": {"type": "int", "min": 0, "max": 9}},
            "actions": {"chop": {"cost": 1, "when": [when]}}, "goals": {"g": {"want": {"wood": 9}}}}
    with pytest.raises(DomainError) as e:
        domain_from_spec(spec)
    assert message in str(e.value) and e.value.item == "action 'chop'"


def test_domain_file_with_conditional_effects(tmp_path):
    from goap.domain_file import load_domain

    (tmp_path / "d.toml").write_text('''name = "wood"
[facts]
has_axe = false
wood = { type = "int", min = 0, max = 9 }
[actions.chop]
cost = 1
effects = { wood = "+= 1" }
when = [{ if = { has_axe = true }, then = { wood = "+= 2" } }]
[actions.fetch_axe]
cost = 2
effects = { has_axe = true }
[goals.wood]
want = { wood = ">= 7" }
''')
    domain = load_domain(tmp_path / "d.toml")
    (w,) = domain.actions[domain.action_index("chop")].when
    assert [c.fact for c in w.cond] == ["has_axe"] and w.effects[0].op == "+="
    from goap.planners.reference import ReferencePlanner

    p = ReferencePlanner(domain, max_nodes=10_000)
    batch = p.plan(p.tables.pack_states(np.array([domain.default_state()])), np.array([0]))
    assert batch.cost[0] == 2 + 3  # fetch the axe, then three chops of 3 (not seven chops of 1)


# --- PDDL -----------------------------------------------------------------------------------------------------
SWITCHES = """(define (domain switches) (:requirements :adl :typing)
  (:types lamp room)
  (:predicates (on ?l - lamp) (in ?l - lamp ?r - room) (dark ?r - room) (visited ?r - room) (master))
  (:action flip-master :parameters () :precondition (not (master))
    :effect (and (master) (forall (?l - lamp) (when (not (on ?l)) (on ?l)))))
  (:action toggle :parameters (?l - lamp)
    :effect (and (when (on ?l) (not (on ?l))) (when (not (on ?l)) (on ?l))))
  (:action visit :parameters (?r - room)
    :precondition (or (not (dark ?r)) (exists (?l - lamp) (and (in ?l ?r) (on ?l))))
    :effect (visited ?r)))
"""


def _switches(tmp_path, init: str, goal: str):
    (tmp_path / "d.pddl").write_text(SWITCHES)
    (tmp_path / "p.pddl").write_text(f"""(define (problem p) (:domain switches)
  (:objects l1 l2 l3 - lamp r1 r2 r3 - room)
  (:init (in l1 r1) (in l2 r2) (in l3 r3) (dark r1) (dark r2) (dark r3) {init})
  (:goal {goal}))""")
    return load_pddl(tmp_path / "d.pddl", tmp_path / "p.pddl")


def _solve(task, planner="reference"):
    from goap.pddl.validate import plan_steps
    from goap.planners import make_planner

    options = {"max_nodes": 100_000}
    if planner != "reference":
        options.update(device="cpu", heuristic="hmax")
    p = make_planner(planner, task.domain, **options)
    batch = p.plan(p.tables.pack(task.state)[None], np.array([task.goal], dtype=np.int32))
    steps = plan_steps(batch.plan_names(0, task.domain))
    return float(batch.cost[0]), steps


@pytest.mark.parametrize("planner", ["reference", "warp"])
def test_pddl_forall_when_exists_or_known_optimum(tmp_path, planner):
    # visiting all three dark rooms: one master flip (all lamps on) beats three toggles
    task = _switches(tmp_path, "", "(forall (?r - room) (visited ?r))")
    cost, steps = _solve(task, planner)
    assert cost == 4 and steps[0] == ("flip-master", ())
    check = validate_plan(task.lifted, task.problem, steps)
    assert check.valid and check.cost == 4
    # with l2 on already, r2 needs nothing; an (or ...) goal takes the cheaper disjunct
    task = _switches(tmp_path, "(on l2)", "(or (and (visited r1) (visited r3)) (visited r2))")
    cost, steps = _solve(task, planner)
    assert cost == 1 and steps == [("visit", ("r2",))]


def test_pddl_imply_and_negated_quantifier(tmp_path):
    # (imply (dark r1) (visited r1)) and not every lamp on: toggle l1 on, visit r1, and l2/l3 stay off
    task = _switches(tmp_path, "", "(and (imply (dark r1) (visited r1)) (not (forall (?l - lamp) (on ?l))))")
    cost, steps = _solve(task)
    assert cost == 2 and steps == [("toggle", ("l1",)), ("visit", ("r1",))]
    assert validate_plan(task.lifted, task.problem, steps).valid


def test_validator_replays_conditional_effects(tmp_path):
    task = _switches(tmp_path, "(on l1)", "(and (on l1) (on l2))")
    good = parse_plan("(toggle l2)\n")
    assert validate_plan(task.lifted, task.problem, good).valid
    # toggling l1 turns it off (the effect judged on the state before), so the goal fails
    bad = validate_plan(task.lifted, task.problem, parse_plan("(toggle l2)\n(toggle l1)\n"))
    assert not bad.valid and "goal" in bad.error
    # the disjunctive precondition: r1 is dark and l1 off after the flip-flop
    bad = validate_plan(task.lifted, task.problem, parse_plan("(toggle l1)\n(visit r1)\n"))
    assert not bad.valid and "step 2 (visit r1)" in bad.error


def test_add_wins_over_a_conditional_delete(tmp_path):
    (tmp_path / "d.pddl").write_text("""(define (domain aw) (:requirements :adl)
      (:predicates (p) (q) (r))
      (:action a :parameters () :precondition (not (r))
        :effect (and (p) (r) (when (q) (not (p))) (when (p) (q)))))""")
    (tmp_path / "p.pddl").write_text("(define (problem x) (:domain aw) (:init (q) (p)) (:goal (and (p) (q) (r))))")
    task = load_pddl(tmp_path / "d.pddl", tmp_path / "p.pddl")
    cost, steps = _solve(task)
    assert cost == 1 and validate_plan(task.lifted, task.problem, steps).valid


def test_too_many_disjuncts_is_an_error(tmp_path, monkeypatch):
    from goap.pddl import normal

    monkeypatch.setattr(normal, "MAX_DISJUNCTS", 4)
    (tmp_path / "d.pddl").write_text(SWITCHES)
    (tmp_path / "p.pddl").write_text("""(define (problem p) (:domain switches) (:objects l1 l2 l3 - lamp r1 - room)
      (:init) (:goal (forall (?l - lamp) (or (on ?l) (master)))))""")
    with pytest.raises(PddlError) as e:
        load_pddl(tmp_path / "d.pddl", tmp_path / "p.pddl")
    assert e.value.item == "goal" and "more than 4 disjuncts" in str(e.value)


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_conditional_effects_round_trip_through_files(tmp_path, suffix):
    from goap.domain_file import load_domain, save_domain

    domain, _, _ = when_task(3)
    assert any(a.when for a in domain.actions)
    save_domain(domain, tmp_path / f"d{suffix}")
    assert load_domain(tmp_path / f"d{suffix}") == domain


def test_domain_checks_count_conditional_effects():
    """`goap validate`'s checks: a goal reached only through a conditional effect is reachable, its facts used."""
    from goap.analysis import check_domain

    domain = domain_from_spec({
        "name": "d", "facts": {"x": False, "y": False},
        "actions": {"a": {"cost": 1, "when": [{"if": {"y": False}, "then": {"x": True}}]}},
        "goals": {"g": {"want": {"x": True}}},
    })
    assert check_domain(domain).warnings == []


def test_achiever_lists_per_precondition():
    """`goap.encoding`'s relaxed tables: per precondition, the actions that can achieve it, in action order (the
    lists are shared per distinct condition; this checks the layout against the definition)."""
    from goap.domain import achieves
    from goap.encoding import encode
    from tests.conftest import PDDL_DIR

    depot = load_pddl(PDDL_DIR / "depot" / "domain.pddl", PDDL_DIR / "depot" / "task02.pddl").domain
    for domain in (when_task(5)[0], depot):
        rt = encode(domain).relaxed
        k = 0
        for action in domain.actions:
            for c in action.pre:
                want = [b for b, other in enumerate(domain.actions) if achieves(other, c)]
                assert list(rt.pre_ach_action[rt.pre_ach_start[k]:rt.pre_ach_start[k + 1]]) == want
                k += 1
        assert k == len(rt.pre_ach_start) - 1


def test_deeply_nested_formula_is_an_error(tmp_path):
    nested = "(p)"
    for _ in range(200):
        nested = f"(not {nested})"
    (tmp_path / "d.pddl").write_text(f"""(define (domain deep) (:predicates (p))
      (:action a :parameters () :precondition {nested} :effect (p)))""")
    (tmp_path / "p.pddl").write_text("(define (problem x) (:domain deep) (:init) (:goal (p)))")
    with pytest.raises(PddlError) as e:
        load_pddl(tmp_path / "d.pddl", tmp_path / "p.pddl")
    assert "nested more than 64 levels deep" in str(e.value) and e.value.item == "action 'a'"

"""Pattern databases (heuristic ``pdb``): the tables built on the device against numpy, admissibility and
optimality against brute force, the Warp planner against the reference node for node, perfection where a goal's
cone fits, IPC tasks, and the size limits."""

from __future__ import annotations

import dataclasses
import math
import os
import random

import numpy as np
import pytest

from goap import Status, load_domain
from goap.bench.random_domains import random_domain, random_problems
from goap.domain import Condition, Domain, Effect, When
from goap.pddl import load_pddl, optimal_costs, pddl_tasks
from goap.planners import make_planner
from goap.planners.pdb import (
    MAX_PDB_STATES,
    MIN_PDB_STATES,
    cone,
    distances,
    pattern_size,
    pattern_tables,
    select_patterns,
)
from goap.planners.reference import ReferencePlanner
from goap.planners.warp_astar import WarpAStarPlanner
from tests.conftest import PDDL_DIR
from tests.test_heuristics import uniform_cost
from tests.test_types_costs import agent_rows, check_against_brute_force, dijkstra, typed_problems

DEVICE = os.environ.get("GOAP_TEST_DEVICE", "cpu")


def with_whens(domain: Domain, seed: int, share: float = 0.4) -> Domain:
    """``domain`` with conditional effects added to a share of its actions: each reads one or two random facts
    and sets or steps another (so that a pattern often holds the effect's fact but not the condition's)."""
    rng = random.Random(seed)
    facts = domain.facts

    def condition(f: int) -> Condition:
        fact = facts[f]
        if fact.max - fact.min == 1:
            return Condition(fact.name, "==", rng.randint(fact.min, fact.max))
        return Condition(fact.name, rng.choice(["==", ">=", "<=", "!="]), rng.randint(fact.min, fact.max))

    def effect(f: int) -> Effect:
        fact = facts[f]
        if fact.max - fact.min > 1 and rng.random() < 0.5:
            return Effect(fact.name, rng.choice(["+=", "-="]), rng.randint(1, 2))
        return Effect(fact.name, "=", rng.randint(fact.min, fact.max))

    actions = []
    for action in domain.actions:
        if rng.random() < share:
            whens = tuple(
                When(cond=tuple(condition(f) for f in rng.sample(range(len(facts)), rng.randint(1, 2))),
                     effects=(effect(rng.randrange(len(facts))),))
                for _ in range(rng.randint(1, 2))
            )
            action = dataclasses.replace(action, when=whens)
        actions.append(action)
    return Domain(domain.name + "-when", facts, tuple(actions), domain.goals, domain.types)


def game_domain(seed: int, n_facts: int, **options) -> Domain:
    """A random domain with every feature: bools and ints, cost terms, agent types and conditional effects."""
    base = random_domain(seed, n_facts, int_fraction=0.4, cost_terms=0.4, n_types=2, **options)
    return with_whens(base, seed)


def capped_optimum(domain, start, goal, base, scale, usable, limit=20_000):
    """The optimal cost by uniform-cost search (state-dependent costs included), or None past ``limit`` states."""
    return dijkstra(domain, start, goal, base, scale, usable, limit=limit, capped=True)


def assert_same(r, f):
    for name in ("status", "cost", "length", "expanded", "actions", "level", "expanded_before_last_f"):
        np.testing.assert_array_equal(getattr(f, name), getattr(r, name), err_msg=name)


# --- the tables ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("source", "pdb_states"), [("soldier", 1 << 12), ("village", 1 << 12), ("random", 64),
                                                    ("random", 4096)])
def test_device_tables_equal_numpy_bit_for_bit(source, pdb_states, worlds_dir):
    domain = game_domain(5, 14) if source == "random" else load_domain(worlds_dir / source / "domain.toml")
    fast = WarpAStarPlanner(domain, heuristic="pdb", pdb_states=pdb_states, device=DEVICE)
    host = pattern_tables(domain, domain.goals, fast.tables.min_cost, pdb_states)
    dist = fast._goal_struct(fast.tables.goals)[2].dist.numpy()
    finite = unreachable = 0
    for g, goal in enumerate(domain.goals):
        patterns = select_patterns(domain, goal.want, pdb_states)
        assert patterns == host.patterns[g]
        assert sum(pattern_size(domain, p) for p in patterns) <= pdb_states
        for i, p in enumerate(patterns):
            k = host.goal_start[g] + i
            want = distances(domain, p, fast.tables.min_cost, goal.want)
            np.testing.assert_array_equal(dist[host.dist_start[k]:host.dist_start[k + 1]], want)
            finite += int(np.isfinite(want).sum())
            unreachable += int(np.isinf(want).sum())
    assert finite > 0
    if source == "random":
        assert any(a.when for a in domain.actions)


def test_patterns_cover_the_cone_when_it_fits_and_split_the_goal_otherwise():
    domain = game_domain(7, 40)
    for goal in domain.goals:
        whole = cone(domain, goal.want)
        size = pattern_size(domain, whole)
        if size <= 1 << 16:
            assert select_patterns(domain, goal.want, 1 << 16) == (tuple(whole),) or any(
                a.when for a in domain.actions)
        small = select_patterns(domain, goal.want, 16)
        assert 1 <= len(small) <= 4
        assert all(pattern_size(domain, p) <= 16 for p in small)
        goal_facts = {domain.fact_index(c.fact) for c in goal.want}
        assert set(small[0]) & goal_facts  # goal facts first


# --- admissible and optimal ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("seed", "pdb_states"), [(41, 16), (42, 256), (43, 1 << 16)])
def test_admissible_and_optimal_against_brute_force(seed, pdb_states):
    domain = game_domain(seed, 8, max_int=4, depth=4)
    problems, costs, enabled, types = typed_problems(domain, 30, seed)
    costs[::5] = 0.0  # zero-cost rows: the factor is 0, h falls back to the step bound
    costs[1::7, :] = domain.actions[0].cost  # flat rows
    enabled[2::9] = False  # nothing usable: the factor is inf, every unmet goal a dead end
    ref = ReferencePlanner(domain, max_nodes=4096, heuristic="pdb", pdb_states=pdb_states)
    fast = make_planner("warp", ref.tables, max_nodes=4096, heuristic="pdb", pdb_states=pdb_states, device=DEVICE)
    states = ref.tables.pack_states(problems.values)
    solved = 0
    for c, e, t in ((None, None, None), (costs, enabled, types)):
        r = ref.plan(states, problems.goals, c, e, types=t)
        assert_same(r, fast.plan(states, problems.goals, c, e, types=t))
        solved += check_against_brute_force(domain, ref, r, problems, c, e, t)
    assert solved >= 10


# --- node for node ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("seed", "n_facts", "words", "pdb_states"),
                         [(51, 24, 1, 1 << 16), (52, 110, 3, 256), (54, 190, 6, 4096)])
def test_warp_matches_reference(seed, n_facts, words, pdb_states):
    domain = game_domain(seed, n_facts)
    n = 60
    problems, costs, enabled, types = typed_problems(domain, n, seed)
    costs[: n // 3] = [a.cost for a in domain.actions]  # a third keep the domain's base costs
    ref = ReferencePlanner(domain, max_nodes=64, node_ceiling=512, heuristic="pdb", pdb_states=pdb_states)
    assert ref.tables.n_words == words
    fast = WarpAStarPlanner(ref.tables, max_nodes=64, node_ceiling=512, heuristic="pdb", pdb_states=pdb_states,
                            device=DEVICE)
    states = ref.tables.pack_states(problems.values)
    levels, seen = set(), set()
    for c, e, t in ((None, None, None), (costs, enabled, types)):
        r = ref.plan(states, problems.goals, c, e, types=t)
        f = fast.plan(states, problems.goals, c, e, types=t)
        assert_same(r, f)
        levels |= set(r.level.tolist())
        seen |= set(r.status.tolist())
    assert Status.OK in seen and len(seen) >= 2, seen
    # Admissible and optimal on these many-word states too (the queries brute force can settle).
    checked = 0
    for i in range(0, n, 4):
        base, scale, usable = agent_rows(domain, i, costs, enabled, types)
        start = tuple(int(v) for v in problems.values[i])
        goal = domain.goals[problems.goals[i]]
        best = capped_optimum(domain, start, goal, base, scale, usable, limit=4000)
        if best is None:
            continue
        least, _ = ref.agent_costs(base, tuple(scale))
        assert ref.heuristic_function(goal, least, usable)(start) <= best + 1e-9
        if r.status[i] in (Status.OK, Status.SATISFIED):
            assert float(r.cost[i]) == pytest.approx(best, rel=1e-12, abs=1e-12)
        elif r.status[i] == Status.NO_PLAN:
            assert math.isinf(best)
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("world", ["soldier", "village"])
def test_warp_matches_reference_on_worlds(world, worlds_dir):
    domain = load_domain(worlds_dir / world / "domain.toml")
    ref = ReferencePlanner(domain, heuristic="pdb")
    fast = WarpAStarPlanner(ref.tables, heuristic="pdb", device=DEVICE)
    problems = random_problems(domain, 200, seed=3, walk=8)
    states = ref.tables.pack_states(problems.values)
    r, f = ref.plan(states, problems.goals), fast.plan(states, problems.goals)
    assert_same(r, f)
    assert (r.status == Status.OK).sum() > 50
    # Optimal: the same costs as the h_max planner, with no more expansions in all.
    hmax = ReferencePlanner(ref.tables, heuristic="hmax").plan(states, problems.goals)
    np.testing.assert_array_equal(r.cost, hmax.cost)


def test_ad_hoc_goal_table_gets_its_own_tables():
    domain = game_domain(61, 14)
    ref = ReferencePlanner(domain, heuristic="pdb", pdb_states=256)
    fast = WarpAStarPlanner(ref.tables, heuristic="pdb", pdb_states=256, device=DEVICE)
    goals = [dataclasses.replace(g, want=g.want[:1]) for g in domain.goals[:3]] + [domain.goals[0]]
    table = ref.tables.encode_goals(goals)
    problems = random_problems(domain, 40, seed=61)
    idx = problems.goals % len(goals)
    states = ref.tables.pack_states(problems.values)
    assert_same(ref.plan(states, idx, goal_table=table), fast.plan(states, idx, goal_table=table))


def test_per_agent_costs_scale_the_tables_by_the_least_ratio():
    """Nothing is rebuilt per agent: h for costs c' is min over positive-cost actions of c'_a / c_a times the table
    value; disabling the action of least ratio raises the factor to the next one."""
    domain = random_domain(81, 12, int_fraction=0.4)
    ref = ReferencePlanner(domain, heuristic="pdb", pdb_states=1 << 12)
    problems = random_problems(domain, 40, seed=81)
    base = [float(a.cost) for a in domain.actions]
    A = len(base)
    tripled = [3 * c for c in base]
    cheap = list(tripled)
    cheap[0] = base[0] / 2  # ratio 0.5 for action 0, 3 for the others
    off = [a != 0 for a in range(A)]
    positive = 0
    for values, g in zip(problems.values, problems.goals, strict=True):
        start = tuple(int(v) for v in values)
        goal = domain.goals[g]
        h1 = ref.heuristic_function(goal)(start)
        assert ref.heuristic_function(goal, tripled, [True] * A)(start) == 3 * h1  # the step bound triples too
        d = ref.patterns.value(goal.want, start, 1.0)
        assert ref.patterns.value(goal.want, start, 0.5) == 0.5 * d
        positive += 0 < h1 < math.inf
    assert positive >= 10
    patterns = ref.patterns
    assert patterns.factor(base, [True] * A) == 1.0
    assert patterns.factor(tripled, [True] * A) == 3.0
    assert patterns.factor(cheap, [True] * A) == 0.5
    assert patterns.factor(cheap, off) == 3.0  # the disabled action is left out of the min
    assert patterns.factor(base, [False] * A) == math.inf


# --- perfect where the cone fits ----------------------------------------------------------------------------------
def test_perfect_where_every_cone_fits():
    """No cost terms, every goal's whole cone within pdb_states: h is the optimal cost from every state."""
    domain = random_domain(71, 9, int_fraction=0.4, max_int=4, depth=4)
    pdb_states = 1 << 16
    for goal in domain.goals:
        assert pattern_size(domain, cone(domain, goal.want)) <= pdb_states
        assert select_patterns(domain, goal.want, pdb_states) == (tuple(cone(domain, goal.want)),)
    ref = ReferencePlanner(domain, heuristic="pdb", pdb_states=pdb_states)
    problems = random_problems(domain, 120, seed=71, walk=6)
    costs = [a.cost for a in domain.actions]
    finite = 0
    for values, g in zip(problems.values, problems.goals, strict=True):
        start = tuple(int(v) for v in values)
        goal = domain.goals[g]
        best = uniform_cost(domain, start, goal, costs, [True] * len(costs))
        assert ref.heuristic_function(goal)(start) == best
        finite += not math.isinf(best) and best > 0
    assert finite >= 40
    # And A* with it expands only the plan's states (ties aside, h perfect: every node expanded is on a plan).
    states = ref.tables.pack_states(problems.values)
    r = ref.plan(states, problems.goals)
    ok = r.status == Status.OK
    np.testing.assert_array_equal(r.expanded[ok], r.length[ok])


@pytest.mark.slow
def test_soldier_perfect_where_the_cone_fits(worlds_dir):
    """kill_enemy's cone (14 facts, 1,382,400 abstract states) fits pdb_states = 2**21: h is the optimal cost from
    uniformly random soldier states, and A* expands exactly the plan's states."""
    domain = load_domain(worlds_dir / "soldier" / "domain.toml")
    goal = domain.goals[domain.goal_index("kill_enemy")]
    whole = cone(domain, goal.want)
    pdb_states = 1 << 21
    assert pattern_size(domain, whole) <= pdb_states
    assert select_patterns(domain, goal.want, pdb_states) == (tuple(whole),)
    ref = ReferencePlanner(domain, heuristic="pdb", pdb_states=pdb_states)
    rng = np.random.default_rng(9)
    lo = np.array([f.min for f in domain.facts])
    hi = np.array([f.max for f in domain.facts])
    values = rng.integers(lo, hi + 1, size=(150, len(lo)))
    costs = [a.cost for a in domain.actions]
    h = ref.heuristic_function(goal)
    reachable = 0
    for row in values:
        start = tuple(int(v) for v in row)
        best = uniform_cost(domain, start, goal, costs, [True] * len(costs))
        assert h(start) == best
        reachable += not math.isinf(best) and best > 0
    assert reachable >= 50
    table = ref.tables.encode_goals([goal])
    r = ref.plan(ref.tables.pack_states(values), np.zeros(len(values), np.int32), goal_table=table)
    ok = r.status == Status.OK
    np.testing.assert_array_equal(r.expanded[ok], r.length[ok])


def test_soldier_admissible_against_uniform_cost(worlds_dir):
    """The soldier's cones (1.4M-2.8M abstract states) do not fit the default pdb_states: h stays a lower bound."""
    domain = load_domain(worlds_dir / "soldier" / "domain.toml")
    ref = ReferencePlanner(domain, heuristic="pdb")
    costs = [a.cost for a in domain.actions]
    problems = random_problems(domain, 60, seed=5, walk=8)
    exact = 0
    for values, g in zip(problems.values, problems.goals, strict=True):
        start = tuple(int(v) for v in values)
        goal = domain.goals[g]
        best = uniform_cost(domain, start, goal, costs, [True] * len(costs))
        h = ref.heuristic_function(goal)(start)
        assert h <= best
        exact += h == best
    assert exact >= len(problems.goals) // 2


# --- IPC tasks ----------------------------------------------------------------------------------------------------
TASKS = {name: (dom, prob) for dom, prob, name in pddl_tasks(PDDL_DIR)}


@pytest.mark.parametrize(("name", "heuristic"), [
    ("gripper/task01", "pdb"), ("blocks/task01", "pdb"), ("miconic/task02", "pdb"),
    ("gripper/task01", "max_lmcut_pdb"), ("blocks/task05", "max_lmcut_pdb"), ("logistics/task02", "max_lmcut_pdb"),
])
def test_ipc_tasks_optimal(name, heuristic):
    if name not in TASKS:
        pytest.skip(f"{name} is not in the task set")
    task = load_pddl(*TASKS[name])
    ref = ReferencePlanner(task.domain, heuristic=heuristic, pdb_states=1 << 10)
    fast = WarpAStarPlanner(ref.tables, heuristic=heuristic, pdb_states=1 << 10, device=DEVICE, threads=1)
    states = ref.tables.pack(task.state)[None]
    goals = np.array([task.goal])
    r, f = ref.plan(states, goals), fast.plan(states, goals)
    assert_same(r, f)
    assert Status(int(f.status[0])) == Status.OK and f.cost[0] == optimal_costs(PDDL_DIR)[name]
    end = task.domain.replay(task.state, f.plan(0))
    assert task.domain.satisfies(end, task.domain.goals[task.goal].want)
    if heuristic == "max_lmcut_pdb":  # no more expansions than LM-cut alone
        lm = WarpAStarPlanner(ref.tables, heuristic="lmcut", device=DEVICE, threads=1).plan(states, goals)
        assert f.expanded[0] <= lm.expanded[0]


# --- max(lmcut, pdb) ----------------------------------------------------------------------------------------------
def test_max_lmcut_pdb_is_the_max_of_both_and_matches_the_reference_node_for_node():
    domain = game_domain(71, 10, max_int=4, depth=4)
    problems, costs, enabled, types = typed_problems(domain, 40, 71)
    costs[::5] = 0.0
    ref = ReferencePlanner(domain, max_nodes=4096, heuristic="max_lmcut_pdb", pdb_states=256)
    fast = WarpAStarPlanner(ref.tables, max_nodes=4096, heuristic="max_lmcut_pdb", pdb_states=256, device=DEVICE)
    lm = ReferencePlanner(ref.tables, max_nodes=4096, heuristic="lmcut")
    pdb = ReferencePlanner(ref.tables, max_nodes=4096, heuristic="pdb", pdb_states=256)
    states = ref.tables.pack_states(problems.values)
    solved = 0
    for c, e, t in ((None, None, None), (costs, enabled, types)):
        r = ref.plan(states, problems.goals, c, e, types=t)
        assert_same(r, fast.plan(states, problems.goals, c, e, types=t))
        solved += check_against_brute_force(domain, ref, r, problems, c, e, t)
        # the same costs as either heuristic alone, with no more expansions than either
        for other in (lm.plan(states, problems.goals, c, e, types=t), pdb.plan(states, problems.goals, c, e,
                                                                                types=t)):
            np.testing.assert_array_equal(r.status, other.status)
            np.testing.assert_array_equal(r.cost, other.cost)
    assert solved >= 10
    # the value: exactly the larger of the two (inf where either is)
    checked = 0
    for i in range(len(problems.goals)):
        goal = domain.goals[problems.goals[i]]
        usable = [True] * len(domain.actions)
        least = [a.cost for a in domain.actions]
        start = tuple(int(v) for v in problems.values[i])
        h = ref.heuristic_function(goal, least, usable)(start)
        want = max(lm.heuristic_function(goal, least, usable)(start),
                   pdb.heuristic_function(goal, least, usable)(start))
        assert h == want
        checked += 0.0 < h < math.inf
    assert checked >= 10


# --- sizes --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [MIN_PDB_STATES - 1, MAX_PDB_STATES + 1, 0, -5, 2.5, True, "4096"])
@pytest.mark.parametrize("planner", ["reference", "warp"])
def test_pdb_states_out_of_range_is_refused(bad, planner):
    domain = random_domain(3, 6)
    with pytest.raises(ValueError, match=r"pdb_states must be an integer in 16\.\.16,777,216"):
        make_planner(planner, domain, heuristic="pdb", pdb_states=bad, device=DEVICE)


def test_tables_over_the_byte_limit_are_refused_before_allocating():
    from goap import DomainBuilder

    b = DomainBuilder("wide").int("n", 0, (1 << 24) - 1).action("up", cost=1, effects={"n": "+= 1"})
    for g in range(9):  # nine goals of 2**24 states each: 1.2 GB of tables
        b.goal(f"g{g}", want={"n": (1 << 24) - 1 - g})
    with pytest.raises(ValueError, match="lower pdb_states"):
        WarpAStarPlanner(b.build(), heuristic="pdb", pdb_states=MAX_PDB_STATES, device=DEVICE)


# --- in the runtime -----------------------------------------------------------------------------------------------
def test_brain_with_pdb_captured_equals_plain():
    """A Brain planning with pdb: the captured tick (the GPU's path) equals the plain one, tick for tick."""
    from tests.test_capture import engine_world, pair
    from tests.test_runtime import farm_domain

    domain = farm_domain()

    def make(capture):
        from goap.runtime import Brain

        return Brain(domain, 200, world=engine_world(domain), device="cpu", seed=3, plan_budget=40,
                     planner_options={"heuristic": "pdb", "pdb_states": 1 << 10}, capture=capture)

    plain, _ = pair(make, 30)
    assert getattr(plain.planner, "inner", plain.planner).heuristic == "pdb"
    assert plain.counters["plans_made"] > 0 and plain.counters["actions_done"] > 0

"""Agent types and state-dependent cost terms: the domain format, validation, and both planners (and dedupe) agreeing
node for node, optimal against a brute-force search that shares nothing with them but the domain's semantics."""

from __future__ import annotations

import heapq
import json
import math
import os

import numpy as np
import pytest

from goap import DomainBuilder, Status
from goap.analysis import check_domain
from goap.bench.random_domains import random_domain, random_problems
from goap.domain import DomainError
from goap.domain_file import domain_to_spec, dumps_toml, loads_domain, save_domain
from goap.encoding import encode, fingerprint
from goap.planners import make_planner
from goap.planners.base import HEURISTICS
from goap.planners.reference import ReferencePlanner

DEVICE = os.environ.get("GOAP_TEST_DEVICE", "cpu")

MEDIC = """\
name = "squad"

[facts]
fatigue = { type = "int", min = 0, max = 4 }
wounded = true
kind = { type = "enum", values = ["grunt", "doc"] }
there = false

[actions.heal]
cost = 2
effects = { wounded = false }

[actions.move]
cost = { base = 1, per = { fatigue = 0.5, wounded = 2 } }
effects = { there = true, fatigue = "+= 1" }

[actions.rest]
cost = 1
effects = { fatigue = 0 }

[goals.healthy]
priority = 3
want = { wounded = false }

[goals.arrive]
want = { there = true }

[types.medic]
actions = ["heal", "move"]
cost = { move = 1.5 }
priority = { healthy = 10 }
facts = { fatigue = 2, kind = "doc" }

[types.runner]
goals = ["arrive"]
"""


def medic_domain():
    return loads_domain(MEDIC, file="squad.toml")


# --- the format ------------------------------------------------------------------------------------------------
def test_types_and_cost_terms_from_toml():
    d = medic_domain()
    move = d.actions[d.action_index("move")]
    assert move.cost == 1.0
    assert move.cost_terms == ((d.fact_index("fatigue"), 0.5), (d.fact_index("wounded"), 2.0))
    assert [t.name for t in d.types] == ["medic", "runner"]  # file order
    medic = d.types[d.type_index("medic")]
    assert medic.actions == (True, True, False)
    assert medic.cost_scale == (1.0, 1.5, 1.0)
    assert medic.priority == (10.0, 1.0)
    assert medic.facts == ((d.fact_index("fatigue"), 2), (d.fact_index("kind"), 1))
    runner = d.types[d.type_index("runner")]
    assert runner.actions == (True, True, True) and runner.priority == (0.0, 1.0)
    assert d.type_state("medic") == (2, 1, 1, 0)
    assert d.type_state(1) == d.default_state()
    with pytest.raises(KeyError, match="medic, runner"):
        d.type_index("sniper")


def test_a_domain_without_types_has_the_default_one():
    d = DomainBuilder("d").bool("a").action("x", effects={"a": True}).goal("g", want={"a": True}, priority=4).build()
    assert len(d.types) == 1 and d.types[0].name == "default"
    assert d.types[0].actions == (True,) and d.types[0].cost_scale == (1.0,) and d.types[0].priority == (4.0,)
    assert not d.declares_types and "types" not in domain_to_spec(d)


def test_json_builder_and_toml_agree_and_round_trip(tmp_path):
    d = medic_domain()
    b = (DomainBuilder("squad").int("fatigue", 0, 4).bool("wounded", True).enum("kind", ["grunt", "doc"]).bool("there")
         .action("heal", cost=2, effects={"wounded": False})
         .action("move", cost=1, cost_per={"fatigue": 0.5, "wounded": 2}, effects={"there": True, "fatigue": "+= 1"})
         .action("rest", cost=1, effects={"fatigue": 0})
         .goal("healthy", priority=3, want={"wounded": False}).goal("arrive", want={"there": True})
         .agent_type("medic", actions=["heal", "move"], cost={"move": 1.5}, priority={"healthy": 10},
                     facts={"fatigue": 2, "kind": "doc"})
         .agent_type("runner", goals=["arrive"]))
    assert b.build() == d
    assert DomainBuilder("x").bool("a").action("m", cost={"base": 1, "per": {"a": 3}}, effects={"a": True}).build() \
        .actions[0].cost_terms == ((0, 3.0),)
    assert loads_domain(json.dumps(domain_to_spec(d)), fmt="json") == d
    assert loads_domain(dumps_toml(domain_to_spec(d))) == d
    for suffix in (".toml", ".json"):
        save_domain(d, tmp_path / f"d{suffix}")
        assert loads_domain((tmp_path / f"d{suffix}").read_text(), fmt=suffix[1:]) == d


def _error(text: str, fmt: str = "toml") -> DomainError:
    with pytest.raises(DomainError) as e:
        loads_domain(text, fmt=fmt, file=f"bad.{fmt}")
    return e.value


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.split("\n"), 1) if needle in line)


@pytest.mark.parametrize(
    ("old", "new", "words", "needle"),
    [
        ('actions = ["heal", "move"]', 'actions = ["heal", "fly"]', ["type 'medic'", "unknown action 'fly'"],
         'actions = ["heal", "fly"]'),
        ("priority = { healthy = 10 }", "priority = { happy = 10 }", ["type 'medic'", "unknown goal 'happy'"],
         "priority = { happy"),
        ('goals = ["arrive"]', 'goals = ["leave"]', ["type 'runner'", "unknown goal 'leave'"], 'goals = ["leave"]'),
        ('facts = { fatigue = 2, kind = "doc" }', "facts = { stamina = 2 }", ["type 'medic'", "unknown fact"],
         "facts = { stamina"),
        ('facts = { fatigue = 2, kind = "doc" }', "facts = { fatigue = 9 }", ["type 'medic'", "out of range"],
         "facts = { fatigue = 9"),
        ("cost = { move = 1.5 }", "cost = { move = 0 }", ["type 'medic'", "multiplier of 'move'"], "cost = { move = 0"),
        ("cost = { move = 1.5 }", "cost = { move = -2 }", ["type 'medic'", "multiplier"], "cost = { move = -2"),
        ("cost = { move = 1.5 }", "cost = { move = inf }", ["type 'medic'", "multiplier"], "cost = { move = inf"),
        ("cost = { move = 1.5 }", "cost = { walk = 2 }", ["type 'medic'", "unknown action 'walk'"], "cost = { walk"),
        ("priority = { healthy = 10 }", "speed = 3", ["type 'medic'", "unknown key 'speed'"], "speed = 3"),
        ("per = { fatigue = 0.5, wounded = 2 }", "per = { kind = 1 }", ["action 'move'", "enum fact 'kind'"],
         "per = { kind"),
        ("per = { fatigue = 0.5, wounded = 2 }", "per = { fatigue = nan }", ["action 'move'", "finite"],
         "per = { fatigue = nan"),
        ("per = { fatigue = 0.5, wounded = 2 }", "per = { fatigue = inf }", ["action 'move'", "finite"],
         "per = { fatigue = inf"),
        ("per = { fatigue = 0.5, wounded = 2 }", "per = { speed = 1 }", ["action 'move'", "unknown fact 'speed'"],
         "per = { speed"),
        ("base = 1, per", "base = -1, per", ["action 'move'", "base"], "base = -1"),
        ("base = 1, per", "bias = 1, per", ["action 'move'", "unknown key 'bias'"], "bias = 1"),
        ("{ base = 1, per", "{ per", ["action 'move'", "needs 'base'"], "cost = { per"),
        ("fatigue = 0.5, wounded = 2 }", "fatigue = 1e12, wounded = 2 }", ["action 'move'", "above 1e12"],
         "fatigue = 1e12"),
    ],
)
def test_bad_types_and_terms_name_the_item_the_key_and_the_line(old, new, words, needle):
    assert old in MEDIC
    text = MEDIC.replace(old, new)
    e = _error(text)
    for w in words:
        assert w in str(e), str(e)
    assert e.line == _line_of(text, needle), str(e)
    assert e.file == "bad.toml"


def test_bad_types_in_json_and_duplicates():
    spec = domain_to_spec(medic_domain())
    spec["types"]["medic"]["actions"] = ["heal", "fly"]
    text = json.dumps(spec, indent=2)
    e = _error(text, "json")
    assert "type 'medic'" in str(e) and "fly" in str(e)
    assert e.line == _line_of(text, '"actions": [')  # the type's actions key (the first after "medic")
    spec = domain_to_spec(medic_domain())
    spec["actions"]["move"]["cost"]["per"]["fatigue"] = float("nan")
    e = _error(json.dumps(spec, indent=2), "json")
    assert "action 'move'" in str(e) and "finite" in str(e)
    dup = MEDIC.replace('[types.runner]', '[types.medic]')
    e = _error(dup)
    second = [i for i, x in enumerate(dup.split("\n"), 1) if x == "[types.medic]"][1]
    assert "declare ('types', 'medic') twice" in str(e) and e.line == second
    text = json.dumps(domain_to_spec(medic_domain()), indent=2)
    text = text.replace('"runner": {', '"medic": {')
    e = _error(text, "json")
    second = [i for i, line in enumerate(text.split("\n"), 1) if '"medic": {' in line][-1]
    assert "duplicate key 'medic'" in str(e) and e.line == second
    with pytest.raises(DomainError, match="duplicate type name"):
        DomainBuilder("d").bool("a").agent_type("x").agent_type("x")
    with pytest.raises(DomainError, match="type 'x'.*not in this type's 'goals'"):
        (DomainBuilder("d").bool("a").action("m", effects={"a": True}).goal("g", want={"a": True})
         .goal("h", want={"a": False}).agent_type("x", goals=["g"], priority={"h": 3}).build())


def test_fingerprint_sees_types_and_terms_and_not_their_absence():
    base = DomainBuilder("d").int("n", 0, 3).action("m", cost=1, effects={"n": "+= 1"}).goal("g", want={"n": 3})
    plain = base.build()
    spec = base.spec()
    before = fingerprint(plain)
    spec["actions"]["m"]["cost"] = {"base": 1, "per": {"n": 0.5}}
    termed = DomainBuilder("d")
    termed._spec = json.loads(json.dumps(spec))
    with_terms = termed.build()
    spec["types"] = {"slow": {"cost": {"m": 2}}}
    typed = DomainBuilder("d")
    typed._spec = json.loads(json.dumps(spec))
    with_types = typed.build()
    prints = {before, fingerprint(with_terms), fingerprint(with_types)}
    assert len(prints) == 3
    spec["types"] = {"slow": {"cost": {"m": 3}}}
    other = DomainBuilder("d")
    other._spec = json.loads(json.dumps(spec))
    assert fingerprint(other.build()) != fingerprint(with_types)
    # A per of 0 is still a declared term (a different domain text), a cost of 1 without terms is the old domain.
    assert fingerprint(DomainBuilder("d").int("n", 0, 3).action("m", cost=1, effects={"n": "+= 1"})
                       .goal("g", want={"n": 3}).build()) == before


# --- the rule ------------------------------------------------------------------------------------------------
def test_action_cost_and_its_minimum():
    d = medic_domain()
    move = d.action_index("move")
    assert d.action_cost(move, (3, 1, 0, 0)) == 1 + 0.5 * 3 + 2
    assert d.action_cost("move", (3, 0, 0, 0), base=4, scale=1.5) == 1.5 * (4 + 1.5)
    assert d.action_min_cost(move) == 1.0  # fatigue 0, not wounded
    neg = (DomainBuilder("n").int("n", -2, 3).action("m", cost=1, cost_per={"n": 1}, effects={"n": "+= 1"})
           .goal("g", want={"n": 3}).build())
    assert neg.action_cost(0, (-2,)) == 0.0  # clamped
    assert neg.action_min_cost(0) == 0.0
    assert neg.action_cost(0, (2,)) == 3.0


def test_validate_checks_each_type_and_negative_costs():
    text = MEDIC.replace('[types.runner]\ngoals = ["arrive"]', '[types.runner]\nactions = ["rest"]\n\n[types.idle]\n'
                         'actions = []')
    text = text.replace("per = { fatigue = 0.5, wounded = 2 }", "per = { fatigue = -1, wounded = 2 }")
    report = check_domain(loads_domain(text))
    warnings = "\n".join(report.warnings)
    assert "type 'idle' may use no action" in warnings
    assert "type 'runner': goal 'healthy'" in warnings and "type 'runner': goal 'arrive'" in warnings
    assert "type 'medic'" not in warnings
    assert ("idle", "healthy") in report.type_unreachable
    assert report.negative_costs == [("move", 1 - 4.0)]
    assert check_domain(medic_domain()).type_unreachable == []


# --- planners --------------------------------------------------------------------------------------------------
def rule_cost(domain, a, state, base, scale):
    """The cost rule written out again here, independent of `Domain.action_cost`."""
    total = base + sum(per * state[f] for f, per in domain.actions[a].cost_terms)
    return scale * max(0.0, total)


def dijkstra(domain, start, goal, base, scale, usable, limit=200_000, capped=False):
    """Optimal cost by uniform-cost search over the explicit state space, state-dependent costs included (past
    ``limit`` states: an assertion, or None when ``capped``)."""
    best = {start: 0.0}
    heap = [(0.0, 0, start)]
    tick = 0
    while heap:
        g, _, s = heapq.heappop(heap)
        if g > best[s]:
            continue
        if domain.satisfies(s, goal.want):
            return g
        for a, action in enumerate(domain.actions):
            if usable[a] and domain.is_applicable(s, action):
                child = domain.apply(s, action)
                g2 = g + rule_cost(domain, a, s, base[a], scale[a])
                if g2 < best.get(child, math.inf):
                    if capped and len(best) >= limit:
                        return None
                    assert len(best) < limit
                    best[child] = g2
                    tick += 1
                    heapq.heappush(heap, (g2, tick, child))
    return math.inf


def replay_cost(domain, start, plan, base, scale, usable):
    s, total = start, 0.0
    for a in plan:
        assert usable[a], f"action {domain.actions[a].name} is not usable by this agent"
        assert domain.is_applicable(s, domain.actions[a])
        total += rule_cost(domain, a, s, base[a], scale[a])
        s = domain.apply(s, domain.actions[a])
    return s, total


def typed_problems(domain, n, seed):
    problems = random_problems(domain, n, seed=seed)
    rng = np.random.default_rng(seed)
    A, T = len(domain.actions), len(domain.types)
    costs = (rng.integers(1, 17, size=(n, A)) / 4).astype(np.float32)
    enabled = rng.random((n, A)) < 0.9
    types = rng.integers(0, T, size=n).astype(np.int32)
    return problems, costs, enabled, types


def agent_rows(domain, i, costs, enabled, types):
    t = domain.types[0 if types is None else int(types[i])]
    A = len(domain.actions)
    base = [a.cost for a in domain.actions] if costs is None else [float(c) for c in costs[i]]
    usable = [t.actions[a] and (enabled is None or bool(enabled[i, a])) for a in range(A)]
    return base, list(t.cost_scale), usable


def assert_same(r, f):
    for name in ("status", "cost", "length", "expanded", "actions", "level", "expanded_before_last_f"):
        np.testing.assert_array_equal(getattr(f, name), getattr(r, name), err_msg=name)


# Several words per state (n_facts 70: two words), bools and ints, every heuristic.
@pytest.mark.parametrize(("seed", "n_facts", "heuristic"),
                         [(21, 14, "hmax"), (22, 70, "hmax_depth2"), (23, 14, "hmax_depth1"), (24, 14, "lmcut")])
def test_warp_matches_reference_with_types_and_cost_terms(seed, n_facts, heuristic):
    domain = random_domain(seed, n_facts, int_fraction=0.4, cost_terms=0.6, n_types=3)
    assert domain.has_cost_terms and domain.declares_types
    assert any(k < 0 for a in domain.actions for _, k in a.cost_terms)  # the clamp is exercised
    n = 60
    problems, costs, enabled, types = typed_problems(domain, n, seed)
    ref = ReferencePlanner(domain, max_nodes=64, node_ceiling=512, heuristic=heuristic)
    if n_facts == 70:
        assert ref.tables.n_words >= 2
    fast = make_planner("warp", ref.tables, max_nodes=64, node_ceiling=512, heuristic=heuristic, device=DEVICE)
    states = ref.tables.pack_states(problems.values)
    seen = set()
    for c, e, t in ((None, None, None), (None, None, types), (costs, enabled, types)):
        r = ref.plan(states, problems.goals, c, e, types=t)
        f = fast.plan(states, problems.goals, c, e, types=t)
        assert_same(r, f)
        seen |= set(r.status.tolist())
        for i in np.flatnonzero(r.status == Status.OK):
            base, scale, usable = agent_rows(domain, i, c, e, t)
            start = tuple(int(v) for v in problems.values[i])
            end, total = replay_cost(domain, start, r.plan(i), base, scale, usable)
            assert domain.satisfies(end, domain.goals[problems.goals[i]].want)
            assert total == pytest.approx(float(r.cost[i]), rel=1e-12, abs=1e-12)
    assert Status.OK in seen and len(seen) >= 2, seen


def test_dedupe_matches_plain_warp_with_types():
    domain = random_domain(31, 12, int_fraction=0.4, cost_terms=0.5, n_types=3)
    problems, costs, enabled, types = typed_problems(domain, 40, 31)
    tables = encode(domain)
    # Every row twice: once as type 0, once as its own type, so equal states and goals of different types meet.
    values = np.concatenate([problems.values, problems.values])
    goals = np.concatenate([problems.goals, problems.goals])
    costs2 = np.concatenate([costs, costs])
    enabled2 = np.concatenate([enabled, enabled])
    types2 = np.concatenate([np.zeros(40, np.int32), types])
    states = tables.pack_states(values)
    plain = make_planner("warp", tables, max_nodes=64, node_ceiling=512, device=DEVICE)
    dedupe = make_planner("warp", tables, max_nodes=64, node_ceiling=512, device=DEVICE, dedupe=True, plan_cache=64)
    for c, e in ((None, None), (costs2, enabled2)):
        for _ in range(2):  # the second call is answered by the cache
            want = plain.plan(states, goals, c, e, types=types2)
            got = dedupe.plan(states, goals, c, e, types=types2)
            assert_same(want, got)
    differ = np.flatnonzero(want.cost[:40] != want.cost[40:])
    assert len(differ) > 0  # the type changes some results: they were not merged
    stats = dedupe.stats()
    assert stats["hits"] > 0
    # types=None is type 0: the same queries as an explicit row of zeros.
    assert_same(dedupe.plan(states, goals), plain.plan(states, goals, types=np.zeros(80, np.int32)))


@pytest.mark.parametrize("heuristic", HEURISTICS)
def test_optimal_and_admissible_against_brute_force(heuristic):
    domain = random_domain(41, 8, int_fraction=0.5, max_int=4, cost_terms=0.6, n_types=2, depth=4)
    problems, costs, enabled, types = typed_problems(domain, 30, 41)
    ref = ReferencePlanner(domain, max_nodes=4096, heuristic=heuristic)
    fast = make_planner("warp", ref.tables, max_nodes=4096, heuristic=heuristic, device=DEVICE)
    states = ref.tables.pack_states(problems.values)
    r = ref.plan(states, problems.goals, costs, enabled, types=types)
    assert_same(r, fast.plan(states, problems.goals, costs, enabled, types=types))
    assert check_against_brute_force(domain, ref, r, problems, costs, enabled, types) >= 5


def check_against_brute_force(domain, ref, r, problems, costs, enabled, types) -> int:
    """Each row of batch ``r`` against uniform-cost search with the row's own costs, enabled actions and type: the
    heuristic at the start is a lower bound, statuses and costs are optimal, and each plan replays to the goal at
    its cost. Returns how many rows needed a plan (status OK)."""
    solved = 0
    for i in range(len(problems.values)):
        base, scale, usable = agent_rows(domain, i, costs, enabled, types)
        start = tuple(int(v) for v in problems.values[i])
        goal = domain.goals[problems.goals[i]]
        best = dijkstra(domain, start, goal, base, scale, usable)
        least, _ = ref.agent_costs(base, tuple(scale))
        h = ref.heuristic_function(goal, least, usable)(start)
        assert h <= best + 1e-9, (i, h, best)
        if math.isinf(best):
            assert r.status[i] == Status.NO_PLAN
            continue
        assert r.status[i] in (Status.OK, Status.SATISFIED), (i, r.status[i])
        assert float(r.cost[i]) == pytest.approx(best, rel=1e-12, abs=1e-12)
        if r.status[i] == Status.OK:
            solved += 1
            end, total = replay_cost(domain, start, r.plan(i), base, scale, usable)
            assert domain.satisfies(end, goal.want) and total == pytest.approx(best, rel=1e-12, abs=1e-12)
    return solved


def stairs():
    """A cheap action only one type may use; the expensive path for the others; a type with no achiever."""
    return (DomainBuilder("stairs").int("tired", 0, 6).bool("up")
            .action("lift", cost=1, effects={"up": True})
            .action("climb", cost=2, cost_per={"tired": 1}, effects={"up": True, "tired": "+= 2"})
            .action("sit", cost=1, effects={"tired": 0})
            .goal("top", want={"up": True})
            .agent_type("staff").agent_type("visitor", actions=["climb", "sit"])
            .agent_type("chair", actions=["sit"], facts={"tired": 5}).build())


@pytest.mark.parametrize("planner", ["reference", "warp"])
def test_actions_of_another_type_are_never_planned(planner):
    d = stairs()
    p = make_planner(planner, d, device=DEVICE)
    t = p.tables
    values = np.array([d.type_state(0), d.type_state(1), d.type_state(2), (5, 0), (0, 0)], dtype=np.int64)
    states = t.pack_states(values)
    types = np.array([0, 1, 2, 1, 1], np.int32)
    r = p.plan(states, np.zeros(5, np.int32), types=types)
    assert r.plan_names(0, d) == ["lift"] and r.cost[0] == 1
    assert r.plan_names(1, d) == ["climb"] and r.cost[1] == 2
    assert r.status[2] == Status.NO_PLAN
    assert r.plan_names(3, d) == ["sit", "climb"] and r.cost[3] == 3  # climbing tired costs 7: rest first
    lifted = r.numpy().actions[types != 0]
    assert not np.isin(lifted, [d.action_index("lift")]).any()
    # The default (types=None) is type 0.
    r0 = p.plan(states, np.zeros(5, np.int32))
    assert all(r0.plan_names(i, d) == ["lift"] for i in range(5))


def test_bad_type_indices_are_refused():
    d = stairs()
    for planner in ("reference", "warp"):
        p = make_planner(planner, d, device=DEVICE)
        states = p.tables.pack_states(np.zeros((3, 2), np.int64))
        with pytest.raises(ValueError, match=r"row 2: agent type 3 is out of range \(types: 0 \(staff\)"):
            p.plan(states, np.zeros(3, np.int32), types=np.array([0, 1, 3]))
        with pytest.raises(ValueError, match="types must have shape"):
            p.plan(states, np.zeros(3, np.int32), types=np.array([0, 1]))
        with pytest.raises(ValueError, match="integer array"):
            p.plan(states, np.zeros(3, np.int32), types=np.array([0.5, 1, 0]))
        # Rows not planned are not checked.
        r = p.plan(states, np.zeros(3, np.int32), types=np.array([0, 1, -1]), agents=[0, 1])
        assert list(r.status[:2]) == [Status.OK, Status.OK]


def test_device_type_arrays_and_out_of_range_rows():
    import warp as wp

    d = stairs()
    p = make_planner("warp", d, device=DEVICE)
    states = wp.array(p.tables.pack_states(np.zeros((3, 2), np.int64)), dtype=wp.uint64, device=DEVICE)
    goals = wp.zeros(3, dtype=wp.int32, device=DEVICE)
    types = wp.array(np.array([1, 0, 7], np.int32), dtype=wp.int32, device=DEVICE)
    out = p.plan(states, goals, types=types).numpy()
    assert list(out.status) == [Status.OK, Status.OK, Status.NO_PLAN]  # no read out of bounds for type 7
    assert out.cost[0] == 2 and out.cost[1] == 1


def test_captured_calls_take_types():
    """A captured call reads the types array at each replay (new types, new results), for the Warp planner and the
    dedupe wrapper with its cache; each replay equals the reference on the same inputs."""
    import warp as wp

    from goap.launch import Launcher
    from goap.planners.base import PlanBatch
    from goap.planners.dedupe import DedupingPlanner
    from goap.planners.warp_astar import WarpAStarPlanner

    domain = random_domain(51, 12, int_fraction=0.4, cost_terms=0.5, n_types=3)
    tables = encode(domain)
    n = 48
    problems, costs, enabled, _ = typed_problems(domain, n, 51)
    pools = {"max_nodes": 16, "growth": 4, "node_ceiling": 1024}
    ref = ReferencePlanner(tables, **pools)
    host_states = tables.pack_states(problems.values)
    states = wp.array(host_states, dtype=wp.uint64, device=DEVICE)
    goals = wp.array(problems.goals.astype(np.int32), dtype=wp.int32, device=DEVICE)
    d_costs = wp.array(costs, dtype=wp.float32, device=DEVICE)
    d_enabled = wp.array(enabled, dtype=wp.bool, device=DEVICE)
    d_types = wp.zeros(n, dtype=wp.int32, device=DEVICE)
    planners = [WarpAStarPlanner(tables, device=DEVICE, **pools),
                DedupingPlanner(WarpAStarPlanner(tables, device=DEVICE, **pools), cache_capacity=32, per_row=True)]
    for planner in planners:
        out = PlanBatch.on_device(n, planner.max_plan_length, DEVICE)
        planner.reserve(n)
        graph = Launcher(planner.device).capture(
            lambda p=planner, o=out: p.plan(states, goals, d_costs, d_enabled, types=d_types, out=o), "plan")
        results = []
        for seed in (1, 2, 1):
            types = np.random.default_rng(seed).integers(0, len(domain.types), n).astype(np.int32)
            d_types.assign(types)
            out.status.fill_(int(Status.NOT_PLANNED))
            out.level.zero_()
            Launcher(planner.device).replay(graph)
            want = ref.plan(host_states, problems.goals, costs, enabled, types=types)
            assert_same(want, out.numpy())
            results.append(np.array(out.numpy().cost, copy=True))
        assert not np.array_equal(results[0], results[1], equal_nan=True)  # the types were read again


def test_goap_validate_prints_the_type_warnings(tmp_path, capsys):
    from tests.conftest import run_cli

    text = MEDIC.replace('[types.runner]\ngoals = ["arrive"]', '[types.runner]\nactions = ["rest"]')
    path = tmp_path / "squad.toml"
    path.write_text(text)
    code, out, err = run_cli(capsys, "validate", path)
    assert code == 0, err
    assert "type 'runner': goal 'healthy' can never be reached" in out + err
    code, _, _ = run_cli(capsys, "validate", "--strict", path)
    assert code == 1


@pytest.mark.parametrize("heuristic", ["hmax_depth2", "lmcut"])
def test_terms_over_signed_ints_clamp_and_match(heuristic):
    """Terms read the fact's value, not its encoding (min -3): a cost that goes negative is clamped to 0, in both
    planners, and the plans are the optimal ones brute force finds."""
    d = (DomainBuilder("signed").int("mood", -3, 3).int("steps", 0, 4)
         .action("walk", cost=1, cost_per={"mood": 1}, effects={"steps": "+= 1"})
         .action("cheer", cost=0.5, effects={"mood": "+= 2"})
         .action("sulk", cost=0.5, effects={"mood": "-= 3"})
         .goal("far", want={"steps": 4}).build())
    ref = ReferencePlanner(d, heuristic=heuristic)
    fast = make_planner("warp", ref.tables, heuristic=heuristic, device=DEVICE)
    values = np.array([[m, s] for m in range(-3, 4) for s in range(0, 5)], dtype=np.int64)
    states = ref.tables.pack_states(values)
    goals = np.zeros(len(values), np.int32)
    r = ref.plan(states, goals)
    assert_same(r, fast.plan(states, goals))
    base, scale, usable = [a.cost for a in d.actions], [1.0] * 3, [True] * 3
    for i, (m, s) in enumerate(values):
        assert float(r.cost[i]) == dijkstra(d, (int(m), int(s)), d.goals[0], base, scale, usable)
    # From mood -3 walking is free (1 + -3 clamps to 0): four walks, cost 0.
    i = int(np.flatnonzero((values[:, 0] == -3) & (values[:, 1] == 0))[0])
    assert r.plan_names(i, d) == ["walk"] * 4 and r.cost[i] == 0
    # From mood 3: sulk once (0.5, mood 0), then four walks at 1 each... or sulk twice to -3 (1.0) and walk free.
    j = int(np.flatnonzero((values[:, 0] == 3) & (values[:, 1] == 0))[0])
    assert r.cost[j] == 1.0 and r.plan_names(j, d)[:2] == ["sulk", "sulk"]


def test_type_tables():
    d = medic_domain()
    t = encode(d)
    for i in range(len(d.types)):
        np.testing.assert_array_equal(t.type_states[i], t.pack(d.type_state(i)))
        np.testing.assert_array_equal(t.type_allowed[i], d.types[i].actions)
        np.testing.assert_array_equal(t.type_scale[i], d.types[i].cost_scale)
        np.testing.assert_array_equal(t.type_priority[i], np.float32(d.types[i].priority))
    assert t.typed == 1 and t.has_terms == 1 and t.n_types == 2
    np.testing.assert_array_equal(t.term_start, [0, 0, 2, 2])
    np.testing.assert_array_equal(t.term_min, [0.0, 0.0])  # both coefficients positive: the low ends, 0
    np.testing.assert_array_equal(t.min_cost, [2.0, 1.0, 1.0])
    plain = encode(DomainBuilder("p").bool("a").action("x", effects={"a": True}).goal("g", want={"a": True}).build())
    assert plain.typed == 0 and plain.has_terms == 0 and plain.type_states.shape == (1, 1)


def test_dedupe_groups_the_agents_of_types_that_plan_alike():
    """Two types with the same actions and multipliers (they differ in goal priorities only) share searches;
    a type with other multipliers does not, and every row gets what planning it alone gives."""
    from pathlib import Path

    from goap.domain import domain_from_spec
    from goap.domain_file import load_domain
    from goap.planners.dedupe import type_classes

    spec = domain_to_spec(load_domain(Path(__file__).resolve().parents[1] / "worlds/soldier/domain.toml"))
    names = list(spec["actions"])
    first_goal = next(iter(spec["goals"]))
    spec["types"] = {"a": {}, "b": {"priority": {first_goal: 3}}, "c": {"cost": {names[0]: 2.0}}}
    d = domain_from_spec(spec)
    assert list(type_classes(d)) == [0, 0, 2]
    n = 60
    tables = encode(d)
    states = np.repeat(tables.pack(d.default_state())[None], n, axis=0)
    goals = np.arange(n, dtype=np.int32) % len(d.goals)
    types = (np.arange(n) // (n // 3)).astype(np.int32)  # 20 of each type, the same queries in each block
    grouped = make_planner("warp", tables, device="cpu", dedupe=True)
    plain = make_planner("warp", tables, device="cpu", dedupe=False)
    got = grouped.plan(states, goals, types=types).numpy()
    want = plain.plan(states, goals, types=types).numpy()
    assert (got.status == want.status).all() and np.array_equal(got.cost, want.cost, equal_nan=True)
    c = grouped.stats()
    assert c["distinct"] == 2 * len(d.goals)  # types a and b share one set of queries, c has its own

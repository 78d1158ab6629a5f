"""The tick's kernels against the pure-Python semantics of `goap.domain`, on seeded random domains.

Domains mix bools, ints (some wide enough that a state takes several words) and enums, with every condition
operator and every effect kind. Each kernel's answer is compared with what `Domain.satisfies`,
`Domain.is_applicable` and `Domain.apply` say of the unpacked state.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from goap import DomainBuilder
from goap.runtime import CAUSES, Brain

OPS = ("==", "!=", "<", "<=", ">", ">=")


def random_domain(seed: int, n_facts: int = 14):
    rng = random.Random(seed)
    b = DomainBuilder(f"tick-{seed}")
    facts = []
    for i in range(n_facts):
        kind = rng.choice(("bool", "int", "wide", "enum"))
        if kind == "bool":
            b.bool(f"b{i}", default=rng.random() < 0.5)
            facts.append((f"b{i}", "bool", 0, 1))
        elif kind == "enum":
            labels = [f"v{k}" for k in range(rng.randint(2, 5))]
            b.enum(f"e{i}", labels)
            facts.append((f"e{i}", "enum", 0, len(labels) - 1, labels))
        else:
            lo = rng.randint(-5, 3)
            hi = lo + (rng.randint(2, 9) if kind == "int" else rng.randint(2**20, 2**40))
            b.int(f"n{i}", lo, hi, default=lo)
            facts.append((f"n{i}", "int", lo, hi))

    def condition(f):
        if f[1] == "bool":
            return rng.random() < 0.5
        if f[1] == "enum":
            return rng.choice(f[4])
        op = rng.choice(OPS)
        return f"{op} {rng.randint(f[2], f[3])}" if op != "==" else rng.randint(f[2], f[3])

    def effect(f):
        if f[1] == "bool":
            return rng.random() < 0.5
        if f[1] == "enum":
            return rng.choice(f[4])
        r = rng.random()
        if r < 0.3:
            return f"+= {rng.randint(1, 3)}"
        if r < 0.6:
            return f"-= {rng.randint(1, 3)}"
        return rng.randint(f[2], f[3])

    for a in range(12):
        pre = {f[0]: condition(f) for f in rng.sample(facts, rng.randint(0, 3))}
        eff = {f[0]: effect(f) for f in rng.sample(facts, rng.randint(1, 3))}
        b.action(f"a{a}", cost=rng.randint(1, 4), pre=pre, effects=eff)
    for g in range(5):
        want = {f[0]: condition(f) for f in rng.sample(facts, rng.randint(1, 3))}
        b.goal(f"g{g}", want=want, priority=rng.randint(1, 9))
    return b.build()


def random_values(domain, n, rng):
    cols = []
    for f in domain.facts:
        if f.max - f.min > 20:  # wide ints: mostly near the ends, where the conditions' constants are
            near = rng.integers(f.min, f.min + 10, n)
            cols.append(np.where(rng.random(n) < 0.5, near, rng.integers(f.min, f.max + 1, n)))
        else:
            cols.append(rng.integers(f.min, f.max + 1, n))
    return np.stack(cols, 1)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_goal_test_matches_domain(seed):
    domain = random_domain(seed)
    rng = np.random.default_rng(seed)
    n = 150
    brain = Brain(domain, n, planner="reference", device="cpu")
    assert brain.tables.n_words >= 1
    values = random_values(domain, n, rng)
    brain.states.numpy()[:] = brain.tables.pack_states(values)
    for g, goal in enumerate(domain.goals):
        brain.goal.numpy()[:] = g
        got = brain.current_goal_satisfied()
        want = [domain.satisfies(tuple(int(v) for v in row), goal.want) for row in values]
        np.testing.assert_array_equal(got, want)


def test_random_domains_span_several_words():
    assert max(Brain(random_domain(s), 1, planner="reference").tables.n_words for s in range(4)) >= 2


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_validation_and_effects_match_domain(seed):
    """An agent whose plan is one action keeps it iff the action applies and is enabled; DONE applies it."""
    domain = random_domain(seed)
    rng = np.random.default_rng(100 + seed)
    n = 200
    brain = Brain(domain, n, planner="reference", device="cpu")
    values = random_values(domain, n, rng)
    actions = rng.integers(0, len(domain.actions), n)
    enabled = rng.random(n) < 0.8
    h = {name: getattr(brain, name).numpy() for name in ("states", "goal", "plan", "plan_length", "enabled")}
    h["states"][:] = brain.tables.pack_states(values)
    h["goal"][:] = 0
    h["plan"][:, 0] = actions
    h["plan_length"][:] = 1
    h["enabled"][np.arange(n), actions] = enabled
    prio = brain.priorities.numpy()
    prio[:] = 0
    prio[:, 0] = 1  # goal 0 is the only eligible goal: selection keeps it unless it holds
    run_stage(brain, "decide")
    starts = [tuple(int(v) for v in row) for row in values]
    applies = np.array([domain.is_applicable(s, domain.actions[a]) for s, a in zip(starts, actions, strict=True)])
    holds = np.array([domain.satisfies(s, domain.goals[0].want) for s in starts])
    np.testing.assert_array_equal(brain.needs_plan.numpy(), ~holds & ~(applies & enabled))
    np.testing.assert_array_equal(brain.goal.numpy(), np.where(holds, -1, 0))
    cause = brain.replan_cause.numpy()
    assert (cause[brain.needs_plan.numpy()] == CAUSES.index("invalid")).all()

    # Effects: finish the action as DONE for every agent, whatever its preconditions (effects are unconditional).
    brain.needs_plan.numpy()[:] = False
    brain.action.numpy()[:] = actions
    brain.action_status.numpy()[:] = 1
    brain._finish_actions()
    after = brain.tables.unpack_states(brain.states.numpy())
    for i, (s, a) in enumerate(zip(starts, actions, strict=True)):
        assert tuple(int(v) for v in after[i]) == domain.apply(s, domain.actions[a]), f"agent {i}, action {a}"
    np.testing.assert_array_equal(brain.step.numpy(), 1)


def run_stage(brain, stage):
    """Run the steps of one stage of the brain's tick, as `Brain.tick` runs them."""
    for step in brain._steps(1.0, True):
        if step.stage == stage:
            step.run()


def select_oracle(domain, values, priorities, scores, cooldown, now, current, pinned, hysteresis):
    """Goal selection for one agent, as the runtime's docstring states it."""
    state = tuple(int(v) for v in values)
    holds = [domain.satisfies(state, g.want) for g in domain.goals]
    achieved = current >= 0 and holds[current]
    if pinned >= 0 and not (achieved and pinned == current) and not holds[pinned]:  # a pin that holds is released
        return pinned if cooldown[pinned] <= now else -1
    best, best_score = -1, 0.0
    for g in range(len(domain.goals)):
        if cooldown[g] > now or priorities[g] <= 0 or holds[g]:
            continue
        s = np.float32(scores[g]) + (np.float32(hysteresis) if g == current else np.float32(0))
        if best < 0 or s > best_score:
            best, best_score = g, s
    return best


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_goal_selection_with_cooldowns_pins_and_hysteresis(seed):
    domain = random_domain(seed)
    rng = np.random.default_rng(seed)
    n, G = 300, len(domain.goals)
    hysteresis = 1.5
    brain = Brain(domain, n, planner="reference", device="cpu", goal_hysteresis=hysteresis)
    values = random_values(domain, n, rng)
    prio = np.where(rng.random((n, G)) < 0.15, rng.uniform(-2, 0, (n, G)), rng.uniform(0.1, 5, (n, G)))
    prio = np.round(prio, 1).astype(np.float32)  # ties on purpose
    cooldown = np.where(rng.random((n, G)) < 0.2, rng.integers(1, 5, (n, G)), 0)
    current = rng.integers(-1, G, n)
    pinned = np.where(rng.random(n) < 0.1, rng.integers(0, G, n), -1)
    names = ("states", "priorities", "cooldown_until", "goal", "pinned_goal")
    h = {name: getattr(brain, name).numpy() for name in names}
    h["states"][:] = brain.tables.pack_states(values)
    h["priorities"][:] = prio
    h["cooldown_until"][:] = cooldown
    h["goal"][:] = current
    h["pinned_goal"][:] = pinned
    brain.clock.fill_(2)
    run_stage(brain, "decide")
    got = brain.goal.numpy()
    for i in range(n):
        want = select_oracle(domain, values[i], prio[i], prio[i], cooldown[i], 2, current[i], pinned[i], hysteresis)
        assert got[i] == want, f"agent {i}"


def test_goal_scorer_replaces_priorities_but_not_eligibility():
    domain = random_domain(5)
    rng = np.random.default_rng(5)
    n, G = 120, len(domain.goals)
    scores = rng.uniform(-3, 3, (n, G)).astype(np.float32)
    brain = Brain(domain, n, planner="reference", device="cpu", goal_scorer=lambda b: scores)
    values = random_values(domain, n, rng)
    brain.states.numpy()[:] = brain.tables.pack_states(values)
    prio = brain.priorities.numpy()
    prio[:, 0] = 0  # never eligible, whatever its score
    run_stage(brain, "decide")
    got = brain.goal.numpy()
    for i in range(n):
        assert got[i] == select_oracle(domain, values[i], prio[i], scores[i], np.zeros(G), 0, -1, -1, 0.0)
    assert (got != 0).all()


@pytest.mark.parametrize("budget", [1, 7, 40])
def test_budget_order_longest_waiting_then_priority_then_index(budget):
    domain = random_domain(7)
    rng = np.random.default_rng(budget)
    n, G = 90, len(domain.goals)
    brain = Brain(domain, n, planner="reference", device="cpu", plan_budget=budget)
    seen = []
    brain.on_plan(lambda states, goals, costs, enabled, agents, count: seen.append(
        agents.numpy()[: int(count.numpy()[0])].copy()))
    # Agents that want a plan pin a goal that does not hold (so selection keeps it); the others have no goal and
    # no eligible goal (so selection leaves them idle): the decide pass flags exactly the first kind.
    default = tuple(int(v) for v in brain.tables.unpack_states(brain.states.numpy()[:1])[0])
    open_goals = [g for g in range(G) if not domain.satisfies(default, domain.goals[g].want)]
    assert open_goals
    want = rng.random(n) < 0.6
    goal = np.where(want, rng.choice(open_goals, n), -1)
    waiting = rng.integers(0, 4, n)
    prio = np.where(want[:, None], rng.integers(1, 4, (n, G)), 0).astype(np.float32)
    for name, v in (("goal", goal), ("pinned_goal", goal), ("needs_plan", want), ("waiting", waiting),
                    ("priorities", prio)):
        getattr(brain, name).numpy()[:] = v
    run_stage(brain, "decide")
    run_stage(brain, "plan")
    keys = sorted(np.flatnonzero(want), key=lambda i: (-(waiting[i] + 1), -prio[i, goal[i]], i))
    np.testing.assert_array_equal(seen[0], keys[:budget])
    planned = set(keys[:budget])
    for i in range(n):
        expect_wait = 0 if i in planned else waiting[i] + int(want[i])
        if i in planned and brain.plan_level.numpy()[i] > 0:
            continue
        assert brain.waiting.numpy()[i] == expect_wait, f"agent {i}"


def test_warp_table_structs_name_only_fields_of_the_numpy_tables():
    """One vocabulary: every field of a Warp table struct is a field (or property) of the numpy table it mirrors,
    and the generic copy fills them all."""
    from goap.kernels import semantics as S

    brain = Brain(random_domain(0), 1, planner="reference")
    t = brain.tables
    pairs = [(t, S.DomainTables), (t.layout, S.Layout), (t.pre_ints, S.CondList), (t.eff_steps, S.StepList),
             (t.goals, S.GoalTables), (t.relaxed, S.RelaxedTables)]
    for table, struct in pairs:
        missing = set(S.struct_fields(struct)) - S.table_field_names(table)
        assert not missing, f"{struct.key}: {sorted(missing)}"
    d = S.to_device(t, S.DomainTables, "cpu")
    np.testing.assert_array_equal(d.pre_mask.numpy(), t.pre_mask)
    np.testing.assert_array_equal(d.goals.ints.start.numpy(), t.goals.ints.start)
    assert d.n_actions == t.n_actions and d.layout.n_words == t.n_words

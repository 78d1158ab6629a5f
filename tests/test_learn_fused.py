"""goap.learn.fused: the utility model as one Warp kernel, against the torch path it replaces.

The torch selector (`UtilitySelector(backend="torch")`) is the oracle: the fused kernel must give its factors and
terms (float32 tolerance), hence its choices; score only the listed agents; and run captured with the tick, bit for
bit as plain launches.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
wp = pytest.importorskip("warp")

from goap.domain import DomainBuilder  # noqa: E402
from goap.learn.fused import WIDTHS, fast_exp, width_for  # noqa: E402
from goap.learn.model import UtilityModel  # noqa: E402
from goap.learn.selector import UtilitySelector  # noqa: E402
from goap.learn.train import train  # noqa: E402
from goap.runtime import Brain  # noqa: E402
from tests.test_learn import abc_domain, synth_domain, synth_log  # noqa: E402
from worlds.village.world import VillageWorld  # noqa: E402


def random_model(domain, hidden, seed=0):
    """A model with random weights and non-trivial target statistics (every unit and head does something)."""
    torch.manual_seed(seed)
    model = UtilityModel.for_domain(domain, hidden=hidden,
                                    stats={"cost_mean": 1.2, "cost_std": 0.7, "value_mean": 0.3, "value_std": 2.0})
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-0.6, 0.6)
    return model.eval()


def fused_factors(selector, brain, rows):
    """Run the fused kernel on ``rows`` of ``brain`` alone; the brain's factor and term buffers, as numpy."""
    ids = wp.array(np.asarray(rows, dtype=np.int32), device=brain.device)
    count = wp.array([len(rows)], dtype=wp.int32, device=brain.device)
    selector.launch_scores(brain, rows=ids, count=count, dim=len(rows), mult=brain._score_mult,
                           add=brain._score_add, goals=brain._tables_d.goals, rules=brain._rules)
    return brain._score_mult.numpy().copy(), brain._score_add.numpy().copy()


def synth_brain(n, seed):
    domain = synth_domain()
    brain = Brain(domain, n, planner="reference")
    log = synth_log(domain, rows=n, seed=seed)
    brain.assign("states", np.array(log.columns["states"], dtype=np.uint64))
    rng = np.random.default_rng(seed)
    brain.assign("priorities", rng.uniform(0.2, 3.0, (n, len(domain.goals))).astype(np.float32))
    return domain, brain


@pytest.mark.parametrize("hidden", [(16, 16), (5, 11), (9, 16, 7)])
def test_fused_factors_equal_the_torch_path_for_the_listed_agents_only(hidden):
    domain, brain = synth_brain(40, seed=1)
    model = random_model(domain, hidden)
    fused = UtilitySelector(model, domain, alpha=1.5, beta=0.8, gamma=0.3, backend="warp", cache=False)
    ref = UtilitySelector(model, domain, alpha=1.5, beta=0.8, gamma=0.3, backend="torch", cache=False)
    assert fused.backend == "warp" and ref.backend == "torch"
    rows = np.array([0, 3, 4, 17, 39], dtype=np.int64)
    sentinel = 12345.0
    brain._score_mult.fill_(sentinel)
    brain._score_add.fill_(-sentinel)
    mult, add = fused_factors(fused, brain, rows)
    m_ref, a_ref = (t.numpy() for t in ref.score_factors(brain, wp.array(rows.astype(np.int32))))
    np.testing.assert_allclose(mult[rows], m_ref, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(add[rows], a_ref, rtol=2e-5, atol=2e-5)
    others = np.setdiff1d(np.arange(40), rows)
    assert (mult[others] == sentinel).all() and (add[others] == -sentinel).all()  # nobody else was scored
    # the same choices: the argmax of priority * factor + term over the listed agents
    prio = brain.priorities.numpy()[rows]
    np.testing.assert_array_equal(np.argmax(prio * mult[rows] + add[rows], axis=1),
                                  np.argmax(ref.score_rows(brain, wp.array(rows.astype(np.int32))).numpy(), axis=1))
    assert fused.rows_predicted == len(rows)


def test_in_a_brain_the_kernel_scores_exactly_the_agents_due():
    """``rows=None`` (what the brain passes): the kernel tests every agent and scores those due this tick (no goal,
    a goal that holds, or the stagger), nobody else; the same agents `select_due` lists for a row scorer."""
    domain = abc_domain()
    n, every = 30, 4
    brain = Brain(domain, n, planner="reference")
    t = brain.tables
    goal = np.full(n, 1, dtype=np.int32)  # gb: holds where b is set
    goal[[0, 7, 12]] = -1  # no goal: due
    states = np.stack([t.pack({"b": bool(i in (3, 9))}) for i in range(n)])  # gb holds for 3 and 9: due
    brain.assign("goal", goal)
    brain.assign("states", states)
    tick = int(brain.clock.numpy()[0])
    want = sorted({0, 7, 12, 3, 9} | {i for i in range(n) if (i + tick) % every == 0})
    selector = UtilitySelector(random_model(domain, (16,), seed=1), domain, backend="warp", cache=False)
    brain._score_mult.fill_(-7.0)
    brain._score_add.fill_(-7.0)
    selector.launch_scores(brain, rows=None, count=None, dim=n, every=every, mult=brain._score_mult,
                           add=brain._score_add, goals=brain._tables_d.goals, rules=brain._rules)
    changed = np.flatnonzero((brain._score_mult.numpy() != -7.0).any(axis=1))
    assert changed.tolist() == want
    assert selector.rows_predicted == len(want)
    brain.launcher.launch(brain._kernels.select_due, n, [brain.agents, brain.clock, brain._tables_d.goals, every,
                                                         brain._event_flag])
    assert np.flatnonzero(brain._event_flag.numpy()).tolist() == want  # the row scorer's list


def test_the_fused_cache_runs_only_the_changed_agents_and_matches_a_full_recompute():
    domain, brain = synth_brain(30, seed=2)
    model = random_model(domain, (16, 16), seed=3)
    cached = UtilitySelector(model, domain, backend="warp")
    rows = np.arange(0, 30, 2)
    fused_factors(cached, brain, rows)
    assert cached.rows_predicted == 15
    fused_factors(cached, brain, rows)
    assert cached.rows_predicted == 15  # nothing changed: nothing run through the model
    states = brain.states.numpy().copy()
    states[[4, 5, 10]] = synth_log(domain, rows=30, seed=9).columns["states"][[4, 5, 10]]
    brain.assign("states", states)
    mult, add = fused_factors(cached, brain, rows)
    assert cached.rows_predicted == 15 + 2  # 4 and 10 changed among the listed; 5 was not listed
    full = UtilitySelector(model, domain, backend="torch", cache=False)
    m_ref, a_ref = (t.numpy() for t in full.score_factors(brain, wp.array(rows.astype(np.int32))))
    np.testing.assert_allclose(mult[rows], m_ref, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(add[rows], a_ref, rtol=2e-5, atol=2e-5)


def test_a_brain_with_the_fused_selector_chooses_as_with_the_torch_selector():
    domain, _ = synth_brain(1, seed=0)
    model, _ = train(synth_log(domain, rows=1500, seed=4), epochs=3, seed=0, domain=domain, hidden=(16, 16))
    goals = {}
    for backend in ("warp", "torch"):
        _, brain = synth_brain(60, seed=5)
        brain.goal_scorer = UtilitySelector(model, domain, beta=2.0, backend=backend, every=3)
        picked = []
        for _ in range(6):
            brain.tick()
            picked.append(brain.goal.numpy().copy())
        goals[backend] = np.array(picked)
    np.testing.assert_array_equal(goals["warp"], goals["torch"])


def test_weights_zero_give_the_priority_choices_bit_for_bit():
    """alpha = beta = gamma = 0: factor 1 and term 0, so a brain scored by the model runs as a brain without one."""
    domain = abc_domain()
    model = random_model(domain, (16,), seed=5)
    runs = []
    for scorer in (None, UtilitySelector(model, domain, alpha=0.0, beta=0.0, gamma=0.0, backend="warp", every=2)):
        brain = Brain(domain, 24, planner="reference", goal_scorer=scorer)
        rng = np.random.default_rng(0)
        for _ in range(5):
            brain.assign("priorities", rng.uniform(0.1, 2.0, (24, 3)).astype(np.float32))
            brain.tick()
        runs.append(brain.state_hash())
    assert runs[0] == runs[1]


def village_model(n=64, ticks=25):
    world = VillageWorld()
    brain = Brain(world.domain, n, world=world, seed=3, plan_budget=64)
    log = brain.record_outcomes()
    for _ in range(ticks):
        brain.tick()
    model, _ = train(log, epochs=2, seed=0, domain=world.domain, hidden=(16, 16))
    return world.domain, model


def test_the_fused_selector_runs_captured_with_the_tick_bit_for_bit():
    domain, model = village_model()
    brains = []
    for capture in (False, True):
        world = VillageWorld()
        selector = UtilitySelector(model, domain, beta=1.5, backend="warp", every=4)
        brains.append(Brain(domain, 96, world=world, seed=11, plan_budget=64, capture=capture,
                            goal_scorer=selector))
    plain, captured = brains
    for t in range(30):
        for b in brains:
            b.tick()
        if t == 14:  # a weight changed on the selector: the captured graphs read it from the device
            for b in brains:
                b.goal_scorer.beta = 0.5
        np.testing.assert_array_equal(captured._score_mult.numpy(), plain._score_mult.numpy())
        np.testing.assert_array_equal(captured._score_add.numpy(), plain._score_add.numpy())
    assert captured.captured and captured.graph_captures > 0
    assert captured.state_hash() == plain.state_hash()
    assert captured.goal_scorer.rows_predicted == plain.goal_scorer.rows_predicted > 0


def test_bad_models_and_backends_are_refused():
    domain = abc_domain()
    model = random_model(domain, (16,))
    with pytest.raises(ValueError, match="trained on domain 'abc'"):
        UtilitySelector(model, synth_domain())
    with torch.no_grad():
        model.head.weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="not finite"):
        UtilitySelector(model, domain, backend="warp")
    wide = random_model(domain, (WIDTHS[-1] + 1,))
    assert width_for(wide.hidden) is None
    with pytest.raises(ValueError, match="no fused kernel"):
        UtilitySelector(wide, domain, backend="warp")
    assert UtilitySelector(wide, domain).backend == "torch"  # auto: the torch path when no kernel fits
    with pytest.raises(ValueError, match="backend must be"):
        UtilitySelector(random_model(domain, (16,)), domain, backend="tpu")
    assert UtilitySelector(random_model(domain, (16,)), domain, keep_predictions=True).backend == "torch"


def many_goals_domain(n_goals=21):
    """More goals than one of the kernel's goal blocks, and a type that may pick only every fourth goal."""
    b = DomainBuilder("many")
    for k in range(n_goals):
        b = b.bool(f"f{k}")
    b = b.int("n", 0, 6, default=0).action("a0", cost=1, effects={"f0": True})
    for k in range(n_goals):
        b = b.goal(f"g{k}", want={f"f{k}": True}, priority=1.0 + k % 3)
    few = [f"g{k}" for k in range(0, n_goals, 4)]
    return b.agent_type("all").agent_type("few", goals=few).build(), [k for k in range(0, n_goals, 4)]


@pytest.mark.parametrize("hidden", [(32,), (40, 24)])  # widths 32 (blocks of 16 goals) and 64 (blocks of 8)
def test_goal_blocks_and_types_match_the_torch_path(hidden):
    domain, few = many_goals_domain()
    n, G = 30, len(domain.goals)
    brain = Brain(domain, n, planner="reference")
    brain.reset_agents(np.arange(1, n, 2), agent_type="few")
    rng = np.random.default_rng(4)
    t = brain.tables
    states = np.stack([t.pack({**{f"f{k}": bool(rng.integers(0, 2)) for k in range(G)}, "n": int(rng.integers(0, 7))})
                       for _ in range(n)])
    brain.assign("states", states)
    model = random_model(domain, hidden, seed=7)
    fused = UtilitySelector(model, domain, alpha=0.7, beta=1.1, gamma=0.4, backend="warp", cache=False)
    ref = UtilitySelector(model, domain, alpha=0.7, beta=1.1, gamma=0.4, backend="torch", cache=False)
    rows = np.arange(n)
    mult, add = fused_factors(fused, brain, rows)
    m_ref, a_ref = (x.numpy() for x in ref.score_factors(brain, wp.array(rows.astype(np.int32))))
    typed = np.arange(1, n, 2)
    alls = np.arange(0, n, 2)
    np.testing.assert_allclose(mult[alls], m_ref[alls], rtol=2e-5, atol=2e-6)  # type "all": every goal
    np.testing.assert_allclose(add[alls], a_ref[alls], rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(mult[np.ix_(typed, few)], m_ref[np.ix_(typed, few)], rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(add[np.ix_(typed, few)], a_ref[np.ix_(typed, few)], rtol=2e-5, atol=2e-5)
    never = np.setdiff1d(np.arange(G), few)  # goals type "few" never picks: the plain priority
    assert (mult[np.ix_(typed, never)] == 1.0).all() and (add[np.ix_(typed, never)] == 0.0).all()


@wp.kernel
def _fast_exp_of(x: wp.array(dtype=wp.float32), out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    out[i] = fast_exp(x[i])


def test_the_decodings_exponential_is_within_two_ulp_of_exp():
    x = np.concatenate([np.linspace(-87.0, 88.0, 20001), np.linspace(-1e-3, 1e-3, 201), [0.0, 1.0, -1.0]])
    x = x.astype(np.float32)
    out = wp.zeros(len(x), dtype=wp.float32)
    wp.launch(_fast_exp_of, len(x), [wp.array(x), out])
    want = np.exp(x.astype(np.float64))
    got = out.numpy().astype(np.float64)
    ulp = np.spacing(want.astype(np.float32)).astype(np.float64)
    assert (np.abs(got - want) <= 2.0 * ulp).all(), float(np.max(np.abs(got - want) / ulp))
    # clamped outside the float range instead of inf or 0, so a decoded cost or probability stays finite
    ends = wp.zeros(2, dtype=wp.float32)
    wp.launch(_fast_exp_of, 2, [wp.array(np.array([-200.0, 200.0], np.float32)), ends])
    lo, hi = ends.numpy()
    assert 0.0 < lo < 1e-37 and np.isfinite(hi) and hi > 1e38


def test_new_weights_and_another_writer_make_the_cached_rows_stale():
    domain, brain = synth_brain(30, seed=2)
    model = random_model(domain, (16,), seed=3)
    cached = UtilitySelector(model, domain, beta=0.8, backend="warp")
    rows = np.arange(0, 30, 3)
    fused_factors(cached, brain, rows)
    assert cached.rows_predicted == len(rows)
    cached.beta = 2.5  # new weights: every row is run again with them
    mult, add = fused_factors(cached, brain, rows)
    assert cached.rows_predicted == 2 * len(rows)
    full = UtilitySelector(model, domain, beta=2.5, backend="torch", cache=False)
    m_ref, a_ref = (x.numpy() for x in full.score_factors(brain, wp.array(rows.astype(np.int32))))
    np.testing.assert_allclose(add[rows], a_ref, rtol=2e-5, atol=2e-5)
    # another scorer writes the brain's score buffers: the fused cache's rows no longer hold, so all are written
    brain.goal_scorer = lambda b: np.full((b.n_agents, len(domain.goals)), 5.0, dtype=np.float32)
    brain.tick()
    assert (brain._score_mult.numpy()[rows] == 0.0).all()  # plain scores: factor 0, term = the score
    brain.goal_scorer = None
    mult, add = fused_factors(cached, brain, rows)
    assert cached.rows_predicted == 3 * len(rows)
    m_ref, a_ref = (x.numpy() for x in full.score_factors(brain, wp.array(rows.astype(np.int32))))
    np.testing.assert_allclose(mult[rows], m_ref, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(add[rows], a_ref, rtol=2e-5, atol=2e-5)


def test_spans_on_the_cpu_pool_equal_one_span(monkeypatch):
    """The brain's path (every agent tested) split over the CPU pool scores the same agents with the same values as
    one span; the counter slots per span add up."""
    import goap.learn.fused as fused_mod

    domain, model = village_model(n=32, ticks=10)
    out = []
    for all_rows in (1 << 30, 16):  # one span; then spans of 16 agents (as many as the pool has threads)
        monkeypatch.setattr(fused_mod, "ALL_ROWS", all_rows)
        brain = Brain(domain, 200, world=VillageWorld(), seed=5, plan_budget=32, cpu_threads=2)
        selector = UtilitySelector(model, domain, beta=1.5, backend="warp", every=3)
        for _ in range(3):
            brain.tick()
        brain._score_mult.fill_(-3.0)
        brain._score_add.fill_(-3.0)
        brain._score_writer = None
        selector.launch_scores(brain, rows=None, count=None, dim=brain.n_agents, mult=brain._score_mult,
                               add=brain._score_add, goals=brain._tables_d.goals, rules=brain._rules)
        slots = next(iter(selector._fused.values())).predicted.numpy()
        assert np.count_nonzero(slots) == (1 if all_rows > 200 else 2)  # one counter slot a span
        out.append((brain._score_mult.numpy().copy(), brain._score_add.numpy().copy(), selector.rows_predicted))
    (m1, a1, p1), (m2, a2, p2) = out
    assert p1 == p2 > 0 and ((m1 != -3.0).any(axis=1)).sum() == p1
    np.testing.assert_array_equal(m1, m2)
    np.testing.assert_array_equal(a1, a2)

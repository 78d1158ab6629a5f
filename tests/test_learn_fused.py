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

from goap.learn.fused import WIDTHS, width_for  # noqa: E402
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

"""goap.learn: features, the utility model, training against baselines, files, and the goal selector."""

from __future__ import annotations

import argparse
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from goap import DomainBuilder  # noqa: E402
from goap.encoding import encode  # noqa: E402
from goap.learn.features import FeatureLayout, states_as_torch  # noqa: E402
from goap.learn.model import UtilityModel  # noqa: E402
from goap.learn.selector import UtilitySelector  # noqa: E402
from goap.learn.train import auc, format_report, train  # noqa: E402
from goap.learn.train import run as train_run  # noqa: E402
from goap.outcomes import OutcomeLog  # noqa: E402
from goap.planners import Status  # noqa: E402
from goap.runtime import Brain  # noqa: E402
from tests.conftest import ROOT  # noqa: E402


def synth_domain(name: str = "synth"):
    return (
        DomainBuilder(name)
        .bool("a").bool("b").bool("c")
        .int("n", 0, 7, default=0)
        .enum("place", ["x", "y", "z"], default="x")
        .action("set_a", cost=1, effects={"a": True})
        .action("inc", cost=1, pre={"n": "< 7"}, effects={"n": "+= 1"})
        .action("go_y", cost=2, effects={"place": "y"})
        .goal("g0", want={"a": True}, priority=2)
        .goal("g1", want={"n": ">= 3"}, priority=1)
        .build()
    )


def synth_log(domain, rows: int = 4000, seed: int = 0) -> OutcomeLog:
    """Plan found iff a and not b; cost 1 + 3 n + 5 c (+ 2 for goal 1); achieved after ``cost`` ticks."""
    rng = np.random.default_rng(seed)
    t = encode(domain)
    values = np.stack([
        rng.integers(0, 2, rows), rng.integers(0, 2, rows), rng.integers(0, 2, rows),
        rng.integers(0, 8, rows), rng.integers(0, 3, rows),
    ], axis=1)
    goal = rng.integers(0, 2, rows)
    found = (values[:, 0] == 1) & (values[:, 1] == 0)
    cost = (1 + 3 * values[:, 3] + 5 * values[:, 2] + 2 * goal).astype(np.float32)
    return OutcomeLog.from_columns(
        domain, states=t.pack_states(values), goal=goal,
        status=np.where(found, Status.OK, Status.NO_PLAN), cost=np.where(found, cost, np.nan),
        achieved=found.astype(np.int8), ticks_to_goal=np.where(found, cost, -1).astype(np.int32),
        reward=np.where(goal == 0, 2.0, 1.0),
    )


@pytest.fixture(scope="module")
def trained():
    domain = synth_domain()
    model, report = train(synth_log(domain), epochs=25, seed=1, domain=domain, batch_size=128)
    return domain, model, report


# --- features ---------------------------------------------------------------------------------------------
def test_features_scale_one_hot_and_agree_with_torch_and_unpack():
    domain = synth_domain()
    t = encode(domain)
    layout = FeatureLayout.from_domain(domain)
    assert layout.names == ("a", "b", "c", "n", "place=x", "place=y", "place=z", "goal=g0", "goal=g1")
    values = np.array([[1, 0, 1, 7, 2], [0, 1, 0, 3, 0]])
    states = t.pack_states(values)
    s = layout.state_features(states)
    np.testing.assert_allclose(s, [[1, 0, 1, 1, 0, 0, 1], [0, 1, 0, 3 / 7, 1, 0, 0]], rtol=1e-6)
    np.testing.assert_array_equal(layout.encoded_values(states), t.unpack_states(states))  # mins are 0 here
    np.testing.assert_array_equal(layout.state_features_torch(states_as_torch(states)).numpy(), s)
    rows = layout.row_features(states, np.array([1, 0]))
    np.testing.assert_array_equal(rows[:, -2:], [[0, 1], [1, 0]])
    grid = layout.grid_features(states)
    assert grid.shape == (4, 9)
    np.testing.assert_array_equal(grid[1], np.r_[s[0], 0, 1])
    with pytest.raises(ValueError, match="goal index 2"):
        layout.goal_features(np.array([2]))


def test_states_as_torch_shares_memory():
    states = np.array([[np.uint64(2**63 + 5)]], dtype=np.uint64)
    t = states_as_torch(states)
    assert t.dtype == torch.int64 and t.data_ptr() == states.ctypes.data


def test_forward_grid_equals_forward_on_tiled_rows(trained):
    domain, model, _ = trained
    layout = FeatureLayout.from_domain(domain)
    states = synth_log(domain, rows=50, seed=5).columns["states"]
    with torch.no_grad():
        tiled = model(torch.from_numpy(layout.grid_features(states))).reshape(50, 2, 3)
        grid = model.forward_grid(torch.from_numpy(layout.state_features(states)))
    torch.testing.assert_close(grid, tiled, rtol=1e-5, atol=1e-5)


# --- training ---------------------------------------------------------------------------------------------
def test_auc_is_the_rank_statistic():
    rng = np.random.default_rng(0)
    s = rng.integers(0, 5, 60).astype(float)  # many ties
    y = rng.integers(0, 2, 60).astype(bool)
    pos, neg = s[y], s[~y]
    brute = ((pos[:, None] > neg[None]).sum() + 0.5 * (pos[:, None] == neg[None]).sum()) / (len(pos) * len(neg))
    assert auc(s, y) == pytest.approx(brute)
    assert auc([0.1, 0.9], [0, 1]) == 1.0 and np.isnan(auc([0.1, 0.2], [1, 1]))


def test_training_learns_feasibility_and_cost_better_than_baselines(trained):
    _, _, report = trained
    fe, co, va = report["feasible"], report["cost"], report["value"]
    assert fe["auc"] > 0.95 and fe["auc"] > fe["auc_baseline"] + 0.2
    assert fe["accuracy"] > 0.95
    assert co["mae"] < 0.5 * co["mae_baseline"]
    assert va["mae"] < va["mae_baseline"]
    assert report["held_out_rows"] == 800 and report["train_rows"] == 3200
    table = format_report(report)
    assert "feasible AUC" in table and "per-goal mean" in table


def test_training_is_seeded():
    domain = synth_domain()
    log = synth_log(domain, rows=300)
    m1, r1 = train(log, epochs=2, seed=3, domain=domain)
    m2, r2 = train(log, epochs=2, seed=3, domain=domain)
    for (k, v1), v2 in zip(m1.state_dict().items(), m2.state_dict().values(), strict=True):
        assert torch.equal(v1, v2), k
    assert r1["feasible"] == r2["feasible"]


def test_training_errors_are_clear(tmp_path):
    domain = synth_domain()
    empty = OutcomeLog.from_columns(domain, states=np.zeros((0, 1), np.uint64), goal=np.zeros(0, int))
    with pytest.raises(ValueError, match="empty"):
        train(empty, domain=domain)
    with pytest.raises(ValueError, match="too few usable rows"):
        train(synth_log(domain, rows=10), domain=domain)
    other = synth_domain("other")
    with pytest.raises(ValueError, match="domain 'synth'.*domain 'other'"):
        train(synth_log(domain, rows=100), domain=other)
    with pytest.raises(ValueError, match="not the domain of a known world"):
        train(synth_log(domain, rows=100))
    args = argparse.Namespace(data=str(tmp_path / "missing.npz"), out=str(tmp_path / "m.pt"), epochs=1, seed=0,
                              domain=None, hidden="8", batch_size=64, lr=1e-3, held_out=0.2, device="cpu", quiet=True)
    with pytest.raises(ValueError, match="no such outcome log"):
        train_run(args)


def test_goap_train_run_writes_a_model(tmp_path, capsys):
    domain = synth_domain()
    from goap import save_domain

    save_domain(domain, tmp_path / "synth.toml")
    synth_log(domain, rows=400).save(tmp_path / "log.npz")
    args = argparse.Namespace(data=str(tmp_path / "log.npz"), out=str(tmp_path / "m.pt"), epochs=2, seed=0,
                              domain=str(tmp_path / "synth.toml"), hidden="16,16", batch_size=64, lr=3e-3,
                              held_out=0.2, device="cpu", quiet=True)
    assert train_run(args) == 0
    out = capsys.readouterr().out
    assert "feasible AUC" in out and "model written to" in out
    model = UtilityModel.load(tmp_path / "m.pt", domain)
    assert model.hidden == (16, 16) and model.summary["epochs"] == 2


# --- files ------------------------------------------------------------------------------------------------
def test_save_load_round_trip_gives_identical_predictions(trained, tmp_path):
    domain, model, _ = trained
    path = tmp_path / "model.pt"
    model.save(path)
    back = UtilityModel.load(path, domain)
    x = FeatureLayout.from_domain(domain).grid_features(synth_log(domain, rows=64, seed=9).columns["states"])
    a, b = model.predict(x), back.predict(x)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    assert back.feature_names == model.feature_names and back.stats == model.stats
    assert back.summary["held_out_rows"] == 800


def test_a_model_of_another_domain_is_refused(trained, tmp_path):
    domain, model, _ = trained
    model.save(tmp_path / "model.pt")
    other = synth_domain("other")
    with pytest.raises(ValueError, match="trained on domain 'synth'.*not on domain 'other'"):
        UtilityModel.load(tmp_path / "model.pt", other)
    with pytest.raises(ValueError, match="domain 'synth'"):
        UtilitySelector(model, other)


def test_a_damaged_model_file_gives_a_clear_error(trained, tmp_path):
    domain, model, _ = trained
    bad = tmp_path / "junk.pt"
    bad.write_bytes(b"definitely not a model")
    with pytest.raises(ValueError, match="not a readable utility model file"):
        UtilityModel.load(bad, domain)
    model.save(tmp_path / "model.pt")
    data = (tmp_path / "model.pt").read_bytes()
    (tmp_path / "cut.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="not a readable utility model file"):
        UtilityModel.load(tmp_path / "cut.pt", domain)
    torch.save({"weights": torch.zeros(3)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a utility model file"):
        UtilityModel.load(tmp_path / "other.pt", domain)
    with pytest.raises(ValueError, match="no such model file"):
        UtilityModel.load(tmp_path / "missing.pt", domain)


# --- the selector -----------------------------------------------------------------------------------------
def hand_model(domain, logits):
    """A model whose P(plan found) for goal g is sigmoid(logits[g]) whatever the state; cost and value 0."""
    model = UtilityModel.for_domain(domain, hidden=(len(logits),))
    S, G = model.n_state, model.n_goals
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        for g in range(G):
            model.first.weight[g, S + g] = 1.0  # hidden unit g is on for goal g only
            model.head.weight[0, g] = logits[g]
        model.head.bias[2] = 0.0
    model.stats.update(cost_mean=0.0, value_mean=0.0)
    return model.eval()


def abc_domain():
    return (
        DomainBuilder("abc")
        .bool("a").bool("b").bool("c")
        .action("make_a", effects={"a": True}).action("make_b", effects={"b": True})
        .action("make_c", effects={"c": True})
        .goal("ga", want={"a": True}, priority=3).goal("gb", want={"b": True}, priority=2)
        .goal("gc", want={"c": True}, priority=1)
        .build()
    )


def test_selector_picks_the_best_scored_eligible_goal():
    domain = abc_domain()
    ga, gb, gc = (domain.goal_index(g) for g in ("ga", "gb", "gc"))
    # priority * P: ga 3 * 0.047 = 0.14, gb 2 * 0.27 = 0.54, gc 1 * 0.98 = 0.98.
    selector = UtilitySelector(hand_model(domain, [-3.0, -1.0, 4.0]), domain, keep_predictions=True)
    plain = Brain(domain, 4, planner="reference")
    plain.tick()
    assert (plain.goal.numpy() == ga).all()  # by priority alone

    brain = Brain(domain, 4, planner="reference", goal_scorer=selector)
    t = brain.tables
    brain.states.numpy()[1] = t.pack({"c": True})  # gc already holds: never picked
    brain.cooldown_until.numpy()[2, gc] = 100  # gc cooling down: never picked
    brain.priorities.numpy()[3, gc] = 0.0  # gc switched off for agent 3: never picked
    brain.tick()
    assert brain.goal.numpy().tolist() == [gc, gb, gb, gb]
    scores = selector.last["score"]
    assert scores.shape == (4, 3)
    np.testing.assert_allclose(selector.last["p_feasible"][0], 1 / (1 + np.exp(-np.array([-3.0, -1.0, 4.0]))),
                               rtol=1e-5)
    assert np.argmax(scores[0]) == gc
    # once every goal holds nobody picks anything, however the model scores it
    brain.states.numpy()[:] = t.pack({"a": True, "b": True, "c": True})
    brain.tick()
    assert (brain.goal.numpy() == -1).all()


def test_selector_weights_and_cache():
    domain = abc_domain()
    model = hand_model(domain, [0.0, 0.0, 0.0])
    with torch.no_grad():
        model.head.bias[2] = 1.0  # value = 1 for every goal (value_std 1, value_mean 0)
    brain = Brain(domain, 3, planner="reference")
    plain = UtilitySelector(model, domain, alpha=0.0, beta=0.0, gamma=0.0)
    np.testing.assert_allclose(plain(brain), brain.priorities.numpy())  # all weights 0: the priorities
    sel = UtilitySelector(model, domain, alpha=2.0, beta=0.5, gamma=0.0)
    np.testing.assert_allclose(sel(brain), brain.priorities.numpy() * 0.25 + 0.5, rtol=1e-6)
    assert sel.rows_predicted == 3
    sel(brain)
    assert sel.rows_predicted == 3  # nothing changed: nothing recomputed
    brain.states.numpy()[1] = brain.tables.pack({"a": True})
    sel(brain)
    assert sel.rows_predicted == 4
    with pytest.raises(ValueError, match="beta must be"):
        UtilitySelector(model, domain, beta=-1.0)


def test_selector_cache_matches_full_recompute(trained):
    domain, model, _ = trained
    log = synth_log(domain, rows=40, seed=2)
    states = np.array(log.columns["states"])
    prio = np.ones((40, 2), np.float32)
    cached = UtilitySelector(model, domain)
    full = UtilitySelector(model, domain, cache=False)
    cached.scores(states, prio)
    states[::7] = synth_log(domain, rows=40, seed=3).columns["states"][::7]
    np.testing.assert_allclose(cached.scores(states, prio), full.scores(states, prio), rtol=1e-5, atol=1e-6)
    assert cached.rows_predicted == 40 + 6


def test_a_log_finds_the_domain_of_a_registered_world():
    """Without --domain the log's domain is looked up among the worlds `goap.registry` knows, not by package."""
    from goap.learn.train import resolve_domain
    from goap.registry import register_world, unregister_world

    domain = synth_domain("synth-registered")
    log = synth_log(domain, rows=50)
    with pytest.raises(ValueError, match="not the domain of a known world"):
        resolve_domain(log)
    register_world("synth-learn", type("SynthWorld", (), {"domain": domain}))
    try:
        assert resolve_domain(log) is domain
    finally:
        unregister_world("synth-learn")


def test_village_collect_train_select_end_to_end(tmp_path):
    from worlds import make_world

    world = make_world("village")
    brain = Brain(world.domain, 60, world=world, planner="warp", device="cpu", seed=0)
    log = brain.record_outcomes()
    for _ in range(25):
        brain.tick()
    model, report = train(log, epochs=2, seed=0)  # the domain is found among the worlds by fingerprint
    assert report["domain"] == "village"
    model.save(tmp_path / "v.pt")
    world2 = make_world("village")
    selector = UtilitySelector.load(tmp_path / "v.pt", world2.domain)
    brain2 = Brain(world2.domain, 60, world=world2, planner="warp", device="cpu", seed=1, goal_scorer=selector)
    for _ in range(5):
        brain2.tick()
    assert selector.calls == 5 and brain2.counters["plans_requested"] > 0


# --- without torch ----------------------------------------------------------------------------------------
def test_without_torch_the_engine_imports_and_learn_says_what_to_install():
    code = """
import sys
sys.modules['torch'] = None
import goap, goap.runtime, goap.outcomes, goap.learn, goap.learn.features
from goap.learn import LearnUnavailable, require_torch
try:
    require_torch()
except LearnUnavailable as e:
    print('unavailable:', e)
try:
    import goap.learn.model
except LearnUnavailable:
    print('model: unavailable')
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "unavailable:" in r.stdout and 'pip install -e ".[learn]"' in r.stdout and "torch==2.13.0" in r.stdout
    assert "model: unavailable" in r.stdout


def test_train_utility_example_runs_small():
    r = subprocess.run(
        [sys.executable, str(ROOT / "examples/train_utility.py"), "--agents", "80", "--ticks", "30", "--epochs", "2"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    assert "feasible AUC" in r.stdout and "failed_plans_per_goal" in r.stdout


class RecordingScorer:
    """A row scorer with a fixed rule (score of goal g = priority + g / 10 for odd agents, - g / 10 for even), that
    records which agents it was asked about."""

    def __init__(self, every):
        self.every = every
        self.asked: list[np.ndarray] = []

    @staticmethod
    def rule(ids, prio):
        g = np.arange(prio.shape[1], dtype=np.float32)
        sign = np.where(ids % 2 == 1, 1.0, -1.0).astype(np.float32)[:, None]
        return prio + sign * g / 10

    def score_rows(self, brain, rows):
        ids = rows.numpy().astype(np.int64)
        self.asked.append(ids)
        return self.rule(ids, brain.priorities.numpy()[ids])

    def __call__(self, brain):  # the same rule over every agent
        ids = np.arange(brain.n_agents)
        return self.rule(ids, brain.priorities.numpy())


def test_a_row_scorer_scores_only_the_agents_due_and_chooses_as_a_full_scorer_would():
    domain = abc_domain()
    n, every = 40, 4
    rng = np.random.default_rng(0)
    prio = rng.uniform(0.5, 3.0, (n, 3)).astype(np.float32)
    full_rule = RecordingScorer(every)
    rows_brain = Brain(domain, n, planner="reference", goal_scorer=full_rule)
    whole = Brain(domain, n, planner="reference", goal_scorer=lambda b: full_rule(b))
    for b in (rows_brain, whole):
        b.assign("priorities", prio)
    for t in range(6):
        goal = rows_brain.goal.numpy().copy()
        holds = rows_brain.current_goal_satisfied()
        want = np.flatnonzero((goal < 0) | holds | ((np.arange(n) + t) % every == 0))
        rows_brain.tick()
        whole.tick()
        assert list(full_rule.asked[-1]) == list(want), t
        asked = full_rule.asked[-1]
        assert (rows_brain.goal.numpy()[asked] == whole.goal.numpy()[asked]).all(), t
    assert len(full_rule.asked[0]) == n  # the first tick: nobody has a goal
    assert len(full_rule.asked[-1]) < n


def test_the_utility_selector_as_a_row_scorer_matches_its_full_scores(trained):
    domain, model, _ = trained
    brain = Brain(domain, 30, planner="reference")
    rng = np.random.default_rng(4)
    log = synth_log(domain, rows=30, seed=5)
    brain.assign("states", np.array(log.columns["states"], dtype=np.uint64))
    brain.assign("priorities", rng.uniform(0.5, 2, (30, len(domain.goals))).astype(np.float32))
    sel = UtilitySelector(model, domain, keep_predictions=True, cache=False)
    import warp as wp

    rows = wp.array(np.array([3, 7, 8, 29], dtype=np.int32), device=brain.device)
    part = sel.score_rows(brain, rows).numpy()
    np.testing.assert_allclose(part, sel(brain)[[3, 7, 8, 29]], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="every must be"):
        UtilitySelector(model, domain, every=0)


def test_the_row_cache_recomputes_exactly_the_changed_agents(trained):
    domain, model, _ = trained
    import warp as wp

    brain = Brain(domain, 30, planner="reference")
    log = synth_log(domain, rows=30, seed=6)
    brain.assign("states", np.array(log.columns["states"], dtype=np.uint64))
    cached = UtilitySelector(model, domain)
    full = UtilitySelector(model, domain, cache=False)
    rows = wp.array(np.arange(0, 30, 2, dtype=np.int32), device=brain.device)
    cached.score_rows(brain, rows)
    assert cached.rows_predicted == 15
    states = brain.states.numpy().copy()
    states[[4, 5, 10]] = synth_log(domain, rows=30, seed=7).columns["states"][[4, 5, 10]]
    brain.assign("states", states)
    got = cached.score_rows(brain, rows).numpy()
    assert cached.rows_predicted == 15 + 2  # agents 4 and 10 changed among the rows asked; 5 was not asked
    np.testing.assert_allclose(got, full.score_rows(brain, rows).numpy(), rtol=1e-5, atol=1e-6)


def test_learn_rounds_example_runs_rounds_and_compares_on_fresh_seeds(tmp_path):
    out = tmp_path / "rounds.json"
    r = subprocess.run(
        [sys.executable, str(ROOT / "examples/learn_rounds.py"), "--worlds", "village", "--agents", "100",
         "--ticks", "60", "--rounds", "1", "--seeds", "1", "--epochs", "1", "--json", str(out)],
        capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stderr
    import json

    result = json.loads(out.read_text())["worlds"][0]
    assert [x["selector"] for x in result["rounds"]] == ["priority", "utility"]
    assert result["rounds"][1]["rows"] > result["rounds"][0]["rows"]  # round 1 appended its outcomes
    assert len(result["ratios"]) == 1 and all(len(result["runs"][s]) == 1 for s in ("priority", "utility"))
    for s in ("priority", "utility"):  # the spread brackets the mean
        m = result["summary"][s]["objective"]
        assert m["min"] <= m["mean"] <= m["max"] and m["mean"] > 0
    assert "objective utility / priority per seed" in r.stdout

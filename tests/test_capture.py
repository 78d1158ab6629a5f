"""The captured tick is the plain tick: bit for bit, on the CPU (which records graphs the way CUDA does).

Warp's CPU graphs record launches without running them and replay them reading the arrays' current contents, so a
captured CPU run takes the GPU's path (fixed launch dimensions, counts on the device, no host reads) through the
very code CUDA runs. Each test runs the same simulation twice, plainly and with ``capture=True``, and compares
every tick: the state hash (every agent and world array), the tick's counters and the per-agent event bits.
"""

from __future__ import annotations

import numpy as np
import pytest

from goap.launch import CaptureError, Launcher
from goap.runtime import Brain, BrainError
from goap.world import EngineWorld
from tests.test_runtime import farm_domain


def engine_world(domain):
    return EngineWorld(domain, duration=2, drift_p=0.05, fail_p=0.05)


def trace(brain, ticks, between=None):
    """Per tick: the state hash, the tick's counters and the event bits (and ``between(brain, t)`` first)."""
    out = []
    for t in range(ticks):
        if between is not None:
            between(brain, t)
        stats = brain.tick()
        out.append((brain.state_hash(), tuple(sorted(stats.events.items())), brain.events.bits.numpy().tobytes()))
    return out


def assert_same_runs(plain, captured):
    assert len(plain) == len(captured)
    for t, (p, c) in enumerate(zip(plain, captured, strict=True)):
        assert p[1] == c[1], f"tick {t}: counters differ: {p[1]} vs {c[1]}"
        assert p[2] == c[2], f"tick {t}: event bits differ"
        assert p[0] == c[0], f"tick {t}: state hash differs"


def pair(make, ticks, between=None):
    """Run ``make(capture)`` plainly and captured; return both brains after asserting equal traces."""
    plain, captured = make(False), make(True)
    assert_same_runs(trace(plain, ticks, between), trace(captured, ticks, between))
    assert captured.graph_captures > 0 and captured.captured
    assert plain.graph_captures == 0
    return plain, captured


@pytest.mark.parametrize("dedupe", [True, False, "auto"])
@pytest.mark.parametrize("planner", ["warp", "reference"])
def test_engine_world_captured_equals_plain(planner, dedupe):
    domain = farm_domain()
    if planner == "reference" and dedupe is not True:
        pytest.skip("the reference planner has no grouping")

    def make(capture):
        return Brain(domain, 300, world=engine_world(domain), device="cpu", seed=3, plan_budget=40, planner=planner,
                     dedupe=dedupe, capture=capture)

    _, captured = pair(make, 40)
    assert captured.counters["plans_made"] > 0 and captured.counters["actions_done"] > 0


def test_escalation_and_deferral_captured_equal_plain():
    """Searches that outgrow their first pool escalate (and some are deferred to later ticks) inside the graph."""
    domain = farm_domain()

    def make(capture):
        return Brain(domain, 200, world=engine_world(domain), device="cpu", seed=5, max_nodes=4,
                     search_nodes_per_tick=64, capture=capture)

    plain, _ = pair(make, 25)
    assert plain.counters["plans_deferred"] > 0


def test_hand_driven_brain_without_a_world_captured_equals_plain():
    """No world: the game sets action statuses between ticks; the captured tick consumes them like the plain one."""
    domain = farm_domain()

    def game(brain, t):
        a = brain.arrays
        acting = a.action.numpy() >= 0
        st = a.action_status.numpy()
        st[acting & (a.action_ticks.numpy() >= 1)] = 1  # DONE after two ticks
        st[acting & (np.arange(brain.n_agents) % 17 == t % 17)] = 2  # now and then FAILED

    def make(capture):
        return Brain(domain, 120, device="cpu", seed=1, plan_budget=30, capture=capture)

    plain, captured = pair(make, 30, game)
    assert plain.counters["actions_done"] > 100 and plain.counters["actions_failed"] > 0
    assert captured.counters == plain.counters


def test_goal_scorer_captured_equals_plain():
    domain = farm_domain()
    G = len(domain.goals)

    def scorer(brain):  # a host scorer: the scores change with the states and the tick
        s = brain.states.numpy()[:, 0].astype(np.float64)
        k = np.arange(G)[None, :]
        return ((s[:, None] * (k + 3) + brain.tick_count * (k + 1)) % 7).astype(np.float32) + 0.5

    def make(capture):
        return Brain(domain, 150, world=engine_world(domain), device="cpu", seed=2, goal_scorer=scorer,
                     capture=capture)

    pair(make, 25)


def test_snapshot_restore_under_capture(tmp_path):
    """A captured brain restored from a snapshot continues exactly as the plain brain restored from it."""
    domain = farm_domain()

    def make(capture):
        return Brain(domain, 150, world=engine_world(domain), device="cpu", seed=4, plan_budget=20, capture=capture)

    source = make(False)
    trace(source, 12)
    path = tmp_path / "s.npz"
    source.snapshot(path)
    later = trace(source, 10)
    captured = make(True)
    trace(captured, 3)  # captures its graphs on another history first
    captured.restore(path)
    assert_same_runs(later, trace(captured, 10))


def test_a_live_setting_change_recaptures_and_matches_plain():
    domain = farm_domain()

    def change(brain, t):
        if t == 8:
            brain.plan_budget = 5
            brain.cooldown_ticks = 3
        if t == 14:
            brain.goal_hysteresis = 2.5

    def make(capture):
        return Brain(domain, 200, world=engine_world(domain), device="cpu", seed=6, plan_budget=50, dedupe=True,
                     capture=capture)  # dedupe on: no grouping choice that changes on its own

    plain, captured = make(False), make(True)
    assert_same_runs(trace(plain, 20, change), trace(captured, 20, change))
    assert captured.graph_captures > 0
    first = captured.graph_captures
    captured.tick()
    assert captured.graph_captures == first  # nothing changed: replayed, not captured again


def test_a_world_parameter_change_recaptures():
    domain = farm_domain()
    brains = []
    for capture in (False, True):
        brain = Brain(domain, 100, world=engine_world(domain), device="cpu", seed=7, capture=capture)
        brains.append(brain)
    runs = []
    for brain in brains:
        out = trace(brain, 5)
        brain.world.fail_p = 0.5  # baked into the act launch: the captured brain must capture again
        out += trace(brain, 10)
        runs.append(out)
    assert_same_runs(*runs)
    assert brains[1].counters["actions_failed"] > brains[1].counters["actions_done"] / 4


class PeekingWorld(EngineWorld):
    """A world whose sense reads a brain array to the host: fine plainly, an error under capture."""

    capturable = True

    def sense(self, brain):
        brain.action.numpy()
        super().sense(brain)


def test_a_host_read_inside_a_captured_stage_is_an_error_naming_the_stage():
    domain = farm_domain()
    brain = Brain(domain, 20, world=PeekingWorld(domain), device="cpu", capture=True)
    brain.tick()  # the first tick runs plain
    with pytest.raises(CaptureError, match="stage 'sense'.*numpy"):
        brain.tick()


def test_the_guard_refuses_host_copies_too():
    import warp as wp

    launcher = Launcher(wp.get_device("cpu"))
    a = wp.zeros(4, dtype=wp.int32, device="cpu")
    for what, fn in ((r"\.assign", lambda: a.assign(np.arange(4, dtype=np.int32))),
                     ("host data", lambda: wp.array(np.arange(4), dtype=wp.int32, device="cpu")),
                     ("numpy conversion", lambda: np.asarray(a))):
        with pytest.raises(CaptureError, match=f"stage 'act': .*{what}"):
            launcher.capture(fn, "act")
    a.numpy()  # the guard is gone after the capture


class HostWorld(EngineWorld):
    capturable = False


def test_capture_of_a_world_that_is_not_capturable_is_refused():
    domain = farm_domain()
    with pytest.raises(CaptureError, match="does not declare capturable"):
        Brain(domain, 10, world=HostWorld(domain), device="cpu", capture=True)


def test_input_checks_still_run_under_capture():
    """The checks are host steps between graphs: a bad status the game writes is caught on a captured tick."""
    domain = farm_domain()
    brain = Brain(domain, 30, device="cpu", capture=True)
    for _ in range(3):
        brain.tick()
    assert brain.captured
    brain.action_status.numpy()[7] = 9
    with pytest.raises(BrainError, match="agent 7"):
        brain.tick()


def test_fixed_settings_refuse_to_change():
    brain = Brain(farm_domain(), 4, device="cpu")
    with pytest.raises(AttributeError, match="fixed"):
        brain.capture = True
    with pytest.raises(ValueError, match="plan_budget"):
        brain.plan_budget = 0


def test_types_cost_terms_non_interruptible_actions_and_commands_captured_equal_plain():
    """The camp domain (two types, cost terms, non-interruptible actions) with the game's commands between ticks:
    replans on a device list, pins, type changes, action statuses and spawns, as a game would issue them."""
    import warp as wp

    from tests.test_lifecycle import camp

    domain = camp()

    def game(brain, t):
        some = wp.array(np.arange(t % 5, brain.n_agents, 9, dtype=np.int32), device=brain.device)
        if t % 4 == 1:
            brain.replan(some)
        if t % 7 == 3:
            brain.set_goal(some, "guard")
        if t % 6 == 2:
            brain.set_type(some, "medic" if t % 12 == 2 else "guard")
        if t % 5 == 4:
            brain.write_fact("wounded_near", True, agents=some)
        if t == 8:
            brain.despawn(some)
        if t == 12:
            brain.spawn(5, agent_type="medic", states={"fatigue": 4})

    def make(capture):
        return Brain(domain, 150, world=engine_world(domain), device="cpu", seed=4, plan_budget=50,
                     capture=capture)

    plain, _ = pair(make, 30, game)
    c = plain.counters
    assert c["replan_commanded"] > 0 and c["actions_interrupted"] > 0 and c["plans_made"] > 0


def test_a_row_scorer_and_a_sensor_captured_equal_plain():
    import warp as wp

    from tests.test_lifecycle import grow_hunger, guard_domain

    domain = guard_domain()
    G = len(domain.goals)

    class Rows:
        every = 3

        def score_rows(self, brain, rows):
            ids = rows.numpy().astype(np.float32)
            return ((ids[:, None] * (np.arange(G)[None] + 2) + brain.tick_count) % 5).astype(np.float32) + 0.5

    def make(capture):
        brain = Brain(domain, 90, world=engine_world(domain), device="cpu", seed=6, goal_scorer=Rows(),
                      capture=capture)
        slot = brain.fact_slot("hunger")
        brain.add_sensor(lambda b, rows: b.launcher.launch(grow_hunger, rows.shape[0], [
            b.agents.states, rows, slot.word, slot.shift, wp.uint64(slot.mask), wp.uint64(slot.top)]), every=4)
        return brain

    pair(make, 25)


def test_recorded_launch_keys_take_scalars_by_value_and_arrays_by_identity():
    import enum

    import warp as wp

    from goap.launch import _arg_key

    class Kind(enum.IntEnum):
        A = 3

    @wp.struct
    class Boxed:
        value: int

    a, b = wp.zeros(2, dtype=wp.int32, device="cpu"), wp.zeros(2, dtype=wp.int32, device="cpu")
    s1, s2 = Boxed(), Boxed()
    s1.value = s2.value = 7
    assert _arg_key(3) == _arg_key(3) != _arg_key(4) and _arg_key(3) != _arg_key(3.0)
    assert _arg_key(True) != _arg_key(1)  # bool and int are different launch arguments
    assert _arg_key(wp.uint64(5)) == _arg_key(wp.uint64(5)) != _arg_key(wp.uint64(6))
    assert _arg_key(wp.uint64(5)) != _arg_key(wp.int64(5))
    assert _arg_key(Kind.A) == _arg_key(Kind.A) != _arg_key(3)  # an int subclass: by value, its own type
    assert _arg_key(a) == _arg_key(a) != _arg_key(b)
    assert _arg_key(s1) != _arg_key(s2)  # a struct with a field called value: by identity, not by the field

"""Brain: goal selection, validation, budgeted planning, execution, cooldowns, events, commands, lifecycle,
fact access and snapshots, on a tiny farm world and on a hand-driven brain."""

from __future__ import annotations

import json

import numpy as np
import pytest

from goap import DomainBuilder
from goap.domain import DomainError
from goap.runtime import EVENTS, Brain, BrainError, SnapshotError
from goap.state import FIELD_NAMES
from goap.world import DONE, FAILED, RUNNING, EngineWorld


def farm_domain():
    return (
        DomainBuilder("farm")
        .bool("hungry", default=True)
        .bool("has_food")
        .enum("at", ["home", "field"])
        .int("coins", 0, 9, default=3)
        .action("go_field", cost=2, pre={"at": "home"}, effects={"at": "field"})
        .action("go_home", cost=2, pre={"at": "field"}, effects={"at": "home"})
        .action("pick", cost=1, pre={"at": "field", "has_food": False}, effects={"has_food": True})
        .action("eat", cost=1, pre={"has_food": True}, effects={"has_food": False, "hungry": False})
        .goal("eat", want={"hungry": False}, priority=5)
        .goal("be_home", want={"at": "home"}, priority=1)
        .build()
    )


class FarmWorld:
    """Every action takes ``duration`` ticks; ``fail`` marks agents whose current action fails this tick.

    A test world: numpy over the CPU device's zero-copy views is fine here.
    """

    name = "farm"
    sensed_facts = ()

    def __init__(self, duration: int = 1):
        self.domain = farm_domain()
        self.duration = duration
        self.fail = None
        self.acted = None

    def reset(self, brain, seed):
        self.fail = np.zeros(brain.n_agents, bool)
        self.acted = np.zeros(brain.n_agents, np.int64)

    def sense(self, brain):
        pass

    def act(self, brain, dt):
        action, ticks, status = brain.action.numpy(), brain.action_ticks.numpy(), brain.action_status.numpy()
        busy = action >= 0
        self.acted += busy
        finished = busy & (ticks >= self.duration - 1)
        status[finished] = DONE
        status[busy & self.fail] = FAILED
        self.fail[:] = False

    def score(self):
        return {"actions": float(self.acted.sum())}

    def get_state(self):
        return {"acted": self.acted.copy(), "fail": self.fail.copy()}

    def set_state(self, arrays):
        for key in ("acted", "fail"):
            if key not in arrays or arrays[key].shape != getattr(self, key).shape:
                raise ValueError(f"field '{key}' is missing or has the wrong shape")
        self.acted[...] = arrays["acted"]
        self.fail[...] = arrays["fail"]


def make(n=20, duration=1, **kw):
    world = FarmWorld(duration)
    kw.setdefault("planner", "reference")
    kw.setdefault("device", "cpu")
    return Brain(world.domain, n, world=world, **kw), world


def h(arr):
    return arr.numpy()


def test_agents_plan_act_and_achieve_goals():
    brain, world = make(30)
    brain.tick()
    assert (h(brain.goal) == brain.domain.goal_index("eat")).all()
    assert brain.agent_plan(0) == ["go_field", "pick", "eat"]
    for _ in range(3):
        brain.tick()
    assert (brain.read_fact("hungry").numpy() == 0).all()
    assert brain.counters["goals_achieved"] >= 30
    for _ in range(3):  # then the next goal: walk home
        brain.tick()
    assert (brain.read_fact("at").numpy() == 0).all()


def test_current_action_is_the_plan_step_after_every_tick():
    brain, _ = make(6, duration=2)
    for _ in range(10):
        brain.tick()
        action, step, length = h(brain.action), h(brain.step), h(brain.plan_length)
        plan = h(brain.plan)
        for i in range(6):
            if action[i] >= 0:
                assert step[i] < length[i] and plan[i, step[i]] == action[i]


def test_fact_changed_mid_plan_replans_next_tick():
    brain, world = make(4, duration=3)
    for _ in range(4):
        brain.tick()  # plan, then go_field (3 ticks): the next step is pick
    assert h(brain.step)[1] == 1 and h(brain.action)[1] == brain.domain.action_index("pick")
    brain.write_fact("at", "home", agents=[1])  # teleported home: pick no longer applies
    before = brain.counters["replan_invalid"]
    brain.tick()
    assert brain.counters["replan_invalid"] == before + 1
    assert brain.agent_plan(1) == ["go_field", "pick", "eat"] and h(brain.step)[1] == 0


def test_failed_action_replans_and_reports_events():
    brain, world = make(5, duration=2)
    brain.tick()
    world.fail[3] = True
    brain.tick()
    assert brain.counters["actions_failed"] == 1
    assert list(brain.events.agents("action_failed")) == [3]
    assert h(brain.action)[3] == -1
    brain.tick()
    assert brain.counters["replan_action_failed"] == 1
    assert list(brain.events.agents("replan")) == [3] and list(brain.events.agents("plan_found")) == [3]
    assert h(brain.step)[3] == 0 and brain.agent_plan(3)[0] == "go_field"


def test_events_agree_with_state_changes():
    brain, _ = make(8, duration=2)
    prev = {k: h(getattr(brain, k)).copy() for k in ("action", "goal", "step")}
    for _ in range(12):
        brain.tick()
        now = {k: h(getattr(brain, k)).copy() for k in ("action", "goal", "step")}
        finished = brain.events.agents("action_finished")
        # an action finished exactly where the step moved on
        np.testing.assert_array_equal(finished, np.flatnonzero(now["step"] > prev["step"]))
        started = brain.events.agents("action_started")
        assert (now["action"][started] >= 0).all()
        assert np.array_equal(h(brain.events.action_started), np.isin(np.arange(8), started))
        for i in brain.events.agents("goal_achieved"):
            state = brain.tables.unpack(h(brain.states)[i])
            assert brain.domain.satisfies(state, brain.domain.goals[prev["goal"][i]].want)
        prev = now


def test_failed_search_puts_goal_on_cooldown_and_reports_it():
    brain, world = make(3, cooldown_ticks=5)
    eat, home = brain.domain.goal_index("eat"), brain.domain.goal_index("be_home")
    enabled = h(brain.enabled)
    enabled[0, :] = False
    enabled[0, brain.domain.action_index("go_home")] = True  # eating is impossible for agent 0
    brain.tick()
    assert brain.counters["plans_failed"] == 1 and h(brain.cooldown_until)[0, eat] == 5
    assert list(brain.events.agents("plan_failed")) == [0] and h(brain.last_failure)[0] == 2  # no_plan
    assert h(brain.goal)[0] == -1 and h(brain.goal)[1] == eat
    for _ in range(4):
        brain.tick()
        assert h(brain.goal)[0] != eat
    brain.tick()  # tick 5: the cooldown is over and the goal is tried (and fails) again
    assert brain.counters["plans_failed"] == 2 and h(brain.cooldown_until)[0, eat] == 10
    assert home != h(brain.goal)[0]


def test_plan_budget_is_respected_and_fair():
    brain, world = make(20, plan_budget=7)
    stats = brain.tick()
    assert stats.events["plans_requested"] == 7
    assert (h(brain.plan_length)[:7] == 3).all() and (h(brain.plan_length)[7:] == 0).all()
    stats = brain.tick()
    assert stats.events["plans_requested"] == 7
    assert (h(brain.plan_length)[7:14] >= 2).all() and (h(brain.plan_length)[14:] == 0).all()
    assert (h(brain.waiting)[14:] == 2).all()


def test_budget_prefers_higher_priority_among_equal_waits():
    brain, world = make(6, plan_budget=2)
    eat = brain.domain.goal_index("eat")
    h(brain.priorities)[:, eat] = [5, 5, 5, 9, 5, 8]
    brain.tick()
    assert sorted(np.flatnonzero(h(brain.plan_length) > 0)) == [3, 5]


# --- hand-driven -------------------------------------------------------------------------------------------------
def test_hand_driven_brain_runs_multi_tick_actions():
    brain = Brain(farm_domain(), 2, planner="reference", device="cpu")
    brain.tick()
    go_field = brain.domain.action_index("go_field")
    assert list(h(brain.action)) == [go_field, go_field]
    status = h(brain.action_status)
    for _ in range(5):  # the game keeps both walking for five ticks
        brain.tick()
        assert list(h(brain.action)) == [go_field, go_field] and list(h(brain.step)) == [0, 0]
    assert list(h(brain.action_ticks)) == [5, 5]
    status[0] = DONE  # agent 0 arrives
    brain.tick()
    assert h(brain.action)[0] == brain.domain.action_index("pick") and h(brain.step)[0] == 1
    assert h(brain.action)[1] == go_field and brain.read_fact("at").numpy()[0] == 1
    assert list(brain.events.agents("action_finished")) == [0]
    assert set(brain.events.agents("action_started")) == {0}


@pytest.mark.parametrize("status, action", [(7, None), (-1, None), (None, 99)])
def test_bad_action_status_or_index_is_an_error_naming_the_agent(status, action):
    brain = Brain(farm_domain(), 4, planner="reference", device="cpu")
    brain.tick()
    if status is not None:
        h(brain.action_status)[2] = status
    if action is not None:
        h(brain.action)[2] = action
    with pytest.raises(BrainError, match="agent 2"):
        brain.tick()


def test_the_input_checks_can_be_turned_off():
    brain = Brain(farm_domain(), 4, planner="reference", device="cpu", check_inputs=False)
    brain.tick()
    h(brain.action_status)[2] = 7
    brain.tick()  # a release build trusts the game


def test_out_of_range_packed_state_is_an_error_naming_the_agent_and_fact():
    brain = Brain(farm_domain(), 4, planner="reference", device="cpu")
    slot = brain.fact_slot("coins")
    h(brain.states)[3, slot.word] |= np.uint64(15 << slot.shift)  # coins = 15 > 9
    with pytest.raises(BrainError, match=r"agent 3.*'coins'"):
        brain.tick()


# --- commands --------------------------------------------------------------------------------------------------
def test_replan_records_the_cause_and_plans_next_tick():
    brain, _ = make(4, duration=3)
    brain.tick()
    brain.replan([1, 2])  # taken by the next tick's decide
    assert list(h(brain.commanded)) == [False, True, True, False]
    assert list(h(brain.replan_cause)[[1, 2]]) == [6, 6]  # commanded
    brain.tick()
    assert brain.counters["plans_requested"] == 6 and not h(brain.needs_plan).any()
    assert brain.counters["replan_commanded"] == 2 and not h(brain.commanded).any()
    with pytest.raises(ValueError, match="unknown replan cause"):
        brain.replan([0], cause="because")


def test_set_goal_pins_and_clear_goal_releases():
    brain, _ = make(3)
    brain.set_goal([0], "be_home")  # be_home holds at the start: nothing to do, the pin waits
    brain.write_fact("at", "field", agents=[0])
    brain.tick()
    assert h(brain.goal)[0] == brain.domain.goal_index("be_home") and h(brain.goal)[1] == 0
    assert brain.agent_plan(0) == ["go_home"]
    brain.tick()  # go_home done: the goal is reached, the pin released
    brain.tick()
    assert h(brain.pinned_goal)[0] == -1 and h(brain.goal)[0] == brain.domain.goal_index("eat")
    brain.set_goal([2], "be_home")
    brain.clear_goal([2])
    assert h(brain.pinned_goal)[2] == -1
    with pytest.raises(ValueError, match="unknown goal"):
        brain.set_goal([0], "fly")


def test_reset_spawn_and_despawn():
    brain, _ = make(6, n_alive=4)
    assert brain.n_alive == 4
    for _ in range(3):
        brain.tick()
    assert (h(brain.goal)[4:] == -1).all() and (h(brain.action)[4:] == -1).all()  # dead rows do nothing
    brain.despawn([1])
    assert not h(brain.alive)[1] and h(brain.goal)[1] == -1 and h(brain.plan_length)[1] == 0
    spawned = brain.spawn(2, states=[{"hungry": False}, {"hungry": True, "at": "field"}])
    assert list(spawned) == [1, 4]
    assert brain.read_fact("hungry", agents=[1, 4]).numpy().tolist() == [0, 1]
    assert brain.read_fact("at", agents=[4]).numpy().tolist() == [1]
    with pytest.raises(ValueError, match="cannot spawn 2 agents: 1 free"):
        brain.spawn(2)
    brain.tick()
    assert h(brain.goal)[4] == brain.domain.goal_index("eat") and brain.agent_plan(4) == ["pick", "eat"]
    h(brain.cooldown_until)[0] = 99
    brain.reset_agents([0])
    assert (h(brain.cooldown_until)[0] == 0).all() and h(brain.goal)[0] == -1
    assert brain.read_fact("coins", agents=[0]).numpy()[0] == 3


# --- fact access -----------------------------------------------------------------------------------------------
def test_read_and_write_fact_round_trip_every_type():
    brain = Brain(farm_domain(), 5, planner="reference", device="cpu")
    brain.write_fact("coins", [0, 9, 4, 7, 1])
    brain.write_fact("at", ["field", "home", "field", "field", "home"])
    brain.write_fact("has_food", True, agents=[2, 3])
    assert brain.read_fact("coins").numpy().tolist() == [0, 9, 4, 7, 1]
    assert brain.read_fact("at").numpy().tolist() == [1, 0, 1, 1, 0]
    assert brain.read_fact("has_food").numpy().tolist() == [0, 0, 1, 1, 0]
    values = brain.tables.unpack_states(h(brain.states))
    assert values[:, brain.domain.fact_index("coins")].tolist() == [0, 9, 4, 7, 1]
    assert values[:, brain.domain.fact_index("hungry")].tolist() == [1] * 5  # untouched
    with pytest.raises(ValueError, match="out of range 0..9"):
        brain.write_fact("coins", 10)
    with pytest.raises((ValueError, DomainError), match="at"):
        brain.write_fact("at", "moon")
    with pytest.raises(ValueError, match="unknown fact"):
        brain.read_fact("gold")


def test_a_game_kernel_using_the_exported_helpers_agrees_with_fact_access():
    import warp as wp

    from goap.kernels.semantics import read_field, write_field

    @wp.kernel(enable_backward=False)
    def earn(states: wp.array2d(dtype=wp.uint64), word: int, shift: int, mask: wp.uint64, hi: wp.uint64):
        i = wp.tid()
        v = read_field(states, i, word, shift, mask)
        if v < hi:
            write_field(states, i, word, shift, mask, v + wp.uint64(1))

    brain = Brain(farm_domain(), 4, planner="reference", device="cpu")
    brain.write_fact("coins", [0, 5, 8, 9])
    s = brain.fact_slot("coins")
    wp.launch(earn, 4, [brain.states, s.word, s.shift, wp.uint64(s.mask), wp.uint64(s.max - s.min)], device="cpu")
    assert brain.read_fact("coins").numpy().tolist() == [1, 6, 9, 9]
    assert brain.read_fact("hungry").numpy().tolist() == [1] * 4


# --- determinism and snapshots ---------------------------------------------------------------------------------
def engine_brain(n=60, seed=4, **kw):
    domain = farm_domain()
    kw.setdefault("planner", "reference")
    return Brain(domain, n, world=EngineWorld(domain, duration=2, drift_p=0.05, fail_p=0.05), device="cpu",
                 seed=seed, plan_budget=25, **kw)


def test_snapshot_restore_at_several_ticks_is_bit_identical(tmp_path):
    straight = engine_brain()
    hashes = {}
    for t in range(1, 19):
        straight.tick()
        hashes[t] = straight.state_hash()
    for at in (0, 5, 11):
        first = engine_brain()
        for _ in range(at):
            first.tick()
        first.snapshot(tmp_path / f"s{at}.npz")
        second = engine_brain()
        second.restore(tmp_path / f"s{at}.npz")
        for t in range(at + 1, 19):
            second.tick()
            assert second.state_hash() == hashes[t], f"restored at {at}, differs at tick {t}"
        assert second.counters == straight.counters


def test_warp_brain_is_deterministic_across_threads_and_agrees_with_reference():
    hashes = set()
    for planner, opts in (("reference", {}), ("warp", {"threads": 1}), ("warp", {"threads": 2, "chunk_size": 7})):
        brain = engine_brain(40, planner=planner, planner_options=opts)
        for _ in range(15):
            brain.tick()
        hashes.add(brain.state_hash())
    assert len(hashes) == 1


def test_restore_refuses_another_domain(tmp_path):
    brain, _ = make(3)
    brain.snapshot(tmp_path / "s.npz")
    other = Brain(DomainBuilder("x").bool("a").action("b", effects={"a": True}).build(), 3, planner="reference")
    with pytest.raises(SnapshotError, match="another domain"):
        other.restore(tmp_path / "s.npz")


def corrupt(src, dst, **changes):
    with np.load(src, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    for key, value in changes.items():
        key = key.replace("__", "/")
        if value is None:
            arrays.pop(key)
        else:
            arrays[key] = value(arrays[key]) if callable(value) else value
    np.savez(dst, **arrays)


def _set(idx, value):
    def f(a):
        a = a.copy()
        a[idx] = value
        return a
    return f


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"brain__goal": _set(0, 999)}, "brain/goal"),
        ({"brain__plan": _set((0, 0), 10**6)}, "brain/plan"),
        ({"brain__action_status": _set(1, 7)}, "brain/action_status"),
        ({"brain__states": _set((0, 0), np.uint64(2**63))}, "brain/states"),
        ({"brain__goal": lambda a: a[:2]}, "brain/goal"),
        ({"brain__plan": lambda a: a.astype(np.int64)}, "brain/plan"),
        ({"brain__tick_count": None}, "brain/tick_count"),
        ({"brain__tick_count": np.array("12")}, "brain/tick_count"),
        ({"brain__counters": np.array("{not json")}, "brain/counters"),
        ({"brain__step": None}, "brain/step"),
        ({"world__acted": None}, "acted"),
    ],
)
def test_restore_is_checked_and_atomic(tmp_path, changes, field):
    brain, world = make(5, duration=2)
    for _ in range(3):
        brain.tick()
    brain.snapshot(tmp_path / "good.npz")
    corrupt(tmp_path / "good.npz", tmp_path / "bad.npz", **changes)
    target, target_world = make(5, duration=2)
    target.tick()
    before = target.state_hash()
    with pytest.raises(SnapshotError, match=field.replace("/", ".")):
        target.restore(tmp_path / "bad.npz")
    assert target.state_hash() == before and target.tick_count == 1


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04garbage", b"not a zip at all"])
def test_restore_of_a_damaged_file_names_it(tmp_path, content):
    path = tmp_path / "broken.npz"
    path.write_bytes(content)
    brain, _ = make(3)
    with pytest.raises(SnapshotError, match="broken.npz"):
        brain.restore(path)
    with pytest.raises(SnapshotError, match="no such snapshot"):
        brain.restore(tmp_path / "missing.npz")


def test_snapshot_holds_every_field():
    brain, _ = make(3)
    state = brain.get_state()
    assert {f"brain/{name}" for name in FIELD_NAMES} <= set(state)
    assert json.loads(str(state["brain/counters"])) == {}


# --- arrays and bookkeeping ------------------------------------------------------------------------------------
def test_arrays_are_warp_arrays_on_the_brain_device_with_zero_copy_views():
    import warp as wp

    brain, _ = make(4)
    for name in FIELD_NAMES:
        arr = getattr(brain, name)
        assert isinstance(arr, wp.array) and arr.device == brain.device and arr.shape[0] == 4
    view = brain.goal.numpy()
    view[2] = 1
    assert brain.goal.numpy()[2] == 1  # the same memory
    with pytest.raises(AttributeError, match="allocated once"):
        brain.goal = np.zeros(4)


def test_timing_statistics_stay_bounded():
    brain = engine_brain(10)
    brain.tick()
    size = sum(s.nbytes() for s in brain.stage_stats.values()) + brain.idle_series.nbytes()
    for _ in range(1500):
        brain.tick()
    assert sum(s.nbytes() for s in brain.stage_stats.values()) + brain.idle_series.nbytes() == size
    summary = brain.summary(warmup=10)
    assert summary["ticks"] == 1501 and 0 <= summary["idle_fraction"] <= 1
    assert summary["stages"]["plan"]["p95"] >= 0


def test_running_series_mean_and_p95_after_warmup():
    from goap.metrics import RunningSeries

    rng = np.random.default_rng(0)
    values = rng.lognormal(0, 1, 50_000)
    s = RunningSeries(keep=1024)
    for v in values:
        s.add(float(v))
    got = s.summary(warmup=300)
    assert got["mean"] == pytest.approx(values[300:].mean(), rel=1e-9)
    assert got["p95"] == pytest.approx(np.percentile(values[300:], 95), rel=0.01)
    with pytest.raises(ValueError, match="longer than"):
        s.summary(warmup=5000)


def test_idle_fraction_and_action_counts():
    brain, _ = make(10)
    for _ in range(8):
        brain.tick()
    s = brain.summary()
    assert sum(s["action_counts"].values()) == s["counters"]["actions_done"]
    assert s["action_counts"]["eat"] == 10 and s["action_counts"]["go_home"] == 10
    assert 0 < s["idle_fraction"] < 1  # planning ticks and the end are idle


def test_event_names_are_listed():
    brain, _ = make(2)
    brain.tick()
    with pytest.raises(AttributeError, match="events are"):
        _ = brain.events.teleported
    assert set(EVENTS) >= {"action_started", "action_finished", "action_failed", "goal_achieved", "plan_found",
                           "plan_failed"}


@pytest.mark.parametrize("kwargs", [{"n_agents": -1}, {"plan_budget": 0}, {"cooldown_ticks": -2}, {"n_alive": 9}])
def test_bad_arguments(kwargs):
    args = {"n_agents": 2, **kwargs}
    with pytest.raises(ValueError):
        Brain(farm_domain(), args.pop("n_agents"), planner="reference", **args)


def test_running_status_constant_is_zero():
    assert (RUNNING, DONE, FAILED) == (0, 1, 2)


def test_stages_in_cpu_chunks_match_one_chunk():
    """Above 2,048 agents per thread the CPU stages run in chunks on several threads: the same run, bit for bit."""
    hashes, counters = [], []
    for threads in (2, 1):  # 2: every per-agent stage in two spans on two threads; 1: one launch
        brain = engine_brain(9000, planner="warp", cpu_threads=threads)
        assert brain.launcher.chunks(9000) == threads
        for _ in range(6):
            brain.tick()
        hashes.append(brain.state_hash())
        counters.append(dict(brain.counters))
    assert hashes[0] == hashes[1] and counters[0] == counters[1]


def test_torch_views_share_memory_with_the_brain():
    torch = pytest.importorskip("torch")
    import warp as wp

    brain, _ = make(4)
    goal = wp.to_torch(brain.goal)
    goal[1] = 1
    assert brain.goal.numpy()[1] == 1
    states = wp.to_torch(brain.states.view(wp.int64)) if hasattr(brain.states, "view") else None
    if states is not None:
        assert states.dtype == torch.int64 and tuple(states.shape) == tuple(brain.states.shape)


def test_dedupe_and_plan_cache_change_nothing_but_the_work():
    hashes, stats = [], []
    for opts in ({"dedupe": False}, {"dedupe": True}, {"dedupe": True, "plan_cache": 256}):
        brain = engine_brain(300, planner="warp", **opts)
        for _ in range(12):
            brain.tick()
        hashes.append(brain.state_hash())
        stats.append(brain.summary()["planner"])
    assert hashes[0] == hashes[1] == hashes[2]
    assert stats[0] == {}
    assert stats[1]["requests"] > stats[1]["distinct"] > 0  # everyone starts alike: few distinct queries
    assert stats[2]["hits"] > 0 and stats[2]["searched"] < stats[1]["searched"]


def test_auto_dedupe_pauses_when_no_query_repeats():
    from goap.planners.dedupe import COUNTERS

    brain = engine_brain(200, planner="warp")
    assert brain._dedupe_auto
    rng = np.random.default_rng(0)
    h(brain.costs)[:] = rng.uniform(1, 2, h(brain.costs).shape)  # every agent's query is its own
    brain.tick()
    requests = int(brain.planner.counters.numpy()[COUNTERS.index("requests")])
    assert requests > 0 and not brain._dedupe_on
    for _ in range(10):
        brain.tick()
    assert int(brain.planner.counters.numpy()[COUNTERS.index("requests")]) == requests  # planned directly
    alike = engine_brain(200, planner="warp")
    alike.tick()
    assert alike._dedupe_on  # everyone starts alike: grouping pays


@pytest.mark.parametrize("planner", ["reference", "warp"])
def test_plans_longer_than_the_buffer_arrive_in_segments(planner):
    b = DomainBuilder("chain").int("n", 0, 7)
    for k in range(7):
        b.action(f"step{k}", pre={"n": k}, effects={"n": k + 1})
    domain = b.goal("top", want={"n": 7}).build()
    brain = Brain(domain, 3, planner=planner, device="cpu", max_plan_length=3)
    done = []
    for _ in range(12):
        brain.tick()
        done.append(brain.read_fact("n").numpy().tolist())
        h(brain.action_status)[h(brain.action) >= 0] = DONE
    assert done[-1] == [7, 7, 7]
    assert brain.counters["plans_segmented"] >= 3 and brain.counters.get("plans_failed", 0) == 0
    assert brain.counters["goals_achieved"] == 3


def test_a_search_that_outgrows_its_pool_continues_over_ticks_without_cooldown():
    b = DomainBuilder("lock")
    for k in range(4):
        b.int(f"d{k}", 0, 5)
        b.action(f"up{k}", pre={f"d{k}": "< 5"}, effects={f"d{k}": "+= 1"})
        b.action(f"down{k}", pre={f"d{k}": "> 0"}, effects={f"d{k}": "-= 1"})
    domain = b.goal("open", want={"d0": 5, "d1": 4, "d2": 5, "d3": 3}).build()
    brain = Brain(domain, 2, device="cpu", max_nodes=16, search_nodes_per_tick=1,
                  planner_options={"heuristic": "hmax_depth1", "node_ceiling": 16 * 8**3})
    assert brain._n_levels >= 3
    for _ in range(8):
        brain.tick()
        if brain.counters["plans_made"] == 2:
            break
    assert brain.counters["plans_deferred"] >= 2 and brain.counters.get("plans_failed", 0) == 0
    assert brain.counters["plans_made"] == 2 and (h(brain.cooldown_until) == 0).all()
    assert len(brain.agent_plan(0)) == 17  # 5 + 4 + 5 + 3 steps up, optimal

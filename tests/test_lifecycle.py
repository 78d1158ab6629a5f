"""The embedding API a game programmer relies on: the action lifecycle (non-interruptible actions, the interrupted
event), commanded replans, pinned goals, spawn and reset forms, events as device lists, commands on device index
lists, sensors with a cadence, and what crosses to the host."""

from __future__ import annotations

import importlib.util
import re
import textwrap

import numpy as np
import pytest
import warp as wp

from goap.codes import EVENT_COUNTERS, EVENTS, event_bit
from goap.domain import DomainBuilder
from goap.kernels import semantics
from goap.runtime import Brain, BrainError
from goap.world import EngineWorld


def guard_domain():
    """A guard who walks between post and mess: cooking cannot be cut off once started."""
    return (DomainBuilder("guard")
            .enum("at", ["post", "field", "mess"], default="field")
            .int("hunger", 0, 4)
            .bool("has_food")
            .action("walk_post", cost=1, pre={"at": "!= post"}, effects={"at": "post"})
            .action("walk_mess", cost=1, pre={"at": "!= mess"}, effects={"at": "mess"})
            .action("cook", cost=1, pre={"at": "mess", "has_food": False}, effects={"has_food": True},
                    interruptible=False)
            .action("eat", cost=1, pre={"has_food": True}, effects={"hunger": 0, "has_food": False})
            .goal("guard", want={"at": "post"}, priority=5)
            .goal("fed", want={"hunger": 0}, priority=12)
            .build())


def h(arr):
    return arr.numpy()


def action(brain, name):
    return brain.domain.action_index(name)


def goal(brain, name):
    return brain.domain.goal_index(name)


def guard_brain(n=4, **kw):
    return Brain(guard_domain(), n, planner="reference", device="cpu", **kw)


# --- frictions ---------------------------------------------------------------------------------------------------
def test_a_pinned_goal_that_holds_is_released_and_the_agent_selects_by_priority():
    brain = guard_brain(16)
    brain.write_fact("at", "post", agents=[12])
    brain.write_fact("hunger", 4, agents=[12])
    brain.set_goal([12], "guard")  # already holds
    brain.tick()
    assert h(brain.pinned_goal)[12] == -1
    assert h(brain.goal)[12] == goal(brain, "fed")
    assert brain.agent_plan(12) == ["walk_mess", "cook", "eat"]


def test_commanded_replans_are_counted_and_have_the_replan_event():
    brain = guard_brain(100)
    brain.write_fact("hunger", 3)
    brain.tick()  # every agent plans for fed and starts walking
    brain.tick()
    acting = np.flatnonzero(h(brain.action) >= 0)[:80]
    assert len(acting) == 80
    before = brain.counters["replan_commanded"]
    brain.replan(acting)
    brain.tick()
    assert brain.counters["replan_commanded"] - before == 80
    assert brain.events.count("replan") == 80
    assert list(brain.events.agents("replan")) == list(acting)


def test_read_field_example_in_the_docs_stays_in_range(tmp_path):
    """The docstring's kernel, run as written, on an int fact whose range (0..4) is not 2^k - 1."""
    doc = semantics.__doc__
    block = textwrap.dedent(doc[doc.index("::") + 2:])
    kernel_src, launch_src = block.split("\nslot = ", 1)
    path = tmp_path / "doc_example.py"
    path.write_text("import warp as wp\nfrom goap.kernels.semantics import read_field, write_field\n" + kernel_src)
    spec = importlib.util.spec_from_file_location("doc_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    brain = guard_brain(3)
    for _ in range(6):  # 6 increments of a fact that tops out at 4
        exec("slot = " + launch_src, {"wp": wp, "brain": brain, "starve": module.starve})
        brain.tick()  # the input check refuses a value above the range
    assert list(h(brain.read_fact("hunger"))) == [4, 4, 4]


def test_spawn_and_reset_take_one_dict_a_list_of_dicts_or_packed_rows():
    brain = guard_brain(8, n_alive=2)
    got = brain.spawn(2, states={"hunger": 3})
    assert list(got) == [2, 3]
    assert list(h(brain.read_fact("hunger", got))) == [3, 3]
    got = brain.spawn(2, states=[{"hunger": 1}, {"hunger": 2, "at": "mess"}])
    assert list(h(brain.read_fact("hunger", got))) == [1, 2]
    assert list(h(brain.read_fact("at", got))) == [1, 2]
    row = brain.tables.pack(brain.domain.state({"hunger": 4}))
    got = brain.spawn(1, states=row[None])
    assert h(brain.read_fact("hunger", got))[0] == 4
    brain.reset_agents([0, 1], states={"has_food": True})
    assert list(h(brain.read_fact("has_food", [0, 1]))) == [1, 1]
    with pytest.raises(ValueError, match="unknown fact 'thirst'"):
        brain.reset_agents([0], states={"thirst": 1})
    with pytest.raises(ValueError, match="out of range"):
        brain.reset_agents([0], states={"hunger": 9})
    with pytest.raises(ValueError, match="states must be None, a dict"):
        brain.reset_agents([0], states="hunger")
    with pytest.raises(ValueError, match="3 state dicts given for 2 agents"):
        brain.reset_agents([0, 1], states=[{}, {}, {}])


def test_spawn_and_reset_keep_the_costs_and_enabled_rows_a_game_wrote():
    brain = guard_brain(4, n_alive=2)
    costs, enabled = h(brain.costs).copy(), h(brain.enabled).copy()
    costs[:, action(brain, "cook")] = 7.5
    enabled[:, action(brain, "eat")] = False
    brain.assign("costs", costs)
    brain.assign("enabled", enabled)
    brain.reset_agents([0])
    brain.spawn(1)
    for i in (0, 2):
        assert h(brain.costs)[i, action(brain, "cook")] == 7.5
        assert not h(brain.enabled)[i, action(brain, "eat")]
    brain.reset_agents([0], costs="domain", enabled=True)
    assert h(brain.costs)[0, action(brain, "cook")] == 1.0 and h(brain.enabled)[0].all()
    assert h(brain.costs)[2, action(brain, "cook")] == 7.5


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_costs_are_checked_in_a_warp_brain(bad):
    brain = Brain(guard_domain(), 4, planner="warp", device="cpu")
    brain.write_fact("hunger", 2)
    costs = h(brain.costs).copy()
    costs[2, action(brain, "cook")] = bad
    brain.assign("costs", costs)
    with pytest.raises(BrainError, match=r"agent 2: action 'cook' has cost"):
        brain.tick()


def test_a_failed_search_keeps_the_goal_it_failed():
    brain = guard_brain(3)
    brain.write_fact("hunger", 2, agents=[1])
    enabled = h(brain.enabled).copy()
    enabled[1, action(brain, "cook")] = False  # the only way to food
    brain.assign("enabled", enabled)
    brain.tick()
    assert h(brain.goal)[1] == -1 and h(brain.failed_goal)[1] == goal(brain, "fed")
    assert list(h(brain.failed_goal)[[0, 2]]) == [-1, -1]


def test_set_goal_with_swapped_arguments_says_so():
    brain = guard_brain(12)
    with pytest.raises(ValueError, match=r"takes the agents first"):
        brain.set_goal("guard", [10])


def test_summary_has_the_world_score_and_restore_without_the_world_is_refused(tmp_path):
    domain = guard_domain()

    class Scored(EngineWorld):
        def score(self):
            return {"guards_fed": 3.0}

    brain = Brain(domain, 4, Scored(domain), planner="reference", device="cpu")
    brain.tick()
    assert brain.summary()["world_score"] == {"guards_fed": 3.0}
    path = tmp_path / "s.npz"
    brain.snapshot(path)
    bare = Brain(domain, 4, planner="reference", device="cpu")
    before = bare.state_hash()
    with pytest.raises(Exception, match="world"):
        bare.restore(path)
    assert bare.state_hash() == before


def test_set_action_status_reports_actions_on_every_device():
    brain = guard_brain(2)
    brain.write_fact("hunger", 2)
    brain.tick()  # walk_mess starts
    brain.set_action_status([0], "done")
    brain.tick()
    assert brain.counters["actions_done"] == 1
    assert h(brain.action)[0] == action(brain, "cook") and h(brain.action)[1] == action(brain, "walk_mess")
    with pytest.raises(ValueError, match="unknown action status"):
        brain.set_action_status([0], "finished")


# --- the action lifecycle ----------------------------------------------------------------------------------------
def run_until_cooking(brain, i=0):
    """Hungry agent i walks to the mess (done at once) and starts cooking; returns after cook ran one tick."""
    brain.write_fact("hunger", 3, agents=[i])
    brain.tick()  # plan [walk_mess, cook, eat]; walk_mess starts
    brain.set_action_status([i], "done")
    brain.tick()  # walk_mess done; cook starts
    assert h(brain.action)[i] == action(brain, "cook")
    brain.tick()  # cook runs (RUNNING): under way


def test_an_interruptible_action_under_way_is_interrupted_by_a_goal_change_and_named():
    brain = guard_brain(2)
    brain.write_fact("hunger", 3, agents=[0])
    brain.tick()
    brain.tick()  # walk_mess running a tick
    brain.set_goal([0], "guard")
    brain.tick()
    assert list(brain.events.agents("action_interrupted")) == [0]
    assert h(brain.interrupted_action)[0] == action(brain, "walk_mess")
    assert brain.counters["actions_interrupted"] == 1
    assert h(brain.goal)[0] == goal(brain, "guard")
    brain.tick()
    assert h(brain.interrupted_action)[0] == -1 and brain.events.count("action_interrupted") == 0


def test_a_non_interruptible_action_finishes_before_a_new_goal_takes_over():
    brain = guard_brain(2)
    run_until_cooking(brain)
    brain.set_goal([0], "guard")
    for _ in range(3):
        brain.tick()
        assert h(brain.goal)[0] == goal(brain, "fed") and h(brain.action)[0] == action(brain, "cook")
        assert brain.events.count("action_interrupted") == 0
    brain.set_action_status([0], "done")
    brain.tick()  # cook done at the start of the tick; then the pin takes over
    assert h(brain.goal)[0] == goal(brain, "guard")
    assert brain.counters["actions_interrupted"] == 0
    assert h(brain.read_fact("has_food", [0]))[0] == 1


def test_a_non_interruptible_action_finishes_before_a_commanded_replan():
    brain = guard_brain(2)
    run_until_cooking(brain)
    brain.replan([0])
    brain.tick()
    assert h(brain.action)[0] == action(brain, "cook") and brain.counters["replan_commanded"] == 0
    brain.set_action_status([0], "done")
    brain.tick()
    assert brain.counters["replan_commanded"] == 1
    assert brain.events.count("action_interrupted") == 0
    assert brain.agent_plan(0) == ["eat"]


def test_the_world_can_fail_a_non_interruptible_action():
    brain = guard_brain(2)
    run_until_cooking(brain)
    brain.set_action_status([0], "failed")
    brain.tick()
    assert brain.counters["replan_action_failed"] == 1 and brain.counters["actions_failed"] == 1
    assert brain.events.count("action_interrupted") == 0


def test_an_interrupted_action_by_a_commanded_replan():
    brain = guard_brain(2)
    brain.write_fact("hunger", 3)
    brain.tick()
    brain.tick()
    brain.replan(wp.array([1], dtype=wp.int32, device=brain.device))  # a device list: no host trip
    brain.tick()
    assert list(brain.events.agents("action_interrupted")) == [1]
    assert h(brain.interrupted_action)[1] == action(brain, "walk_mess")


def test_interruptible_is_read_from_the_domain_file():
    from goap.domain import domain_from_spec
    from goap.domain_file import domain_to_spec

    d = guard_domain()
    spec = domain_to_spec(d)
    assert spec["actions"]["cook"]["interruptible"] is False and "interruptible" not in spec["actions"]["eat"]
    assert domain_from_spec(spec).actions[action_index(d, "cook")].interruptible is False
    spec["actions"]["eat"]["interruptible"] = "no"
    with pytest.raises(ValueError, match="'interruptible' must be true or false"):
        domain_from_spec(spec)


def action_index(d, name):
    return d.action_index(name)


# --- events -----------------------------------------------------------------------------------------------------
def test_event_lists_counts_and_masks_agree_with_the_bits():
    domain = guard_domain()
    world = EngineWorld(domain, duration=2, drift_p=0.05, fail_p=0.2)
    brain = Brain(domain, 300, world, planner="reference", device="cpu", seed=3)
    seen = {name: 0 for name in EVENTS}
    calls = []
    brain.on("action_failed", lambda b, ids: calls.append((b.tick_count, ids.numpy().copy())))
    for _ in range(25):
        brain.tick()
        bits = h(brain.events.bits)
        for name in EVENTS:
            want = np.flatnonzero(bits & np.uint32(event_bit(name)))
            assert brain.events.count(name) == len(want), name
            assert list(brain.events.agents(name)) == list(want), name
            assert list(h(brain.events.mask(name))) == list((bits & np.uint32(event_bit(name))) != 0), name
            lst = brain.events.list(name)
            assert h(lst.count)[0] == len(want) and list(h(lst.ids)[: len(want)]) == list(want)
            seen[name] += len(want)
    for name in ("action_started", "action_finished", "action_failed", "goal_achieved", "plan_found", "replan",
                 "goal_changed"):
        assert seen[name] > 0, name
    assert calls and all(len(ids) for _, ids in calls)
    assert sum(len(ids) for _, ids in calls) == seen["action_failed"]
    assert set(EVENT_COUNTERS) == set(EVENTS)


def test_events_and_commands_add_no_host_traffic_that_grows_with_the_agents():
    def run(n):
        domain = guard_domain()
        brain = Brain(domain, n, EngineWorld(domain, duration=2, drift_p=0.05), planner="reference",
                      device="cpu", check_inputs=False)
        some = wp.array(np.arange(0, n, 7, dtype=np.int32), dtype=wp.int32, device=brain.device)
        out = wp.zeros(n, dtype=wp.int64, device=brain.device)
        sizes = []
        for _ in range(6):
            brain.tick()
            brain.events.count("goal_achieved")
            brain.events.indices("replan")
            brain.events.mask("plan_found")
            brain.replan(some)
            brain.set_goal(some, "guard")
            brain.clear_goal(some)
            brain.read_fact("hunger", out=out)
            brain.write_fact("hunger", 1, agents=some)
            sizes.append(brain.host_bytes_per_tick)
        return sizes

    small, large = run(200), run(2000)
    assert small[1:] == large[1:]
    assert max(large) < 1024


def test_n_alive_and_spawn_read_a_few_bytes():
    brain = guard_brain(1000, n_alive=10)
    brain.tick()
    base = brain.host_bytes_per_tick
    assert brain.n_alive == 10
    brain.spawn(5)
    brain.tick()
    assert brain.host_bytes_per_tick - base == 4 + 4 + 4 * 5


# --- sensors ------------------------------------------------------------------------------------------------------
@wp.kernel
def stamp(clock: wp.array(dtype=wp.int64), rows: wp.array(dtype=wp.int32), last: wp.array(dtype=wp.int64),
          times: wp.array(dtype=wp.int32)):
    i = rows[wp.tid()]
    if i < 0:
        return
    last[i] = clock[0]
    times[i] = times[i] + 1


def test_a_sensor_with_a_cadence_runs_each_agent_on_its_own_ticks():
    n, every = 50, 4
    brain = guard_brain(n)
    last = wp.full(n, -1, dtype=wp.int64, device=brain.device)
    times = wp.zeros(n, dtype=wp.int32, device=brain.device)
    brain.add_sensor(lambda b, rows: b.launcher.launch(stamp, rows.shape[0], [b.clock, rows, last, times]),
                     every=every, facts=("hunger",), name="stamp")
    assert brain.sensed_facts == ("hunger",)
    history = []
    for _ in range(12):
        brain.tick()
        history.append(h(last).copy())
    assert (h(times) == 3).all()
    for t, snap in enumerate(history):  # tick t senses exactly the agents with i % every == t % every
        sensed = np.flatnonzero(snap == t)
        assert list(sensed) == [i for i in range(n) if i % every == t % every]
    with pytest.raises(ValueError, match="cadence"):
        brain.add_sensor(lambda b, rows: None, every=0)
    with pytest.raises(ValueError, match="unknown fact 'thirst'"):
        brain.add_sensor(lambda b, rows: None, facts=("thirst",))


def test_sensor_cadence_is_deterministic_and_captured_bit_for_bit():
    def run(capture):
        domain = guard_domain()
        brain = Brain(domain, 64, EngineWorld(domain, duration=2, drift_p=0.02), planner="warp", device="cpu",
                      capture=capture, seed=5)
        times = wp.zeros(64, dtype=wp.int32, device=brain.device)
        last = wp.full(64, -1, dtype=wp.int64, device=brain.device)
        slot = brain.fact_slot("hunger")

        def hunger_sensor(b, rows):
            b.launcher.launch(stamp, rows.shape[0], [b.clock, rows, last, times])
            b.launcher.launch(grow_hunger, rows.shape[0], [b.agents.states, rows, slot.word, slot.shift,
                                                            wp.uint64(slot.mask), wp.uint64(slot.top)])

        brain.add_sensor(hunger_sensor, every=3, facts=("hunger",))
        for _ in range(15):
            brain.tick()
        return brain.state_hash(), h(times).copy()

    plain, captured = run(False), run(True)
    assert plain[0] == captured[0] and (plain[1] == captured[1]).all()
    assert run(False)[0] == plain[0]


@wp.kernel
def grow_hunger(states: wp.array2d(dtype=wp.uint64), rows: wp.array(dtype=wp.int32), word: int, shift: int,
                mask: wp.uint64, top: wp.uint64):
    i = rows[wp.tid()]
    if i < 0:
        return
    v = semantics.read_field(states, i, word, shift, mask)
    if v < top:
        semantics.write_field(states, i, word, shift, mask, v + wp.uint64(1))


def test_docs_of_events_name_the_cost_of_each_call():
    from goap.runtime.inspection import Events

    for call in ("count(name)", "mask(name)", "list(name)", "indices(name)", "agents(name)"):
        assert re.search(re.escape(call), Events.__doc__), call


def test_a_world_event_that_breaks_the_preconditions_interrupts_only_an_interruptible_action():
    brain = guard_brain(2)
    brain.write_fact("hunger", 3)
    brain.tick()
    brain.tick()  # both walk to the mess (interruptible)
    brain.write_fact("at", "mess", agents=[0])  # the world moves agent 0: walk_mess no longer applies
    brain.tick()
    assert list(brain.events.agents("action_interrupted")) == [0]
    assert brain.counters["replan_invalid"] == 1
    run_until_cooking(brain, 1)
    brain.write_fact("at", "post", agents=[1])  # cook's precondition breaks, but cook runs to its end
    brain.tick()
    assert h(brain.action)[1] == action(brain, "cook") and brain.events.count("action_interrupted") == 0


# --- agent types in a brain ----------------------------------------------------------------------------------------
def camp():
    from pathlib import Path

    from goap.domain_file import load_domain

    return load_domain(Path(__file__).resolve().parents[1] / "examples" / "camp.toml")


def test_spawn_with_a_type_writes_its_facts_and_priorities_and_the_planner_keeps_to_its_actions():
    d = camp()
    brain = Brain(d, 40, planner="warp", device="cpu", n_alive=0)
    guards = brain.spawn(20, agent_type="guard")
    medics = brain.spawn(20, agent_type="medic", states={"hunger": 3})
    assert (h(brain.agent_type)[guards] == d.type_index("guard")).all()
    assert (h(brain.agent_type)[medics] == d.type_index("medic")).all()
    assert (h(brain.read_fact("at", medics)) == d.fact("at").labels.index("infirmary")).all()
    assert (h(brain.read_fact("hunger", medics)) == 3).all()
    heal = d.goal_index("heal")
    assert (h(brain.priorities)[medics, heal] == 12).all() and (h(brain.priorities)[guards, heal] <= 0).all()
    brain.write_fact("wounded_near", True)  # everyone hears of a wounded soldier
    brain.write_fact("fatigue", 4, agents=guards[:5])
    for _ in range(3):
        brain.tick()
    medic_actions = {d.actions[a].name for i in medics for a in h(brain.plan)[i][: h(brain.plan_length)[i]]}
    guard_actions = {d.actions[a].name for i in guards for a in h(brain.plan)[i][: h(brain.plan_length)[i]]}
    assert {"take_kit", "heal"} <= medic_actions
    assert not guard_actions & {"take_kit", "heal"}  # not a guard's actions
    assert (h(brain.goal)[guards] != heal).all()  # nor its goal, whatever its priority row says


def test_set_type_changes_priorities_and_replans_and_types_survive_a_snapshot(tmp_path):
    d = camp()
    brain = Brain(d, 6, planner="reference", device="cpu")
    brain.write_fact("wounded_near", True)
    brain.tick()
    assert (h(brain.goal) != d.goal_index("heal")).all()  # type 0 (guard) never selects heal
    brain.set_type([1, 2], "medic")
    brain.tick()
    assert list(h(brain.goal)[[1, 2]]) == [d.goal_index("heal")] * 2
    path = tmp_path / "camp.npz"
    brain.snapshot(path)
    again = Brain(d, 6, planner="reference", device="cpu")
    again.restore(path)
    assert again.state_hash() == brain.state_hash() and list(h(again.agent_type)) == [0, 1, 1, 0, 0, 0]
    for b in (brain, again):
        b.tick()
    assert again.state_hash() == brain.state_hash()
    with pytest.raises(ValueError, match="unknown agent type 'cook'"):
        brain.set_type([0], "cook")


def test_an_agent_type_out_of_range_is_an_input_error():
    d = camp()
    brain = Brain(d, 4, planner="reference", device="cpu")
    types = h(brain.agent_type).copy()
    types[3] = 7
    brain.assign("agent_type", types)
    with pytest.raises(BrainError, match=r"agent 3: agent_type 7 is out of range 0\.\.1"):
        brain.tick()


def test_compact_turns_a_device_mask_into_a_list_every_command_takes():
    brain = guard_brain(50)
    mask = wp.array(np.arange(50) % 7 == 3, dtype=wp.bool, device=brain.device)
    ids, count = brain.compact(mask, "near")
    want = [i for i in range(50) if i % 7 == 3]
    assert h(count)[0] == len(want) and list(h(ids)[: len(want)]) == want and (h(ids)[len(want):] == -1).all()
    brain.write_fact("hunger", 2, agents=ids)  # the whole padded list: -1 entries are skipped
    assert list(np.flatnonzero(h(brain.read_fact("hunger")))) == want
    with pytest.raises(ValueError, match="bool Warp array of 50"):
        brain.compact(np.ones(50, bool))


def test_the_inspector_and_explain_name_the_agent_type():
    from goap.explain import explain_agent
    from viewer.inspector import inspector_lines

    d = camp()
    brain = Brain(d, 4, planner="reference", device="cpu")
    brain.set_type([2], "medic")
    brain.write_fact("wounded_near", True)
    brain.tick()
    lines = [text for text, _ in inspector_lines(brain, None, 2)]
    assert any("type medic" in text for text in lines)
    assert any("type guard" in text for text, _ in inspector_lines(brain, None, 0))
    guard = explain_agent(brain, 0)
    assert guard.agent_type == "guard" and guard.has("not_allowed", "heal")
    medic = explain_agent(brain, 2)
    assert medic.agent_type == "medic" and not medic.has("not_allowed", "heal") and medic.goal == "heal"


def test_the_act_stage_applies_conditional_effects_as_the_domain_does():
    """DONE actions with conditional effects, judged on the state before the action: the brain's packed states
    after a tick equal `Domain.apply` on the states before it, for every agent."""
    from tests.test_pddl_adl import when_task

    domain, start_values, _goals = when_task(5, n_problems=40)[:3]
    assert any(a.when for a in domain.actions)
    n = len(start_values)
    brain = Brain(domain, n, planner="reference", device="cpu")
    tables = brain.tables
    brain.assign("states", tables.pack_states(np.asarray(start_values)))
    # every agent runs one action applicable in its state (set by hand: a game without a world)
    acts = []
    for v in start_values:
        s = tuple(int(x) for x in v)
        acts.append(next((k for k, a in enumerate(domain.actions) if domain.is_applicable(s, a)), -1))
    rows = [i for i, a in enumerate(acts) if a >= 0]
    assert len(rows) > n // 2
    plan = np.full(tuple(brain.plan.shape), -1, np.int32)
    plan[rows, 0] = [acts[i] for i in rows]
    for name, values in (("plan", plan), ("plan_length", np.where(np.array(acts) >= 0, 1, 0).astype(np.int32)),
                         ("action", np.array(acts, np.int32)), ("goal", np.where(np.array(acts) >= 0, 0, -1)
                                                                       .astype(np.int32))):
        brain.assign(name, values)
    brain.set_action_status(rows, "done")
    before = tables.unpack_states(brain.states.numpy().copy())
    brain.launcher.launch(brain._kernels.finish_actions, n, [brain.agents, brain._tables_d, 1, brain._action_counts,
                                                            brain._counters, 0, 0], record=False)
    after = tables.unpack_states(brain.states.numpy())
    fired = 0
    for i in rows:
        s = tuple(int(x) for x in before[i])
        want = domain.apply(s, domain.actions[acts[i]])
        assert tuple(int(x) for x in after[i]) == want, i
        plain = s
        for e in domain.actions[acts[i]].effects:
            plain = tuple(e.apply(plain[domain.fact_index(e.fact)], domain.fact(e.fact)) if j == domain.fact_index(
                e.fact) else x for j, x in enumerate(plain))
        fired += want != plain
    assert fired > 0  # some conditional effect changed the outcome


def test_planners_agree_with_conditional_effects_cost_terms_and_types_together():
    from goap.domain import domain_from_spec
    from goap.domain_file import domain_to_spec
    from goap.planners import make_planner
    from goap.planners.reference import ReferencePlanner
    from tests.test_pddl_adl import when_task

    solved = 0
    for seed in (11, 12, 13, 14):
        domain, values, goals = when_task(seed, n_problems=40)[:3]
        spec = domain_to_spec(domain)
        ints = [f.name for f in domain.facts if f.kind == "int"] or [domain.facts[0].name]
        names = list(spec["actions"])
        for k, (_name, a) in enumerate(spec["actions"].items()):
            if k % 2 == 0:
                a["cost"] = {"base": a["cost"], "per": {ints[0]: 0.5}}
        spec["types"] = {"one": {}, "two": {"actions": names[1:], "cost": {names[-1]: 2.0}}}
        d = domain_from_spec(spec)
        ref = ReferencePlanner(d, max_nodes=64, node_ceiling=512)
        fast = make_planner("warp", ref.tables, max_nodes=64, node_ceiling=512, device="cpu")
        states = ref.tables.pack_states(np.asarray(values))
        types = (np.arange(len(values)) % 2).astype(np.int32)
        r = ref.plan(states, np.asarray(goals, np.int32), types=types)
        f = fast.plan(states, np.asarray(goals, np.int32), types=types).numpy()
        assert (r.status == f.status).all(), seed
        assert np.array_equal(r.cost, f.cost, equal_nan=True) and (r.expanded == f.expanded).all(), seed
        solved += int((r.status == 0).sum())
    assert solved > 20


def test_reset_and_spawn_clear_the_worlds_failure_reason():
    brain = guard_brain(4)
    reasons = np.array([0, 3, 2, 0], np.int32)
    brain.assign("fail_reason", reasons)
    brain.reset_agents([1])
    brain.despawn([2])
    assert list(h(brain.fail_reason)) == [0, 0, 0, 0]

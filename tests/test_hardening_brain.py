"""The brain's inputs, hardened: restores check every value (not only shapes), world kernels never index memory
from an unchecked float, both planners refuse the same costs, snapshot members are sized before they are read, and
the Brain's commands refuse what they cannot honour."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("warp")

from goap.runtime import Brain, BrainError, SnapshotError  # noqa: E402
from tests.test_runtime import make  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _load(path):
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def _farm_snapshot(tmp_path):
    brain, _ = make(5, duration=3)
    for _ in range(4):
        brain.tick()
    path = tmp_path / "good.npz"
    brain.snapshot(path)
    return _load(path)


def _restore_refuses(tmp_path, arrays, field, target=None):
    bad = tmp_path / "bad.npz"
    np.savez(bad, **arrays)
    if target is None:
        target, _ = make(5, duration=3)
        target.tick()
    before, ticks = target.state_hash(), target.tick_count
    with pytest.raises(SnapshotError, match=field):
        target.restore(bad)
    assert target.state_hash() == before and target.tick_count == ticks


def _with(arrays, key, index, value):
    out = dict(arrays)
    out[key] = arrays[key].copy()
    out[key][index] = value
    return out


# --- defect 1: every value of the brain's arrays ------------------------------------------------------------------
@pytest.mark.parametrize("value", [np.nan, -5.0, np.inf, 1e13])
def test_restore_refuses_a_cost_the_planners_refuse(tmp_path, value):
    arrays = _farm_snapshot(tmp_path)
    _restore_refuses(tmp_path, _with(arrays, "brain/costs", (1, 2), value), "brain/costs. row 1 action 2")


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_restore_refuses_a_priority_that_is_not_finite(tmp_path, value):
    arrays = _farm_snapshot(tmp_path)
    _restore_refuses(tmp_path, _with(arrays, "brain/priorities", (0, 1), value), "brain/priorities")


def test_restore_refuses_counts_and_ticks_out_of_range(tmp_path):
    arrays = _farm_snapshot(tmp_path)
    _restore_refuses(tmp_path, {**arrays, "brain/tick_count": np.array(2**62, np.int64)}, "brain/tick_count")
    _restore_refuses(tmp_path, {**arrays, "brain/counters": np.array('{"planned": -3}')}, "brain/counters")
    _restore_refuses(tmp_path, _with(arrays, "brain/expanded", 0, -1), "brain/expanded")
    _restore_refuses(tmp_path, _with(arrays, "brain/cooldown_until", (0, 0), -4), "brain/cooldown_until")
    _restore_refuses(tmp_path, _with(arrays, "brain/event_bits", 0, np.uint32(2**31)), "brain/event_bits")
    _restore_refuses(tmp_path, _with(arrays, "brain/plan_cost", 0, -np.inf), "brain/plan_cost")
    _restore_refuses(tmp_path, {**arrays, "brain/dedupe": np.array([7, 0], np.int64)}, "brain/dedupe")
    alive = arrays["brain/alive"].copy()
    alive.view(np.uint8)[0] = 2
    _restore_refuses(tmp_path, {**arrays, "brain/alive": alive}, "brain/alive")


def test_restore_refuses_an_action_that_is_not_the_plans_step(tmp_path):
    arrays = _farm_snapshot(tmp_path)
    acting = np.flatnonzero(arrays["brain/action"] >= 0)
    assert len(acting), "the fixture should have agents acting"
    i = int(acting[0])
    other = (int(arrays["brain/action"][i]) + 1) % 4
    _restore_refuses(tmp_path, _with(arrays, "brain/action", i, other), f"brain/action. row {i}")


# --- defect 1: every value of the worlds' arrays -----------------------------------------------------------------
@pytest.fixture(scope="module")
def soldier_snapshot(tmp_path_factory):
    from worlds.soldier.world import SoldierWorld

    world = SoldierWorld()
    brain = Brain(world.domain, 40, world=world, planner="warp", device="cpu", seed=1)
    for _ in range(3):
        brain.tick()
    path = tmp_path_factory.mktemp("soldier") / "good.npz"
    brain.snapshot(path)
    return _load(path)


def _soldier_brain():
    from worlds.soldier.world import SoldierWorld

    world = SoldierWorld()
    return Brain(world.domain, 40, world=world, planner="warp", device="cpu", seed=1)


@pytest.mark.parametrize("key, index, value, field", [
    ("world/troops/pos", (0, 0), np.nan, "troops/pos"),
    ("world/troops/pos", (3, 1), 1e30, "troops/pos"),
    ("world/troops/pos", (3, 0), -0.5, "troops/pos"),
    ("world/troops/tpos", (2, 1), np.inf, "troops/tpos"),
    ("world/troops/team", 0, 9, "troops/team"),
    ("world/troops/health", 1, -3, "troops/health"),
    ("world/troops/ammo", 1, 99, "troops/ammo"),
    ("world/troops/alive", 1, 5, "troops/alive"),
    ("world/troops/tslot", 1, 10**6, "troops/tslot"),
    ("world/field/squad_obj", 0, 10**6, "field/squad_obj"),
    ("world/field/walls", (0, 0), np.nan, "field/walls"),
])
def test_soldier_restore_refuses_bad_values(tmp_path, soldier_snapshot, key, index, value, field):
    _restore_refuses(tmp_path, _with(soldier_snapshot, key, index, value), field, target=_soldier_brain())


def test_village_restore_refuses_positions_off_the_map(tmp_path):
    from worlds.village.world import VillageWorld

    def brain():
        world = VillageWorld()
        return Brain(world.domain, 64, world=world, planner="warp", device="cpu", seed=2)

    b = brain()
    b.tick()
    b.snapshot(tmp_path / "v.npz")
    arrays = _load(tmp_path / "v.npz")
    for value in (np.nan, 1e30, -3.0):
        _restore_refuses(tmp_path, _with(arrays, "world/positions", (0, 0), value), "positions", target=brain())
    _restore_refuses(tmp_path, _with(arrays, "world/waited", 0, -1), "waited", target=brain())
    _restore_refuses(tmp_path, _with(arrays, "world/base_priority", (0, 0), np.nan), "base_priority", target=brain())


def test_soldier_kernels_clamp_huge_and_nan_positions():
    """Written straight into the world's arrays (no restore to refuse them), positions of 1e30, -1e30 and NaN
    used to be turned into tile indices by a float-to-int overflow: the process died with SIGSEGV."""
    code = textwrap.dedent("""
        import numpy as np
        from goap.runtime import Brain
        from worlds.soldier.world import SoldierWorld
        for value in (1e30, -1e30, float("nan")):
            world = SoldierWorld()
            brain = Brain(world.domain, 40, world=world, planner="warp", device="cpu", seed=1,
                          check_inputs=False)
            brain.tick()
            world.troops.pos.numpy()[:] = value
            for _ in range(3):
                brain.tick()
        print("survived")
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "survived" in done.stdout, done.stderr[-2000:]


# --- defect 6: both planners refuse the same costs, naming agent and action ---------------------------------------
@pytest.mark.parametrize("planner", ["warp", "reference"])
@pytest.mark.parametrize("value", [np.nan, -1.0, np.inf, 1e13])
def test_both_planners_refuse_a_bad_cost_naming_agent_and_action(planner, value):
    brain, _ = make(6, planner=planner)
    brain.tick()
    brain.costs.numpy()[4, 2] = value  # 'pick'
    brain.replan()
    with pytest.raises(BrainError, match=r"agent 4: action 'pick' has cost .*0\.\.1e\+12"):
        brain.tick()


@pytest.mark.parametrize("planner", ["warp", "reference"])
def test_the_largest_cost_both_planners_take_is_accepted(planner):
    brain, _ = make(3, planner=planner)
    brain.costs.numpy()[:, 0] = np.float32(1e12)  # float32(1e12) is just below 1e12: inside the limit
    brain.costs.numpy()[:, 1] = 0.0
    brain.tick()
    assert brain.tick_count == 1


def test_a_dead_rows_bad_cost_is_refused_as_the_reference_refuses_it():
    brain, _ = make(4, planner="warp", n_alive=2)
    brain.costs.numpy()[3, 0] = np.nan
    with pytest.raises(BrainError, match="agent 3: action 'go_field'"):
        brain.tick()


# --- defect 5: snapshot members sized and named before they are read ---------------------------------------------
def _good_file(tmp_path):
    brain, _ = make(5, duration=3)
    brain.tick()
    path = tmp_path / "good.npz"
    brain.snapshot(path)
    return path


def _rewrite(src, dst, edit):
    """Copy the zip ``src`` to ``dst`` member by member, ``edit(name, bytes)`` returning the new bytes (or None to
    drop the member); extra members come from ``edit("", b"")`` as a dict."""
    import zipfile

    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = edit(info.filename, zin.read(info))
            if data is not None:
                zout.writestr(info.filename, data)
        for name, data in (edit("", b"") or {}).items():
            zout.writestr(name, data)


def _assert_refused(brain, path, match):
    before = brain.state_hash()
    with pytest.raises(SnapshotError, match=match):
        brain.restore(path)
    assert brain.state_hash() == before


def test_restore_refuses_an_unknown_member_before_reading_it(tmp_path):
    good = _good_file(tmp_path)
    bad = tmp_path / "extra.npz"
    _rewrite(good, bad, lambda name, data: {"unused.npy": bytes(2**20)} if name == "" else data)
    brain, _ = make(5, duration=3)
    _assert_refused(brain, bad, "member 'unused.npy' is not part of a snapshot")


def test_restore_refuses_a_member_that_declares_more_than_the_brain_holds(tmp_path):
    good = _good_file(tmp_path)
    bad = tmp_path / "big.npz"
    header = np.lib.format
    import io

    def big_goal(name, data):
        if name != "brain/goal.npy":
            return None if name == "" else data
        buf = io.BytesIO()
        header.write_array_header_1_0(buf, {"descr": "<i4", "fortran_order": False, "shape": (2**38,)})
        return buf.getvalue()  # a 150-byte member whose header declares 1 TiB

    _rewrite(good, bad, big_goal)
    brain, _ = make(5, duration=3)
    _assert_refused(brain, bad, "brain/goal.npy' declares shape")


@pytest.mark.parametrize("damage", ["zlib", "method", "header", "truncated"])
def test_damaged_members_raise_snapshot_error(tmp_path, damage):
    good = _good_file(tmp_path)
    raw = bytearray(good.read_bytes())
    if damage == "zlib":  # flip bytes inside the first member's deflate stream
        start = 30 + int.from_bytes(raw[26:28], "little") + int.from_bytes(raw[28:30], "little")
        for k in range(start + 2, start + 12):
            raw[k] ^= 0xFF
    elif damage == "method":  # a compression method zipfile does not implement (NotImplementedError)
        raw[8:10] = (99).to_bytes(2, "little")
        cd = raw.rfind(b"PK\x01\x02")
        while cd >= 0:
            raw[cd + 10:cd + 12] = (99).to_bytes(2, "little")
            cd = raw.rfind(b"PK\x01\x02", 0, cd)
    elif damage == "truncated":
        raw = raw[: len(raw) // 2]
    bad = tmp_path / f"{damage}.npz"
    if damage == "header":  # a .npy header that is not a Python literal (tokenize / syntax errors)
        def edit(name, data):
            if name == "brain/goal.npy":
                return b"\x93NUMPY\x01\x00" + (76).to_bytes(2, "little") + b"{'descr': '<i4', 'shape': ((((" + \
                    b" " * 44 + b"\n"
            return None if name == "" else data
        _rewrite(good, bad, edit)
    else:
        bad.write_bytes(bytes(raw))
    brain, _ = make(5, duration=3)
    _assert_refused(brain, bad, "bad|snapshot|member|readable")


def test_restore_refuses_a_member_larger_than_the_brain_holds_before_inflating_it(tmp_path):
    import io

    good = _good_file(tmp_path)
    bad = tmp_path / "long.npz"

    def long_plan(name, data):
        if name != "brain/plan.npy":
            return None if name == "" else data
        buf = io.BytesIO()
        np.save(buf, np.zeros((5, 2**20), np.int32))  # 20 MB that deflate to a few kB
        return buf.getvalue()

    _rewrite(good, bad, long_plan)
    brain, _ = make(5, duration=3)
    _assert_refused(brain, bad, r"member 'brain/plan.npy' declares \d+ bytes, more than")


# --- defect 9 (the Brain's items) and defect 4's memory estimate --------------------------------------------------
@pytest.mark.parametrize("count", [-1, 1.7, True, "2"])
def test_spawn_refuses_a_count_that_is_not_a_whole_number(count):
    brain, _ = make(4, n_alive=1)
    with pytest.raises(ValueError, match="spawn count must be an integer >= 0"):
        brain.spawn(count)
    assert brain.n_alive == 1


@pytest.mark.parametrize("fact, value", [
    ("coins", 2.7), ("coins", 2.0), ("coins", 3 + 5j), ("coins", "3"), ("coins", True), ("coins", [1, 2.5]),
    ("hungry", 0.5), ("hungry", "true"), ("at", 1.0), ("at", "garden"),
])
def test_write_fact_refuses_values_it_would_have_to_change(fact, value):
    brain, _ = make(2)
    before = brain.state_hash()
    with pytest.raises(ValueError, match=fact):
        brain.write_fact(fact, value)
    assert brain.state_hash() == before


@pytest.mark.parametrize("fact, value, expected", [
    ("coins", 7, 7), ("coins", np.int8(4), 4), ("coins", np.array([5, 6]), [5, 6]), ("hungry", False, 0),
    ("hungry", True, 1), ("hungry", 0, 0), ("hungry", np.array([True, False]), [1, 0]), ("at", "field", 1),
    ("at", 0, 0), ("at", ["field", "home"], [1, 0]),
])
def test_write_fact_takes_the_documented_forms(fact, value, expected):
    brain, _ = make(2)
    brain.write_fact(fact, value)
    np.testing.assert_array_equal(brain.read_fact(fact).numpy(), np.broadcast_to(expected, (2,)))


@pytest.mark.parametrize("goal", [True, False, np.True_, 1.0])
def test_set_goal_refuses_a_bool_or_float_goal(goal):
    brain, _ = make(2)
    with pytest.raises(ValueError, match="goal index"):
        brain.set_goal([0], goal)


@pytest.mark.parametrize("setting, value", [
    ("plan_budget", True), ("plan_budget", np.True_), ("dedupe", 1), ("dedupe", 1.0), ("max_nodes", 2.5),
    ("max_plan_length", True),
])
def test_settings_refuse_bools_and_floats_for_integers(setting, value):
    with pytest.raises(ValueError, match=setting):
        make(2, **{setting: value})


def test_a_live_setting_written_on_the_config_is_checked():
    brain, _ = make(2)
    with pytest.raises(ValueError, match="plan_budget"):
        brain.config.plan_budget = True
    assert brain.plan_budget is None


@pytest.mark.parametrize("dt", [np.nan, np.inf, -1.0, True, "1"])
def test_tick_refuses_a_time_step_that_is_not_finite_and_non_negative(dt):
    brain, _ = make(2)
    with pytest.raises(ValueError, match="dt must be a finite number >= 0"):
        brain.tick(dt)
    assert brain.tick_count == 0


def test_village_tick_with_nan_dt_is_refused_before_any_position_moves():
    from worlds.village.world import VillageWorld

    world = VillageWorld()
    brain = Brain(world.domain, 32, world=world, planner="warp", device="cpu", seed=1)
    brain.tick()
    before = brain.state_hash()
    with pytest.raises(ValueError, match="dt"):
        brain.tick(float("nan"))
    assert brain.state_hash() == before
    assert np.isfinite(world.get_state()["positions"]).all()


def test_a_brain_too_large_for_memory_is_refused_with_the_bytes_it_needs():
    with pytest.raises(ValueError, match=r"a brain of 1099511627776 agents needs about [\d,]+ bytes"):
        make(2**40)


def test_a_brain_too_large_for_an_address_space_cap_is_refused_with_the_bytes_it_needs():
    """Under ``ulimit -v`` (4 GB) 30 million soldiers used to end in an allocation error half way through."""
    code = textwrap.dedent("""
        import resource
        from goap.runtime import Brain
        from worlds.soldier.world import SoldierWorld
        world = SoldierWorld()
        Brain(world.domain, 4, world=world, planner="warp", device="cpu")  # load everything first
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (used + 4 * 2**30, resource.RLIM_INFINITY))
        try:
            Brain(world.domain, 30_000_000, world=SoldierWorld(), planner="warp", device="cpu")
        except ValueError as e:
            print("refused:", e)
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert "refused: a brain of 30000000 agents needs about" in done.stdout, done.stderr[-2000:]


def test_goap_run_with_more_agents_than_memory_holds_says_so_in_one_line():
    import resource

    def cap():  # the 4 GB address-space cap the issue ran under
        resource.setrlimit(resource.RLIMIT_AS, (4 * 10**9, resource.RLIM_INFINITY))

    done = subprocess.run([sys.executable, "-m", "goap", "run", "--world", "soldier", "--agents", "30000000",
                           "--ticks", "1"], cwd=ROOT, capture_output=True, text=True, timeout=600, preexec_fn=cap)
    errors = [line for line in done.stderr.splitlines() if "CUDA" not in line]
    assert done.returncode == 1, done.stderr[-2000:]
    assert len(errors) == 1 and "a brain of 30000000 agents needs about" in errors[0] and "bytes" in errors[0]


# --- a bounded, seeded snapshot fuzz: restore raises SnapshotError or gives a brain that ticks -------------------
_NASTY = [np.nan, np.inf, -np.inf, -1, -2**31, 2**31 - 1, 2**62, 1e30, -1e30, 0.5, 7, 2**40]


def _mutations(arrays, rng, count):
    keys = sorted(k for k, v in arrays.items() if v.dtype.kind in "biuf" and v.size)
    for _ in range(count):
        key = keys[rng.integers(len(keys))]
        value = arrays[key].copy()
        flat = value.reshape(-1)
        nasty = _NASTY[rng.integers(len(_NASTY))]
        with np.errstate(all="ignore"):
            try:
                flat[rng.integers(flat.size)] = np.array(nasty).astype(value.dtype)
            except (OverflowError, ValueError):
                continue
        yield key, {**arrays, key: value}


@pytest.mark.parametrize("world", ["farm", "soldier"])
def test_snapshot_fuzz_restore_refuses_or_the_brain_ticks(tmp_path, world, soldier_snapshot):
    rng = np.random.default_rng(19)
    if world == "farm":
        arrays, brain = _farm_snapshot(tmp_path), make(5, duration=3)[0]
    else:
        arrays, brain = soldier_snapshot, _soldier_brain()
    bad = tmp_path / "fuzz.npz"
    accepted = 0
    for key, mutated in _mutations(arrays, rng, 60 if world == "soldier" else 150):
        np.savez(bad, **mutated)
        before = brain.state_hash()
        try:
            brain.restore(bad)
        except SnapshotError:
            assert brain.state_hash() == before, key
            continue
        accepted += 1
        brain.replan()  # every agent plans with what was restored: the planners' own checks see it all
        brain.tick()  # an accepted snapshot ticks (a crash, BrainError or ValueError is a hole in the checks)
    raw = bytearray(bad.read_bytes())
    for _ in range(40):  # damaged bytes: never anything but SnapshotError
        damaged = bytearray(raw)
        for _k in range(int(rng.integers(1, 8))):
            damaged[int(rng.integers(len(damaged)))] = int(rng.integers(256))
        bad.write_bytes(bytes(damaged[: int(rng.integers(len(damaged) // 2, len(damaged) + 1))]))
        try:
            brain.restore(bad)
        except SnapshotError:
            pass
        else:
            brain.tick()
    assert accepted < 150


def test_packed_states_given_as_floats_are_refused_not_rounded():
    brain, _ = make(3, n_alive=1)
    row = brain.states.numpy()[0].astype(np.float64) + 0.5
    with pytest.raises(ValueError, match="packed states must be an integer array"):
        brain.spawn(1, states=row[None])
    assert brain.n_alive == 1


def test_goal_hysteresis_refuses_a_complex_number_with_a_value_error():
    with pytest.raises(ValueError, match="goal_hysteresis"):
        make(2, goal_hysteresis=np.complex128(1 + 1j))


def test_cooldown_ticks_beyond_an_int32_is_refused():
    with pytest.raises(ValueError, match="cooldown_ticks must be an integer in 0..2147483647"):
        make(2, cooldown_ticks=2**40)


def test_plan_budget_beyond_an_int32_is_refused():
    with pytest.raises(ValueError, match="plan_budget must be an integer in 1..2147483647"):
        make(2, plan_budget=2**40)

"""SoldierWorld driven by a Brain: invariants, determinism and snapshots, replanning under fire, gameplay counts."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("warp")

from goap.codes import Status  # noqa: E402
from goap.runtime import Brain  # noqa: E402
from goap.world import World  # noqa: E402
from worlds.soldier.world import STATS, SoldierWorld  # noqa: E402


def make(n: int = 240, seed: int = 1, world_options: dict | None = None, launcher_threads: int | None = None,
         **options) -> tuple[Brain, SoldierWorld]:
    world = SoldierWorld(**(world_options or {}))
    brain = Brain(world.domain, n, world=world, planner="warp", device="cpu", seed=seed, **options)
    if launcher_threads is not None:  # the CPU chunks of the world's per-row kernels (sense_soldiers)
        brain.launcher.threads = launcher_threads
    return brain, world


def host(world: SoldierWorld) -> dict[str, np.ndarray]:
    """Every world array by name (host copies)."""
    return {k.split("/")[-1]: v for k, v in world.get_state().items()}


def check_invariants(brain: Brain, world: SoldierWorld, before: dict[str, np.ndarray] | None) -> None:
    s = host(world)
    alive = s["alive"] != 0
    assert (s["health"][alive] >= 1).all() and (s["health"] <= 4).all()
    assert ((s["ammo"] >= 0) & (s["ammo"] <= 8)).all()
    assert ((s["magazines"] >= 0) & (s["magazines"] <= 3)).all()
    assert ((s["grenades"] >= 0) & (s["grenades"] <= 2)).all()
    # the brain skips exactly the dead, and the dead do nothing
    np.testing.assert_array_equal(brain.alive.numpy(), alive)
    assert (brain.action.numpy()[~alive] == -1).all()
    assert (brain.goal.numpy()[~alive] == -1).all()
    # a death clears the row as the engine's set_alive does: nothing asked, no search outcome, no pinned goal
    assert not brain.needs_plan.numpy()[~alive].any() and (brain.replan_cause.numpy()[~alive] == 0).all()
    assert (brain.plan_status.numpy()[~alive] == Status.NOT_PLANNED).all()
    assert (brain.pinned_goal.numpy()[~alive] == -1).all() and (brain.cooldown_until.numpy()[~alive] == 0).all()
    if before is not None:
        stayed_dead = ~alive & (before["alive"] == 0)
        np.testing.assert_array_equal(s["pos"][stayed_dead], before["pos"][stayed_dead])
        assert (s["ammo"][stayed_dead] == before["ammo"][stayed_dead]).all()
    # one owner per cover slot, one slot per soldier, the counts per wall agree
    owner, slot = s["slot_owner"], s["slot"]
    held = np.flatnonzero(owner >= 0)
    np.testing.assert_array_equal(slot[owner[held]], held)
    mine = np.flatnonzero(slot >= 0)
    np.testing.assert_array_equal(owner[slot[mine]], mine)
    assert len(np.unique(slot[mine])) == len(mine)
    free = np.bincount(s["slot_wall"][owner < 0], minlength=len(s["wall_free"]))
    np.testing.assert_array_equal(s["wall_free"], free[: len(s["wall_free"])])
    crouched = np.flatnonzero(s["in_cover"] != 0)
    assert (slot[crouched] >= 0).all()
    np.testing.assert_allclose(s["pos"][crouched], s["slot_pos"][slot[crouched]], atol=0.51)
    # on the field and never inside a wall
    pos = s["pos"][alive]
    assert (pos >= 0).all() and (pos[:, 0] <= world.width).all() and (pos[:, 1] <= world.height).all()
    walls = world.obstacles
    inside = ((pos[:, None, 0] > walls[None, :, 0]) & (pos[:, None, 0] < walls[None, :, 2])
              & (pos[:, None, 1] > walls[None, :, 1]) & (pos[:, None, 1] < walls[None, :, 3]))
    assert not inside.any()


def watch_sense(world: SoldierWorld) -> dict[str, np.ndarray]:
    """Record the facts and the world's own arrays right after each sense (before the brain acts on them)."""
    seen: dict[str, np.ndarray] = {}
    sense = world.sense

    def wrapped(brain: Brain) -> None:
        sense(brain)
        seen["facts"] = brain.tables.unpack_states(brain.states.numpy())
        seen.update(host(world))

    world.sense = wrapped
    return seen


def check_facts(world: SoldierWorld, seen: dict[str, np.ndarray]) -> None:
    """The facts say what the world says, at the moment they are sensed."""
    F = {f.name: k for k, f in enumerate(world.domain.facts)}
    facts, live = seen["facts"], np.flatnonzero(seen["alive"] != 0)
    for fact, arr in (("health", "health"), ("ammo", "ammo"), ("magazines", "magazines"),
                      ("grenades", "grenades"), ("has_medkit", "medkit"), ("weapon_drawn", "drawn"),
                      ("in_cover", "in_cover"), ("enemy_visible", "visible"), ("at", "at")):
        np.testing.assert_array_equal(facts[live, F[fact]], seen[arr][live], err_msg=fact)
    np.testing.assert_array_equal(facts[live, F["enemy_alive"]], seen["target"][live] >= 0)
    covered = facts[live, F["in_cover"]] == 1
    assert (facts[live[covered], F["under_fire"]] == 0).all()


def test_invariants_over_100_ticks():
    brain, world = make()
    assert isinstance(world, World)
    assert set(world.sensed_facts) == {f.name for f in world.domain.facts}
    seen = watch_sense(world)
    deaths = 0
    for _ in range(100):
        before = host(world)
        brain.tick()
        check_facts(world, seen)
        check_invariants(brain, world, before)
        deaths += int(((before["alive"] != 0) & ~world.alive).sum())
    score = world.score()
    assert deaths > 0 and score["deaths"] == deaths
    assert score["shots_fired"] >= score["hits"] > 0
    assert score["alive_team0"] + score["alive_team1"] == world.alive.sum()
    assert world.team.dtype == np.int8 and (world.team == 0).sum() == 120
    assert world.positions.shape == (240, 2) and world.positions.dtype == np.float32
    assert world.obstacles.shape[1] == 4 and len(world.obstacles) > 10
    assert {"cover", "objective", "medbay", "armory"} <= set(world.sites)


def test_dead_soldiers_come_back_with_a_full_kit():
    brain, world = make(n=200, seed=2)
    for _ in range(60):
        brain.tick()
    s = host(world)
    assert world.score()["respawns"] > 0
    fresh = (s["alive"] != 0) & (s["health"] == 4) & (s["respawn_at"] < 0)
    assert fresh.any()
    # dead ones wait at most respawn_ticks
    dead = s["alive"] == 0
    assert (s["respawn_at"][dead] - int(s["clock"][0]) <= world.respawn_ticks).all()


def run_hash(ticks: int, n: int = 200, **options) -> str:
    brain, _ = make(n=n, seed=3, **options)
    for _ in range(ticks):
        brain.tick()
    return brain.state_hash()


def test_determinism_across_thread_counts():
    one = run_hash(40, planner_options={"threads": 1})
    two = run_hash(40, planner_options={"threads": 2})
    assert one == two
    assert run_hash(40) == one
    # the world's sense kernel split by the launcher into chunks of soldiers on two threads changes nothing either
    two_chunks, _ = make(n=4096, seed=3, launcher_threads=2)
    assert two_chunks.launcher.chunks(4096) == 2
    assert run_hash(25, n=4096, launcher_threads=2) == run_hash(25, n=4096, launcher_threads=1)
    other, _ = make(n=200, seed=4)
    for _ in range(40):
        other.tick()
    assert other.state_hash() != one


@pytest.mark.parametrize("at", [0, 17, 45])
def test_snapshot_restore_continues_bit_identically(tmp_path, at):
    straight, _ = make(n=200, seed=5)
    for _ in range(at):
        straight.tick()
    path = tmp_path / "snap.npz"
    straight.snapshot(path)
    for _ in range(60 - at):
        straight.tick()
    restored, _ = make(n=200, seed=99)
    restored.restore(path)
    assert restored.tick_count == at
    for _ in range(60 - at):
        restored.tick()
    assert restored.state_hash() == straight.state_hash()


def test_set_state_checks_every_field_before_writing():
    brain, world = make(n=100, seed=6)
    for _ in range(5):
        brain.tick()
    good = world.get_state()
    h = brain.state_hash()
    for key, bad, words in (
        ("troops/health", None, "missing"),
        ("troops/pos", np.zeros((3, 2), np.float32), "shape"),
        ("field/slot_owner", good["field/slot_owner"].astype(np.int64), "dtype"),
    ):
        arrays = dict(good)
        arrays["troops/alive"] = np.zeros_like(good["troops/alive"])  # would be written first if not checked
        if bad is None:
            del arrays[key]
        else:
            arrays[key] = bad
        with pytest.raises(ValueError, match=f"'{key}'.*{words}"):
            world.set_state(arrays)
        assert brain.state_hash() == h
    world.set_state(good)
    assert brain.state_hash() == h


def test_being_shot_in_the_open_sends_a_soldier_to_cover():
    brain, world = make(n=200, seed=1)
    G = {g.name: k for k, g in enumerate(world.domain.goals)}
    for _ in range(8):
        brain.tick()
    s = host(world)
    goal = brain.goal.numpy()
    calm = np.flatnonzero((s["alive"] != 0) & (goal == G["hold_objective"]) & (s["in_cover"] == 0))
    assert len(calm)
    world.mark_under_fire(calm)
    brain.tick()
    facts = brain.tables.unpack_states(brain.states.numpy())
    F = {f.name: k for k, f in enumerate(world.domain.facts)}
    hit = calm[world.alive[calm]]
    assert (facts[hit, F["under_fire"]] == 1).all()
    took_cover = brain.goal.numpy()[hit] == G["take_cover"]
    # every soldier with a free cover slot nearby drops the guard duty for cover
    has_cover = brain.enabled.numpy()[hit, world.domain.action_index("go_to_cover")]
    assert took_cover[has_cover].all() and has_cover.sum() > len(hit) // 2


@pytest.fixture(scope="module")
def battle() -> tuple[Brain, SoldierWorld]:
    brain, world = make(n=400, seed=7, plan_budget=256)
    for _ in range(300):
        brain.tick()
    return brain, world


def test_every_action_is_completed(battle):
    brain, _ = battle
    counts = brain.action_counts
    assert min(counts.values()) > 0, {a: c for a, c in counts.items() if c == 0}


def test_soldiers_are_busy_and_plans_reach_their_goals(battle):
    brain, _ = battle
    summary = brain.summary(warmup=30)
    assert summary["idle_fraction"] < 0.12
    c = brain.counters
    assert c["replan_plan_finished"] <= 0.2 * c["goals_achieved"]
    assert c["actions_failed"] <= 0.2 * c["actions_done"]


def test_both_teams_kill_capture_and_use_every_tactic(battle):
    _, world = battle
    score = world.score()
    assert score["kills_team0"] > 20 and score["kills_team1"] > 20
    assert score["captures"] > 0 and score["points_team0"] > 0 and score["points_team1"] > 0
    for key in ("suppressions", "flanks", "grenades_thrown", "melee_hits", "heals", "respawns", "flights"):
        assert score[key] > 0, key
    assert set(score) >= set(STATS)


@pytest.mark.slow
def test_a_million_soldiers_reset_and_tick():
    world = SoldierWorld()
    brain = Brain(world.domain, 1_000_000, world=world, planner="warp", device="cpu", plan_budget=2048)
    brain.tick()
    assert world.alive.all() and np.isfinite(world.positions).all()
    assert world.height >= 20_000 and len(world.obstacles) > 10_000


@pytest.mark.parametrize("n", [0, 1, 9])
def test_tiny_armies_run(n):
    """No soldier, one without an enemy, and a squad and a half: nothing to fight is not an error."""
    brain, world = make(n=n, seed=8)
    for _ in range(30):
        brain.tick()
    assert world.positions.shape == (n, 2)
    assert world.score()["shots_fired"] >= 0
    if n == 1:  # alone on the field: it goes to hold its control point and stands guard
        assert brain.action_counts["advance"] == 1 and brain.action_counts["stand_guard"] >= 1


def test_view_draws_the_field():
    from goap.worldview import check_view

    brain, world = make(n=120, seed=9)
    for _ in range(30):
        brain.tick()
    view = check_view(world, brain.n_agents)
    labels = [s.label for s in view.sites()]
    assert {"cover slot", "control point", "medbay (team 0)", "armory (team 1)"} <= set(labels)
    groups = view.legend_groups([a.name for a in world.domain.actions])
    assert sum(len(g.actions) for g in groups) == len(world.domain.actions) and len(groups) <= 7
    tracked = np.flatnonzero(world.target >= 0)
    assert len(tracked)
    i = int(tracked[0])
    np.testing.assert_allclose(view.target_of(i), world.positions[world.target[i]])
    assert view.target_of(-1) is None


@pytest.mark.parametrize("bad, words", [
    ({"sight": 100.0}, "sight must be at most 80"), ({"speed": 0}, "speed must be"), ({"squad_size": 0}, "squad_size"),
    ({"width": 10.0}, "width must be at least"), ({"area_per_agent": -1.0}, "area_per_agent"),
    ({"guard_ticks": 1.5}, "guard_ticks"), ({"hold_ticks": True}, "hold_ticks"),
])
def test_bad_options_are_refused(bad, words):
    with pytest.raises(ValueError, match=words):
        SoldierWorld(**bad)


def test_a_rule_changed_between_ticks_takes_effect_at_the_next_tick():
    """The rules are plain attributes: a change reaches the kernels at the next stage (and changes graph_key)."""
    runs = {}
    for speed in (3.0, 6.0):
        brain, world = make(n=120, seed=4)
        for _ in range(5):
            brain.tick()
        key = world.graph_key()
        world.speed = speed
        assert (world.graph_key() != key) == (speed != 3.0)
        before, was_alive = world.positions.copy(), world.alive.copy()
        brain.tick()
        moved = np.linalg.norm(world.positions - before, axis=1)[was_alive]  # the dead respawn far away
        assert moved.max() <= 1.2 * speed + 1e-4  # a flight runs at 1.2 times the speed, everything else at it
        if speed > 3.0:
            assert moved.max() > 1.2 * 3.0 + 1e-3  # someone ran further than the old speed allows
        runs[speed] = brain.state_hash()
    assert runs[3.0] != runs[6.0]
    brain, world = make(n=20, seed=4)
    world.sight = 120.0
    with pytest.raises(ValueError, match="sight must be at most 80"):
        brain.tick()


def test_a_field_of_a_given_size():
    brain, world = make(n=50, seed=2, world_options={"width": 60.0, "height": 60.0})
    for _ in range(40):
        brain.tick()
    assert (world.width, world.height) == (60.0, 60.0)
    pos = world.positions
    assert (pos >= 0).all() and (pos <= 60.0).all()
    assert world.score()["shots_fired"] > 0

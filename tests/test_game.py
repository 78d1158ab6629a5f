"""The wolf game (examples/game): a scripted headless run is deterministic, and the agents react to the player.

One recorded run of the demo script (2,000 agents, 160 frames, drawn into an off-screen surface) is shared by the
reaction tests; what they expect is computed here from the recorded positions, not taken from the game's lists.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
pygame = pytest.importorskip("pygame")

from examples.game import game as G  # noqa: E402
from examples.game import world as W  # noqa: E402
from examples.game.main import ScriptError, feed, load_script, main  # noqa: E402
from tests.conftest import ROOT  # noqa: E402

DEMO = ROOT / "examples" / "game" / "demo.json"
AGENTS, FRAMES, RESPAWN = 2000, 160, 60
K = 2  # ticks within which a villager near the wolf must have the flee goal


def _play(frames: int = FRAMES, *, capture: bool = False, record: bool = False, draw: bool = False):
    game = G.Game(AGENTS, seed=1, respawn_ticks=RESPAWN, capture=capture)
    script = load_script(DEMO)
    renderer = None
    if draw:
        from examples.game.render import Renderer

        pygame.init()
        renderer = Renderer(game)
    rec: dict[str, list] = {k: [] for k in ("pos", "wolf", "goal", "pinned", "alive", "action", "at", "howl")}
    cursor = 0
    for f in range(frames):
        cursor = feed(game, script, cursor, f)
        if record:
            rec["pos"].append(game.positions().copy())
            rec["wolf"].append(game.wolf.copy())  # before this frame's move
        howls = game.state.howls
        game.frame()
        if renderer is not None:
            renderer.draw({"tick": str(f)})
        if record:
            b = game.brain
            rec["goal"].append(b.goal.numpy().copy())
            rec["pinned"].append(b.pinned_goal.numpy().copy())
            rec["alive"].append(b.alive.numpy().copy())
            rec["action"].append(b.action.numpy().copy())
            rec["at"].append(b.read_fact("at").numpy().copy())
            rec["howl"].append(game.state.howls > howls)
    return game, {k: np.array(v) for k, v in rec.items()}


@pytest.fixture(scope="module")
def run():
    return _play(record=True, draw=True)


def _sheltered(game, pos: np.ndarray) -> np.ndarray:
    sh = game.world.map["shelters"]
    return np.linalg.norm(pos[:, None, :] - sh[None], axis=2).min(axis=1) < W.SHELTER_RADIUS


def test_scripted_run_is_deterministic(run):
    game, _ = run
    again, _ = _play()
    assert again.state_hash() == game.state_hash()
    assert again.brain.state_hash() == game.brain.state_hash()
    assert again.state.log == game.state.log
    captured, _ = _play(capture=True)  # the brain's tick as graphs: the same game, bit for bit
    assert captured.state_hash() == game.state_hash()


def test_different_inputs_give_a_different_game(run):
    game, _ = run
    other = G.Game(AGENTS, seed=1, respawn_ticks=RESPAWN)
    other.press("right", True)
    for _ in range(FRAMES):
        other.frame()
    assert other.state_hash() != game.state_hash()


def test_villagers_near_the_wolf_flee_within_k_ticks(run):
    game, rec = run
    role = game.world.role_host
    reach = G.FEAR_RADIUS - G.WOLF_SPEED - 1.0  # within the radius of the wolf after its move, whatever the move
    checked = set()
    for f in range(FRAMES - K):
        pos, alive = rec["pos"][f], rec["alive"][f - 1] if f else np.ones(AGENTS, bool)
        near = (role == W.VILLAGER) & alive & (np.linalg.norm(pos - rec["wolf"][f], axis=1) < reach)
        near &= ~_sheltered(game, pos)
        for i in np.flatnonzero(near):
            window = slice(f, f + K)
            fled = (rec["goal"][window, i] == W.FLEE).any()
            caught = not rec["alive"][window, i].all()
            assert fled or caught, f"villager {i}, {np.linalg.norm(pos[i] - rec['wolf'][f]):.1f} from the wolf at " \
                                   f"frame {f}, has goal {rec['goal'][window, i]} within {K} ticks"
            checked.add(int(i))
    assert len(checked) >= 20  # the script takes the wolf among the villagers
    # Before the wolf came anywhere near, nobody fled.
    first = min(f for f in range(FRAMES) if (np.linalg.norm(rec["pos"][f] - rec["wolf"][f], axis=1)
                                              [role == W.VILLAGER] < G.FEAR_RADIUS + G.WOLF_SPEED).any())
    assert first > 10
    assert not (rec["goal"][:first] == W.FLEE).any()


def test_fleeing_villagers_run_to_a_shelter_and_hide(run):
    game, rec = run
    role = game.world.role_host
    ran = (rec["action"] == W.WALK_SHELTER).any(axis=0) & (role == W.VILLAGER)
    assert ran.sum() >= 20
    hid = (rec["action"] == W.HIDE).any(axis=0)
    assert hid.sum() >= 10
    # A villager hides only inside a shelter (hiding starts once the walk arrived), and the planner's `at` says so.
    f, i = np.nonzero(rec["action"] == W.HIDE)
    assert _sheltered(game, rec["pos"][np.minimum(f + 1, FRAMES - 1), i]).all()
    assert (rec["at"][f, i] == W.AT["shelter"]).all()


def test_guards_near_the_wolf_chase_it(run):
    game, rec = run
    role = game.world.role_host
    reach = G.ALERT_RADIUS - G.WOLF_SPEED - 1.0
    checked = 0
    for f in range(FRAMES - K):
        d = np.linalg.norm(rec["pos"][f] - rec["wolf"][f], axis=1)
        for i in np.flatnonzero((role == W.GUARD) & (d < reach)):
            assert (rec["goal"][f : f + K, i] == W.HUNT).any(), f"guard {i} near the wolf at frame {f} did not chase"
            checked += 1
    assert checked >= 10
    # Guards only chase when the wolf has been near.
    chasing = (rec["action"] == W.CHASE) & (role == W.GUARD)[None]
    assert chasing.any()
    seen = np.zeros(AGENTS, bool)
    for f in range(FRAMES):
        seen |= np.linalg.norm(rec["pos"][f] - rec["wolf"][f], axis=1) < 2 * G.HOWL_RADIUS + G.WOLF_SPEED
        assert not (chasing[f] & ~seen).any()


def test_a_chasing_guard_that_reaches_the_wolf_sends_it_home(run):
    game, rec = run
    bites = [(t, i) for t, what, i in game.state.log if what == "bitten"]
    assert bites, "the demo script gets the wolf bitten"
    for t, i in bites:
        f = t - 1
        assert game.world.role_host[i] == W.GUARD and rec["action"][f, i] == W.CHASE
        assert np.linalg.norm(rec["pos"][f, i] - rec["wolf"][f]) < G.CATCH_RADIUS + G.WOLF_SPEED + W.CHASE_SPEED + 1
        np.testing.assert_allclose(rec["wolf"][f + 1], W.DEN)
    assert game.state.score == 10 * game.state.caught - 25 * game.state.bitten


def test_howl_pins_the_flee_goal(run):
    game, rec = run
    role = game.world.role_host
    howl = np.flatnonzero(rec["howl"])
    assert len(howl) == 1  # the script howls once
    f = int(howl[0])
    d = np.linalg.norm(rec["pos"][f] - rec["wolf"][f], axis=1)
    heard = (role == W.VILLAGER) & rec["alive"][f - 1] & (d < G.HOWL_RADIUS - G.WOLF_SPEED - 1) & \
        ~_sheltered(game, rec["pos"][f])
    assert heard.sum() >= 20
    pinned_or_fled = (rec["pinned"][f] == W.FLEE) | (rec["goal"][f] == W.FLEE) | ~rec["alive"][f]
    assert pinned_or_fled[heard].all()
    far = (role == W.VILLAGER) & (d > G.HOWL_RADIUS + G.WOLF_SPEED + 1)
    assert not (rec["pinned"][f][far] == W.FLEE).any()


def test_a_caught_villager_is_despawned_and_respawned_at_home(run):
    game, rec = run
    caught = [(t, i) for t, what, i in game.state.log if what == "caught"]
    assert caught, "the demo script catches a villager"
    home = game.world.home.numpy()
    role = game.world.role_host
    for t, i in caught:
        f = t - 1  # the frame that ended at tick t
        assert role[i] == W.VILLAGER
        assert rec["alive"][f - 1, i] and not rec["alive"][f, i]
        assert np.linalg.norm(rec["pos"][f, i] - rec["wolf"][f]) < G.CATCH_RADIUS + G.WOLF_SPEED + 1
        back = f + RESPAWN
        if back < FRAMES:
            assert not rec["alive"][f:back, i].any()
            assert rec["alive"][back, i]
            assert (t + RESPAWN, "respawned", i) in game.state.log
            assert rec["at"][back, i] == W.AT["home"]
            np.testing.assert_allclose(rec["pos"][back + 1, i], home[i], atol=W.WALK_SPEED + 1e-3)
    assert game.state.caught == len(caught)
    assert game.state.villagers + game.state.guards == rec["alive"][-1].sum()


def test_the_agents_look_alive(run):
    game, rec = run
    acting = ((rec["action"] >= 0) & rec["alive"]).sum(axis=1) / rec["alive"].sum(axis=1)
    assert acting[20:].mean() > 0.8, f"only {acting[20:].mean():.0%} of the agents act"
    moved = np.linalg.norm(rec["pos"][-1] - rec["pos"][0], axis=1) > 5
    assert moved.mean() > 0.3
    assert game.state.goals_reached > 100


def test_script_errors_name_the_file_and_the_input(tmp_path):
    bad = tmp_path / "bad.json"
    cases = [
        ("{}", "a JSON list"),
        ('[{"tick": 1, "key": "jump", "down": true}]', "input 0: unknown key 'jump'"),
        ('[{"tick": 1, "key": "left", "down": true}, {"tick": -1, "key": "left", "down": true}]', "input 1: 'tick'"),
        ('[{"tick": 1, "key": "left", "down": 1}]', "'down' must be true or false"),
        ('[{"tick": 1, "key": "left"}]', "an input is"),
        ("[1,", "line 1: not JSON"),
    ]
    for text, message in cases:
        bad.write_text(text)
        with pytest.raises(ScriptError, match=str(bad)) as e:
            load_script(bad)
        assert message in str(e.value)
    with pytest.raises(ScriptError, match="cannot read"):
        load_script(tmp_path / "missing.json")


def test_cli_headless_run_with_a_screenshot(tmp_path, capsys):
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"tick": 0, "key": "right", "down": True}, {"tick": 3, "key": "howl",
                                                                              "down": True}]))
    png = tmp_path / "shot.png"
    code = main(["--agents", "300", "--headless", "--script", str(script), "--frames", "6", "--screenshot",
                 str(png)])
    out = capsys.readouterr().out
    assert code == 0
    assert "frames 6, agents 300" in out and "state_hash " in out
    img = pygame.image.load(str(png))
    assert img.get_size() == (1280, 720)
    bad = tmp_path / "bad.json"
    bad.write_text('[{"tick": 0, "key": "fly", "down": true}]')
    code = main(["--agents", "300", "--headless", "--script", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("game: error: ") and "fly" in err and "Traceback" not in err


def test_runs_as_a_file_and_as_a_module():
    env = {**os.environ, "SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"}
    args = ["--agents", "200", "--headless", "--frames", "3", "--no-draw"]
    for cmd in ([sys.executable, str(ROOT / "examples" / "game" / "main.py")], [sys.executable, "-m", "examples.game"]):
        r = subprocess.run(cmd + args, capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
        assert r.returncode == 0, r.stderr
        assert "frames 3, agents 200" in r.stdout


def test_the_domain_validates_with_the_world(capsys):
    from tests.conftest import run_cli

    domain = ROOT / "examples" / "game" / "domain.toml"
    code, out, err = run_cli(capsys, "validate", domain, "--world", "examples.game.world:WolfWorld")
    assert code == 0 and "is valid" in out and "warning" not in out + err
    code, out, err = run_cli(capsys, "validate", domain)  # without what the game senses, fleeing cannot start
    assert code == 0 and "'hide' can never apply" in out + err


def test_a_screenshot_that_cannot_be_written_is_refused_before_the_run(tmp_path, capsys):
    for shot, message in ((tmp_path / "missing" / "x.png", "does not exist"), (tmp_path / "x.gif", "image type")):
        with pytest.raises(SystemExit) as e:
            main(["--headless", "--frames", "1", "--screenshot", str(shot)])
        err = capsys.readouterr().err
        assert e.value.code == 2 and "--screenshot" in err and message in err and "Traceback" not in err


def test_a_recorded_game_replays_the_same(tmp_path):
    from examples.game.autopilot import Autopilot
    from examples.game.main import script_text

    played = G.Game(500, seed=3, respawn_ticks=20)
    pilot = Autopilot(played)
    for f in range(80):
        pilot.play(f)
        played.frame()
    assert len(played.inputs) >= 2
    path = tmp_path / "rec.json"
    path.write_text(script_text(played.inputs))
    script = load_script(path)
    replayed = G.Game(500, seed=3, respawn_ticks=20)
    cursor = 0
    for f in range(80):
        cursor = feed(replayed, script, cursor, f)
        replayed.frame()
    assert replayed.inputs == played.inputs
    assert replayed.state_hash() == played.state_hash()

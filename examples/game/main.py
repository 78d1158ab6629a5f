"""The wolf game: play it in a window, or replay a script of inputs headless (deterministic).

You are the wolf. Villagers gather food in the fields and store it at home; when you come near they run for the
stone shelters, and guards who see you chase you. Catch villagers (+10) and keep away from the guards (-25 and
back to the den). Arrows or WASD move, Space howls (every villager near panics, the guards further off come).

    python -m examples.game                                          # a window (Esc quits)
    python -m examples.game --headless --script examples/game/demo.json --frames 300 --screenshot wolf.png
    python examples/game/main.py --agents 5000 --size 1600x900

A script is a JSON list of timed inputs, ``[{"tick": 0, "key": "right", "down": true}, ...]``: at the start of
frame ``tick`` the key goes down (or up). Keys: left, right, up, down, howl. The same script gives the same game:
the run ends by printing the frames, the score and the state hash (the brain's, with the game's own state).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from examples.game.game import KEYS  # noqa: E402
from goap.argtypes import check_output_file  # noqa: E402

#: Largest script read (checked before reading).
MAX_SCRIPT_BYTES = 4 * 2**20
IMAGE_TYPES = (".png", ".bmp", ".tga", ".jpg", ".jpeg")
PYGAME_KEYS = {"left": ("K_LEFT", "K_a"), "right": ("K_RIGHT", "K_d"), "up": ("K_UP", "K_w"),
               "down": ("K_DOWN", "K_s"), "howl": ("K_SPACE",)}


class ScriptError(ValueError):
    """A script that cannot be played (the message names the file and the item), or an output not written."""


def load_script(path: str | Path) -> list[tuple[int, str, bool]]:
    """Read a script of timed inputs as ``(tick, key, down)`` in tick order (stable for one tick)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_SCRIPT_BYTES:
            raise ScriptError(f"{path}: {size} bytes, more than the {MAX_SCRIPT_BYTES} a script may have")
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ScriptError(f"{path}: cannot read the script: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ScriptError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise ScriptError(f"{path}: line {e.lineno}: not JSON: {e.msg}") from None
    if not isinstance(data, list):
        raise ScriptError(f"{path}: a script is a JSON list of inputs, got {type(data).__name__}")
    out = []
    for j, item in enumerate(data):
        where = f"{path}: input {j}"
        if not isinstance(item, dict) or set(item) != {"tick", "key", "down"}:
            raise ScriptError(f"{where}: an input is {{\"tick\": int, \"key\": str, \"down\": bool}}, got {item!r}")
        tick, key, down = item["tick"], item["key"], item["down"]
        if not isinstance(tick, int) or isinstance(tick, bool) or not 0 <= tick < 10**7:
            raise ScriptError(f"{where}: 'tick' must be an integer in 0..9999999, got {tick!r}")
        if key not in KEYS:
            raise ScriptError(f"{where}: unknown key {key!r}; keys are {', '.join(KEYS)}")
        if not isinstance(down, bool):
            raise ScriptError(f"{where}: 'down' must be true or false, got {down!r}")
        out.append((tick, key, down))
    return sorted(out, key=lambda x: x[0])


def feed(game, script: list[tuple[int, str, bool]], cursor: int, frame: int) -> int:
    """Press the script's inputs due by ``frame`` (from ``cursor`` on); returns the new cursor."""
    while cursor < len(script) and script[cursor][0] <= frame:
        game.press(script[cursor][1], script[cursor][2])
        cursor += 1
    return cursor


def script_text(inputs: list[dict]) -> str:
    """A script as JSON, one input a line."""
    return "[\n" + ",\n".join("  " + json.dumps(x) for x in inputs) + "\n]\n"


def parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a size is WIDTHxHEIGHT, got {text!r}") from None
    if not (320 <= w <= 8192 and 200 <= h <= 8192):
        raise argparse.ArgumentTypeError(f"a size must be within 320x200..8192x8192, got {text!r}")
    return w, h


def hud_lines(game, fps: float, draw_ms: float) -> dict[str, str]:
    st, t = game.state, game.timing
    return {
        "score": str(st.score), "caught": str(st.caught), "bitten": str(st.bitten),
        "villagers": f"{st.villagers} ({st.fleeing} fleeing, {st.hiding} hiding)",
        "guards": f"{st.guards} ({st.chasing} chasing)",
        "tick": str(game.brain.tick_count), "fps": f"{fps:.0f}",
        "ms": f"brain {t['tick'] * 1e3:.1f}, game {t['game'] * 1e3:.1f}, draw {draw_ms:.1f}",
        "keys": "arrows / WASD move, Space howls",
    }


def run(args: argparse.Namespace) -> dict:
    """Play the game; returns the final summary (also printed)."""
    if args.headless:
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    try:
        import pygame
    except ImportError:
        raise SystemExit("game: error: the game needs pygame (pip install pygame-ce, or the 'viewer' extra)") \
            from None
    from examples.game.game import Game
    from examples.game.render import Renderer

    script = load_script(args.script) if args.script else []
    frames = args.frames
    if frames is None and args.headless:
        frames = (script[-1][0] + 60) if script else 300
    pygame.init()
    screen = None if args.headless else pygame.display.set_mode(args.size)
    if screen is not None:
        pygame.display.set_caption("warp-goap: the wolf")
    game = Game(args.agents, guards=args.guards, seed=args.seed, respawn_ticks=args.respawn_ticks,
                device=args.device, capture=args.capture)
    renderer = Renderer(game, args.size)
    pilot = None
    if args.autopilot:
        from examples.game.autopilot import Autopilot

        pilot = Autopilot(game)
    keymap = {getattr(pygame, name): key for key, names in PYGAME_KEYS.items() for name in names}
    clock = pygame.time.Clock()
    cursor, frame, fps, draw_ms, running = 0, 0, 0.0, 0.0, True
    last = time.perf_counter()
    while running and (frames is None or frame < frames):
        cursor = feed(game, script, cursor, frame)
        if pilot is not None:
            pilot.play(frame)
        if screen is not None:
            for e in pygame.event.get():
                if e.type == pygame.QUIT or (e.type == pygame.KEYDOWN and e.key == pygame.K_ESCAPE):
                    running = False
                elif e.type in (pygame.KEYDOWN, pygame.KEYUP) and e.key in keymap:
                    game.press(keymap[e.key], e.type == pygame.KEYDOWN)
        game.frame()
        if screen is not None or not args.no_draw:
            t0 = time.perf_counter()
            surf = renderer.draw(hud_lines(game, fps, draw_ms))
            if screen is not None:
                screen.blit(surf, (0, 0))
                pygame.display.flip()
            draw_ms = (time.perf_counter() - t0) * 1e3
        now = time.perf_counter()
        fps = 0.9 * fps + 0.1 / max(now - last, 1e-6) if frame else 1.0 / max(now - last, 1e-6)
        last = now
        frame += 1
        if screen is not None:
            clock.tick(args.fps)
    if args.screenshot:
        try:
            pygame.image.save(renderer.draw(hud_lines(game, fps, draw_ms)), str(args.screenshot))
        except (pygame.error, OSError) as e:
            raise ScriptError(f"--screenshot {args.screenshot}: cannot save the image: {e}") from None
    if args.record:
        from goap.files import write_atomic

        try:
            write_atomic(args.record, script_text(game.inputs))
        except OSError as e:
            raise ScriptError(f"--record {args.record}: cannot write: {e}") from None
    st = game.state
    summary = {"frames": frame, "agents": args.agents, "score": st.score, "caught": st.caught, "bitten": st.bitten,
               "respawned": st.respawned, "flee_starts": st.flee_starts, "interrupted": st.interrupted,
               "goals_reached": st.goals_reached, "state_hash": game.state_hash()}
    print(", ".join(f"{k} {v}" for k, v in summary.items()))
    pygame.quit()
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m examples.game", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=2000)
    ap.add_argument("--guards", type=float, default=0.04, help="fraction of the agents that are guards")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--headless", action="store_true", help="no window (SDL's dummy video driver)")
    ap.add_argument("--script", help="a JSON list of timed inputs to play")
    ap.add_argument("--frames", type=int, default=None, help="stop after N frames (headless default: the "
                                                                  "script's last input + 60, else 300)")
    ap.add_argument("--screenshot", help="save the last frame as an image (PNG)")
    ap.add_argument("--autopilot", action="store_true", help="the wolf plays itself (examples.game.autopilot)")
    ap.add_argument("--record", help="write the inputs played (keys, script, autopilot) as a script")
    ap.add_argument("--no-draw", action="store_true", help="headless: skip drawing the frames")
    ap.add_argument("--size", type=parse_size, default=(1280, 720), help="window size WIDTHxHEIGHT")
    ap.add_argument("--fps", type=int, default=30, help="frame cap of the window")
    ap.add_argument("--respawn-ticks", type=int, default=60)
    ap.add_argument("--device", default=None)
    ap.add_argument("--capture", action="store_true", help="record the brain's tick as graphs and replay them")
    args = ap.parse_args(argv)
    if not 2 <= args.agents <= 1_000_000:
        ap.error(f"--agents must be in 2..1000000, got {args.agents}")
    if args.frames is not None and args.frames < 0:
        ap.error(f"--frames must be >= 0, got {args.frames}")
    if not 0.0 <= args.guards <= 1.0:
        ap.error(f"--guards must be in 0..1, got {args.guards}")
    if args.respawn_ticks < 1:
        ap.error(f"--respawn-ticks must be >= 1, got {args.respawn_ticks}")
    if args.fps < 1:
        ap.error(f"--fps must be >= 1, got {args.fps}")
    if args.record is not None:
        try:
            check_output_file(args.record, "--record")
        except ValueError as e:
            ap.error(str(e))
    if args.screenshot is not None:  # refused before the run, not after it
        if Path(args.screenshot).suffix.lower() not in IMAGE_TYPES:
            ap.error(f"--screenshot {args.screenshot}: the image type comes from the name: "
                     f"{', '.join(IMAGE_TYPES)}")
        try:
            check_output_file(args.screenshot, "--screenshot")
        except ValueError as e:
            ap.error(str(e))
    try:
        run(args)
    except ScriptError as e:
        print(f"game: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

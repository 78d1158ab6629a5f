"""The wolf game's frame time, headless and window-sized, split into the brain's tick, the game and drawing.

    python benchmarks/game.py                                 # 2,000 agents, 1280x720, the demo script, 300 frames
    python benchmarks/game.py --agents 10000 --frames 200 --capture

Each frame is what the window does: the game's kernels before the tick (the wolf's move, who is near it, the
commands on device lists), ``brain.tick()``, the game's kernels after it (catches, counts, one small read),
then drawing the frame into a window-sized surface (map, agents, wolf, HUD). Wall time depends on what else the
machine runs; the process's CPU time a frame (all its threads) much less. The target is a mean frame of at most
33 ms (30 fps) at 2,000 agents on this 2-core CPU. Means, medians and p95 leave out the first ``--warmup``
frames. Results go to benchmarks/results/game_<agents>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

import numpy as np  # noqa: E402
import pygame  # noqa: E402

from examples.game.game import Game  # noqa: E402
from examples.game.main import feed, hud_lines, load_script, parse_size  # noqa: E402
from examples.game.render import Renderer  # noqa: E402


def _stats(values: list[float]) -> dict[str, float]:
    v = np.asarray(values, dtype=np.float64)
    if not len(v):
        return {"mean": 0.0, "median": 0.0, "p95": 0.0}
    return {"mean": float(v.mean()), "median": float(np.median(v)), "p95": float(np.percentile(v, 95))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=2000)
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--size", type=parse_size, default=(1280, 720))
    ap.add_argument("--script", default=str(ROOT / "examples" / "game" / "demo.json"))
    ap.add_argument("--device", default=None)
    ap.add_argument("--capture", action="store_true")
    ap.add_argument("--out", default=None, help="JSON path (default benchmarks/results/game_<agents>.json)")
    args = ap.parse_args()
    if args.agents < 2 or args.frames < 1 or not 0 <= args.warmup < args.frames:
        ap.error("need --agents >= 2, --frames >= 1 and 0 <= --warmup < --frames")

    pygame.init()
    script = load_script(args.script)
    game = Game(args.agents, seed=1, device=args.device, capture=args.capture)
    renderer = Renderer(game, args.size)
    tick, play, draw, frame, host, cpu = [], [], [], [], [], []
    cursor, fps, draw_ms = 0, 0.0, 0.0
    for f in range(args.frames):
        c0 = time.process_time()
        t0 = time.perf_counter()
        cursor = feed(game, script, cursor, f)
        game.frame()
        t1 = time.perf_counter()
        renderer.draw(hud_lines(game, fps, draw_ms))
        t2 = time.perf_counter()
        draw_ms = (t2 - t1) * 1e3
        fps = 1.0 / max(t2 - t0, 1e-9)
        tick.append(game.timing["tick"] * 1e3)
        play.append(game.timing["game"] * 1e3)
        draw.append(draw_ms)
        frame.append((t2 - t0) * 1e3)
        host.append(game.brain.host_bytes_per_tick)
        cpu.append((time.process_time() - c0) * 1e3)
    k = args.warmup
    st = game.state
    result = {
        "agents": args.agents, "frames": args.frames, "warmup": k, "size": list(args.size),
        "device": str(game.brain.device), "capture": args.capture, "script": Path(args.script).name,
        "frame_ms": _stats(frame[k:]), "frame_cpu_ms": _stats(cpu[k:]), "brain_tick_ms": _stats(tick[k:]),
        "game_kernels_ms": _stats(play[k:]), "draw_ms": _stats(draw[k:]),
        "brain_host_bytes_per_tick": int(np.median(host[k:])),
        "fps_mean": 1000.0 / max(_stats(frame[k:])["mean"], 1e-9),
        "game": {"score": st.score, "caught": st.caught, "bitten": st.bitten, "flee_starts": st.flee_starts,
                 "goals_reached": st.goals_reached, "state_hash": game.state_hash()},
        "meta": {"python": platform.python_version(), "machine": platform.machine(), "processor":
                 platform.processor() or None, "cpus": os.cpu_count(), "load_average": os.getloadavg(),
                 "pygame": pygame.version.ver, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
    }
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"game_{args.agents}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.replace(out)
    r = result
    print(f"{args.agents} agents, {args.frames} frames at {args.size[0]}x{args.size[1]} (load average "
          f"{os.getloadavg()[0]:.1f}): mean frame {r['frame_ms']['mean']:.2f} ms ({r['fps_mean']:.0f} fps), "
          f"p95 {r['frame_ms']['p95']:.2f} ms; CPU time of the process a frame (all its threads, whatever the "
          f"other load) mean {r['frame_cpu_ms']['mean']:.2f} ms")
    print(f"medians: brain tick {r['brain_tick_ms']['median']:.2f} ms + game kernels "
          f"{r['game_kernels_ms']['median']:.2f} ms + drawing {r['draw_ms']['median']:.2f} ms; means "
          f"{r['brain_tick_ms']['mean']:.2f} + {r['game_kernels_ms']['mean']:.2f} + {r['draw_ms']['mean']:.2f}")
    print(f"the brain read {r['brain_host_bytes_per_tick']} bytes a tick from the device (median; the game's own "
          f"read is {4 * (len(game._stats_init))} bytes a frame, drawing reads positions, actions and alive flags)")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    pygame.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The viewer's frame time, headless, split into the tick, the snapshot and drawing, written as JSON.

    python benchmarks/viewer.py                                     # village, 10,000 agents, 60 frames
    python benchmarks/viewer.py --world soldier --agents 2000 --frames 120
    python benchmarks/viewer.py --world tests.custom_world:LampWorld --agents 5000
    python benchmarks/viewer.py --world soldier --why --graph        # the why panel (W) and goal graph (G) open

Two passes over one viewer: first ``--frames`` frames of one tick each (what ``goap view --headless`` does and
the "mean frame" it prints: tick + snapshot + draw), then ``--frames`` frames paused, which draw the last
snapshot again and so time drawing alone, with no tick competing for the cores. The viewer's own cost per tick
is snapshot + draw; the target is a mean frame <= 33 ms at 10,000 village agents on this 2-core CPU. Medians
and means leave out the first ``--warmup`` frames. ``--why`` and ``--graph`` open the why panel (the selected
agent's explanation, built into every snapshot) and the goal graph overlay, the same frame budget applying.
Results go to benchmarks/results/viewer_<world>_<agents>[_why][_graph].json.
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

from goap.registry import load_world  # noqa: E402
from goap.runtime import Brain  # noqa: E402
from viewer.app import App  # noqa: E402


def _stats(values: list[float]) -> dict[str, float]:
    v = np.asarray(values, dtype=np.float64)
    if not len(v):
        return {"mean": 0.0, "median": 0.0, "p95": 0.0}
    return {"mean": float(v.mean()), "median": float(np.median(v)), "p95": float(np.percentile(v, 95))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", default="village")
    ap.add_argument("--agents", type=int, default=10000)
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--size", default="1280x800")
    ap.add_argument("--select", type=int, default=5, help="the inspected agent (-1: none)")
    ap.add_argument("--device", default=None)
    ap.add_argument("--why", action="store_true", help="with the why panel open (key W)")
    ap.add_argument("--graph", action="store_true", help="with the goal graph overlay open (key G)")
    ap.add_argument("--out", default=None, help="JSON path (default benchmarks/results/viewer_<world>_<agents>.json)")
    args = ap.parse_args()
    w, h = (int(x) for x in args.size.lower().split("x"))

    world = load_world(args.world)
    from goap.world import default_plan_budget

    brain = Brain(world.domain, args.agents, world=world, device=args.device,
                  plan_budget=default_plan_budget(world, args.agents), seed=0)
    app = App(brain, world, size=(w, h), headless=True, selected=args.select if args.select >= 0 else None)
    if args.why:
        app.toggle_why()
    if args.graph:
        app.toggle_graph()
    try:
        for _ in range(args.frames):
            app.frame()
        k = args.warmup
        ticking = {
            "frame_ms": _stats(app.frame_times[k:]),
            "tick_ms": _stats([s - n for s, n in zip(app.sim_times[k:], app.snapshot_times[k:], strict=True)]),
            "snapshot_ms": _stats(app.snapshot_times[k:]),
            "draw_ms": _stats(app.draw_times[k:]),
        }
        app.set_paused(True)
        start = len(app.draw_times)
        cpu: list[float] = []  # this thread's CPU time per paused frame: drawing's cost however loaded the machine is
        t0 = time.perf_counter()
        for _ in range(args.frames):
            c = time.thread_time()
            app.frame()
            cpu.append((time.thread_time() - c) * 1000.0)
        paused_s = time.perf_counter() - t0
        draw_alone = _stats(app.draw_times[start + k:])
        snap_cpu = []
        for _ in range(max(10, args.frames // 3)):
            c = time.thread_time()
            app.sim.refresh()
            snap_cpu.append((time.thread_time() - c) * 1000.0)
    finally:
        app.close()
    result = {
        "world": args.world, "agents": args.agents, "frames": args.frames, "warmup": args.warmup,
        "size": [w, h], "selected": args.select, "device": str(brain.device), "why_panel": args.why,
        "graph_overlay": args.graph,
        "ticking": ticking, "draw_alone_ms": draw_alone, "paused_frames_per_second": args.frames / paused_s,
        "draw_alone_cpu_ms": _stats(cpu[k:]), "snapshot_cpu_ms": _stats(snap_cpu),
        "viewer_ms_per_tick": ticking["snapshot_ms"]["median"] + draw_alone["median"],
        "viewer_cpu_ms_per_tick": float(np.median(snap_cpu)) + _stats(cpu[k:])["median"],
        "meta": {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
                 "load_average": os.getloadavg(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
    }
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / (
        f"viewer_{args.world.replace(':', '_').replace('.', '_')}_{args.agents}"
        f"{'_why' if args.why else ''}{'_graph' if args.graph else ''}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.replace(out)
    t = ticking
    print(f"{args.world}: {args.agents} agents, {args.frames} frames ticking + {args.frames} paused "
          f"(load average {os.getloadavg()[0]:.1f})")
    print(f"ticking: mean frame {t['frame_ms']['mean']:.2f} ms (median {t['frame_ms']['median']:.2f}) = tick "
          f"{t['tick_ms']['median']:.2f} + snapshot {t['snapshot_ms']['median']:.2f} + draw "
          f"{t['draw_ms']['median']:.2f} (medians)")
    print(f"drawing alone (paused): median {draw_alone['median']:.2f} ms, p95 {draw_alone['p95']:.2f} ms; "
          f"the viewer's own cost per tick {result['viewer_ms_per_tick']:.2f} ms")
    print(f"CPU time of the viewer's thread (independent of other load): draw "
          f"{result['draw_alone_cpu_ms']['median']:.2f} ms + snapshot {result['snapshot_cpu_ms']['median']:.2f} ms = "
          f"{result['viewer_cpu_ms_per_tick']:.2f} ms")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

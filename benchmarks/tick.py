"""Milliseconds per tick of a world at several agent counts, split by pipeline stage, written as JSON.

    python benchmarks/tick.py                         # village at 1,000 / 10,000 / 100,000 agents
    python benchmarks/tick.py --world soldier --agents 1000,10000 --ticks 200

Steady state: the first --warmup ticks (start-up, the rush of first plans) are left out; mean and p95 over
the rest. Target on a 2-core CPU: 10,000 village agents under 16.7 ms a tick (60 ticks per second).
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

from goap.runtime import STAGES, Brain  # noqa: E402
from worlds import make_world  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", default="village")
    ap.add_argument("--agents", default="1000,10000,100000")
    ap.add_argument("--ticks", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=60)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--plan-budget", type=int, default=None, help="default: a tenth of the agents per tick")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    out = Path(args.out or ROOT / f"benchmarks/results/tick_{args.world}.json")

    rows = []
    print(f"{'agents':>8s} {'ms/tick':>8s} {'p95':>8s} " + " ".join(f"{s:>8s}" for s in STAGES) + "  plans/tick")
    for n in (int(x) for x in args.agents.split(",")):
        world = make_world(args.world)
        budget = args.plan_budget or max(1, n // 10)
        brain = Brain(world.domain, n, world=world, device=args.device, plan_budget=budget, seed=1)
        t0 = time.perf_counter()
        for _ in range(args.ticks):
            brain.tick()
        wall = time.perf_counter() - t0
        s = brain.summary(warmup=args.warmup)
        row = {"agents": n, "plan_budget": budget, "ticks": args.ticks, "warmup": args.warmup,
               "wall_seconds": wall, "ms_per_tick": s["ms_per_tick"], "stages": s["stages"],
               "plans_per_tick": s["counters"].get("plans_made", 0) / args.ticks, "counters": s["counters"],
               "score": world.score()}
        rows.append(row)
        print(f"{n:>8d} {s['ms_per_tick']['mean']:>8.2f} {s['ms_per_tick']['p95']:>8.2f} "
              + " ".join(f"{s['stages'][st]['mean']:>8.2f}" for st in STAGES) + f"  {row['plans_per_tick']:.0f}",
              flush=True)
    result = {"benchmark": "tick", "world": args.world, "device": args.device,
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform()}, "rows": rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=float) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

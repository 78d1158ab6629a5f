"""What explaining one agent costs in a large brain: milliseconds and bytes copied, written as JSON.

    python benchmarks/explain_cost.py                                 # soldier, 100,000 agents, 20 ticks
    python benchmarks/explain_cost.py --world village --agents 10000

`goap.explain.explain_agent` copies one row of each per-agent array (and, for a waiting agent, runs one device
reduction over the agents for its place in the plan queue, one int back), then works in Python on that row alone,
so its cost should not grow with the brain. This runs a world for ``--ticks`` ticks, then explains ``--samples``
agents spread over the brain (waiting ones and acting ones alike), timing each call, and reports the median and
p95 milliseconds, the bytes each call copied, how that compares with one copy of every per-agent array, and the
queue reduction alone. Results go to benchmarks/results/explain_cost_<world>_<agents>.json.
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

import numpy as np  # noqa: E402

from goap.explain import explain_agent  # noqa: E402
from goap.kernels.stats import queue_position  # noqa: E402
from goap.registry import load_world  # noqa: E402
from goap.runtime import Brain  # noqa: E402
from goap.world import default_plan_budget  # noqa: E402


def _stats(values: list[float]) -> dict[str, float]:
    v = np.asarray(values, dtype=np.float64)
    return {"median": float(np.median(v)), "p95": float(np.percentile(v, 95)), "max": float(v.max()),
            "mean": float(v.mean())} if len(v) else {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", default="soldier")
    ap.add_argument("--agents", type=int, default=100_000)
    ap.add_argument("--ticks", type=int, default=20)
    ap.add_argument("--samples", type=int, default=60)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--device", default=None)
    ap.add_argument("--plan-budget", type=int, default=None,
                    help="default: the world's (goap.world.default_plan_budget); a small one leaves agents waiting")
    ap.add_argument("--out", default=None, help="JSON path (default benchmarks/results/explain_cost_<world>_<n>.json)")
    args = ap.parse_args()

    world = load_world(args.world)
    t0 = time.perf_counter()
    brain = Brain(world.domain, args.agents, world=world, device=args.device,
                  plan_budget=args.plan_budget or default_plan_budget(world, args.agents), seed=args.seed)
    for _ in range(args.ticks):
        brain.tick()
    setup_s = time.perf_counter() - t0
    explain_agent(brain, 0)  # the first call builds the heuristic's tables once per domain: not what is measured
    rng = np.random.default_rng(args.seed)
    waiting = np.flatnonzero(brain.needs_plan.numpy() & (brain.goal.numpy() >= 0))
    picks = list(rng.choice(args.agents, size=min(args.samples, args.agents), replace=False))
    picks += list(waiting[: max(1, args.samples // 4)])
    times, sizes, idle = [], set(), {}
    for i in picks:
        t = time.perf_counter()
        e = explain_agent(brain, int(i))
        times.append((time.perf_counter() - t) * 1000.0)
        sizes.add(e.bytes_copied)
        idle[str(e.idle)] = idle.get(str(e.idle), 0) + 1
    quiet = [t for t, i in zip(times, picks, strict=True) if int(i) not in set(waiting.tolist())]
    queue_ms = []
    for i in waiting[:10]:
        t = time.perf_counter()
        queue_position(brain, int(i))
        queue_ms.append((time.perf_counter() - t) * 1000.0)
    whole = sum(arr.numpy().nbytes for _, arr in brain.arrays.items())
    result = {
        "world": args.world, "agents": args.agents, "ticks": args.ticks, "samples": len(picks),
        "plan_budget": brain.plan_budget,
        "device": str(brain.device), "setup_seconds": setup_s,
        "explain_ms": _stats(times), "explain_ms_not_waiting": _stats(quiet), "queue_position_ms": _stats(queue_ms),
        "bytes_copied_per_call": sorted(sizes), "bytes_of_all_agent_arrays": whole,
        "explained_by_idle_reason": idle,
        "meta": {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
                 "load_average": os.getloadavg(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
    }
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / (
        f"explain_cost_{args.world.replace(':', '_').replace('.', '_')}_{args.agents}"
        f"{'_budget' + str(args.plan_budget) if args.plan_budget else ''}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.replace(out)
    e, q = result["explain_ms"], result["queue_position_ms"]
    print(f"{args.world}: {args.agents} agents after {args.ticks} ticks, {len(picks)} agents explained "
          f"(load average {os.getloadavg()[0]:.1f})")
    print(f"explain_agent: median {e['median']:.2f} ms, p95 {e['p95']:.2f} ms, max {e['max']:.2f} ms; "
          f"{', '.join(map(str, sorted(sizes)))} bytes copied per call (all agent arrays: {whole:,} bytes)")
    if q:
        print(f"of which, for a waiting agent, its place in the queue: median {q['median']:.2f} ms")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Planning throughput: reference vs Warp A* on the two worlds and the random-domain family.

For each (domain, planner, batch) one row: plans/s (median of --repeats timed calls, after a warm-up call),
median and p99 expansions, bytes of scratch per agent, and agreement with the reference (statuses and costs
equal on the problems the reference solved, up to --ref-sample of them). The reference is timed on a sample
only (it would take hours on 100,000 village problems); its plans/s is per problem and does not depend on N.

    python benchmarks/plan_throughput.py                       # full run, writes benchmarks/results/...
    python benchmarks/plan_throughput.py --quick               # 1,000-problem batches only
    python benchmarks/plan_throughput.py --device cuda:0       # on a GPU

Also reports the Warp planner's start-up: the first load of each kernel module in a fresh kernel cache
(compile) and in a warm one (cached), measured in subprocesses.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from goap import load_domain  # noqa: E402
from goap.bench.random_domains import random_domain, random_problems  # noqa: E402
from goap.planners.reference import ReferencePlanner  # noqa: E402
from goap.planners.warp_astar import WarpAStarPlanner  # noqa: E402


def domains(facts: list[int]) -> list[tuple[str, object]]:
    out = [("soldier", load_domain(ROOT / "worlds/soldier/domain.toml")),
           ("village", load_domain(ROOT / "worlds/village/domain.toml"))]
    out += [(f"random-{n}", random_domain(seed=n, n_facts=n)) for n in facts]
    return out


def timed(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def startup(device: str) -> dict:
    """Seconds to create a planner and load its kernel, in a fresh process: cold cache, then warm."""
    village = str(ROOT / "worlds/village/domain.toml")
    code = (
        f"import time,sys; sys.path.insert(0, {str(ROOT)!r}); t=time.perf_counter();"
        "from goap import load_domain; from goap.planners.warp_astar import WarpAStarPlanner;"
        f"p=WarpAStarPlanner(load_domain({village!r}), device={device!r}); p.load(); print(time.perf_counter()-t)"
    )
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, WARP_CACHE_PATH=cache)
        runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True) for _ in range(2)]
    for r in runs:
        if r.returncode != 0:
            raise RuntimeError(r.stderr)
    cold, warm = (float(r.stdout.strip().splitlines()[-1]) for r in runs)
    return {"cold_seconds": round(cold, 3), "cached_seconds": round(warm, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", default="1000,10000,100000")
    ap.add_argument("--facts", default="16,32,64,128,256")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ref-sample", type=int, default=300, help="problems the reference plans per domain")
    ap.add_argument("--max-nodes", type=int, default=1024)
    ap.add_argument("--quick", action="store_true", help="batches of 1,000 only, one repeat")
    ap.add_argument("--no-startup", action="store_true", help="skip the cold/cached start-up measurement")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/plan_throughput.json"))
    args = ap.parse_args()
    batches = [1000] if args.quick else [int(x) for x in args.batches.split(",")]
    repeats = 1 if args.quick else args.repeats
    facts = [int(x) for x in args.facts.split(",")]

    rows = []
    header = f"{'domain':12s} {'planner':9s} {'batch':>7s} {'plans/s':>10s} {'x ref':>7s} {'exp p50':>7s} " \
             f"{'exp p99':>7s} {'B/agent':>8s} {'agree':>7s}  statuses"
    print(header)
    print("-" * len(header))
    for name, domain in domains(facts):
        ref = ReferencePlanner(domain, max_nodes=args.max_nodes)
        fast = WarpAStarPlanner(ref.tables, max_nodes=args.max_nodes, device=args.device)
        fast.load()
        problems = random_problems(domain, max(batches), seed=7, walk=8)
        states_all = ref.tables.pack_states(problems.values)
        k = min(args.ref_sample, len(states_all))
        ref_seconds, ref_batch = timed(lambda r=ref, s=states_all[:k], g=problems.goals[:k]: r.plan(s, g), 1)
        ref_rate = k / ref_seconds
        row = {
            "domain": name, "planner": "reference", "batch": k, "plans_per_second": round(ref_rate, 1),
            "expanded_p50": float(np.median(ref_batch.expanded)),
            "expanded_p99": float(np.percentile(ref_batch.expanded, 99)),
            "bytes_per_agent": None, "agreement": 1.0, "words": ref.tables.n_words,
            "facts": len(domain.facts), "actions": len(domain.actions),
            "statuses": ref_batch.counts(),
        }
        rows.append(row)
        _print(row, ref_rate)
        for n in batches:
            states, goals = states_all[:n], problems.goals[:n]
            fast.plan(states[:64], goals[:64])  # warm-up: scratch allocation, thread pool
            seconds, batch = timed(lambda f=fast, s=states, g=goals: f.plan(s, g), repeats)
            same = (batch.status[:k] == ref_batch.status) & (
                (batch.cost[:k] == ref_batch.cost) | (np.isnan(batch.cost[:k]) & np.isnan(ref_batch.cost))
            )
            row = {
                "domain": name, "planner": "warp", "batch": n, "plans_per_second": round(n / seconds, 1),
                "expanded_p50": float(np.median(batch.expanded)),
                "expanded_p99": float(np.percentile(batch.expanded, 99)),
                "bytes_per_agent": fast.bytes_per_agent(), "agreement": float(same.mean()),
                "words": ref.tables.n_words, "facts": len(domain.facts), "actions": len(domain.actions),
                "statuses": batch.counts(),
            }
            rows.append(row)
            _print(row, ref_rate)
        fast.close()

    result = {
        "benchmark": "plan_throughput",
        "device": args.device,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "max_nodes": args.max_nodes,
        "repeats": repeats,
        "rows": rows,
    }
    if not args.no_startup:
        result["startup"] = startup(args.device)
        print(f"\nwarp start-up (create planner + load kernel, fresh process): "
              f"cold cache {result['startup']['cold_seconds']} s, cached {result['startup']['cached_seconds']} s")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


def _print(row: dict, ref_rate: float) -> None:
    ratio = row["plans_per_second"] / ref_rate
    b = "-" if row["bytes_per_agent"] is None else f"{row['bytes_per_agent']:,}"
    statuses = " ".join(f"{k}={v}" for k, v in row["statuses"].items())
    print(f"{row['domain']:12s} {row['planner']:9s} {row['batch']:>7d} {row['plans_per_second']:>10,.0f} "
          f"{ratio:>7.1f} {row['expanded_p50']:>7.0f} {row['expanded_p99']:>7.0f} {b:>8s} "
          f"{row['agreement']:>7.1%}  {statuses}", flush=True)


if __name__ == "__main__":
    main()

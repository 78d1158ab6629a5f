"""Each distinct query planned once: throughput of `DedupingPlanner` and its dedupe and cache-hit rates in the worlds.

Part 1, batches (soldier domain, random start states, random goals, per-agent cost rows jittered so that every
query of the pool is distinct): a batch of --agents rows drawn from --distinct queries, against a batch of
--agents all-distinct queries from the same pool, in one run. Plans/s is rows / median seconds of the calls of
--repeats rounds after a warm-up call, every case timed in each round (a fast case several times; see
`timed_interleaved`), so that a drifting load on a shared machine falls on all cases alike. Rows:

* ``plain/all-distinct``: the inner planner alone (the baseline of the ratio);
* ``dedupe/all-distinct``: the wrapper where there is nothing to share (its overhead);
* ``plain/few-distinct``, ``dedupe/few-distinct``: the batch drawn from --distinct queries;
* ``dedupe+cache/few-distinct``: the same batch again through a warm plan cache (every query a hit).

Every wrapped result is compared field by field with the inner planner's on the same batch.

Part 2, worlds: --ticks ticks of each world through `goap.runtime.Brain` with and without the wrapper (same seed:
the runs must end in the same state hash), the dedupe rate (share of requested plans not searched because an
equal query came in the same tick), the cache hit rate, and the plan stage's mean ms.

    python benchmarks/dedupe.py                      # writes benchmarks/results/dedupe.json
    python benchmarks/dedupe.py --quick              # 20,000 agents, fewer ticks
    python benchmarks/dedupe.py --device cuda:0
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from goap import load_domain  # noqa: E402
from goap.encoding import encode  # noqa: E402
from goap.planners.base import PlanBatch  # noqa: E402
from goap.planners.dedupe import DedupingPlanner  # noqa: E402
from goap.planners.warp_astar import WarpAStarPlanner  # noqa: E402

FIELDS = ("status", "cost", "length", "actions", "expanded", "level")


def query_pool(tables, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` distinct queries: uniform random fact values, random goals, costs jittered by up to 25% per action."""
    rng = np.random.default_rng(seed)
    facts = tables.domain.facts
    values = np.stack([rng.integers(f.min, f.max + 1, n) for f in facts], axis=1)
    states = tables.pack_states(values)
    goals = rng.integers(0, tables.goals.n_goals, n).astype(np.int32)
    costs = (tables.cost[None].astype(np.float64) * (1 + 0.25 * rng.random((n, tables.n_actions)))).astype(np.float32)
    keys = np.concatenate([states.view(np.uint8), goals[:, None].view(np.uint8), costs.view(np.uint8)], axis=1)
    assert len(np.unique(keys, axis=0)) == n, "query pool has duplicates"
    return states, goals, costs


def timed_interleaved(fns: list, repeats: int) -> list[tuple[float, float]]:
    """Median wall and CPU seconds (all threads of the process) of each of ``fns``, measured in turns.

    The machine is shared, so its load drifts: each round times every case (a fast case several times, about a
    quarter of a second's worth), and a case's median comes from samples spread over the whole run, as its
    baseline's do. One warm-up call each first (kernel loads, scratch allocation).
    """
    calls = []
    for fn in fns:
        t0 = time.perf_counter()
        fn()
        calls.append(int(min(20, max(1, 0.25 // max(time.perf_counter() - t0, 1e-6)))))
    wall: list[list[float]] = [[] for _ in fns]
    cpu: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for k, fn in enumerate(fns):
            for _ in range(calls[k]):
                t0, c0 = time.perf_counter(), time.process_time()
                fn()
                wall[k].append(time.perf_counter() - t0)
                cpu[k].append(time.process_time() - c0)
    return [(statistics.median(w), statistics.median(c)) for w, c in zip(wall, cpu, strict=True)]


def same(a: PlanBatch, b: PlanBatch) -> bool:
    for f in FIELDS:
        x, y = getattr(a, f, None), getattr(b, f, None)
        if x is None and y is None:
            continue
        if not np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True):
            return False
    return True


def batches(args) -> tuple[list[dict], dict]:
    tables = encode(load_domain(ROOT / "worlds/soldier/domain.toml"))
    n = args.agents
    states, goals, costs = query_pool(tables, n, seed=args.seed)
    pick = np.random.default_rng(args.seed + 1).integers(0, args.distinct, n)
    few = (states[pick], goals[pick], costs[pick])
    every = (states, goals, costs)
    options = {"heuristic": args.heuristic} if args.heuristic else {}
    inner = WarpAStarPlanner(tables, device=args.device, **options)
    dedupe = DedupingPlanner(inner)
    cached = DedupingPlanner(inner, cache_capacity=args.cache)
    L = inner.max_plan_length

    def run(planner, batch):
        out = PlanBatch.empty(n, L)
        return lambda: planner.plan(*batch, out=out)

    reference = {"all-distinct": inner.plan(*every), "few-distinct": inner.plan(*few)}
    cases = [("plain", "all-distinct", inner, every), ("dedupe", "all-distinct", dedupe, every),
             ("plain", "few-distinct", inner, few), ("dedupe", "few-distinct", dedupe, few),
             ("dedupe+cache", "few-distinct", cached, few)]
    timings = timed_interleaved([run(planner, batch) for _, _, planner, batch in cases], args.repeats)
    rows = []
    for (name, label, planner, batch), (seconds, cpu) in zip(cases, timings, strict=True):
        if isinstance(planner, DedupingPlanner):
            planner.reset_stats()
        result = planner.plan(*batch)  # one more call, for the results and that call's counters
        row = {"planner": name, "batch": label, "agents": n,
               "distinct": args.distinct if label == "few-distinct" else n,
               "seconds": seconds, "cpu_seconds": cpu, "plans_per_second": n / seconds,
               "plans_per_cpu_second": n / cpu if cpu > 0 else None,
               "equal_to_plain": same(result, reference[label]),
               "statuses": reference[label].counts(),
               "expanded_mean": float(np.mean(np.asarray(reference[label].expanded)))}
        if isinstance(planner, DedupingPlanner):
            row["stats"] = planner.stats()
        rows.append(row)
        print(f"  {name:>13s} {label:>13s}: {n / seconds:>13,.0f} plans/s ({seconds * 1e3:8.2f} ms wall,"
              f" {cpu * 1e3:8.2f} ms CPU)  equal={row['equal_to_plain']}", flush=True)
    info = {"planner": inner.name, "heuristic": getattr(inner, "heuristic", None), "max_nodes": inner.max_nodes,
            "threads": getattr(inner, "threads", None)}
    inner.close()
    return rows, info


def worlds(args) -> list[dict]:
    from goap.runtime import Brain
    from worlds import make_world

    takes_dedupe = "dedupe" in inspect.signature(Brain.__init__).parameters
    rows = []
    for world_name in ("soldier", "village"):
        runs = {}
        for mode in ("plain", "dedupe", "dedupe+cache"):
            world = make_world(world_name)
            budget = max(256, args.world_agents // 10)
            options = {}
            if takes_dedupe:
                options = {"dedupe": mode != "plain", "plan_cache": args.cache if mode == "dedupe+cache" else 0}
            brain = Brain(world.domain, args.world_agents, world=world, device=args.device, plan_budget=budget,
                          seed=args.seed, **options)
            if not takes_dedupe and mode != "plain":  # until the Brain takes the options: wrap its planner
                brain.planner = DedupingPlanner(brain.planner, args.cache if mode == "dedupe+cache" else 0)
            for _ in range(args.ticks):
                brain.tick()
            s = brain.summary(warmup=min(args.warmup, args.ticks - 1))
            row = {"world": world_name, "mode": mode, "agents": args.world_agents, "ticks": args.ticks,
                   "plan_budget": budget, "plan_ms_mean": s["stages"]["plan"]["mean"],
                   "search_ms_mean": s.get("search", s["stages"]["plan"])["mean"],
                   "ms_per_tick_mean": s["ms_per_tick"]["mean"],
                   "plans_requested": s["counters"].get("plans_requested", 0), "state_hash": brain.state_hash()}
            if isinstance(brain.planner, DedupingPlanner):
                row["stats"] = brain.planner.stats()
            runs[mode] = row
            rows.append(row)
            st = row.get("stats", {})
            print(f"  {world_name:>8s} {mode:>13s}: plan stage {row['plan_ms_mean']:7.2f} ms/tick"
                  f" (search {row['search_ms_mean']:7.2f})"
                  + (f"  dedupe rate {st['dedupe_rate']:.3f}  hit rate {st['hit_rate']:.3f}"
                     f"  searched {st['searched']}/{st['requests']}" if st else ""), flush=True)
        for mode in ("dedupe", "dedupe+cache"):
            runs[mode]["same_run_as_plain"] = runs[mode]["state_hash"] == runs["plain"]["state_hash"]
            print(f"  {world_name:>8s} {mode:>13s}: same run as plain: {runs[mode]['same_run_as_plain']}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=100_000)
    ap.add_argument("--distinct", type=int, default=500)
    ap.add_argument("--cache", type=int, default=4096, help="plan cache entries")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--world-agents", type=int, default=10_000)
    ap.add_argument("--ticks", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--heuristic", default=None, help="the inner planner's heuristic (default: its default)")
    ap.add_argument("--quick", action="store_true", help="20,000 agents, 2,000 in the worlds, 60 ticks")
    ap.add_argument("--skip-worlds", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/dedupe.json"))
    args = ap.parse_args()
    if args.quick:
        args.agents, args.world_agents, args.ticks, args.repeats = 20_000, 2_000, 60, 3

    load_before = os.getloadavg()  # the machine is shared: how busy it was, for reading the timings
    print(f"batches of {args.agents:,} agents on {args.device} (load average {load_before[0]:.2f}):")
    batch_rows, inner_info = batches(args)
    by = {(r["planner"], r["batch"]): r for r in batch_rows}
    base = by[("plain", "all-distinct")]["plans_per_second"]
    ratios = {f"{p}/{b}": r["plans_per_second"] / base for (p, b), r in by.items()}
    base_cpu = by[("plain", "all-distinct")]["plans_per_cpu_second"]
    cpu_ratios = {f"{p}/{b}": r["plans_per_cpu_second"] / base_cpu for (p, b), r in by.items()}
    print(f"  dedupe few-distinct vs plain all-distinct: {ratios['dedupe/few-distinct']:.1f}x"
          f"  (with a warm cache {ratios['dedupe+cache/few-distinct']:.1f}x;"
          f" dedupe on all-distinct {ratios['dedupe/all-distinct']:.3f}x); per CPU-second"
          f" {cpu_ratios['dedupe/few-distinct']:.1f}x")
    world_rows = []
    if not args.skip_worlds:
        print(f"worlds, {args.world_agents:,} agents, {args.ticks} ticks:")
        world_rows = worlds(args)

    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             check=False).stdout.strip()
    except OSError:
        rev = ""
    result = {
        "benchmark": "dedupe", "device": args.device, "revision": rev,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_average_1min": {"start": load_before[0], "end": os.getloadavg()[0]}},
        "options": {k: v for k, v in vars(args).items() if k != "out"},
        "ratio_vs_plain_all_distinct": ratios, "cpu_ratio_vs_plain_all_distinct": cpu_ratios,
        "inner": inner_info, "batches": batch_rows, "worlds": world_rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=float) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

"""Stubborn-set pruning on the game worlds' domains: expansions and plans per second, with and without it.

    python benchmarks/pruning_worlds.py [--worlds soldier,village] [--queries 2000] [--out FILE]

Queries are `goap.bench.random_domains.random_problems` over each world's domain (random walks from its default
state, random goals), planned in one call by the Warp planner (one thread, the default heuristic), pruning off and
on, alternately, 3 timed calls each (medians). Writes JSON (default benchmarks/results/pruning_worlds.json).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from goap import load_domain
from goap.bench.random_domains import random_problems
from goap.planners.warp_astar import WarpAStarPlanner

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worlds", default="soldier,village")
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "pruning_worlds.json")
    args = ap.parse_args()
    rows = []
    for world in args.worlds.split(","):
        domain = load_domain(ROOT / "worlds" / world / "domain.toml")
        problems = random_problems(domain, args.queries, seed=7, walk=6)
        planners = {p: WarpAStarPlanner(domain, threads=1, pruning=p, device="cpu") for p in ("none", "stubborn")}
        states = planners["none"].tables.pack_states(problems.values)
        seconds: dict[str, list[float]] = {p: [] for p in planners}
        result = {}
        for p, planner in planners.items():
            planner.load()
            result[p] = planner.plan(states, problems.goals)  # warm-up, and the results compared
        for _ in range(args.repeats):
            for p, planner in planners.items():
                t0 = time.perf_counter()
                planner.plan(states, problems.goals)
                seconds[p].append(time.perf_counter() - t0)
        a, b = result["none"], result["stubborn"]
        same = bool(np.array_equal(a.status, b.status) and np.array_equal(a.cost, b.cost, equal_nan=True))
        row = {"world": world, "queries": args.queries, "same_statuses_and_costs": same}
        for p in planners:
            med = statistics.median(seconds[p])
            row[p] = {"expanded": int(result[p].expanded.sum()), "seconds": med, "plans_per_s": args.queries / med}
        row["speed_ratio"] = row["stubborn"]["plans_per_s"] / row["none"]["plans_per_s"]
        rows.append(row)
        print(json.dumps(row))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()

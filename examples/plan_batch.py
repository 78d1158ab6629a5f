"""Plan for many soldiers at once with the Warp planner, and check one plan against the reference.

    python examples/plan_batch.py --agents 20000 --device cpu
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import goap
from goap.bench.random_domains import random_problems

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=20_000)
    ap.add_argument("--device", default=None, help="Warp device: cpu, cuda:0 (default: Warp's default)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    domain = goap.load_domain(ROOT / "worlds/soldier/domain.toml")
    planner = goap.make_planner("warp", domain, device=args.device)
    planner.load()

    # Starting states scattered by short random walks from the defaults, and a random goal per agent.
    problems = random_problems(domain, args.agents, seed=args.seed, walk=6)
    states = planner.tables.pack_states(problems.values)
    planner.plan(states[:64], problems.goals[:64])  # first call allocates scratch and starts the thread pool
    t0 = time.perf_counter()
    batch = planner.plan(states, problems.goals)
    seconds = time.perf_counter() - t0

    rate = args.agents / seconds
    print(f"{args.agents} agents planned in {seconds * 1000:.1f} ms ({rate:,.0f} plans/s): {batch.counts()}")
    i = int(np.flatnonzero(batch.status == goap.Status.OK)[0])
    goal = domain.goals[problems.goals[i]]
    print(f"agent {i}: {planner.tables.describe(states[i])}")
    print(f"  goal {goal.name}: plan {batch.plan_names(i, domain)} cost {batch.cost[i]:g}")
    check = goap.make_planner("reference", domain).plan(states[i : i + 1], problems.goals[i : i + 1])
    assert check.cost[0] == batch.cost[i], "the Warp planner disagrees with the reference"
    print("  the reference planner finds the same optimal cost")


if __name__ == "__main__":
    main()

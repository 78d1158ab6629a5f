"""Shared helpers: a brute-force optimum to check planners against, and settings for hypothesis."""

from __future__ import annotations

import heapq
import math
import os
from pathlib import Path

import pytest
from hypothesis import settings

from goap.domain import Domain, Goal, State

ROOT = Path(__file__).resolve().parent.parent
PDDL_DIR = ROOT / "benchmarks" / "pddl"  # the IPC task set, copied with its SOURCE.md

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=25, deadline=None, derandomize=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    """Run the goap command in-process: its exit status (argparse's exits included), stdout and stderr."""
    from goap.cli import main

    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:  # argparse errors
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def brute_force_cost(
    domain: Domain,
    start: State,
    goal: Goal,
    costs: list[float] | None = None,
    enabled: list[bool] | None = None,
    limit: int = 200_000,
) -> float:
    """Optimal plan cost by uniform-cost search over the domain's own semantics (inf when unreachable).

    Deliberately shares nothing with the planners under test but `Domain.apply` / `Domain.satisfies`.
    """
    costs = costs if costs is not None else [a.cost for a in domain.actions]
    enabled = enabled if enabled is not None else [True] * len(domain.actions)
    best = {start: 0.0}
    frontier = [(0.0, start)]
    while frontier:
        g, state = heapq.heappop(frontier)
        if g > best.get(state, math.inf):
            continue
        if domain.satisfies(state, goal.want):
            return g
        if len(best) > limit:
            raise RuntimeError("state space too large for brute force")
        for a, action in enumerate(domain.actions):
            if enabled[a] and domain.is_applicable(state, action):
                child = domain.apply(state, action)
                g2 = g + costs[a]
                if g2 < best.get(child, math.inf):
                    best[child] = g2
                    heapq.heappush(frontier, (g2, child))
    return math.inf


@pytest.fixture(scope="session")
def worlds_dir() -> Path:
    return ROOT / "worlds"

"""Goal selectors compared on a live world: the same map, seed and agents, one run per selector.

``goap bench --suite world:village --selectors priority,utility --model MODEL`` (and
``examples/train_utility.py``) run the world once per selector and report, per run: planning calls and failed
plans per goal achieved, goals achieved per agent-minute (60 ticks = 1 minute), ms per tick and the world's
score. ``priority`` chooses goals by the world's priorities; ``utility`` by a `goap.learn.UtilitySelector`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

SELECTORS = ("priority", "utility")


def run_world(brain: Any, ticks: int, label: str = "", warmup: int = 5) -> dict[str, Any]:
    """Tick a brain ``ticks`` times and measure what its agents achieved and what it cost."""
    t0 = time.perf_counter()
    progress = sys.stderr.isatty() and bool(label)
    for i in range(ticks):
        brain.tick()
        if progress and (i % 10 == 0 or i == ticks - 1):
            print(f"\r{label}: tick {i + 1}/{ticks}", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    c = brain.counters
    achieved = max(c["goals_achieved"], 1)
    summary = brain.summary(warmup=min(warmup, max(0, ticks - 1)))
    return {
        "ticks": ticks,
        "agents": brain.n_agents,
        "goals_achieved": int(c["goals_achieved"]),
        "planning_calls_per_goal": c["plans_requested"] / achieved,
        "failed_plans_per_goal": c["plans_failed"] / achieved,
        "goals_per_agent_minute": c["goals_achieved"] / max(brain.n_agents, 1) / (max(ticks, 1) / 60.0),
        "ms_per_tick": summary["ms_per_tick"]["mean"],
        "wall_seconds": time.perf_counter() - t0,
        "score": {k: float(v) for k, v in brain.world.score().items()} if brain.world is not None else {},
    }


def compare_selectors(
    make_brain: Callable[[Any], Any],
    selectors: list[str],
    ticks: int,
    model: str | None = None,
    domain: Any = None,
    torch_device: str = "cpu",
    weights: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """One run per selector; ``make_brain(goal_scorer)`` builds a fresh brain and world on the same seed."""
    unknown = [s for s in selectors if s not in SELECTORS]
    if unknown:
        raise ValueError(f"unknown selector '{unknown[0]}' (known: {', '.join(SELECTORS)})")
    rows = []
    for name in selectors:
        scorer = None
        if name == "utility":
            if not model:
                raise ValueError("the utility selector needs --model FILE (made by `goap train`)")
            from goap.learn import require_torch

            require_torch()
            from goap.learn.selector import UtilitySelector

            scorer = UtilitySelector.load(model, domain, device=torch_device, **(weights or {}))
        row = {"selector": name, **run_world(make_brain(scorer), ticks, label=name)}
        if scorer is not None:
            row["selector_ms_per_tick"] = 1000.0 * scorer.seconds / max(scorer.calls, 1)
        rows.append(row)
    return rows


def print_selectors(rows: list[dict[str, Any]], file: Any = sys.stdout) -> None:
    keys = ["goals_achieved", "planning_calls_per_goal", "failed_plans_per_goal", "goals_per_agent_minute",
            "ms_per_tick"]
    score_keys = sorted({k for r in rows for k in r["score"]})
    width = max(len(k) for k in [*keys, *score_keys])
    print(f"{'':{width}s}  " + "  ".join(f"{r['selector']:>10s}" for r in rows), file=file)
    for k in keys:
        print(f"{k:{width}s}  " + "  ".join(f"{r[k]:10.3f}" for r in rows), file=file)
    for k in score_keys:
        print(f"{k:{width}s}  " + "  ".join(f"{r['score'].get(k, float('nan')):10.3f}" for r in rows), file=file)

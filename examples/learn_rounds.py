"""Learn in rounds which goals pay off in the world's own objective, then compare with priorities on fresh seeds.

For each world (``--worlds village,soldier``):

1. **Rounds** (``--rounds K``): round 0 collects outcomes with the ordinary priority choice; every later round
   trains a `goap.learn.UtilityModel` on everything collected so far, deploys it as the brain's goal selector and
   collects again on a fresh seed. Each outcome row carries ``gain``: how much the agent's contribution to the
   world objective (`goap.world.World.contribution`) changed while it pursued that goal, so the model's value
   head learns the objective gained per tick of each goal in each state. The objective of each round's run is
   printed.
2. **Comparison**: on ``--seeds`` fresh seeds (maps no round saw), one run choosing goals by priority and one with
   the last model, each printing the world objective per agent-minute, goals per agent-minute, failed plans per
   goal and ms per tick, with the mean and the spread over seeds; the ratio of objectives per seed.

The selector's score is ``priority * P(plan) + beta * value``; ``--beta auto`` puts the value term on the scale of
the priorities (``beta = mean priority / std of the value`` over the training rows).

    python examples/learn_rounds.py --agents 2000 --ticks 600 --rounds 3 --seeds 3 --json results.json

Needs torch (pip install "warp-goap[learn]").
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the example worlds, from a checkout

from goap.bench.selectors import run_world  # noqa: E402
from goap.runtime import Brain  # noqa: E402
from worlds import make_world  # noqa: E402

METRICS = ("objective", "goals_per_agent_minute", "failed_plans_per_goal", "ms_per_tick")


def make_brain(world_name: str, args: argparse.Namespace, seed: int, scorer=None) -> Brain:
    world = make_world(world_name)
    return Brain(world.domain, args.agents, world=world, device=args.device, seed=seed, goal_scorer=scorer,
                 plan_budget=args.plan_budget or max(256, args.agents // 4))


def run(world_name: str, args: argparse.Namespace, seed: int, scorer=None, log=None) -> dict:
    brain = make_brain(world_name, args, seed, scorer)
    if log is not None:
        brain.record_outcomes(log)
    row = run_world(brain, args.ticks, label=f"{world_name} seed {seed}")
    row["objective"] = row["score"].get("objective", float("nan"))
    if scorer is not None:
        row["selector_ms_per_tick"] = 1000.0 * scorer.seconds / max(scorer.calls, 1)
    return row


def auto_beta(log) -> float:
    """The weight that puts the value term on the scale of the priorities of the logged rows."""
    import numpy as np

    c = log.columns
    ok = np.isfinite(c["gain"]) & (c["ticks_open"] >= 0)
    value = c["gain"][ok] / np.maximum(1.0, c["ticks_open"][ok])
    spread = float(value.std()) if ok.sum() > 1 else 0.0
    return float(np.mean(c["reward"])) / spread if spread > 0 else 0.0


def selector(model, domain, args, beta: float):
    from goap.learn.selector import UtilitySelector

    return UtilitySelector(model, domain, alpha=1.0, beta=beta, gamma=0.0, torch_threads=1)


def one_world(world_name: str, args: argparse.Namespace) -> dict:
    from goap.encoding import encode
    from goap.learn.train import train
    from goap.outcomes import OutcomeLog

    domain = make_world(world_name).domain
    log = OutcomeLog.for_domain(domain, encode(domain).n_words)
    rounds, model, beta = [], None, 0.0
    for k in range(args.rounds + 1):
        seed = args.seed + 100 * k
        scorer = None if model is None else selector(model, domain, args, beta)
        t0 = time.perf_counter()
        row = run(world_name, args, seed, scorer, log)
        rounds.append({"round": k, "seed": seed, "selector": "priority" if scorer is None else "utility",
                       "objective": row["objective"], "rows": len(log)})
        print(f"{world_name} round {k}: {rounds[-1]['selector']:8s} objective {row['objective']:.4f} per "
              f"agent-minute, {len(log)} outcome rows ({time.perf_counter() - t0:.0f} s)", flush=True)
        if k < args.rounds:
            model, _report = train(log, epochs=args.epochs, seed=args.seed + k, domain=domain)
            beta = auto_beta(log) if args.beta == "auto" else float(args.beta)
    runs = {"priority": [], "utility": []}
    for j in range(args.seeds):
        seed = args.seed + 10_000 + j
        runs["priority"].append(run(world_name, args, seed))
        runs["utility"].append(run(world_name, args, seed, selector(model, domain, args, beta)))
    summary = {}
    for name, rows in runs.items():
        summary[name] = {m: {"mean": statistics.fmean(r[m] for r in rows), "min": min(r[m] for r in rows),
                             "max": max(r[m] for r in rows)} for m in METRICS}
    ratios = [u["objective"] / p["objective"] if p["objective"] else float("nan")
              for p, u in zip(runs["priority"], runs["utility"], strict=True)]
    print(f"\n{world_name}: {args.agents} agents, {args.ticks} ticks, {args.seeds} fresh seeds, beta {beta:.3g}")
    print(f"{'':24s} {'priority (mean, min..max)':>32s} {'utility (mean, min..max)':>32s}")
    for m in METRICS:
        cells = [f"{s[m]['mean']:.4f} ({s[m]['min']:.4f}..{s[m]['max']:.4f})" for s in summary.values()]
        print(f"{m:24s} {cells[0]:>32s} {cells[1]:>32s}")
    print(f"objective utility / priority per seed: {', '.join(f'{r:.3f}' for r in ratios)} "
          f"(mean {statistics.fmean(ratios):.3f})")
    return {"world": world_name, "rounds": rounds, "beta": beta, "summary": summary, "ratios": ratios,
            "runs": runs}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--worlds", default="village,soldier")
    p.add_argument("--agents", type=int, default=2000)
    p.add_argument("--ticks", type=int, default=600)
    p.add_argument("--rounds", type=int, default=2, help="training rounds after the priority round")
    p.add_argument("--seeds", type=int, default=3, help="fresh seeds of the final comparison")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--beta", default="auto", help="weight of the value term, or 'auto'")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--plan-budget", type=int, default=None)
    p.add_argument("--json", help="write every number here")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.seeds < 1:
        p.error("--rounds and --seeds must be >= 1")
    if args.beta != "auto":
        try:
            float(args.beta)
        except ValueError:
            p.error(f"--beta must be a number or 'auto', got {args.beta!r}")
    try:
        from goap.learn import LearnUnavailable, require_torch

        require_torch()
    except LearnUnavailable as e:
        print(f"learn_rounds: {e}", file=sys.stderr)
        return 1
    results = [one_world(w.strip(), args) for w in args.worlds.split(",") if w.strip()]
    if args.json:
        from goap.files import write_atomic  # whole or not at all; a FIFO or device is written in place

        write_atomic(args.json, json.dumps({"args": vars(args), "worlds": results}, indent=1, default=float) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Learn in rounds which goals pay off in the world's own objective, then compare with priorities on fresh seeds.

A thin caller of `goap.learn.rounds` (what ``goap train --rounds K --world NAME`` runs), for several worlds in one
go. For each world (``--worlds village,soldier``): round 0 collects outcomes choosing goals by priority; every
later round trains a `goap.learn.UtilityModel` on everything collected so far, deploys it as the brain's goal
selector and collects again on a fresh seed; then, on ``--seeds`` fresh seeds, one run by priority and one with the
model trained on every round, printing per seed and as mean (min..max): the world objective per agent-minute,
goals per agent-minute, failed plans per goal and ms per tick, and the ratio of objectives per seed.

    python examples/learn_rounds.py --agents 2000 --ticks 600 --rounds 2 --seeds 3 --json results.json

Needs torch (pip install "warp-goap[learn]").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # goap from a checkout


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--worlds", default="village,soldier")
    p.add_argument("--agents", type=int, default=2000)
    p.add_argument("--ticks", type=int, default=600)
    p.add_argument("--rounds", type=int, default=2, help="training rounds after the priority round")
    p.add_argument("--seeds", type=int, default=3, help="fresh seeds of the final comparison")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--beta", default="auto", help="weight of the value term, or 'auto'")
    p.add_argument("--gamma", default="auto", help="weight of the plan-cost term, or 'auto'")
    p.add_argument("--hidden", default=None, help="hidden sizes of the models (default 32: one layer)")
    p.add_argument("--every", type=int, default=16, help="ticks between two scorings of an agent that pursues a goal")
    p.add_argument("--backend", default="auto", help="the selector's backend: auto, warp or torch")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None, help="Warp device of the runs")
    p.add_argument("--plan-budget", type=int, default=None)
    p.add_argument("--models", help="write each world's models into this folder (<world>.pt, <world>.roundK.pt)")
    p.add_argument("--json", help="write every number here")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.seeds < 1:
        p.error("--rounds and --seeds must be >= 1")
    try:
        from goap.learn import LearnUnavailable, require_torch

        require_torch()
    except LearnUnavailable as e:
        print(f"learn_rounds: {e}", file=sys.stderr)
        return 1
    from goap.learn.rounds import ROUND_HIDDEN, RoundOptions, format_result, learn_in_rounds
    from goap.learn.train import parse_hidden

    try:
        beta = args.beta if args.beta == "auto" else float(args.beta)
        gamma = args.gamma if args.gamma == "auto" else float(args.gamma)
        hidden = ROUND_HIDDEN if args.hidden is None else parse_hidden(args.hidden)
    except ValueError as e:
        p.error(str(e) if "hidden" in str(e) else f"--beta and --gamma must be numbers or 'auto' ({e})")
    results = []
    for world in (w.strip() for w in args.worlds.split(",") if w.strip()):
        opts = RoundOptions(world=world, rounds=args.rounds, agents=args.agents, ticks=args.ticks, seeds=args.seeds,
                            epochs=args.epochs, beta=beta, gamma=gamma, seed=args.seed, hidden=hidden,
                            device=args.device, plan_budget=args.plan_budget, every=args.every, backend=args.backend)
        out = None
        if args.models:
            Path(args.models).mkdir(parents=True, exist_ok=True)
            out = Path(args.models) / f"{world}.pt"
        try:
            result = learn_in_rounds(opts, out=out, echo=lambda line: print(line, flush=True))
        except ValueError as e:
            print(f"learn_rounds: {e}", file=sys.stderr)
            return 1
        print()
        print(format_result(result), flush=True)
        print()
        results.append(result)
    if args.json:
        from goap.files import write_atomic  # whole or not at all; a FIFO or device is written in place

        write_atomic(args.json, json.dumps({"args": vars(args), "worlds": results}, indent=1, default=str) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

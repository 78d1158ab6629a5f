"""Learn which goals pay off in the village, then let the agents choose goals with what was learned.

1. **Collect**: run the village (``--agents`` agents, ``--ticks`` ticks, seed ``--seed``) with the ordinary
   priority-based goal choice and ``brain.record_outcomes()``: one row per planning call.
2. **Train** a `goap.learn.UtilityModel` on those rows (``--epochs``) and print its held-out report.
3. **Evaluate**: two fresh villages on the same seed (``--seed + 1``, a map the model has not seen), one choosing
   goals by priority, one with a `goap.learn.UtilitySelector` as the brain's goal scorer, and print for each:
   planning calls per goal achieved, failed plans per goal achieved, goals achieved per agent-minute, the
   world's score and ms per tick.

    python examples/train_utility.py                       # 2,000 agents, 300 ticks: a few minutes on 2 cores
    python examples/train_utility.py --agents 500 --ticks 120 --epochs 5     # a quick look

Needs torch (pip install "warp-goap[learn]").
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the example worlds, from a checkout

from goap.bench.selectors import print_selectors, run_world  # noqa: E402
from goap.runtime import Brain  # noqa: E402
from worlds import make_world  # noqa: E402


def make_brain(args: argparse.Namespace, seed: int, goal_scorer=None) -> Brain:
    world = make_world("village")
    return Brain(
        world.domain, args.agents, world=world, device=args.device, seed=seed,
        plan_budget=args.plan_budget or max(256, args.agents // 10), goal_scorer=goal_scorer,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agents", type=int, default=2000)
    p.add_argument("--ticks", type=int, default=300, help="ticks for collecting and for each evaluation run")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--seed", type=int, default=0, help="collection seed; the evaluation runs use seed + 1")
    p.add_argument("--device", default="cpu", help="Warp planner device")
    p.add_argument("--torch-device", default="cpu", help="device of the selector's forward pass")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch CPU threads (default 1: more fight Warp's CPU planner threads for the cores)")
    p.add_argument("--plan-budget", type=int, default=None, help="agents planned per tick (default max(256, N/10))")
    p.add_argument("--alpha", type=float, default=None, help="selector: exponent of P(plan found)")
    p.add_argument("--beta", type=float, default=None, help="selector: weight of the expected reward per tick")
    p.add_argument("--gamma", type=float, default=None, help="selector: weight of the expected plan cost")
    p.add_argument("--data", help="train on this outcome log instead of collecting one")
    p.add_argument("--save-data", help="write the collected outcome log here (.npz)")
    p.add_argument("--save-model", help="write the trained model here (.pt)")
    args = p.parse_args(argv)

    try:
        from goap.learn import LearnUnavailable, require_torch

        require_torch()
    except LearnUnavailable as e:
        print(f"train_utility: {e}", file=sys.stderr)
        return 1
    from goap.learn.selector import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_GAMMA, UtilitySelector
    from goap.learn.train import format_report, train
    from goap.outcomes import OutcomeLog

    # 1. Collect.
    if args.data:
        log = OutcomeLog.load(args.data)
        print(f"outcomes: {len(log)} rows from {args.data}")
    else:
        brain = make_brain(args, args.seed)
        log = brain.record_outcomes()
        t0 = time.perf_counter()
        run_world(brain, args.ticks, "collect")
        print(f"collected {len(log)} outcomes: {args.agents} agents x {args.ticks} ticks, seed {args.seed} "
              f"({time.perf_counter() - t0:.1f} s)")
        if args.save_data:
            log.save(args.save_data)

    # 2. Train.
    model, report = train(log, epochs=args.epochs, seed=args.seed, domain=make_world("village").domain)
    print()
    print(format_report(report))
    if report["rows_dropped"]:
        print(f"note: {report['rows_dropped']} rows had no goal or no search outcome and were left out")
    if args.save_model:
        model.save(args.save_model)

    # 3. Evaluate, both on the same fresh seed.
    weights = {
        "alpha": DEFAULT_ALPHA if args.alpha is None else args.alpha,
        "beta": DEFAULT_BETA if args.beta is None else args.beta,
        "gamma": DEFAULT_GAMMA if args.gamma is None else args.gamma,
    }
    domain = make_world("village").domain
    seed = args.seed + 1
    priority = {"selector": "priority", **run_world(make_brain(args, seed), args.ticks, "priority")}
    selector = UtilitySelector(model, domain, device=args.torch_device, torch_threads=args.torch_threads, **weights)
    utility = {"selector": "utility", **run_world(make_brain(args, seed, goal_scorer=selector), args.ticks, "utility")}

    print()
    print(f"evaluation: village, {args.agents} agents, {args.ticks} ticks, seed {seed}; utility = priority * "
          f"P^{weights['alpha']:g} + {weights['beta']:g} * value - {weights['gamma']:g} * cost "
          f"(selector: {1000.0 * selector.seconds / max(selector.calls, 1):.2f} ms per tick)")
    print_selectors([priority, utility])
    return 0


if __name__ == "__main__":
    sys.exit(main())

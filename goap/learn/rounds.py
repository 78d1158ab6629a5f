"""Learning in rounds: collect with the current selector, train, redeploy on a fresh seed; then compare.

``goap train --rounds K --world NAME`` and ``examples/learn_rounds.py`` run this. For one world:

1. **Rounds.** Round 0 collects outcomes with the ordinary priority choice (or starts from the logs given with
   ``--data``); every later round trains a `goap.learn.UtilityModel` on everything collected so far, writes it
   (``<out>.round<k>.pt``), deploys it as the brain's goal selector and collects again on a fresh seed. Each outcome
   row carries ``gain``: how much the agent's contribution to the world objective (`goap.world.World.contribution`)
   changed while it pursued that goal, so the value head learns the objective gained per tick of each goal in
   each state. Each round reports the objective of its run, the model it ran (none in round 0) and the rows.
2. **Comparison.** On ``seeds`` fresh seeds (maps no round saw), one run choosing goals by priority and one with
   the last model: the world objective per agent-minute, goals per agent-minute, failed plans per goal and ms per
   tick, per seed and as mean, min and max; the ratio of objectives per seed.

The score is ``priority * P(plan) + beta * value - gamma * cost`` (`goap.learn.selector`). ``beta="auto"`` puts the
value term on the scale of the priorities (``beta = mean priority / std of the value`` over the training rows);
``gamma="auto"`` makes a goal whose plan costs twice the mean lose about four times the mean priority
(``gamma = 2 * mean priority / mean plan cost``). The cost term is what keeps the goal rate: the value head says
what a goal gains the objective per tick but nothing in it says how long the goal takes, so without it the agents
drift to long goals worth more per tick (on the soldier world, measured on 3 fresh seeds with one model: goals per
agent-minute 0.83-0.88x priority's at gamma 0, 0.93-0.95x at 2, 1.17-1.25x at 4, with the objective 1.00-1.06x,
1.12-1.16x and 1.20-1.24x). Seeds: round k runs on ``seed + 100 k``, comparison j on ``seed + 10000 + j``.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

METRICS = ("objective", "goals_per_agent_minute", "failed_plans_per_goal", "ms_per_tick")
#: Hidden sizes of the models trained in rounds: one layer of 32 units. The fused selector's kernel on 154 village
#: agents x 12 goals: 0.12 ms at (32,), 0.27 ms at (32, 32), 0.48 ms at (64, 64), measured in one run; the tick's
#: budget is 10% (about 0.25 ms at 2,000 village agents), and on 3 fresh seeds of both worlds (32,) meets the
#: objective and goal-rate targets as (32, 32) does (docs/measured.md).
ROUND_HIDDEN = (32,)


@dataclass
class RoundOptions:
    """What `learn_in_rounds` runs (the CLI's options; see ``goap train --help``)."""

    world: str
    rounds: int = 2
    agents: int = 2000
    ticks: int = 600
    seeds: int = 3
    epochs: int = 20
    beta: float | str = "auto"
    gamma: float | str = "auto"
    seed: int = 0
    hidden: tuple[int, ...] = ROUND_HIDDEN
    device: str | None = None
    plan_budget: int | None = None
    every: int = 16
    backend: str = "auto"

    def check(self) -> None:
        for name in ("rounds", "agents", "ticks", "epochs", "every"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be an integer >= 1, got {v!r}")
        if isinstance(self.seeds, bool) or not isinstance(self.seeds, int) or self.seeds < 0:
            raise ValueError(f"--seeds must be an integer >= 0, got {self.seeds!r}")
        for name in ("beta", "gamma"):
            v = getattr(self, name)
            if v != "auto" and (isinstance(v, bool) or not isinstance(v, int | float) or not np.isfinite(v) or v < 0):
                raise ValueError(f"--{name} must be a number >= 0 or 'auto', got {v!r}")


def make_brain(opts: RoundOptions, seed: int, scorer: Any = None) -> Any:
    from goap.registry import load_world
    from goap.runtime import Brain
    from goap.world import default_plan_budget

    world = load_world(opts.world)
    budget = opts.plan_budget or default_plan_budget(world, opts.agents)
    return Brain(world.domain, opts.agents, world=world, device=opts.device, seed=seed, goal_scorer=scorer,
                 plan_budget=budget)


def run_once(opts: RoundOptions, seed: int, scorer: Any = None, log: Any = None) -> dict[str, Any]:
    """One run of the world on ``seed`` (logging into ``log`` when given): `goap.bench.selectors.run_world`'s row
    plus the objective and, with a scorer, its ms per call."""
    from goap.bench.selectors import run_world

    brain = make_brain(opts, seed, scorer)
    if log is not None:
        brain.record_outcomes(log)
    row = run_world(brain, opts.ticks, label=f"{opts.world} seed {seed}")
    row["seed"] = seed
    row["objective"] = float(row["score"].get("objective", float("nan")))
    if scorer is not None:
        row["selector_ms_per_call"] = 1000.0 * scorer.seconds / max(scorer.calls, 1)
        row["selector_backend"] = scorer.backend
    return row


def auto_beta(log: Any) -> float:
    """The weight that puts the value term on the scale of the priorities of the logged rows."""
    c = log.columns
    ok = np.isfinite(c["gain"]) & (c["ticks_open"] >= 0)
    value = c["gain"][ok] / np.maximum(1.0, c["ticks_open"][ok])
    spread = float(value.std()) if ok.sum() > 1 else 0.0
    return float(np.mean(c["reward"])) / spread if spread > 0 else 0.0


def auto_gamma(log: Any) -> float:
    """The weight of the cost term: ``2 * mean priority / mean plan cost`` of the logged rows (see the module
    docstring)."""
    c = log.columns
    ok = np.isfinite(c["cost"]) & (c["cost"] > 0)
    mean_cost = float(c["cost"][ok].mean()) if ok.any() else 0.0
    return 2.0 * float(np.mean(c["reward"])) / mean_cost if mean_cost > 0 else 0.0


def weights(log: Any, opts: RoundOptions) -> tuple[float, float]:
    """(beta, gamma) for a model trained on ``log``: the options' numbers, or the automatic ones."""
    beta = auto_beta(log) if opts.beta == "auto" else float(opts.beta)
    gamma = auto_gamma(log) if opts.gamma == "auto" else float(opts.gamma)
    return beta, gamma


def selector(model: Any, domain: Any, opts: RoundOptions, beta: float, gamma: float = 0.0) -> Any:
    from goap.learn.selector import UtilitySelector

    return UtilitySelector(model, domain, alpha=1.0, beta=beta, gamma=gamma, torch_threads=1, every=opts.every,
                           backend=opts.backend)


def round_model_path(out: str | Path, k: int) -> Path:
    """Where round ``k``'s model is written beside the final model ``out`` (``model.pt`` -> ``model.round1.pt``)."""
    out = Path(out)
    return out.with_name(f"{out.stem}.round{k}{out.suffix or '.pt'}")


def learn_in_rounds(opts: RoundOptions, out: str | Path | None = None, start: Any = None,
                    echo: Any = print) -> dict[str, Any]:
    """Rounds then comparison for one world (module docstring); returns every number as plain data.

    Args:
        opts: what to run.
        out: the final model's file; each round's model is written beside it (`round_model_path`). None: no files.
        start: an `goap.outcomes.OutcomeLog` of the world's domain to start from (round 0 then trains on it and
            runs the model it gives, rather than collecting with priorities first).
        echo: called with each progress line (None: quiet).
    """
    from goap.encoding import encode
    from goap.learn.train import train
    from goap.outcomes import OutcomeLog
    from goap.registry import load_world

    opts.check()
    say = echo or (lambda *_: None)
    domain = load_world(opts.world).domain
    if start is not None:
        from goap.encoding import fingerprint

        if start.fingerprint != fingerprint(domain):
            raise ValueError(f"the outcome logs given hold domain '{start.domain_name}', not world "
                             f"'{opts.world}''s domain '{domain.name}'")
        log = OutcomeLog.merge([start])
    else:
        log = OutcomeLog.for_domain(domain, encode(domain).n_words)
    rounds: list[dict[str, Any]] = []
    model, beta, gamma, model_file = None, 0.0, 0.0, None
    for k in range(opts.rounds + 1):
        if k > 0 or start is not None:  # train on everything so far, write the round's model, deploy it
            model, report = train(log, epochs=opts.epochs, seed=opts.seed + k, domain=domain, hidden=opts.hidden)
            beta, gamma = weights(log, opts)
            model.summary.update(round=k, beta=beta, gamma=gamma)
            model_file = None
            if out is not None:
                model_file = round_model_path(out, k)
                model.save(model_file)
        seed = opts.seed + 100 * k
        scorer = None if model is None else selector(model, domain, opts, beta, gamma)
        t0 = time.perf_counter()
        before = len(log)
        row = run_once(opts, seed, scorer, log)
        rounds.append({
            "round": k, "seed": seed, "selector": "priority" if scorer is None else "utility",
            "model": None if model_file is None else str(model_file), "beta": beta if scorer is not None else None,
            "gamma": gamma if scorer is not None else None,
            "objective": row["objective"], "goals_per_agent_minute": row["goals_per_agent_minute"],
            "rows_added": len(log) - before, "rows": len(log),
            "predicted": 0 if scorer is None else scorer.rows_predicted,
        })
        say(f"{opts.world} round {k}: {rounds[-1]['selector']:8s} objective {row['objective']:.4f} per agent-minute, "
            f"{len(log) - before} outcome rows added, {len(log)} in all ({time.perf_counter() - t0:.0f} s)")
    # the rows of every round train the model that is compared and written as `out`
    model, _report = train(log, epochs=opts.epochs, seed=opts.seed + opts.rounds + 1, domain=domain,
                           hidden=opts.hidden)
    beta, gamma = weights(log, opts)
    model.summary.update(round=opts.rounds + 1, beta=beta, gamma=gamma, rows=len(log))
    if out is not None:
        model.save(out)
    runs: dict[str, list[dict[str, Any]]] = {"priority": [], "utility": []}
    for j in range(opts.seeds):
        seed = opts.seed + 10_000 + j
        runs["priority"].append(run_once(opts, seed))
        runs["utility"].append(run_once(opts, seed, selector(model, domain, opts, beta, gamma)))
    summary = {}
    if opts.seeds:
        for name, rows in runs.items():
            summary[name] = {m: {"mean": statistics.fmean(r[m] for r in rows), "min": min(r[m] for r in rows),
                                 "max": max(r[m] for r in rows)} for m in METRICS}
    ratios = [u["objective"] / p["objective"] if p["objective"] else float("nan")
              for p, u in zip(runs["priority"], runs["utility"], strict=True)]
    return {"world": opts.world, "options": asdict(opts), "rounds": rounds, "beta": beta, "gamma": gamma,
            "model": None if out is None else str(out), "summary": summary, "ratios": ratios, "runs": runs}


def format_result(result: dict[str, Any]) -> str:
    """The comparison as a table: per seed and mean (min..max), priority against utility."""
    o = result["options"]
    lines = [f"{result['world']}: {o['agents']} agents, {o['ticks']} ticks, {o['seeds']} fresh seeds, "
             f"beta {result['beta']:.3g}, gamma {result['gamma']:.3g}"]
    runs = result["runs"]
    if not runs["priority"]:
        return "\n".join(lines + ["(no comparison: --seeds 0)"])
    head = f"{'seed':>6s} {'selector':>9s} " + " ".join(f"{m:>26s}" for m in METRICS)
    lines += [head, "-" * len(head)]
    for p, u in zip(runs["priority"], runs["utility"], strict=True):
        for name, r in (("priority", p), ("utility", u)):
            lines.append(f"{r['seed']:>6d} {name:>9s} " + " ".join(f"{r[m]:>26.4f}" for m in METRICS))
    for name, s in result["summary"].items():
        cells = " ".join(f"{s[m]['mean']:.4f} ({s[m]['min']:.3f}..{s[m]['max']:.3f})".rjust(26) for m in METRICS)
        lines.append(f"{'mean':>6s} {name:>9s} " + cells)
    lines.append("objective utility / priority per seed: " + ", ".join(f"{r:.3f}" for r in result["ratios"])
                 + f" (mean {statistics.fmean(result['ratios']):.3f})")
    gp = [u["goals_per_agent_minute"] / p["goals_per_agent_minute"] if p["goals_per_agent_minute"] else float("nan")
          for p, u in zip(runs["priority"], runs["utility"], strict=True)]
    lines.append("goals per agent-minute utility / priority per seed: " + ", ".join(f"{r:.3f}" for r in gp))
    return "\n".join(lines)


def run_cli(args: Any) -> int:
    """``goap train --rounds K --world NAME ...``: the rounds, the table, the final model and the JSON."""
    from goap.argtypes import check_output_file
    from goap.files import write_atomic

    if not getattr(args, "world", None):
        raise ValueError("--rounds needs --world NAME (a registered world: see goap worlds)")
    from goap.registry import load_world

    load_world(args.world)  # an unknown world fails here, before anything runs
    check_output_file(args.out, "--out")
    if args.json:
        check_output_file(args.json, "--json")
    from goap.learn.train import parse_hidden

    hidden = ROUND_HIDDEN if args.hidden is None else parse_hidden(args.hidden)
    beta, gamma = (_weight(getattr(args, name), name) for name in ("beta", "gamma"))
    opts = RoundOptions(world=args.world, rounds=args.rounds, agents=args.agents, ticks=args.ticks,
                        seeds=args.compare_seeds, epochs=args.epochs, beta=beta, gamma=gamma, seed=args.seed,
                        hidden=hidden,
                        device=args.warp_device, plan_budget=args.plan_budget, every=args.every)
    opts.check()
    start = None
    if args.data:
        start = load_logs([args.data] if isinstance(args.data, str) else list(args.data))
    result = learn_in_rounds(opts, out=args.out, start=start, echo=None if args.quiet else print)
    print()
    print(format_result(result))
    print(f"model written to {args.out} (and each round's beside it)")
    if args.json:
        from goap.bench.report import run_metadata

        write_atomic(args.json, json.dumps({"meta": run_metadata(), "worlds": [result]}, indent=1,
                                           default=_json_default) + "\n")
        print(f"wrote {args.json}")
    return 0


def _weight(text: str, name: str) -> float | str:
    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"--{name} must be a number >= 0 or 'auto', got {text!r}") from None


def load_logs(paths: list[str]) -> Any:
    """The outcome logs named (files, or folders: every ``*.npz`` in them, sorted) as one log; ValueError naming
    the file that is missing, unreadable or of another domain than the first."""
    from goap.outcomes import OutcomeLog

    files: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = sorted(path.glob("*.npz"))
            if not found:
                raise ValueError(f"{path}: no outcome logs (*.npz) in this folder")
            files += found
        elif not path.exists():
            raise ValueError(f"{path}: no such outcome log")
        else:
            files.append(path)
    logs = [OutcomeLog.load(f) for f in files]
    return OutcomeLog.merge(logs, [str(f) for f in files])


def _json_default(v: Any) -> Any:
    if isinstance(v, np.integer | np.floating):
        return v.item()
    if isinstance(v, tuple):
        return list(v)
    return str(v)


"""Train a `UtilityModel` on an outcome log, and report how it does on held-out rows against simple baselines.

``train(log, ...)`` splits the rows (seeded) into training and held-out rows, fits the three heads with Adam
on shuffled minibatches, and measures on the held-out rows:

- feasibility: AUC (the Mann-Whitney rank statistic, ties averaged) and accuracy at P >= 0.5, against the
  per-goal rate of plans found (AUC) and the per-goal majority (accuracy) of the training rows;
- cost: mean absolute error in cost units on the rows with a plan, against the per-goal mean cost;
- value: mean absolute error of the reward per tick (see `goap.learn.model`) on the rows whose outcome is
  known, against the per-goal mean value.

``goap train --data FILE --out MODEL`` (`add_arguments`, `run`) does the same from the command line and
prints the report as a table.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from goap.domain import Domain, show
from goap.encoding import encode, fingerprint
from goap.learn import require_torch
from goap.learn.features import FeatureLayout
from goap.learn.model import MAX_HIDDEN, MAX_LAYERS, UtilityModel
from goap.learn.options import add_arguments  # noqa: F401  (goap train's options, torch-free)
from goap.planners import Status

torch = require_torch()

#: Fewest usable rows `train` accepts (and fewest held-out rows it keeps).
MIN_ROWS = 20
MIN_HELD_OUT = 5


@dataclass
class Dataset:
    """Model inputs and targets for the usable rows of an outcome log."""

    x: np.ndarray  # float32[R, n_features]
    goal: np.ndarray  # int64[R]
    feasible: np.ndarray  # float32[R], 1 when the planner found a plan (OK or SATISFIED)
    log_cost: np.ndarray  # float32[R], log1p(cost); NaN without a plan
    value: np.ndarray  # float32[R], objective gain per tick (or achieved * reward per tick); NaN while open
    dropped: int  # rows left out (no goal, or a status that is not an outcome of a search)

    def __len__(self) -> int:
        return len(self.goal)


def dataset(log: Any, domain: Domain) -> Dataset:
    """Features and targets of every usable row of ``log`` (an `goap.outcomes.OutcomeLog`)."""
    layout = FeatureLayout.from_domain(domain)
    c = log.columns
    status = np.asarray(c["status"]).astype(np.int64)
    goal = np.asarray(c["goal"]).astype(np.int64)
    searched = np.isin(status, [Status.OK, Status.SATISFIED, Status.NO_PLAN, Status.BUDGET, Status.TOO_LONG])
    keep = searched & (goal >= 0) & (goal < layout.n_goals)
    idx = np.flatnonzero(keep)
    status, goal = status[idx], goal[idx]
    found = (status == Status.OK) | (status == Status.SATISFIED)
    cost = np.asarray(c["cost"], dtype=np.float64)[idx]
    has_cost = found & np.isfinite(cost) & (cost >= 0)
    achieved = np.asarray(c["achieved"]).astype(np.int64)[idx]
    ticks = np.asarray(c["ticks_to_goal"]).astype(np.float64)[idx]
    reward = np.asarray(c["reward"], dtype=np.float64)[idx]
    value = np.where(achieved == 1, reward / np.maximum(1.0, ticks), 0.0)
    # Where the world reported its objective, the value is what the goal gained it per tick, reached or not.
    gain = np.asarray(c["gain"], dtype=np.float64)[idx]
    ticks_open = np.asarray(c["ticks_open"]).astype(np.float64)[idx]
    measured = np.isfinite(gain) & (ticks_open >= 0)
    value = np.where(measured, gain / np.maximum(1.0, ticks_open), value)
    value = np.where(achieved >= 0, value, np.nan)
    return Dataset(
        x=layout.row_features(np.asarray(c["states"])[idx], goal),
        goal=goal,
        feasible=found.astype(np.float32),
        log_cost=np.where(has_cost, np.log1p(np.where(has_cost, cost, 0.0)), np.nan).astype(np.float32),
        value=value.astype(np.float32),
        dropped=int(len(keep) - len(idx)),
    )


def check_log(log: Any, domain: Domain) -> None:
    """ValueError naming the first row and column of ``log`` that no brain of ``domain`` logs.

    `goap.outcomes.OutcomeLog.load` checks the file's form (columns, dtypes, lengths); this checks the values
    against the domain, so that a damaged or hand-made log is refused rather than trained on: a NaN cost or reward
    turns every weight into NaN, and rows with a goal or status out of range, or a packed state no fact values
    give, would be dropped or decoded into features that mean nothing.
    """
    c = log.columns
    n_goals = len(domain.goals)
    found = np.isin(c["status"], [Status.OK, Status.SATISFIED])
    cost = np.asarray(c["cost"], dtype=np.float64)
    checks = [
        ("status", ~np.isin(c["status"], [int(s) for s in Status]),
         f"a status code {min(int(s) for s in Status)}..{max(int(s) for s in Status)}"),
        ("goal", (c["goal"] < -1) | (c["goal"] >= n_goals), f"a goal index -1..{n_goals - 1}"),
        ("cost", found & ~(np.isfinite(cost) & (cost >= 0)), "a finite cost >= 0 where a plan was found"),
        ("cost", ~found & (cost < 0), "no cost, or a cost >= 0"),
        ("reward", ~np.isfinite(np.asarray(c["reward"], dtype=np.float64)), "a finite reward"),
        ("achieved", (c["achieved"] < -1) | (c["achieved"] > 1), "-1 (open), 0 or 1"),
        ("ticks_to_goal", c["ticks_to_goal"] < -1, "-1 or a tick count >= 0"),
        ("length", c["length"] < 0, "a plan length >= 0"),
        ("expanded", c["expanded"] < 0, "an expansion count >= 0"),
        ("tick", c["tick"] < 0, "a tick >= 0"),
    ]
    for name, bad, expected in checks:
        rows = np.flatnonzero(bad)
        if len(rows):
            r = int(rows[0])
            raise ValueError(f"the outcome log's row {r} holds {name} {show(c[name][r].item())}: expected {expected} "
                             f"({len(rows)} such row(s))")
    tables = encode(domain)
    if c["states"].shape[1] != tables.n_words:
        raise ValueError(f"the outcome log's states have {c['states'].shape[1]} word(s); domain '{domain.name}' packs "
                         f"{tables.n_words}")
    bad = tables.invalid_states(c["states"])
    if len(bad):
        r = int(bad[0])
        raise ValueError(f"the outcome log's row {r} holds an invalid packed state: "
                         f"{tables.state_problem(c['states'][r])} ({len(bad)} such row(s))")


# --- metrics ----------------------------------------------------------------------------------------------
def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve as the Mann-Whitney rank statistic (ties get average ranks); NaN for one class."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels).astype(bool)
    n_pos = int(labels.sum())
    n_neg = len(labels) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    sorted_scores = scores[order]
    # Average rank (1-based) of each run of equal scores.
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    ends = np.r_[starts[1:], len(scores)]
    avg = (starts + ends + 1) / 2.0
    ranks = np.empty(len(scores))
    ranks[order] = np.repeat(avg, ends - starts)
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def _per_goal(values: np.ndarray, goal: np.ndarray, n_goals: int, reduce: Callable[[np.ndarray], float]) -> np.ndarray:
    """``reduce`` of ``values`` per goal (finite values only); the overall one for goals without any."""
    ok = np.isfinite(values)
    overall = reduce(values[ok]) if ok.any() else 0.0
    out = np.full(n_goals, overall, dtype=np.float64)
    for g in range(n_goals):
        m = ok & (goal == g)
        if m.any():
            out[g] = reduce(values[m])
    return out


def _mae(pred: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean(np.abs(pred - truth))) if len(truth) else float("nan")


# --- training ---------------------------------------------------------------------------------------------
def resolve_domain(log: Any, domain: Domain | None = None) -> Domain:
    """The domain of ``log``: ``domain`` if given (checked), else that of the known world (`goap.registry`, the
    example worlds and those packages register) with the log's fingerprint."""
    if domain is not None:
        fp = fingerprint(domain)
        if fp != log.fingerprint:
            raise ValueError(
                f"the outcome log is of domain '{log.domain_name}' (fingerprint {log.fingerprint}), "
                f"not of domain '{domain.name}' (fingerprint {fp})"
            )
        return domain
    from goap.registry import WorldSpecError, known_worlds, world_domain

    for name in known_worlds():
        try:
            d = world_domain(name)
        except WorldSpecError:  # a registered world that cannot be made here is not the log's
            continue
        if fingerprint(d) == log.fingerprint:
            return d
    raise ValueError(
        f"the outcome log is of domain '{log.domain_name}' (fingerprint {log.fingerprint}), which is not the domain "
        "of a known world (goap worlds lists them): give its domain file (--domain FILE)"
    )


def train(
    log: Any,
    epochs: int = 20,
    seed: int = 0,
    *,
    domain: Domain | None = None,
    hidden: tuple[int, ...] = (64, 64),
    batch_size: int = 512,
    lr: float = 3e-3,
    held_out: float = 0.2,
    device: str = "cpu",
    progress: Callable[[int, int, float], None] | None = None,
) -> tuple[UtilityModel, dict[str, Any]]:
    """Fit a `UtilityModel` to ``log``; returns it (on the CPU, eval mode) and the report (`format_report`).

    Args:
        log: an `goap.outcomes.OutcomeLog`.
        epochs: passes over the training rows.
        seed: seeds the split, the initial weights and the minibatch order.
        domain: the log's domain; found among the known worlds by fingerprint when omitted.
        hidden: hidden layer sizes.
        batch_size, lr: minibatch size and Adam's learning rate.
        held_out: fraction of rows held out for the report.
        progress: called after each epoch with (epoch, epochs, mean training loss).
    """
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be an integer >= 1, got {epochs!r}")
    if not 0.0 < held_out < 1.0:  # NaN fails too
        raise ValueError(f"held_out must be between 0 and 1, got {held_out}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    if not (isinstance(lr, int | float) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    device = resolve_device(device)
    if len(log) == 0:
        raise ValueError("the outcome log is empty: nothing to train on")
    domain = resolve_domain(log, domain)
    check_log(log, domain)
    data = dataset(log, domain)
    if len(data) < MIN_ROWS:
        raise ValueError(
            f"too few usable rows to train on: {len(data)} (of {len(log)} in the log; at least {MIN_ROWS} needed)"
        )
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(data))
    n_test = max(MIN_HELD_OUT, int(round(held_out * len(data))))
    test, tr = np.sort(perm[:n_test]), np.sort(perm[n_test:])

    G = len(domain.goals)
    finite_cost = np.isfinite(data.log_cost[tr])
    known_value = np.isfinite(data.value[tr])
    stats = {
        "cost_mean": float(data.log_cost[tr][finite_cost].mean()) if finite_cost.any() else 0.0,
        "cost_std": float(data.log_cost[tr][finite_cost].std()) if finite_cost.sum() > 1 else 1.0,
        "value_mean": float(data.value[tr][known_value].mean()) if known_value.any() else 0.0,
        "value_std": float(data.value[tr][known_value].std()) if known_value.sum() > 1 else 1.0,
    }
    stats = {k: (v if not k.endswith("_std") or v > 1e-6 else 1.0) for k, v in stats.items()}

    torch.manual_seed(seed)
    model = UtilityModel.for_domain(domain, hidden=tuple(hidden), stats=stats).to(device)
    x = torch.from_numpy(data.x).to(device)
    y_f = torch.from_numpy(data.feasible).to(device)
    y_c = torch.from_numpy(np.nan_to_num((data.log_cost - stats["cost_mean"]) / stats["cost_std"], nan=0.0)).to(device)
    m_c = torch.from_numpy(np.isfinite(data.log_cost)).to(device)
    y_v = torch.from_numpy(np.nan_to_num((data.value - stats["value_mean"]) / stats["value_std"], nan=0.0)).to(device)
    m_v = torch.from_numpy(np.isfinite(data.value)).to(device)
    train_idx = torch.from_numpy(tr).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    bce = torch.nn.functional.binary_cross_entropy_with_logits

    def masked_mse(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        w = mask.to(pred.dtype)
        return ((pred - target) ** 2 * w).sum() / w.sum().clamp_min(1.0)

    model.train()
    losses = []
    for epoch in range(epochs):
        order = train_idx[torch.randperm(len(train_idx), generator=gen).to(device)]
        total, batches = 0.0, 0
        for start in range(0, len(order), batch_size):
            b = order[start : start + batch_size]
            out = model(x[b])
            loss = bce(out[:, 0], y_f[b])
            loss = loss + masked_mse(out[:, 1], y_c[b], m_c[b]) + masked_mse(out[:, 2], y_v[b], m_v[b])
            value = float(loss.detach())
            if not math.isfinite(value):
                raise ValueError(
                    f"training diverged: the loss is {value} at epoch {epoch + 1}, minibatch {batches + 1} "
                    f"(lr {lr:g}); nothing was written: try a smaller --lr"
                )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            try:
                opt.step()
            except RuntimeError as e:  # Adam's own arithmetic overflowing (lr near float32's limit)
                raise ValueError(
                    f"training diverged at epoch {epoch + 1}, minibatch {batches + 1} (lr {lr:g}): {e}; "
                    "nothing was written: try a smaller --lr"
                ) from None
            total += value
            batches += 1
        losses.append(total / max(batches, 1))
        if progress is not None:
            progress(epoch + 1, epochs, losses[-1])
    model = model.cpu().eval()
    model.check_finite(source="training")  # the last step can overflow the weights without a non-finite loss
    seconds = time.perf_counter() - t0

    report = evaluate(model, data, tr, test, G)
    report.update({
        "domain": domain.name,
        "rows": len(log),
        "rows_used": len(data),
        "rows_dropped": data.dropped,
        "train_rows": len(tr),
        "held_out_rows": len(test),
        "epochs": epochs,
        "seed": seed,
        "final_loss": losses[-1],
        "train_seconds": seconds,
    })
    model.summary = {k: v for k, v in report.items() if not isinstance(v, dict)}
    return model, report


def resolve_device(device: Any) -> Any:
    """``device`` as a torch.device that works here; ValueError naming it when it is not one, or not available
    (``cuda`` on a torch built without CUDA, ``cuda:3`` on a machine with one GPU)."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"--device {device}: not a torch device (cpu, cuda, cuda:0, ...)") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"--device {device}: CUDA is not available to torch here (use cpu)")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"--device {device}: torch sees {torch.cuda.device_count()} CUDA device(s)")
    elif dev.type != "cpu":
        try:
            torch.empty(1, device=dev)
        except Exception as e:  # mps, xpu, meta ...: each fails in its own way when absent
            raise ValueError(f"--device {device}: not usable here ({type(e).__name__})") from None
    return dev


def evaluate(model: UtilityModel, data: Dataset, tr: np.ndarray, test: np.ndarray, n_goals: int) -> dict[str, Any]:
    """The report's metrics on the ``test`` rows; baselines fitted on the ``tr`` rows."""
    pred = model.predict(data.x[test])
    g_tr, g_te = data.goal[tr], data.goal[test]
    y = data.feasible[test]
    rate = _per_goal(data.feasible[tr].astype(np.float64), g_tr, n_goals, np.mean)
    feas = {
        "auc": auc(pred["p_feasible"], y),
        "auc_baseline": auc(rate[g_te], y),
        "accuracy": float(np.mean((pred["p_feasible"] >= 0.5) == (y == 1))),
        "accuracy_baseline": float(np.mean((rate[g_te] >= 0.5) == (y == 1))),
        "positive_rate": float(y.mean()) if len(y) else float("nan"),
    }
    cost_tr = np.expm1(data.log_cost[tr].astype(np.float64))
    cost_te = np.expm1(data.log_cost[test].astype(np.float64))
    c_ok = np.isfinite(cost_te)
    mean_cost = _per_goal(cost_tr, g_tr, n_goals, np.mean)
    cost = {
        "mae": _mae(pred["cost"][c_ok], cost_te[c_ok]),
        "mae_baseline": _mae(mean_cost[g_te][c_ok], cost_te[c_ok]),
        "rows": int(c_ok.sum()),
    }
    v_te = data.value[test].astype(np.float64)
    v_ok = np.isfinite(v_te)
    mean_value = _per_goal(data.value[tr].astype(np.float64), g_tr, n_goals, np.mean)
    value = {
        "mae": _mae(pred["value"][v_ok], v_te[v_ok]),
        "mae_baseline": _mae(mean_value[g_te][v_ok], v_te[v_ok]),
        "rows": int(v_ok.sum()),
    }
    return {"feasible": feas, "cost": cost, "value": value}


def format_report(report: dict[str, Any]) -> str:
    """The report as a small text table: each metric, the model, the baseline."""

    def f(v: float) -> str:
        return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4f}"

    fe, co, va = report["feasible"], report["cost"], report["value"]
    rows = [
        ("feasible AUC", f(fe["auc"]), f(fe["auc_baseline"]), "per-goal rate"),
        ("feasible accuracy", f(fe["accuracy"]), f(fe["accuracy_baseline"]), "per-goal majority"),
        (f"cost MAE ({co['rows']} rows)", f(co["mae"]), f(co["mae_baseline"]), "per-goal mean"),
        (f"value MAE ({va['rows']} rows)", f(va["mae"]), f(va["mae_baseline"]), "per-goal mean"),
    ]
    head = ("metric (held out)", "model", "baseline", "baseline is")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
    lines = [
        f"domain {report['domain']}: {report['rows_used']} rows used of {report['rows']} "
        f"({report['train_rows']} train, {report['held_out_rows']} held out), {report['epochs']} epochs, "
        f"seed {report['seed']}, {report['train_seconds']:.1f} s",
        "  ".join(h.ljust(w) if i in (0, 3) else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths, strict=True))),
        "  ".join("-" * w for w in widths),
    ]
    for r in rows:
        lines.append("  ".join(c.ljust(w) if i in (0, 3) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths,
                                                                                                      strict=True))))
    return "\n".join(line.rstrip() for line in lines)


# --- the `goap train` command -----------------------------------------------------------------------------
def parse_hidden(text: str) -> tuple[int, ...]:
    """``--hidden`` as sizes; ValueError naming the option for anything else."""
    from goap.argtypes import int_list

    try:
        if not all(h.strip() for h in str(text).split(",")):
            raise ValueError(text)
        hidden = tuple(int_list(text))
    except ValueError:
        raise ValueError(f"--hidden must be comma-separated integers, got {show(text)}") from None
    if not hidden or len(hidden) > MAX_LAYERS or not all(1 <= h <= MAX_HIDDEN for h in hidden):
        raise ValueError(f"--hidden: 1 to {MAX_LAYERS} sizes in 1..{MAX_HIDDEN}, got {show(text)}")
    return hidden


def run(args: argparse.Namespace) -> int:
    """Train on ``args.data`` (one log, several, or folders of them), print the report, write ``args.out``; with
    ``args.rounds``, learn in rounds on a world (`goap.learn.rounds`). Errors are ValueErrors with clear messages."""
    from goap.argtypes import check_output_file

    if getattr(args, "rounds", None):
        from goap.learn.rounds import run_cli

        return run_cli(args)
    if getattr(args, "world", None):
        raise ValueError("--world is for --rounds K (learning in rounds on that world)")
    if not args.data:
        raise ValueError("goap train needs --data FILE... (outcome logs), or --rounds K --world NAME")
    hidden = parse_hidden("64,64" if args.hidden is None else args.hidden)
    check_output_file(args.out, "--out")  # before the training, not after it
    resolve_device(args.device)
    domain = None
    if getattr(args, "domain", None):
        from goap.domain_file import load_domain

        domain = load_domain(args.domain)
    from goap.learn.rounds import load_logs

    log = load_logs([args.data] if isinstance(args.data, str) else list(args.data))
    bar_on = not getattr(args, "quiet", False) and sys.stderr.isatty()

    def bar(epoch: int, epochs: int, loss: float) -> None:
        done = epoch / epochs
        print(f"\rtrain: epoch {epoch}/{epochs} [{'=' * int(30 * done):<30s}] loss {loss:.4f}", end="",
              file=sys.stderr, flush=True)

    try:
        model, report = train(
            log, epochs=args.epochs, seed=args.seed, domain=domain, hidden=hidden, batch_size=args.batch_size,
            lr=args.lr, held_out=args.held_out, device=args.device, progress=bar if bar_on else None,
        )
    finally:
        if bar_on:
            print(file=sys.stderr)
    print(format_report(report))
    try:
        model.save(args.out)
    except OSError as e:
        raise ValueError(f"cannot write {args.out}: {e.strerror or e}") from None
    print(f"model written to {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m goap.learn.train``: the same as ``goap train`` (the same options and error handling)."""
    from goap.cli import main as goap_main

    return goap_main(["train", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())

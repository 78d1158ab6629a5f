"""Reports from bench rows: coverage, IPC scores, tables, CSV, JSON with run metadata, plots.

Scores follow the International Planning Competition:

* **quality** (IPC 2008 onwards): a task solved with a valid plan of cost C scores ``C* / C``, where ``C*`` is
  the best cost known for the task: its optimum from the suite, else the cheapest valid plan any planner of
  this run found. Unsolved or invalid: 0. A zero-cost plan scores 1.
* **agile** (IPC 2014 onwards, for ``T_max`` the time limit): a task solved in ``T`` seconds scores 1 when
  ``T <= 1``, ``1 - log(T) / log(T_max)`` when ``1 < T <= T_max``, 0 otherwise (``total_seconds``: grounding and
  search for goap planners, the process's wall time for external ones).

Coverage is the number of tasks solved with a valid plan; ``optimal`` counts those whose cost equals the known
optimum (``unknown`` in the tables where no task of a group has one). Both are given per domain (group) and in
total, as Fast Downward's lab reports do.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from goap import files
from goap.bench.runner import solved

ROW_KEYS = (
    "suite", "group", "problem", "planner", "status", "valid", "cost", "optimal", "length", "expanded",
    "expanded_before_last_f", "seconds",
    "ground_seconds", "total_seconds", "timing", "batch", "setup_seconds", "optimal_source", "late_status",
    "invalid_reason", "error", "n_facts", "n_actions", "planner_name",
)


# --- scores --------------------------------------------------------------------------------------------------
def quality_score(row: dict[str, Any], best: float | None) -> float:
    if not solved(row) or row["cost"] is None or best is None:
        return 0.0
    cost = float(row["cost"])
    if cost <= 0:
        return 1.0
    return min(1.0, best / cost)


def agile_score(row: dict[str, Any], time_limit: float | None) -> float:
    if not solved(row):
        return 0.0
    t = float(row.get("total_seconds") or row.get("seconds") or 0.0)
    if t <= 1.0:
        return 1.0
    if time_limit is None or time_limit <= 1.0:
        return 0.0
    if t > time_limit:
        return 0.0
    return max(0.0, 1.0 - math.log(t) / math.log(time_limit))


def add_scores(rows: list[dict[str, Any]], time_limit: float | None) -> None:
    """Give every row its ``quality_score`` and ``agile_score`` (in place)."""
    best = best_known_costs(rows)
    for r in rows:
        r["quality_score"] = quality_score(r, best.get((r["suite"], r["problem"])))
        r["agile_score"] = agile_score(r, time_limit)


def best_known_costs(rows: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """``C*`` per (suite, problem): the known optimum, else the cheapest valid cost among the rows."""
    known: dict[tuple[str, str], float] = {}
    found: dict[tuple[str, str], float] = {}
    for r in rows:
        key = (r["suite"], r["problem"])
        if r.get("optimal") is not None:
            known[key] = float(r["optimal"])
        if solved(r) and r["cost"] is not None:
            found[key] = min(found.get(key, math.inf), float(r["cost"]))
    return {**found, **known}


# --- summaries -----------------------------------------------------------------------------------------------
def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (suite, group, planner), then one per (suite, planner) with group "all" when there are
    several groups. Rows must have their scores (`add_scores`)."""
    keys: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    order: list[str] = []
    for r in rows:
        if r["planner"] not in order:
            order.append(r["planner"])
        keys.setdefault((r["suite"], r["group"], r["planner"]), []).append(r)
        keys.setdefault((r["suite"], "all", r["planner"]), []).append(r)
    rank = {p: i for i, p in enumerate(order)}
    groups = sorted((k for k in keys if k[1] != "all"), key=lambda k: (k[0], k[1], rank[k[2]]))
    totals = sorted({(s, "all", p) for s, _, p in groups}, key=lambda k: (k[0], rank[k[2]]))
    several = len({(s, g) for s, g, _ in groups}) > len({s for s, _, _ in groups})
    return [_summary(k, keys[k]) for k in groups + (totals if several else [])]


def _summary(key: tuple[str, str, str], rows: list[dict[str, Any]]) -> dict[str, Any]:
    suite, group, planner = key
    ok = [r for r in rows if solved(r)]
    known = [r for r in ok if r.get("optimal") is not None and r["cost"] is not None]
    optimal = [r for r in known if abs(r["cost"] - r["optimal"]) <= 1e-6 * max(1.0, abs(r["optimal"]))]
    ratios = [r["cost"] / r["optimal"] if r["optimal"] > 0 else 1.0 for r in known]
    times = np.array([r["total_seconds"] for r in ok if r.get("total_seconds") is not None], dtype=np.float64)
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    timings = sorted({r["timing"] for r in rows if r.get("timing")})
    return {
        "suite": suite, "group": group, "planner": planner, "problems": len(rows), "solved": len(ok),
        "optimal": len(optimal), "optimum_known": len(known),
        "optima_known": sum(1 for r in rows if r.get("optimal") is not None),
        "valid": sum(1 for r in rows if r.get("valid") is True),
        "invalid": sum(1 for r in rows if r.get("valid") is False),
        "quality_score": float(sum(r.get("quality_score", 0.0) for r in rows)),
        "agile_score": float(sum(r.get("agile_score", 0.0) for r in rows)),
        "mean_cost_ratio": float(np.mean(ratios)) if ratios else None,
        "median_s": float(np.median(times)) if len(times) else None,
        "p95_s": float(np.percentile(times, 95)) if len(times) else None,
        "search_s": float(sum(r["seconds"] or 0.0 for r in rows)),
        "timing": "+".join(timings), "statuses": statuses,
    }


def expansion_comparison(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each planner's expansions against each external planner's (the baselines, e.g. ``fd-lmcut``) on the tasks
    both solve: how many tasks it expands no more states on, counted until the last f-layer
    (``expanded_before_last_f``, which does not depend on how ties in the last layer break; Fast Downward's
    "Expanded until last jump") and in all (``expanded``), and the median ratio of the former. Planners that
    do not keep the count (a random suite's, HDA*) are left out."""
    by: dict[str, dict[tuple[str, str, str], dict[str, Any]]] = {}
    external: list[str] = []
    for r in rows:
        by.setdefault(r["planner"], {})[(r["suite"], r["group"], r["problem"])] = r
        if r.get("timing") == "process" and r["planner"] not in external:
            external.append(r["planner"])
    out = []
    for base in external:
        for planner, tasks in by.items():
            if planner == base:
                continue
            both = [(r, by[base][k]) for k, r in tasks.items() if k in by[base] and solved(r) and solved(by[base][k])
                    and r.get("expanded_before_last_f") is not None
                    and by[base][k].get("expanded_before_last_f") is not None]
            if not both:
                continue
            ratios = [(a["expanded_before_last_f"] + 1) / (b["expanded_before_last_f"] + 1) for a, b in both]
            out.append({
                "planner": planner, "against": base, "tasks": len(both),
                "at_most_before_last_f": sum(a["expanded_before_last_f"] <= b["expanded_before_last_f"]
                                             for a, b in both),
                "at_most_expanded": sum(a["expanded"] is not None and b["expanded"] is not None
                                        and a["expanded"] <= b["expanded"] for a, b in both),
                "median_ratio_before_last_f": float(np.median(ratios)),
            })
    return out


def print_expansions(comparison: list[dict[str, Any]], file: Any = None) -> None:
    """`expansion_comparison` as a table."""
    header = ["planner", "against", "both solve", "<= until last f", "share", "<= in all", "median ratio"]
    table = [[c["planner"], c["against"], str(c["tasks"]), str(c["at_most_before_last_f"]),
              f"{c['at_most_before_last_f'] / c['tasks']:.1%}", str(c["at_most_expanded"]),
              f"{c['median_ratio_before_last_f']:.2f}"] for c in comparison]
    print("expansions on the tasks both solve (until the last f-layer; ratio of (count + 1)):", file=file)
    print_table(header, table, file=file)


def print_summary(summary: list[dict[str, Any]], file: Any = None) -> None:
    """The per-group table: coverage, optimal, valid, IPC scores, times of the solved tasks."""
    header = ["suite", "group", "planner", "tasks", "solved", "optimal", "valid", "invalid", "quality", "agile",
              "cost ratio", "median s", "p95 s", "timing", "statuses"]
    table = [[
        s["suite"], s["group"], s["planner"], str(s["problems"]), str(s["solved"]),
        _optimal_cell(s), str(s["valid"]), str(s["invalid"]), f"{s['quality_score']:.2f}",
        f"{s['agile_score']:.2f}", _fmt(s["mean_cost_ratio"], ".3f"), _fmt(s["median_s"], ".3g"),
        _fmt(s["p95_s"], ".3g"), s["timing"], " ".join(f"{k} {v}" for k, v in sorted(s["statuses"].items())),
    ] for s in summary]
    print_table(header, table, file)


def _optimal_cell(s: dict[str, Any]) -> str:
    """``3/4`` (optimal of the solved tasks whose optimum is known), or ``unknown`` when no task of the group has
    a known optimum: a folder without optima is not 0 optimal plans."""
    return f"{s['optimal']}/{s['optimum_known']}" if s.get("optima_known", 1) else "unknown"


def _coverage_cell(solved_n: int, optimal: int, known: int) -> str:
    return f"{solved_n} ({optimal})" if known else f"{solved_n} (unknown)"


def coverage_table(summary: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Domains down, planners across, ``solved (optimal)`` in each cell; then the IPC score rows."""
    planners = list(dict.fromkeys(s["planner"] for s in summary))
    groups = list(dict.fromkeys((s["suite"], s["group"]) for s in summary if s["group"] != "all"))
    cell = {(s["suite"], s["group"], s["planner"]): s for s in summary}
    header = ["domain", "tasks", *planners]
    rows = []
    for suite, group in groups:
        first = next(cell[(suite, group, p)] for p in planners if (suite, group, p) in cell)
        rows.append([group, str(first["problems"]), *[
            _coverage_cell(cell[(suite, group, p)]["solved"], cell[(suite, group, p)]["optimal"],
                           cell[(suite, group, p)].get("optima_known", 1)) if (suite, group, p) in cell else "-"
            for p in planners]])
    totals = {p: [s for s in summary if s["planner"] == p and s["group"] != "all"] for p in planners}
    n = sum(int(r[1]) for r in rows)
    rows.append(["total", str(n), *[
        _coverage_cell(sum(s["solved"] for s in totals[p]), sum(s["optimal"] for s in totals[p]),
                       sum(s.get("optima_known", 1) for s in totals[p])) for p in planners]])
    rows.append(["valid/invalid", "", *[f"{sum(s['valid'] for s in totals[p])}/{sum(s['invalid'] for s in totals[p])}"
                                       for p in planners]])
    rows.append(["IPC quality", "", *[f"{sum(s['quality_score'] for s in totals[p]):.2f}" for p in planners]])
    rows.append(["IPC agile", "", *[f"{sum(s['agile_score'] for s in totals[p]):.2f}" for p in planners]])
    return header, rows


def print_coverage(summary: list[dict[str, Any]], file: Any = None) -> None:
    header, rows = coverage_table(summary)
    print_table(header, rows, file)


def print_table(header: list[str], table: list[list[str]], file: Any = None) -> None:
    widths = [max(len(x) for x in col) for col in zip(header, *table, strict=False)]
    out = file or sys.stdout
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip(), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for r in table:
        print("  ".join(x.ljust(w) for x, w in zip(r, widths, strict=True)).rstrip(), file=out)


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


# --- files ---------------------------------------------------------------------------------------------------
def rows_to_csv(rows: list[dict[str, Any]]) -> str:
    """CSV of the rows; a plan is one field, its steps joined by spaces."""
    keys = [k for k in ROW_KEYS if any(k in r for r in rows)]
    keys += sorted({k for r in rows for k, v in r.items() if not isinstance(v, dict)} - set(keys))  # settings: JSON
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
    w.writeheader()
    for r in rows:
        out = {}
        for k in keys:
            v = r.get(k)
            if isinstance(v, list):
                v = " ".join(str(x) for x in v)
            elif isinstance(v, dict):
                v = json.dumps(v, sort_keys=True)
            out[k] = "" if v is None else v
        w.writerow(out)
    return buf.getvalue()


def run_metadata(argv: list[str] | None = None) -> dict[str, Any]:
    """Versions, host and revision: what a reader needs to trust or repeat a result."""
    import importlib.metadata
    from datetime import UTC, datetime

    versions: dict[str, str | None] = {"python": platform.python_version()}
    for dist in ("warp-goap", "warp-lang", "numpy", "torch", "ray", "up-fast-downward", "pyperplan",
                 "unified-planning"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    return {
        "time_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "argv": list(sys.argv if argv is None else argv),
        "versions": versions,
        "host": {"name": platform.node(), "system": platform.platform(), "machine": platform.machine(),
                 "processor": cpu_model(), "cpus": os.cpu_count(), "memory_bytes": _total_memory()},
        "git": git_revision(),
    }


def cpu_model() -> str | None:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, ``sysctl`` on macOS); `platform.processor` gives only
    the architecture on Linux, or nothing."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                    return value.strip()
    except OSError:
        pass
    if sys.platform == "darwin":
        try:
            out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True,
                                 timeout=5)
            if out.returncode == 0 and out.stdout.strip():
                return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or None


def _total_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError, AttributeError):
        return None


def git_revision() -> dict[str, Any] | None:
    """The checkout's commit and whether it had uncommitted changes; None outside a git checkout."""
    root = Path(__file__).resolve().parents[2]
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return {"revision": rev.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


# --- plots ---------------------------------------------------------------------------------------------------
def require_matplotlib() -> Callable[..., Any]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ValueError('--plot needs matplotlib: pip install -e ".[bench]" (or pip install matplotlib)') from None
    return plt


def plot(rows: list[dict[str, Any]], path: str, scatter: tuple[str, str] | None = None,
         time_limit: float | None = None) -> None:
    """Cactus plot (tasks solved against time), a per-task scatter of two planners (time, expansions), and the
    mean cost ratio per group. Axes spanning more than a decade are log-scaled; no line joins two tasks."""
    plt = require_matplotlib()
    planners = list(dict.fromkeys(r["planner"] for r in rows))
    pair = scatter or (tuple(planners[:2]) if len(planners) >= 2 else None)
    n_panels = 2 + (2 if pair else 0)
    fig, axes = plt.subplots(1, n_panels, figsize=(5 * n_panels, 4.5))
    colour = {p: f"C{i % 10}" for i, p in enumerate(planners)}

    ax = axes[0]
    all_times = []
    for p in planners:
        secs = sorted(max(float(r["total_seconds"]), 1e-4) for r in rows if r["planner"] == p and solved(r))
        all_times += secs
        if secs:  # a cactus line joins one planner's sorted times: a step per task solved, as in IPC reports
            ax.step(secs, range(1, len(secs) + 1), where="post", label=p, color=colour[p])
    _log_if_wide(ax, "x", all_times)
    ax.set(xlabel="seconds (grounding + search, or process wall time)", ylabel="tasks solved", title="coverage")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.legend(fontsize=8)

    if pair:
        a, b = pair
        by = {(r["planner"], r["suite"], r["problem"]): r for r in rows}
        tasks = sorted({(r["suite"], r["problem"]) for r in rows})
        for ax, key, what in ((axes[1], "total_seconds", "seconds"), (axes[2], "expanded", "expansions")):
            _scatter(ax, by, tasks, a, b, key, what, time_limit if key == "total_seconds" else None)

    ax = axes[-1]
    groups = list(dict.fromkeys(r["group"] for r in rows))
    width = 0.8 / max(1, len(planners))
    for k, p in enumerate(planners):
        ratios = []
        for g in groups:
            vals = [r["cost"] / r["optimal"] for r in rows if r["planner"] == p and r["group"] == g and solved(r)
                    and r.get("optimal") and r["cost"] is not None]
            ratios.append(float(np.mean(vals)) if vals else np.nan)
        ax.bar(np.arange(len(groups)) + k * width, ratios, width, label=p, color=colour[p])
    ax.set_xticks(np.arange(len(groups)) + 0.4 - width / 2, groups, rotation=30, ha="right")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set(ylabel="mean cost / optimal (solved tasks)", title="plan quality")
    seen = [v for p in planners for g in groups for v in [_mean_ratio(rows, p, g)] if v is not None]
    if seen:  # zoomed on the ratios, not from 0: a 1% worse plan should be visible
        ax.set_ylim(min(seen) - 0.02 * max(1.0, max(seen) - min(seen) + 0.5), max(seen) * 1.02 + 0.01)
    for ax in axes:
        ax.grid(True, alpha=0.3)
    target = Path(path)
    buf = io.BytesIO()  # rendered in memory, then written by the one writer that never replaces a device or a link
    try:
        kind = target.suffix.lstrip(".").lower()
        fig.savefig(buf, format=kind if kind in fig.canvas.get_supported_filetypes() else "png", dpi=110,
                    bbox_inches="tight")
    finally:
        plt.close(fig)
    files.write_output(target, buf.getvalue())


def _mean_ratio(rows: list[dict[str, Any]], planner: str, group: str) -> float | None:
    vals = [r["cost"] / r["optimal"] for r in rows if r["planner"] == planner and r["group"] == group and solved(r)
            and r.get("optimal") and r["cost"] is not None]
    return float(np.mean(vals)) if vals else None


def _scatter(ax: Any, by: dict, tasks: list, a: str, b: str, key: str, what: str, limit: float | None) -> None:
    """One point per task both planners were given; a task one planner did not solve sits on the border line."""
    xs, ys = [], []
    for suite, problem in tasks:
        ra, rb = by.get((a, suite, problem)), by.get((b, suite, problem))
        if ra is None or rb is None:
            continue
        xs.append(float(ra[key]) if solved(ra) and ra.get(key) is not None else np.nan)
        ys.append(float(rb[key]) if solved(rb) and rb.get(key) is not None else np.nan)
    x, y = np.array(xs, dtype=float), np.array(ys, dtype=float)
    seen = np.concatenate([x[np.isfinite(x)], y[np.isfinite(y)]])
    if not len(seen):
        ax.set(title=f"{what}: no task solved by either")
        return
    lo = max(float(seen.min()), 1e-4 if key == "total_seconds" else 1.0) / 1.5
    hi = max(float(seen.max()), float(limit or 0)) * 1.5
    border = hi / 1.2
    x = np.where(np.isfinite(x), np.maximum(x, lo), border)
    y = np.where(np.isfinite(y), np.maximum(y, lo), border)
    ax.scatter(x, y, s=14, alpha=0.8)
    ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8)  # the diagonal, not a line through tasks
    ax.axvline(border, color="red", lw=0.6, ls=":")
    ax.axhline(border, color="red", lw=0.6, ls=":")
    _log_if_wide(ax, "x", seen)
    _log_if_wide(ax, "y", seen)
    ax.set(xlim=(lo, hi), ylim=(lo, hi), xlabel=f"{a} {what}", ylabel=f"{b} {what}",
           title=f"{what} per task (dotted: unsolved)")


def _log_if_wide(ax: Any, axis: str, values: Any) -> None:
    vals = [float(v) for v in values if v is not None and float(v) > 0]
    if vals and max(vals) / min(vals) > 10:
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log")

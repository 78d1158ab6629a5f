"""``goap sweep``: a grid of world runs (world x agents x plan budget x seed), one row each, in one table.

Each cell builds a fresh world and `goap.runtime.Brain` and runs it ``--ticks`` ticks (`goap.bench.selectors.
run_world`), so cells are independent and run in parallel on a Ray cluster with ``--ray`` (one Ray task per
cell, see `goap.bench.distributed`), or one after another here. A cell's row: goals achieved, goals per
agent-minute, planning calls and failed plans per goal, ms per tick, the world's score and the final state
hash (the same seed gives the same hash wherever the cell ran).

With ``--log-outcomes DIR`` each cell also logs its planning outcomes (`goap.outcomes.OutcomeLog`, the format
``goap train`` reads) into ``DIR/<world>-a<agents>-b<budget>-s<seed>.npz``: on a Ray cluster the worker sends
the log's bytes back with its row and the driver writes the file (no shared folder needed), each whole or not at
all. ``goap train --data DIR/*.npz`` (or ``--data DIR``) trains on all of them; see ``goap train --rounds``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from typing import Any

from goap import files
from goap.argtypes import int_list, output_path, positive_int
from goap.bench import report


def _int_list(text: str, what: str, low: int = 0) -> list[int]:
    try:
        out = int_list(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what}: expected comma-separated integers, got {text!r}") from None
    if not out or any(v < low or v >= 2**63 for v in out):
        raise argparse.ArgumentTypeError(f"{what}: expected integers >= {low}, got {text!r}")
    return out


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p = parser
    p.add_argument("--world", default="village", help="comma-separated world names (default village)")
    p.add_argument("--agents", type=lambda s: _int_list(s, "--agents", 1), default=[1000],
                   help="comma-separated agent counts (default 1000)")
    p.add_argument("--plan-budget", type=lambda s: _int_list(s, "--plan-budget", 1), default=None,
                   help="comma-separated agents planned per tick (default: a tenth of the agents, at least 256)")
    p.add_argument("--seeds", type=lambda s: _int_list(s, "--seeds"), default=[0], help="comma-separated seeds")
    p.add_argument("--ticks", type=positive_int, default=100, help="ticks per run (default 100)")
    p.add_argument("--planner", default="warp", help="the planner of every run (default warp)")
    p.add_argument("--device", default=None, help="Warp device (cpu, cuda:0); default: Warp's")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help='run the cells on a Ray cluster (none: a local one); pip install -e ".[scale]"')
    p.add_argument("--ray-cpus", type=positive_int, default=None, help="worker processes of a local cluster")
    p.add_argument("--log-outcomes", type=output_path, metavar="DIR",
                   help="log each run's planning outcomes into DIR (one .npz per run, for goap train)")
    p.add_argument("--json", type=output_path, metavar="FILE", help="write {meta, results} as JSON")
    p.add_argument("--csv", type=output_path, metavar="FILE", help="write the rows as CSV")
    p.add_argument("--quiet", action="store_true", help="no table")
    return p


def build_parser() -> argparse.ArgumentParser:
    return add_arguments(argparse.ArgumentParser(prog="goap sweep", description=__doc__.split("\n")[0]))


def log_name(world: str, agents: int, budget: int, seed: int) -> str:
    """The file a cell's outcome log is written to, in the ``--log-outcomes`` folder."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in world)
    return f"{safe}-a{agents}-b{budget}-s{seed}.npz"


def run_cell(world: str, agents: int, budget: int | None, seed: int, ticks: int, planner: str,
             device: str | None, log_outcomes: bool = False) -> dict[str, Any]:
    """One world run; the row of the sweep table (with ``log_outcomes``, and ``outcomes``: the bytes of its
    outcome log, which the driver writes and removes from the row)."""
    from goap.bench.selectors import run_world
    from goap.registry import load_world
    from goap.runtime import Brain
    from goap.world import default_plan_budget

    w = load_world(world)
    plan_budget = budget or default_plan_budget(w, agents)
    brain = Brain(w.domain, agents, world=w, planner=planner, device=device, plan_budget=plan_budget, seed=seed)
    log = brain.record_outcomes() if log_outcomes else None
    row = {"world": world, "agents": agents, "plan_budget": plan_budget, "seed": seed, "planner": planner}
    row.update(run_world(brain, ticks))
    row["state_hash"] = brain.state_hash()
    if log is not None:
        row["outcomes"] = log.to_bytes()
        row["outcome_rows"] = len(log)
    return row


def run(args: argparse.Namespace) -> int:
    from goap.planners.base import PLANNERS
    from goap.registry import load_world

    for path in (args.json, args.csv):
        if path:
            files.check_writable(path)
    logs = getattr(args, "log_outcomes", None)
    if logs:
        from goap.argtypes import check_output_dir

        check_output_dir(logs, "--log-outcomes")
    worlds = [w.strip() for w in str(args.world).split(",") if w.strip()]
    if not worlds:
        raise ValueError("--world: name at least one world")
    for w in worlds:
        load_world(w)  # an unknown world fails here, before anything runs
    if args.planner not in PLANNERS:
        raise ValueError(f"unknown planner '{args.planner}' (known: {', '.join(sorted(PLANNERS))})")
    budgets = args.plan_budget or [None]
    cells = [(w, a, b, s, args.ticks, args.planner, args.device, bool(logs))
             for w, a, b, s in itertools.product(worlds, args.agents, budgets, args.seeds)]
    cluster = None
    if args.ray is not None:
        from goap.bench.distributed import Cluster

        c = Cluster(args.ray, args.ray_cpus)
        try:
            rows = c.map(run_cell, cells)
            cluster = c.info()
        finally:
            c.close()
    else:
        rows = [run_cell(*cell) for cell in cells]
    if logs:
        write_logs(rows, logs)
    if not args.quiet:
        print_sweep(rows)
    if args.json:
        meta = report.run_metadata() | {"ticks": args.ticks, "planner": args.planner, "device": args.device,
                                         "ray": cluster}
        files.write_output(args.json, json.dumps({"meta": meta, "results": rows}, indent=1, default=float) + "\n")
    if args.csv:
        flat = [{k: v for k, v in r.items() if k != "score"} | {f"score_{k}": v for k, v in r["score"].items()}
                for r in rows]
        files.write_output(args.csv, report.rows_to_csv(flat))
    return 0


def write_logs(rows: list[dict[str, Any]], folder: str) -> None:
    """Write each row's outcome log (its ``outcomes`` bytes, then dropped from the row) into ``folder``, each file
    whole or not at all; the row keeps the file's path as ``outcome_log``."""
    from pathlib import Path

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    for r in rows:
        path = out / log_name(r["world"], r["agents"], r["plan_budget"], r["seed"])
        files.write_atomic(path, r.pop("outcomes"))
        r["outcome_log"] = str(path)


def print_sweep(rows: list[dict[str, Any]], file: Any = None) -> None:
    header = ["world", "agents", "budget", "seed", "ms/tick", "goals", "goals/agent-min", "calls/goal",
              "failed/goal", "state hash"]
    table = [[r["world"], str(r["agents"]), str(r["plan_budget"]), str(r["seed"]), f"{r['ms_per_tick']:.2f}",
              str(r["goals_achieved"]), f"{r['goals_per_agent_minute']:.3f}", f"{r['planning_calls_per_goal']:.2f}",
              f"{r['failed_plans_per_goal']:.2f}", str(r["state_hash"])[:16]] for r in rows]
    report.print_table(header, table, file or sys.stdout)

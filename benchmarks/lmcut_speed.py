"""LM-cut's cost per state: `warp` A* + LM-cut against Fast Downward's ``astar(lmcut())``, task by task, one core.

For every task the same run measures both planners' search alone, as expansions per second:

* ``warp``: the task loaded (`goap.pddl.load_pddl`, the default finite-domain form), a `WarpAStarPlanner` with
  ``heuristic="lmcut"``, one thread, the bench's PDDL pool (`goap.bench.cli.PDDL_MAX_NODES`); one untimed call
  (kernel load, tables), then ``--repeat`` timed calls of ``plan`` (fewer once they pass 2 s), CPU seconds
  (``time.process_time``), median.
* ``fd``: Fast Downward from the ``up-fast-downward`` wheel (`goap.bench.external.builtin("fd-lmcut")`), its own
  ``Search time`` and ``Expanded`` lines (translation and parsing excluded). Its clock ticks in 4 ms steps on this
  machine, so each task runs ``--fd-runs`` times and the mean is kept; tasks whose mean is 0 have no ratio.

Rows: ``task``, ``warp_expanded``, ``warp_seconds``, ``warp_rate`` (expansions per second), ``fd_expanded``,
``fd_seconds``, ``fd_rate``, ``ratio`` (warp_rate / fd_rate: FD's cost per expansion over ours; >= 1/1.5 is within
1.5x of Fast Downward), ``cost`` (warp's), ``optimal`` (the set's ``optimal.json``), ``fd_length``, ``warp_total``
(load, planner set-up and search) and ``fd_total`` (its process's wall time, translator included). The summary
gives the median ratio over the tasks that have one and over those where Fast Downward's search takes at least
``--measurable`` seconds (its 4 ms clock steps are noise below), the totals of both planners' search and whole
times, and how many tasks each solved.

    python benchmarks/lmcut_speed.py                                  # the 46 IPC tasks (benchmarks/pddl)
    python benchmarks/lmcut_speed.py --tasks 'gripper/*,depot/task03' --repeat 1 --fd-runs 1
    python benchmarks/lmcut_speed.py --compare benchmarks/results/lmcut_speed.json   # same expansions and costs?
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1 / 1.5


def warp_row(domain_file: Path, problem_file: Path, repeat: int) -> dict:
    from goap.bench.cli import PDDL_MAX_NODES
    from goap.encoding import encode
    from goap.pddl import load_pddl
    from goap.planners.base import Status
    from goap.planners.warp_astar import WarpAStarPlanner

    t0 = time.perf_counter()
    task = load_pddl(domain_file, problem_file)
    tables = encode(task.domain)
    planner = WarpAStarPlanner(tables, device="cpu", heuristic="lmcut", max_nodes=PDDL_MAX_NODES, chunk_size=1,
                               threads=1)
    states, goals = tables.pack(task.state)[None], np.array([task.goal], dtype=np.int32)
    batch = planner.plan(states, goals)
    total = time.perf_counter() - t0
    times = []
    for _ in range(repeat):
        c0 = time.process_time()
        batch = planner.plan(states, goals)
        times.append(time.process_time() - c0)
        if sum(times) > 2.0:  # a long search: fewer calls
            break
    planner.close()
    seconds = float(statistics.median(times))
    ok = Status(int(batch.status[0])) == Status.OK
    expanded = int(batch.expanded[0])
    return {"warp_status": Status(int(batch.status[0])).name.lower(), "cost": float(batch.cost[0]) if ok else None,
            "warp_expanded": expanded, "warp_seconds": seconds,
            "warp_rate": expanded / seconds if seconds > 0 else None, "warp_total": total}


def fd_row(domain_file: Path, problem_file: Path, runs: int, time_limit: float) -> dict:
    from goap.bench.external import builtin, run_external

    planner = builtin("fd-lmcut")
    dom, prob = domain_file.read_text(), problem_file.read_text()
    searches, walls, res = [], [], None
    for _ in range(runs):
        res = run_external(planner, dom, prob, time_limit)
        if res.status != "ok":
            break
        searches.append(res.phases.get("search_only_seconds", 0.0))
        walls.append(res.seconds)
    if res is None or res.status != "ok":
        return {"fd_status": None if res is None else res.status, "fd_expanded": None, "fd_seconds": None,
                "fd_rate": None, "fd_total": None, "fd_length": None}
    seconds = float(np.mean(searches))
    return {"fd_status": "ok", "fd_expanded": res.expanded, "fd_seconds": seconds,
            "fd_rate": res.expanded / seconds if seconds > 0 and res.expanded else None,
            "fd_total": float(np.median(walls)), "fd_length": len(res.plan)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks-dir", type=Path, help="a folder of domain folders (default: the 46 IPC tasks)")
    ap.add_argument("--tasks", default="*", help="comma-separated globs over DOMAIN/TASK (default: all)")
    ap.add_argument("--repeat", type=int, default=3, help="timed warp calls per task (median)")
    ap.add_argument("--fd-runs", type=int, default=3, help="Fast Downward runs per task (mean of its search time)")
    ap.add_argument("--no-fd", action="store_true", help="warp only (the fd columns stay empty)")
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per Fast Downward run")
    ap.add_argument("--measurable", type=float, default=0.01, help="FD search seconds from which a ratio is counted "
                    "in the second median")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "lmcut_speed.json"))
    ap.add_argument("--compare", help="a JSON of an earlier run: report tasks whose expansions or costs differ")
    args = ap.parse_args(argv)

    from goap.bench.suites import default_tasks_dir
    from goap.pddl import optimal_costs, pddl_tasks

    if args.tasks_dir is None:
        args.tasks_dir = default_tasks_dir()
    globs = [g.strip() for g in args.tasks.split(",") if g.strip()]
    try:
        tasks = [(d, p, n) for d, p, n in pddl_tasks(args.tasks_dir) if any(fnmatch.fnmatch(n, g) for g in globs)]
    except ValueError as e:
        print(f"lmcut_speed: {e}", file=sys.stderr)
        return 2
    if not tasks:
        print(f"lmcut_speed: no task in {args.tasks_dir} matches {args.tasks!r}", file=sys.stderr)
        return 2
    optimal = optimal_costs(args.tasks_dir)
    rows = []
    print(f"{'task':24s} {'warp exp':>9s} {'warp s':>9s} {'warp exp/s':>11s} {'fd exp':>9s} {'fd s':>9s} "
          f"{'fd exp/s':>11s} {'ratio':>6s}")
    for dom, prob, name in tasks:
        row = {"task": name, "optimal": optimal.get(name), **warp_row(Path(dom), Path(prob), args.repeat)}
        if args.no_fd:
            row.update(fd_status=None, fd_expanded=None, fd_seconds=None, fd_rate=None, fd_total=None, fd_length=None)
        else:
            row.update(fd_row(Path(dom), Path(prob), args.fd_runs, args.time_limit))
        row["ratio"] = row["warp_rate"] / row["fd_rate"] if row["warp_rate"] and row["fd_rate"] else None
        rows.append(row)

        def f(x, spec):
            return format(x, spec) if x is not None else "-"
        print(f"{name:24s} {row['warp_expanded']:9d} {row['warp_seconds']:9.4f} {f(row['warp_rate'], '11,.0f')} "
              f"{f(row['fd_expanded'], '9d')} {f(row['fd_seconds'], '9.4f')} {f(row['fd_rate'], '11,.0f')} "
              f"{f(row['ratio'], '6.2f')}", flush=True)

    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    measurable = [r["ratio"] for r in rows if r["ratio"] is not None and r["fd_seconds"] >= args.measurable]
    both = [r for r in rows if r["fd_seconds"] is not None]
    summary = {
        "tasks": len(rows), "with_ratio": len(ratios), "median_ratio": statistics.median(ratios) if ratios else None,
        "measurable_seconds": args.measurable, "measurable": len(measurable),
        "median_ratio_measurable": statistics.median(measurable) if measurable else None,
        "target_ratio": TARGET, "within_target": sum(r >= TARGET for r in ratios),
        "warp_solved": sum(r["warp_status"] == "ok" for r in rows),
        "fd_solved": sum(r["fd_status"] == "ok" for r in rows),
        "warp_optimal": sum(r["cost"] is not None and r["cost"] == r["optimal"] for r in rows),
        "warp_search_total": sum(r["warp_seconds"] for r in both),
        "fd_search_total": sum(r["fd_seconds"] for r in both),
        "warp_total": sum(r["warp_total"] for r in both), "fd_total": sum(r["fd_total"] for r in both),
    }

    def g(x):
        return "-" if x is None else f"{x:.3f}"
    print(f"median ratio {g(summary['median_ratio'])} over {len(ratios)} tasks, "
          f"{g(summary['median_ratio_measurable'])} over the {len(measurable)} where FD searches >= "
          f"{args.measurable} s (target >= {TARGET:.3f}; "
          f"{summary['within_target']} tasks within)")
    print(f"search total: warp {summary['warp_search_total']:.2f} s, fd {summary['fd_search_total']:.2f} s; whole: "
          f"warp {summary['warp_total']:.2f} s, fd {summary['fd_total']:.2f} s; solved: warp {summary['warp_solved']} "
          f"({summary['warp_optimal']} at the known optimum), fd {summary['fd_solved']}")
    differ = []
    if args.compare:
        old = {r["task"]: r for r in json.loads(Path(args.compare).read_text())["rows"]}
        for r in rows:
            o = old.get(r["task"])
            if o is not None and (o["warp_expanded"], o["cost"]) != (r["warp_expanded"], r["cost"]):
                differ.append(r["task"])
        print(f"against {args.compare}: {len(differ)} of {sum(r['task'] in old for r in rows)} tasks differ in "
              f"expansions or cost {differ}")
        summary["differ_from_compare"] = differ
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             check=False).stdout.strip()
    except OSError:
        rev = None
    meta = {"python": platform.python_version(), "machine": platform.machine(), "processor": platform.processor(),
            "cpus": os.cpu_count(), "revision": rev, "time": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "load_average": os.getloadavg(), "argv": sys.argv[1:]}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "summary": summary, "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())

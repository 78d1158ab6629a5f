"""Check the optima in optimal.json against Fast Downward A* + LM-cut, and fill the missing ones (``--write``).

    python benchmarks/pddl/confirm_optima.py [--tasks GLOB] [--time-limit S] [--write]

Every Fast Downward plan is replayed by `goap.pddl.validate` before its cost is believed. Needs the baselines
extra (``pip install -e ".[baselines]"``). Exit status 1 when a stored optimum disagrees with Fast Downward's.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path

from goap.bench.external import builtin, run_external
from goap.pddl import load_pddl, pddl_tasks
from goap.pddl.validate import step_text, validate_plan

ROOT = Path(__file__).resolve().parent


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", default="*", help="glob on domain/taskNN (default: all)")
    p.add_argument("--time-limit", type=float, default=300.0)
    p.add_argument("--write", action="store_true", help="store the optima that optimal.json lacks")
    args = p.parse_args()
    fd = builtin("fd-lmcut")
    path = ROOT / "optimal.json"
    data = json.loads(path.read_text())
    bad = 0
    for dom, prob, name in pddl_tasks(ROOT):
        if not fnmatch.fnmatchcase(name, args.tasks):
            continue
        entry = data["problems"][name + ".pddl"]
        res = run_external(fd, dom.read_text(), prob.read_text(), args.time_limit)
        if res.status != "ok":
            print(f"{name}: fd-lmcut {res.status} after {res.seconds:.1f} s")
            continue
        task = load_pddl(dom, prob)
        check = validate_plan(task.lifted, task.problem, res.plan)
        stored = entry.get("optimal_cost")
        verdict = "invalid plan: " + str(check.error) if not check.valid else (
            "new" if stored is None else "agrees" if stored == check.cost else f"DISAGREES with stored {stored}")
        print(f"{name}: fd-lmcut cost {check.cost} in {res.seconds:.2f} s ({verdict})")
        if check.valid and stored is not None and stored != check.cost:
            bad += 1
        if check.valid and stored is None and args.write:
            entry.update(status="solved", optimal_cost=int(check.cost), plan=[step_text(s) for s in res.plan],
                         optimal_source=f"{fd.version}, {fd.description}", fd_wall_s=round(res.seconds, 2),
                         fd_expanded=res.expanded)
    if args.write:
        path.write_text(json.dumps(data, indent=1) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

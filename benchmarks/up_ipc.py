"""Every IPC task through Unified Planning: read by UP's PDDLReader, planned by the ``warp-goap`` engine, the plan
checked by UP's sequential plan validator, its cost compared with ``goap solve``'s (a separate process, the
command a user runs) and with the known optimum.

UP's reader refuses ``(either ...)`` types in a predicate's parameters (zenotravel's ``at``). For those domains
the script reads a copy where the ``(either ...)`` of the :predicates section is replaced by ``object``: in a
predicate's declaration the type only restricts which atoms may be written, every action parameter keeps its
own type, so the tasks' states and plans are the same; the JSON says which tasks were read that way.

    python benchmarks/up_ipc.py --json benchmarks/results/up_ipc.json [--domains blocks,depot] [--time-limit 60]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from goap.pddl import optimal_costs, pddl_tasks  # noqa: E402


def _either_to_object(domain_text: str) -> str:
    """The domain with ``(either ...)`` parameter types of its :predicates section replaced by ``object``."""
    m = re.search(r"\(:predicates", domain_text, re.IGNORECASE)
    if not m:
        return domain_text
    depth, end = 0, m.start()
    for end in range(m.start(), len(domain_text)):
        depth += {"(": 1, ")": -1}.get(domain_text[end], 0)
        if depth == 0:
            break
    section = re.sub(r"\(either[^()]*\)", "object", domain_text[m.start():end + 1], flags=re.IGNORECASE)
    return domain_text[:m.start()] + section + domain_text[end + 1:]


def read_up(domain: Path, problem: Path):
    """(UP problem, how it was read): ``as-is`` or ``either->object``."""
    from unified_planning.io import PDDLReader

    try:
        return PDDLReader().parse_problem(str(domain), str(problem)), "as-is"
    except Exception:  # noqa: BLE001 - UP's reader raises pyparsing's errors; retried on the rewritten copy
        text = domain.read_text()
        fixed = _either_to_object(text)
        if fixed == text:
            raise
        return PDDLReader().parse_problem_string(fixed, problem.read_text()), "either->object"


def goap_solve_cost(domain: Path, problem: Path, time_limit: float) -> float | None:
    out = subprocess.run([sys.executable, "-m", "goap", "solve", str(domain), str(problem), "--time-limit",
                          str(time_limit)], cwd=ROOT, capture_output=True, text=True, timeout=time_limit + 120)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]).get("cost") if lines else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks-dir", default=str(ROOT / "benchmarks" / "pddl"))
    ap.add_argument("--domains", default=None, help="comma-separated domain folders (default: all)")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--no-solve", action="store_true", help="skip the goap solve comparison")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    from unified_planning.shortcuts import OneshotPlanner, PlanValidator, get_environment

    import goap.up

    get_environment().credits_stream = None
    goap.up.register()
    optima = optimal_costs(args.tasks_dir)
    wanted = set(args.domains.split(",")) if args.domains else None
    rows = []
    t_all = time.perf_counter()
    for dom, prob, name in pddl_tasks(args.tasks_dir):
        if wanted and name.split("/")[0] not in wanted:
            continue
        row: dict = {"task": name, "optimal": optima.get(name)}
        try:
            problem, row["read"] = read_up(dom, prob)
        except Exception as e:  # noqa: BLE001
            row.update(read="failed", error=f"{type(e).__name__}: {str(e)[:200]}")
            rows.append(row)
            print(f"{name:22s} UP could not read it: {row['error']}", flush=True)
            continue
        row["supported"] = goap.up.WarpGoapEngine.supports(problem.kind)
        t0 = time.perf_counter()
        with OneshotPlanner(name="warp-goap", params={"device": args.device}) as planner:
            result = planner.solve(problem, timeout=args.time_limit)
        row.update(status=result.status.name, seconds=round(time.perf_counter() - t0, 3),
                   expansions=int(result.metrics.get("expansions", -1)) if result.metrics else None)
        if result.plan is not None:
            with PlanValidator(name="sequential_plan_validator") as validator:
                check = validator.validate(problem, result.plan)
            row.update(valid=check.status.name == "VALID", length=len(result.plan.actions))
            metric = [float(v) for v in (check.metric_evaluations or {}).values()]
            row["cost"] = metric[0] if metric else float(len(result.plan.actions))
        if not args.no_solve:
            row["goap_solve_cost"] = goap_solve_cost(dom, prob, args.time_limit)
        rows.append(row)
        print(f"{name:22s} {row['read']:15s} {row['status']:18s} cost {row.get('cost')} (solve "
              f"{row.get('goap_solve_cost')}, optimum {row['optimal']}) valid {row.get('valid')} "
              f"{row['seconds']:.2f} s", flush=True)
    solved = [r for r in rows if r.get("status") in ("SOLVED_OPTIMALLY", "SOLVED_SATISFICING")]
    summary = {
        "tasks": len(rows), "read_as_is": sum(r["read"] == "as-is" for r in rows),
        "read_rewritten": sum(r["read"] == "either->object" for r in rows),
        "solved": len(solved), "valid": sum(bool(r.get("valid")) for r in solved),
        "cost_equals_goap_solve": None if args.no_solve else sum(r.get("cost") == r.get("goap_solve_cost")
                                                                 for r in solved),
        "cost_equals_optimum": sum(r.get("optimal") is not None and r.get("cost") == r["optimal"] for r in solved),
        "wall_seconds": round(time.perf_counter() - t_all, 1),
    }
    print(json.dumps(summary))
    if args.json:
        import unified_planning

        doc = {"meta": {"unified_planning": unified_planning.__version__, "time_limit": args.time_limit,
                        "device": args.device, "command": " ".join(sys.argv)}, "summary": summary, "results": rows}
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as f:
            f.write(json.dumps(doc, indent=1) + "\n")
        Path(f.name).replace(path)
    return 0 if summary["solved"] == summary["valid"] == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())

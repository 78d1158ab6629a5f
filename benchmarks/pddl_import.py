"""PDDL import against Fast Downward's translator: CPU seconds, peak memory and ground actions, task by task.

Each task is imported twice in the same run, each time in a fresh child process: ``goap.pddl.load_pddl`` (parse,
ground, compile to a goap `Domain`), and Fast Downward's translator from the ``up-fast-downward`` wheel
(``python -m fast_downward.translate DOMAIN PROBLEM``: parse, normalise, ground, invariant synthesis, write the
SAS+ file). The CPU seconds compared are each tool's own, measured inside the child from its start of work to
its end (ours: ``time.process_time`` around ``load_pddl``; Fast Downward's: the ``Done! [X s CPU`` it prints), so
the interpreter's start-up and imports, the same for both, are left out; the child's whole CPU time and its peak
resident memory (``ru_maxrss``, from ``os.wait4``) are recorded as well. A tool that passes ``--timeout``
wall seconds is killed and recorded as ``timeout``.

Rows: ``task``, ``ours_cpu``, ``fd_cpu``, ``ratio`` (ours / FD; None where FD prints 0.000 s), ``ratio_process``
(the children's whole CPU time, start-up included), ``ours_peak_mib``, ``fd_peak_mib``,
``ours_actions``, ``fd_operators``, ``ours_facts``, ``fd_variables``, ``ours_status``, ``fd_status``; the summary
gives the median and worst ratios.

    python benchmarks/pddl_import.py                         # shared/pddl-more and shared/pddl (46 IPC tasks)
    python benchmarks/pddl_import.py --sets /work/shared/pddl-more --domains grid,tetris-opt14-strips
    python benchmarks/pddl_import.py --out benchmarks/results/pddl_import.json --timeout 120
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
DEFAULT_SETS = [SHARED / "pddl-more", SHARED / "pddl"]

_OURS = r"""
import json, sys, time
t0 = time.process_time()
from goap.pddl import load_pddl
t1 = time.process_time()
try:
    task = load_pddl(sys.argv[1], sys.argv[2])
    out = {"status": "ok", "cpu": time.process_time() - t1, "actions": task.n_actions, "facts": task.n_facts}
except ValueError as e:
    out = {"status": "error", "cpu": time.process_time() - t1, "error": str(e)[:300]}
print("RESULT " + json.dumps(out))
"""


def task_files(folder: Path) -> list[tuple[Path, Path]]:
    """(domain file, problem file) of every task in one domain folder of the Fast Downward benchmark layout."""
    out = []
    for prob in sorted(folder.glob("*.pddl")):
        if "domain" in prob.stem:
            continue
        candidates = []
        for stem in dict.fromkeys((prob.stem, prob.stem.split("-")[0])):  # p01-airport1-p1 has p01-domain.pddl
            candidates += [folder / f"{stem}-domain.pddl", folder / f"domain_{stem}.pddl",
                           folder / f"domain-{stem}.pddl"]
        dom = next((c for c in candidates if c.is_file()), folder / "domain.pddl")
        if dom.is_file():
            out.append((dom, prob))
    return out


def _wait4_popen(cmd: list[str], timeout: float, cwd: str, env: dict | None = None) -> dict:
    """Run ``cmd``, reap it with wait4 (so its own rusage is read), kill it after ``timeout`` wall seconds."""
    with tempfile.TemporaryFile(mode="w+") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=cwd, env=env)
        deadline = time.monotonic() + timeout
        status = "ok"
        while True:
            pid, code, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                pid, code, usage = os.wait4(proc.pid, 0)
                status = "timeout"
                break
            time.sleep(0.02)
        proc.returncode = code  # reaped here: keep Popen from waiting again
        log.seek(0)
        text = log.read()
    return {"status": status, "child_cpu": usage.ru_utime + usage.ru_stime, "peak_mib": usage.ru_maxrss / 1024,
            "exit": code, "out": text}


def ours(dom: Path, prob: Path, timeout: float) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = _wait4_popen([sys.executable, "-c", _OURS, str(dom), str(prob)], timeout, str(ROOT), env)
    m = re.search(r"^RESULT (.*)$", r["out"], re.M)
    res = json.loads(m.group(1)) if m else {"status": r["status"] if r["status"] == "timeout" else "crash"}
    if r["status"] == "timeout":
        res["status"] = "timeout"
    res.update(child_cpu=r["child_cpu"], peak_mib=r["peak_mib"])
    return res


def fd(dom: Path, prob: Path, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        r = _wait4_popen([sys.executable, "-m", "fast_downward.translate", str(dom), str(prob),
                          "--sas-file", os.path.join(tmp, "output.sas")], timeout, tmp)
    res = {"status": r["status"], "child_cpu": r["child_cpu"], "peak_mib": r["peak_mib"]}
    if r["status"] == "ok" and r["exit"] != 0:
        res["status"] = "error"
        res["error"] = r["out"][-300:]
    done = re.search(r"^Done! \[([0-9.]+)s CPU", r["out"], re.M)
    res["cpu"] = float(done.group(1)) if done else None
    ops = re.search(r"^Translator operators: (\d+)", r["out"], re.M)
    var = re.search(r"^Translator variables: (\d+)", r["out"], re.M)
    res["operators"] = int(ops.group(1)) if ops else None
    res["variables"] = int(var.group(1)) if var else None
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default=",".join(str(s) for s in DEFAULT_SETS), help="comma-separated task folders")
    ap.add_argument("--domains", default="", help="only these domain folders (comma-separated)")
    ap.add_argument("--tasks", default="", help="only these task names (problem file stems, comma-separated)")
    ap.add_argument("--timeout", type=float, default=120.0, help="wall seconds per tool and task")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "pddl_import.json"))
    args = ap.parse_args(argv)
    want_domains = {d for d in args.domains.split(",") if d}
    want_tasks = {t for t in args.tasks.split(",") if t}
    rows = []
    for root in (Path(s) for s in args.sets.split(",") if s):
        for folder in sorted(p for p in root.iterdir() if p.is_dir()):
            if want_domains and folder.name not in want_domains:
                continue
            for dom, prob in task_files(folder):
                if want_tasks and prob.stem not in want_tasks:
                    continue
                a, b = ours(dom, prob, args.timeout), fd(dom, prob, args.timeout)
                ok = a.get("status") == "ok" and b["status"] == "ok"
                ratio = a["cpu"] / b["cpu"] if ok and b.get("cpu") else None  # FD prints 0.000 s on tiny tasks
                ratio_process = a["child_cpu"] / b["child_cpu"] if ok and b["child_cpu"] else None
                row = {
                    "set": root.name, "task": f"{folder.name}/{prob.stem}", "ours_status": a["status"],
                    "fd_status": b["status"], "ours_cpu": a.get("cpu"), "fd_cpu": b["cpu"], "ratio": ratio,
                    "ratio_process": ratio_process,
                    "ours_child_cpu": a["child_cpu"], "fd_child_cpu": b["child_cpu"],
                    "ours_peak_mib": a["peak_mib"], "fd_peak_mib": b["peak_mib"], "ours_actions": a.get("actions"),
                    "fd_operators": b["operators"], "ours_facts": a.get("facts"), "fd_variables": b["variables"],
                    "ours_error": a.get("error"),
                }
                rows.append(row)
                print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()
                                  if k not in ("ours_error",)}), flush=True)
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    worst = sorted((r for r in rows if r["ratio"] is not None), key=lambda r: -r["ratio"])[:5]
    process = [r["ratio_process"] for r in rows if r["ratio_process"] is not None]
    summary = {
        "tasks": len(rows), "compared": len(ratios),
        "median_ratio_process": statistics.median(process) if process else None,
        "max_ratio_process": max(process) if process else None,
        "median_ratio": statistics.median(ratios) if ratios else None,
        "max_ratio": max(ratios) if ratios else None,
        "within_1_5x": sum(1 for x in ratios if x <= 1.5),
        "ours_not_ok": [r["task"] for r in rows if r["ours_status"] != "ok"],
        "fd_not_ok": [r["task"] for r in rows if r["fd_status"] != "ok"],
        "worst": [{"task": r["task"], "ratio": r["ratio"], "ours_cpu": r["ours_cpu"], "fd_cpu": r["fd_cpu"]}
                  for r in worst],
        "total_ours_cpu": sum(r["ours_cpu"] or 0 for r in rows if r["ratio"] is not None),
        "total_fd_cpu": sum(r["fd_cpu"] or 0 for r in rows if r["ratio"] is not None),
    }
    meta = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "timeout": args.timeout,
            "command": " ".join(["python", "benchmarks/pddl_import.py", *(argv if argv is not None else sys.argv[1:])])}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"meta": meta, "summary": summary, "rows": rows}, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

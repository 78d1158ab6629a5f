"""Pruning against no pruning, from one `goap bench` JSON: expansions and seconds per domain, as in docs/measured.md.

    goap bench --suite pddl --planners "warp,warp[pruning=stubborn],fd-lmcut" --json ipc.json
    python benchmarks/pruning_table.py ipc.json [--base warp] [--pruned "warp[pruning=stubborn]"]

Per domain: tasks both goap columns solve, their expansions summed (and Fast Downward's where it reports them),
the tasks where pruning expands fewer states, and the search seconds summed (``seconds``: the search alone,
``total_seconds`` with parsing and grounding); then the coverage of each column. Writes the table as JSON too
(``--json``).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def table(data: dict, base: str, pruned: str, fd: str = "fd-lmcut") -> list[dict]:
    by: dict[tuple[str, str], dict] = {(r["problem"], r["planner"]): r for r in data["results"]}
    problems = sorted({r["problem"] for r in data["results"]})
    groups: dict[str, dict] = defaultdict(lambda: defaultdict(float))
    for p in problems:
        g = groups[p.split("/")[0]]
        rows = {name: by.get((p, name)) for name in (base, pruned, fd)}
        g["tasks"] += 1
        for name, r in rows.items():
            if r is not None and r["status"] == "ok":
                g[f"solved:{name}"] += 1
        a, b = rows[base], rows[pruned]
        if a is None or b is None or a["status"] != "ok" or b["status"] != "ok":
            continue
        g["both"] += 1
        g["expanded:base"] += a["expanded"] or 0
        g["expanded:pruned"] += b["expanded"] or 0
        g["fewer"] += int((b["expanded"] or 0) < (a["expanded"] or 0))
        g["seconds:base"] += a["seconds"] or 0.0
        g["seconds:pruned"] += b["seconds"] or 0.0
        g["total:base"] += a["total_seconds"] or 0.0
        g["total:pruned"] += b["total_seconds"] or 0.0
        f = rows[fd]
        if f is not None and f["status"] == "ok":
            g["fd_both"] += 1
            g["seconds:fd"] += f["seconds"] or 0.0
            if f.get("expanded") is not None:
                g["expanded:fd"] += f["expanded"]
    out = []
    total: dict[str, float] = defaultdict(float)
    for name, g in sorted(groups.items()):
        out.append({"domain": name, **g})
        for k, v in g.items():
            total[k] += v
    out.append({"domain": "all", **total})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json", type=Path)
    ap.add_argument("--base", default="warp")
    ap.add_argument("--pruned", default="warp[pruning=stubborn]")
    ap.add_argument("--fd", default="fd-lmcut")
    ap.add_argument("--json-out", dest="json_out", type=Path, default=None)
    args = ap.parse_args()
    rows = table(json.loads(args.json.read_text()), args.base, args.pruned, args.fd)
    print("| domain | tasks | solved: none / stubborn / FD | expansions (both solve): none -> stubborn (FD) | fewer "
          "| search s: none -> stubborn (FD) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        solved = " / ".join(str(int(r.get(f"solved:{n}", 0))) for n in (args.base, args.pruned, args.fd))
        fd_exp = f" ({int(r['expanded:fd']):,})" if r.get("expanded:fd") else ""
        fd_s = f" ({r['seconds:fd']:.2f})" if r.get("seconds:fd") else ""
        print(f"| {r['domain']} | {int(r['tasks'])} | {solved} | {int(r.get('expanded:base', 0)):,} -> "
              f"{int(r.get('expanded:pruned', 0)):,}{fd_exp} | {int(r.get('fewer', 0))}/{int(r.get('both', 0))} | "
              f"{r.get('seconds:base', 0):.2f} -> {r.get('seconds:pruned', 0):.2f}{fd_s} |")
    if args.json_out:
        args.json_out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()

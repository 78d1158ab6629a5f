"""What ``goap run`` reports about a world's agents: idle fraction, action counts, the counters a designer tunes by.

The numbers come from `goap.runtime.Brain.summary` (``idle_fraction``, ``action_counts``, ``counters``); this
module puts them in one shape for the JSON and the summary table, so both always say the same thing.

Keys (``goap run --json``):

* ``idle_fraction``: mean, over the ticks after warm-up, of the fraction of alive agents executing no action.
* ``counters``: at least ``actions_done``, ``actions_failed``, ``plans_requested``, ``plans_failed`` (0 when the
  run never counted one), plus every other counter the brain keeps.
* ``action_counts``: per action name, in domain order, the times it was completed; sums to
  ``counters.actions_done``.
* ``score``: the world's own measures (``world.score()``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Counters every run reports, 0 when nothing was counted.
REQUIRED_COUNTERS = ("actions_done", "actions_failed", "plans_requested", "plans_failed")


def run_metrics(brain: Any, summary: dict[str, Any]) -> dict[str, Any]:
    """``idle_fraction``, ``counters`` and ``action_counts`` of a finished run, from ``brain.summary()``."""
    names = [a.name for a in brain.domain.actions]
    counters = {k: int(v) if isinstance(v, int | np.integer) else v for k, v in dict(summary["counters"]).items()}
    for key in REQUIRED_COUNTERS:
        counters.setdefault(key, 0)
    counts = dict(summary.get("action_counts") or {})
    idle = summary.get("idle_fraction")
    return {
        "idle_fraction": None if idle is None else float(idle),
        "counters": counters,
        "action_counts": {n: int(counts.get(n, 0)) for n in names},  # domain order, never-used actions as 0
    }


def format_action_counts(action_counts: dict[str, int], width: int = 100) -> list[str]:
    """The action counts as a compact table (several columns when they fit in ``width`` characters)."""
    if not action_counts:
        return []
    total = sum(action_counts.values())
    cells = [(name, f"{n}", f"{n / total:5.1%}" if total else "    -") for name, n in action_counts.items()]
    name_w = max(len(c[0]) for c in cells)
    num_w = max(len(c[1]) for c in cells)
    cell_w = name_w + 2 + num_w + 2 + 6
    cols = max(1, min(4, (width + 4) // (cell_w + 4)))
    rows = -(-len(cells) // cols)
    out = []
    for r in range(rows):
        parts = []
        for c in range(cols):
            k = c * rows + r
            if k < len(cells):
                name, num, share = cells[k]
                parts.append(f"{name:<{name_w}}  {num:>{num_w}}  {share}")
        out.append("    ".join(parts).rstrip())
    never = [n for n, v in action_counts.items() if v == 0]
    if never:
        out.append(f"never completed ({len(never)}): {', '.join(never)}")
    return out

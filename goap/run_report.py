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
* ``idle_ticks_by_reason``, ``idle_ticks_by_goal``, ``failed_searches_by_goal``, ``failed_actions_by_reason``
  (the world's ``fail_reason``, `goap.world.FAIL_REASONS`): from `IdleStats` (idle reasons in
  `goap.codes.IDLE_REASONS`); ``idle_agents`` {reason: [agent, ...]} with ``--list-idle K``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from goap.explain import IDLE_REASONS

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


class IdleStats:
    """Idle agent-ticks by reason and by goal, and failed searches by goal and status, over a run.

    `update` launches one reduction after a tick (`goap.kernels.stats.count_idle`; not a step of the tick, so
    the brain's pipeline and its captured graphs are unchanged) into device arrays that are read once, by
    `report`. ``reasons`` holds each agent's reason of the last tick (-1: acting), for `idle_agents`.
    """

    def __init__(self, brain: Any):
        from goap.kernels import init_warp

        wp = init_warp()
        self.brain = brain
        G = len(brain.domain.goals)
        n = max(1, brain.n_agents)
        from goap.codes import Status

        self._n_status = len(Status)
        self.reasons = wp.full(n, -1, dtype=wp.int8, device=brain.device)
        self._idle = wp.zeros((len(IDLE_REASONS), G + 1), dtype=wp.int64, device=brain.device)
        self._failed = wp.zeros((max(1, G), self._n_status), dtype=wp.int64, device=brain.device)
        self._alive = wp.zeros(1, dtype=wp.int64, device=brain.device)
        from goap.world import FAIL_REASONS

        self.fail_reasons = tuple(getattr(brain.world, "FAIL_REASONS", None) or FAIL_REASONS)
        self._failed_actions = wp.zeros((max(1, len(brain.domain.actions)), len(self.fail_reasons)), dtype=wp.int64,
                                        device=brain.device)
        self.ticks = 0

    def update(self) -> None:
        """Count the tick that just ran (call after ``brain.tick()``)."""
        from goap.kernels.stats import count_idle

        b = self.brain
        if b.n_agents:
            b.launcher.launch(count_idle, b.n_agents, [
                b.agents, b.clock, int(b.cooldown_ticks), self.reasons, self._idle, self._failed, self._alive,
                self._failed_actions,
            ], record=False)
        self.ticks += 1

    def report(self) -> dict[str, Any]:
        """``idle_ticks_by_reason`` {reason: agent-ticks}, ``idle_ticks_by_goal`` {reason: {goal or "none": n}}
        (non-zero entries), ``failed_searches_by_goal`` {goal: {status: n}} (non-zero), over the updated ticks."""
        from goap.codes import Status

        names = ["none", *(g.name for g in self.brain.domain.goals)]
        idle = self._idle.numpy()
        failed = self._failed.numpy()
        by_goal = {r: {names[c]: int(idle[k, c]) for c in range(idle.shape[1]) if idle[k, c]}
                   for k, r in enumerate(IDLE_REASONS)}
        fails = {}
        for g, goal in enumerate(self.brain.domain.goals):
            row = {Status(s).label: int(failed[g, s]) for s in range(self._n_status) if failed[g, s]}
            if row:
                fails[goal.name] = row
        return {
            "idle_ticks_by_reason": {r: int(idle[k].sum()) for k, r in enumerate(IDLE_REASONS)},
            "idle_ticks_by_goal": by_goal,
            "failed_searches_by_goal": fails,
            "ticks_counted": self.ticks,
            "alive_agent_ticks": int(self._alive.numpy()[0]),
            "failed_actions_by_reason": self._failed_actions_report(),
        }

    def _failed_actions_report(self) -> dict[str, dict[str, int]]:
        """{action: {world reason ("none" when the world gave none): times it FAILED}}, non-zero entries."""
        counts = self._failed_actions.numpy()
        out = {}
        for a, action in enumerate(self.brain.domain.actions):
            row = {self.fail_reasons[r]: int(counts[a, r]) for r in range(counts.shape[1]) if counts[a, r]}
            if row:
                out[action.name] = row
        return out

    def idle_agents(self, k: int) -> dict[str, list[int]]:
        """Up to ``k`` agents per reason that were idle in the last counted tick, lowest index first, and under
        ``action_failed`` up to ``k`` whose action FAILED in it (one read of the reasons and the event bits)."""
        from goap.codes import event_bit

        codes = self.reasons.numpy()[: self.brain.n_agents]
        out = {r: [int(i) for i in np.flatnonzero(codes == n)[:k]] for n, r in enumerate(IDLE_REASONS)}
        bits = self.brain.event_bits.numpy()[: self.brain.n_agents]
        out["action_failed"] = [int(i) for i in np.flatnonzero(bits & np.uint32(event_bit("action_failed")))[:k]]
        return out


def format_idle(report: dict[str, Any], plan_budget: int | None = None) -> list[str]:
    """The idle and failure breakdown as a few lines of the ``goap run`` summary; when more than 2% of the
    agent-ticks waited for a plan, a line says the plan budget is the limit."""
    by_reason = report["idle_ticks_by_reason"]
    alive_ticks = report.get("alive_agent_ticks")
    total = sum(by_reason.values())
    share = (lambda n: f" ({n / alive_ticks:.1%})") if alive_ticks else (lambda n: "")
    out = [f"idle agent-ticks {total}{share(total)}: "
           + "   ".join(f"{r} {n}{share(n)}" for r, n in by_reason.items())]
    for r, goals in report["idle_ticks_by_goal"].items():
        if goals and r != "no_goal":
            top = sorted(goals.items(), key=lambda kv: -kv[1])[:6]
            out.append(f"  {r} by goal: " + "  ".join(f"{g} {n}" for g, n in top))
    fails = report["failed_searches_by_goal"]
    if fails:
        out.append("failed searches by goal: " + "  ".join(
            f"{g} ({', '.join(f'{s} {n}' for s, n in row.items())})" for g, row in fails.items()))
    else:
        out.append("failed searches by goal: none")
    waiting = by_reason.get("waiting", 0)
    if plan_budget and alive_ticks and waiting > 0.02 * alive_ticks:
        out.append(f"  {waiting / alive_ticks:.1%} of agent-ticks waited for a plan: the plan budget ({plan_budget} a "
                   "tick) is below what the agents ask for; try a larger --plan-budget (or a world replan_rate)")
    actions = report.get("failed_actions_by_reason") or {}
    if actions:
        top = sorted(actions.items(), key=lambda kv: -sum(kv[1].values()))[:6]
        out.append("failed actions by reason: " + "  ".join(
            f"{a} ({', '.join(f'{r} {n}' for r, n in sorted(row.items(), key=lambda kv: -kv[1]))})"
            for a, row in top))
    return out

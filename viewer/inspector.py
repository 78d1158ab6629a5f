"""The selected agent's mind as lines of text: facts, goals by priority, plan, replan cause, last failure.

`inspector_lines` is a pure function of the Brain's public arrays (and a few optional world attributes), so
the panel can be tested without a window and the renderer only lays lines out by style.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from goap.planners import Status
from goap.runtime import CAUSES
from goap.vector import goals_satisfied

#: The styles `inspector_lines` uses; the renderer gives each a colour (and "fact" lines flow in columns).
STYLES = ("title", "header", "text", "fact", "goal", "goal_current", "dim", "step_done", "step_current",
          "step_todo", "warn")


def _name(names: list[str], k: int) -> str:
    return names[k] if 0 <= k < len(names) else "none"


def inspector_lines(brain: Any, world: Any, i: int) -> list[tuple[str, str]]:
    """Agent ``i`` described as ``(text, style)`` lines; reads ``brain`` (a `goap.runtime.Brain`) only."""
    i = int(i)
    if not 0 <= i < brain.n_agents:
        raise IndexError(f"agent {i} out of range (0..{brain.n_agents - 1})")
    actions = [a.name for a in brain.domain.actions]
    goals = [g.name for g in brain.domain.goals]
    out: list[tuple[str, str]] = [(f"Agent {i}", "title")]

    body = []
    pos = getattr(world, "positions", None)
    if pos is not None and len(pos) > i:
        body.append(f"at ({pos[i, 0]:.1f}, {pos[i, 1]:.1f})")
    team = getattr(world, "team", None)
    if team is not None and len(team) > i:
        body.append(f"team {int(team[i])}")
    health = getattr(world, "health", None)
    if health is not None and len(health) > i:
        body.append(f"health {int(health[i])}")
    alive = getattr(world, "alive", None)
    if alive is not None and len(alive) > i and not alive[i]:
        body.append("DEAD")
    if body:
        out.append(("  ".join(body), "text"))

    # --- what it does now
    a = int(brain.action[i])
    if a >= 0:
        out.append((f"Doing: {actions[a]} ({int(brain.action_ticks[i])} ticks)", "text"))
    elif brain.needs_plan[i]:
        out.append((f"Waiting for a plan ({int(brain.waiting[i])} ticks)", "warn"))
    else:
        out.append(("Idle", "dim"))

    # --- goals, highest priority first; the current one marked
    g = int(brain.goal[i])
    out.append((f"Goal: {_name(goals, g)}", "header"))
    prio = np.asarray(brain.priorities[i], dtype=np.float64)
    sat = goals_satisfied(brain.tables.goals, brain.states[i : i + 1])[0]
    cooling = brain.cooldown_until[i] > brain.tick_count
    for k in sorted(range(len(goals)), key=lambda k: (-prio[k], k)):
        notes = []
        if sat[k]:
            notes.append("met")
        if cooling[k]:
            notes.append("cooldown")
        note = f"  ({', '.join(notes)})" if notes else ""
        style = "goal_current" if k == g else ("dim" if prio[k] <= 0 or sat[k] else "goal")
        out.append((f"{'>' if k == g else ' '} {goals[k]:<16}{prio[k]:7.2f}{note}", style))

    # --- the plan, the current step highlighted
    n, step = int(brain.plan_length[i]), int(brain.step[i])
    stale = bool(brain.needs_plan[i])  # the old plan stays in the arrays until the new one arrives
    if n:
        head = f"Plan: {n} steps, cost {float(brain.plan_cost[i]):.1f}, step {min(step + 1, n)}/{n}"
        out.append((head + (" (old, replanning)" if stale else ""), "header"))
        for s, act in enumerate(brain.plan[i, :n]):
            style = "step_done" if s < step else ("step_current" if s == step else "step_todo")
            style = "dim" if stale else style
            out.append((f"{'>' if s == step else ' '} {s + 1:2d}. {_name(actions, int(act))}", style))
    else:
        out.append(("Plan: none", "header"))

    cause = int(brain.replan_cause[i])
    fail = int(brain.last_failure[i])
    out.append((f"Last replan: {CAUSES[cause] if 0 <= cause < len(CAUSES) else cause}", "text"))
    out.append((f"Last failure: {Status(fail).name if fail >= 0 else 'none'}", "warn" if fail >= 0 else "text"))

    # --- facts, decoded
    out.append(("Facts", "header"))
    out.extend((tok, "fact") for tok in brain.tables.describe(brain.states[i]).split())
    return out

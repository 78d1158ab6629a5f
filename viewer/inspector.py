"""The selected agent's mind as lines of text: facts, goals by priority, plan, replan cause, last failure.

`inspector_lines` is a pure function of the Brain's public arrays (and a few optional world attributes), so
the panel can be tested without a window and the renderer only lays lines out by style.

It reads one row of each array it shows (`goap.worldview.to_host_row`): on a CUDA brain only that agent's
row crosses to the host, once per published snapshot. What the agent does now is ``brain.action[i]`` and the
highlighted plan step is ``brain.step[i]``: after a tick the two agree (``plan[step] == action``), so the panel
never shows one action as "Doing" and another as current.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from goap.planners import Status
from goap.runtime import CAUSES, EVENTS
from goap.worldview import to_host_row

#: The styles `inspector_lines` uses; the renderer gives each a colour (and "fact" lines flow in columns).
STYLES = ("title", "header", "text", "fact", "goal", "goal_current", "dim", "step_done", "step_current",
          "step_todo", "warn")


def _name(names: list[str], k: int) -> str:
    return names[k] if 0 <= k < len(names) else "none"


def _row(obj: Any, name: str, i: int) -> np.ndarray | None:
    arr = getattr(obj, name, None)
    if arr is None:
        return None
    try:
        if len(arr) <= i:
            return None
    except TypeError:
        return None
    return to_host_row(arr, i)


def _scalar(obj: Any, name: str, i: int, default: Any = None) -> Any:
    row = _row(obj, name, i)
    return default if row is None else row.item()


def _event_names(mask: int) -> list[str]:
    """The names of the event bits set in ``mask`` (bit k is ``EVENTS[k]``)."""
    return [name for k, name in enumerate(EVENTS) if mask & (1 << k)]


def inspector_lines(brain: Any, world: Any, i: int) -> list[tuple[str, str]]:
    """Agent ``i`` described as ``(text, style)`` lines; reads ``brain`` (a `goap.runtime.Brain`) only."""
    i = int(i)
    if not 0 <= i < brain.n_agents:
        raise IndexError(f"agent {i} out of range (0..{brain.n_agents - 1})")
    domain = brain.domain
    actions = [a.name for a in domain.actions]
    goals = [g.name for g in domain.goals]
    out: list[tuple[str, str]] = [(f"Agent {i}", "title")]

    body = []
    pos = _row(world, "positions", i)
    if pos is not None and pos.shape[-1:] == (2,) and np.isfinite(pos).all():
        body.append(f"at ({pos[0]:.1f}, {pos[1]:.1f})")
    team = _scalar(world, "team", i)
    if team is not None:
        body.append(f"team {int(team)}")
    health = _scalar(world, "health", i)
    if health is not None:
        body.append(f"health {int(health)}")
    alive = _scalar(brain, "alive", i, True) and _scalar(world, "alive", i, True)
    if not alive:
        body.append("DEAD")
    if body:
        out.append(("  ".join(body), "text"))

    # --- what it does now: brain.action, the plan step brain.step points at
    a = int(_scalar(brain, "action", i, -1))
    needs_plan = bool(_scalar(brain, "needs_plan", i, False))
    if a >= 0:
        out.append((f"Doing: {_name(actions, a)} ({int(_scalar(brain, 'action_ticks', i, 0))} ticks)", "text"))
    elif needs_plan:
        out.append((f"Waiting for a plan ({int(_scalar(brain, 'waiting', i, 0))} ticks)", "warn"))
    else:
        out.append(("Idle" if alive else "Idle (dead)", "dim"))
    events = _scalar(brain, "event_bits", i)
    if events:
        names = _event_names(int(events))
        if names:
            out.append(("Events: " + ", ".join(names), "text"))

    # --- goals, highest priority first; the current one marked
    state = brain.tables.unpack(_row(brain, "states", i))
    g = int(_scalar(brain, "goal", i, -1))
    out.append((f"Goal: {_name(goals, g)}", "header"))
    prio = np.asarray(_row(brain, "priorities", i), dtype=np.float64)
    cool_row = _row(brain, "cooldown_until", i)
    cooling = cool_row > int(brain.tick_count) if cool_row is not None else np.zeros(len(goals), bool)
    for k in sorted(range(len(goals)), key=lambda k: (-prio[k], k)):
        met = domain.satisfies(state, domain.goals[k].want)
        notes = [n for n, on in (("met", met), ("cooldown", bool(cooling[k]))) if on]
        note = f"  ({', '.join(notes)})" if notes else ""
        style = "goal_current" if k == g else ("dim" if prio[k] <= 0 or met else "goal")
        out.append((f"{'>' if k == g else ' '} {goals[k]:<16}{prio[k]:7.2f}{note}", style))

    # --- the plan, the current step (brain.step) highlighted
    n, step = int(_scalar(brain, "plan_length", i, 0)), int(_scalar(brain, "step", i, 0))
    if n:
        plan = _row(brain, "plan", i)[:n]
        cost = _scalar(brain, "plan_cost", i)
        cost_text = f", cost {float(cost):.1f}" if cost is not None else ""
        head = f"Plan: {n} steps{cost_text}, step {min(step + 1, n)}/{n}"
        out.append((head + (" (old, replanning)" if needs_plan else ""), "header"))
        for s, act in enumerate(plan.tolist()):
            style = "step_done" if s < step else ("step_current" if s == step else "step_todo")
            style = "dim" if needs_plan else style  # the old plan stays in the arrays until the new one arrives
            out.append((f"{'>' if s == step else ' '} {s + 1:2d}. {_name(actions, int(act))}", style))
    else:
        out.append(("Plan: none", "header"))

    cause = int(_scalar(brain, "replan_cause", i, 0))
    fail = int(_scalar(brain, "last_failure", i, -1))
    out.append((f"Last replan: {CAUSES[cause] if 0 <= cause < len(CAUSES) else cause}", "text"))
    out.append((f"Last failure: {Status(fail).name if fail >= 0 else 'none'}", "warn" if fail >= 0 else "text"))

    # --- facts, decoded
    out.append(("Facts", "header"))
    out.extend((f"{f.name}={f.format(v)}", "fact") for f, v in zip(domain.facts, state, strict=True))
    return out

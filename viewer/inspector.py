"""The selected agent's mind as lines of text: facts, goals by priority, plan, replan cause, last failure; and, for
the why panel (key W) and the goal graph (key G), its explanation (`why_lines`, from `goap.explain`) and its
goal's subgraph (`goal_graph`, from `goap.graph`).

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
    if domain.declares_types:  # the agent's type (goap.domain.Domain.types): its actions, goals and costs
        t = int(_scalar(brain, "agent_type", i, 0))
        body.append(f"type {domain.types[t].name if 0 <= t < len(domain.types) else t}")
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


# --- the why panel and the goal graph ---------------------------------------------------------------------------
#: Short words for a goal's status in the why panel (`goap.explain.GoalScore.status`).
_STATUS_WORDS = {"chosen": "chosen", "satisfied": "met", "cooling_down": "cooling", "priority_zero": "priority 0",
                 "not_allowed": "not allowed", "skipped_for_pin": "pinned away", "lower_score": "outscored"}


def why_lines(brain: Any, i: int) -> list[tuple[str, str]]:
    """Agent ``i``'s explanation (`goap.explain.explain_agent`: its rows only) as styled lines for the panel: the
    headline, every goal with its score and why it was or was not chosen, the plan with each step's cost and what
    it changes, what blocks a failed goal, and the fixes. Long lines are wrapped by the renderer."""
    from goap.explain import explain_agent

    e = explain_agent(brain, int(i))
    out: list[tuple[str, str]] = [(f"Why: agent {i}", "title"), (e.headline(), "warn" if e.idle else "text")]
    out.append(("Goals: score, why", "header"))
    for g in sorted(e.goals, key=lambda g: (g.status != "chosen", -g.score)):
        word = _STATUS_WORDS.get(g.status, g.status)
        if g.status == "cooling_down":
            word = f"cooling until {g.cooling_until}" + (f" ({e.failure})" if g.goal == e.failed_goal else "")
        bonus = f"+{g.hysteresis:g}" if g.hysteresis else ""
        style = "goal_current" if g.status == "chosen" else ("goal" if g.status in ("lower_score",) else "dim")
        out.append((f"{'>' if g.status == 'chosen' else ' '} {g.goal:<15}{g.score:6.2f}{bonus} {word}", style))
    if e.plan:
        pred = f", h {e.predicted_cost:g} from here" if e.predicted_cost is not None else ""
        cost = f"{e.plan_cost:g}" if e.plan_cost is not None and e.plan_cost == e.plan_cost else "-"
        togo = f" ({e.remaining_cost:g} to go)" if e.remaining_cost is not None and e.remaining_cost != e.plan_cost \
            else ""
        head = "Old plan (replacing)" if e.plan_is_old else "Plan"
        out.append((f"{head}: {e.plan_status}, cost {cost}{togo}{pred}, {e.expanded} expanded, pool {e.pool_level}",
                    "header"))
        current = next((k for k, s in enumerate(e.plan) if not s.done), len(e.plan))
        for k, s in enumerate(e.plan):
            changes = " ".join(f"{f}={v}" for f, v in s.reaches.items())
            style = "step_done" if s.done else ("step_current" if k == current else "step_todo")
            style = "dim" if e.plan_is_old else style
            out.append((f"{'>' if k == current else ' '} {k + 1:2d}. {s.action} ({s.cost:g})"
                        + (f" -> {changes}" if changes else ""), style))
    for u in e.unreachable:
        out.append((f"Cannot reach {u.condition}", "header"))
        if not u.achievers:
            out.append(("  no action makes it true" + (" (only the world)" if u.world_only else ""), "warn"))
        for b in u.achievers:
            if b.reason == "disabled":
                out.append((f"  {b.action}: disabled", "warn"))
            else:
                why = f", only {', '.join(b.disabled)} (disabled)" if b.disabled else (
                    ", only the world" if b.world_only else "")
                root = f" <- {b.root}" if b.root and b.root != b.precondition else ""
                out.append((f"  {b.action}: needs {b.precondition}{root}{why}", "warn"))
    for c in e.causes:
        if c.detail and c.kind in ("waiting", "beyond_plan_budget", "deferred", "action_failed", "budget"):
            out.append((f"{c.kind.replace('_', ' ')}: {c.detail}", "warn" if c.kind != "waiting" else "text"))
    for f in e.fixes:
        out.append((f"fix: {f}", "warn"))
    return out


_GRAPHS: dict[tuple, Any] = {}


def goal_graph(brain: Any, i: int) -> tuple[Any, dict[str, tuple[int, int]]] | None:
    """The subgraph of agent ``i``'s goal (`goap.graph.goal_cone`; conditions folded into the edges,
    `goap.graph.action_graph`) with its plan lit, and where each node goes (`goap.graph.layered`); None when the
    agent has no goal. Made once per goal and plan. Every action of the cone is drawn, those disabled this tick
    too: the graph shows what the goal can use, not this tick's mask."""
    from goap.graph import action_graph, domain_graph, layered

    g = int(_scalar(brain, "goal", i, -1))
    if g < 0:
        return None
    domain = brain.domain
    n = int(_scalar(brain, "plan_length", i, 0))
    plan = tuple(domain.actions[int(a)].name for a in _row(brain, "plan", i)[:n]) if n else ()
    key = (id(domain), g, plan)
    hit = _GRAPHS.get(key)
    if hit is None:
        if len(_GRAPHS) > 256:
            _GRAPHS.clear()
        graph = action_graph(domain_graph(domain, goal=domain.goals[g].name, plan=plan))
        hit = _GRAPHS[key] = (graph, layered(graph))
    return hit

"""Why an agent does what it does: its goal, its plan, its failed search, its idleness, its failed action.

`explain_agent` reads one agent's rows of a `goap.runtime.Brain` (a one-row slice of each per-agent array, copied
once: never the whole brain) and replays the brain's rules on them in plain Python: the goal selection of the
``decide`` kernel, the plan the planner left, and for a failed search the relaxed reachability of
`goap.analysis` from the agent's own state under its own ``enabled`` mask, which names the goal conditions that
cannot hold and, for each, the actions that could make it true and what blocks them. `explain_problem` does the
same for a start state and a goal (``goap explain DOMAIN --problem ...``), planning it with the reference planner.

The result is an `Explanation`: plain data with stable cause codes (`Cause`, kinds in `CAUSE_KINDS`) that tests
and tools assert on, a ``text()`` for people and ``to_dict()`` for JSON. The wording of ``text()`` may change;
the causes may not.

Which actions an agent may use and which goals it may pursue, and at what priority, are read in one place,
`agent_rules`: the agent's ``enabled`` and ``priorities`` rows narrowed by its agent type (the type's actions, the
goals it selects at a priority > 0, its cost multipliers), as the brain's kernels and the planners apply them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from goap.analysis import Relaxed, condition_text, relax
from goap.codes import CAUSES, IDLE_REASONS, Status, event_bit
from goap.domain import Condition, Domain, Goal, State

#: Why an agent executes no action this tick, as `goap.kernels.stats` counts it (index = code):
#: ``no_goal``: no goal is eligible (every goal holds or has priority <= 0); ``waiting``: it has a goal and waits
#: for a plan (beyond the plan budget, or a search deferred to a later tick); ``failed``: it has no goal because
#: its last search failed (that goal cools down) or its action just failed; ``satisfied``: its goal already held
#: when it was planned, so it picks the next goal on the next tick.

#: Above this many actions the heuristic's estimate is left out: it runs in Python, and the viewer explains the
#: selected agent every tick (a grounded PDDL task can have tens of thousands of actions).
MAX_ESTIMATED_ACTIONS = 2000

#: The kinds of `Cause`, what each names (``subject``) and when it is given.
CAUSE_KINDS: dict[str, str] = {
    "chosen": "goal: the goal the selection picks now",
    "satisfied": "goal: skipped, its conditions already hold",
    "cooling_down": "goal: skipped until a tick after a failed search (detail: until when, after which status)",
    "priority_zero": "goal: skipped, its priority (or score) for this agent is <= 0",
    "not_allowed": "goal: skipped, not allowed for the agent's type",
    "pinned": "goal: pinned by set_goal, so no other goal is considered",
    "lower_score": "goal: eligible but outscored by the chosen goal (a GoalScore status, not a cause)",
    "skipped_for_pin": "goal: not considered because another goal is pinned (a GoalScore status, not a cause)",
    "waiting": "goal: the agent waits for a plan for it (detail: queue position and plan budget)",
    "beyond_plan_budget": "goal: more agents ahead in the queue than the plan budget plans per tick",
    "deferred": "goal: its search outgrew its first node pool and resumes on a later tick",
    "no_plan": "goal: the last search found no plan",
    "unreachable_condition": "condition text: a goal condition that cannot hold from the agent's state",
    "disabled_action": "action: it could achieve a needed condition but is disabled for this agent",
    "blocked_precondition": "action: it could achieve a needed condition; detail: its precondition that cannot hold",
    "world_only": "fact: only the world makes it true (a sensed fact no action changes that way)",
    "no_achiever": "condition text: no action and no start value makes it true",
    "budget": "goal: every node pool filled up (detail: the option that would solve it)",
    "too_long": "goal: the plan is longer than the plan buffer (detail: the option that would solve it)",
    "running": "action: the agent's action is RUNNING in the world",
    "plan_done": "action: the plan's last action finished this tick; the next tick checks the goal, picks the next",
    "action_failed": "action: the world reported it FAILED (detail: the world's reason, when it gives one)",
    "no_goals": "domain: no goal at all is eligible for this agent",
    "dead": "agent: its row is not alive; every stage skips it",
}


@dataclass(frozen=True)
class Cause:
    """One reason, as a code: ``kind`` (a `CAUSE_KINDS` key) and what it is about (``subject``); ``detail`` is
    for people and is not compared."""

    kind: str
    subject: str
    detail: str = field(default="", compare=False)


@dataclass
class GoalScore:
    """One goal as the selection sees it for this agent."""

    goal: str
    priority: float  #: the agent's priority row (what makes it eligible: > 0)
    score: float  #: what the selection compares: the scorer's term (or the priority) plus ``hysteresis``
    hysteresis: float  #: the bonus of the goal being pursued (0 for the others)
    status: str  #: a goal kind of `CAUSE_KINDS`: chosen, satisfied, cooling_down, priority_zero, ...
    cooling_until: int | None = None  #: the tick from which it is eligible again (cooling_down only)


@dataclass
class PlanStep:
    """A step of the plan: the action, its cost for this agent, and the facts it changes (as the domain says)."""

    action: str
    cost: float
    done: bool
    reaches: dict[str, str]


@dataclass
class Blocker:
    """An action that could make a needed condition true, and why it cannot here."""

    action: str
    reason: str  #: "disabled" or "blocked_precondition"
    precondition: str = ""  #: the precondition that cannot hold (blocked_precondition)
    root: str = ""  #: the condition beneath it that nothing makes true, when different
    world_only: bool = False  #: the root's fact is sensed: only the world can make it true
    disabled: list[str] = field(default_factory=list)  #: actions that would make the root true but are disabled


@dataclass
class Unreachable:
    """A goal condition that cannot hold from the agent's state, and every action that could achieve it."""

    condition: str
    fact: str
    achievers: list[Blocker]
    world_only: bool  #: no action achieves it and the world senses the fact


@dataclass
class Explanation:
    """Why one agent (or one problem) is where it is. Read `causes` in code; `text` is for people."""

    agent: int | None
    tick: int
    goal: str | None
    action: str | None
    idle: str | None  #: an `IDLE_REASONS` entry, or None while the agent executes an action
    causes: list[Cause]
    goals: list[GoalScore]
    plan: list[PlanStep]
    plan_status: str
    plan_cost: float | None = None
    predicted_cost: float | None = None  #: the heuristic's estimate at the start state
    expanded: int = 0
    pool_level: int = 0
    pinned: str | None = None
    action_ticks: int = 0
    failure: str | None = None  #: status of the last failed search
    failed_goal: str | None = None
    unreachable: list[Unreachable] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    waiting_ticks: int = 0
    queue_position: int | None = None
    plan_budget: int | None = None
    world_failure: str | None = None
    replan_cause: str | None = None  #: why it last asked for a plan (`goap.codes.CAUSES`)
    agent_type: str | None = None  #: the agent's type, when the domain declares types
    plan_is_old: bool = False  #: the plan shown is the one being replaced (the agent waits for a new one)
    remaining_cost: float | None = None  #: the cost of the plan's steps still to go
    bytes_copied: int = 0

    def has(self, kind: str, subject: str | None = None) -> bool:
        """Whether a cause of ``kind`` (about ``subject``, when given) is among the causes."""
        return any(c.kind == kind and (subject is None or c.subject == subject) for c in self.causes)

    def subjects(self, kind: str) -> list[str]:
        return [c.subject for c in self.causes if c.kind == kind]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["causes"] = [{"kind": c.kind, "subject": c.subject, "detail": c.detail} for c in self.causes]
        return d

    def text(self) -> str:
        """A few lines a designer reads: the headline, the goals, the plan, then what blocks it."""
        who = f"agent {self.agent} at tick {self.tick}" if self.agent is not None else "problem"
        if self.agent_type is not None:
            who += f" ({self.agent_type})"
        out = [f"{who}: " + self.headline()]
        if self.goals:
            out.append("goals (best first):")
            order = sorted(self.goals, key=lambda g: (g.status != "chosen", -g.score))
            for g in order:
                extra = f" +{g.hysteresis:g} hysteresis" if g.hysteresis else ""
                why = {"cooling_down": f"cooling down until tick {g.cooling_until}"}.get(g.status,
                                                                                          g.status.replace("_", " "))
                out.append(f"  {g.goal:<20s} priority {g.priority:<8g} score {g.score:<8g}{extra}  {why}")
        if self.plan:
            head = "old plan, being replaced (" if self.plan_is_old else "plan ("
            head += f"{self.plan_status}, cost {_num(self.plan_cost)}"
            if self.remaining_cost is not None and self.remaining_cost != self.plan_cost:
                head += f", {_num(self.remaining_cost)} to go"
            if self.predicted_cost is not None:
                head += f", heuristic {_num(self.predicted_cost)} from here"
            out.append(head + f", {self.expanded} nodes expanded, pool level {self.pool_level}):")
            for k, s in enumerate(self.plan):
                mark = "done" if s.done else ("now " if not s.done and (k == 0 or self.plan[k - 1].done) else "    ")
                changes = " ".join(f"{f}={v}" for f, v in s.reaches.items()) or "-"
                out.append(f"  {mark} {k + 1:>2}. {s.action:<20s} cost {s.cost:<6g} -> {changes}")
        for u in self.unreachable:
            out.append(f"cannot reach '{u.condition}':")
            if not u.achievers:
                out.append("  no action makes it true" + (" (only the world does: a sensed fact)"
                                                          if u.world_only else ""))
            for b in u.achievers:
                if b.reason == "disabled":
                    out.append(f"  {b.action}: disabled for this agent")
                else:
                    line = f"  {b.action}: needs '{b.precondition}'"
                    if b.root and b.root != b.precondition:
                        line += f", which needs '{b.root}'"
                    if b.disabled:
                        line += f", which only {', '.join(b.disabled)} makes true (disabled for this agent)"
                    elif b.world_only:
                        line += ", which only the world makes true"
                    else:
                        line += ", which no action makes true"
                    out.append(line)
        for c in self.causes:
            if c.kind in ("action_failed", "running", "waiting", "beyond_plan_budget", "deferred") and c.detail:
                out.append(f"{c.kind.replace('_', ' ')}: {c.detail}")
        for f in self.fixes:
            out.append(f"fix: {f}")
        return "\n".join(out)

    def headline(self) -> str:
        if self.agent is None:  # a problem
            if self.plan_status in ("ok", "too_long", "satisfied"):
                return (f"{self.plan_status}: a plan of {len(self.plan)} steps for goal {self.goal}, cost "
                        f"{_num(self.plan_cost)}")
            return f"{self.plan_status}: no plan for goal {self.goal}"
        if self.action is not None:
            return f"doing {self.action} ({self.action_ticks} ticks) for goal {self.goal}"
        if self.has("dead"):
            return "not alive: every stage skips it until it is spawned (or the world brings it back)"
        if self.has("plan_done"):
            return f"finished its plan for goal {self.goal}; the next tick checks the goal and picks the next one"
        if self.idle == "waiting":
            pos = f", position {self.queue_position} in the queue" if self.queue_position is not None else ""
            budget = f", plan budget {self.plan_budget}/tick" if self.plan_budget else ""
            return f"idle: waiting {self.waiting_ticks} ticks for a plan for goal {self.goal}{pos}{budget}"
        nxt = next((g.goal for g in self.goals if g.status == "chosen"), None)
        then = f"; next tick it takes {nxt}" if nxt and nxt != self.goal else ""
        if self.idle == "failed":
            if self.world_failure or self.has("action_failed"):
                return f"idle: its action failed ({self.world_failure or 'no reason given by the world'})"
            return f"idle: the search for goal {self.failed_goal} failed ({self.failure}){then}"
        if self.idle == "satisfied":
            return f"idle: goal {self.goal} already holds; it picks the next goal next tick"
        if self.idle == "no_goal":
            return "idle: no goal is eligible (" + ", ".join(
                f"{g.goal} {g.status.replace('_', ' ')}" for g in self.goals) + ")"
        if self.plan_status:
            return f"{self.plan_status} for goal {self.goal}"
        return "nothing to explain"


#: Why an agent asked for a plan, in words (`goap.codes.CAUSES`).
_CAUSE_WORDS = {"new_goal": "a new goal", "goal_changed": "a better goal", "plan_finished": "its plan ran out",
                "action_failed": "its action failed", "invalid": "its next action no longer applied",
                "commanded": "the game asked"}


# --- the type rules: one place ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class AgentRules:
    """What an agent may do: its usable actions, its allowed goals and their priorities."""

    allowed_actions: np.ndarray  # bool [A]
    allowed_goals: np.ndarray  # bool [G]
    priorities: np.ndarray  # float [G]
    cost_scale: np.ndarray  # float [A]: the type's multiplier of each action's cost
    agent_type: str = "default"


def agent_rules(domain: Domain, rows: Mapping[str, np.ndarray]) -> AgentRules:
    """The agent's allowed actions and goal priorities from the domain and its rows: the one place that knows them.

    An action is allowed when the agent's ``enabled`` entry is set and its type (``agent_type``, `Domain.types`)
    may use it; a goal is allowed when the type gives it a priority > 0, and its priority is the agent's
    ``priorities`` entry; the type's ``cost_scale`` multiplies the action costs (`Domain.action_cost`).
    """
    t = int(np.asarray(rows.get("agent_type", 0)).reshape(-1)[0]) if "agent_type" in rows else 0
    kind = domain.types[min(max(t, 0), len(domain.types) - 1)]
    enabled = np.asarray(rows.get("enabled", np.ones(len(domain.actions), bool)), dtype=bool).reshape(-1)
    prio = rows.get("priorities")
    prio = np.array(kind.priority, float) if prio is None else np.asarray(prio, float)
    return AgentRules(enabled & np.array(kind.actions, dtype=bool), np.array(kind.priority, float) > 0,
                      prio.reshape(-1), np.array(kind.cost_scale, float), kind.name)


def type_actions(domain: Domain, agent_type: str) -> list[str]:
    """The actions agents of ``agent_type`` may use (``goap graph --agent-type``), read beside `agent_rules`."""
    if not domain.declares_types:
        raise ValueError(f"domain '{domain.name}' declares no agent types")
    try:
        kind = domain.types[domain.type_index(agent_type)]
    except KeyError:
        names = ", ".join(t.name for t in domain.types)
        raise ValueError(f"unknown agent type '{agent_type}' (types: {names})") from None
    return [a for a, ok in zip(domain.action_names, kind.actions, strict=True) if ok]


# --- one agent of a brain --------------------------------------------------------------------------------------
def agent_rows(brain: Any, i: int) -> tuple[dict[str, np.ndarray], int]:
    """Host copies of agent ``i``'s row of every per-agent array (`goap.state.FIELDS`), and the bytes copied.

    Each array is sliced to the one row before it is read, so on a GPU only that row crosses to the host.
    """
    from goap.state import FIELDS

    n = int(brain.n_agents)
    if not isinstance(i, int | np.integer) or isinstance(i, bool) or not 0 <= int(i) < n:
        raise ValueError(f"agent {i!r} is not a row of this brain (0..{n - 1})")
    i = int(i)
    rows: dict[str, np.ndarray] = {}
    copied = 0
    for f in FIELDS:
        row = np.array(getattr(brain.arrays, f.name)[i: i + 1].numpy()[0], copy=True)
        rows[f.name] = row
        copied += row.nbytes
    return rows, copied


def explain_agent(brain: Any, i: int, queue: bool = True) -> Explanation:
    """Why agent ``i`` of ``brain`` pursues its goal, follows its plan, has none, or stands idle.

    Copies agent ``i``'s rows (and, with a goal scorer, its scores row); with ``queue`` and a waiting agent, one
    device reduction counts the agents ahead of it in the plan queue (`goap.kernels.stats.queue_position`), one
    int back.
    """
    rows, copied = agent_rows(brain, i)
    scores = None
    if getattr(brain, "goal_scorer", None) is not None and len(brain.domain.goals):
        mult = brain._score_mult[i: i + 1].numpy()[0]
        add = brain._score_add[i: i + 1].numpy()[0]
        scores = np.asarray(rows["priorities"], dtype=np.float32) * mult + add  # what decide compares
        copied += mult.nbytes + add.nbytes
    tick = int(brain.tick_count)
    position = None
    waiting = bool(rows["needs_plan"]) and int(rows["goal"]) >= 0 and bool(rows["alive"])
    if queue and waiting:
        from goap.kernels.stats import queue_position

        position = queue_position(brain, i)
        copied += 4
    world = getattr(brain, "world", None)
    fail_reason = None
    if world is not None and "fail_reason" in rows:
        fail_reason = world_failure_name(world, int(rows["fail_reason"]))
    planner = brain.planner
    e = explain_rows(
        brain.domain, rows, tick=tick, agent=i, scores=scores, hysteresis=float(brain.goal_hysteresis),
        plan_budget=brain.plan_budget, queue_position=position, cooldown_ticks=int(brain.cooldown_ticks),
        max_plan_length=int(planner.max_plan_length), n_levels=int(getattr(brain, "_n_levels", 1)),
        sensed=tuple(getattr(world, "sensed_facts", ()) or ()), world_failure=fail_reason,
        heuristic=_heuristic_for(brain),
    )
    e.bytes_copied = copied
    return e


def world_failure_name(world: Any, code: int) -> str | None:
    """The name of a world's failure reason code (``world.FAIL_REASONS``, else `goap.world.FAIL_REASONS`), None
    for 0."""
    if code <= 0:
        return None
    from goap.world import FAIL_REASONS

    names = tuple(getattr(world, "FAIL_REASONS", None) or FAIL_REASONS)
    return names[code] if code < len(names) else f"reason {code}"


def explain_rows(
    domain: Domain,
    rows: Mapping[str, np.ndarray],
    *,
    tick: int,
    agent: int | None = None,
    scores: np.ndarray | None = None,
    hysteresis: float = 0.0,
    plan_budget: int | None = None,
    queue_position: int | None = None,
    cooldown_ticks: int = 30,
    max_plan_length: int = 64,
    n_levels: int = 1,
    sensed: Sequence[str] = (),
    world_failure: str | None = None,
    heuristic: Any = None,
) -> Explanation:
    """The explanation of one agent from its rows alone (what `explain_agent` copied): pure Python, no device.

    ``tick`` is the tick the next selection runs at (``brain.tick_count``); ``heuristic`` is a callable
    ``(goal, costs, enabled) -> h(state)`` (the reference planner's) for the predicted cost, or None.
    """
    from goap.encoding import encode

    tables = _tables(domain, encode)
    state = tuple(int(v) for v in tables.unpack_states(np.asarray(rows["states"], np.uint64).reshape(1, -1))[0])
    rules = agent_rules(domain, rows)
    costs = np.asarray(rows.get("costs", [a.cost for a in domain.actions]), float).reshape(-1)
    goal = int(rows["goal"])
    pin = int(rows.get("pinned_goal", -1))
    cooldown = np.asarray(rows.get("cooldown_until", np.zeros(len(domain.goals))), np.int64).reshape(-1)
    last_failure = int(rows.get("last_failure", -1))
    causes: list[Cause] = []

    goals = select_goals(domain, state, rules, cooldown, tick, goal, pin, scores, hysteresis)
    if pin >= 0:
        causes.append(Cause("pinned", domain.goals[pin].name, "set_goal: no other goal is considered"))
    for g in goals:
        if g.status == "cooling_down":
            causes.append(Cause("cooling_down", g.goal, f"until tick {g.cooling_until}"))
        elif g.status in ("satisfied", "priority_zero", "not_allowed", "chosen"):
            causes.append(Cause(g.status, g.goal))
    failed_goal = _failed_goal(domain, cooldown, tick, cooldown_ticks)

    action = int(rows.get("action", -1))
    status = int(rows.get("plan_status", Status.NOT_PLANNED))
    length = int(rows.get("plan_length", 0))
    step = int(rows.get("step", 0))
    plan_row = np.asarray(rows.get("plan", []), np.int64).reshape(-1)
    bits = int(rows.get("event_bits", 0))

    e = Explanation(
        agent=agent, tick=tick, goal=_name(domain.goals, goal), action=_name(domain.actions, action), idle=None,
        causes=causes, goals=goals, plan=[], plan_status=Status(status).label if 0 <= status <= 5 else str(status),
        expanded=int(rows.get("expanded", 0)), pool_level=int(rows.get("plan_level", 0)),
        pinned=_name(domain.goals, pin), action_ticks=int(rows.get("action_ticks", 0)),
        failure=Status(last_failure).label if last_failure >= 0 else None,
        failed_goal=failed_goal, waiting_ticks=int(rows.get("waiting", 0)), queue_position=queue_position,
        plan_budget=plan_budget, world_failure=world_failure,
    )
    cause = int(rows.get("replan_cause", 0))
    e.replan_cause = CAUSES[cause] if 0 < cause < len(CAUSES) else None
    e.agent_type = rules.agent_type if domain.declares_types else None
    if goal >= 0 and length > 0:
        e.plan = plan_steps(domain, state, plan_row[:length], costs, step, rules.cost_scale)
        e.plan_cost = float(rows.get("plan_cost", math.nan))
        e.remaining_cost = float(sum(s.cost for s in e.plan if not s.done))
        e.plan_is_old = bool(rows.get("needs_plan", False))
        if heuristic is not None and len(domain.actions) <= MAX_ESTIMATED_ACTIONS:
            # The state the plan started from is not kept: the estimate is made from the state the agent is in
            # now for the rest of the plan, so it is compared with the cost of the steps still to go.
            least = [domain.action_min_cost(a, float(costs[a]), float(rules.cost_scale[a]))
                     for a in range(len(domain.actions))]
            h = heuristic(domain.goals[goal], least, rules.allowed_actions.tolist())
            e.predicted_cost = float(h(state))
    if status == Status.TOO_LONG and goal >= 0:
        causes.append(Cause("too_long", domain.goals[goal].name, f"longer than the plan buffer of {max_plan_length}"))
        e.fixes.append(f"a longer plan buffer: max_plan_length > {max_plan_length} (BrainConfig.max_plan_length); "
                       "the agent replans after each segment meanwhile")

    # --- acting, or why idle --------------------------------------------------------------------------------
    if not bool(rows.get("alive", True)):
        causes.append(Cause("dead", str(agent), "the row is not alive (despawned, or dead in the world)"))
        return e
    if action >= 0:
        causes.append(Cause("running", domain.actions[action].name, f"for {e.action_ticks} ticks"))
        return e
    failed_now = bits & event_bit("action_failed")
    if bits & event_bit("action_finished") and not failed_now:
        last = _name(domain.actions, int(plan_row[length - 1])) if 0 < length <= len(plan_row) else None
        causes.append(Cause("plan_done", last or "", "the goal is checked at the next tick"))
        return e
    if failed_now:
        e.idle = "failed"
        name = _name(domain.actions, int(plan_row[step])) if 0 <= step < len(plan_row) and plan_row[step] >= 0 \
            else None
        causes.append(Cause("action_failed", name or "", world_failure or "the world gave no reason"))
    if goal >= 0 and bool(rows.get("needs_plan", False)):
        e.idle = e.idle or "waiting"
        detail = f"waiting {e.waiting_ticks} ticks"
        if e.replan_cause:
            detail += f" since it asked for a plan ({_CAUSE_WORDS.get(e.replan_cause, e.replan_cause)})"
        if queue_position is not None:
            detail += f", {queue_position} agents ahead in the queue"
        if plan_budget:
            detail += f", plan budget {plan_budget} per tick"
        causes.append(Cause("waiting", domain.goals[goal].name, detail))
        if status == Status.BUDGET and e.pool_level < n_levels and e.pool_level > 0:
            causes.append(Cause("deferred", domain.goals[goal].name,
                                f"resumes at pool level {e.pool_level}; search_nodes_per_tick bounds each tick"))
        elif plan_budget and queue_position is not None and queue_position >= plan_budget:
            causes.append(Cause("beyond_plan_budget", domain.goals[goal].name,
                                f"{queue_position} agents ahead, {plan_budget} planned per tick"))
            e.fixes.append(f"a larger plan budget (plan_budget > {plan_budget}; goap run --plan-budget), or fewer "
                           "agents replanning at once")
    elif goal >= 0:
        e.idle = e.idle or "satisfied"
    else:
        if failed_goal is not None and last_failure >= 0:
            e.idle = e.idle or "failed"
        else:
            e.idle = e.idle or "no_goal"
            if not any(g.status in ("chosen", "lower_score") for g in goals):
                causes.append(Cause("no_goals", domain.name, "every goal holds, cools down or has priority <= 0"))
    # --- why no plan: the goal that failed, from the agent's state now -----------------------------------------
    if failed_goal is not None and last_failure >= 0:
        why_failed(domain, state, domain.goals[domain.goal_index(failed_goal)], rules, Status(last_failure), e,
                   sensed, max_plan_length, n_levels)
    return e


def select_goals(domain: Domain, state: State, rules: AgentRules, cooldown: np.ndarray, tick: int, current: int,
                 pin: int, scores: np.ndarray | None, hysteresis: float) -> list[GoalScore]:
    """Every goal as the ``decide`` kernel weighs it (its oracle, in Python): eligibility, then the best score,
    ties to the lower index; a pinned goal is taken when it is not cooling down and does not hold."""
    out: list[GoalScore] = []
    best, best_score = -1, 0.0
    for g, goal in enumerate(domain.goals):
        prio = float(rules.priorities[g])
        base = float(scores[g]) if scores is not None else prio
        bonus = hysteresis if g == current else 0.0
        s = GoalScore(goal.name, prio, base + bonus, bonus, "lower_score")
        if pin >= 0 and g != pin:
            s.status = "skipped_for_pin"
        elif not rules.allowed_goals[g]:
            s.status = "not_allowed"
        elif cooldown[g] > tick:
            s.status, s.cooling_until = "cooling_down", int(cooldown[g])
        elif pin < 0 and prio <= 0.0:
            s.status = "priority_zero"
        elif domain.satisfies(state, goal.want):
            s.status = "satisfied"
        elif pin >= 0 or best < 0 or s.score > best_score:
            best, best_score = g, s.score
        out.append(s)
    if best >= 0:
        out[best].status = "chosen"
    return out


def plan_steps(domain: Domain, state: State, plan: Sequence[int], costs: np.ndarray, step: int,
               scale: np.ndarray | None = None) -> list[PlanStep]:
    """The plan's steps with their costs and what each changes; the steps before ``step`` are done (their
    effects already in ``state``; the state they ran in is not kept, so their cost is their least, the one the
    heuristics charge), the rest are replayed from ``state`` and priced in the state each applies to, as the
    planners price them (`Domain.action_cost`, with the agent's cost row and its type's multipliers)."""
    scale = np.ones(len(domain.actions)) if scale is None else scale
    out = []
    cur = state
    for k, a in enumerate(int(x) for x in plan):
        action = domain.actions[a]
        if k < step:
            out.append(PlanStep(action.name, domain.action_min_cost(a, float(costs[a]), float(scale[a])), True, {}))
            continue
        nxt = domain.apply(cur, action)
        changed = {f.name: f.format(nxt[j]) for j, f in enumerate(domain.facts) if nxt[j] != cur[j]}
        out.append(PlanStep(action.name, domain.action_cost(a, cur, float(costs[a]), float(scale[a])), False,
                            changed))
        cur = nxt
    return out


def why_failed(domain: Domain, state: State, goal: Any, rules: AgentRules, status: Status, e: Explanation,
               sensed: Sequence[str] = (), max_plan_length: int = 64, n_levels: int = 1) -> None:
    """Add to ``e`` why the search for ``goal`` failed with ``status``: the unreachable conditions and their
    blockers for NO_PLAN, how far it got and the option that would solve it for BUDGET and TOO_LONG."""
    if status == Status.NO_PLAN:
        e.causes.append(Cause("no_plan", goal.name))
        r = relax(domain, state, usable=rules.allowed_actions.tolist())
        e.unreachable = unreachable_conditions(domain, r, goal.want, sensed)
        for u in e.unreachable:
            e.causes.append(Cause("unreachable_condition", u.condition))
            if u.world_only:
                e.causes.append(Cause("world_only", u.fact))
            elif not u.achievers:
                e.causes.append(Cause("no_achiever", u.condition))
            for b in u.achievers:
                if b.reason == "disabled":
                    e.causes.append(Cause("disabled_action", b.action))
                else:
                    e.causes.append(Cause("blocked_precondition", b.action, b.precondition))
                    if b.world_only:
                        e.causes.append(Cause("world_only", b.root.split(" ")[0]))
                    for name in b.disabled:
                        if not e.has("disabled_action", name):
                            e.causes.append(Cause("disabled_action", name, f"it would make '{b.root}' true"))
        if not e.unreachable:
            e.fixes.append("from the agent's state now every condition of the goal can be reached when effects only "
                           "add (relaxed): either the state changed since the search failed (it is retried when the "
                           "cooldown ends), or the actions' effects undo each other; read their effects on the "
                           "goal's facts together")
    elif status == Status.BUDGET:
        e.causes.append(Cause("budget", goal.name, f"{e.expanded} nodes expanded at pool level {e.pool_level}"))
        e.fixes.append("a larger search: max_nodes or node_ceiling (planner_options), or max_escalated_nodes / "
                       "search_nodes_per_tick so that the larger pools run; or a goal nearer the agent's state")
    elif status == Status.TOO_LONG:
        e.causes.append(Cause("too_long", goal.name, f"longer than the plan buffer of {max_plan_length}"))
        e.fixes.append(f"a longer plan buffer: max_plan_length > {max_plan_length}")


def unreachable_conditions(domain: Domain, r: Relaxed, want: Sequence[Condition],
                           sensed: Sequence[str] = ()) -> list[Unreachable]:
    """The conditions of ``want`` that cannot hold under ``r``, each with the actions that could achieve it."""
    sensed_set = set(sensed)
    out = []
    for c in want:
        if r.can_hold(c):
            continue
        blockers = []
        for a in r.achievers(c):
            action = domain.actions[a]
            if not r.usable[a]:
                blockers.append(Blocker(action.name, "disabled"))
                continue
            for p in r.blocking(action):
                roots = r.roots(p)
                root = roots[0] if roots else p
                off = [domain.actions[b].name for rt in roots for b in r.achievers(rt) if not r.usable[b]]
                world = not r.achievers(root) and root.fact in sensed_set
                blockers.append(Blocker(action.name, "blocked_precondition", condition_text(domain, p),
                                        condition_text(domain, root), world, list(dict.fromkeys(off))))
        out.append(Unreachable(condition_text(domain, c), c.fact, blockers,
                               not r.achievers(c) and c.fact in sensed_set))
    return out


# --- a problem (no brain) --------------------------------------------------------------------------------------
def explain_problem(domain: Domain, start: State, goal: int | Goal, *, costs: Sequence[float] | None = None,
                    enabled: Sequence[bool] | None = None, max_nodes: int | None = None,
                    max_plan_length: int | None = None, sensed: Sequence[str] = ()) -> Explanation:
    """Plan ``goal`` from ``start`` with the reference planner and explain the result: the plan with each step's
    cost and the state it reaches and the heuristic's prediction, or why there is none."""
    from goap.encoding import encode
    from goap.planners.base import DEFAULT_MAX_NODES, DEFAULT_MAX_PLAN_LENGTH
    from goap.planners.reference import ReferencePlanner

    if isinstance(goal, Goal):  # a problem's own goal (``"goal": {fact: condition}``): planned as one more goal
        if goal not in domain.goals:
            domain = Domain(domain.name, domain.facts, domain.actions, (*domain.goals, goal))
        goal = domain.goals.index(goal)
    tables = _tables(domain, encode)
    planner = ReferencePlanner(tables, max_nodes=max_nodes or DEFAULT_MAX_NODES,
                               max_plan_length=max_plan_length or DEFAULT_MAX_PLAN_LENGTH)
    A = len(domain.actions)
    cost_row = np.asarray(costs if costs is not None else [a.cost for a in domain.actions], np.float32)
    enabled_row = np.asarray(enabled if enabled is not None else [True] * A, bool)
    states = tables.pack(start).reshape(1, -1)
    batch = planner.plan(states, np.array([goal], np.int32), cost_row.reshape(1, -1), enabled_row.reshape(1, -1))
    status = Status(int(batch.status[0]))
    rows = {"states": states[0], "priorities": np.array([g.priority for g in domain.goals], np.float32),
            "costs": cost_row, "enabled": enabled_row, "goal": np.int32(goal)}
    rules = agent_rules(domain, rows)
    g = domain.goals[goal]
    e = Explanation(agent=None, tick=0, goal=g.name, action=None, idle=None, causes=[], goals=[], plan=[],
                    plan_status=status.label, expanded=int(batch.expanded[0]), pool_level=int(batch.level[0]))
    h = planner.heuristic_function(g, cost_row.tolist(), enabled_row.tolist())(start)
    e.predicted_cost = None if math.isinf(h) else float(h)
    if status in (Status.OK, Status.TOO_LONG, Status.SATISFIED):
        n = int(batch.length[0]) if status != Status.TOO_LONG else planner.max_plan_length
        e.plan = plan_steps(domain, start, [int(a) for a in batch.actions[0, :n]], cost_row.astype(float), 0)
        e.plan_cost = float(batch.cost[0])
        if status == Status.SATISFIED:
            e.causes.append(Cause("satisfied", g.name))
        if status == Status.TOO_LONG:
            why_failed(domain, start, g, rules, status, e, sensed, planner.max_plan_length)
        else:
            e.causes.append(Cause("chosen", g.name))
        return e
    e.failure, e.failed_goal = status.label, g.name
    why_failed(domain, start, g, rules, status, e, sensed, planner.max_plan_length, planner.n_levels)
    return e


# --- helpers ---------------------------------------------------------------------------------------------------
_TABLES: dict[int, Any] = {}
_HEURISTICS: dict[int, Any] = {}


def _tables(domain: Domain, encode: Any) -> Any:
    """The encoded tables of ``domain``, made once per domain object (explaining every tick re-encodes nothing)."""
    key = id(domain)
    t = _TABLES.get(key)
    if t is None or t.domain is not domain:
        if len(_TABLES) >= 16:  # a tool explaining many domains keeps a few, not all
            _TABLES.clear()
        t = _TABLES[key] = encode(domain)
    return t


def _heuristic_for(brain: Any) -> Any:
    """The reference planner's heuristic for the brain's domain, made once per tables object."""
    key = id(brain.tables)
    entry = _HEURISTICS.get(key)
    if entry is None or entry[0] is not brain.tables:
        from goap.planners.reference import ReferencePlanner

        if len(_HEURISTICS) >= 16:
            _HEURISTICS.clear()

        planner = ReferencePlanner(brain.tables, max_plan_length=int(brain.planner.max_plan_length))
        entry = _HEURISTICS[key] = (brain.tables, planner.heuristic_function)
    return entry[1]


def _failed_goal(domain: Domain, cooldown: np.ndarray, tick: int, cooldown_ticks: int) -> str | None:
    """The goal whose search failed last: the one cooling down the longest (its cooldown started last)."""
    if not len(cooldown) or int(cooldown.max()) <= tick:
        return None
    return domain.goals[int(np.argmax(cooldown))].name


def _name(items: Sequence[Any], k: int) -> str | None:
    return items[k].name if 0 <= k < len(items) else None


def _num(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:g}"


__all__ = [
    "CAUSE_KINDS", "IDLE_REASONS", "AgentRules", "Blocker", "Cause", "Explanation", "GoalScore", "PlanStep",
    "Unreachable", "agent_rows", "agent_rules", "explain_agent", "explain_problem", "explain_rows", "type_actions",
]

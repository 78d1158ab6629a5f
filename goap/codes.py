"""Every code the engine shares between Python and its Warp kernels, written once.

The Python enums and tuples here are the one table; `goap.kernels.codes` makes the Warp constants from them
(``ST_OK = wp.constant(Status.OK)``, ``EV_REPLAN = wp.constant(event_bit("replan"))``), so no number is written
twice. Pure Python: importing this module does not import Warp.

========================  ====================================================================================
table                     what it numbers
========================  ====================================================================================
`Status`                  the outcome of one search (every planner; ``plan_status``, ``last_failure``)
`ActionStatus`            what the world (or the game) reports for an acting agent (``action_status``)
`CAUSES`                  why an agent asked for a plan (``replan_cause``; index 0 is "none")
`EVENTS`                  the per-agent event bits of a tick (``event_bits``; bit k is ``1 << k``)
`IDLE_REASONS`            why an idle agent is idle (``goap run``'s report, `goap.explain`)
`COUNTERS`                the slots of the tick's device counters (read once per tick)
`DEDUPE_COUNTERS`         the slots of the grouping planner's device counters (`goap.planners.dedupe`)
========================  ====================================================================================
"""

from __future__ import annotations

from enum import IntEnum


class Status(IntEnum):
    """Outcome of one search."""

    OK = 0  #: a plan was found; with an admissible heuristic its cost is optimal
    SATISFIED = 1  #: the goal already holds: empty plan, cost 0
    NO_PLAN = 2  #: the reachable space was exhausted without reaching the goal
    BUDGET = 3  #: the node pool filled up (deferred while ``level < n_levels``; see `goap.planners.base`)
    TOO_LONG = 4  #: the optimal plan has more steps than ``max_plan_length``; ``actions`` holds its first steps
    NOT_PLANNED = 5  #: the row was not in ``agents``

    @property
    def label(self) -> str:
        return self.name.lower()


class ActionStatus(IntEnum):
    """What an acting agent's action did this tick (the world or the game writes it into ``action_status``)."""

    RUNNING = 0
    DONE = 1
    FAILED = 2


#: Why an agent needed a new plan (``replan_cause``), by code; 0 is "none".
CAUSES: tuple[str, ...] = (
    "none", "new_goal", "goal_changed", "plan_finished", "action_failed", "invalid", "commanded",
)

#: Event bits of a tick (``event_bits``): bit k (``1 << k``) is ``EVENTS[k]``.
EVENTS: tuple[str, ...] = (
    "action_started", "action_finished", "action_failed", "goal_achieved", "plan_found", "plan_failed",
    "goal_changed", "replan", "action_interrupted",
)

#: Why an idle agent is idle (`goap.explain`, `goap.kernels.stats`, ``goap run``): no goal to pursue, waiting
#: for a plan, its action just failed, or its goal already holds.
IDLE_REASONS: tuple[str, ...] = ("no_goal", "waiting", "failed", "satisfied")

#: Counters that are gauges of one tick (kept as series by the brain, not summed into its totals).
GAUGES: tuple[str, ...] = ("idle", "alive")

#: The tick's counter slots, in slot order: totals, the gauges, one per replan cause, one per failed status.
COUNTERS: tuple[str, ...] = (
    "goals_achieved", "plans_requested", "plans_made", "plans_failed", "plans_satisfied", "plans_deferred",
    "nodes_expanded", "actions_started", "actions_done", "actions_failed", "plans_segmented", "goals_changed",
    "replans", "actions_interrupted", *GAUGES,
    *(f"replan_{c}" for c in CAUSES[1:]),
    *(f"plans_failed_{s.label}" for s in Status if s > Status.SATISFIED),
)

#: The tick counter that counts each event: an agent has each event at most once a tick, so the counter is the
#: number of agents in the event's list (`goap.runtime.inspection.Events` reads counts from here, not the masks).
EVENT_COUNTERS: dict[str, str] = {
    "action_started": "actions_started", "action_finished": "actions_done", "action_failed": "actions_failed",
    "goal_achieved": "goals_achieved", "plan_found": "plans_made", "plan_failed": "plans_failed",
    "goal_changed": "goals_changed", "replan": "replans", "action_interrupted": "actions_interrupted",
}

#: The grouping planner's counters (`goap.planners.dedupe`), accumulated over calls.
DEDUPE_COUNTERS: tuple[str, ...] = (
    "calls", "requests", "distinct", "hits", "misses", "inserted", "evicted", "refused", "uncacheable",
)


def cause_code(name: str) -> int:
    """The code of replan cause ``name`` (ValueError naming the causes otherwise)."""
    if name not in CAUSES:
        raise ValueError(f"unknown replan cause '{name}'; causes are {', '.join(CAUSES[1:])}")
    return CAUSES.index(name)


def event_bit(name: str) -> int:
    """The bit (``1 << k``) of event ``name`` (ValueError naming the events otherwise)."""
    if name not in EVENTS:
        raise ValueError(f"unknown event '{name}'; events are {', '.join(EVENTS)}")
    return 1 << EVENTS.index(name)


def counter_slot(name: str) -> int:
    """The slot of tick counter ``name``."""
    return COUNTERS.index(name)


def replan_slot(cause: int) -> int:
    """The counter slot of replan cause ``cause`` (1..len(CAUSES) - 1)."""
    return COUNTERS.index(f"replan_{CAUSES[cause]}")


def failed_status_slot(status: int) -> int:
    """The counter slot of failed searches that ended with ``status`` (NO_PLAN and above)."""
    return COUNTERS.index(f"plans_failed_{Status(status).label}")


__all__ = [
    "ActionStatus", "CAUSES", "COUNTERS", "DEDUPE_COUNTERS", "EVENT_COUNTERS", "EVENTS", "GAUGES", "IDLE_REASONS",
    "Status", "cause_code", "counter_slot", "event_bit", "failed_status_slot", "replan_slot",
]

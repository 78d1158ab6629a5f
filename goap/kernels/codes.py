"""Warp constants made from the one table of codes (`goap.codes`): import these in kernels, never a literal."""

from __future__ import annotations

import warp as wp

from goap.codes import (
    CAUSES,
    COUNTERS,
    DEDUPE_COUNTERS,
    ActionStatus,
    Status,
    counter_slot,
    event_bit,
    failed_status_slot,
    replan_slot,
)

# Search outcomes (plan_status, last_failure).
ST_OK = wp.constant(int(Status.OK))
ST_SATISFIED = wp.constant(int(Status.SATISFIED))
ST_NO_PLAN = wp.constant(int(Status.NO_PLAN))
ST_BUDGET = wp.constant(int(Status.BUDGET))
ST_TOO_LONG = wp.constant(int(Status.TOO_LONG))
ST_NOT_PLANNED = wp.constant(int(Status.NOT_PLANNED))

# Action statuses (action_status).
RUNNING = wp.constant(int(ActionStatus.RUNNING))
DONE = wp.constant(int(ActionStatus.DONE))
FAILED = wp.constant(int(ActionStatus.FAILED))

# Replan causes (replan_cause).
CAUSE_NEW_GOAL = wp.constant(CAUSES.index("new_goal"))
CAUSE_GOAL_CHANGED = wp.constant(CAUSES.index("goal_changed"))
CAUSE_PLAN_FINISHED = wp.constant(CAUSES.index("plan_finished"))
CAUSE_ACTION_FAILED = wp.constant(CAUSES.index("action_failed"))
CAUSE_INVALID = wp.constant(CAUSES.index("invalid"))
CAUSE_COMMANDED = wp.constant(CAUSES.index("commanded"))

# Event bits (event_bits).
EV_ACTION_STARTED = wp.constant(wp.uint32(event_bit("action_started")))
EV_ACTION_FINISHED = wp.constant(wp.uint32(event_bit("action_finished")))
EV_ACTION_FAILED = wp.constant(wp.uint32(event_bit("action_failed")))
EV_GOAL_ACHIEVED = wp.constant(wp.uint32(event_bit("goal_achieved")))
EV_PLAN_FOUND = wp.constant(wp.uint32(event_bit("plan_found")))
EV_PLAN_FAILED = wp.constant(wp.uint32(event_bit("plan_failed")))
EV_GOAL_CHANGED = wp.constant(wp.uint32(event_bit("goal_changed")))
EV_REPLAN = wp.constant(wp.uint32(event_bit("replan")))
EV_ACTION_INTERRUPTED = wp.constant(wp.uint32(event_bit("action_interrupted")))

# Tick counter slots; a replan of cause c counts in C_REPLAN_BASE + c, a failed search of status s in
# C_FAILED_BASE + s (both ranges are contiguous in `goap.codes.COUNTERS`).
C_GOALS_ACHIEVED = wp.constant(counter_slot("goals_achieved"))
C_PLANS_REQUESTED = wp.constant(counter_slot("plans_requested"))
C_PLANS_MADE = wp.constant(counter_slot("plans_made"))
C_PLANS_FAILED = wp.constant(counter_slot("plans_failed"))
C_PLANS_SATISFIED = wp.constant(counter_slot("plans_satisfied"))
C_PLANS_DEFERRED = wp.constant(counter_slot("plans_deferred"))
C_PLANS_SEGMENTED = wp.constant(counter_slot("plans_segmented"))
C_NODES_EXPANDED = wp.constant(counter_slot("nodes_expanded"))
C_ACTIONS_STARTED = wp.constant(counter_slot("actions_started"))
C_ACTIONS_DONE = wp.constant(counter_slot("actions_done"))
C_ACTIONS_FAILED = wp.constant(counter_slot("actions_failed"))
C_GOALS_CHANGED = wp.constant(counter_slot("goals_changed"))
C_REPLANS = wp.constant(counter_slot("replans"))
C_ACTIONS_INTERRUPTED = wp.constant(counter_slot("actions_interrupted"))
C_IDLE = wp.constant(counter_slot("idle"))
C_ALIVE = wp.constant(counter_slot("alive"))
C_REPLAN_BASE = wp.constant(replan_slot(1) - 1)
C_FAILED_BASE = wp.constant(failed_status_slot(Status.NO_PLAN) - int(Status.NO_PLAN))
N_COUNTERS = len(COUNTERS)

# The grouping planner's counter slots (goap.planners.dedupe).
DC_CALLS = wp.constant(DEDUPE_COUNTERS.index("calls"))
DC_REQUESTS = wp.constant(DEDUPE_COUNTERS.index("requests"))
DC_DISTINCT = wp.constant(DEDUPE_COUNTERS.index("distinct"))
DC_HITS = wp.constant(DEDUPE_COUNTERS.index("hits"))
DC_MISSES = wp.constant(DEDUPE_COUNTERS.index("misses"))
DC_INSERTED = wp.constant(DEDUPE_COUNTERS.index("inserted"))
DC_EVICTED = wp.constant(DEDUPE_COUNTERS.index("evicted"))
DC_REFUSED = wp.constant(DEDUPE_COUNTERS.index("refused"))
DC_UNCACHEABLE = wp.constant(DEDUPE_COUNTERS.index("uncacheable"))

# Checks every replan cause and failed status has its slot where the kernels' arithmetic puts it.
assert all(replan_slot(c) == C_REPLAN_BASE + c for c in range(1, len(CAUSES)))
assert all(failed_status_slot(s) == C_FAILED_BASE + int(s) for s in Status if s > Status.SATISFIED)

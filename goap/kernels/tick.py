"""The brain's tick stages as Warp kernels: one thread per agent, every rule from `goap.kernels.semantics`.

The launcher is `goap.runtime.Brain`; the arrays are those of `goap.state.AgentArrays`. Per-tick scalars (the
tick number) live in device arrays so that a captured CUDA graph replays correctly. Counters for the tick are
accumulated with atomics into ``counters`` (indices below) and read back once per tick by the brain.
"""

from __future__ import annotations

import warp as wp

from goap.kernels.semantics import (
    DomainTables,
    GoalTables,
    action_applicable,
    apply_action,
    goal_satisfied,
    read_field,
    write_field,
)

wp.set_module_options({"enable_backward": False})

# Action status (goap.world): the world (or the game) writes one of these for each acting agent.
RUNNING = wp.constant(0)
DONE = wp.constant(1)
FAILED = wp.constant(2)

# Planner statuses (goap.planners.base.Status).
ST_OK = wp.constant(0)
ST_SATISFIED = wp.constant(1)
ST_BUDGET = wp.constant(3)
ST_TOO_LONG = wp.constant(4)

# Replan causes (goap.runtime.CAUSES).
CAUSE_NEW_GOAL = wp.constant(1)
CAUSE_GOAL_CHANGED = wp.constant(2)
CAUSE_PLAN_FINISHED = wp.constant(3)
CAUSE_ACTION_FAILED = wp.constant(4)
CAUSE_INVALID = wp.constant(5)

# Event bits (goap.runtime.EVENTS).
EV_ACTION_STARTED = wp.constant(wp.uint32(1))
EV_ACTION_FINISHED = wp.constant(wp.uint32(2))
EV_ACTION_FAILED = wp.constant(wp.uint32(4))
EV_GOAL_ACHIEVED = wp.constant(wp.uint32(8))
EV_PLAN_FOUND = wp.constant(wp.uint32(16))
EV_PLAN_FAILED = wp.constant(wp.uint32(32))
EV_GOAL_CHANGED = wp.constant(wp.uint32(64))
EV_REPLAN = wp.constant(wp.uint32(128))

# Counter slots (goap.runtime.COUNTERS); replan causes 1..7 use slots C_REPLAN + cause.
C_GOALS_ACHIEVED = wp.constant(0)
C_PLANS_REQUESTED = wp.constant(1)
C_PLANS_MADE = wp.constant(2)
C_PLANS_FAILED = wp.constant(3)
C_PLANS_SATISFIED = wp.constant(4)
C_PLANS_DEFERRED = wp.constant(5)
C_NODES_EXPANDED = wp.constant(6)
C_ACTIONS_STARTED = wp.constant(7)
C_ACTIONS_DONE = wp.constant(8)
C_ACTIONS_FAILED = wp.constant(9)
C_IDLE = wp.constant(10)
C_ALIVE = wp.constant(11)
C_PLANS_SEGMENTED = wp.constant(19)
C_REPLAN = wp.constant(12)  # + cause (1..7)
C_FAILED_STATUS = wp.constant(20)  # + planner status (0..7)
N_COUNTERS = 28



@wp.func
def request_plan(
    i: int, cause: int, needs_plan: wp.array(dtype=wp.bool), replan_cause: wp.array(dtype=wp.int8),
    action: wp.array(dtype=wp.int32), action_ticks: wp.array(dtype=wp.int32), events: wp.array(dtype=wp.uint32),
    counters: wp.array2d(dtype=wp.int64),
    chunk: int,
):
    needs_plan[i] = True
    replan_cause[i] = wp.int8(cause)
    action[i] = -1
    action_ticks[i] = 0
    events[i] = events[i] | EV_REPLAN
    wp.atomic_add(counters, chunk, C_REPLAN + cause, wp.int64(1))


@wp.kernel
def select_goals(
    tick: wp.array(dtype=wp.int64),
    states: wp.array2d(dtype=wp.uint64),
    gt: GoalTables,
    alive: wp.array(dtype=wp.bool),
    priorities: wp.array2d(dtype=wp.float32),
    scores: wp.array2d(dtype=wp.float32),
    cooldown_until: wp.array2d(dtype=wp.int64),
    pinned_goal: wp.array(dtype=wp.int32),
    hysteresis: float,
    goal: wp.array(dtype=wp.int32),
    plan_length: wp.array(dtype=wp.int32),
    plan_level: wp.array(dtype=wp.int8),
    step: wp.array(dtype=wp.int32),
    needs_plan: wp.array(dtype=wp.bool),
    replan_cause: wp.array(dtype=wp.int8),
    action: wp.array(dtype=wp.int32),
    action_ticks: wp.array(dtype=wp.int32),
    events: wp.array(dtype=wp.uint32),
    counters: wp.array2d(dtype=wp.int64),
    first: int,
    chunk: int,
):
    """Each agent takes its best eligible goal (not holding, not cooling down, priority > 0), or its pinned goal.

    Scores (priorities, or a goal scorer's output) are compared with a bonus for the goal being pursued; ties go
    to the lower goal index. Reaching the current goal counts as an achievement and releases a pin.
    """
    i = wp.tid() + first
    if not alive[i]:
        return
    now = tick[0]
    current = goal[i]
    achieved = False
    if current >= 0:
        if goal_satisfied(states, i, gt.mask, gt.value, gt.ints, current):
            achieved = True
            events[i] = events[i] | EV_GOAL_ACHIEVED
            wp.atomic_add(counters, chunk, C_GOALS_ACHIEVED, wp.int64(1))
            if pinned_goal[i] == current:
                pinned_goal[i] = -1
    best = int(-1)
    pin = pinned_goal[i]
    if pin >= 0:
        if cooldown_until[i, pin] <= now and not goal_satisfied(states, i, gt.mask, gt.value, gt.ints, pin):
            best = pin
    else:
        best_score = float(0.0)
        for g in range(gt.n_goals):
            if cooldown_until[i, g] > now or priorities[i, g] <= 0.0:
                continue
            s = scores[i, g]
            if g == current:
                s = s + hysteresis
            if best >= 0 and not s > best_score:
                continue  # cannot win: skip the goal test
            if g == current and not achieved:
                pass  # the current goal was just tested: it does not hold
            elif goal_satisfied(states, i, gt.mask, gt.value, gt.ints, g):
                continue
            best = g
            best_score = s
    if best != current:
        goal[i] = best
        plan_length[i] = 0
        plan_level[i] = wp.int8(0)  # a new query: its search starts with the first pool
        step[i] = 0
        action[i] = -1
        action_ticks[i] = 0
        events[i] = events[i] | EV_GOAL_CHANGED
        if best < 0:
            needs_plan[i] = False
        elif achieved or current < 0:
            request_plan(i, CAUSE_NEW_GOAL, needs_plan, replan_cause, action, action_ticks, events, counters, chunk)
        else:
            request_plan(i, CAUSE_GOAL_CHANGED, needs_plan, replan_cause, action, action_ticks, events, counters, chunk)


@wp.kernel
def validate_plans(
    states: wp.array2d(dtype=wp.uint64),
    tables: DomainTables,
    alive: wp.array(dtype=wp.bool),
    enabled: wp.array2d(dtype=wp.bool),
    goal: wp.array(dtype=wp.int32),
    plan: wp.array2d(dtype=wp.int32),
    plan_length: wp.array(dtype=wp.int32),
    step: wp.array(dtype=wp.int32),
    action_status: wp.array(dtype=wp.int8),
    needs_plan: wp.array(dtype=wp.bool),
    replan_cause: wp.array(dtype=wp.int8),
    action: wp.array(dtype=wp.int32),
    action_ticks: wp.array(dtype=wp.int32),
    events: wp.array(dtype=wp.uint32),
    counters: wp.array2d(dtype=wp.int64),
    first: int,
    chunk: int,
):
    """An agent with a plan needs a new one when its last action failed, its plan ran out without reaching the
    goal, or its current action no longer applies (preconditions false, or disabled)."""
    i = wp.tid() + first
    if not alive[i] or goal[i] < 0 or needs_plan[i]:
        return
    if action_status[i] == wp.int8(FAILED):
        action_status[i] = wp.int8(RUNNING)
        request_plan(i, CAUSE_ACTION_FAILED, needs_plan, replan_cause, action, action_ticks, events, counters, chunk)
        return
    s = step[i]
    if s >= plan_length[i]:
        request_plan(i, CAUSE_PLAN_FINISHED, needs_plan, replan_cause, action, action_ticks, events, counters, chunk)
        return
    a = plan[i, s]
    if not enabled[i, a] or not action_applicable(states, i, tables.pre_mask, tables.pre_value, tables.pre_ints, a):
        request_plan(i, CAUSE_INVALID, needs_plan, replan_cause, action, action_ticks, events, counters, chunk)


@wp.kernel
def queue_requests(
    alive: wp.array(dtype=wp.bool),
    needs_plan: wp.array(dtype=wp.bool),
    goal: wp.array(dtype=wp.int32),
    waiting: wp.array(dtype=wp.int32),
    flag: wp.array(dtype=wp.int32),
    first: int,
    chunk: int,
):
    """Flag the agents that need a plan; each waits one tick more."""
    i = wp.tid() + first
    if alive[i] and needs_plan[i] and goal[i] >= 0:
        waiting[i] = waiting[i] + 1
        flag[i] = 1
    else:
        flag[i] = 0


@wp.kernel
def compact_requests(
    flag: wp.array(dtype=wp.int32),
    pos: wp.array(dtype=wp.int32),
    goal: wp.array(dtype=wp.int32),
    priorities: wp.array2d(dtype=wp.float32),
    budget: int,
    q_key: wp.array(dtype=wp.float32),
    q_ids: wp.array(dtype=wp.int32),
    q_count: wp.array(dtype=wp.int32),
    first: int,
    chunk: int,
):
    """Scatter the flagged agents to the front of the queue in index order (``pos`` is the exclusive scan of
    ``flag``), keyed by descending goal priority; the rest of the queue is padded to sort last.
    ``q_count`` gets [requests, requests planned this tick]."""
    i = wp.tid() + first
    n = flag.shape[0]
    count = pos[n - 1] + flag[n - 1]
    if flag[i] != 0:
        p = priorities[i, goal[i]]
        if p != p:
            p = -wp.inf
        q_key[pos[i]] = -p
        q_ids[pos[i]] = i
    if i >= count:
        q_key[i] = wp.inf
        q_ids[i] = i
    if i == 0:
        q_count[0] = count
        if budget > 0:
            q_count[1] = wp.min(count, budget)
        else:
            q_count[1] = count


@wp.kernel
def wait_keys(
    q_ids: wp.array(dtype=wp.int32),
    q_count: wp.array(dtype=wp.int32),
    waiting: wp.array(dtype=wp.int32),
    q_wait: wp.array(dtype=wp.int32),
):
    """The second sort key of the queue (after priority): longest waiting first; padding last."""
    t = wp.tid()
    if t < q_count[0]:
        q_wait[t] = -waiting[q_ids[t]]
    else:
        q_wait[t] = 2147483647


@wp.kernel
def accept_plans(
    tick: wp.array(dtype=wp.int64),
    q_ids: wp.array(dtype=wp.int32),
    q_count: wp.array(dtype=wp.int32),
    cooldown_ticks: int,
    plan_capacity: int,
    plan_status: wp.array(dtype=wp.int8),
    plan_level: wp.array(dtype=wp.int8),
    n_levels: int,
    expanded: wp.array(dtype=wp.int32),
    goal: wp.array(dtype=wp.int32),
    plan_length: wp.array(dtype=wp.int32),
    step: wp.array(dtype=wp.int32),
    needs_plan: wp.array(dtype=wp.bool),
    waiting: wp.array(dtype=wp.int32),
    last_failure: wp.array(dtype=wp.int8),
    cooldown_until: wp.array2d(dtype=wp.int64),
    action: wp.array(dtype=wp.int32),
    events: wp.array(dtype=wp.uint32),
    counters: wp.array2d(dtype=wp.int64),
    first: int,
    chunk: int,
):
    """Take the planner's results for the agents planned this tick: a plan starts at step 0; a goal that already
    holds waits for the next selection; a failed search cools that goal down and drops it; a search that ran out
    of its pool with larger pools still to try (level < n_levels) stays queued for a later tick (deferred)."""
    t = wp.tid() + first
    if t >= q_count[1]:
        return
    i = q_ids[t]
    st = int(plan_status[i])
    wp.atomic_add(counters, chunk, C_PLANS_REQUESTED, wp.int64(1))
    wp.atomic_add(counters, chunk, C_NODES_EXPANDED, wp.int64(expanded[i]))
    if st == ST_BUDGET and int(plan_level[i]) < n_levels:  # deferred: resumes at this pool level next tick
        wp.atomic_add(counters, chunk, C_PLANS_DEFERRED, wp.int64(1))
        plan_length[i] = 0
        return
    needs_plan[i] = False
    waiting[i] = 0
    plan_level[i] = wp.int8(0)
    step[i] = 0
    action[i] = -1
    if st == ST_OK or st == ST_TOO_LONG:
        if st == ST_TOO_LONG:  # the first plan_capacity steps of a longer optimal plan: replanned after them
            plan_length[i] = plan_capacity
            wp.atomic_add(counters, chunk, C_PLANS_SEGMENTED, wp.int64(1))
        events[i] = events[i] | EV_PLAN_FOUND
        wp.atomic_add(counters, chunk, C_PLANS_MADE, wp.int64(1))
    elif st == ST_SATISFIED:
        plan_length[i] = 0
        wp.atomic_add(counters, chunk, C_PLANS_SATISFIED, wp.int64(1))
    else:
        plan_length[i] = 0
        last_failure[i] = wp.int8(st)
        g = goal[i]
        if g >= 0:
            cooldown_until[i, g] = tick[0] + wp.int64(cooldown_ticks)
        goal[i] = -1
        events[i] = events[i] | EV_PLAN_FAILED
        wp.atomic_add(counters, chunk, C_PLANS_FAILED, wp.int64(1))
        wp.atomic_add(counters, chunk, C_FAILED_STATUS + st, wp.int64(1))


@wp.kernel
def begin_actions(
    alive: wp.array(dtype=wp.bool),
    goal: wp.array(dtype=wp.int32),
    needs_plan: wp.array(dtype=wp.bool),
    plan: wp.array2d(dtype=wp.int32),
    plan_length: wp.array(dtype=wp.int32),
    step: wp.array(dtype=wp.int32),
    action: wp.array(dtype=wp.int32),
    action_status: wp.array(dtype=wp.int8),
    action_ticks: wp.array(dtype=wp.int32),
    events: wp.array(dtype=wp.uint32),
    counters: wp.array2d(dtype=wp.int64),
    first: int,
    chunk: int,
):
    """Set each agent's current action (its plan's step, or -1); an action with no ticks behind it starts now."""
    i = wp.tid() + first
    if not alive[i]:
        action[i] = -1
        return
    wp.atomic_add(counters, chunk, C_ALIVE, wp.int64(1))
    current = int(-1)
    if goal[i] >= 0 and not needs_plan[i] and step[i] < plan_length[i]:
        current = plan[i, step[i]]
    if current != action[i]:
        action[i] = current
        action_ticks[i] = 0
    if current < 0:
        wp.atomic_add(counters, chunk, C_IDLE, wp.int64(1))
        return
    action_status[i] = wp.int8(RUNNING)
    if action_ticks[i] == 0:
        events[i] = events[i] | EV_ACTION_STARTED
        wp.atomic_add(counters, chunk, C_ACTIONS_STARTED, wp.int64(1))


@wp.kernel
def finish_actions(
    states: wp.array2d(dtype=wp.uint64),
    tables: DomainTables,
    apply: int,
    alive: wp.array(dtype=wp.bool),
    plan: wp.array2d(dtype=wp.int32),
    plan_length: wp.array(dtype=wp.int32),
    step: wp.array(dtype=wp.int32),
    action: wp.array(dtype=wp.int32),
    action_status: wp.array(dtype=wp.int8),
    action_ticks: wp.array(dtype=wp.int32),
    action_counts: wp.array2d(dtype=wp.int64),
    events: wp.array(dtype=wp.uint32),
    counters: wp.array2d(dtype=wp.int64),
    first: int,
    chunk: int,
):
    """Close the tick's actions: DONE applies the action's effects and moves to the next step (which becomes the
    current action), FAILED stops the agent (validation replans it next tick), RUNNING counts a tick."""
    i = wp.tid() + first
    a = action[i]
    if not alive[i] or a < 0:
        return
    st = action_status[i]
    if st == wp.int8(DONE):
        if apply != 0:
            apply_action(states, i, states, i, tables.eff_clear, tables.eff_set, tables.eff_steps, a)
        s = step[i] + 1
        step[i] = s
        events[i] = events[i] | EV_ACTION_FINISHED
        wp.atomic_add(counters, chunk, C_ACTIONS_DONE, wp.int64(1))
        wp.atomic_add(action_counts, chunk, a, wp.int64(1))
        nxt = int(-1)
        if s < plan_length[i]:
            nxt = plan[i, s]
        action[i] = nxt
        action_ticks[i] = 0
        action_status[i] = wp.int8(RUNNING)
    elif st == wp.int8(FAILED):
        events[i] = events[i] | EV_ACTION_FAILED
        wp.atomic_add(counters, chunk, C_ACTIONS_FAILED, wp.int64(1))
        action[i] = -1
        action_ticks[i] = 0
    else:
        action_ticks[i] = action_ticks[i] + 1


@wp.kernel
def advance_tick(tick: wp.array(dtype=wp.int64)):
    tick[0] = tick[0] + wp.int64(1)


@wp.kernel
def check_actions(
    alive: wp.array(dtype=wp.bool),
    action: wp.array(dtype=wp.int32),
    action_status: wp.array(dtype=wp.int8),
    n_actions: int,
    first_bad: wp.array(dtype=wp.int32),
    first: int,
    chunk: int,
):
    """The lowest agent whose action index or action status is out of range (debug validation)."""
    i = wp.tid() + first
    if not alive[i]:
        return
    a = action[i]
    st = int(action_status[i])
    if a < -1 or a >= n_actions or st < 0 or st > 2:
        wp.atomic_min(first_bad, chunk, i)


@wp.kernel
def check_states(
    alive: wp.array(dtype=wp.bool),
    states: wp.array2d(dtype=wp.uint64),
    fact_word: wp.array(dtype=wp.int32),
    fact_shift: wp.array(dtype=wp.int32),
    fact_mask: wp.array(dtype=wp.uint64),
    fact_hi: wp.array(dtype=wp.uint64),
    used_bits: wp.array(dtype=wp.uint64),
    first_bad: wp.array(dtype=wp.int32),
    first: int,
    chunk: int,
):
    """The lowest agent whose packed state holds a field above its range or bits outside every field."""
    i = wp.tid() + first
    if not alive[i]:
        return
    for w in range(states.shape[1]):
        if (states[i, w] & ~used_bits[w]) != wp.uint64(0):
            wp.atomic_min(first_bad, chunk, i)
            return
    for f in range(fact_word.shape[0]):
        v = (states[i, fact_word[f]] >> wp.uint64(fact_shift[f])) & fact_mask[f]
        if v > fact_hi[f]:
            wp.atomic_min(first_bad, chunk, i)
            return


# --- commands and fact access (launched over an index list) ---------------------------------------------------
@wp.kernel
def read_fact_values(
    states: wp.array2d(dtype=wp.uint64),
    rows: wp.array(dtype=wp.int32),
    word: int,
    shift: int,
    mask: wp.uint64,
    lo: wp.int64,
    out: wp.array(dtype=wp.int64),
):
    t = wp.tid()
    out[t] = wp.int64(read_field(states, rows[t], word, shift, mask)) + lo


@wp.kernel
def write_fact_values(
    states: wp.array2d(dtype=wp.uint64),
    rows: wp.array(dtype=wp.int32),
    word: int,
    shift: int,
    mask: wp.uint64,
    lo: wp.int64,
    values: wp.array(dtype=wp.int64),
):
    t = wp.tid()
    write_field(states, rows[t], word, shift, mask, wp.uint64(values[t] - lo))


@wp.kernel
def replan_agents(
    rows: wp.array(dtype=wp.int32),
    cause: int,
    alive: wp.array(dtype=wp.bool),
    goal: wp.array(dtype=wp.int32),
    plan_length: wp.array(dtype=wp.int32),
    step: wp.array(dtype=wp.int32),
    needs_plan: wp.array(dtype=wp.bool),
    replan_cause: wp.array(dtype=wp.int8),
    action: wp.array(dtype=wp.int32),
    action_ticks: wp.array(dtype=wp.int32),
    plan_level: wp.array(dtype=wp.int8),
):
    """Force a new plan next tick (the current one is dropped); agents without a goal pick one as usual."""
    t = wp.tid()
    i = rows[t]
    if not alive[i]:
        return
    plan_length[i] = 0
    plan_level[i] = wp.int8(0)
    step[i] = 0
    action[i] = -1
    action_ticks[i] = 0
    if goal[i] >= 0:
        needs_plan[i] = True
        replan_cause[i] = wp.int8(cause)


@wp.kernel
def pin_goals(
    rows: wp.array(dtype=wp.int32),
    g: int,
    pinned_goal: wp.array(dtype=wp.int32),
):
    t = wp.tid()
    pinned_goal[rows[t]] = g


@wp.kernel
def set_alive(rows: wp.array(dtype=wp.int32), value: int, alive: wp.array(dtype=wp.bool)):
    t = wp.tid()
    alive[rows[t]] = value != 0


@wp.kernel
def reset_rows(
    rows: wp.array(dtype=wp.int32),
    new_states: wp.array2d(dtype=wp.uint64),
    goal_priority: wp.array(dtype=wp.float32),
    action_cost: wp.array(dtype=wp.float64),
    states: wp.array2d(dtype=wp.uint64),
    priorities: wp.array2d(dtype=wp.float32),
    costs: wp.array2d(dtype=wp.float32),
    enabled: wp.array2d(dtype=wp.bool),
    goal: wp.array(dtype=wp.int32),
    pinned_goal: wp.array(dtype=wp.int32),
    plan: wp.array2d(dtype=wp.int32),
    plan_length: wp.array(dtype=wp.int32),
    step: wp.array(dtype=wp.int32),
    plan_status: wp.array(dtype=wp.int8),
    plan_level: wp.array(dtype=wp.int8),
    action: wp.array(dtype=wp.int32),
    action_status: wp.array(dtype=wp.int8),
    action_ticks: wp.array(dtype=wp.int32),
    cooldown_until: wp.array2d(dtype=wp.int64),
    waiting: wp.array(dtype=wp.int32),
    needs_plan: wp.array(dtype=wp.bool),
    replan_cause: wp.array(dtype=wp.int8),
    last_failure: wp.array(dtype=wp.int8),
    events: wp.array(dtype=wp.uint32),
):
    """An agent as new: the given state (row t, or row 0 for all), the domain's priorities, costs and enabled
    actions, and no goal, pin, plan, action, cooldown or event."""
    t = wp.tid()
    i = rows[t]
    src = t
    if new_states.shape[0] == 1:
        src = 0
    for w in range(states.shape[1]):
        states[i, w] = new_states[src, w]
    for g in range(priorities.shape[1]):
        priorities[i, g] = goal_priority[g]
        cooldown_until[i, g] = wp.int64(0)
    for a in range(costs.shape[1]):
        costs[i, a] = wp.float32(action_cost[a])
        enabled[i, a] = True
    for k in range(plan.shape[1]):
        plan[i, k] = -1
    goal[i] = -1
    pinned_goal[i] = -1
    plan_length[i] = 0
    step[i] = 0
    plan_status[i] = wp.int8(5)
    plan_level[i] = wp.int8(0)
    action[i] = -1
    action_status[i] = wp.int8(RUNNING)
    action_ticks[i] = 0
    waiting[i] = 0
    needs_plan[i] = False
    replan_cause[i] = wp.int8(0)
    last_failure[i] = wp.int8(-1)
    events[i] = wp.uint32(0)


@wp.kernel
def event_mask(events: wp.array(dtype=wp.uint32), bit: wp.uint32, out: wp.array(dtype=wp.bool)):
    i = wp.tid()
    out[i] = (events[i] & bit) != wp.uint32(0)


@wp.kernel
def goal_holds(
    states: wp.array2d(dtype=wp.uint64), gt: GoalTables, goal: wp.array(dtype=wp.int32), out: wp.array(dtype=wp.bool)
):
    i = wp.tid()
    g = goal[i]
    out[i] = g >= 0 and goal_satisfied(states, i, gt.mask, gt.value, gt.ints, g)

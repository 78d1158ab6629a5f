"""The brain's tick stages as Warp kernels: one thread per agent, every rule from `goap.kernels.semantics`.

Every kernel takes the agents as one `goap.kernels.agents.Agents` struct; codes come from `goap.kernels.codes`.
The launcher is `goap.runtime.pipeline`. Per-tick scalars (the tick number, request counts) live in device arrays,
so that a captured graph replays correctly. Counters of the tick are accumulated with atomics into
``counters[chunk, slot]`` (slots in `goap.codes.COUNTERS`) and read back once per tick; ``first`` and ``chunk``
are a CPU span's first row and counter row (0 and 0 on a GPU and under capture).
"""

from __future__ import annotations

import warp as wp

from goap.kernels.agents import Agents, forget_plan
from goap.kernels.codes import (
    C_ACTIONS_DONE,
    C_ACTIONS_FAILED,
    C_ACTIONS_INTERRUPTED,
    C_ACTIONS_STARTED,
    C_ALIVE,
    C_FAILED_BASE,
    C_GOALS_ACHIEVED,
    C_GOALS_CHANGED,
    C_IDLE,
    C_NODES_EXPANDED,
    C_PLANS_DEFERRED,
    C_PLANS_FAILED,
    C_PLANS_MADE,
    C_PLANS_REQUESTED,
    C_PLANS_SATISFIED,
    C_PLANS_SEGMENTED,
    C_REPLAN_BASE,
    C_REPLANS,
    CAUSE_ACTION_FAILED,
    CAUSE_COMMANDED,
    CAUSE_GOAL_CHANGED,
    CAUSE_INVALID,
    CAUSE_NEW_GOAL,
    CAUSE_PLAN_FINISHED,
    DONE,
    EV_ACTION_FAILED,
    EV_ACTION_FINISHED,
    EV_ACTION_INTERRUPTED,
    EV_ACTION_STARTED,
    EV_GOAL_ACHIEVED,
    EV_GOAL_CHANGED,
    EV_PLAN_FAILED,
    EV_PLAN_FOUND,
    EV_REPLAN,
    FAILED,
    RUNNING,
    ST_BUDGET,
    ST_NOT_PLANNED,
    ST_OK,
    ST_SATISFIED,
    ST_TOO_LONG,
)
from goap.kernels.semantics import (
    CondList,
    DomainTables,
    GoalTables,
    action_applicable,
    apply_action,
    goal_satisfied,
    read_field,
    write_field,
)

wp.set_module_options({"enable_backward": False})


@wp.struct
class Rules:
    """The brain's per-action and per-type tables (`goap.runtime.brain`): which actions run to their end once
    started, and each agent type's goal priorities (a goal at priority <= 0 for a type is never selected by it)."""

    interruptible: wp.array(dtype=wp.bool)  # [A]
    type_priority: wp.array2d(dtype=wp.float32)  # [T, G]


@wp.func
def agent_type_of(agents: Agents, rules: Rules, i: int) -> int:
    """Agent ``i``'s type, clamped into the table (a type out of range is an input error the checks report)."""
    return wp.clamp(agents.agent_type[i], 0, rules.type_priority.shape[0] - 1)


@wp.func
def stop_action(agents: Agents, i: int, counters: wp.array2d(dtype=wp.int64), chunk: int):
    """Agent ``i``'s current action stops; one that had started and not ended (it ran a tick or more) is
    interrupted: event ``action_interrupted``, and ``interrupted_action`` names it for the world."""
    a = agents.action[i]
    if a >= 0 and agents.action_ticks[i] > 0:
        agents.interrupted_action[i] = a
        agents.event_bits[i] = agents.event_bits[i] | EV_ACTION_INTERRUPTED
        wp.atomic_add(counters, chunk, C_ACTIONS_INTERRUPTED, wp.int64(1))
    agents.action[i] = -1
    agents.action_ticks[i] = 0


@wp.func
def request_plan(agents: Agents, i: int, cause: int, counters: wp.array2d(dtype=wp.int64), chunk: int):
    """Agent ``i`` asks for a plan (for ``cause``); its current action stops (interrupted if it was running)."""
    stop_action(agents, i, counters, chunk)
    agents.needs_plan[i] = True
    agents.replan_cause[i] = wp.int8(cause)
    agents.event_bits[i] = agents.event_bits[i] | EV_REPLAN
    wp.atomic_add(counters, chunk, C_REPLAN_BASE + cause, wp.int64(1))
    wp.atomic_add(counters, chunk, C_REPLANS, wp.int64(1))


@wp.kernel
def decide(
    agents: Agents,
    tick: wp.array(dtype=wp.int64),
    gt: GoalTables,
    tables: DomainTables,
    rules: Rules,
    scored: int,
    score_mult: wp.array2d(dtype=wp.float32),
    score_add: wp.array2d(dtype=wp.float32),
    hysteresis: float,
    flag: wp.array(dtype=wp.int32),
    counters: wp.array2d(dtype=wp.int64),
    first: int,
    chunk: int,
):
    """Select each agent's goal, validate its plan, and flag it when it needs a plan: one pass over the agents.

    **Busy.** An agent whose action is not interruptible and is under way (it started and ran a tick or more)
    keeps its goal and plan until the world ends the action (DONE or FAILED): nothing else is decided for it
    this tick, and a commanded replan waits. **Select.** Each agent takes its best eligible goal (not holding,
    not cooling down, priority > 0 in its row and for its type), or its pinned goal. A pinned goal that already
    holds is released (it is reached) and the agent selects by priority. Scores are compared with a bonus for the
    goal being pursued: the priorities, or with a goal scorer (``scored``) ``priority * score_mult + score_add``,
    this tick's priority under the scorer's last factor and term (a scorer that gives plain scores sets the factor
    to 0); ties go to the lower goal index. Reaching the
    current goal counts as an achievement and releases a pin. **Commands.** A replan commanded since the last
    tick (``commanded``) drops the plan and asks for a new one, with the cause the command gave. **Validate.** An
    agent with a plan needs a new one when its last action failed, its plan ran out without reaching the goal,
    or its current action no longer applies (preconditions false, or disabled). Dropping a plan stops the
    current action: one under way is interrupted (`stop_action`). **Queue.** An agent that needs a plan is
    flagged for the request queue and waits one tick more.
    """
    i = wp.tid() + first
    if not agents.alive[i]:
        flag[i] = 0
        return
    running = agents.action[i]
    if running >= 0 and agents.action_ticks[i] > 0 and not rules.interruptible[running]:
        flag[i] = 0  # busy: the action runs to its end
        return
    commanded = agents.commanded[i]
    agents.commanded[i] = False
    states = agents.states
    now = tick[0]
    current = agents.goal[i]
    achieved = False
    if current >= 0:
        if goal_satisfied(states, i, gt.mask, gt.value, gt.ints, current):
            achieved = True
            agents.event_bits[i] = agents.event_bits[i] | EV_GOAL_ACHIEVED
            wp.atomic_add(counters, chunk, C_GOALS_ACHIEVED, wp.int64(1))
            if agents.pinned_goal[i] == current:
                agents.pinned_goal[i] = -1
    best = int(-1)
    pin = agents.pinned_goal[i]
    if pin >= 0 and goal_satisfied(states, i, gt.mask, gt.value, gt.ints, pin):
        agents.pinned_goal[i] = -1  # a pin that holds is reached: released, and the agent selects by priority
        pin = -1
    if pin >= 0:
        if agents.cooldown_until[i, pin] <= now:
            best = pin
    else:
        t = agent_type_of(agents, rules, i)
        best_score = float(0.0)
        for g in range(gt.n_goals):
            if agents.cooldown_until[i, g] > now or agents.priorities[i, g] <= 0.0:
                continue
            if rules.type_priority[t, g] <= 0.0:
                continue
            s = agents.priorities[i, g]
            if scored != 0:
                s = s * score_mult[i, g] + score_add[i, g]
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
        stop_action(agents, i, counters, chunk)
        agents.goal[i] = best
        forget_plan(agents, i)  # a new query: its search starts with the first pool
        agents.event_bits[i] = agents.event_bits[i] | EV_GOAL_CHANGED
        wp.atomic_add(counters, chunk, C_GOALS_CHANGED, wp.int64(1))
        if best < 0:
            agents.needs_plan[i] = False
        elif achieved or current < 0:
            request_plan(agents, i, CAUSE_NEW_GOAL, counters, chunk)
        else:
            request_plan(agents, i, CAUSE_GOAL_CHANGED, counters, chunk)
    elif commanded and current >= 0:
        stop_action(agents, i, counters, chunk)
        forget_plan(agents, i)
        request_plan(agents, i, int(agents.replan_cause[i]), counters, chunk)

    # validate
    if agents.goal[i] >= 0 and not agents.needs_plan[i]:
        if agents.action_status[i] == wp.int8(FAILED):
            agents.action_status[i] = wp.int8(RUNNING)
            request_plan(agents, i, CAUSE_ACTION_FAILED, counters, chunk)
        else:
            st = agents.step[i]
            if st >= agents.plan_length[i]:
                request_plan(agents, i, CAUSE_PLAN_FINISHED, counters, chunk)
            else:
                a = agents.plan[i, st]
                if not agents.enabled[i, a] or not action_applicable(
                    states, i, tables.pre_mask, tables.pre_value, tables.pre_ints, a
                ):
                    request_plan(agents, i, CAUSE_INVALID, counters, chunk)

    # queue
    if agents.needs_plan[i] and agents.goal[i] >= 0:
        agents.waiting[i] = agents.waiting[i] + 1
        flag[i] = 1
    else:
        flag[i] = 0


@wp.kernel
def compact_requests(
    agents: Agents,
    flag: wp.array(dtype=wp.int32),
    pos: wp.array(dtype=wp.int32),
    budget: int,
    q_key: wp.array(dtype=wp.float32),
    q_ids: wp.array(dtype=wp.int32),
    q_count: wp.array(dtype=wp.int32),
    first: int,
    chunk: int,
):
    """Scatter the flagged agents to the front of the queue in index order (``pos`` is the exclusive scan of
    ``flag``), keyed by descending goal priority; the rest of the queue is padded to sort last.
    ``q_count`` gets [requests, requests planned this tick, 1 when the queue must be ordered (more requests than
    the budget), else 0]."""
    i = wp.tid() + first
    n = flag.shape[0]
    count = pos[n - 1] + flag[n - 1]
    if flag[i] != 0:
        p = agents.priorities[i, agents.goal[i]]
        if p != p:
            p = -wp.inf
        q_key[pos[i]] = -p
        q_ids[pos[i]] = i
    if i >= count:
        q_key[i] = wp.inf
        q_ids[i] = i
    if i == 0:
        q_count[0] = count
        q_count[2] = 0
        if budget > 0:
            q_count[1] = wp.min(count, budget)
            if count > budget:
                q_count[2] = 1
        else:
            q_count[1] = count


@wp.kernel
def wait_keys(
    agents: Agents,
    q_ids: wp.array(dtype=wp.int32),
    q_count: wp.array(dtype=wp.int32),
    q_wait: wp.array(dtype=wp.int32),
):
    """The second sort key of the queue (after priority): longest waiting first; padding last."""
    t = wp.tid()
    if t < q_count[0]:
        q_wait[t] = -agents.waiting[q_ids[t]]
    else:
        q_wait[t] = 2147483647


@wp.kernel
def accept_plans(
    agents: Agents,
    tick: wp.array(dtype=wp.int64),
    q_ids: wp.array(dtype=wp.int32),
    q_count: wp.array(dtype=wp.int32),
    cooldown_ticks: int,
    n_levels: int,
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
    st = int(agents.plan_status[i])
    wp.atomic_add(counters, chunk, C_PLANS_REQUESTED, wp.int64(1))
    wp.atomic_add(counters, chunk, C_NODES_EXPANDED, wp.int64(agents.expanded[i]))
    if st == ST_BUDGET and int(agents.plan_level[i]) < n_levels:  # deferred: resumes at this pool level next tick
        wp.atomic_add(counters, chunk, C_PLANS_DEFERRED, wp.int64(1))
        agents.plan_length[i] = 0
        return
    agents.needs_plan[i] = False
    agents.waiting[i] = 0
    agents.plan_level[i] = wp.int8(0)
    agents.step[i] = 0
    agents.action[i] = -1
    if st == ST_OK or st == ST_TOO_LONG:
        if st == ST_TOO_LONG:  # the first plan-capacity steps of a longer optimal plan: replanned after them
            agents.plan_length[i] = agents.plan.shape[1]
            wp.atomic_add(counters, chunk, C_PLANS_SEGMENTED, wp.int64(1))
        agents.event_bits[i] = agents.event_bits[i] | EV_PLAN_FOUND
        wp.atomic_add(counters, chunk, C_PLANS_MADE, wp.int64(1))
    elif st == ST_SATISFIED:
        agents.plan_length[i] = 0
        wp.atomic_add(counters, chunk, C_PLANS_SATISFIED, wp.int64(1))
    else:
        agents.plan_length[i] = 0
        agents.last_failure[i] = wp.int8(st)
        g = agents.goal[i]
        if g >= 0:
            agents.cooldown_until[i, g] = tick[0] + wp.int64(cooldown_ticks)
        agents.failed_goal[i] = g
        agents.goal[i] = -1
        agents.event_bits[i] = agents.event_bits[i] | EV_PLAN_FAILED
        wp.atomic_add(counters, chunk, C_PLANS_FAILED, wp.int64(1))
        wp.atomic_add(counters, chunk, C_FAILED_BASE + st, wp.int64(1))


@wp.kernel
def begin_actions(agents: Agents, counters: wp.array2d(dtype=wp.int64), first: int, chunk: int):
    """Set each agent's current action (its plan's step, or -1); an action with no ticks behind it starts now."""
    i = wp.tid() + first
    if not agents.alive[i]:
        agents.action[i] = -1
        return
    wp.atomic_add(counters, chunk, C_ALIVE, wp.int64(1))
    current = int(-1)
    s = agents.step[i]
    if agents.goal[i] >= 0 and not agents.needs_plan[i] and s < agents.plan_length[i]:
        current = agents.plan[i, s]
    if current != agents.action[i]:
        agents.action[i] = current
        agents.action_ticks[i] = 0
    if current < 0:
        wp.atomic_add(counters, chunk, C_IDLE, wp.int64(1))
        return
    agents.action_status[i] = wp.int8(RUNNING)
    if agents.action_ticks[i] == 0:
        agents.event_bits[i] = agents.event_bits[i] | EV_ACTION_STARTED
        wp.atomic_add(counters, chunk, C_ACTIONS_STARTED, wp.int64(1))


@wp.kernel
def finish_actions(
    agents: Agents,
    tables: DomainTables,
    apply: int,
    action_counts: wp.array2d(dtype=wp.int64),
    counters: wp.array2d(dtype=wp.int64),
    first: int,
    chunk: int,
):
    """Close the tick's actions: DONE applies the action's effects (its conditional effects judged on the state
    before it, as `goap.domain.Domain.apply` does) and moves to the next step (which becomes the current action),
    FAILED stops the agent (validation replans it next tick), RUNNING counts a tick."""
    i = wp.tid() + first
    a = agents.action[i]
    if not agents.alive[i] or a < 0:
        return
    st = agents.action_status[i]
    if st == wp.int8(DONE):
        if apply != 0:
            states = agents.states
            w = tables.when
            first_when = w.start[a]
            n_when = w.start[a + 1] - first_when  # at most 64 (`MAX_WHEN`, checked when the brain is made)
            fired = wp.uint64(0)
            for k in range(n_when):  # every condition judged on the state before the action
                if action_applicable(states, i, w.mask, w.value, w.ints, first_when + k):
                    fired = fired | (wp.uint64(1) << wp.uint64(k))
            apply_action(states, i, states, i, tables.eff_clear, tables.eff_set, tables.eff_steps, a)
            for k in range(n_when):  # then the effects that fire, in order (`goap.domain.Domain.apply`)
                if (fired >> wp.uint64(k)) & wp.uint64(1) != wp.uint64(0):
                    apply_action(states, i, states, i, w.eff_clear, w.eff_set, w.eff_steps, first_when + k)
        s = agents.step[i] + 1
        agents.step[i] = s
        agents.event_bits[i] = agents.event_bits[i] | EV_ACTION_FINISHED
        wp.atomic_add(counters, chunk, C_ACTIONS_DONE, wp.int64(1))
        wp.atomic_add(action_counts, chunk, a, wp.int64(1))
        nxt = int(-1)
        if s < agents.plan_length[i]:
            nxt = agents.plan[i, s]
        agents.action[i] = nxt
        agents.action_ticks[i] = 0
        agents.action_status[i] = wp.int8(RUNNING)
    elif st == wp.int8(FAILED):
        agents.event_bits[i] = agents.event_bits[i] | EV_ACTION_FAILED
        wp.atomic_add(counters, chunk, C_ACTIONS_FAILED, wp.int64(1))
        agents.action[i] = -1
        agents.action_ticks[i] = 0
    else:
        agents.action_ticks[i] = agents.action_ticks[i] + 1


@wp.kernel
def advance_tick(tick: wp.array(dtype=wp.int64)):
    tick[0] = tick[0] + wp.int64(1)


# --- input checks (a debug pass; each finds the lowest bad agent) ----------------------------------------------
@wp.kernel
def check_actions(agents: Agents, n_actions: int, first_bad: wp.array(dtype=wp.int32), first: int, chunk: int):
    """The lowest agent whose action index or action status is out of range."""
    i = wp.tid() + first
    if not agents.alive[i]:
        return
    a = agents.action[i]
    st = int(agents.action_status[i])
    if a < -1 or a >= n_actions or st < RUNNING or st > FAILED:
        wp.atomic_min(first_bad, chunk, i)


@wp.kernel
def check_states(
    agents: Agents,
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
    if not agents.alive[i]:
        return
    states = agents.states
    for w in range(states.shape[1]):
        if (states[i, w] & ~used_bits[w]) != wp.uint64(0):
            wp.atomic_min(first_bad, chunk, i)
            return
    for f in range(fact_word.shape[0]):
        v = (states[i, fact_word[f]] >> wp.uint64(fact_shift[f])) & fact_mask[f]
        if v > fact_hi[f]:
            wp.atomic_min(first_bad, chunk, i)
            return


@wp.kernel
def check_costs(agents: Agents, max_cost: wp.float32, first_bad: wp.array(dtype=wp.int32), first: int, chunk: int):
    """The lowest agent with a cost the planners refuse: NaN, negative, infinite or above ``max_cost``. Every row,
    dead ones too, and every action, enabled or not, as the reference planner's host check reads them."""
    i = wp.tid() + first
    costs = agents.costs
    for a in range(costs.shape[1]):
        c = costs[i, a]
        if not (c >= wp.float32(0.0) and c <= max_cost):  # NaN fails both comparisons
            wp.atomic_min(first_bad, chunk, i)
            return


# --- commands and fact access (launched over an index list) ---------------------------------------------------
@wp.func
def row_of(rows: wp.array(dtype=wp.int32), t: int, n: int) -> int:
    """Entry t of an index list, or -1 when it is not a row (a device list the game built is not checked on the
    host: rows out of range are skipped by every command kernel)."""
    i = rows[t]
    if i < 0 or i >= n:
        return -1
    return i


@wp.func
def entry(n: int, t: int) -> int:
    """Entry t of a per-row argument of n entries, or entry 0 when one value is given for every row."""
    if n == 1:
        return 0
    return t


@wp.kernel
def read_fact_values(
    agents: Agents, rows: wp.array(dtype=wp.int32), word: int, shift: int, mask: wp.uint64, lo: wp.int64,
    out: wp.array(dtype=wp.int64),
):
    t = wp.tid()
    i = row_of(rows, t, agents.alive.shape[0])
    if i >= 0:
        out[t] = wp.int64(read_field(agents.states, i, word, shift, mask)) + lo


@wp.kernel
def write_fact_values(
    agents: Agents, rows: wp.array(dtype=wp.int32), word: int, shift: int, mask: wp.uint64, lo: wp.int64,
    values: wp.array(dtype=wp.int64),
):
    t = wp.tid()
    i = row_of(rows, t, agents.alive.shape[0])
    if i >= 0:
        write_field(agents.states, i, word, shift, mask, wp.uint64(values[t] - lo))


@wp.kernel
def replan_agents(agents: Agents, rows: wp.array(dtype=wp.int32), cause: int):
    """Command a new plan: the next tick's decide drops the plan (interrupting an interruptible action under way,
    waiting for one that is not) and asks for a plan with ``cause``. Agents without a goal pick one as usual."""
    i = row_of(rows, wp.tid(), agents.alive.shape[0])
    if i < 0:
        return
    if not agents.alive[i]:
        return
    if agents.goal[i] >= 0:
        agents.commanded[i] = True
        agents.replan_cause[i] = wp.int8(cause)


@wp.kernel
def pin_goals(agents: Agents, rows: wp.array(dtype=wp.int32), g: int):
    i = row_of(rows, wp.tid(), agents.alive.shape[0])
    if i >= 0:
        agents.pinned_goal[i] = g


@wp.kernel
def set_alive_rows(agents: Agents, rows: wp.array(dtype=wp.int32), value: int):
    i = row_of(rows, wp.tid(), agents.alive.shape[0])
    if i >= 0:
        agents.alive[i] = value != 0


@wp.kernel
def set_action_status_rows(agents: Agents, rows: wp.array(dtype=wp.int32), status: wp.array(dtype=wp.int8)):
    """The game reports its agents' actions (status[t], or status[0] for all): RUNNING, DONE or FAILED."""
    t = wp.tid()
    i = row_of(rows, t, agents.alive.shape[0])
    if i < 0:
        return
    agents.action_status[i] = status[entry(status.shape[0], t)]


@wp.kernel
def set_type_rows(
    agents: Agents, rows: wp.array(dtype=wp.int32), types: wp.array(dtype=wp.int32), rules: Rules,
):
    """Change agents' types: the type's goal priorities, and a commanded replan (the next tick drops the plan)."""
    t = wp.tid()
    i = row_of(rows, t, agents.alive.shape[0])
    if i < 0:
        return
    k = wp.clamp(types[entry(types.shape[0], t)], 0, rules.type_priority.shape[0] - 1)
    agents.agent_type[i] = k
    for g in range(agents.priorities.shape[1]):
        agents.priorities[i, g] = rules.type_priority[k, g]
    if agents.alive[i] and agents.goal[i] >= 0:
        agents.commanded[i] = True
        agents.replan_cause[i] = wp.int8(CAUSE_COMMANDED)


@wp.kernel
def reset_rows(
    agents: Agents,
    rows: wp.array(dtype=wp.int32),
    types: wp.array(dtype=wp.int32),
    keep_type: int,
    new_states: wp.array2d(dtype=wp.uint64),
    state_by: int,
    rules: Rules,
    costs: wp.array2d(dtype=wp.float32),
    set_costs: int,
    enabled: wp.array2d(dtype=wp.bool),
    set_enabled: int,
):
    """An agent as new: its type (``types[t]``, or ``types[0]`` for all; kept when ``keep_type``), its state
    (``state_by`` 0: row t of ``new_states``, 1: row 0, 2: the row of its type, 3: kept), the type's goal
    priorities, and
    no goal, pin, plan, action, cooldown or failure. Its costs and enabled rows are kept unless ``set_costs`` /
    ``set_enabled`` (then row t, or row 0 for all). The tick's events are left as they were (they describe the
    last tick)."""
    t = wp.tid()
    i = row_of(rows, t, agents.alive.shape[0])
    if i < 0:
        return
    k = agents.agent_type[i]
    if keep_type == 0:
        k = types[entry(types.shape[0], t)]
    k = wp.clamp(k, 0, rules.type_priority.shape[0] - 1)
    agents.agent_type[i] = k
    row = entry(new_states.shape[0], t)
    if state_by == 1:
        row = 0
    elif state_by == 2:
        row = k
    if state_by != 3:  # 3: the facts are kept (despawn)
        for w in range(agents.states.shape[1]):
            agents.states[i, w] = new_states[row, w]
    for g in range(agents.priorities.shape[1]):
        agents.priorities[i, g] = rules.type_priority[k, g]
        agents.cooldown_until[i, g] = wp.int64(0)
    if set_costs != 0:
        crow = entry(costs.shape[0], t)
        for a in range(agents.costs.shape[1]):
            agents.costs[i, a] = costs[crow, a]
    if set_enabled != 0:
        erow = entry(enabled.shape[0], t)
        for a in range(agents.enabled.shape[1]):
            agents.enabled[i, a] = enabled[erow, a]
    for s in range(agents.plan.shape[1]):
        agents.plan[i, s] = -1
    agents.goal[i] = -1
    agents.pinned_goal[i] = -1
    agents.plan_length[i] = 0
    agents.step[i] = 0
    agents.plan_status[i] = wp.int8(ST_NOT_PLANNED)
    agents.plan_level[i] = wp.int8(0)
    agents.action[i] = -1
    agents.action_status[i] = wp.int8(RUNNING)
    agents.action_ticks[i] = 0
    agents.waiting[i] = 0
    agents.needs_plan[i] = False
    agents.commanded[i] = False
    agents.replan_cause[i] = wp.int8(0)
    agents.last_failure[i] = wp.int8(-1)
    agents.failed_goal[i] = -1
    agents.fail_reason[i] = 0


# --- device index lists: events, free rows, sensors' due agents ------------------------------------------------
@wp.kernel
def event_flags(agents: Agents, bit: wp.uint32, mask: wp.array(dtype=wp.bool), flag: wp.array(dtype=wp.int32)):
    """The agents with event ``bit``: a bool mask and 0/1 flags (scanned into list positions)."""
    i = wp.tid()
    on = (agents.event_bits[i] & bit) != wp.uint32(0)
    mask[i] = on
    flag[i] = wp.where(on, 1, 0)


@wp.kernel
def mask_flags(mask: wp.array(dtype=wp.bool), flag: wp.array(dtype=wp.int32)):
    i = wp.tid()
    flag[i] = wp.where(mask[i], 1, 0)


@wp.kernel
def free_flags(agents: Agents, flag: wp.array(dtype=wp.int32)):
    i = wp.tid()
    flag[i] = wp.where(agents.alive[i], 0, 1)


@wp.kernel
def scatter_list(
    flag: wp.array(dtype=wp.int32), pos: wp.array(dtype=wp.int32), ids: wp.array(dtype=wp.int32),
    count: wp.array(dtype=wp.int32),
):
    """Flagged rows to the front of ``ids`` in index order (``pos``: the exclusive scan of ``flag``); the rest is
    -1; ``count[0]`` their number. Device-only: the list and its length never cross to the host."""
    i = wp.tid()
    n = flag.shape[0]
    total = pos[n - 1] + flag[n - 1]
    if flag[i] != 0:
        ids[pos[i]] = i
    if i >= total:
        ids[i] = -1
    if i == 0:
        count[0] = total


@wp.func
def scoring_due(agents: Agents, tick: wp.array(dtype=wp.int64), gt: GoalTables, every: int, i: int) -> bool:
    """Whether a goal scorer scores agent ``i`` this tick: a live agent that will choose a goal afresh (no goal, or
    its goal holds now) or, staggered by index, every ``every`` ticks any other (``(i + tick) % every == 0``), so
    that a pursued goal can still be outscored."""
    return scoring_due_at(agents.alive, agents.goal, agents.states, gt.mask, gt.value, gt.ints, i,
                          (wp.int64(i) + tick[0]) % wp.int64(every) == wp.int64(0))


@wp.func
def scoring_due_at(
    alive: wp.array(dtype=wp.bool), goal: wp.array(dtype=wp.int32), states: wp.array2d(dtype=wp.uint64),
    mask: wp.array2d(dtype=wp.uint64), value: wp.array2d(dtype=wp.uint64), ints: CondList, i: int, staggered: bool,
) -> bool:
    """`scoring_due` with the stagger test done by the caller (``staggered``: agent i's turn this tick), for a loop
    over consecutive agents that keeps ``i % every`` as a counter; it takes the arrays it reads, not the structs
    (a Warp function's arguments are copied at each call the CPU compiler does not inline away)."""
    if not alive[i]:
        return False
    g = goal[i]
    if g < 0 or staggered:
        return True
    return goal_satisfied(states, i, mask, value, ints, g)


@wp.kernel
def select_due(
    agents: Agents, tick: wp.array(dtype=wp.int64), gt: GoalTables, every: int, flag: wp.array(dtype=wp.int32),
):
    """The agents a row scorer scores this tick (flag 1; `scoring_due`)."""
    i = wp.tid()
    flag[i] = 0
    if scoring_due(agents, tick, gt, every, i):
        flag[i] = 1


@wp.kernel
def scatter_scores(rows: wp.array(dtype=wp.int32), mult: wp.array2d(dtype=wp.float32),
                   add: wp.array2d(dtype=wp.float32), affine: int, dst_mult: wp.array2d(dtype=wp.float32),
                   dst_add: wp.array2d(dtype=wp.float32)):
    """Row t of a row scorer's output into row ``rows[t]`` of the brain's score buffers: its factor and term
    (``affine``), or its plain scores (``add``; the factor is then 0)."""
    t, g = wp.tid()
    i = rows[t]
    if affine != 0:
        dst_mult[i, g] = mult[t, g]
    else:
        dst_mult[i, g] = 0.0
    dst_add[i, g] = add[t, g]


@wp.kernel
def count_alive(agents: Agents, out: wp.array(dtype=wp.int32)):
    if agents.alive[wp.tid()]:
        wp.atomic_add(out, 0, 1)


@wp.kernel
def first_alive(agents: Agents, rows: wp.array(dtype=wp.int32), out: wp.array(dtype=wp.int32)):
    """The lowest listed row that is alive (for spawn's check), into ``out[0]`` (left as it was when none)."""
    i = row_of(rows, wp.tid(), agents.alive.shape[0])
    if i >= 0:
        if agents.alive[i]:
            wp.atomic_min(out, 0, i)


@wp.kernel
def due_rows(tick: wp.array(dtype=wp.int64), every: int, n: int, rows: wp.array(dtype=wp.int32)):
    """The agents a sensor of cadence ``every`` senses this tick: agent i on the ticks where tick % every equals
    i % every (so each tick senses 1/every of them, staggered by index); -1 pads the list."""
    j = wp.tid()
    phase = int(tick[0] % wp.int64(every))
    i = j * every + phase
    if i < n:
        rows[j] = i
    else:
        rows[j] = -1


@wp.kernel
def check_types(agents: Agents, n_types: int, first_bad: wp.array(dtype=wp.int32), first: int, chunk: int):
    """The lowest agent whose type is out of range (``agent_type`` is written by the game too)."""
    i = wp.tid() + first
    t = agents.agent_type[i]
    if t < 0 or t >= n_types:
        wp.atomic_min(first_bad, chunk, i)


@wp.kernel
def goal_holds(agents: Agents, gt: GoalTables, out: wp.array(dtype=wp.bool)):
    i = wp.tid()
    g = agents.goal[i]
    out[i] = g >= 0 and goal_satisfied(agents.states, i, gt.mask, gt.value, gt.ints, g)


@wp.kernel
def copy_scores(src: wp.array2d(dtype=wp.float32), dst_mult: wp.array2d(dtype=wp.float32),
                dst_add: wp.array2d(dtype=wp.float32)):
    """A whole scorer's plain scores into the score buffers (factor 0, term the score)."""
    i, g = wp.tid()
    dst_mult[i, g] = 0.0
    dst_add[i, g] = src[i, g]

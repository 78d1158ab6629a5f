"""Reductions over the agents for the debugging tools: idle agents by reason and by goal, failed searches by goal,
and one agent's place in the plan queue.

None of these is a step of the brain's tick: ``goap run`` and the viewer launch `count_idle` after a tick, and
`queue_position` runs when an explanation asks for it. Each writes into its own small arrays on the device; only
those (a few ints) are read back. Reasons are the codes of `goap.codes.IDLE_REASONS`.

An agent counts as idle in a tick exactly when the brain's ``idle`` counter counts it: alive, and no action ran
for it (its ``action`` is -1 after the tick and it neither finished nor failed one). Its reason is read from its
rows after the tick: a goal and a pending request is *waiting*; a goal without one is *satisfied* (its goal held
when it was planned); no goal while a goal cools down after a failed search is *failed*; otherwise *no_goal*.
"""

from __future__ import annotations

from typing import Any

import warp as wp

from goap.codes import IDLE_REASONS
from goap.kernels.agents import Agents
from goap.kernels.codes import EV_ACTION_FAILED, EV_ACTION_FINISHED, EV_PLAN_FAILED

wp.set_module_options({"enable_backward": False})

R_NO_GOAL = wp.constant(IDLE_REASONS.index("no_goal"))
R_WAITING = wp.constant(IDLE_REASONS.index("waiting"))
R_FAILED = wp.constant(IDLE_REASONS.index("failed"))
R_SATISFIED = wp.constant(IDLE_REASONS.index("satisfied"))


@wp.kernel
def count_idle(
    agents: Agents,
    tick: wp.array(dtype=wp.int64),
    cooldown_ticks: int,
    reasons: wp.array(dtype=wp.int8),
    idle_counts: wp.array2d(dtype=wp.int64),
    failed_counts: wp.array2d(dtype=wp.int64),
    alive_ticks: wp.array(dtype=wp.int64),
    failed_actions: wp.array2d(dtype=wp.int64),
):
    """After a tick (``tick[0]`` already advanced): each agent's idle reason in ``reasons`` (-1: acted or dead),
    ``idle_counts[reason, goal + 1]`` += 1 for the idle ones (column 0: no goal), and
    ``failed_counts[goal, status]`` += 1 for the searches that failed this tick (the goal: the one whose
    cooldown started this tick); ``alive_ticks[0]`` += 1 per alive agent; ``failed_actions[action, reason]`` += 1
    for each action that FAILED this tick (the world's ``fail_reason``; codes past the table count as 0). Launched
    as one launch: the atomics of one CPU thread never race."""
    i = wp.tid()
    reasons[i] = wp.int8(-1)
    if not agents.alive[i]:
        return
    wp.atomic_add(alive_ticks, 0, wp.int64(1))
    bits = agents.event_bits[i]
    now = tick[0]
    started = now - wp.int64(1) + wp.int64(cooldown_ticks)  # the cooldown a search failed this tick set
    n_goals = agents.cooldown_until.shape[1]
    if (bits & EV_PLAN_FAILED) != wp.uint32(0):
        st = int(agents.last_failure[i])
        for g in range(n_goals):
            if agents.cooldown_until[i, g] == started and st >= 0 and st < failed_counts.shape[1]:
                wp.atomic_add(failed_counts, g, st, wp.int64(1))
    if (bits & EV_ACTION_FAILED) != wp.uint32(0):
        st = agents.step[i]
        if st >= 0 and st < agents.plan_length[i]:
            why = agents.fail_reason[i]
            if why < 0 or why >= failed_actions.shape[1]:
                why = 0
            wp.atomic_add(failed_actions, agents.plan[i, st], why, wp.int64(1))
    if agents.action[i] >= 0 or (bits & (EV_ACTION_FINISHED | EV_ACTION_FAILED)) != wp.uint32(0):
        return
    g = agents.goal[i]
    r = int(R_NO_GOAL)
    col = int(0)
    if g >= 0:
        col = g + 1
        r = R_SATISFIED
        if agents.needs_plan[i]:
            r = R_WAITING
    else:
        latest = now
        for k in range(n_goals):
            if agents.cooldown_until[i, k] > latest:
                latest = agents.cooldown_until[i, k]
                col = k + 1
                r = R_FAILED
    reasons[i] = wp.int8(r)
    wp.atomic_add(idle_counts, r, col, wp.int64(1))


@wp.kernel
def count_ahead(agents: Agents, me: int, out: wp.array(dtype=wp.int32)):
    """``out[0]`` += 1 for each waiting agent the plan queue orders before agent ``me``: longer waiting first, then
    higher priority of the goal, then lower index (the order `goap.runtime.pipeline` sorts the queue in)."""
    j = wp.tid()
    if j == me or not agents.alive[j] or not agents.needs_plan[j] or agents.goal[j] < 0:
        return
    wj = agents.waiting[j]
    wi = agents.waiting[me]
    pj = agents.priorities[j, agents.goal[j]]
    pi = agents.priorities[me, agents.goal[me]]
    if pj != pj:
        pj = -wp.inf
    if pi != pi:
        pi = -wp.inf
    if wj > wi or (wj == wi and (pj > pi or (pj == pi and j < me))):
        wp.atomic_add(out, 0, 1)


def queue_position(brain: Any, i: int) -> int:
    """How many waiting agents the next tick's plan queue puts before agent ``i`` (0: first). One device pass over
    the agents' waiting, goal and priority rows, one int read back."""
    out = wp.zeros(1, dtype=wp.int32, device=brain.device)
    brain.launcher.launch(count_ahead, brain.n_agents, [brain.agents, int(i), out], record=False)
    return int(out.numpy()[0])

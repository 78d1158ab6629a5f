"""The village's act kernels: start or drop actions, reserve sites, walk and work, regrow stock, keep the clock.

One tick of act is, in order: `act_clock` (the tick's regrowth seed and the field kind rebuilt, from the world's
clock: a device array, so a captured graph replays correctly on every tick); `begin_kernel`; ``CLAIM_ROUNDS``
rounds of `bid_kernel`, `settle_kernel`, `clear_bids_kernel`; `advance_kernel`; `regrow_kernel`; the field
rebuild (`worlds.village.fields`). Contested sites go to the lowest agent id (``wp.atomic_min``
on ``bid``), so the result does not depend on thread order. These kernels write other rows than their own (sites,
tallies) or use atomics: each is one launch over all agents.
"""

# Warp kernels declare dynamic variables as int(0) / float(0.0); UP018 would turn them into constants.
# ruff: noqa: UP018

from __future__ import annotations

import warp as wp

from goap.kernels.agents import Agents
from goap.kernels.codes import DONE, FAILED, RUNNING
from goap.world import fail_reason_code
from worlds.village.geometry import (
    C_BIG,
    C_MAX_SEARCH,
    C_MAX_WAIT,
    C_SEARCH,
    C_WALK_RINGS,
    C_WORK_RADIUS,
    C_WORK_RINGS,
    K_HOUSE,
    T_NO_SITE,
    T_TAKEN,
    T_WAITED,
    Acts,
    Grid,
    Villagers,
    cell_of,
    jitter,
    nearest_free,
    release,
    tick_seed,
)

wp.set_module_options({"enable_backward": False})

# Why an action failed (``agents.fail_reason``), codes of the shared table `goap.world.FAIL_REASONS`.
R_SITE_TAKEN = wp.constant(fail_reason_code("site_taken"))
R_NO_FREE_SITE = wp.constant(fail_reason_code("no_free_site"))


@wp.kernel
def act_clock(
    clock: wp.array(dtype=wp.int64),
    seed: int,
    schedule: wp.array(dtype=wp.int32),
    every: int,
    regrow_seed: wp.array(dtype=wp.int32),
    field_kind: wp.array(dtype=wp.int32),
):
    """The tick's values for act (one thread): the regrowth seed; the kind whose field is rebuilt (-1: none). The
    world's clock moves on to the next tick (nothing else in act reads it).

    A field is rebuilt every ``every`` ticks, the kinds in ``schedule`` order.
    """
    tick = clock[0]
    clock[0] = tick + wp.int64(1)
    regrow_seed[0] = tick_seed(seed, tick, 2)
    e = wp.int64(every)
    field_kind[0] = -1
    if tick % e == wp.int64(0):
        field_kind[0] = schedule[wp.int32((tick / e) % wp.int64(schedule.shape[0]))]


@wp.kernel
def begin_kernel(agents: Agents, g: Grid, ac: Acts, v: Villagers):
    """Start, continue or drop each agent's action; say which site kind it still has to reserve (``want``)."""
    i = wp.tid()
    v.want[i] = -1
    v.found_any[i] = 1
    a = agents.action[i]
    if a < 0 or not agents.alive[i]:
        release(g, v, i)
        v.cur_action[i] = -1
        v.target[i] = -1
        v.progress[i] = 0
        v.waited[i] = 0
        v.searched[i] = 0
        return
    # The site kind this action needs and whether it reserves one: a walk takes its kind (and its reservation)
    # from the next step of the plan when that step works at the place walked to.
    mp = ac.move_place[a]
    k = ac.kind[a]
    reserve = ac.claims[a] != 0
    if mp >= 0:
        k = ac.place_kind[mp]
        reserve = False
        nxt = int(-1)
        step = agents.step[i]
        if step + 1 < agents.plan_length[i]:
            nxt = agents.plan[i, step + 1]
        if nxt >= 0:
            nk = ac.kind[nxt]
            if nk >= 0 and ac.place_of_kind[nk] == mp:
                k = nk
                reserve = ac.claims[nxt] != 0 and ac.stocked[nxt] != 0  # plots and anvils: on arrival
    fresh = a != v.cur_action[i] or agents.action_ticks[i] == 0
    if fresh:
        v.cur_action[i] = a
        v.progress[i] = 0
        v.waited[i] = 0
        v.searched[i] = 0
        s = v.claim[i]
        if s >= 0 and (not reserve or g.site_kind[s] != k or not (g.site_max[s] == 0 or g.site_stock[s] > 0)):
            release(g, v, i)
        if v.claim[i] >= 0:
            v.target[i] = v.claim[i]
        elif reserve:
            v.target[i] = -1
        elif k == K_HOUSE:
            v.target[i] = v.home[i]
        elif k >= 0:  # the nearest available site (a free anvil, say), else the nearest one
            c = cell_of(g, v.positions[i])
            v.target[i] = g.field[k, c]
            if v.target[i] < 0:
                v.target[i] = g.nearest[k, c]
        else:
            v.target[i] = -1
    if reserve and v.claim[i] < 0:
        v.want[i] = k


@wp.kernel
def bid_kernel(g: Grid, ac: Acts, v: Villagers, bid: wp.array(dtype=wp.int32)):
    """Each agent still wanting a site bids for the nearest free one; the lowest agent id wins it.

    A work action looks within ``WORK_RADIUS``; a walk looks around itself, then around the nearest available
    site the field knows of, wherever that is. ``found_any`` = 0 says no site of the kind is available at all.
    An agent that wants a site carries out ``cur_action`` (`begin_kernel` set it to the brain's action).
    """
    i = wp.tid()
    v.choice[i] = -1
    k = v.want[i]
    if k < 0:
        return
    p = v.positions[i]
    here = cell_of(g, p)
    best = int(-1)
    if ac.move_place[v.cur_action[i]] >= 0:
        s0 = g.field[k, here]
        if s0 < 0:
            v.found_any[i] = 0
            return
        best = nearest_free(g, k, here, p, C_WALK_RINGS, i)
        if best < 0:
            best = nearest_free(g, k, cell_of(g, g.site_pos[s0]), p, C_SEARCH, i)
        if best < 0:
            v.target[i] = s0  # head that way meanwhile, and look again on the way
    else:
        best = nearest_free(g, k, here, p, C_WORK_RINGS, i)
        if best >= 0 and wp.length(g.site_pos[best] - p) > C_WORK_RADIUS:
            best = -1
        if best < 0:  # all taken around here: head for the nearest available one if it is still at this place
            s0 = g.field[k, here]
            if s0 >= 0 and wp.length(g.site_pos[s0] - p) <= 2.0 * C_WORK_RADIUS:
                v.target[i] = s0
    if best >= 0:
        v.choice[i] = best
        wp.atomic_min(bid, best, i)
    else:
        v.want[i] = -2 - k  # nothing free in sight: no more rounds this tick (nothing frees up within a tick)


@wp.kernel
def settle_kernel(g: Grid, v: Villagers, bid: wp.array(dtype=wp.int32)):
    """The winner of each contested site (the lowest bidder) reserves it."""
    i = wp.tid()
    s = v.choice[i]
    if s >= 0 and bid[s] == i:
        g.site_owner[s] = i
        v.claim[i] = s
        v.target[i] = s
        v.want[i] = -1


@wp.kernel
def clear_bids_kernel(v: Villagers, bid: wp.array(dtype=wp.int32)):
    i = wp.tid()
    s = v.choice[i]
    if s >= 0:
        bid[s] = C_BIG
        v.choice[i] = -1


@wp.kernel
def advance_kernel(
    agents: Agents, g: Grid, ac: Acts, v: Villagers, tallies: wp.array(dtype=wp.int64), step_len: float,
):
    """Walk toward the target and work there; report RUNNING, DONE or FAILED."""
    i = wp.tid()
    a = agents.action[i]
    if a < 0:
        return
    if v.want[i] != -1:  # no site reserved yet (-2 - kind: none was free in sight): wait a few ticks, then give up
        s = v.target[i]
        if s >= 0 and v.claim[i] < 0 and v.found_any[i] != 0 and v.searched[i] < C_MAX_SEARCH:
            # head for the nearest available site meanwhile (looking again each tick); wait only once there
            p = v.positions[i]
            delta = g.site_pos[s] - p
            d = wp.length(delta)
            if d > step_len:
                v.positions[i] = p + delta * (step_len / d)
                v.searched[i] = v.searched[i] + 1
                agents.action_status[i] = wp.int8(RUNNING)
                return
        v.waited[i] = v.waited[i] + 1
        if v.waited[i] > C_MAX_WAIT or v.found_any[i] == 0:
            agents.action_status[i] = wp.int8(FAILED)
            agents.fail_reason[i] = R_NO_FREE_SITE
            if v.found_any[i] != 0:
                agents.fail_reason[i] = R_SITE_TAKEN  # there are sites of the kind: others hold them all
            wp.atomic_add(tallies, T_NO_SITE, wp.int64(1))
        else:
            agents.action_status[i] = wp.int8(RUNNING)
            wp.atomic_add(tallies, T_WAITED, wp.int64(1))
        return
    walk = ac.move_place[a] >= 0
    s = v.target[i]
    arrived = True
    if s >= 0:
        goal_p = g.site_pos[s]
        if v.claim[i] != s:
            goal_p = goal_p + jitter(i)
        p = v.positions[i]
        delta = goal_p - p
        d = wp.length(delta)
        if d <= step_len:
            v.positions[i] = goal_p
        else:
            v.positions[i] = p + delta * (step_len / d)
            arrived = False
    elif ac.kind[a] >= 0 or walk:  # a site was needed and none exists
        agents.action_status[i] = wp.int8(FAILED)
        agents.fail_reason[i] = R_NO_FREE_SITE
        wp.atomic_add(tallies, T_NO_SITE, wp.int64(1))
        return
    done = False
    if walk:
        done = arrived
    elif arrived:
        v.progress[i] = v.progress[i] + 1
        done = v.progress[i] >= ac.work_ticks[a]
    if done:
        agents.action_status[i] = wp.int8(DONE)
        if ac.stocked[a] != 0 and s >= 0:
            g.site_stock[s] = wp.max(g.site_stock[s] - 1, 0)
        if ac.tally[a] >= 0:
            wp.atomic_add(tallies, ac.tally[a], wp.int64(ac.tally_amount[a]))
        wp.atomic_add(tallies, T_TAKEN, wp.int64(1))
    else:
        agents.action_status[i] = wp.int8(RUNNING)


@wp.kernel
def regrow_kernel(g: Grid, regrow_p: wp.array(dtype=wp.float32), regrow_seed: wp.array(dtype=wp.int32)):
    """Stock regrows by one with a per-kind chance per site and tick (``REGROW_P``), up to the site's maximum."""
    s = wp.tid()
    m = g.site_max[s]
    if m > 0 and g.site_stock[s] < m:
        rng = wp.rand_init(regrow_seed[0], s)
        if wp.randf(rng) < regrow_p[g.site_kind[s]]:
            g.site_stock[s] = g.site_stock[s] + 1

"""The sense stage of the soldier world, in Warp kernels (one Warp module): respawns, control points, the target
grid, and `sense_soldiers`, which writes every fact, cost, enabled action and goal priority of every soldier.

A world kernel reads the brain's rows through the one ``agents: Agents`` argument (`goap.kernels.agents`):
``agents.states[i, w]``, ``agents.goal[i]``; a soldier that comes back goes through the engine's
`set_alive(agents, i, True)`, never through the brain's arrays one by one. The tick is read from the world's own
device clock (``clock[0]``), never passed as a launch scalar, so that the stage can be captured as a graph.
"""

# Warp kernels declare dynamic variables as int(0) / float(0.0) (as goap/kernels does): UP018 would break them.
# ruff: noqa: UP018
from __future__ import annotations

import warp as wp

from goap.kernels.agents import Agents, set_alive
from worlds.soldier.geometry import (
    N_CANDIDATES,
    bin_of,
    clamp_to_field,
    cover_wall,
    nearest_enemies,
    nearest_free_cover,
    nearest_objective,
    objective_pos,
    room_centre,
    sight_blocked,
    squad_of,
)
from worlds.soldier.layout import (
    A_ADVANCE,
    A_APPROACH,
    A_GO_ARMORY,
    A_GO_COVER,
    A_GO_MEDBAY,
    A_GRENADE,
    A_SHOOT,
    AT_ARMORY,
    AT_COVER,
    AT_MEDBAY,
    AT_OBJECTIVE,
    AT_OPEN,
    F_AMMO,
    F_AT,
    F_DRAWN,
    F_E_ALIVE,
    F_E_COVER,
    F_E_RANGE,
    F_E_SUPP,
    F_E_VIS,
    F_ESCAPED,
    F_GREN,
    F_HEALTH,
    F_IN_COVER,
    F_MAGS,
    F_MEDKIT,
    F_SECURED,
    F_UNDER_FIRE,
    G_COVER,
    G_ESCAPE,
    G_HOLD,
    G_KILL,
    G_READY,
    G_RESUPPLY,
    G_STAY,
    MAX_AMMO,
    MAX_HEALTH,
    NO_TICK,
    S_CAPTURES,
    S_POINTS0,
    S_RESPAWNS,
    Field,
    Troops,
)

wp.set_module_options({"enable_backward": False})


@wp.func
def respawn_kit(t: Troops, i: int):
    t.health[i] = MAX_HEALTH
    t.ammo[i] = MAX_AMMO
    t.magazines[i] = 2
    t.grenades[i] = 1
    t.medkit[i] = 0
    t.drawn[i] = 0
    t.in_cover[i] = 0
    t.slot[i] = -1
    t.slide[i] = 0
    t.last_shot[i] = NO_TICK
    t.suppressed_until[i] = NO_TICK
    t.respawn_at[i] = NO_TICK
    t.escaped_until[i] = NO_TICK
    t.secured_tick[i] = NO_TICK
    t.target[i] = -1
    t.visible[i] = 0
    t.confirm_tick[i] = NO_TICK


@wp.func
def spawn_point(f: Field, i: int, team: int, tick: int) -> wp.vec2:
    s = wp.rand_init(f.seed + 7919 * tick, i)
    lane = float((squad_of(f, i) / 2) % f.obj_rows)
    y = (lane + 0.5) * f.obj_dy + (wp.randf(s) - 0.5) * f.obj_dy
    x = 2.0 + 9.0 * wp.randf(s)
    if team == 1:
        x = f.width - x
    return clamp_to_field(f, wp.vec2(x, y))


# --- kernels: reset ------------------------------------------------------------------------------------------
@wp.kernel
def place_soldiers(f: Field, t: Troops, clock: wp.array(dtype=wp.int32), agents: Agents):
    """Reset: every soldier alive at its back line with a full kit (and the brain's row alive with a clear mind)."""
    i = wp.tid()
    team = squad_of(f, i) % 2
    t.team[i] = team
    t.alive[i] = 1
    respawn_kit(t, i)
    t.pos[i] = spawn_point(f, i, team, clock[0])
    set_alive(agents, i, True)


# --- kernels: sense --------------------------------------------------------------------------------------------
@wp.kernel
def respawn_soldiers(f: Field, t: Troops, clock: wp.array(dtype=wp.int32), stats: wp.array(dtype=wp.int64),
                     agents: Agents):
    """The dead whose wait is over come back at their back line with a full kit and a clear mind."""
    i = wp.tid()
    if t.alive[i] != 0 or t.respawn_at[i] > clock[0]:
        return
    respawn_kit(t, i)
    t.pos[i] = spawn_point(f, i, t.team[i], clock[0])
    t.alive[i] = 1
    set_alive(agents, i, True)
    wp.atomic_add(stats, S_RESPAWNS, wp.int64(1))


@wp.kernel
def grid_keys(f: Field, t: Troops, n: int):
    i = wp.tid()
    key = 2 * f.cells_x * f.cells_y
    if t.alive[i] != 0:
        p = t.pos[i]
        cx = wp.clamp(bin_of(p[0], f.cell, f.cells_x), 0, f.cells_x - 1)
        cy = wp.clamp(bin_of(p[1], f.cell, f.cells_y), 0, f.cells_y - 1)
        key = (t.team[i] * f.cells_y + cy) * f.cells_x + cx
    f.grid_keys[i] = key
    f.grid_ids[i] = i


@wp.kernel
def grid_ranges(f: Field, n: int):
    k = wp.tid()
    key = f.grid_keys[k]
    if key >= 2 * f.cells_x * f.cells_y:
        return
    if k == 0 or f.grid_keys[k - 1] != key:
        f.cell_start[key] = k
    if k == n - 1 or f.grid_keys[k + 1] != key:
        f.cell_end[key] = k + 1


@wp.kernel
def count_at_objectives(f: Field, t: Troops):
    i = wp.tid()
    if t.alive[i] == 0:
        return
    o = nearest_objective(f, t.pos[i])
    if wp.length(t.pos[i] - objective_pos(f, o)) <= f.objective_radius:
        wp.atomic_add(f.obj_count, 2 * o + t.team[i], 1)


@wp.kernel
def update_objectives(f: Field, stats: wp.array(dtype=wp.int64), clock: wp.array(dtype=wp.int32)):
    o = wp.tid()
    c0 = f.obj_count[2 * o]
    c1 = f.obj_count[2 * o + 1]
    f.obj_count[2 * o] = 0
    f.obj_count[2 * o + 1] = 0
    p = f.obj_progress[o]
    if c0 > c1:
        p = wp.min(p + 1, f.capture_ticks)
    elif c1 > c0:
        p = wp.max(p - 1, -f.capture_ticks)
    f.obj_progress[o] = p
    owner = f.obj_owner[o]
    if p >= f.capture_ticks and owner != 0:
        owner = 0
        wp.atomic_add(stats, S_CAPTURES, wp.int64(1))
    elif p <= -f.capture_ticks and owner != 1:
        owner = 1
        wp.atomic_add(stats, S_CAPTURES, wp.int64(1))
    elif (owner == 0 and p <= 0) or (owner == 1 and p >= 0):
        owner = -1
    if owner != f.obj_owner[o]:
        f.obj_since[o] = clock[0]
    f.obj_owner[o] = owner
    if owner >= 0:
        wp.atomic_add(stats, S_POINTS0 + owner, wp.int64(1))


@wp.kernel
def choose_squad_objectives(f: Field, clock: wp.array(dtype=wp.int32)):
    """A squad's objective: the first point of its row, from its own side, that its team has not held for
    ``hold_ticks`` (a squad that takes a point stays for a guard shift before it pushes on)."""
    s = wp.tid()
    team = s % 2
    row = (s / 2) % f.obj_rows
    best = int(-1)
    for k in range(f.obj_cols):
        col = k
        if team == 1:
            col = f.obj_cols - 1 - k
        o = row * f.obj_cols + col
        if best < 0 and (f.obj_owner[o] != team or clock[0] - f.obj_since[o] < f.hold_ticks):
            best = o
    if best < 0:  # the whole row is ours: hold its front point
        col = f.obj_cols - 1
        if team == 1:
            col = 0
        best = row * f.obj_cols + col
    f.squad_obj[s] = best


@wp.kernel
def roll_aim_counts(t: Troops):
    i = wp.tid()
    t.aimed_at[i] = t.aiming[i]
    t.aiming[i] = 0


@wp.kernel
def count_aims(t: Troops):
    """How many soldiers track each one (read at the next sense: fire spreads out)."""
    i = wp.tid()
    if t.alive[i] != 0 and t.target[i] >= 0:
        wp.atomic_add(t.aiming, t.target[i], 1)


@wp.kernel
def sense_soldiers(
    f: Field,
    t: Troops,
    clock: wp.array(dtype=wp.int32),
    fact_word: wp.array(dtype=wp.int32),
    fact_shift: wp.array(dtype=wp.int32),
    fact_mask: wp.array(dtype=wp.uint64),
    base_cost: wp.array(dtype=wp.float32),
    agents: Agents,
    first: int,
    chunk: int,
):
    """Everything a soldier senses, in one pass: its facts (``agents.states``), action costs and enabled actions,
    goal priorities. No atomics and no writes to another soldier's rows, so the launcher may run it in chunks of
    rows (``first`` is the chunk's first row) on several CPU threads at once."""
    i = wp.tid() + first
    now = clock[0]
    if t.alive[i] == 0:
        for g in range(agents.priorities.shape[1]):
            agents.priorities[i, g] = 0.0
        for a in range(agents.enabled.shape[1]):
            agents.enabled[i, a] = False
        return
    p = t.pos[i]
    team = t.team[i]
    # --- the target -----------------------------------------------------------------------------------
    prev = t.target[i]
    tgt = prev
    confirming = t.confirm_tick[i] == now
    if tgt >= 0 and t.alive[tgt] == 0:
        tgt = -1  # down: take the next one now (unless it is this soldier's own kill: see it first)
    my_wall = int(-1)
    if t.slot[i] >= 0:
        my_wall = f.slot_wall[t.slot[i]]
    crowded = tgt >= 0 and t.aimed_at[tgt] > 4
    # who looks for a target this tick: a soldier whose target just fell (handover) or who is being shot at, one
    # with none every third tick (a moment to react), one whose target hides or draws too much fire every 4th
    shot_at = now - t.last_shot[i] <= f.under_fire_ticks
    look = (tgt < 0 and (prev >= 0 or shot_at or (i + now) % 3 == 0)) or (
        (i + now) % 4 == 0 and tgt >= 0 and (t.visible[i] == 0 or crowded))
    if confirming:
        tgt = -1
    elif look:
        # a new target, or a better one for a soldier who lost sight of his: the first of the six best
        # candidates in sight (walls checked), else the best
        cands = nearest_enemies(f, t, i, 6.0, f.sight)
        pick = int(-1)
        for k in range(N_CANDIDATES):
            j = cands[k]
            if pick < 0 and j >= 0:
                if not sight_blocked(f, p, t.pos[j], my_wall, cover_wall(f, t, j)):
                    pick = j
        if pick < 0 and tgt < 0:
            pick = cands[0]
        if pick >= 0:
            tgt = pick
    if tgt >= 0 and wp.length(t.pos[tgt] - p) > 1.25 * f.sight:
        tgt = -1  # lost track
    t.target[i] = tgt
    visible = int(0)
    in_sight = int(0)
    tslot = int(-1)
    covered = int(0)
    in_range = int(0)
    suppressed = int(0)
    d = float(1.0e9)
    tp = p
    if tgt >= 0:
        tp = t.pos[tgt]
        d = wp.length(tp - p)
        their_wall = int(-1)
        ts = t.slot[tgt]
        if ts >= 0 and t.in_cover[tgt] != 0:
            tslot = ts
            their_wall = f.slot_wall[ts]
            if wp.dot(p - tp, f.slot_normal[ts]) < 0.0:
                covered = 1
        reach = f.sight
        if tgt == prev:
            reach = 1.25 * f.sight  # a target being tracked stays in view a little further out
        if d <= reach and not sight_blocked(f, p, tp, my_wall, their_wall):
            visible = 1
            in_sight = 1
            t.seen_tick[i] = now
        elif tgt == prev and now - t.seen_tick[i] <= 8 and d <= reach:
            visible = 1  # ducked behind a wall a moment ago: still known where it is (shots there miss)
        if d <= f.melee_range:
            in_range = 1
        if t.suppressed_until[tgt] > now:
            suppressed = 1
    t.tpos[i] = tp
    t.tdist[i] = d
    t.visible[i] = visible
    t.in_sight[i] = in_sight
    t.tslot[i] = tslot
    t.covered[i] = covered
    pinned = int(0)
    if t.suppressed_until[i] > now:
        pinned = 1
    t.pinned[i] = pinned
    # --- where the soldier is ---------------------------------------------------------------------------
    in_cover = t.in_cover[i]
    slot = t.slot[i]
    at = AT_OPEN
    med = room_centre(f, team, p[1], 1)
    arm = room_centre(f, team, p[1], 0)
    sq_obj = f.squad_obj[squad_of(f, i)]
    obj = objective_pos(f, sq_obj)
    d_med = wp.length(med - p)
    d_arm = wp.length(arm - p)
    d_obj = wp.length(obj - p)
    if slot >= 0 and wp.length(f.slot_pos[slot] - p) < 0.5:
        at = AT_COVER
    elif d_med <= f.site_radius:
        at = AT_MEDBAY
    elif d_arm <= f.site_radius:
        at = AT_ARMORY
    elif d_obj <= f.objective_radius:
        at = AT_OBJECTIVE
    t.at[i] = at
    shot_recently = now - t.last_shot[i] <= f.under_fire_ticks
    under_fire = int(0)
    if shot_recently and in_cover == 0:
        under_fire = 1
    t.under_fire[i] = under_fire
    escaped = int(0)
    if t.escaped_until[i] >= now:
        escaped = 1
    secured = int(0)
    if t.secured_tick[i] == now:
        secured = 1
    hp = t.health[i]
    ammo = t.ammo[i]
    mags = t.magazines[i]
    gren = t.grenades[i]
    # --- facts ------------------------------------------------------------------------------------------
    vals = wp.vector(length=16, dtype=wp.int32)
    vals[F_DRAWN] = t.drawn[i]
    vals[F_AMMO] = ammo
    vals[F_MAGS] = mags
    vals[F_GREN] = gren
    vals[F_HEALTH] = hp
    vals[F_MEDKIT] = t.medkit[i]
    vals[F_AT] = at
    vals[F_IN_COVER] = in_cover
    vals[F_UNDER_FIRE] = under_fire
    alive_enemy = int(0)
    if tgt >= 0:
        alive_enemy = 1
    vals[F_E_ALIVE] = alive_enemy
    vals[F_E_VIS] = visible
    vals[F_E_RANGE] = in_range
    vals[F_E_COVER] = covered
    vals[F_E_SUPP] = suppressed
    vals[F_ESCAPED] = escaped
    vals[F_SECURED] = secured
    # the world owns every fact: each word is composed in a register and written once
    for w in range(agents.states.shape[1]):
        word = wp.uint64(0)
        for k in range(fact_word.shape[0]):
            if fact_word[k] == w:
                word = word | ((wp.uint64(vals[k]) & fact_mask[k]) << wp.uint64(fact_shift[k]))
        agents.states[i, w] = word
    # --- costs and enabled actions ----------------------------------------------------------------------
    # free cover nearby matters in a fight; away from one, cover is assumed (a run that finds none fails)
    cover = wp.vec2(8.0, 0.0)
    if tgt >= 0 or shot_recently:
        cover = nearest_free_cover(f, t, i)
    has_cover = cover[1] >= 0.0 or slot >= 0
    for a in range(agents.enabled.shape[1]):
        agents.enabled[i, a] = True
        agents.costs[i, a] = base_cost[a]
    # distances enter the costs in whole steps, so that soldiers in the same situation ask the same question
    # (a planner that caches or deduplicates queries answers them once)
    agents.costs[i, A_GO_COVER] = base_cost[A_GO_COVER] + wp.floor(wp.min(cover[0], 30.0) / 8.0)
    agents.enabled[i, A_GO_COVER] = has_cover
    agents.costs[i, A_GO_ARMORY] = base_cost[A_GO_ARMORY] + wp.floor(d_arm / 20.0)
    agents.costs[i, A_GO_MEDBAY] = base_cost[A_GO_MEDBAY] + wp.floor(d_med / 20.0)
    agents.costs[i, A_ADVANCE] = base_cost[A_ADVANCE] + wp.floor(d_obj / 30.0)
    if tgt >= 0:
        agents.costs[i, A_APPROACH] = base_cost[A_APPROACH] + wp.floor(d / 2.0)
        agents.costs[i, A_SHOOT] = base_cost[A_SHOOT] + wp.floor(float(MAX_AMMO - ammo) * 0.34)
        agents.enabled[i, A_GRENADE] = d <= f.grenade_range
    # --- goal priorities --------------------------------------------------------------------------------
    # Emergencies (escape, cover) interrupt anything; a soldier finishes a reload, a supply run or a trip to
    # the medbay it has started before it turns to the next enemy (the current goal keeps a bonus).
    current = agents.goal[i]
    can_fight = ammo >= 1 or mags > 0 or gren > 0 or d <= 3.0 * f.melee_range
    p_escape = float(0.0)
    if hp <= 1 and (under_fire != 0 or (visible != 0 and d < 0.5 * f.sight) or current == G_ESCAPE):
        p_escape = 14.0
    p_stay = float(0.0)
    if hp <= 1:
        p_stay = 12.0
    elif hp == 2:
        p_stay = 8.0
        if current == G_STAY:
            p_stay = 10.5
    p_cover = float(0.0)
    if in_cover == 0 and has_cover:
        if under_fire != 0 or (current == G_COVER and now - t.last_shot[i] <= 4 * f.under_fire_ticks):
            p_cover = 11.0
    p_kill = float(0.0)
    if alive_enemy != 0 and can_fight:
        if visible != 0:
            p_kill = 10.0
        else:
            p_kill = 6.0
        if mags == 0 and ammo < 4 and gren == 0 and d > 3.0 * f.melee_range:
            # running dry: a firefight with the last bursts ends with an empty rifle (shoot FAILED, out of
            # ammo) more often than with a kill, so restocking (9) comes first unless the enemy is at arm's length
            p_kill = wp.min(p_kill, 8.0)
    p_ready = float(0.0)
    if ammo < 4 and mags > 0:
        p_ready = 5.0
        if current == G_READY:
            p_ready = 10.5
    p_resupply = float(0.0)
    if mags == 0 and ammo < 4:
        p_resupply = 9.0
    elif (mags < 2 or gren == 0) and alive_enemy == 0:
        p_resupply = 3.5  # restock in a lull rather than guard half empty
    if p_resupply > 0.0 and current == G_RESUPPLY:
        p_resupply = 10.5
    if confirming:  # the tick a soldier sees its own kill: it takes the next enemy next tick, nothing else now
        p_ready = 0.0
        p_resupply = 0.0
        if hp > 1:
            p_stay = 0.0
    agents.priorities[i, G_ESCAPE] = p_escape
    agents.priorities[i, G_STAY] = p_stay
    agents.priorities[i, G_COVER] = p_cover
    agents.priorities[i, G_KILL] = p_kill
    agents.priorities[i, G_READY] = p_ready
    agents.priorities[i, G_RESUPPLY] = p_resupply
    if confirming:
        agents.priorities[i, G_HOLD] = 0.0
    else:
        agents.priorities[i, G_HOLD] = 3.0

"""The act stage of the soldier world, in Warp kernels (one Warp module): cover bids, every action's rules
(`act_soldiers`), wounds and deaths (`settle_damage`), kills (`settle_attacks`), and the world's clock.

The kernels read and write the brain's rows through ``agents: Agents`` (`goap.kernels.agents`): ``agents.action[i]``,
``agents.action_ticks[i]``, ``agents.action_status[i]``; a soldier that dies goes through the engine's
`set_alive(agents, i, False)`. Damage is summed with atomics and lands after everyone acted, and a soldier reads
another only through what sense copied, so a run is the same on any number of threads and on a GPU.
"""

# Warp kernels declare dynamic variables as int(0) / float(0.0) (as goap/kernels does): UP018 would break them.
# ruff: noqa: UP018
from __future__ import annotations

import warp as wp

from goap.kernels.agents import Agents, set_alive
from goap.kernels.codes import DONE, FAILED, RUNNING
from goap.world import fail_reason_code
from worlds.soldier.geometry import (
    back_x,
    bin_of,
    enemy_within,
    free_spot,
    free_wall_around,
    hash01,
    move_toward,
    objective_pos,
    own_spot,
    room_centre,
    sight_blocked,
    squad_of,
)
from worlds.soldier.layout import (
    A_ADVANCE,
    A_AMMO,
    A_APPROACH,
    A_DRAW,
    A_FLANK,
    A_FLEE,
    A_GO_ARMORY,
    A_GO_COVER,
    A_GO_MEDBAY,
    A_GRENADE,
    A_GRENADES,
    A_GUARD,
    A_HEAL,
    A_HOLSTER,
    A_LEAVE_COVER,
    A_MEDKIT,
    A_MELEE,
    A_RELOAD,
    A_SEARCH,
    A_SHOOT,
    A_SUPPRESS,
    A_TAKE_COVER,
    AT_ARMORY,
    AT_MEDBAY,
    AT_OBJECTIVE,
    BIG,
    MAX_AMMO,
    MAX_GREN,
    MAX_HEALTH,
    MAX_MAGS,
    S_DEATHS,
    S_FLANKS,
    S_FLIGHTS,
    S_GREN,
    S_HEALS,
    S_HITS,
    S_KILLS0,
    S_MELEE,
    S_SHOTS,
    S_SUPP,
    Field,
    Troops,
)

wp.set_module_options({"enable_backward": False})

# Why an action failed (``agents.fail_reason``), codes of the shared table `goap.world.FAIL_REASONS`.
R_TARGET_LOST = wp.constant(fail_reason_code("target_lost"))
R_TARGET_IN_COVER = wp.constant(fail_reason_code("target_in_cover"))
R_OUT_OF_AMMO = wp.constant(fail_reason_code("out_of_ammo"))
R_OUT_OF_RANGE = wp.constant(fail_reason_code("out_of_range"))
R_NO_FREE_SITE = wp.constant(fail_reason_code("no_free_site"))
R_TIMED_OUT = wp.constant(fail_reason_code("timed_out"))
R_NOT_AT_SITE = wp.constant(fail_reason_code("not_at_site"))
R_NOT_READY = wp.constant(fail_reason_code("not_ready"))
R_DEAD = wp.constant(fail_reason_code("dead"))


@wp.func
def release_slot(f: Field, t: Troops, i: int):
    s = t.slot[i]
    if s >= 0:
        f.slot_owner[s] = -1
        wp.atomic_add(f.wall_free, f.slot_wall[s], 1)
        t.slot[i] = -1
    t.in_cover[i] = 0


# --- kernels: act ----------------------------------------------------------------------------------------------
@wp.kernel
def claim_cover(f: Field, t: Troops, agents: Agents):
    """Soldiers running to cover without a slot pick the best free one nearby and bid for it (lowest id wins)."""
    i = wp.tid()
    t.cand[i] = -1
    t.killer[i] = BIG
    if t.alive[i] == 0 or agents.action[i] != A_GO_COVER or t.slot[i] >= 0:
        return
    p = t.pos[i]
    tx = bin_of(p[0], f.tile, f.tiles_x)
    ty = bin_of(p[1], f.tile, f.tiles_y)
    has_threat = t.target[i] >= 0
    threat = t.tpos[i]
    best = int(-1)
    best_score = float(1.0e9)
    for k in range(9):
        w = free_wall_around(f, tx, ty, k)
        if w < 0:
            continue
        for s in range(f.wall_slots[w], f.wall_slots[w + 1]):
            if f.slot_owner[s] >= 0:
                continue
            sp = f.slot_pos[s]
            score = wp.length(sp - p)
            if has_threat and wp.dot(threat - sp, f.slot_normal[s]) >= 0.0:
                score += 8.0  # this side of the wall faces the threat: poor cover
            if score < best_score:
                best_score = score
                best = s
    if best >= 0:
        t.cand[i] = best
        wp.atomic_min(f.slot_claim, best, i)


@wp.kernel
def award_cover(f: Field, t: Troops):
    i = wp.tid()
    s = t.cand[i]
    if s >= 0 and f.slot_claim[s] == i:
        f.slot_owner[s] = i
        t.slot[i] = s
        wp.atomic_sub(f.wall_free, f.slot_wall[s], 1)


@wp.func
def shot_blocked(t: Troops, i: int, tgt: int) -> int:
    """Why a shot cannot be fired at ``tgt`` now: the reason code (0: nothing stops it)."""
    if tgt < 0 or t.visible[i] == 0:
        return R_TARGET_LOST
    if t.covered[i] != 0:
        return R_TARGET_IN_COVER
    if t.drawn[i] == 0:
        return R_NOT_READY
    return 0


@wp.kernel
def act_soldiers(f: Field, t: Troops, clock: wp.array(dtype=wp.int32), stats: wp.array(dtype=wp.int64),
                 agents: Agents):
    """Every soldier's action for one tick (``agents.action``, ``agents.action_ticks``): its rules, and RUNNING,
    DONE or FAILED in ``agents.action_status``. Shots and blasts only add to the targets' scratch (atomics)."""
    i = wp.tid()
    c = t.cand[i]
    if c >= 0:
        f.slot_claim[c] = BIG  # every bid was read by award_cover
    a = agents.action[i]
    if a < 0:
        return
    if t.alive[i] == 0:
        agents.action_status[i] = wp.int8(FAILED)
        agents.fail_reason[i] = R_DEAD
        return
    now = clock[0]
    ticks = agents.action_ticks[i]
    team = t.team[i]
    p = t.pos[i]
    tgt = t.target[i]
    rng = wp.rand_init(f.seed + 7919 * now, i)
    status = RUNNING
    reason = int(0)  # goap.world.FAIL_REASONS: why, when status becomes FAILED
    # a slot is held only while going to it, crouching at it or crouched (and any other move leaves it)
    moving = (a == A_APPROACH or a == A_SEARCH or a == A_FLANK or a == A_GO_ARMORY or a == A_GO_MEDBAY
              or a == A_FLEE or a == A_ADVANCE)
    if t.slot[i] >= 0 and a != A_GO_COVER and a != A_TAKE_COVER and (t.in_cover[i] == 0 or moving):
        release_slot(f, t, i)
    if a == A_GO_COVER:
        t.in_cover[i] = 0
        s = t.slot[i]
        if s >= 0:
            if move_toward(f, t, i, f.slot_pos[s], f.speed):
                status = DONE
        elif c < 0:
            status = FAILED  # no free slot left near here
            reason = R_NO_FREE_SITE
        if status == RUNNING and ticks >= f.move_timeout:
            status = FAILED
            reason = R_TIMED_OUT
    elif a == A_TAKE_COVER:
        s = t.slot[i]
        if s >= 0 and wp.length(f.slot_pos[s] - p) < 0.5:
            t.in_cover[i] = 1
            status = DONE
        else:
            status = FAILED
            reason = R_NOT_AT_SITE
    elif a == A_LEAVE_COVER:
        release_slot(f, t, i)
        status = DONE
    elif a == A_DRAW:
        t.drawn[i] = 1
        status = DONE
    elif a == A_HOLSTER:
        t.drawn[i] = 0
        status = DONE
    elif a == A_RELOAD:
        if t.magazines[i] <= 0 or t.drawn[i] == 0:
            status = FAILED
            reason = R_NOT_READY
            if t.magazines[i] <= 0:
                reason = R_OUT_OF_AMMO
        elif ticks >= 1:
            t.ammo[i] = MAX_AMMO
            t.magazines[i] = t.magazines[i] - 1
            status = DONE
    elif a == A_SHOOT:
        if tgt < 0 or t.visible[i] == 0 or t.covered[i] != 0 or t.drawn[i] == 0:
            status = FAILED
            reason = shot_blocked(t, i, tgt)
        elif t.ammo[i] < 1:
            status = FAILED
            reason = R_OUT_OF_AMMO
        elif (now + i) % 2 == 0:  # a burst every other tick: aim, fire
            t.ammo[i] = t.ammo[i] - 1
            if t.ammo[i] == 0 and t.magazines[i] > 0:  # a fresh magazine mid-fight: part of shooting, no plan
                t.ammo[i] = MAX_AMMO
                t.magazines[i] = t.magazines[i] - 1
            hit_p = wp.clamp(0.55 - t.tdist[i] / 100.0, 0.15, 0.55)
            if t.pinned[i] != 0:
                hit_p *= 0.4
            if t.in_sight[i] == 0:
                hit_p = 0.0  # firing where it was
            wp.atomic_max(t.last_shot, tgt, now)
            wp.atomic_add(stats, S_SHOTS, wp.int64(1))
            if wp.randf(rng) < hit_p:
                wp.atomic_add(t.damage, tgt, 1)
                wp.atomic_add(stats, S_HITS, wp.int64(1))
                t.hit[i] = 1
                wp.atomic_min(t.killer, tgt, i)
            # DONE is decided after the damage lands (settle_attacks)
    elif a == A_SUPPRESS:
        if tgt < 0 or t.visible[i] == 0 or t.ammo[i] < 3 or t.drawn[i] == 0:
            status = FAILED
            reason = shot_blocked(t, i, tgt)
            if reason == 0:
                reason = R_OUT_OF_AMMO
        else:
            t.ammo[i] = t.ammo[i] - 3
            wp.atomic_max(t.suppressed_until, tgt, now + f.suppress_ticks)
            wp.atomic_max(t.last_shot, tgt, now)
            wp.atomic_add(stats, S_SUPP, wp.int64(1))
            status = DONE
    elif a == A_GRENADE:
        if tgt < 0 or t.visible[i] == 0 or t.grenades[i] < 1 or t.drawn[i] != 0 or t.tdist[i] > f.grenade_range:
            status = FAILED
            reason = R_TARGET_LOST
            if tgt >= 0 and t.visible[i] != 0:
                reason = R_OUT_OF_RANGE
                if t.grenades[i] < 1:
                    reason = R_OUT_OF_AMMO
                elif t.drawn[i] != 0:
                    reason = R_NOT_READY
        else:
            t.grenades[i] = t.grenades[i] - 1
            wp.atomic_max(t.last_shot, tgt, now)
            wp.atomic_max(t.flushed, tgt, 1)
            if wp.randf(rng) < 0.7:
                wp.atomic_add(t.damage, tgt, 2)
            wp.atomic_add(stats, S_GREN, wp.int64(1))
            status = DONE
    elif a == A_MELEE:
        if tgt < 0 or t.tdist[i] > f.melee_range or t.health[i] < 2:
            status = FAILED
            reason = R_TARGET_LOST
            if tgt >= 0:
                reason = R_OUT_OF_RANGE
                if t.health[i] < 2:
                    reason = R_NOT_READY
        else:
            wp.atomic_max(t.last_shot, tgt, now)
            if wp.randf(rng) < 0.7:
                wp.atomic_add(t.damage, tgt, 2)
                wp.atomic_add(stats, S_MELEE, wp.int64(1))
                t.hit[i] = 1
                wp.atomic_min(t.killer, tgt, i)
    elif a == A_APPROACH:
        if tgt < 0:
            status = FAILED
            reason = R_TARGET_LOST
        else:
            dest = t.tpos[i]
            dv = dest - p
            gap = wp.length(dv)
            if gap > 0.8 * f.melee_range:
                dest = dest - dv * (0.8 * f.melee_range / gap)
            move_toward(f, t, i, dest, f.speed)
            if wp.length(t.tpos[i] - t.pos[i]) <= f.melee_range:
                status = DONE
            elif ticks >= f.move_timeout:
                status = FAILED
                reason = R_TIMED_OUT
    elif a == A_SEARCH:
        if tgt < 0:
            status = FAILED
            reason = R_TARGET_LOST
        elif t.visible[i] != 0:
            status = DONE
        else:
            move_toward(f, t, i, t.tpos[i], f.speed)
            q = t.pos[i]
            tw = int(-1)
            if t.tslot[i] >= 0:
                tw = f.slot_wall[t.tslot[i]]
            if wp.length(t.tpos[i] - q) <= f.sight and not sight_blocked(f, q, t.tpos[i], -1, tw):
                status = DONE
            elif ticks >= f.move_timeout:
                status = FAILED
                reason = R_TIMED_OUT
    elif a == A_FLANK:
        ts = t.tslot[i]
        if tgt < 0 or ts < 0:
            status = DONE  # the target is out of its cover already: nothing left to flank
        else:
            nrm = f.slot_normal[ts]
            along = wp.vec2(-nrm[1], nrm[0])
            if wp.dot(p - t.tpos[i], along) < 0.0:
                along = -along
            goal_pt = t.tpos[i] + nrm * 9.0 + along * 4.0
            move_toward(f, t, i, goal_pt, f.speed)
            q = t.pos[i]
            if wp.dot(q - t.tpos[i], nrm) > 1.0 and not sight_blocked(f, q, t.tpos[i], -1, f.slot_wall[ts]):
                wp.atomic_add(stats, S_FLANKS, wp.int64(1))
                status = DONE
            elif ticks >= f.move_timeout:
                status = FAILED
                reason = R_TIMED_OUT
    elif a == A_GO_ARMORY or a == A_GO_MEDBAY:
        med = 0
        if a == A_GO_MEDBAY:
            med = 1
        centre = room_centre(f, team, p[1], med)
        arrived = move_toward(f, t, i, own_spot(i, centre, f.site_radius - 0.5), f.speed)
        if arrived or wp.length(t.pos[i] - centre) <= f.site_radius:
            status = DONE  # inside the room: what the next sense reports as ``at``
        elif ticks >= 2 * f.move_timeout:
            status = FAILED
            reason = R_TIMED_OUT
    elif a == A_AMMO:
        if t.at[i] == AT_ARMORY:
            t.magazines[i] = MAX_MAGS
            status = DONE
        else:
            status = FAILED
            reason = R_NOT_AT_SITE
    elif a == A_GRENADES:
        if t.at[i] == AT_ARMORY:
            t.grenades[i] = MAX_GREN
            status = DONE
        else:
            status = FAILED
            reason = R_NOT_AT_SITE
    elif a == A_MEDKIT:
        if t.at[i] == AT_MEDBAY:
            t.medkit[i] = 1
            status = DONE
        else:
            status = FAILED
            reason = R_NOT_AT_SITE
    elif a == A_HEAL:
        if t.medkit[i] == 0 or t.drawn[i] != 0:
            status = FAILED
            reason = R_NOT_READY
            if t.medkit[i] == 0:
                reason = R_OUT_OF_AMMO
        elif ticks >= 1:
            t.health[i] = wp.min(t.health[i] + 2, MAX_HEALTH)
            t.medkit[i] = 0
            wp.atomic_add(stats, S_HEALS, wp.int64(1))
            status = DONE
    elif a == A_FLEE:
        t.in_cover[i] = 0
        arrived = move_toward(f, t, i, wp.vec2(back_x(f, team), p[1]), 1.2 * f.speed)
        calm = t.under_fire[i] == 0 and t.visible[i] == 0
        if (ticks >= 2 and calm) or arrived:
            t.escaped_until[i] = now + 3
            wp.atomic_add(stats, S_FLIGHTS, wp.int64(1))
            status = DONE
        elif ticks >= 2 * f.move_timeout:
            status = FAILED
            reason = R_TIMED_OUT
    elif a == A_ADVANCE:
        o = f.squad_obj[squad_of(f, i)]
        if move_toward(f, t, i, free_spot(f, i, objective_pos(f, o), f.objective_radius - 1.0), f.speed):
            status = DONE
        elif ticks >= 3 * f.move_timeout:
            status = FAILED
            reason = R_TIMED_OUT
    elif a == A_GUARD:
        if t.at[i] != AT_OBJECTIVE:
            status = FAILED
            reason = R_NOT_AT_SITE
        elif ticks + 1 >= f.guard_ticks + int(8.0 * hash01(i, now - ticks)) or t.visible[i] != 0:
            # shifts vary by up to 8 ticks, so a squad that arrived together does not ask for plans together
            t.secured_tick[i] = now + 1  # the shift is over (or the guard spotted an enemy and reports it)
            status = DONE
    agents.action_status[i] = wp.int8(status)
    agents.fail_reason[i] = reason


@wp.kernel
def settle_damage(f: Field, t: Troops, clock: wp.array(dtype=wp.int32), stats: wp.array(dtype=wp.int64),
                  agents: Agents):
    """Wounds and grenade blasts land at once for everyone (so the order of the shooters does not matter)."""
    i = wp.tid()
    dmg = t.damage[i]
    flushed = t.flushed[i]
    t.damage[i] = 0
    t.flushed[i] = 0
    if t.alive[i] == 0:
        return
    if flushed != 0 and t.in_cover[i] != 0:
        release_slot(f, t, i)
    if dmg <= 0:
        return
    hp = t.health[i] - dmg
    if hp > 0:
        t.health[i] = hp
        return
    t.health[i] = 0
    t.alive[i] = 0
    release_slot(f, t, i)
    t.respawn_at[i] = clock[0] + f.respawn_ticks
    t.target[i] = -1
    wp.atomic_add(stats, S_DEATHS, wp.int64(1))
    wp.atomic_add(stats, S_KILLS0 + 1 - t.team[i], wp.int64(1))
    set_alive(agents, i, False)


@wp.kernel
def settle_attacks(f: Field, t: Troops, clock: wp.array(dtype=wp.int32), agents: Agents):
    """After every wound of the tick has landed. The soldier whose wound downed its target is DONE and sees its
    kill at the next sense (``enemy_alive`` false for that tick; then it takes the next enemy). One whose target
    fell to someone else keeps firing at the next enemy in sight (the next sense hands it over), and is DONE only
    when none is left. Shooting fails when the last magazine is spent."""
    i = wp.tid()
    a = agents.action[i]
    hit = t.hit[i]
    t.hit[i] = 0
    if t.alive[i] == 0 or (a != A_SHOOT and a != A_MELEE):
        return
    if agents.action_status[i] != wp.int8(RUNNING):
        return
    tgt = t.target[i]
    if tgt >= 0 and t.alive[tgt] == 0:
        if hit != 0 and t.killer[tgt] == i:  # of several who hit it this tick, the lowest id has the kill
            t.confirm_tick[i] = clock[0] + 1
            agents.action_status[i] = wp.int8(DONE)
        elif not enemy_within(f, t, i, f.sight + 3.0 * f.speed):
            # anyone who could walk into sight by the next sense keeps the soldier firing
            agents.action_status[i] = wp.int8(DONE)
    elif a == A_SHOOT and t.ammo[i] < 1:
        agents.action_status[i] = wp.int8(FAILED)
        agents.fail_reason[i] = R_OUT_OF_AMMO


@wp.kernel
def mark_shot_at(rows: wp.array(dtype=wp.int32), t: Troops, clock: wp.array(dtype=wp.int32)):
    t.last_shot[rows[wp.tid()]] = clock[0]


@wp.kernel
def advance_clock(clock: wp.array(dtype=wp.int32)):
    clock[0] = clock[0] + 1

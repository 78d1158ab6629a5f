"""SoldierWorld: two armies fight over a field of walls and control points, every rule a Warp kernel.

Every agent runs the soldier domain (``worlds/soldier/domain.toml``). The world keeps the physical truth in Warp
arrays on the brain's device (positions, health, ammo, magazines, grenades, medkit, rifle drawn, cover slot,
who shot whom when) and writes every fact of every agent each tick in one kernel (`sense_soldiers`); the actions
run in a handful of kernels (`act`). Host code only launches: it never loops over agents and never reads an
array back during a tick.

The field (all sizes in metres, a tick is about half a second):

* Team 0 lives on the left edge, team 1 on the right. Each team's back line holds medbays and armories, one
  every 20 m along it (medbays at y = 10, 50, 90, ..., armories at 30, 70, ...), so nobody walks far to one
  and no crowd forms at a single door. Soldiers spawn (and respawn after ``respawn_ticks``) at the back line.
* The middle of the field is cut into 10 m tiles; most tiles hold one wall (1.5 m thick, 4-7 m long, mostly
  across the line of fire). Walls never touch (each stays inside its tile with a margin), so a soldier who
  slides along a wall always gets round it: nobody is pinned against a wall. Walls block sight and movement.
* Cover slots line both long faces of every wall. A slot shields its holder from shooters on the wall's side
  only (the slot's ``normal`` points away from the wall): flanking is real. A soldier reserves a free slot
  before running to it: contested slots go to the lowest agent id (``atomic_min``), the others pick again.
* Control points sit in a grid over the middle of the field. Squads of ``squad_size`` soldiers (squads
  alternate teams) each have a row; a squad's objective is the first point of its row, from its own side, that
  its team has not held for ``hold_ticks``, so squads take a point, guard it, and push on. Presence captures a
  point over ``capture_ticks``; every held point scores a point per tick.

How the symbols map onto the field (all sensed each tick, so a plan's effects are what the world reports):

* ``enemy_*`` describe the tracked target: the best living enemy within ``sight`` (nearest, with fire spread
  over the enemy line; a grid of the enemy team sorted by cell), taken when the soldier has none or its target
  fell, re-chosen every 4 ticks when out of sight or crowded. Of those whose hits downed a target in one tick,
  the lowest id has the kill: it reads ``enemy_alive`` false for one tick (kill_enemy is achieved); the others
  are handed the next enemy at once. Visible: no wall on the segment between the two (the walls they crouch
  behind excepted: one sees over one's own cover), for 8 ticks after a target ducked away. ``enemy_in_cover``:
  the target holds a slot whose wall is between us. ``enemy_suppressed``: pinned for ``suppress_ticks``.
* ``at`` is ``cover`` on the soldier's own slot, ``medbay``/``armory`` inside one of its team's rooms,
  ``objective`` inside its squad's control point, else ``open_ground``.
* ``under_fire``: shot at during the last ``under_fire_ticks`` ticks while not in cover.
* ``escaped``: a flight ended out of sight and out of fire (for 3 ticks); ``area_secured``: a guard shift ended.

Actions run until the world can report their effects: ``shoot`` fires a burst every other tick until the target
is down, ``melee`` strikes until it is down, moves run until arrival, ``flank`` until the target's wall no longer
covers it, ``flee`` until nobody sees or shoots the soldier. Random numbers come from ``wp.rand_init(seed +
7919 tick, agent)``, contested slots and kills go to the lowest id, damage is summed with atomics and lands after
everyone acted, and ``act`` reads another soldier only through what ``sense`` copied: a run is the same on any
number of threads (and free of read-write races on a GPU).
"""

# Warp kernels declare dynamic variables as int(0) / float(0.0) (as goap/kernels does): UP018 would break them.
# ruff: noqa: UP018
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import warp as wp

from goap.domain_file import load_domain

if TYPE_CHECKING:
    from goap.runtime import Brain

wp.set_module_options({"enable_backward": False})

DOMAIN_PATH = Path(__file__).resolve().parent / "domain.toml"
_DOMAIN = load_domain(DOMAIN_PATH)
_ACTIONS = [a.name for a in _DOMAIN.actions]
_FACTS = [f.name for f in _DOMAIN.facts]
_GOALS = [g.name for g in _DOMAIN.goals]

STATS = ("kills_team0", "kills_team1", "points_team0", "points_team1", "shots_fired", "hits", "suppressions",
         "grenades_thrown", "flanks", "melee_hits", "heals", "deaths", "respawns", "captures", "flights")
_STAT = {s: i for i, s in enumerate(STATS)}


def _c(name: str, table: list[str]) -> Any:
    return wp.constant(table.index(name))


# action indices
A_DRAW, A_HOLSTER, A_RELOAD = _c("draw_weapon", _ACTIONS), _c("holster_weapon", _ACTIONS), _c("reload", _ACTIONS)
A_SHOOT, A_SUPPRESS, A_FLANK = _c("shoot", _ACTIONS), _c("suppressive_fire", _ACTIONS), _c("flank", _ACTIONS)
A_GRENADE, A_APPROACH, A_MELEE = _c("throw_grenade", _ACTIONS), _c("approach_enemy", _ACTIONS), _c("melee", _ACTIONS)
A_SEARCH, A_GO_COVER = _c("search_for_enemy", _ACTIONS), _c("go_to_cover", _ACTIONS)
A_TAKE_COVER, A_LEAVE_COVER = _c("take_cover", _ACTIONS), _c("leave_cover", _ACTIONS)
A_GO_ARMORY, A_AMMO, A_GRENADES = _c("go_to_armory", _ACTIONS), _c("pick_up_ammo", _ACTIONS), _c(
    "pick_up_grenades", _ACTIONS)
A_GO_MEDBAY, A_MEDKIT, A_HEAL = _c("go_to_medbay", _ACTIONS), _c("grab_medkit", _ACTIONS), _c("heal", _ACTIONS)
A_FLEE, A_ADVANCE, A_GUARD = _c("flee", _ACTIONS), _c("advance", _ACTIONS), _c("stand_guard", _ACTIONS)
N_ACTIONS = len(_ACTIONS)

# fact indices (rows of the layout table)
F_DRAWN, F_AMMO, F_MAGS, F_GREN = (_c(n, _FACTS) for n in ("weapon_drawn", "ammo", "magazines", "grenades"))
F_HEALTH, F_MEDKIT, F_AT, F_IN_COVER = (_c(n, _FACTS) for n in ("health", "has_medkit", "at", "in_cover"))
F_UNDER_FIRE, F_E_ALIVE, F_E_VIS = (_c(n, _FACTS) for n in ("under_fire", "enemy_alive", "enemy_visible"))
F_E_RANGE, F_E_COVER, F_E_SUPP = (_c(n, _FACTS) for n in ("enemy_in_range", "enemy_in_cover", "enemy_suppressed"))
F_ESCAPED, F_SECURED = _c("escaped", _FACTS), _c("area_secured", _FACTS)

# goal indices
G_ESCAPE, G_STAY, G_COVER = _c("escape", _GOALS), _c("stay_alive", _GOALS), _c("take_cover", _GOALS)
G_KILL, G_READY, G_RESUPPLY = _c("kill_enemy", _GOALS), _c("be_ready", _GOALS), _c("resupply", _GOALS)
G_HOLD = _c("hold_objective", _GOALS)

AT_OPEN, AT_COVER, AT_ARMORY, AT_MEDBAY, AT_OBJECTIVE = (wp.constant(k) for k in range(5))
RUNNING, DONE, FAILED = wp.constant(0), wp.constant(1), wp.constant(2)
S_KILLS0, S_POINTS0, S_SHOTS, S_HITS = (wp.constant(_STAT[s]) for s in (
    "kills_team0", "points_team0", "shots_fired", "hits"))
S_SUPP, S_GREN, S_FLANKS, S_MELEE, S_HEALS = (wp.constant(_STAT[s]) for s in (
    "suppressions", "grenades_thrown", "flanks", "melee_hits", "heals"))
S_DEATHS, S_RESPAWNS, S_CAPTURES, S_FLIGHTS = (wp.constant(_STAT[s]) for s in (
    "deaths", "respawns", "captures", "flights"))

MAX_AMMO, MAX_MAGS, MAX_GREN, MAX_HEALTH = wp.constant(8), wp.constant(3), wp.constant(2), wp.constant(4)
BIG = wp.constant(2**31 - 1)
NO_TICK = wp.constant(-(2**30))
WALL_PAD = wp.constant(0.3)  # a soldier's radius: walls are this much larger for movement
MAX_RINGS = wp.constant(8)  # grid rings searched for a target (sight / cell, capped)
MAX_PER_CELL = wp.constant(6)  # candidates looked at per grid cell (the first, by agent id)


@wp.struct
class Troops:
    """Per-soldier world arrays (N rows)."""

    pos: wp.array(dtype=wp.vec2)
    team: wp.array(dtype=wp.int32)
    alive: wp.array(dtype=wp.int32)
    health: wp.array(dtype=wp.int32)
    ammo: wp.array(dtype=wp.int32)
    magazines: wp.array(dtype=wp.int32)
    grenades: wp.array(dtype=wp.int32)
    medkit: wp.array(dtype=wp.int32)
    drawn: wp.array(dtype=wp.int32)
    in_cover: wp.array(dtype=wp.int32)
    slot: wp.array(dtype=wp.int32)  # reserved cover slot or -1
    slide: wp.array(dtype=wp.int32)  # wall-sliding direction (0 none, 1 +x, 2 -x, 3 +y, 4 -y)
    last_shot: wp.array(dtype=wp.int32)  # tick someone last shot at this soldier
    suppressed_until: wp.array(dtype=wp.int32)
    respawn_at: wp.array(dtype=wp.int32)
    escaped_until: wp.array(dtype=wp.int32)
    secured_tick: wp.array(dtype=wp.int32)
    target: wp.array(dtype=wp.int32)
    seen_tick: wp.array(dtype=wp.int32)  # last tick the target was in the open line of sight
    confirm_tick: wp.array(dtype=wp.int32)  # the tick this soldier sees its kill (enemy_alive false, once)
    hit: wp.array(dtype=wp.int32)  # wounded its target during this act (scratch)
    killer: wp.array(dtype=wp.int32)  # the lowest id that wounded this soldier during this act (scratch)
    aimed_at: wp.array(dtype=wp.int32)  # soldiers that tracked this one at the last sense (fire spreads out)
    aiming: wp.array(dtype=wp.int32)  # the same, being counted at this sense
    # written by sense, read by act the same tick (kept in snapshots: the next sense reads `visible`)
    tpos: wp.array(dtype=wp.vec2)
    tdist: wp.array(dtype=wp.float32)
    visible: wp.array(dtype=wp.int32)
    in_sight: wp.array(dtype=wp.int32)  # open line of sight to the target at this sense
    covered: wp.array(dtype=wp.int32)
    tslot: wp.array(dtype=wp.int32)  # the target's cover slot while it crouches there, else -1
    pinned: wp.array(dtype=wp.int32)  # this soldier is suppressed (its own shots go wide)
    under_fire: wp.array(dtype=wp.int32)
    at: wp.array(dtype=wp.int32)
    # scratch of one act (zero between ticks)
    cand: wp.array(dtype=wp.int32)
    damage: wp.array(dtype=wp.int32)
    flushed: wp.array(dtype=wp.int32)


@wp.struct
class Field:
    """The map: walls by tile, cover slots, control points, squads, the agents' grid, and the rules' numbers."""

    width: float
    height: float
    tile: float
    tiles_x: int
    tiles_y: int
    tile_wall: wp.array(dtype=wp.int32)
    walls: wp.array(dtype=wp.vec4)
    wall_slots: wp.array(dtype=wp.int32)  # [K + 1] slot ranges
    wall_free: wp.array(dtype=wp.int32)  # free slots per wall
    slot_pos: wp.array(dtype=wp.vec2)
    slot_normal: wp.array(dtype=wp.vec2)
    slot_wall: wp.array(dtype=wp.int32)
    slot_owner: wp.array(dtype=wp.int32)
    slot_claim: wp.array(dtype=wp.int32)
    obj_cols: int
    obj_rows: int
    obj_x0: float
    obj_dx: float
    obj_dy: float
    obj_owner: wp.array(dtype=wp.int32)  # -1 neutral, else the team
    obj_progress: wp.array(dtype=wp.int32)  # +capture_ticks: team 0 holds; -capture_ticks: team 1
    obj_since: wp.array(dtype=wp.int32)  # tick the owner last changed
    obj_count: wp.array(dtype=wp.int32)  # [2 * O] soldiers of each team inside
    squad_size: int
    squad_obj: wp.array(dtype=wp.int32)
    site_spacing: float  # between a medbay and the next armory along the back line
    n_medbays: int
    n_armories: int
    cell: float
    cells_x: int
    cells_y: int
    cell_start: wp.array(dtype=wp.int32)  # [2 * C] per team and cell
    cell_end: wp.array(dtype=wp.int32)
    grid_keys: wp.array(dtype=wp.int32)  # [2 N] radix-sort scratch
    grid_ids: wp.array(dtype=wp.int32)
    # rules
    speed: float
    sight: float
    melee_range: float
    grenade_range: float
    site_radius: float
    obj_radius: float
    under_fire_ticks: int
    respawn_ticks: int
    move_timeout: int
    guard_ticks: int
    suppress_ticks: int
    capture_ticks: int
    hold_ticks: int
    seed: int


# --- geometry --------------------------------------------------------------------------------------------------
@wp.func
def hash01(i: int, salt: int) -> float:
    """A fixed number in [0, 1) per agent and salt (a soldier's own spot in a room, its sliding side)."""
    s = wp.rand_init(salt, i)
    return wp.randf(s)


@wp.func
def wall_at(f: Field, p: wp.vec2, pad: float) -> int:
    """The wall whose box (grown by ``pad``) contains p, or -1. Walls stay inside their tile: one lookup."""
    tx = int(wp.floor(p[0] / f.tile))
    ty = int(wp.floor(p[1] / f.tile))
    if tx < 0 or ty < 0 or tx >= f.tiles_x or ty >= f.tiles_y:
        return -1
    w = f.tile_wall[ty * f.tiles_x + tx]
    if w < 0:
        return -1
    b = f.walls[w]
    if p[0] > b[0] - pad and p[0] < b[2] + pad and p[1] > b[1] - pad and p[1] < b[3] + pad:
        return w
    return -1


@wp.func
def segment_hits_box(p: wp.vec2, d: wp.vec2, b: wp.vec4) -> bool:
    """Whether p + t d, t in [0, 1], crosses the box (slab test)."""
    t0 = float(0.0)
    t1 = float(1.0)
    for axis in range(2):
        lo = b[axis]
        hi = b[axis + 2]
        if wp.abs(d[axis]) < 1.0e-9:
            if p[axis] <= lo or p[axis] >= hi:
                return False
        else:
            inv = 1.0 / d[axis]
            ta = (lo - p[axis]) * inv
            tb = (hi - p[axis]) * inv
            t0 = wp.max(t0, wp.min(ta, tb))
            t1 = wp.min(t1, wp.max(ta, tb))
            if t0 > t1:
                return False
    return True


@wp.func
def sight_blocked(f: Field, p: wp.vec2, q: wp.vec2, skip_a: int, skip_b: int) -> bool:
    """Whether a wall (other than ``skip_a`` / ``skip_b``) crosses p -> q: a walk over the tiles the segment
    passes (Amanatides-Woo), one box test per tile."""
    d = q - p
    tx = int(wp.floor(p[0] / f.tile))
    ty = int(wp.floor(p[1] / f.tile))
    ex = int(wp.floor(q[0] / f.tile))
    ey = int(wp.floor(q[1] / f.tile))
    sx = int(1)
    sy = int(1)
    tmx = float(1.0e9)
    tmy = float(1.0e9)
    tdx = float(1.0e9)
    tdy = float(1.0e9)
    if d[0] > 0.0:
        tmx = (float(tx + 1) * f.tile - p[0]) / d[0]
        tdx = f.tile / d[0]
    elif d[0] < 0.0:
        sx = -1
        tmx = (float(tx) * f.tile - p[0]) / d[0]
        tdx = -f.tile / d[0]
    if d[1] > 0.0:
        tmy = (float(ty + 1) * f.tile - p[1]) / d[1]
        tdy = f.tile / d[1]
    elif d[1] < 0.0:
        sy = -1
        tmy = (float(ty) * f.tile - p[1]) / d[1]
        tdy = -f.tile / d[1]
    for _k in range(64):
        if tx >= 0 and ty >= 0 and tx < f.tiles_x and ty < f.tiles_y:
            w = f.tile_wall[ty * f.tiles_x + tx]
            if w >= 0 and w != skip_a and w != skip_b:
                if segment_hits_box(p, d, f.walls[w]):
                    return True
        if tx == ex and ty == ey:
            return False
        if tmx < tmy:
            tx += sx
            tmx += tdx
        else:
            ty += sy
            tmy += tdy
    return False


@wp.func
def path_free(f: Field, p: wp.vec2, q: wp.vec2) -> bool:
    """Whether a step p -> q stays out of every wall (three samples: walls are thicker than a third of a step)."""
    for k in range(1, 4):
        if wall_at(f, p + (q - p) * (float(k) / 3.0), WALL_PAD) >= 0:
            return False
    return True


@wp.func
def clamp_to_field(f: Field, p: wp.vec2) -> wp.vec2:
    return wp.vec2(wp.clamp(p[0], 0.5, f.width - 0.5), wp.clamp(p[1], 0.5, f.height - 0.5))


@wp.func
def slide_step(code: int, speed: float) -> wp.vec2:
    if code == 1:
        return wp.vec2(speed, 0.0)
    if code == 2:
        return wp.vec2(-speed, 0.0)
    if code == 3:
        return wp.vec2(0.0, speed)
    return wp.vec2(0.0, -speed)


@wp.func
def move_toward(f: Field, t: Troops, i: int, dest: wp.vec2, speed: float) -> bool:
    """Step soldier i toward ``dest``; a wall in the way is followed (the sliding direction sticks until the
    straight step is free again), which gets round any single wall. True when it arrived."""
    p = t.pos[i]
    d = dest - p
    dist = wp.length(d)
    q = dest
    if dist > speed:
        q = p + d * (speed / dist)
    if path_free(f, p, q):
        t.pos[i] = clamp_to_field(f, q)
        t.slide[i] = 0
        return dist <= speed
    code = t.slide[i]
    if code != 0:
        s = p + slide_step(code, speed)
        if path_free(f, p, s):
            t.pos[i] = clamp_to_field(f, s)
            return False
    # choose a face to follow: across the dominant direction first, toward the goal (or the soldier's side)
    side = float(1.0)
    if hash01(i, 77) < 0.5:
        side = -1.0
    cx = int(1)
    if d[0] < -0.5 or (wp.abs(d[0]) <= 0.5 and side < 0.0):
        cx = 2
    cy = int(3)
    if d[1] < -0.5 or (wp.abs(d[1]) <= 0.5 and side < 0.0):
        cy = 4
    first = cy
    second = cx
    if wp.abs(d[1]) > wp.abs(d[0]):
        first = cx
        second = cy
    for k in range(4):
        c = first
        if k == 1:
            c = second
        elif k == 2:
            c = first + 1 - 2 * ((first + 1) % 2)  # the opposite direction on the same axis
        elif k == 3:
            c = second + 1 - 2 * ((second + 1) % 2)
        s = p + slide_step(c, speed)
        if path_free(f, p, s):
            t.pos[i] = clamp_to_field(f, s)
            t.slide[i] = c
            return False
    return False


# --- sites -----------------------------------------------------------------------------------------------------
@wp.func
def back_x(f: Field, team: int) -> float:
    if team == 0:
        return 5.0
    return f.width - 5.0


@wp.func
def room_centre(f: Field, team: int, y: float, medbay: int) -> wp.vec2:
    """The nearest medbay (medbay=1) or armory of the team to height y; they alternate along the back line."""
    first = f.site_spacing * 0.5
    count = f.n_armories
    if medbay != 0:
        count = f.n_medbays
    else:
        first = f.site_spacing * 1.5
    k = int(wp.round((y - first) / (2.0 * f.site_spacing)))
    k = wp.clamp(k, 0, count - 1)
    return wp.vec2(back_x(f, team), first + float(k) * 2.0 * f.site_spacing)


@wp.func
def own_spot(i: int, centre: wp.vec2, radius: float) -> wp.vec2:
    """Soldier i's own place in a room or at a control point: no two soldiers queue on one point."""
    a = hash01(i, 11) * 6.2831853
    r = radius * wp.sqrt(0.15 + 0.85 * hash01(i, 12))
    return centre + wp.vec2(wp.cos(a), wp.sin(a)) * r


@wp.func
def free_spot(f: Field, i: int, centre: wp.vec2, radius: float) -> wp.vec2:
    """Soldier i's own spot around a control point, pulled in toward the centre (kept clear) if a wall is there."""
    q = own_spot(i, centre, radius)
    for _k in range(3):
        if wall_at(f, q, WALL_PAD + 0.5) < 0:
            return q
        q = centre + (q - centre) * 0.5
    return centre


@wp.func
def objective_pos(f: Field, o: int) -> wp.vec2:
    col = o % f.obj_cols
    row = o / f.obj_cols
    return wp.vec2(f.obj_x0 + float(col) * f.obj_dx, (float(row) + 0.5) * f.obj_dy)


@wp.func
def nearest_objective(f: Field, p: wp.vec2) -> int:
    col = wp.clamp(int(wp.round((p[0] - f.obj_x0) / f.obj_dx)), 0, f.obj_cols - 1)
    row = wp.clamp(int(wp.floor(p[1] / f.obj_dy)), 0, f.obj_rows - 1)
    return row * f.obj_cols + col


@wp.func
def squad_of(f: Field, i: int) -> int:
    return i / f.squad_size


@wp.func
def release_slot(f: Field, t: Troops, i: int):
    s = t.slot[i]
    if s >= 0:
        f.slot_owner[s] = -1
        wp.atomic_add(f.wall_free, f.slot_wall[s], 1)
        t.slot[i] = -1
    t.in_cover[i] = 0


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


# --- brain rows of a soldier that dies or comes back -----------------------------------------------------------
@wp.func
def clear_mind(
    i: int,
    goal: wp.array(dtype=wp.int32),
    plan_length: wp.array(dtype=wp.int32),
    step: wp.array(dtype=wp.int32),
    action: wp.array(dtype=wp.int32),
    action_status: wp.array(dtype=wp.int8),
    action_ticks: wp.array(dtype=wp.int32),
    needs_plan: wp.array(dtype=wp.bool),
    waiting: wp.array(dtype=wp.int32),
    cooldown_until: wp.array2d(dtype=wp.int64),
):
    goal[i] = -1
    plan_length[i] = 0
    step[i] = 0
    action[i] = -1
    action_status[i] = wp.int8(RUNNING)
    action_ticks[i] = 0
    needs_plan[i] = False
    waiting[i] = 0
    for g in range(cooldown_until.shape[1]):
        cooldown_until[i, g] = wp.int64(0)


# --- kernels: reset ------------------------------------------------------------------------------------------
@wp.kernel
def place_soldiers(f: Field, t: Troops, clock: wp.array(dtype=wp.int32)):
    i = wp.tid()
    team = squad_of(f, i) % 2
    t.team[i] = team
    t.alive[i] = 1
    respawn_kit(t, i)
    t.pos[i] = spawn_point(f, i, team, clock[0])


# --- kernels: sense --------------------------------------------------------------------------------------------
@wp.kernel
def respawn_soldiers(
    f: Field,
    t: Troops,
    clock: wp.array(dtype=wp.int32),
    stats: wp.array(dtype=wp.int64),
    alive: wp.array(dtype=wp.bool),
    goal: wp.array(dtype=wp.int32),
    plan_length: wp.array(dtype=wp.int32),
    step: wp.array(dtype=wp.int32),
    action: wp.array(dtype=wp.int32),
    action_status: wp.array(dtype=wp.int8),
    action_ticks: wp.array(dtype=wp.int32),
    needs_plan: wp.array(dtype=wp.bool),
    waiting: wp.array(dtype=wp.int32),
    cooldown_until: wp.array2d(dtype=wp.int64),
):
    i = wp.tid()
    if t.alive[i] != 0 or t.respawn_at[i] > clock[0]:
        return
    respawn_kit(t, i)
    t.pos[i] = spawn_point(f, i, t.team[i], clock[0])
    t.alive[i] = 1
    alive[i] = True
    clear_mind(i, goal, plan_length, step, action, action_status, action_ticks, needs_plan, waiting,
               cooldown_until)
    wp.atomic_add(stats, S_RESPAWNS, wp.int64(1))


@wp.kernel
def grid_keys(f: Field, t: Troops, n: int):
    i = wp.tid()
    key = 2 * f.cells_x * f.cells_y
    if t.alive[i] != 0:
        p = t.pos[i]
        cx = wp.clamp(int(p[0] / f.cell), 0, f.cells_x - 1)
        cy = wp.clamp(int(p[1] / f.cell), 0, f.cells_y - 1)
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
    if wp.length(t.pos[i] - objective_pos(f, o)) <= f.obj_radius:
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


@wp.func
def cover_wall(f: Field, t: Troops, j: int) -> int:
    """The wall soldier j crouches behind, or -1."""
    s = t.slot[j]
    if s >= 0 and t.in_cover[j] != 0:
        return f.slot_wall[s]
    return -1


@wp.func
def pair_jitter(i: int, j: int) -> float:
    """A fixed number in [0, 1) per (soldier, enemy) pair: soldiers side by side prefer different enemies."""
    h = (i * 73856093) ^ (j * 19349663)
    return float(h & 1023) / 1024.0


vec6i = wp.types.vector(length=6, dtype=wp.int32)
vec6f = wp.types.vector(length=6, dtype=wp.float32)
N_CANDIDATES = wp.constant(6)


@wp.func
def nearest_enemies(f: Field, t: Troops, i: int, spread: float, radius: float) -> vec6i:
    """The six best living enemies to track within ``radius``, best first (-1 where fewer): by distance plus 3 m
    for each ally (up to 5) that tracked it at the last sense plus up to ``spread`` m of a fixed per-pair jitter,
    so fire spreads over the enemy line instead of a dozen rifles on one man; ties keep the grid's order (by cell,
    then id), so the choice is the same on any device. Grid rings around the soldier, at most MAX_PER_CELL
    candidates a cell, one ring past the first that held a candidate."""
    p = t.pos[i]
    foe = 1 - t.team[i]
    cx = wp.clamp(int(p[0] / f.cell), 0, f.cells_x - 1)
    cy = wp.clamp(int(p[1] / f.cell), 0, f.cells_y - 1)
    rings = wp.min(int(wp.ceil(radius / f.cell)), MAX_RINGS)
    ids = vec6i(-1, -1, -1, -1, -1, -1)
    scores = vec6f(1.0e9, 1.0e9, 1.0e9, 1.0e9, 1.0e9, 1.0e9)
    r2 = radius * radius
    first_ring = int(-1)
    for r in range(MAX_RINGS + 1):
        if r > rings:
            break
        if ids[N_CANDIDATES - 1] >= 0 and float(r - 1) * f.cell > scores[N_CANDIDATES - 1]:
            break
        if first_ring >= 0 and r > first_ring + 1:
            break  # one ring past the first with a candidate is enough (a few metres of choice, not an exact top 6)
        if ids[0] >= 0 and first_ring < 0:
            first_ring = r - 1
        for dy in range(-r, r + 1):
            y = cy + dy
            if y < 0 or y >= f.cells_y:
                continue
            step = 1
            if dy != -r and dy != r:
                step = 2 * r  # ring: only the two side cells of the inner rows
            dx = -r
            while dx <= r:
                x = cx + dx
                if x >= 0 and x < f.cells_x:
                    key = (foe * f.cells_y + y) * f.cells_x + x
                    a = f.cell_start[key]
                    b = wp.min(f.cell_end[key], a + MAX_PER_CELL)
                    for k in range(a, b):
                        j = f.grid_ids[k]
                        d2 = wp.length_sq(t.pos[j] - p)
                        if d2 <= r2 and t.alive[j] != 0:
                            score = wp.sqrt(d2) + 3.0 * float(wp.min(t.aimed_at[j], 5)) + spread * pair_jitter(i, j)
                            # insert into the sorted six (grid order is by id within a cell: ties stay by id)
                            if score < scores[N_CANDIDATES - 1]:
                                pos = int(N_CANDIDATES - 1)
                                while pos > 0 and scores[pos - 1] > score:
                                    scores[pos] = scores[pos - 1]
                                    ids[pos] = ids[pos - 1]
                                    pos -= 1
                                scores[pos] = score
                                ids[pos] = j
                dx += step
    return ids


@wp.func
def enemy_within(f: Field, t: Troops, i: int, radius: float) -> bool:
    """Whether any living enemy is within ``radius`` (grid rings, stops at the first one found)."""
    p = t.pos[i]
    foe = 1 - t.team[i]
    cx = wp.clamp(int(p[0] / f.cell), 0, f.cells_x - 1)
    cy = wp.clamp(int(p[1] / f.cell), 0, f.cells_y - 1)
    rings = wp.min(int(wp.ceil(radius / f.cell)), MAX_RINGS)
    r2 = radius * radius
    for r in range(MAX_RINGS + 1):
        if r > rings:
            break
        for dy in range(-r, r + 1):
            y = cy + dy
            if y < 0 or y >= f.cells_y:
                continue
            step = 1
            if dy != -r and dy != r:
                step = 2 * r
            dx = -r
            while dx <= r:
                x = cx + dx
                if x >= 0 and x < f.cells_x:
                    key = (foe * f.cells_y + y) * f.cells_x + x
                    for k in range(f.cell_start[key], f.cell_end[key]):
                        j = f.grid_ids[k]
                        if t.alive[j] != 0 and wp.length_sq(t.pos[j] - p) <= r2:
                            return True
                dx += step
    return False


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


@wp.func
def nearest_free_cover(f: Field, t: Troops, i: int) -> wp.vec2:
    """(distance to the nearest wall with a free slot within one tile, its wall) over the 3x3 tiles around i."""
    p = t.pos[i]
    tx = int(wp.floor(p[0] / f.tile))
    ty = int(wp.floor(p[1] / f.tile))
    best = float(1.0e9)
    best_w = float(-1.0)
    for dy in range(-1, 2):
        for dx in range(-1, 2):
            x = tx + dx
            y = ty + dy
            if x < 0 or y < 0 or x >= f.tiles_x or y >= f.tiles_y:
                continue
            w = f.tile_wall[y * f.tiles_x + x]
            if w < 0 or f.wall_free[w] <= 0:
                continue
            b = f.walls[w]
            c = wp.vec2(0.5 * (b[0] + b[2]), 0.5 * (b[1] + b[3]))
            d = wp.length(c - p)
            if d < best:
                best = d
                best_w = float(w)
    return wp.vec2(best, best_w)


@wp.kernel
def sense_soldiers(
    f: Field,
    t: Troops,
    clock: wp.array(dtype=wp.int32),
    fact_word: wp.array(dtype=wp.int32),
    fact_shift: wp.array(dtype=wp.int32),
    fact_mask: wp.array(dtype=wp.uint64),
    base_cost: wp.array(dtype=wp.float32),
    states: wp.array2d(dtype=wp.uint64),
    priorities: wp.array2d(dtype=wp.float32),
    costs: wp.array2d(dtype=wp.float32),
    enabled: wp.array2d(dtype=wp.bool),
    goal: wp.array(dtype=wp.int32),
    offset: int,
):
    """Everything a soldier senses, in one pass; no atomics and no writes to another soldier's rows, so chunks of
    soldiers may run on several CPU threads at once."""
    i = wp.tid() + offset
    now = clock[0]
    if t.alive[i] == 0:
        for g in range(priorities.shape[1]):
            priorities[i, g] = 0.0
        for a in range(enabled.shape[1]):
            enabled[i, a] = False
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
    elif d_obj <= f.obj_radius:
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
    for w in range(states.shape[1]):
        word = wp.uint64(0)
        for k in range(fact_word.shape[0]):
            if fact_word[k] == w:
                word = word | ((wp.uint64(vals[k]) & fact_mask[k]) << wp.uint64(fact_shift[k]))
        states[i, w] = word
    # --- costs and enabled actions ----------------------------------------------------------------------
    # free cover nearby matters in a fight; away from one, cover is assumed (a run that finds none fails)
    cover = wp.vec2(8.0, 0.0)
    if tgt >= 0 or shot_recently:
        cover = nearest_free_cover(f, t, i)
    has_cover = cover[1] >= 0.0 or slot >= 0
    for a in range(enabled.shape[1]):
        enabled[i, a] = True
        costs[i, a] = base_cost[a]
    # distances enter the costs in whole steps, so that soldiers in the same situation ask the same question
    # (a planner that caches or deduplicates queries answers them once)
    costs[i, A_GO_COVER] = base_cost[A_GO_COVER] + wp.floor(wp.min(cover[0], 30.0) / 8.0)
    enabled[i, A_GO_COVER] = has_cover
    costs[i, A_GO_ARMORY] = base_cost[A_GO_ARMORY] + wp.floor(d_arm / 20.0)
    costs[i, A_GO_MEDBAY] = base_cost[A_GO_MEDBAY] + wp.floor(d_med / 20.0)
    costs[i, A_ADVANCE] = base_cost[A_ADVANCE] + wp.floor(d_obj / 30.0)
    if tgt >= 0:
        costs[i, A_APPROACH] = base_cost[A_APPROACH] + wp.floor(d / 2.0)
        costs[i, A_SHOOT] = base_cost[A_SHOOT] + wp.floor(float(MAX_AMMO - ammo) * 0.34)
        enabled[i, A_GRENADE] = d <= f.grenade_range
    # --- goal priorities --------------------------------------------------------------------------------
    # Emergencies (escape, cover) interrupt anything; a soldier finishes a reload, a supply run or a trip to
    # the medbay it has started before it turns to the next enemy (the current goal keeps a bonus).
    current = goal[i]
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
    priorities[i, G_ESCAPE] = p_escape
    priorities[i, G_STAY] = p_stay
    priorities[i, G_COVER] = p_cover
    priorities[i, G_KILL] = p_kill
    priorities[i, G_READY] = p_ready
    priorities[i, G_RESUPPLY] = p_resupply
    if confirming:
        priorities[i, G_HOLD] = 0.0
    else:
        priorities[i, G_HOLD] = 3.0


# --- kernels: act ----------------------------------------------------------------------------------------------
@wp.kernel
def claim_cover(f: Field, t: Troops, action: wp.array(dtype=wp.int32)):
    """Soldiers running to cover without a slot pick the best free one nearby and bid for it (lowest id wins)."""
    i = wp.tid()
    t.cand[i] = -1
    t.killer[i] = BIG
    if t.alive[i] == 0 or action[i] != A_GO_COVER or t.slot[i] >= 0:
        return
    p = t.pos[i]
    tx = int(wp.floor(p[0] / f.tile))
    ty = int(wp.floor(p[1] / f.tile))
    has_threat = t.target[i] >= 0
    threat = t.tpos[i]
    best = int(-1)
    best_score = float(1.0e9)
    for dy in range(-1, 2):
        for dx in range(-1, 2):
            x = tx + dx
            y = ty + dy
            if x < 0 or y < 0 or x >= f.tiles_x or y >= f.tiles_y:
                continue
            w = f.tile_wall[y * f.tiles_x + x]
            if w < 0 or f.wall_free[w] <= 0:
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


@wp.kernel
def act_soldiers(
    f: Field,
    t: Troops,
    clock: wp.array(dtype=wp.int32),
    stats: wp.array(dtype=wp.int64),
    action: wp.array(dtype=wp.int32),
    action_ticks: wp.array(dtype=wp.int32),
    action_status: wp.array(dtype=wp.int8),
):
    i = wp.tid()
    c = t.cand[i]
    if c >= 0:
        f.slot_claim[c] = BIG  # every bid was read by award_cover
    a = action[i]
    if a < 0:
        return
    if t.alive[i] == 0:
        action_status[i] = wp.int8(FAILED)
        return
    now = clock[0]
    ticks = action_ticks[i]
    team = t.team[i]
    p = t.pos[i]
    tgt = t.target[i]
    rng = wp.rand_init(f.seed + 7919 * now, i)
    status = RUNNING
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
        if status == RUNNING and ticks >= f.move_timeout:
            status = FAILED
    elif a == A_TAKE_COVER:
        s = t.slot[i]
        if s >= 0 and wp.length(f.slot_pos[s] - p) < 0.5:
            t.in_cover[i] = 1
            status = DONE
        else:
            status = FAILED
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
        elif ticks >= 1:
            t.ammo[i] = MAX_AMMO
            t.magazines[i] = t.magazines[i] - 1
            status = DONE
    elif a == A_SHOOT:
        if tgt < 0 or t.visible[i] == 0 or t.covered[i] != 0 or t.drawn[i] == 0:
            status = FAILED
        elif t.ammo[i] < 1:
            status = FAILED
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
        else:
            t.ammo[i] = t.ammo[i] - 3
            wp.atomic_max(t.suppressed_until, tgt, now + f.suppress_ticks)
            wp.atomic_max(t.last_shot, tgt, now)
            wp.atomic_add(stats, S_SUPP, wp.int64(1))
            status = DONE
    elif a == A_GRENADE:
        if tgt < 0 or t.visible[i] == 0 or t.grenades[i] < 1 or t.drawn[i] != 0 or t.tdist[i] > f.grenade_range:
            status = FAILED
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
    elif a == A_SEARCH:
        if tgt < 0:
            status = FAILED
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
    elif a == A_AMMO:
        if t.at[i] == AT_ARMORY:
            t.magazines[i] = MAX_MAGS
            status = DONE
        else:
            status = FAILED
    elif a == A_GRENADES:
        if t.at[i] == AT_ARMORY:
            t.grenades[i] = MAX_GREN
            status = DONE
        else:
            status = FAILED
    elif a == A_MEDKIT:
        if t.at[i] == AT_MEDBAY:
            t.medkit[i] = 1
            status = DONE
        else:
            status = FAILED
    elif a == A_HEAL:
        if t.medkit[i] == 0 or t.drawn[i] != 0:
            status = FAILED
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
    elif a == A_ADVANCE:
        o = f.squad_obj[squad_of(f, i)]
        if move_toward(f, t, i, free_spot(f, i, objective_pos(f, o), f.obj_radius - 1.0), f.speed):
            status = DONE
        elif ticks >= 3 * f.move_timeout:
            status = FAILED
    elif a == A_GUARD:
        if t.at[i] != AT_OBJECTIVE:
            status = FAILED
        elif ticks + 1 >= f.guard_ticks + int(8.0 * hash01(i, now - ticks)) or t.visible[i] != 0:
            # shifts vary by up to 8 ticks, so a squad that arrived together does not ask for plans together
            t.secured_tick[i] = now + 1  # the shift is over (or the guard spotted an enemy and reports it)
            status = DONE
    action_status[i] = wp.int8(status)


@wp.kernel
def settle_damage(
    f: Field,
    t: Troops,
    clock: wp.array(dtype=wp.int32),
    stats: wp.array(dtype=wp.int64),
    alive: wp.array(dtype=wp.bool),
    goal: wp.array(dtype=wp.int32),
    plan_length: wp.array(dtype=wp.int32),
    step: wp.array(dtype=wp.int32),
    action: wp.array(dtype=wp.int32),
    action_status: wp.array(dtype=wp.int8),
    action_ticks: wp.array(dtype=wp.int32),
    needs_plan: wp.array(dtype=wp.bool),
    waiting: wp.array(dtype=wp.int32),
    cooldown_until: wp.array2d(dtype=wp.int64),
):
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
    alive[i] = False
    clear_mind(i, goal, plan_length, step, action, action_status, action_ticks, needs_plan, waiting,
               cooldown_until)


@wp.kernel
def settle_attacks(
    f: Field,
    t: Troops,
    clock: wp.array(dtype=wp.int32),
    action: wp.array(dtype=wp.int32),
    action_status: wp.array(dtype=wp.int8),
):
    """After every wound of the tick has landed. The soldier whose wound downed its target is DONE and sees its
    kill at the next sense (``enemy_alive`` false for that tick; then it takes the next enemy). One whose target
    fell to someone else keeps firing at the next enemy in sight (the next sense hands it over), and is DONE only
    when none is left. Shooting fails when the last magazine is spent."""
    i = wp.tid()
    a = action[i]
    hit = t.hit[i]
    t.hit[i] = 0
    if t.alive[i] == 0 or (a != A_SHOOT and a != A_MELEE):
        return
    if action_status[i] != wp.int8(RUNNING):
        return
    tgt = t.target[i]
    if tgt >= 0 and t.alive[tgt] == 0:
        if hit != 0 and t.killer[tgt] == i:  # of several who hit it this tick, the lowest id has the kill
            t.confirm_tick[i] = clock[0] + 1
            action_status[i] = wp.int8(DONE)
        elif not enemy_within(f, t, i, f.sight + 3.0 * f.speed):
            # anyone who could walk into sight by the next sense keeps the soldier firing
            action_status[i] = wp.int8(DONE)
    elif a == A_SHOOT and t.ammo[i] < 1:
        action_status[i] = wp.int8(FAILED)


@wp.kernel
def mark_shot_at(rows: wp.array(dtype=wp.int32), t: Troops, clock: wp.array(dtype=wp.int32)):
    t.last_shot[rows[wp.tid()]] = clock[0]


@wp.kernel
def advance_clock(clock: wp.array(dtype=wp.int32)):
    clock[0] = clock[0] + 1


# --- the launcher ------------------------------------------------------------------------------------------------
_TROOP_ARRAYS = {
    "pos": (wp.vec2, np.float32, (2,)), "team": (wp.int32, np.int32, ()), "alive": (wp.int32, np.int32, ()),
    "health": (wp.int32, np.int32, ()), "ammo": (wp.int32, np.int32, ()), "magazines": (wp.int32, np.int32, ()),
    "grenades": (wp.int32, np.int32, ()), "medkit": (wp.int32, np.int32, ()), "drawn": (wp.int32, np.int32, ()),
    "in_cover": (wp.int32, np.int32, ()), "slot": (wp.int32, np.int32, ()), "slide": (wp.int32, np.int32, ()),
    "last_shot": (wp.int32, np.int32, ()), "suppressed_until": (wp.int32, np.int32, ()),
    "respawn_at": (wp.int32, np.int32, ()), "escaped_until": (wp.int32, np.int32, ()),
    "secured_tick": (wp.int32, np.int32, ()), "target": (wp.int32, np.int32, ()),
    "seen_tick": (wp.int32, np.int32, ()), "confirm_tick": (wp.int32, np.int32, ()),
    "aimed_at": (wp.int32, np.int32, ()), "aiming": (wp.int32, np.int32, ()),
    "tpos": (wp.vec2, np.float32, (2,)), "tdist": (wp.float32, np.float32, ()),
    "visible": (wp.int32, np.int32, ()), "in_sight": (wp.int32, np.int32, ()), "tslot": (wp.int32, np.int32, ()),
    "pinned": (wp.int32, np.int32, ()), "covered": (wp.int32, np.int32, ()),
    "under_fire": (wp.int32, np.int32, ()), "at": (wp.int32, np.int32, ()),
}
_SCRATCH = ("cand", "damage", "flushed", "hit", "killer")
# Field arrays that change during a run (the rest are the map, fixed at reset, and saved too).
_FIELD_ARRAYS = {
    "tile_wall": (wp.int32, np.int32, ()), "walls": (wp.vec4, np.float32, (4,)),
    "wall_slots": (wp.int32, np.int32, ()), "wall_free": (wp.int32, np.int32, ()),
    "slot_pos": (wp.vec2, np.float32, (2,)), "slot_normal": (wp.vec2, np.float32, (2,)),
    "slot_wall": (wp.int32, np.int32, ()), "slot_owner": (wp.int32, np.int32, ()),
    "obj_owner": (wp.int32, np.int32, ()), "obj_progress": (wp.int32, np.int32, ()),
    "obj_since": (wp.int32, np.int32, ()),
    "squad_obj": (wp.int32, np.int32, ()),
}


class SoldierWorld:
    """Two armies (team 0 on the left, team 1 on the right) in squads, fighting over control points.

    Args:
        width, height: the field in metres; None sizes it to the army (``area_per_agent`` m2 a soldier, width
            clamped to 100..300 m, height at least 100 m), so a million soldiers get a long front, not a crowd.
        area_per_agent: m2 of field per soldier when a side is None.
        speed: metres a soldier runs per tick.
        sight: how far a soldier sees and tracks an enemy.
        squad_size: soldiers per squad (squads alternate teams; a squad shares an objective).
        respawn_ticks: ticks a dead soldier waits before it is back at its base.
        guard_ticks: length of a guard shift at the objective.
        threads: CPU threads the sense kernel is split over (chunks of soldiers). 1 by default: on the shared
            2-core machine two threads made the kernel slower (3.2 ms in one launch against 7.6 ms in two halves,
            10,000 soldiers, best of 15), as the other core is rarely free.
    """

    name = "soldier"
    capturable = False  # the target grid is sorted with wp.utils.radix_sort_pairs each tick
    sensed_facts: tuple[str, ...] = tuple(_FACTS)

    def __init__(
        self,
        width: float | None = None,
        height: float | None = None,
        *,
        area_per_agent: float = 8.0,
        speed: float = 3.0,
        sight: float = 40.0,
        melee_range: float = 4.0,
        grenade_range: float = 25.0,
        site_radius: float = 3.5,
        objective_radius: float = 8.0,
        under_fire_ticks: int = 2,
        respawn_ticks: int = 10,
        move_timeout: int = 60,
        guard_ticks: int = 15,
        suppress_ticks: int = 12,
        capture_ticks: int = 10,
        hold_ticks: int = 50,
        squad_size: int = 8,
        threads: int = 1,
    ):
        for key, value in (("area_per_agent", area_per_agent), ("speed", speed), ("sight", sight),
                           ("melee_range", melee_range), ("grenade_range", grenade_range),
                           ("site_radius", site_radius), ("objective_radius", objective_radius)):
            if not np.isfinite(value) or value <= 0:
                raise ValueError(f"{key} must be a finite number > 0, got {value!r}")
        if sight > 80.0:
            raise ValueError(f"sight must be at most 80 m (the target search reaches 8 rings of 10 m), got {sight}")
        for key, value in (("width", width), ("height", height)):
            if value is not None and (not np.isfinite(value) or value < 60):
                raise ValueError(f"{key} must be at least 60 m, got {value!r}")
        for key, value in (("under_fire_ticks", under_fire_ticks), ("respawn_ticks", respawn_ticks),
                           ("move_timeout", move_timeout), ("guard_ticks", guard_ticks),
                           ("suppress_ticks", suppress_ticks), ("capture_ticks", capture_ticks),
                           ("hold_ticks", hold_ticks),
                           ("squad_size", squad_size)):
            if not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"{key} must be an integer >= 1, got {value!r}")
        self.domain = _DOMAIN
        self._width, self._height, self.area_per_agent = width, height, float(area_per_agent)
        self.rules = {
            "speed": float(speed), "sight": float(sight), "melee_range": float(melee_range),
            "grenade_range": float(grenade_range), "site_radius": float(site_radius),
            "obj_radius": float(objective_radius), "under_fire_ticks": int(under_fire_ticks),
            "respawn_ticks": int(respawn_ticks), "move_timeout": int(move_timeout), "guard_ticks": int(guard_ticks),
            "suppress_ticks": int(suppress_ticks), "capture_ticks": int(capture_ticks),
            "hold_ticks": int(hold_ticks),
        }
        self.squad_size = int(squad_size)
        self.move_timeout = int(move_timeout)
        self.respawn_ticks = int(respawn_ticks)
        self.device = None
        if not isinstance(threads, int | np.integer) or threads < 1:
            raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
        self.threads = int(threads)
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="soldier") if self.threads > 1 else None
        self.n = 0
        self.width = float(width or 100.0)
        self.height = float(height or 100.0)

    # --- layout ---------------------------------------------------------------------------------------------
    def _size_for(self, n: int) -> tuple[float, float]:
        area = max(1, n) * self.area_per_agent
        w = self._width or float(np.clip(math.sqrt(area), 100.0, 300.0))
        h = self._height or float(max(100.0, area / w))
        return float(w), float(h)

    def reset(self, brain: Brain, seed: int) -> None:
        dev = self.device = brain.device
        n = self.n = brain.n_agents
        self.seed = int(seed) & 0x3FFFFFFF
        self.width, self.height = self._size_for(n)
        rng = np.random.default_rng(self.seed)
        walls, tile_wall, tiles_x, tiles_y, tile = self._walls(rng)
        slots, normals, slot_wall, wall_slots = self._slots(walls)
        # control points: columns across the middle, a row every 25 m
        cols = max(3, int(round(0.5 * self.width / 25.0)) + 1)
        rows = max(1, int(self.height // 25.0))
        self.obj_x0, self.obj_dx, self.obj_dy = 0.25 * self.width, 0.5 * self.width / (cols - 1), self.height / rows
        self.obj_cols, self.obj_rows = cols, rows
        obj = np.array([[self.obj_x0 + (o % cols) * self.obj_dx, (o // cols + 0.5) * self.obj_dy]
                        for o in range(cols * rows)], np.float32).reshape(-1, 2)
        self.objectives = obj
        # rooms along the back lines
        spacing = 20.0
        self.site_spacing = spacing
        n_med = max(1, int((self.height - 0.5 * spacing) // (2 * spacing)) + 1)
        n_arm = max(1, int((self.height - 1.5 * spacing) // (2 * spacing)) + 1)
        self.n_medbays, self.n_armories = n_med, n_arm
        cell = 10.0
        cells_x, cells_y = int(math.ceil(self.width / cell)), int(math.ceil(self.height / cell))
        n_squads = max(1, -(-n // self.squad_size))

        def arr(x: np.ndarray, dtype: Any) -> Any:
            return wp.array(x, dtype=dtype, device=dev)

        f = Field()
        f.width, f.height, f.tile, f.tiles_x, f.tiles_y = self.width, self.height, tile, tiles_x, tiles_y
        f.tile_wall = arr(tile_wall, wp.int32)
        if not len(walls):  # a field without walls keeps one unreachable wall, so no array is empty
            walls, wall_slots = np.full((1, 4), -10.0, np.float32), np.zeros(2, np.int32)
        f.walls = arr(walls, wp.vec4)
        f.wall_slots = arr(wall_slots, wp.int32)
        f.wall_free = arr(np.diff(wall_slots).astype(np.int32), wp.int32)
        s_count = max(1, len(slots))
        f.slot_pos = arr(slots if len(slots) else np.zeros((1, 2), np.float32), wp.vec2)
        f.slot_normal = arr(normals if len(slots) else np.zeros((1, 2), np.float32), wp.vec2)
        f.slot_wall = arr(slot_wall if len(slots) else np.zeros(1, np.int32), wp.int32)
        f.slot_owner = wp.full(s_count, -1, dtype=wp.int32, device=dev)
        f.slot_claim = wp.full(s_count, 2**31 - 1, dtype=wp.int32, device=dev)
        f.obj_cols, f.obj_rows, f.obj_x0, f.obj_dx, f.obj_dy = cols, rows, self.obj_x0, self.obj_dx, self.obj_dy
        n_obj = cols * rows
        f.obj_owner = wp.full(n_obj, -1, dtype=wp.int32, device=dev)
        f.obj_progress = wp.zeros(n_obj, dtype=wp.int32, device=dev)
        f.obj_since = wp.zeros(n_obj, dtype=wp.int32, device=dev)
        f.obj_count = wp.zeros(2 * n_obj, dtype=wp.int32, device=dev)
        f.squad_size = self.squad_size
        f.squad_obj = wp.zeros(n_squads, dtype=wp.int32, device=dev)
        f.site_spacing, f.n_medbays, f.n_armories = spacing, n_med, n_arm
        f.cell, f.cells_x, f.cells_y = cell, cells_x, cells_y
        f.cell_start = wp.zeros(2 * cells_x * cells_y, dtype=wp.int32, device=dev)
        f.cell_end = wp.zeros(2 * cells_x * cells_y, dtype=wp.int32, device=dev)
        f.grid_keys = wp.zeros(max(2, 2 * n), dtype=wp.int32, device=dev)
        f.grid_ids = wp.zeros(max(2, 2 * n), dtype=wp.int32, device=dev)
        for key, value in self.rules.items():
            setattr(f, key, value)
        f.seed = self.seed
        self.field = f
        self._key_bits = max(1, int(2 * cells_x * cells_y).bit_length())

        t = Troops()
        rows_n = max(1, n)
        for name, (dtype, _np, _shape) in _TROOP_ARRAYS.items():
            setattr(t, name, wp.zeros(rows_n, dtype=dtype, device=dev))
        for name in _SCRATCH:
            setattr(t, name, wp.zeros(rows_n, dtype=wp.int32, device=dev))
        t.cand.fill_(-1)
        t.killer.fill_(2**31 - 1)
        self.troops = t
        self.clock = wp.zeros(1, dtype=wp.int32, device=dev)
        self.stats = wp.zeros(len(STATS), dtype=wp.int64, device=dev)
        L = brain.tables.layout
        self._layout = (arr(L.word.astype(np.int32), wp.int32), arr(L.shift.astype(np.int32), wp.int32),
                        arr(L.mask, wp.uint64))
        self._base_cost = arr(brain.tables.cost.astype(np.float32), wp.float32)
        if n:
            wp.launch(place_soldiers, n, [f, t, self.clock], device=dev)
            wp.copy(brain.alive, wp.ones(n, dtype=wp.bool, device=dev))
        wp.launch(choose_squad_objectives, n_squads, [f, self.clock], device=dev)
        self._sense(brain)

    def _walls(self, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        """One wall in most 10 m tiles of the middle band, inside its tile with a margin (walls never touch),
        none on a control point. Vectorised over tiles: fine for a million soldiers' field."""
        tile = 10.0
        tiles_x, tiles_y = int(math.ceil(self.width / tile)), int(math.ceil(self.height / tile))
        tx, ty = np.meshgrid(np.arange(tiles_x), np.arange(tiles_y))
        tx, ty = tx.ravel(), ty.ravel()
        x0, y0 = tx * tile, ty * tile
        band = (x0 >= 20.0) & (x0 + tile <= self.width - 20.0) & (y0 + tile <= self.height)
        keep = band & (rng.random(len(tx)) < 0.7)
        vertical = rng.random(len(tx)) < 0.7
        length = rng.uniform(4.0, 7.0, len(tx))
        thick = np.full(len(tx), 1.5)
        wx = np.where(vertical, thick, length)
        wy = np.where(vertical, length, thick)
        cx = x0 + tile / 2 + rng.uniform(-1, 1, len(tx)) * (tile - wx - 3.0) / 2
        cy = y0 + tile / 2 + rng.uniform(-1, 1, len(tx)) * (tile - wy - 3.0) / 2
        boxes = np.stack([cx - wx / 2, cy - wy / 2, cx + wx / 2, cy + wy / 2], 1)
        # no wall on a control point (objectives: as laid out in reset)
        cols = max(3, int(round(0.5 * self.width / 25.0)) + 1)
        rows = max(1, int(self.height // 25.0))
        ox = 0.25 * self.width + np.arange(cols) * (0.5 * self.width / (cols - 1))
        oy = (np.arange(rows) + 0.5) * (self.height / rows)
        ix = np.clip(np.round((cx - ox[0]) / (ox[1] - ox[0])).astype(np.int64), 0, cols - 1)
        iy = np.clip(np.floor(cy / (self.height / rows)).astype(np.int64), 0, rows - 1)
        gap_x = np.maximum(np.abs(cx - ox[ix]) - wx / 2, 0.0)
        gap_y = np.maximum(np.abs(cy - oy[iy]) - wy / 2, 0.0)
        keep &= np.hypot(gap_x, gap_y) > 3.0  # the middle of a control point stays clear; walls round it are cover
        tile_wall = np.full(tiles_x * tiles_y, -1, np.int32)
        idx = np.flatnonzero(keep)
        tile_wall[idx] = np.arange(len(idx), dtype=np.int32)
        return boxes[idx].astype(np.float32), tile_wall, tiles_x, tiles_y, tile

    @staticmethod
    def _slots(walls: np.ndarray) -> tuple[np.ndarray, ...]:
        """Cover slots 0.9 m off both long faces of every wall, 1.4 m apart; normals point away from the wall."""
        k = len(walls)
        if not k:
            return (np.zeros((0, 2), np.float32), np.zeros((0, 2), np.float32), np.zeros(0, np.int32),
                    np.zeros(1, np.int32))
        w, h = walls[:, 2] - walls[:, 0], walls[:, 3] - walls[:, 1]
        vertical = h > w
        length = np.maximum(w, h)
        per_face = np.maximum(1, ((length - 0.6) // 1.4).astype(np.int64))
        counts = 2 * per_face
        wall_of = np.repeat(np.arange(k), counts)
        start = np.concatenate([[0], np.cumsum(counts)])
        j = np.arange(len(wall_of)) - start[wall_of]
        pf = per_face[wall_of]
        face = j // pf  # 0: low side (left / bottom), 1: high side
        along = (j % pf + 0.5) / pf
        off = 0.9 + 0.3  # outside the grown box
        b = walls[wall_of]
        v = vertical[wall_of]
        x = np.where(v, np.where(face == 0, b[:, 0] - off, b[:, 2] + off), b[:, 0] + along * (b[:, 2] - b[:, 0]))
        y = np.where(v, b[:, 1] + along * (b[:, 3] - b[:, 1]), np.where(face == 0, b[:, 1] - off, b[:, 3] + off))
        sign = np.where(face == 0, -1.0, 1.0)
        nx = np.where(v, sign, 0.0)
        ny = np.where(v, 0.0, sign)
        return (np.stack([x, y], 1).astype(np.float32), np.stack([nx, ny], 1).astype(np.float32),
                wall_of.astype(np.int32), start.astype(np.int32))

    # --- the tick -------------------------------------------------------------------------------------------
    def sense(self, brain: Brain) -> None:
        self._sense(brain)

    def _mind(self, brain: Brain) -> list[Any]:
        return [brain.alive, brain.goal, brain.plan_length, brain.step, brain.action, brain.action_status,
                brain.action_ticks, brain.needs_plan, brain.waiting, brain.cooldown_until]

    def _sense(self, brain: Brain) -> None:
        n, dev, f, t = self.n, self.device, self.field, self.troops
        if not n:
            return
        wp.launch(respawn_soldiers, n, [f, t, self.clock, self.stats, *self._mind(brain)], device=dev)
        wp.launch(count_at_objectives, n, [f, t], device=dev)
        wp.launch(update_objectives, self.obj_cols * self.obj_rows, [f, self.stats, self.clock], device=dev)
        wp.launch(choose_squad_objectives, f.squad_obj.shape[0], [f, self.clock], device=dev)
        wp.launch(grid_keys, n, [f, t, n], device=dev)
        wp.utils.radix_sort_pairs(f.grid_keys, f.grid_ids, n, end_bit=self._key_bits)
        f.cell_start.zero_()
        f.cell_end.zero_()
        wp.launch(grid_ranges, n, [f, n], device=dev)
        wp.launch(roll_aim_counts, n, [t], device=dev)
        args = [f, t, self.clock, *self._layout, self._base_cost, brain.states, brain.priorities, brain.costs,
                brain.enabled, brain.goal]
        self._chunked(sense_soldiers, n, args)
        wp.launch(count_aims, n, [t], device=dev)

    def _chunked(self, kernel: Any, n: int, args: list[Any]) -> None:
        """One launch on a GPU; on the CPU (where a launch is one serial loop) ``threads`` chunks from as many
        threads, which is safe for kernels that write only their own soldiers' rows and use no atomics."""
        if self.device.is_cuda or n < 2048 or self._pool is None:
            wp.launch(kernel, n, [*args, 0], device=self.device)
            return
        k = self.threads
        bounds = [n * j // k for j in range(k + 1)]
        jobs = [self._pool.submit(wp.launch, kernel, bounds[j + 1] - bounds[j], [*args, bounds[j]], device=self.device)
                for j in range(k)]
        for job in jobs:
            job.result()

    def act(self, brain: Brain, dt: float) -> None:
        n, dev, f, t = self.n, self.device, self.field, self.troops
        if n:
            wp.launch(claim_cover, n, [f, t, brain.action], device=dev)
            wp.launch(award_cover, n, [f, t], device=dev)
            wp.launch(act_soldiers, n, [f, t, self.clock, self.stats, brain.action, brain.action_ticks,
                                        brain.action_status], device=dev)
            wp.launch(settle_damage, n, [f, t, self.clock, self.stats, *self._mind(brain)], device=dev)
            wp.launch(settle_attacks, n, [f, t, self.clock, brain.action, brain.action_status], device=dev)
        wp.launch(advance_clock, 1, [self.clock], device=dev)

    def mark_under_fire(self, agents: Any) -> None:
        """Someone shot at these soldiers just now: they sense ``under_fire`` next tick (a script's or test's
        hook; one launch, not a per-tick call)."""
        rows = np.atleast_1d(np.asarray(agents, dtype=np.int64))
        if len(rows) and (rows.min() < 0 or rows.max() >= self.n):
            raise ValueError(f"agents must be in 0..{self.n - 1}")
        if len(rows):
            wp.launch(mark_shot_at, len(rows), [wp.array(rows.astype(np.int32), dtype=wp.int32, device=self.device),
                                                self.troops, self.clock], device=self.device)

    # --- what the viewer and the tests read (host numpy; zero-copy on the CPU) ------------------------------
    @property
    def positions(self) -> np.ndarray:
        return self.troops.pos.numpy()[: self.n]

    @property
    def team(self) -> np.ndarray:
        return self.troops.team.numpy()[: self.n].astype(np.int8)

    @property
    def alive(self) -> np.ndarray:
        return self.troops.alive.numpy()[: self.n] != 0

    @property
    def target(self) -> np.ndarray:
        return self.troops.target.numpy()[: self.n]

    @property
    def obstacles(self) -> np.ndarray:
        k = int((self.field.tile_wall.numpy() >= 0).sum())
        return self.field.walls.numpy()[:k]

    @property
    def sites(self) -> dict[str, np.ndarray]:
        """Named points: ``cover`` [S, 2] slots; ``objective`` [O, 2]; ``medbay`` / ``armory`` / ``base``
        [2, k, 2] per team (base: the middle of the team's back line)."""
        k = int(self.field.wall_slots.numpy()[-1])
        sp = self.site_spacing
        med_y = sp * 0.5 + np.arange(self.n_medbays) * 2 * sp
        arm_y = sp * 1.5 + np.arange(self.n_armories) * 2 * sp
        xs = (5.0, self.width - 5.0)

        def rooms(ys: np.ndarray) -> np.ndarray:
            return np.stack([np.stack([np.full(len(ys), x), ys], 1) for x in xs]).astype(np.float32)

        base = np.array([[[xs[0], self.height / 2]], [[xs[1], self.height / 2]]], np.float32)
        return {"cover": self.field.slot_pos.numpy()[:k], "objective": self.objectives,
                "medbay": rooms(med_y), "armory": rooms(arm_y), "base": base}

    def objective_owners(self) -> np.ndarray:
        """int32 [O]: the team holding each control point (-1: nobody)."""
        return self.field.obj_owner.numpy().copy()

    def make_view(self) -> Any:
        """The viewer's drawing hooks for this world (`worlds.soldier.view.SoldierView`)."""
        from worlds.soldier.view import SoldierView

        return SoldierView(self)

    # --- measures and snapshots -----------------------------------------------------------------------------
    def score(self) -> dict[str, float]:
        out = {s: float(v) for s, v in zip(STATS, self.stats.numpy(), strict=True)}
        alive, team = self.alive, self.team
        for k in (0, 1):
            out[f"alive_team{k}"] = float((alive & (team == k)).sum())
        owners = self.field.obj_owner.numpy()
        for k in (0, 1):
            out[f"held_team{k}"] = float((owners == k).sum())
        return out

    def get_state(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for name in _TROOP_ARRAYS:
            out[f"troops/{name}"] = getattr(self.troops, name).numpy().copy()
        for name in _FIELD_ARRAYS:
            out[f"field/{name}"] = getattr(self.field, name).numpy().copy()
        out["clock"] = self.clock.numpy().copy()
        out["stats"] = self.stats.numpy().copy()
        out["seed"] = np.array([self.seed], np.int64)
        out["size"] = np.array([self.width, self.height], np.float64)
        return out

    def set_state(self, arrays: dict[str, Any]) -> None:
        """Restore what `get_state` returned, into a world reset for the same number of soldiers on a field of the
        same size (the walls and cover slots come from the snapshot, whatever seed this world was laid out with).

        Every array is checked (present, dtype, shape, indices in range) before any is written; ValueError names
        the first bad one.
        """
        where = "soldier world state"

        def get(key: str, npt: Any, tail: tuple[int, ...], rows: int | None) -> np.ndarray:
            if key not in arrays:
                raise ValueError(f"{where}: field '{key}' is missing")
            v = arrays[key]
            if not isinstance(v, np.ndarray):
                raise ValueError(f"{where}: field '{key}' is not an array")
            if v.dtype != np.dtype(npt):
                raise ValueError(f"{where}: field '{key}' has dtype {v.dtype}, expected {np.dtype(npt)}")
            if v.ndim != 1 + len(tail) or tuple(v.shape[1:]) != tail or (rows is not None and v.shape[0] != rows):
                want = ((rows if rows is not None else "K"), *tail)
                raise ValueError(f"{where}: field '{key}' has shape {v.shape}, this world has {want}")
            return v

        got: dict[str, np.ndarray] = {}
        for name, (_dtype, npt, tail) in _TROOP_ARRAYS.items():
            got[f"troops/{name}"] = get(f"troops/{name}", npt, tail, max(1, self.n))
        fixed = ("tile_wall", "obj_owner", "obj_progress", "obj_since", "squad_obj")
        for name, (_dtype, npt, tail) in _FIELD_ARRAYS.items():
            rows = getattr(self.field, name).shape[0] if name in fixed else None
            got[f"field/{name}"] = get(f"field/{name}", npt, tail, rows)
        got["clock"] = get("clock", np.int32, (), 1)
        got["stats"] = get("stats", np.int64, (), len(STATS))
        got["seed"] = get("seed", np.int64, (), 1)
        got["size"] = get("size", np.float64, (), 2)
        if tuple(got["size"]) != (self.width, self.height):
            raise ValueError(f"{where}: field 'size' is {tuple(got['size'])}, this world is {self.width} x "
                             f"{self.height} m")
        k, n_slots = len(got["field/walls"]), len(got["field/slot_pos"])
        for name, rows in (("wall_slots", k + 1), ("wall_free", k), ("slot_normal", n_slots),
                           ("slot_wall", n_slots), ("slot_owner", n_slots)):
            if len(got[f"field/{name}"]) != rows:
                raise ValueError(f"{where}: field 'field/{name}' has {len(got[f'field/{name}'])} rows, the "
                                 f"snapshot's walls and slots need {rows}")
        for name, hi in (("tile_wall", k), ("slot_wall", k), ("slot_owner", self.n), ("troops/target", self.n),
                         ("troops/slot", n_slots)):
            v = got[name if "/" in name else f"field/{name}"]
            if len(v) and (v.min() < -1 or v.max() >= max(1, hi)):
                raise ValueError(f"{where}: field '{name}' holds an index outside -1..{max(1, hi) - 1}")
        for name in _TROOP_ARRAYS:
            getattr(self.troops, name).assign(np.ascontiguousarray(got[f"troops/{name}"]))
        for name, (dtype, _npt, _tail) in _FIELD_ARRAYS.items():
            v = np.ascontiguousarray(got[f"field/{name}"])
            if name in fixed:
                getattr(self.field, name).assign(v)
            else:
                setattr(self.field, name, wp.array(v, dtype=dtype, device=self.device))
        self.field.slot_claim = wp.full(n_slots, 2**31 - 1, dtype=wp.int32, device=self.device)
        self.clock.assign(got["clock"])
        self.stats.assign(got["stats"])
        self.seed = int(arrays["seed"][0])
        self.field.seed = self.seed
        self.troops.damage.zero_()
        self.troops.flushed.zero_()
        self.troops.cand.fill_(-1)

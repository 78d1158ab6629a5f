"""The soldier field as data: the domain's indices, the world's structs, and the map laid out in numpy.

Everything here is fixed once a world is reset: which number is which action, fact or goal (read from
``domain.toml``, never written twice), the two Warp structs the kernels take (`Troops`, one row per soldier;
`Field`, the map and the rules), the tables of arrays that snapshots save (`TROOP_ARRAYS`, `FIELD_ARRAYS`), and
`plan_field`, which lays out walls, cover slots, control points, rooms and the target grid in numpy (vectorised
over tiles: a million soldiers' field takes a moment, not a loop). No kernel lives here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import warp as wp

from goap.domain_file import load_domain

DOMAIN_PATH = Path(__file__).resolve().parent / "domain.toml"
DOMAIN = load_domain(DOMAIN_PATH)
ACTIONS = [a.name for a in DOMAIN.actions]
FACTS = [f.name for f in DOMAIN.facts]
GOALS = [g.name for g in DOMAIN.goals]

#: The world's own measures (`SoldierWorld.score`), one int64 device counter each.
STATS = ("kills_team0", "kills_team1", "points_team0", "points_team1", "shots_fired", "hits", "suppressions",
         "grenades_thrown", "flanks", "melee_hits", "heals", "deaths", "respawns", "captures", "flights")
_STAT = {s: i for i, s in enumerate(STATS)}


def _c(name: str, table: list[str]) -> Any:
    return wp.constant(table.index(name))


# action indices
A_DRAW, A_HOLSTER, A_RELOAD = _c("draw_weapon", ACTIONS), _c("holster_weapon", ACTIONS), _c("reload", ACTIONS)
A_SHOOT, A_SUPPRESS, A_FLANK = _c("shoot", ACTIONS), _c("suppressive_fire", ACTIONS), _c("flank", ACTIONS)
A_GRENADE, A_APPROACH, A_MELEE = _c("throw_grenade", ACTIONS), _c("approach_enemy", ACTIONS), _c("melee", ACTIONS)
A_SEARCH, A_GO_COVER = _c("search_for_enemy", ACTIONS), _c("go_to_cover", ACTIONS)
A_TAKE_COVER, A_LEAVE_COVER = _c("take_cover", ACTIONS), _c("leave_cover", ACTIONS)
A_GO_ARMORY, A_AMMO, A_GRENADES = _c("go_to_armory", ACTIONS), _c("pick_up_ammo", ACTIONS), _c(
    "pick_up_grenades", ACTIONS)
A_GO_MEDBAY, A_MEDKIT, A_HEAL = _c("go_to_medbay", ACTIONS), _c("grab_medkit", ACTIONS), _c("heal", ACTIONS)
A_FLEE, A_ADVANCE, A_GUARD = _c("flee", ACTIONS), _c("advance", ACTIONS), _c("stand_guard", ACTIONS)

# fact indices (rows of the layout table)
F_DRAWN, F_AMMO, F_MAGS, F_GREN = (_c(n, FACTS) for n in ("weapon_drawn", "ammo", "magazines", "grenades"))
F_HEALTH, F_MEDKIT, F_AT, F_IN_COVER = (_c(n, FACTS) for n in ("health", "has_medkit", "at", "in_cover"))
F_UNDER_FIRE, F_E_ALIVE, F_E_VIS = (_c(n, FACTS) for n in ("under_fire", "enemy_alive", "enemy_visible"))
F_E_RANGE, F_E_COVER, F_E_SUPP = (_c(n, FACTS) for n in ("enemy_in_range", "enemy_in_cover", "enemy_suppressed"))
F_ESCAPED, F_SECURED = _c("escaped", FACTS), _c("area_secured", FACTS)

# goal indices
G_ESCAPE, G_STAY, G_COVER = _c("escape", GOALS), _c("stay_alive", GOALS), _c("take_cover", GOALS)
G_KILL, G_READY, G_RESUPPLY = _c("kill_enemy", GOALS), _c("be_ready", GOALS), _c("resupply", GOALS)
G_HOLD = _c("hold_objective", GOALS)

# the values of the ``at`` fact (its labels in the domain file)
_AT = list(DOMAIN.facts[FACTS.index("at")].labels)
AT_OPEN, AT_COVER, AT_ARMORY, AT_MEDBAY, AT_OBJECTIVE = (
    _c(v, _AT) for v in ("open_ground", "cover", "armory", "medbay", "objective"))

# slots of the world's counters (`STATS`)
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
TILE = 10.0  # metres: one wall at most per tile
CELL = 10.0  # metres: the target grid's cells
SITE_SPACING = 20.0  # metres along the back line between a medbay and the next armory
MAX_SIGHT = 80.0  # MAX_RINGS cells of the target grid


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
    """The map: walls by tile, cover slots, control points, squads, the agents' grid, and the rules' numbers.

    Passed by value to every kernel: a launch (and a captured graph) holds the rules' values and the arrays'
    addresses as they were, so the world makes a new `Field` whenever one of them changes (`SoldierWorld.graph_key`).
    """

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
    # rules (`RULES`: the world's attributes of the same names)
    speed: float
    sight: float
    melee_range: float
    grenade_range: float
    site_radius: float
    objective_radius: float
    under_fire_ticks: int
    respawn_ticks: int
    move_timeout: int
    guard_ticks: int
    suppress_ticks: int
    capture_ticks: int
    hold_ticks: int
    seed: int


#: The rules of the fight: attributes of `SoldierWorld` and members of `Field` of the same names (floats, then ints).
RULES = ("speed", "sight", "melee_range", "grenade_range", "site_radius", "objective_radius", "under_fire_ticks",
         "respawn_ticks", "move_timeout", "guard_ticks", "suppress_ticks", "capture_ticks", "hold_ticks")
FLOAT_RULES = RULES[:6]


def check_rules(values: dict[str, Any]) -> None:
    """Raise ValueError naming the first rule out of range (checked at construction and whenever one changes)."""
    for key in FLOAT_RULES:
        value = values[key]
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating) or not (
                np.isfinite(value) and value > 0):
            raise ValueError(f"{key} must be a finite number > 0, got {value!r}")
    if values["sight"] > MAX_SIGHT:
        raise ValueError(f"sight must be at most 80 m (the target search reaches 8 rings of 10 m), got "
                         f"{values['sight']}")
    for key in RULES[len(FLOAT_RULES):]:
        value = values[key]
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"{key} must be an integer >= 1, got {value!r}")


# --- snapshot tables: name -> (Warp dtype, numpy dtype, shape of a row) -----------------------------------------
TROOP_ARRAYS = {
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
#: Troop arrays that hold nothing between ticks (not saved): int32 each.
TROOP_SCRATCH = ("cand", "damage", "flushed", "hit", "killer")
#: Field arrays saved in snapshots: the map (fixed at reset) and what changes during a run.
FIELD_ARRAYS = {
    "tile_wall": (wp.int32, np.int32, ()), "walls": (wp.vec4, np.float32, (4,)),
    "wall_slots": (wp.int32, np.int32, ()), "wall_free": (wp.int32, np.int32, ()),
    "slot_pos": (wp.vec2, np.float32, (2,)), "slot_normal": (wp.vec2, np.float32, (2,)),
    "slot_wall": (wp.int32, np.int32, ()), "slot_owner": (wp.int32, np.int32, ()),
    "obj_owner": (wp.int32, np.int32, ()), "obj_progress": (wp.int32, np.int32, ()),
    "obj_since": (wp.int32, np.int32, ()),
    "squad_obj": (wp.int32, np.int32, ()),
}
#: Field arrays whose length a world of N soldiers on its field fixes (the rest come with a snapshot's walls).
FIELD_FIXED = ("tile_wall", "obj_owner", "obj_progress", "obj_since", "squad_obj")


# --- the map in numpy -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FieldPlan:
    """A field laid out on the host: what `Field` is made from, and what the viewer reads (rooms, objectives)."""

    width: float
    height: float
    tiles_x: int
    tiles_y: int
    tile_wall: np.ndarray  # int32 [tiles]: the wall in each tile, or -1
    walls: np.ndarray  # float32 [K, 4] boxes (x0, y0, x1, y1)
    slots: np.ndarray  # float32 [S, 2]
    normals: np.ndarray  # float32 [S, 2], away from the wall
    slot_wall: np.ndarray  # int32 [S]
    wall_slots: np.ndarray  # int32 [K + 1]
    obj_cols: int
    obj_rows: int
    obj_x0: float
    obj_dx: float
    obj_dy: float
    objectives: np.ndarray  # float32 [O, 2]
    n_medbays: int
    n_armories: int
    cells_x: int
    cells_y: int
    n_squads: int

    @property
    def key_bits(self) -> int:
        """Bits of the target grid's sort keys (team, cell; one more key for the dead)."""
        return max(1, int(2 * self.cells_x * self.cells_y).bit_length())


def field_size(n: int, width: float | None, height: float | None, area_per_agent: float) -> tuple[float, float]:
    """The field for ``n`` soldiers: ``area_per_agent`` m2 each, width clamped to 100..300 m, height >= 100 m."""
    area = max(1, n) * area_per_agent
    w = width or float(np.clip(math.sqrt(area), 100.0, 300.0))
    h = height or float(max(100.0, area / w))
    return float(w), float(h)


def objective_grid(width: float, height: float) -> tuple[int, int, float, float, float]:
    """Control points: (columns, rows, x of the first column, column step, row height): columns across the middle
    half of the field, a row every 25 m."""
    cols = max(3, int(round(0.5 * width / 25.0)) + 1)
    rows = max(1, int(height // 25.0))
    return cols, rows, 0.25 * width, 0.5 * width / (cols - 1), height / rows


def plan_field(width: float, height: float, n: int, squad_size: int, seed: int) -> FieldPlan:
    """Lay out the field for ``n`` soldiers from ``seed`` (the walls are the only random part)."""
    rng = np.random.default_rng(seed)
    walls, tile_wall, tiles_x, tiles_y = _walls(width, height, rng)
    slots, normals, slot_wall, wall_slots = _slots(walls)
    cols, rows, x0, dx, dy = objective_grid(width, height)
    objectives = np.array([[x0 + (o % cols) * dx, (o // cols + 0.5) * dy] for o in range(cols * rows)],
                          np.float32).reshape(-1, 2)
    sp = SITE_SPACING
    return FieldPlan(
        width=width, height=height, tiles_x=tiles_x, tiles_y=tiles_y, tile_wall=tile_wall, walls=walls,
        slots=slots, normals=normals, slot_wall=slot_wall, wall_slots=wall_slots, obj_cols=cols, obj_rows=rows,
        obj_x0=x0, obj_dx=dx, obj_dy=dy, objectives=objectives,
        n_medbays=max(1, int((height - 0.5 * sp) // (2 * sp)) + 1),
        n_armories=max(1, int((height - 1.5 * sp) // (2 * sp)) + 1),
        cells_x=int(math.ceil(width / CELL)), cells_y=int(math.ceil(height / CELL)),
        n_squads=max(1, -(-n // squad_size)),
    )


def room_positions(width: float, height: float, n_medbays: int, n_armories: int) -> dict[str, np.ndarray]:
    """Medbays, armories and bases [2, k, 2] per team: the rooms alternate along each back line, 5 m in."""
    sp = SITE_SPACING
    med_y = sp * 0.5 + np.arange(n_medbays) * 2 * sp
    arm_y = sp * 1.5 + np.arange(n_armories) * 2 * sp
    xs = (5.0, width - 5.0)

    def rooms(ys: np.ndarray) -> np.ndarray:
        return np.stack([np.stack([np.full(len(ys), x), ys], 1) for x in xs]).astype(np.float32)

    base = np.array([[[xs[0], height / 2]], [[xs[1], height / 2]]], np.float32)
    return {"medbay": rooms(med_y), "armory": rooms(arm_y), "base": base}


def _walls(width: float, height: float, rng: np.random.Generator) -> tuple[Any, ...]:
    """One wall in most 10 m tiles of the middle band, inside its tile with a margin (walls never touch), none on a
    control point. Vectorised over tiles: fine for a million soldiers' field."""
    tile = TILE
    tiles_x, tiles_y = int(math.ceil(width / tile)), int(math.ceil(height / tile))
    tx, ty = np.meshgrid(np.arange(tiles_x), np.arange(tiles_y))
    tx, ty = tx.ravel(), ty.ravel()
    x0, y0 = tx * tile, ty * tile
    band = (x0 >= 20.0) & (x0 + tile <= width - 20.0) & (y0 + tile <= height)
    keep = band & (rng.random(len(tx)) < 0.7)
    vertical = rng.random(len(tx)) < 0.7
    length = rng.uniform(4.0, 7.0, len(tx))
    thick = np.full(len(tx), 1.5)
    wx = np.where(vertical, thick, length)
    wy = np.where(vertical, length, thick)
    cx = x0 + tile / 2 + rng.uniform(-1, 1, len(tx)) * (tile - wx - 3.0) / 2
    cy = y0 + tile / 2 + rng.uniform(-1, 1, len(tx)) * (tile - wy - 3.0) / 2
    boxes = np.stack([cx - wx / 2, cy - wy / 2, cx + wx / 2, cy + wy / 2], 1)
    # no wall on a control point
    cols, rows, ox0, odx, ody = objective_grid(width, height)
    ox = ox0 + np.arange(cols) * odx
    oy = (np.arange(rows) + 0.5) * ody
    ix = np.clip(np.round((cx - ox[0]) / (ox[1] - ox[0])).astype(np.int64), 0, cols - 1)
    iy = np.clip(np.floor(cy / ody).astype(np.int64), 0, rows - 1)
    gap_x = np.maximum(np.abs(cx - ox[ix]) - wx / 2, 0.0)
    gap_y = np.maximum(np.abs(cy - oy[iy]) - wy / 2, 0.0)
    keep &= np.hypot(gap_x, gap_y) > 3.0  # the middle of a control point stays clear; walls round it are cover
    tile_wall = np.full(tiles_x * tiles_y, -1, np.int32)
    idx = np.flatnonzero(keep)
    tile_wall[idx] = np.arange(len(idx), dtype=np.int32)
    return boxes[idx].astype(np.float32), tile_wall, tiles_x, tiles_y


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


def make_field(plan: FieldPlan, squad_size: int, seed: int, rules: dict[str, Any], n: int, device: Any) -> Field:
    """The `Field` of ``plan`` on ``device``, its arrays fresh (owners neutral, every slot free)."""

    def arr(x: np.ndarray, dtype: Any) -> Any:
        return wp.array(x, dtype=dtype, device=device)

    walls, wall_slots = plan.walls, plan.wall_slots
    if not len(walls):  # a field without walls keeps one unreachable wall, so no array is empty
        walls, wall_slots = np.full((1, 4), -10.0, np.float32), np.zeros(2, np.int32)
    has_slots = len(plan.slots) > 0
    s_count = max(1, len(plan.slots))
    n_obj = plan.obj_cols * plan.obj_rows
    n_cells = 2 * plan.cells_x * plan.cells_y
    f = Field()
    f.width, f.height, f.tile, f.tiles_x, f.tiles_y = plan.width, plan.height, TILE, plan.tiles_x, plan.tiles_y
    f.tile_wall = arr(plan.tile_wall, wp.int32)
    f.walls = arr(walls, wp.vec4)
    f.wall_slots = arr(wall_slots, wp.int32)
    f.wall_free = arr(np.diff(wall_slots).astype(np.int32), wp.int32)
    f.slot_pos = arr(plan.slots if has_slots else np.zeros((1, 2), np.float32), wp.vec2)
    f.slot_normal = arr(plan.normals if has_slots else np.zeros((1, 2), np.float32), wp.vec2)
    f.slot_wall = arr(plan.slot_wall if has_slots else np.zeros(1, np.int32), wp.int32)
    f.slot_owner = wp.full(s_count, -1, dtype=wp.int32, device=device)
    f.slot_claim = wp.full(s_count, 2**31 - 1, dtype=wp.int32, device=device)
    f.obj_cols, f.obj_rows, f.obj_x0, f.obj_dx, f.obj_dy = (plan.obj_cols, plan.obj_rows, plan.obj_x0, plan.obj_dx,
                                                           plan.obj_dy)
    f.obj_owner = wp.full(n_obj, -1, dtype=wp.int32, device=device)
    f.obj_progress = wp.zeros(n_obj, dtype=wp.int32, device=device)
    f.obj_since = wp.zeros(n_obj, dtype=wp.int32, device=device)
    f.obj_count = wp.zeros(2 * n_obj, dtype=wp.int32, device=device)
    f.squad_size = squad_size
    f.squad_obj = wp.zeros(plan.n_squads, dtype=wp.int32, device=device)
    f.site_spacing, f.n_medbays, f.n_armories = SITE_SPACING, plan.n_medbays, plan.n_armories
    f.cell, f.cells_x, f.cells_y = CELL, plan.cells_x, plan.cells_y
    f.cell_start = wp.zeros(n_cells, dtype=wp.int32, device=device)
    f.cell_end = wp.zeros(n_cells, dtype=wp.int32, device=device)
    f.grid_keys = wp.zeros(max(2, 2 * n), dtype=wp.int32, device=device)
    f.grid_ids = wp.zeros(max(2, 2 * n), dtype=wp.int32, device=device)
    f.seed = seed
    return with_rules(f, rules)


def with_rules(f: Field, rules: dict[str, Any], **arrays: Any) -> Field:
    """A new `Field` with ``f``'s members, the rules' current values and ``arrays`` replaced: a new value (not an
    edit of ``f``), since recorded launches and captured graphs hold ``f`` as it was when they were made."""
    out = Field()
    for name in Field.vars:
        setattr(out, name, getattr(f, name))
    for name in RULES:
        setattr(out, name, float(rules[name]) if name in FLOAT_RULES else int(rules[name]))
    for name, value in arrays.items():
        setattr(out, name, value)
    return out


def make_troops(n: int, device: Any) -> Troops:
    """Zeroed troop arrays for ``n`` soldiers (one row when there are none, so no array is empty)."""
    t = Troops()
    rows = max(1, n)
    for name, (dtype, _np, _shape) in TROOP_ARRAYS.items():
        setattr(t, name, wp.zeros(rows, dtype=dtype, device=device))
    for name in TROOP_SCRATCH:
        setattr(t, name, wp.zeros(rows, dtype=wp.int32, device=device))
    t.cand.fill_(-1)
    t.killer.fill_(2**31 - 1)
    return t

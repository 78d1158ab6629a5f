"""Questions a soldier asks of the field, as ``@wp.func``: walls, sight, movement, rooms and control points, the
target grid.

Shared by the sense and act kernels (`worlds.soldier.sense`, `worlds.soldier.act`), which Warp compiles with
whatever they call from here; nothing here writes a soldier's row but `move_toward` (its own position). Every loop
is bounded: a sight line walks at most 64 tiles, a grid search at most ``MAX_RINGS`` rings of ``MAX_PER_CELL``
soldiers a cell.
"""

# Warp kernels declare dynamic variables as int(0) / float(0.0) (as goap/kernels does): UP018 would break them.
# ruff: noqa: UP018
from __future__ import annotations

import warp as wp

from worlds.soldier.layout import MAX_PER_CELL, MAX_RINGS, WALL_PAD, Field, Troops

wp.set_module_options({"enable_backward": False})


# --- geometry --------------------------------------------------------------------------------------------------
@wp.func
def bin_of(x: float, size: float, n: int) -> int:
    """floor(x / size) clamped to -1..n before it becomes an int: a NaN, infinite or huge coordinate (a game's
    write, a damaged snapshot) gives an index just outside the grid, never a float-to-int overflow that a kernel
    would then use to index memory."""
    v = x / size
    if v > -1.0:
        if v < float(n):
            return int(wp.floor(v))
        return n
    return -1


@wp.func
def within(v: float, lo: float, hi: float) -> float:
    """v clamped to lo..hi, NaN to lo: a float made safe to round to an index."""
    if v > lo:
        return wp.min(v, hi)
    return lo


@wp.func
def hash01(i: int, salt: int) -> float:
    """A fixed number in [0, 1) per agent and salt (a soldier's own spot in a room, its sliding side)."""
    s = wp.rand_init(salt, i)
    return wp.randf(s)


@wp.func
def wall_at(f: Field, p: wp.vec2, pad: float) -> int:
    """The wall whose box (grown by ``pad``) contains p, or -1. Walls stay inside their tile: one lookup."""
    tx = bin_of(p[0], f.tile, f.tiles_x)
    ty = bin_of(p[1], f.tile, f.tiles_y)
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
    tx = bin_of(p[0], f.tile, f.tiles_x)
    ty = bin_of(p[1], f.tile, f.tiles_y)
    ex = bin_of(q[0], f.tile, f.tiles_x)
    ey = bin_of(q[1], f.tile, f.tiles_y)
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
    k = int(wp.round(within((y - first) / (2.0 * f.site_spacing), 0.0, float(count))))
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
    col = wp.clamp(int(wp.round(within((p[0] - f.obj_x0) / f.obj_dx, 0.0, float(f.obj_cols)))), 0, f.obj_cols - 1)
    row = wp.clamp(bin_of(p[1], f.obj_dy, f.obj_rows), 0, f.obj_rows - 1)
    return row * f.obj_cols + col


@wp.func
def squad_of(f: Field, i: int) -> int:
    return i / f.squad_size


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
    cx = wp.clamp(bin_of(p[0], f.cell, f.cells_x), 0, f.cells_x - 1)
    cy = wp.clamp(bin_of(p[1], f.cell, f.cells_y), 0, f.cells_y - 1)
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
    cx = wp.clamp(bin_of(p[0], f.cell, f.cells_x), 0, f.cells_x - 1)
    cy = wp.clamp(bin_of(p[1], f.cell, f.cells_y), 0, f.cells_y - 1)
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


@wp.func
def free_wall_around(f: Field, tx: int, ty: int, k: int) -> int:
    """The wall in the k-th of the 3x3 tiles around tile (tx, ty) (row by row, from the lower left) if it has a free
    cover slot, else -1."""
    x = tx + k % 3 - 1
    y = ty + k / 3 - 1
    if x < 0 or y < 0 or x >= f.tiles_x or y >= f.tiles_y:
        return -1
    w = f.tile_wall[y * f.tiles_x + x]
    if w < 0 or f.wall_free[w] <= 0:
        return -1
    return w


@wp.func
def nearest_free_cover(f: Field, t: Troops, i: int) -> wp.vec2:
    """(distance to the nearest wall with a free slot within one tile, its wall) over the 3x3 tiles around i."""
    p = t.pos[i]
    tx = bin_of(p[0], f.tile, f.tiles_x)
    ty = bin_of(p[1], f.tile, f.tiles_y)
    best = float(1.0e9)
    best_w = float(-1.0)
    for k in range(9):
        w = free_wall_around(f, tx, ty, k)
        if w < 0:
            continue
        b = f.walls[w]
        c = wp.vec2(0.5 * (b[0] + b[2]), 0.5 * (b[1] + b[3]))
        d = wp.length(c - p)
        if d < best:
            best = d
            best_w = float(w)
    return wp.vec2(best, best_w)

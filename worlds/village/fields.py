"""Nearest-site fields by jump flooding: for each cell of the coarse field grid, the nearest site of one kind.

A rebuild seeds each field cell with one site of the kind (the lowest index among those in the cell), floods
the grid in passes of halving jumps and then one more pass of jump 1 (which mends cells that plain jump flooding
gets wrong), and stores the result as one row of a ``[K, cells]`` field (-1 where the kind has no site).

The kind to rebuild is read on the device (``kind[0]``, -1: none), never passed as a launch argument: the per-tick
rebuild is the same launches every tick, doing nothing on ticks where no field is due, so that a captured graph
replays the world's schedule (`worlds.village.act.act_clock` writes the kind).
"""

# Warp kernels declare dynamic variables as int(0) / float(0.0); UP018 would turn them into constants.
# ruff: noqa: UP018

from __future__ import annotations

import warp as wp

from goap.launch import Launcher
from worlds.village.geometry import C_BIG, C_RES, Grid, is_free

wp.set_module_options({"enable_backward": False})


@wp.kernel
def seed_field(g: Grid, kind: wp.array(dtype=wp.int32), only_free: int, seed: wp.array(dtype=wp.int32)):
    """Each field cell starts from the lowest site of the kind in it (free ones only, with ``only_free``)."""
    k = kind[0]
    if k < 0:
        return
    c = wp.tid()
    b = k * g.gw * g.gh + c
    best = int(C_BIG)
    for s in range(g.bucket[b], g.bucket[b + 1]):  # the kind's sites in this cell, by index
        if only_free == 0 or is_free(g, s):
            best = s
            break
    seed[c] = best


@wp.kernel
def flood_field(
    gw: int, gh: int, site_pos: wp.array(dtype=wp.vec2), kind: wp.array(dtype=wp.int32), src: wp.array(dtype=wp.int32),
    dst: wp.array(dtype=wp.int32), jump: int,
):
    """One jump-flooding pass: each cell keeps the nearest of its own site and its 8 neighbours' at ``jump``.

    Takes the grid's sizes and the sites' positions rather than the whole `Grid`: a pass is a few nanoseconds a
    cell, and on the CPU a larger argument list costs more per cell than the pass itself saves.
    """
    if kind[0] < 0:
        return
    c = wp.tid()
    cx = c % gw
    cy = c / gw
    centre = wp.vec2((float(cx) + 0.5) * C_RES, (float(cy) + 0.5) * C_RES)
    best = src[c]
    best_d = float(1.0e30)
    if best != C_BIG:
        best_d = wp.length_sq(site_pos[best] - centre)
    for dy in range(-1, 2):
        for dx in range(-1, 2):
            x = cx + dx * jump
            y = cy + dy * jump
            if x >= 0 and x < gw and y >= 0 and y < gh and (dx != 0 or dy != 0):
                s = src[y * gw + x]
                if s != C_BIG:
                    d = wp.length_sq(site_pos[s] - centre)
                    if d < best_d or (d == best_d and s < best):
                        best_d = d
                        best = s
    dst[c] = best


@wp.kernel
def store_field(kind: wp.array(dtype=wp.int32), src: wp.array(dtype=wp.int32), out: wp.array2d(dtype=wp.int32)):
    """The flooded cells into the kind's row of ``out`` (-1 where the kind has no site)."""
    k = kind[0]
    if k < 0:
        return
    c = wp.tid()
    s = src[c]
    if s == C_BIG:
        s = -1
    out[k, c] = s


class FieldFlood:
    """The launches that rebuild one kind's field over a map, with their scratch (made once per map).

    Args:
        grid: the map's `Grid` (its sites sorted by kind and field cell, ``bucket`` their ranges).
        device: the Warp device.
    """

    def __init__(self, grid: Grid, device: str):
        self.grid = grid
        self.n_cells = grid.gw * grid.gh
        a = wp.empty(self.n_cells, dtype=wp.int32, device=device)
        b = wp.empty(self.n_cells, dtype=wp.int32, device=device)
        self.seeds = a
        jump = 1 << max(0, (max(grid.gw, grid.gh) - 1).bit_length() - 1)
        jumps = []
        while jump >= 1:
            jumps.append(jump)
            jump //= 2
        self.passes = []
        for j in [*jumps, 1]:
            self.passes.append((a, b, j))
            a, b = b, a
        self.result = a

    def launch(self, launcher: Launcher, kind: wp.array, out: wp.array, only_free: bool) -> None:
        """Rebuild row ``kind[0]`` of ``out`` (nothing when it is -1)."""
        g, n = self.grid, self.n_cells
        launcher.launch(seed_field, n, [g, kind, int(only_free), self.seeds])
        for src, dst, j in self.passes:
            launcher.launch(flood_field, n, [g.gw, g.gh, g.site_pos, kind, src, dst, j])
        launcher.launch(store_field, n, [kind, self.result, out])

"""Nearest-site fields by jump flooding: for each cell of the coarse field grid, the nearest site of one kind.

A rebuild seeds each field cell with one site of the kind (the lowest index among those in the cell), floods
the grid in passes of halving jumps and then one more pass of jump 1 (which mends most cells that plain jump
flooding gets wrong), and stores the result as one row of a ``[K, cells]`` field (-1 where the kind has no site).

The kind to rebuild is read on the device (``kind[0]``, -1: none), never passed as a launch argument: the per-tick
rebuild is the same launches every tick, doing nothing on ticks where no field is due, so that a captured graph
replays the world's schedule (`worlds.village.act.act_clock` writes the kind).
"""

# Warp kernels declare dynamic variables as int(0) / float(0.0); UP018 would turn them into constants.
# ruff: noqa: UP018

from __future__ import annotations

import numpy as np
import warp as wp

from goap.launch import Launcher
from worlds.village.geometry import C_BIG, C_RES, Grid, cell_of, is_free

wp.set_module_options({"enable_backward": False})


@wp.kernel
def clear_field(kind: wp.array(dtype=wp.int32), a: wp.array(dtype=wp.int32)):
    if kind[0] < 0:
        return
    a[wp.tid()] = C_BIG


@wp.kernel
def seed_field(
    g: Grid, kind_first: wp.array(dtype=wp.int32), kind: wp.array(dtype=wp.int32), only_free: int,
    seed: wp.array(dtype=wp.int32),
):
    """Each field cell holding sites of the kind (free ones only, with ``only_free``) gets the lowest of them."""
    k = kind[0]
    if k < 0:
        return
    s = kind_first[k] + wp.tid()
    if s >= kind_first[k + 1]:
        return
    if only_free != 0 and not is_free(g, s):
        return
    wp.atomic_min(seed, cell_of(g, g.site_pos[s]), s)


@wp.kernel
def flood_field(
    g: Grid, kind: wp.array(dtype=wp.int32), src: wp.array(dtype=wp.int32), dst: wp.array(dtype=wp.int32), jump: int,
):
    """One jump-flooding pass: each cell keeps the nearest of its own site and its 8 neighbours' at ``jump``."""
    if kind[0] < 0:
        return
    c = wp.tid()
    gw = g.gw
    gh = g.gh
    cx = c % gw
    cy = c / gw
    centre = wp.vec2((float(cx) + 0.5) * C_RES, (float(cy) + 0.5) * C_RES)
    best = src[c]
    best_d = float(1.0e30)
    if best != C_BIG:
        best_d = wp.length_sq(g.site_pos[best] - centre)
    for dy in range(-1, 2):
        for dx in range(-1, 2):
            x = cx + dx * jump
            y = cy + dy * jump
            if x >= 0 and x < gw and y >= 0 and y < gh and (dx != 0 or dy != 0):
                s = src[y * gw + x]
                if s != C_BIG:
                    d = wp.length_sq(g.site_pos[s] - centre)
                    if d < best_d or (d == best_d and s < best):
                        best_d = d
                        best = s
    dst[c] = best


@wp.kernel
def store_field(kind: wp.array(dtype=wp.int32), src: wp.array(dtype=wp.int32), out: wp.array2d(dtype=wp.int32)):
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
        grid: the map's `Grid`.
        kind_first: int [K + 1] (host): the first site of each kind (sites are sorted by kind).
        device: the Warp device.
    """

    def __init__(self, grid: Grid, kind_first: np.ndarray, device: str):
        self.grid = grid
        self.n_cells = grid.gw * grid.gh
        self.counts = np.diff(kind_first).astype(np.int64)
        self.kind_first = wp.array(np.asarray(kind_first, np.int32), dtype=wp.int32, device=device)
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

    def launch(self, launcher: Launcher, kind: wp.array, out: wp.array, only_free: bool, sites: int) -> None:
        """Rebuild row ``kind[0]`` of ``out`` (nothing when it is -1); ``sites``: the launch size of the seeding,
        at least the number of sites of that kind."""
        g, n = self.grid, self.n_cells
        launcher.launch(clear_field, n, [kind, self.seeds])
        launcher.launch(seed_field, sites, [g, self.kind_first, kind, int(only_free), self.seeds])
        for src, dst, j in self.passes:
            launcher.launch(flood_field, n, [g, kind, src, dst, j])
        launcher.launch(store_field, n, [kind, self.result, out])


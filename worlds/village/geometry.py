"""The Warp side of the village's tables: the structs its kernels take, their constants, the shared geometry.

Every world kernel takes the brain's agents as one `goap.kernels.agents.Agents` and the world's own arrays as the
structs below, so that a kernel's parameters say which tables it reads rather than listing two dozen arrays:

- `goap.kernels.semantics.Layout` (the engine's): where each fact lives in a packed state row
  (``get_fact(agents.states, i, layout, F_HUNGER)``);
- `Grid`: the sites and the nearest-site fields over the coarse field grid;
- `Acts`: per action, what the world does for it (the place walked to, the site kind worked at, ticks of work);
- `Villagers`: the world's per-agent arrays (position, home, trade, timers, the action being carried out, its site).

The ``@wp.func`` geometry (``cell_of``, ``nearest_free``, ...) is shared by the sense, act and field kernels. This
module defines no kernel: the kernels live in `worlds.village.sense`, `worlds.village.act` and
`worlds.village.fields`, one Warp module each.
"""

# Warp kernels declare dynamic variables as int(0) / float(0.0); UP018 would turn them into constants.
# ruff: noqa: UP018

from __future__ import annotations

from typing import Any

import numpy as np
import warp as wp

from goap.kernels import init_warp
from goap.kernels.semantics import Layout, read_field, write_field
from worlds.village.layout import (
    BIG,
    BUSH,
    COST_EVERY,
    FACT_NAMES,
    GOAL_NAMES,
    HOUSE,
    HYSTERESIS,
    MAX_PER_CELL,
    MAX_SEARCH,
    MAX_WAIT,
    N_KINDS,
    NO_SITE_COST,
    PLACE_KIND,
    PLACES,
    RES,
    SEARCH,
    SPREAD,
    TALLIES,
    TALLY,
    TIMERS,
    TOOL_P,
    TRADE_COST,
    TRADES,
    TREE,
    WALK_RINGS,
    WORK,
    WORK_RADIUS,
)

init_warp()
wp.set_module_options({"enable_backward": False})


def _fact(name: str) -> Any:
    return wp.constant(FACT_NAMES.index(name))


F_AT, F_HUNGER, F_FATIGUE = _fact("at"), _fact("hunger"), _fact("fatigue")
F_STOCK_WOOD, F_STOCK_FOOD, F_FIRE = _fact("stock_wood"), _fact("stock_food"), _fact("fire_lit")
F_TAX, F_TOOLS, F_COINS = _fact("tax_paid"), _fact("tools_made"), _fact("coins")
F_HOUSE, F_MARKET, F_BERRIES = _fact("house_repaired"), _fact("market_open"), _fact("berries")
F_FOOD, F_WOOD, F_ROD = _fact("food"), _fact("wood"), _fact("has_rod")
F_PICK, F_HOE = _fact("has_pickaxe"), _fact("has_hoe")
F_IRON = _fact("iron")
G_EAT, G_REST, G_TAX, G_FORGE, G_PICK, G_HOE = (
    wp.constant(GOAL_NAMES.index(g)) for g in ("eat", "rest", "pay_taxes", "forge_tool", "get_pickaxe", "get_hoe")
)
K_HOUSE, K_TREE, K_BUSH = (wp.constant(k) for k in (HOUSE, TREE, BUSH))
C_BIG = wp.constant(BIG)
C_RES = wp.constant(float(RES))
C_SEARCH = wp.constant(SEARCH)
C_SPREAD = wp.constant(SPREAD)
C_WALK_RINGS = wp.constant(WALK_RINGS)
C_WORK_RINGS = wp.constant(int(np.ceil(WORK_RADIUS / RES)) + 1)
C_MAX_PER_CELL = wp.constant(MAX_PER_CELL)
C_MAX_WAIT = wp.constant(MAX_WAIT)
C_MAX_SEARCH = wp.constant(MAX_SEARCH)
C_WORK_RADIUS = wp.constant(WORK_RADIUS)
C_NO_SITE_COST = wp.constant(NO_SITE_COST)
C_HYSTERESIS = wp.constant(HYSTERESIS)
C_TOOL_P = wp.constant(TOOL_P)
C_COST_EVERY = wp.constant(COST_EVERY)
T_TAKEN, T_WAITED, T_NO_SITE = (wp.constant(TALLIES.index(t)) for t in ("actions_taken", "actions_waited",
                                                                           "actions_failed_no_site"))
#: Slots of the world's per-tick values (``now``, int32, written on the device from the clock at the start of sense):
#: which timers fire (one slot per timer), the tick's random seed, whether the market is open.
NOW_SEED = wp.constant(len(TIMERS))
NOW_MARKET = wp.constant(len(TIMERS) + 1)
N_NOW = len(TIMERS) + 2


@wp.struct
class Grid:
    """The nearest-site fields and the sites bucketed by (kind, field cell)."""

    gw: int
    gh: int
    field: wp.array2d(dtype=wp.int32)  # [K, cells] nearest available site of each kind, -1: none
    nearest: wp.array2d(dtype=wp.int32)  # [K, cells] nearest site of each kind
    bucket: wp.array(dtype=wp.int32)  # [K * cells + 1] first site of (kind, cell); sites are sorted so
    site_pos: wp.array(dtype=wp.vec2)
    site_kind: wp.array(dtype=wp.int32)
    site_max: wp.array(dtype=wp.int32)
    site_stock: wp.array(dtype=wp.int32)
    site_owner: wp.array(dtype=wp.int32)


@wp.struct
class Acts:
    """Per action: the place a walk goes to, the site kind work needs, stock, reservation, work ticks, tallies."""

    move_place: wp.array(dtype=wp.int32)
    kind: wp.array(dtype=wp.int32)
    stocked: wp.array(dtype=wp.int32)
    claims: wp.array(dtype=wp.int32)
    work_ticks: wp.array(dtype=wp.int32)
    tally: wp.array(dtype=wp.int32)
    tally_amount: wp.array(dtype=wp.int32)
    base_cost: wp.array(dtype=wp.float32)
    trade_cost: wp.array2d(dtype=wp.float32)  # [A, trades] cost factor of each action for each trade
    moves: wp.array(dtype=wp.int32)  # the go_* actions
    gathers: wp.array(dtype=wp.int32)  # the actions that take stock from a site
    place_kind: wp.array(dtype=wp.int32)  # per place
    place_of_kind: wp.array(dtype=wp.int32)  # per kind


@wp.struct
class Villagers:
    """The world's per-agent arrays, one row per agent (the brain's are `goap.kernels.agents.Agents`)."""

    positions: wp.array(dtype=wp.vec2)
    home: wp.array(dtype=wp.int32)  # the agent's house (a site)
    trade: wp.array(dtype=wp.int32)  # index into TRADES
    phase: wp.array2d(dtype=wp.int32)  # [N, timers] when each of the agent's timers fires
    base_priority: wp.array2d(dtype=wp.float32)  # [N, G] the goals' priorities for this person
    cur_action: wp.array(dtype=wp.int32)  # the action the world is carrying out (-1: none)
    target: wp.array(dtype=wp.int32)  # the site it walks to (-1: none)
    claim: wp.array(dtype=wp.int32)  # the site it has reserved (-1: none)
    progress: wp.array(dtype=wp.int32)  # ticks of work done at the site
    waited: wp.array(dtype=wp.int32)  # ticks waited for a free site
    searched: wp.array(dtype=wp.int32)  # ticks spent heading for a site while looking for a free one
    want: wp.array(dtype=wp.int32)  # the kind it still has to reserve this tick (-1: none, -2 - kind: none free)
    choice: wp.array(dtype=wp.int32)  # the site it bids for in this round of reservations
    found_any: wp.array(dtype=wp.int32)  # 0: no site of the wanted kind is available anywhere


def make_acts(action_names: list[str], base_cost: np.ndarray, device: str) -> Acts:
    """`Acts` from the tables of `worlds.village.layout` (WORK, TALLY, TRADE_COST, PLACE_KIND) and the domain's
    action costs, in the domain's action order."""
    A = len(action_names)
    move_place = np.full(A, -1, np.int32)
    kind = np.full(A, -1, np.int32)
    stocked = np.zeros(A, np.int32)
    claims = np.zeros(A, np.int32)
    work_ticks = np.ones(A, np.int32)
    tally = np.full(A, -1, np.int32)
    amount = np.zeros(A, np.int32)
    for a, name in enumerate(action_names):
        if name.startswith("go_"):
            move_place[a] = PLACES.index(name[3:])
        else:
            kind[a], stocked[a], claims[a], work_ticks[a] = WORK[name]
        if name in TALLY:
            tally[a], amount[a] = TALLIES.index(TALLY[name][0]), TALLY[name][1]
    place_kind = np.array([PLACE_KIND[p] for p in PLACES], np.int32)
    place_of_kind = np.full(N_KINDS, -1, np.int32)
    for p, k in enumerate(place_kind):
        place_of_kind[k] = p
    place_of_kind[BUSH] = PLACES.index("forest")
    ac = Acts()
    for name, value in (("move_place", move_place), ("kind", kind), ("stocked", stocked), ("claims", claims),
                        ("work_ticks", work_ticks), ("tally", tally), ("tally_amount", amount),
                        ("place_kind", place_kind), ("place_of_kind", place_of_kind)):
        setattr(ac, name, wp.array(value, dtype=wp.int32, device=device))
    ac.base_cost = wp.array(np.asarray(base_cost, np.float32), dtype=wp.float32, device=device)
    factor = np.ones((A, len(TRADES)), np.float32)
    for a, name in enumerate(action_names):
        if name in TRADE_COST:
            factor[a] = TRADE_COST[name]
    ac.trade_cost = wp.array(factor, dtype=wp.float32, device=device)
    ac.moves = wp.array(np.flatnonzero(move_place >= 0).astype(np.int32), dtype=wp.int32, device=device)
    ac.gathers = wp.array(np.flatnonzero(stocked != 0).astype(np.int32), dtype=wp.int32, device=device)
    return ac


@wp.func
def get_fact(states: wp.array2d(dtype=wp.uint64), i: int, lay: Layout, f: int) -> int:
    """Fact ``f`` of agent ``i`` (its value, not its encoding)."""
    return wp.int32(read_field(states, i, lay.word[f], lay.shift[f], lay.mask[f])) + wp.int32(lay.min[f])


@wp.func
def set_fact(states: wp.array2d(dtype=wp.uint64), i: int, lay: Layout, f: int, v: int):
    write_field(states, i, lay.word[f], lay.shift[f], lay.mask[f], wp.uint64(v - wp.int32(lay.min[f])))


@wp.func
def tick_seed(seed: int, tick: wp.int64, salt: int) -> int:
    """The random seed of one use (``salt``) in one tick: a 31-bit mix of the world's seed and the tick."""
    x = wp.int64(seed) * wp.int64(1000003) + tick * wp.int64(7919) + wp.int64(salt) * wp.int64(104729)
    return wp.int32(x & wp.int64(0x7FFFFFFF))


@wp.func
def grid_coord(x: float, n: int) -> int:
    """The grid column (or row) of coordinate x, in 0..n-1: a NaN or huge x is clamped while still a float, so no
    float-to-int overflow (undefined) ever reaches an index."""
    if x > 0.0:
        return wp.min(int(wp.min(x / C_RES, float(n - 1))), n - 1)
    return 0


@wp.func
def cell_of(g: Grid, p: wp.vec2) -> int:
    cx = grid_coord(p[0], g.gw)
    cy = grid_coord(p[1], g.gh)
    return cy * g.gw + cx


@wp.func
def is_free(g: Grid, s: int) -> bool:
    return g.site_owner[s] < 0 and (g.site_max[s] == 0 or g.site_stock[s] > 0)


@wp.func
def jitter(i: int) -> wp.vec2:
    """A fixed small offset per agent, so that people at one stall do not stand on one pixel."""
    h = wp.rand_init(7919, i)
    return wp.vec2(wp.randf(h, -0.45, 0.45), wp.randf(h, -0.45, 0.45))


@wp.func
def release(g: Grid, v: Villagers, i: int):
    """Agent ``i`` gives up the site it has reserved, if any."""
    s = v.claim[i]
    if s >= 0:
        if g.site_owner[s] == i:
            g.site_owner[s] = -1
        v.claim[i] = -1


@wp.func
def ring_cell(r: int, t: int) -> wp.vec2i:
    """The t-th field cell (0 <= t < 8r) on the square ring at distance r around the origin; (0, 0) for r = 0."""
    if r == 0:
        return wp.vec2i(0, 0)
    side = t / (2 * r)
    o = t % (2 * r)
    if side == 0:
        return wp.vec2i(-r + o, -r)
    if side == 1:
        return wp.vec2i(r, -r + o)
    if side == 2:
        return wp.vec2i(r - o, r)
    return wp.vec2i(-r, r - o)


@wp.func
def nearest_free(g: Grid, k: int, centre: int, p: wp.vec2, rings: int, agent: int) -> int:
    """The nearest free site of kind k to p, searching rings of field cells around ``centre`` (-1: none).

    Rings stop one ring after the first hit (a site in the next ring can still be nearer), and after ``rings``.
    """
    cx = centre % g.gw
    cy = centre / g.gw
    n_cells = g.gw * g.gh
    best = int(-1)
    best_d = float(1.0e30)
    last = rings
    for r in range(rings + 1):
        if r <= last:
            n = wp.max(1, 8 * r)
            for t in range(n):
                o = ring_cell(r, t)
                x = cx + o[0]
                y = cy + o[1]
                if x >= 0 and x < g.gw and y >= 0 and y < g.gh:
                    c = k * n_cells + y * g.gw + x
                    lo = g.bucket[c]
                    hi = wp.min(g.bucket[c + 1], lo + C_MAX_PER_CELL)
                    for s in range(lo, hi):
                        if is_free(g, s):
                            # a little noise per (agent, site): neighbours spread over nearby sites instead of
                            # all bidding for the same one
                            d = wp.length(g.site_pos[s] - p) + C_SPREAD * wp.randf(wp.rand_init(agent, s))
                            if d < best_d:
                                best_d = d
                                best = s
            if best >= 0 and last == rings:
                last = r + 1
    return best

"""The village's map and tables: site kinds, trades, work, tallies, tuning constants, and the map laid out in numpy.

Nothing here imports Warp: the map is made once per reset on the host (vectorised numpy per village tile, a
million agents in a few seconds) and copied to the device by `worlds.village.world.VillageWorld.reset`. The Warp
side of these tables (structs, constants, geometry functions) is `worlds.village.geometry`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from goap.domain_file import load_domain

DOMAIN_PATH = Path(__file__).with_name("domain.toml")
DOMAIN = load_domain(DOMAIN_PATH)

GRASS, WATER, FOREST, ROCK, FIELD = range(5)
TERRAIN_NAMES = ("grass", "water", "forest", "rock", "field")

# Site kinds.
KINDS = ("house", "tree", "bush", "rock", "plot", "spot", "stockpile", "anvil", "stall")
HOUSE, TREE, BUSH, ROCK_SITE, PLOT, SPOT, STOCKPILE, ANVIL, STALL = range(len(KINDS))
N_KINDS = len(KINDS)
#: The kind a ``go_<place>`` walks to when the next step does not say otherwise.
PLACE_KIND = {
    "home": HOUSE,
    "forest": TREE,
    "mine": ROCK_SITE,
    "field": PLOT,
    "river": SPOT,
    "stockpile": STOCKPILE,
    "smithy": ANVIL,
    "market": STALL,
}
STOCKED = (TREE, BUSH, ROCK_SITE, SPOT)
#: Kinds whose availability changes during a run (stock or reservations): their fields are refreshed.
DYNAMIC = (TREE, BUSH, ROCK_SITE, SPOT, PLOT, ANVIL)
#: The order in which their fields are rebuilt, one a tick: trees and bushes change fastest.
FIELD_SCHEDULE = (TREE, BUSH, ANVIL, TREE, BUSH, ROCK_SITE, TREE, BUSH, ANVIL, SPOT, TREE, BUSH, PLOT)
MAX_STOCK = {TREE: 4, BUSH: 3, ROCK_SITE: 5, SPOT: 3}
#: Chance per site and tick of +1 stock.
REGROW_P = {TREE: 0.02, BUSH: 0.017, ROCK_SITE: 0.01, SPOT: 0.017}

#: Trades: each villager has one (share of the people); a trade's own work is cheap for its people, the others'
#: work dear, so that every branch of the economy has its workers.
TRADES = ("woodcutter", "forager", "farmer", "fisher", "smith")
TRADE_SHARE = (0.25, 0.25, 0.2, 0.15, 0.15)
#: action -> cost factor per trade (woodcutter, forager, farmer, fisher, smith); other actions: 1.
TRADE_COST = {
    "chop_wood": (0.5, 1.5, 1.5, 1.5, 1.5),
    "saw_planks": (0.5, 1.5, 1.5, 1.5, 1.5),
    "gather_berries": (3.0, 0.5, 3.0, 3.0, 3.0),
    "plant_seeds": (3.0, 3.0, 0.5, 3.0, 3.0),
    "water_crops": (3.0, 3.0, 0.5, 3.0, 3.0),
    "harvest": (3.0, 3.0, 0.5, 3.0, 3.0),
    "fill_bucket": (3.0, 3.0, 0.5, 3.0, 3.0),
    "catch_fish": (3.0, 3.0, 3.0, 0.5, 3.0),
    "cook_fish": (2.0, 2.0, 2.0, 0.5, 2.0),
    "carve_rod": (1.0, 1.0, 1.0, 0.5, 1.0),
    "mine_ore": (3.0, 3.0, 3.0, 3.0, 0.5),
    "smelt_ore": (3.0, 3.0, 3.0, 3.0, 0.5),
    "forge_pickaxe": (2.0, 2.0, 2.0, 2.0, 0.5),
    "forge_hoe": (2.0, 2.0, 2.0, 2.0, 0.5),
    "forge_tool": (2.0, 2.0, 2.0, 2.0, 0.5),
    "buy_iron": (1.0, 1.0, 1.0, 1.0, 3.0),  # a smith smelts its own
}
#: goal -> priority factor per trade (woodcutter, forager, farmer, fisher, smith); other goals: 1.
TRADE_GOALS = {
    "stock_wood": (1.3, 0.8, 0.8, 0.8, 0.8),
    "stock_food": (0.7, 1.3, 1.3, 1.2, 0.7),
    "forge_tool": (0.0, 0.0, 0.0, 0.0, 1.5),
    "get_pickaxe": (0.0, 0.0, 0.0, 0.0, 1.0),
    "get_hoe": (0.0, 0.0, 1.0, 0.0, 0.0),
    "get_rod": (0.0, 0.0, 0.0, 1.0, 0.0),
}
#: Chance that a farmer starts with a hoe, a fisher with a rod, a smith with a pickaxe (others: a tenth of that).
TOOL_P = 0.7

# Work actions: site kind, takes one stock, reserves the site, ticks of work.
WORK = {
    "chop_wood": (TREE, True, True, 15),
    "gather_berries": (BUSH, True, True, 12),
    "mine_ore": (ROCK_SITE, True, True, 18),
    "catch_fish": (SPOT, True, True, 18),
    "fill_bucket": (SPOT, False, False, 6),
    "plant_seeds": (PLOT, False, True, 15),
    "water_crops": (PLOT, False, True, 9),
    "harvest": (PLOT, False, True, 15),
    "smelt_ore": (ANVIL, False, True, 15),
    "forge_pickaxe": (ANVIL, False, True, 15),
    "forge_hoe": (ANVIL, False, True, 15),
    "forge_tool": (ANVIL, False, True, 15),
    "buy_iron": (STALL, False, False, 6),
    "buy_bread": (STALL, False, False, 6),
    "sell_wood": (STALL, False, False, 6),
    "sell_tool": (STALL, False, False, 6),
    "pay_tax": (STALL, False, False, 6),
    "deposit_wood": (STOCKPILE, False, False, 6),
    "deposit_food": (STOCKPILE, False, False, 6),
    "light_fire": (HOUSE, False, False, 9),
    "cook_fish": (HOUSE, False, False, 12),
    "saw_planks": (HOUSE, False, False, 15),
    "repair_house": (HOUSE, False, False, 21),
    "carve_rod": (HOUSE, False, False, 15),
    "sleep": (HOUSE, False, False, 45),
    "eat": (-1, False, False, 9),
}
#: What a finished action adds to the world's tallies (``score()``): tally name, amount.
TALLIES = (
    "wood_produced",
    "food_produced",
    "ore_produced",
    "fish_caught",
    "iron_made",
    "tools_forged",
    "coins_earned",
    "wood_stockpiled",
    "food_stockpiled",
    "actions_taken",
    "actions_waited",
    "actions_failed_no_site",
)
TALLY = {
    "chop_wood": ("wood_produced", 1),
    "gather_berries": ("food_produced", 1),
    "harvest": ("food_produced", 3),
    "cook_fish": ("food_produced", 2),
    "mine_ore": ("ore_produced", 1),
    "catch_fish": ("fish_caught", 1),
    "smelt_ore": ("iron_made", 1),
    "forge_tool": ("tools_forged", 1),
    "forge_pickaxe": ("tools_forged", 1),
    "forge_hoe": ("tools_forged", 1),
    "sell_wood": ("coins_earned", 1),
    "sell_tool": ("coins_earned", 4),
    "deposit_wood": ("wood_stockpiled", 1),
    "deposit_food": ("food_stockpiled", 1),
}

VILLAGE_CELLS = 128  # a village tile is this many cells square
AGENTS_PER_VILLAGE = 2500
MIN_VILLAGE_CELLS = 48
AGENTS_PER_HOUSE = 6
RES = 4  # cells per nearest-site field cell
SPEED = 0.4  # cells per tick (24 a second at 60 ticks a second)
TICKS_PER_COST = 10.0  # walking this many ticks costs the planner 1 (the domain's walking costs are the least)
WORK_RADIUS = 16.0  # a work action walks at most this far to a site it reserves (within one place)
SPREAD = 4.0  # cells of noise in how near a free site looks to each agent
WALK_RINGS = 6  # rings of field cells a walk searches around itself for a free site
SEARCH = 3  # then rings around the nearest available site the field knows of
COST_EVERY = 4  # ticks between refreshes of an agent's walking costs (at once when it is about to plan)
FIELD_EVERY = 2  # ticks between two rebuilds of a nearest-available-site field (one kind at a time), at least
FIELD_CELLS_PER_TICK = 16384  # ... and at most this many field cells rebuilt per tick on average (big maps)
MAX_PER_CELL = 32  # sites of one kind looked at per field cell (a bound on the search loop)
CLAIM_ROUNDS = 3
MAX_WAIT = 12  # ticks an action waits (standing) for a free site before it fails
MAX_SEARCH = 120  # ticks it may head for the nearest available site, looking for a free one on the way
HYSTERESIS = 3.0  # priority bonus of the goal an agent already pursues
NO_SITE_COST = 1000.0
HUNGER_EVERY, FATIGUE_EVERY = 500, 450
VILLAGE_USES_EVERY, FIRE_BURNS_EVERY, TAX_EVERY, TOOL_ORDER_EVERY = 500, 500, 1200, 900
#: The per-agent timers, in the order of the columns of the world's ``phase`` array: a timer of period P fires for
#: an agent on the ticks where (tick + phase) % P == 0.
TIMERS = (HUNGER_EVERY, FATIGUE_EVERY, VILLAGE_USES_EVERY, FIRE_BURNS_EVERY, TAX_EVERY, TOOL_ORDER_EVERY)
STORM_P = 0.0007
DAY = 2160  # ticks; the market closes for the last sixth of each day
BIG = 2147483647

ACTION_NAMES = [a.name for a in DOMAIN.actions]
FACT_NAMES = [f.name for f in DOMAIN.facts]
GOAL_NAMES = [g.name for g in DOMAIN.goals]
PLACES = list(DOMAIN.fact("at").labels)


def _weighted_pick(rng: np.random.Generator, cand: np.ndarray, weight: np.ndarray | None, n: int) -> np.ndarray:
    """n distinct entries of ``cand``, weighted (Efraimidis-Spirakis keys), in a stable order.

    Unlike ``rng.choice(replace=False, p=...)``, this never fails on weights that are tiny or round to zero
    in a large sum (the cause of the old placement crash at about 790,000 agents).
    """
    n = min(n, len(cand))
    if n <= 0:
        return cand[:0]
    u = rng.random(len(cand))
    key = -np.log1p(-u)  # exponential, > 0 for u < 1
    if weight is not None:
        key = key / np.maximum(weight, 1e-12)
    pick = np.argpartition(key, n - 1)[:n] if n < len(cand) else np.arange(len(cand))
    return np.sort(cand[pick])


def village_terrain(rng: np.random.Generator, size: int = VILLAGE_CELLS) -> np.ndarray:
    """One village tile: a river winding north to south west of the centre, fields, rock, forest."""
    t = np.full((size, size), GRASS, dtype=np.uint8)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)

    def blobs(kind: int, n: int, rmin: float, rmax: float, where: tuple[float, float, float, float]) -> None:
        x0, x1, y0, y1 = where
        for _ in range(n):
            cx, cy = rng.uniform(x0 * size, x1 * size), rng.uniform(y0 * size, y1 * size)
            r = rng.uniform(rmin, rmax) * size
            lo_y, hi_y = max(0, int(cy - r) - 1), min(size, int(cy + r) + 2)
            lo_x, hi_x = max(0, int(cx - r) - 1), min(size, int(cx + r) + 2)
            sub = t[lo_y:hi_y, lo_x:hi_x]
            disc = (xx[lo_y:hi_y, lo_x:hi_x] - cx) ** 2 + (yy[lo_y:hi_y, lo_x:hi_x] - cy) ** 2 < r * r
            sub[disc & (sub == GRASS)] = kind

    phase, amp = rng.uniform(0, 2 * np.pi), rng.uniform(0.04, 0.08) * size
    centre = 0.3 * size + amp * np.sin(yy / size * 2 * np.pi * 1.5 + phase)
    t[np.abs(xx - centre) < max(1.5, 0.02 * size)] = WATER
    blobs(FIELD, 7, 0.04, 0.07, (0.45, 0.8, 0.3, 0.7))
    blobs(ROCK, 3, 0.06, 0.1, (0.7, 0.95, 0.1, 0.3))
    blobs(FOREST, 16, 0.06, 0.12, (0.0, 1.0, 0.0, 1.0))
    t[(xx > 0.42 * size) & (xx < 0.78 * size) & (yy > 0.35 * size) & (yy < 0.65 * size) & (t == FOREST)] = GRASS
    t[(xx > 0.62 * size) & (xx < 0.86 * size) & (yy > 0.26 * size) & (yy < 0.42 * size) & (t == FOREST)] = GRASS
    return t


def site_counts(n: int) -> dict[int, int]:
    """How many sites of each kind a village of n people has (enough for everyone, a little to spare)."""
    return {
        HOUSE: max(1, -(-n // AGENTS_PER_HOUSE)),
        STOCKPILE: max(1, n // 400),
        STALL: max(2, n // 80),
        ANVIL: max(2, n // 8),
        PLOT: max(8, n // 5),
        TREE: max(40, 2 * n // 3),
        BUSH: max(40, n // 2),
        ROCK_SITE: max(10, n // 8),
        SPOT: max(20, n // 10),
    }


@dataclass
class VillageMap:
    """A laid-out map: terrain (one code per cell), its tiling, the nearest-site field grid, and the sites.

    ``sites`` holds host arrays: ``site_pos`` float32 [S, 2], ``site_kind``, ``site_max``, ``site_stock``,
    ``site_owner`` int32 [S] (sorted by kind, then field cell), ``bucket`` int32 [K * cells + 1] (the first site of
    each (kind, cell)), ``home`` int32 [N] (each agent's house).
    """

    terrain: np.ndarray
    village_cells: int
    tiles: tuple[int, int]
    width: int
    height: int
    gw: int
    gh: int
    sites: dict[str, np.ndarray]


def lay_out(n_agents: int, seed: int, agents_per_village: int = AGENTS_PER_VILLAGE,
            village_size: int = VILLAGE_CELLS) -> VillageMap:
    """Lay out the villages for ``n_agents`` people: terrain, sites (sorted by kind and field cell), homes.

    As many village tiles as it takes to give each at most ``agents_per_village`` people; a small population gets
    smaller tiles at the same density. Each tile draws from its own generator (``[seed, tile]``), so a tile does
    not depend on how many others there are.
    """
    tiles = max(1, -(-n_agents // agents_per_village))
    tx = int(np.ceil(np.sqrt(tiles)))
    ty = -(-tiles // tx)
    tiles = tx * ty
    # A small village is a smaller tile, at the same density of people and sites as a full one.
    full = village_size
    per = -(-n_agents // tiles)
    side = np.sqrt(per / agents_per_village) * full if n_agents else 0.0
    S = int(min(full, max(MIN_VILLAGE_CELLS, RES * int(np.ceil(side / RES)))))
    width, height = tx * S, ty * S
    rng = np.random.default_rng(seed)
    terrain = np.empty((height, width), dtype=np.uint8)
    yy, xx = np.mgrid[0:S, 0:S].astype(np.float32)
    near_centre = np.exp(-(((xx - 0.6 * S) / (0.15 * S)) ** 2 + ((yy - 0.5 * S) / (0.15 * S)) ** 2)) + 1e-3
    near_mine = np.exp(-(((xx - 0.74 * S) / (0.1 * S)) ** 2 + ((yy - 0.34 * S) / (0.08 * S)) ** 2)) + 1e-9
    per_tile = np.full(tiles, n_agents // tiles, dtype=np.int64)
    per_tile[: n_agents % tiles] += 1
    pos_parts, kind_parts, tile_parts = [], [], []
    for t in range(tiles):
        oy, ox = (t // tx) * S, (t % tx) * S
        tile_rng = np.random.default_rng([seed, t])
        ter = village_terrain(tile_rng, S)
        terrain[oy : oy + S, ox : ox + S] = ter
        free = np.ones(S * S, dtype=bool)
        water = ter == WATER
        bank = water & ~(np.roll(water, 1, 1) & np.roll(water, -1, 1))
        where = {
            HOUSE: ter == GRASS, STOCKPILE: ter == GRASS, STALL: ter == GRASS, ANVIL: ter == GRASS,
            PLOT: ter == FIELD, TREE: ter == FOREST, BUSH: ter == FOREST, ROCK_SITE: ter == ROCK, SPOT: bank,
        }
        counts = site_counts(int(per_tile[t]))
        for k in (STOCKPILE, STALL, ANVIL, HOUSE, PLOT, TREE, BUSH, ROCK_SITE, SPOT):
            cand = np.flatnonzero(where[k].ravel() & free)
            if len(cand) < counts[k] and k == HOUSE:  # everyone needs a home: build on any free land
                cand = np.flatnonzero(free & ~water.ravel())
            weight = None
            if k in (HOUSE, STOCKPILE, STALL):
                weight = near_centre.ravel()[cand]
            elif k == ANVIL:  # the smithy stands by the mine
                weight = near_mine.ravel()[cand]
            pick = _weighted_pick(tile_rng, cand, weight, counts[k])
            free[pick] = False
            pos_parts.append(np.stack([pick % S + ox + 0.5, pick // S + oy + 0.5], axis=1).astype(np.float32))
            kind_parts.append(np.full(len(pick), k, dtype=np.int32))
            tile_parts.append(np.full(len(pick), t, dtype=np.int64))
    pos = np.concatenate(pos_parts)
    kind = np.concatenate(kind_parts)
    tile = np.concatenate(tile_parts)
    # Sort sites by (kind, field cell): the sites of one kind in one field cell are one contiguous range.
    gw, gh = width // RES, height // RES
    cell = (pos[:, 1] // RES).astype(np.int64) * gw + (pos[:, 0] // RES).astype(np.int64)
    order = np.lexsort((cell, kind))
    pos, kind, tile, cell = pos[order], kind[order], tile[order], cell[order]
    n_cells = gw * gh
    bucket = np.searchsorted(kind.astype(np.int64) * n_cells + cell, np.arange(N_KINDS * n_cells + 1))
    site_max = np.zeros(len(pos), dtype=np.int32)
    for k, m in MAX_STOCK.items():
        site_max[kind == k] = m
    stock = rng.integers(1, np.maximum(site_max, 1) + 1).astype(np.int32)
    stock[site_max == 0] = 0
    # Homes: the people of a tile fill its houses in turn.
    houses = np.flatnonzero(kind == HOUSE)
    houses = houses[np.argsort(tile[houses], kind="stable")]  # sites are sorted by cell, not by tile
    house_tile = tile[houses]
    first = np.searchsorted(house_tile, np.arange(tiles))
    n_houses = np.diff(np.append(first, len(houses)))
    agent_tile = np.repeat(np.arange(tiles), per_tile)
    local = np.arange(n_agents) - np.repeat(np.cumsum(per_tile) - per_tile, per_tile)
    home = houses[first[agent_tile] + local % np.maximum(n_houses[agent_tile], 1)] if n_agents else houses[:0]
    sites = {
        "site_pos": pos, "site_kind": kind, "site_max": site_max, "site_stock": stock,
        "site_owner": np.full(len(pos), -1, dtype=np.int32), "bucket": bucket.astype(np.int32),
        "home": home.astype(np.int32),
    }
    return VillageMap(terrain, S, (tx, ty), width, height, gw, gh, sites)


"""The village as a game: villages of a few thousand people, sites that deplete and regrow, needs that grow.

`VillageWorld` implements `goap.world.World` for the domain in ``domain.toml``. Every per-agent and per-site step
of a tick is a Warp kernel on the brain's device (``brain.device``); host code only loops over site kinds and
launches. Nothing is read back to the host during a tick.

- **Map.** The map is a grid of villages, one per ``VILLAGE_CELLS`` x ``VILLAGE_CELLS`` tile, as many as it takes
  to give each at most ``agents_per_village`` people. Each tile has a river, forest, rock and field patches and a
  centre with the houses (one per ``AGENTS_PER_HOUSE`` people), stockpiles, smithy anvils and market stalls;
  trees and berry bushes grow in the forest, ore rocks in the rock, plots in the fields, fishing spots on the
  river bank. Map and placement are vectorised numpy at reset time and work at 1,000,000 agents.
- **Trades.** Each villager is a woodcutter, forager, farmer, fisher or smith: its own trade's work costs it half
  the domain cost, another trade's up to three times (``TRADE_COST``), and goals are weighed by trade
  (``TRADE_GOALS``: only smiths forge for sale), so every branch of the economy has its workers.
- **Reservations.** A walk whose next step takes stock (``go_forest`` before ``chop_wood``) reserves a free site
  of that kind with stock before it sets off; plots and anvils are reserved on arrival; a work action keeps the
  site reserved for it, or reserves a free one within ``WORK_RADIUS``. Contested sites go to the lowest agent id
  (``wp.atomic_min`` on a bid array); the others choose again among the sites still free, ``CLAIM_ROUNDS`` rounds
  per tick. An agent with nothing free in reach heads for the nearest available site the field knows of,
  looking again every tick (at most ``MAX_SEARCH`` ticks), then waits; only after ``MAX_WAIT`` ticks of waiting
  does the action fail, and a failure disables nothing: the agent simply replans.
- **Sensing matches the actions.** ``go_*`` costs the walking time to the nearest available site (the domain cost
  at least); a gathering action is disabled only while no site of its kind has stock anywhere; ``berries`` says
  whether any bush has berries.
- **Needs and the village.** Hunger and fatigue grow on per-agent timers; the village uses up what the stockpile
  holds, fires burn down, tax falls due, a merchant buys forged tools, storms damage houses, so goals come back.
  Priorities: eat and rest grow with hunger and fatigue, the others keep a per-agent base level, and the goal an
  agent already pursues gets a bonus (a villager finishes what it started unless a need becomes pressing).
- **Random numbers** come from ``wp.rand_init(tick seed, index)``: results do not depend on thread count or
  launch order, and a snapshot continues bit for bit.

Nearest-site lookups read jump-flooding fields on a coarse grid (``RES`` cells per field cell): one per site kind
over the sites available now (one kind rebuilt every ``FIELD_EVERY`` ticks or more on big maps, in
``FIELD_SCHEDULE`` order) and one over all sites (built at reset). The world is not ``capturable``: the kind
rebuilt and a few scalars are chosen on the host each tick.
"""

# Warp kernels declare dynamic variables as int(0) / float(0.0); UP018 would turn them into constants.
# ruff: noqa: UP018

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import warp as wp

from goap.domain_file import load_domain
from goap.kernels import init_warp
from goap.kernels.semantics import read_field, write_field

if TYPE_CHECKING:
    from goap.runtime import Brain

init_warp()
wp.set_module_options({"enable_backward": False})

DOMAIN_PATH = Path(__file__).with_name("domain.toml")
_DOMAIN = load_domain(DOMAIN_PATH)

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
STORM_P = 0.0007
DAY = 2160  # ticks; the market closes for the last sixth of each day
BIG = 2147483647

_NAMES_A = [a.name for a in _DOMAIN.actions]
_NAMES_F = [f.name for f in _DOMAIN.facts]
_NAMES_G = [g.name for g in _DOMAIN.goals]
_PLACES = list(_DOMAIN.fact("at").labels)


def _fact(name: str) -> Any:
    return wp.constant(_NAMES_F.index(name))


F_AT, F_HUNGER, F_FATIGUE = _fact("at"), _fact("hunger"), _fact("fatigue")
F_STOCK_WOOD, F_STOCK_FOOD, F_FIRE = _fact("stock_wood"), _fact("stock_food"), _fact("fire_lit")
F_TAX, F_TOOLS, F_COINS = _fact("tax_paid"), _fact("tools_made"), _fact("coins")
F_HOUSE, F_MARKET, F_BERRIES = _fact("house_repaired"), _fact("market_open"), _fact("berries")
F_FOOD, F_WOOD, F_ROD = _fact("food"), _fact("wood"), _fact("has_rod")
F_PICK, F_HOE = _fact("has_pickaxe"), _fact("has_hoe")
G_EAT, G_REST, G_TAX, G_FORGE, G_PICK, G_HOE = (
    wp.constant(_NAMES_G.index(g)) for g in ("eat", "rest", "pay_taxes", "forge_tool", "get_pickaxe", "get_hoe")
)
F_IRON = _fact("iron")
K_HOUSE, K_TREE, K_BUSH, K_STALL = (wp.constant(k) for k in (HOUSE, TREE, BUSH, STALL))
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
C_N_TALLIES = wp.constant(len(TALLIES))
T_TAKEN, T_WAITED, T_NO_SITE = (wp.constant(TALLIES.index(t)) for t in ("actions_taken", "actions_waited",
                                                                           "actions_failed_no_site"))

RUNNING_S, DONE_S, FAILED_S = wp.constant(wp.int8(0)), wp.constant(wp.int8(1)), wp.constant(wp.int8(2))


@wp.struct
class Facts:
    """Where each fact lives in a packed state row (from ``brain.tables.layout``)."""

    word: wp.array(dtype=wp.int32)
    shift: wp.array(dtype=wp.int32)
    mask: wp.array(dtype=wp.uint64)
    lo: wp.array(dtype=wp.int32)


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


@wp.func
def get_fact(states: wp.array2d(dtype=wp.uint64), i: int, fl: Facts, f: int) -> int:
    return wp.int32(read_field(states, i, fl.word[f], fl.shift[f], fl.mask[f])) + fl.lo[f]


@wp.func
def set_fact(states: wp.array2d(dtype=wp.uint64), i: int, fl: Facts, f: int, v: int):
    write_field(states, i, fl.word[f], fl.shift[f], fl.mask[f], wp.uint64(v - fl.lo[f]))


@wp.func
def cell_of(g: Grid, p: wp.vec2) -> int:
    cx = wp.clamp(int(p[0] / C_RES), 0, g.gw - 1)
    cy = wp.clamp(int(p[1] / C_RES), 0, g.gh - 1)
    return cy * g.gw + cx


@wp.func
def is_free(g: Grid, s: int) -> bool:
    return g.site_owner[s] < 0 and (g.site_max[s] == 0 or g.site_stock[s] > 0)




@wp.func
def jitter(i: int) -> wp.vec2:
    """A fixed small offset per agent, so that people at one stall do not stand on one pixel."""
    h = wp.rand_init(7919, i)
    return wp.vec2(wp.randf(h, -0.45, 0.45), wp.randf(h, -0.45, 0.45))


# --- sense ------------------------------------------------------------------------------------------------------
@wp.kernel
def sense_kernel(
    states: wp.array2d(dtype=wp.uint64),
    priorities: wp.array2d(dtype=wp.float32),
    costs: wp.array2d(dtype=wp.float32),
    enabled: wp.array2d(dtype=wp.bool),
    goal: wp.array(dtype=wp.int32),
    alive: wp.array(dtype=wp.bool),
    step: wp.array(dtype=wp.int32),
    plan_length: wp.array(dtype=wp.int32),
    action_status: wp.array(dtype=wp.int8),
    fl: Facts,
    g: Grid,
    ac: Acts,
    positions: wp.array(dtype=wp.vec2),
    home: wp.array(dtype=wp.int32),
    trade: wp.array(dtype=wp.int32),
    phase: wp.array2d(dtype=wp.int32),
    base_priority: wp.array2d(dtype=wp.float32),
    tick: wp.int64,
    rng_seed: int,
    due: wp.array(dtype=wp.int32),
    storm_p: float,
    market_open: int,
    speed: float,
):
    i = wp.tid()
    if not alive[i]:
        return
    hunger = get_fact(states, i, fl, F_HUNGER)
    if phase[i, 0] == due[0]:
        hunger = wp.min(hunger + 1, 5)
        set_fact(states, i, fl, F_HUNGER, hunger)
    fatigue = get_fact(states, i, fl, F_FATIGUE)
    if phase[i, 1] == due[1]:
        fatigue = wp.min(fatigue + 1, 5)
        set_fact(states, i, fl, F_FATIGUE, fatigue)
    if phase[i, 2] == due[2]:  # the village uses what the stockpile holds
        set_fact(states, i, fl, F_STOCK_WOOD, wp.max(get_fact(states, i, fl, F_STOCK_WOOD) - 1, 0))
        set_fact(states, i, fl, F_STOCK_FOOD, wp.max(get_fact(states, i, fl, F_STOCK_FOOD) - 1, 0))
    if phase[i, 3] == due[3]:
        set_fact(states, i, fl, F_FIRE, 0)
    if phase[i, 4] == due[4]:
        set_fact(states, i, fl, F_TAX, 0)
    if phase[i, 5] == due[5]:  # a merchant buys one forged tool
        tools = get_fact(states, i, fl, F_TOOLS)
        if tools > 0:
            set_fact(states, i, fl, F_TOOLS, tools - 1)
            set_fact(states, i, fl, F_COINS, wp.min(get_fact(states, i, fl, F_COINS) + 3, 9))
    rng = wp.rand_init(rng_seed, i)
    if wp.randf(rng) < storm_p:
        set_fact(states, i, fl, F_HOUSE, 0)
    set_fact(states, i, fl, F_MARKET, market_open)

    p = positions[i]
    cell = cell_of(g, p)
    # Berries: 3 while some bush in the world has any (the reservations find the agent a bush with berries, and
    # another when it is stripped), 0 when none has. A count that followed the nearest bush's stock would change
    # the packed state of thousands of agents every tick for nothing a plan can use.
    bush = g.field[K_BUSH, cell]
    berries = int(0)
    if bush >= 0:
        berries = 3
    set_fact(states, i, fl, F_BERRIES, berries)

    # Priorities: needs grow with hunger and fatigue, the rest at a per-agent base level; the current goal keeps
    # a bonus; the taxman is only at the market while it is open.
    coins = get_fact(states, i, fl, F_COINS)
    iron = get_fact(states, i, fl, F_IRON) > 0 or coins >= 3  # has iron or can buy it
    n_goals = priorities.shape[1]
    for q in range(n_goals):
        pr = base_priority[i, q]
        if q == G_EAT:
            pr = 1.0 + 2.0 * float(hunger)
        elif q == G_REST:
            pr = 1.0 + 1.6 * float(fatigue)
        elif q == G_TAX and (market_open == 0 or coins < 4):
            pr = 0.0
        elif q == G_FORGE and not (iron or get_fact(states, i, fl, F_PICK) != 0):
            pr = 0.0
        elif (q == G_PICK or q == G_HOE) and not iron:
            pr = 0.0
        if goal[i] == q and pr > 0.0:
            pr = pr + C_HYSTERESIS
        priorities[i, q] = pr

    # Costs: walking time to the nearest available site of each place (the forest: a tree or a bush), in units of
    # TICKS_PER_COST ticks, the domain cost at least. Enabled: a site of the kind exists (for gathering: has stock).
    # The work actions' costs depend on the trade only and are written once (`work_costs_kernel`). Walking costs
    # matter when the agent plans: they are refreshed every COST_EVERY ticks, and at once for an agent whose plan
    # has run out or whose action failed (the ones about to plan).
    for m in range(ac.gathers.shape[0]):
        a = ac.gathers[m]
        enabled[i, a] = g.field[ac.kind[a], cell] >= 0
    refresh = (wp.int64(i) + tick) % wp.int64(C_COST_EVERY) == wp.int64(0)
    if not refresh and step[i] < plan_length[i] and action_status[i] != FAILED_S:
        return
    for m in range(ac.moves.shape[0]):
        a = ac.moves[m]
        k = ac.place_kind[ac.move_place[a]]
        s = int(-1)
        if k == K_HOUSE:
            s = home[i]
        else:
            s = g.field[k, cell]
            if s < 0:
                s = g.nearest[k, cell]
        d = C_NO_SITE_COST
        if s >= 0:
            d = wp.length(g.site_pos[s] - p) / speed
        if k == K_TREE and bush >= 0:
            d = wp.min(d, wp.length(g.site_pos[bush] - p) / speed)
        costs[i, a] = wp.max(d, ac.base_cost[a])
        enabled[i, a] = s >= 0


# --- act --------------------------------------------------------------------------------------------------------
@wp.func
def release(g: Grid, claim: wp.array(dtype=wp.int32), i: int):
    s = claim[i]
    if s >= 0:
        if g.site_owner[s] == i:
            g.site_owner[s] = -1
        claim[i] = -1


@wp.kernel
def begin_kernel(
    action: wp.array(dtype=wp.int32),
    action_ticks: wp.array(dtype=wp.int32),
    plan: wp.array2d(dtype=wp.int32),
    step: wp.array(dtype=wp.int32),
    plan_length: wp.array(dtype=wp.int32),
    alive: wp.array(dtype=wp.bool),
    g: Grid,
    ac: Acts,
    positions: wp.array(dtype=wp.vec2),
    home: wp.array(dtype=wp.int32),
    cur_action: wp.array(dtype=wp.int32),
    target: wp.array(dtype=wp.int32),
    claim: wp.array(dtype=wp.int32),
    progress: wp.array(dtype=wp.int32),
    waited: wp.array(dtype=wp.int32),
    searched: wp.array(dtype=wp.int32),
    want: wp.array(dtype=wp.int32),
):
    """Start, continue or drop each agent's action; say which site kind it still has to reserve (``want``)."""
    i = wp.tid()
    want[i] = -1
    a = action[i]
    if a < 0 or not alive[i]:
        release(g, claim, i)
        cur_action[i] = -1
        target[i] = -1
        progress[i] = 0
        waited[i] = 0
        searched[i] = 0
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
        if step[i] + 1 < plan_length[i]:
            nxt = plan[i, step[i] + 1]
        if nxt >= 0:
            nk = ac.kind[nxt]
            if nk >= 0 and ac.place_of_kind[nk] == mp:
                k = nk
                reserve = ac.claims[nxt] != 0 and ac.stocked[nxt] != 0  # plots and anvils: on arrival
    fresh = a != cur_action[i] or action_ticks[i] == 0
    if fresh:
        cur_action[i] = a
        progress[i] = 0
        waited[i] = 0
        searched[i] = 0
        s = claim[i]
        if s >= 0 and (not reserve or g.site_kind[s] != k or not (g.site_max[s] == 0 or g.site_stock[s] > 0)):
            release(g, claim, i)
        if claim[i] >= 0:
            target[i] = claim[i]
        elif reserve:
            target[i] = -1
        elif k == K_HOUSE:
            target[i] = home[i]
        elif k >= 0:  # the nearest available site (a free anvil, say), else the nearest one
            c = cell_of(g, positions[i])
            target[i] = g.field[k, c]
            if target[i] < 0:
                target[i] = g.nearest[k, c]
        else:
            target[i] = -1
    if reserve and claim[i] < 0:
        want[i] = k


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


@wp.kernel
def bid_kernel(
    action: wp.array(dtype=wp.int32),
    g: Grid,
    ac: Acts,
    positions: wp.array(dtype=wp.vec2),
    want: wp.array(dtype=wp.int32),
    choice: wp.array(dtype=wp.int32),
    found_any: wp.array(dtype=wp.int32),
    bid: wp.array(dtype=wp.int32),
    target: wp.array(dtype=wp.int32),
):
    """Each agent still wanting a site bids for the nearest free one; the lowest agent id wins it.

    A work action looks within ``WORK_RADIUS``; a walk looks around itself, then around the nearest available
    site the field knows of, wherever that is. ``found_any`` = 0 says no site of the kind is available at all.
    """
    i = wp.tid()
    choice[i] = -1
    k = want[i]
    if k < 0:
        return
    p = positions[i]
    here = cell_of(g, p)
    best = int(-1)
    if ac.move_place[action[i]] >= 0:
        s0 = g.field[k, here]
        if s0 < 0:
            found_any[i] = 0
            return
        best = nearest_free(g, k, here, p, C_WALK_RINGS, i)
        if best < 0:
            best = nearest_free(g, k, cell_of(g, g.site_pos[s0]), p, C_SEARCH, i)
        if best < 0:
            target[i] = s0  # head that way meanwhile, and look again on the way
    else:
        best = nearest_free(g, k, here, p, C_WORK_RINGS, i)
        if best >= 0 and wp.length(g.site_pos[best] - p) > C_WORK_RADIUS:
            best = -1
        if best < 0:  # all taken around here: head for the nearest available one if it is still at this place
            s0 = g.field[k, here]
            if s0 >= 0 and wp.length(g.site_pos[s0] - p) <= 2.0 * C_WORK_RADIUS:
                target[i] = s0
    if best >= 0:
        choice[i] = best
        wp.atomic_min(bid, best, i)
    else:
        want[i] = -2 - k  # nothing free in sight: no more rounds this tick (nothing frees up within a tick)


@wp.kernel
def settle_kernel(
    g: Grid,
    choice: wp.array(dtype=wp.int32),
    bid: wp.array(dtype=wp.int32),
    want: wp.array(dtype=wp.int32),
    claim: wp.array(dtype=wp.int32),
    target: wp.array(dtype=wp.int32),
):
    i = wp.tid()
    s = choice[i]
    if s >= 0 and bid[s] == i:
        g.site_owner[s] = i
        claim[i] = s
        target[i] = s
        want[i] = -1


@wp.kernel
def clear_bids_kernel(choice: wp.array(dtype=wp.int32), bid: wp.array(dtype=wp.int32)):
    i = wp.tid()
    s = choice[i]
    if s >= 0:
        bid[s] = C_BIG
        choice[i] = -1


@wp.kernel
def advance_kernel(
    action: wp.array(dtype=wp.int32),
    action_status: wp.array(dtype=wp.int8),
    g: Grid,
    ac: Acts,
    positions: wp.array(dtype=wp.vec2),
    target: wp.array(dtype=wp.int32),
    claim: wp.array(dtype=wp.int32),
    progress: wp.array(dtype=wp.int32),
    waited: wp.array(dtype=wp.int32),
    searched: wp.array(dtype=wp.int32),
    want: wp.array(dtype=wp.int32),
    found_any: wp.array(dtype=wp.int32),
    tallies: wp.array(dtype=wp.int64),
    step_len: float,
):
    """Walk toward the target and work there; report RUNNING, DONE or FAILED."""
    i = wp.tid()
    a = action[i]
    if a < 0:
        return
    if want[i] != -1:  # no site reserved yet (-2 - kind: none was free in sight): wait a few ticks, then give up
        s = target[i]
        if s >= 0 and claim[i] < 0 and found_any[i] != 0 and searched[i] < C_MAX_SEARCH:
            # head for the nearest available site meanwhile (looking again each tick); wait only once there
            p = positions[i]
            delta = g.site_pos[s] - p
            d = wp.length(delta)
            if d > step_len:
                positions[i] = p + delta * (step_len / d)
                searched[i] = searched[i] + 1
                action_status[i] = RUNNING_S
                return
        waited[i] = waited[i] + 1
        if waited[i] > C_MAX_WAIT or found_any[i] == 0:
            action_status[i] = FAILED_S
            wp.atomic_add(tallies, T_NO_SITE, wp.int64(1))
        else:
            action_status[i] = RUNNING_S
            wp.atomic_add(tallies, T_WAITED, wp.int64(1))
        return
    walk = ac.move_place[a] >= 0
    s = target[i]
    arrived = True
    if s >= 0:
        goal_p = g.site_pos[s]
        if claim[i] != s:
            goal_p = goal_p + jitter(i)
        p = positions[i]
        delta = goal_p - p
        d = wp.length(delta)
        if d <= step_len:
            positions[i] = goal_p
        else:
            positions[i] = p + delta * (step_len / d)
            arrived = False
    elif ac.kind[a] >= 0 or walk:  # a site was needed and none exists
        action_status[i] = FAILED_S
        wp.atomic_add(tallies, T_NO_SITE, wp.int64(1))
        return
    done = False
    if walk:
        done = arrived
    elif arrived:
        progress[i] = progress[i] + 1
        done = progress[i] >= ac.work_ticks[a]
    if done:
        action_status[i] = DONE_S
        if ac.stocked[a] != 0 and s >= 0:
            g.site_stock[s] = wp.max(g.site_stock[s] - 1, 0)
        if ac.tally[a] >= 0:
            wp.atomic_add(tallies, ac.tally[a], wp.int64(ac.tally_amount[a]))
        wp.atomic_add(tallies, T_TAKEN, wp.int64(1))
    else:
        action_status[i] = RUNNING_S


@wp.kernel
def regrow_kernel(g: Grid, regrow_p: wp.array(dtype=wp.float32), rng_seed: int):
    s = wp.tid()
    m = g.site_max[s]
    if m > 0 and g.site_stock[s] < m:
        rng = wp.rand_init(rng_seed, s)
        if wp.randf(rng) < regrow_p[g.site_kind[s]]:
            g.site_stock[s] = g.site_stock[s] + 1


# --- nearest-site fields (jump flooding) ------------------------------------------------------------------------
@wp.kernel
def fill_kernel(a: wp.array(dtype=wp.int32), value: int):
    a[wp.tid()] = value


@wp.kernel
def seed_field_kernel(g: Grid, first: int, only_free: int, seed: wp.array(dtype=wp.int32)):
    s = first + wp.tid()
    if only_free != 0 and not is_free(g, s):
        return
    wp.atomic_min(seed, cell_of(g, g.site_pos[s]), s)


@wp.kernel
def flood_kernel(
    gw: int, gh: int, site_pos: wp.array(dtype=wp.vec2), src: wp.array(dtype=wp.int32), dst: wp.array(dtype=wp.int32),
    jump: int,
):
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
def store_field_kernel(src: wp.array(dtype=wp.int32), out: wp.array2d(dtype=wp.int32), k: int):
    c = wp.tid()
    s = src[c]
    if s == C_BIG:
        s = -1
    out[k, c] = s


# --- reset ------------------------------------------------------------------------------------------------------
@wp.kernel
def work_costs_kernel(
    costs: wp.array2d(dtype=wp.float32), enabled: wp.array2d(dtype=wp.bool), trade: wp.array(dtype=wp.int32),
    ac: Acts,
):
    """Every action's cost for the agent's trade (sense overwrites the walks' costs each tick); all enabled."""
    i = wp.tid()
    for a in range(costs.shape[1]):
        costs[i, a] = ac.base_cost[a] * ac.trade_cost[a, trade[i]]
        enabled[i, a] = True


@wp.kernel
def start_kernel(
    states: wp.array2d(dtype=wp.uint64),
    fl: Facts,
    g: Grid,
    home: wp.array(dtype=wp.int32),
    positions: wp.array(dtype=wp.vec2),
    trade: wp.array(dtype=wp.int32),
    trade_cum: wp.array(dtype=wp.float32),
    periods: wp.array(dtype=wp.int32),
    phase: wp.array2d(dtype=wp.int32),
    base_priority: wp.array2d(dtype=wp.float32),
    goal_priority: wp.array(dtype=wp.float32),
    trade_goals: wp.array2d(dtype=wp.float32),
    seed: int,
    width: float,
    height: float,
):
    """Starting facts, trade, phases of the timers, base priorities and a spot beside the house, per agent."""
    i = wp.tid()
    rng = wp.rand_init(seed, i)
    set_fact(states, i, fl, F_AT, 0)
    set_fact(states, i, fl, F_HUNGER, wp.randi(rng, 0, 3))
    set_fact(states, i, fl, F_FATIGUE, wp.randi(rng, 0, 3))
    set_fact(states, i, fl, F_FOOD, wp.randi(rng, 0, 3))
    set_fact(states, i, fl, F_COINS, wp.randi(rng, 2, 7))
    set_fact(states, i, fl, F_WOOD, wp.randi(rng, 0, 2))
    # not everyone wakes to a cold hearth and an empty stockpile share
    set_fact(states, i, fl, F_FIRE, int(wp.randf(rng) < 0.6))
    set_fact(states, i, fl, F_STOCK_WOOD, wp.randi(rng, 0, 3))
    set_fact(states, i, fl, F_STOCK_FOOD, wp.randi(rng, 0, 3))
    u = wp.randf(rng)
    t = int(0)
    for j in range(trade_cum.shape[0]):
        if u >= trade_cum[j]:
            t = j + 1
    trade[i] = t
    hoe = wp.randf(rng) < wp.where(t == 2, C_TOOL_P, 0.1 * C_TOOL_P)
    rod = wp.randf(rng) < wp.where(t == 3, C_TOOL_P, 0.1 * C_TOOL_P)
    pick = wp.randf(rng) < wp.where(t == 4, C_TOOL_P, 0.1 * C_TOOL_P)
    set_fact(states, i, fl, F_HOE, int(hoe))
    set_fact(states, i, fl, F_ROD, int(rod))
    set_fact(states, i, fl, F_PICK, int(pick))
    set_fact(states, i, fl, F_HOUSE, int(wp.randf(rng) < 0.5))
    for j in range(phase.shape[1]):
        phase[i, j] = wp.randi(rng, 0, periods[j])
    for q in range(base_priority.shape[1]):  # the domain's priority x a personality x the trade's weight
        base_priority[i, q] = goal_priority[q] * wp.randf(rng, 0.7, 1.3) * trade_goals[t, q]
    h = g.site_pos[home[i]]
    p = h + wp.vec2(wp.randf(rng, -1.5, 1.5), wp.randf(rng, -1.5, 1.5))
    positions[i] = wp.vec2(wp.clamp(p[0], 0.0, width - 0.01), wp.clamp(p[1], 0.0, height - 0.01))


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


class VillageWorld:
    """The villages, their sites and the villagers' bodies; see the module docstring.

    Args:
        agents_per_village: the most people one village tile holds; more agents make more villages.
        village_size: cells per side of a village tile.
    """

    name = "village"
    #: Facts the world writes in ``sense`` (the rest are the agents' own, changed by action effects).
    sensed_facts = (
        "hunger", "fatigue", "stock_wood", "stock_food", "fire_lit", "tax_paid", "tools_made", "coins",
        "house_repaired", "market_open", "berries",
    )

    def __init__(self, agents_per_village: int = AGENTS_PER_VILLAGE, village_size: int = VILLAGE_CELLS):
        if agents_per_village < 1:
            raise ValueError(f"agents_per_village must be >= 1, got {agents_per_village}")
        if village_size < 16 or village_size % RES:
            raise ValueError(f"village_size must be a multiple of {RES} and >= 16, got {village_size}")
        self.agents_per_village = int(agents_per_village)
        self.village_size = int(village_size)
        self.domain = _DOMAIN
        self.action_names = list(_NAMES_A)
        self.places = list(_PLACES)
        for name in self.action_names:
            if not name.startswith("go_") and name not in WORK:
                raise ValueError(f"village world does not know action {name!r}")
        self.brain: Brain | None = None
        self.device = "cpu"
        self.width = self.height = self.village_size
        self.seed = 0

    # --- layout ---------------------------------------------------------------------------------------------
    def generate(self, n_agents: int, seed: int) -> None:
        """Lay out the villages for ``n_agents`` people on the host: terrain, sites (sorted), homes.

        Vectorised numpy per village tile; a million agents take a few seconds. Sets ``terrain``, the site
        arrays (as numpy, ``_host``) and ``home``; `reset` copies them to the device.
        """
        tiles = max(1, -(-n_agents // self.agents_per_village))
        tx = int(np.ceil(np.sqrt(tiles)))
        ty = -(-tiles // tx)
        tiles = tx * ty
        # A small village is a smaller tile, at the same density of people and sites as a full one.
        full = self.village_size
        per = -(-n_agents // tiles)
        side = np.sqrt(per / self.agents_per_village) * full if n_agents else 0.0
        S = int(min(full, max(MIN_VILLAGE_CELLS, RES * int(np.ceil(side / RES)))))
        self.village_cells = S
        self.width, self.height = tx * S, ty * S
        self.tiles = (tx, ty)
        rng = np.random.default_rng(seed)
        terrain = np.empty((self.height, self.width), dtype=np.uint8)
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
        self.gw, self.gh = self.width // RES, self.height // RES
        cell = (pos[:, 1] // RES).astype(np.int64) * self.gw + (pos[:, 0] // RES).astype(np.int64)
        order = np.lexsort((cell, kind))
        pos, kind, tile, cell = pos[order], kind[order], tile[order], cell[order]
        n_cells = self.gw * self.gh
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
        self.terrain = terrain
        self._host = {
            "site_pos": pos, "site_kind": kind, "site_max": site_max, "site_stock": stock,
            "site_owner": np.full(len(pos), -1, dtype=np.int32), "bucket": bucket.astype(np.int32),
            "home": home.astype(np.int32),
        }

    def make_view(self):
        """The viewer's drawing hooks for this world (`worlds.village.view.VillageView`)."""
        from worlds.village.view import VillageView

        return VillageView(self)

    def reset(self, brain: Brain, seed: int) -> None:
        self.brain = brain
        self.device = dev = str(getattr(brain, "device", None) or "cpu")
        self.seed = int(seed) & 0x3FFFFFFF
        N = brain.n_agents
        self.generate(N, seed)
        h = self._host
        S = len(h["site_pos"])
        self.n_sites = S
        arr = lambda x, dt: wp.array(x, dtype=dt, device=dev)  # noqa: E731
        self.site_pos = arr(h["site_pos"], wp.vec2)
        self.site_kind = arr(h["site_kind"], wp.int32)
        self.site_max = arr(h["site_max"], wp.int32)
        self.site_stock = arr(h["site_stock"], wp.int32)
        self.site_owner = arr(h["site_owner"], wp.int32)
        self.bucket = arr(h["bucket"], wp.int32)
        self.home = arr(h["home"], wp.int32)
        self.kind_first = np.searchsorted(h["site_kind"], np.arange(N_KINDS + 1)).astype(np.int64)
        del self._host
        n_cells = self.gw * self.gh
        self.field = wp.full((N_KINDS, n_cells), -1, dtype=wp.int32, device=dev)
        self.nearest = wp.full((N_KINDS, n_cells), -1, dtype=wp.int32, device=dev)
        G = brain.tables.goals.n_goals
        self._positions = wp.zeros(N, dtype=wp.vec2, device=dev)
        self.phase = wp.zeros((N, 6), dtype=wp.int32, device=dev)
        self.trade = wp.zeros(N, dtype=wp.int32, device=dev)
        self.base_priority = wp.zeros((N, G), dtype=wp.float32, device=dev)
        self.cur_action = wp.full(N, -1, dtype=wp.int32, device=dev)
        self.target = wp.full(N, -1, dtype=wp.int32, device=dev)
        self.claim = wp.full(N, -1, dtype=wp.int32, device=dev)
        self.progress = wp.zeros(N, dtype=wp.int32, device=dev)
        self.waited = wp.zeros(N, dtype=wp.int32, device=dev)
        self.searched = wp.zeros(N, dtype=wp.int32, device=dev)
        self.want = wp.full(N, -1, dtype=wp.int32, device=dev)
        self.choice = wp.full(N, -1, dtype=wp.int32, device=dev)
        self.found_any = wp.zeros(N, dtype=wp.int32, device=dev)
        self.tallies = wp.zeros(len(TALLIES), dtype=wp.int64, device=dev)
        self.tick = np.zeros((), dtype=np.int64)
        self._tables(brain)
        self._rebuild_launches()
        for k in range(N_KINDS):
            self._refresh(k, self.nearest, only_free=False)
            self._refresh(k, self.field, only_free=k in DYNAMIC)
        if N:
            b = self._brain_arrays(brain)
            wp.launch(start_kernel, dim=N, device=dev, inputs=[
                b["states"], self._facts, self._g, self.home, self._positions, self.trade,
                wp.array(np.cumsum(TRADE_SHARE)[:-1].astype(np.float32), dtype=wp.float32, device=dev),
                self._periods, self.phase, self.base_priority, self._goal_priority, self._trade_goals,
                self.seed, float(self.width), float(self.height)])
            wp.launch(work_costs_kernel, dim=N, device=dev, inputs=[b["costs"], b["enabled"], self.trade, self._acts])

    def _rebuild_launches(self) -> None:
        """Scratch sized by the map and the recorded launches over the world's arrays (after reset or restore)."""
        dev, n_cells, S = self.device, self.gw * self.gh, self.n_sites
        self._flood = (wp.empty(n_cells, dtype=wp.int32, device=dev), wp.empty(n_cells, dtype=wp.int32, device=dev))
        self.bid = wp.full(max(S, 1), BIG, dtype=wp.int32, device=dev)
        self._g = self._grid()
        self._cmds, self._cmds_key = None, None
        self._field_cmds = [self._field_launches(k, self.field, True) for k in FIELD_SCHEDULE]
        # A rebuild costs in proportion to the map: on big maps (many villages) rebuild less often.
        self._field_every = max(FIELD_EVERY, -(-n_cells // FIELD_CELLS_PER_TICK))
        self._regrow_cmd = wp.launch(regrow_kernel, dim=max(S, 1), inputs=[self._g, self._regrow_p, 0], device=dev,
                                     record_cmd=True)

    def _tables(self, brain: Brain) -> None:
        dev = self.device
        lay = brain.tables.layout
        fl = Facts()
        fl.word = wp.array(lay.word.astype(np.int32), dtype=wp.int32, device=dev)
        fl.shift = wp.array(lay.shift.astype(np.int32), dtype=wp.int32, device=dev)
        fl.mask = wp.array([lay.field_mask(f) for f in range(len(lay.word))], dtype=wp.uint64, device=dev)
        fl.lo = wp.array(lay.min.astype(np.int32), dtype=wp.int32, device=dev)
        self._facts = fl
        A = len(self.action_names)
        move_place = np.full(A, -1, np.int32)
        kind = np.full(A, -1, np.int32)
        stocked = np.zeros(A, np.int32)
        claims = np.zeros(A, np.int32)
        work_ticks = np.ones(A, np.int32)
        tally = np.full(A, -1, np.int32)
        amount = np.zeros(A, np.int32)
        for a, name in enumerate(self.action_names):
            if name.startswith("go_"):
                move_place[a] = self.places.index(name[3:])
            else:
                kind[a], stocked[a], claims[a], work_ticks[a] = WORK[name]
            if name in TALLY:
                tally[a], amount[a] = TALLIES.index(TALLY[name][0]), TALLY[name][1]
        self.move_place, self.kind_of_action, self.work_ticks = move_place, kind, work_ticks
        place_kind = np.array([PLACE_KIND[p] for p in self.places], np.int32)
        place_of_kind = np.full(N_KINDS, -1, np.int32)
        for p, k in enumerate(place_kind):
            place_of_kind[k] = p
        place_of_kind[BUSH] = self.places.index("forest")
        ac = Acts()
        for name, value in (("move_place", move_place), ("kind", kind), ("stocked", stocked), ("claims", claims),
                            ("work_ticks", work_ticks), ("tally", tally), ("tally_amount", amount),
                            ("place_kind", place_kind), ("place_of_kind", place_of_kind)):
            setattr(ac, name, wp.array(value, dtype=wp.int32, device=dev))
        ac.base_cost = wp.array(np.asarray(brain.tables.cost, np.float32), dtype=wp.float32, device=dev)
        factor = np.ones((A, len(TRADES)), np.float32)
        for a, name in enumerate(self.action_names):
            if name in TRADE_COST:
                factor[a] = TRADE_COST[name]
        ac.trade_cost = wp.array(factor, dtype=wp.float32, device=dev)
        ac.moves = wp.array(np.flatnonzero(move_place >= 0).astype(np.int32), dtype=wp.int32, device=dev)
        ac.gathers = wp.array(np.flatnonzero(stocked != 0).astype(np.int32), dtype=wp.int32, device=dev)
        self._acts = ac
        self._goal_priority = wp.array(np.asarray(brain.tables.goals.priority, np.float32), dtype=wp.float32,
                                       device=dev)
        weights = np.ones((len(TRADES), len(_NAMES_G)), np.float32)
        for name, w in TRADE_GOALS.items():
            weights[:, _NAMES_G.index(name)] = w
        self._trade_goals = wp.array(weights, dtype=wp.float32, device=dev)
        regrow = np.zeros(N_KINDS, np.float32)
        for k, q in REGROW_P.items():
            regrow[k] = q
        self._regrow_p = wp.array(regrow, dtype=wp.float32, device=dev)
        self._period_values = np.array([HUNGER_EVERY, FATIGUE_EVERY, VILLAGE_USES_EVERY, FIRE_BURNS_EVERY, TAX_EVERY,
                                        TOOL_ORDER_EVERY], dtype=np.int64)
        self._periods = wp.array(self._period_values.astype(np.int32), dtype=wp.int32, device=dev)
        self._due = wp.zeros(len(self._period_values), dtype=wp.int32, device=dev)

    def _grid(self) -> Grid:
        g = Grid()
        g.gw, g.gh = self.gw, self.gh
        g.field, g.nearest, g.bucket = self.field, self.nearest, self.bucket
        g.site_pos, g.site_kind, g.site_max = self.site_pos, self.site_kind, self.site_max
        g.site_stock, g.site_owner = self.site_stock, self.site_owner
        return g

    def _refresh(self, k: int, out: wp.array, only_free: bool) -> None:
        """Rebuild one kind's nearest-site field now (at reset, and for the per-tick launches below)."""
        for cmd in self._field_launches(k, out, only_free):
            cmd.launch()

    def _field_launches(self, k: int, out: wp.array, only_free: bool) -> list:
        """Recorded launches that rebuild kind k's nearest-site field by jump flooding (one seed per field cell)."""
        dev, n_cells = self.device, self.gw * self.gh
        a, b = self._flood
        g = self._g
        cmds = [wp.launch(fill_kernel, dim=n_cells, inputs=[a, BIG], device=dev, record_cmd=True)]
        first, last = int(self.kind_first[k]), int(self.kind_first[k + 1])
        if last > first:
            cmds.append(wp.launch(seed_field_kernel, dim=last - first, inputs=[g, first, int(only_free), a],
                                  device=dev, record_cmd=True))
            jump = 1 << max(0, (max(self.gw, self.gh) - 1).bit_length() - 1)
            jumps = []
            while jump >= 1:
                jumps.append(jump)
                jump //= 2
            for j in [*jumps, 1]:
                cmds.append(wp.launch(flood_kernel, dim=n_cells, inputs=[self.gw, self.gh, self.site_pos, a, b, j],
                                      device=dev, record_cmd=True))
                a, b = b, a
        cmds.append(wp.launch(store_field_kernel, dim=n_cells, inputs=[a, out, k], device=dev, record_cmd=True))
        return cmds

    _BRAIN_ARRAYS = ("states", "priorities", "costs", "enabled", "goal", "plan", "step", "plan_length", "action",
                     "action_status", "action_ticks", "alive")

    def _brain_arrays(self, brain: Brain) -> dict[str, wp.array]:
        """The brain's per-agent Warp arrays the kernels read and write (on ``brain.device``)."""
        return {name: getattr(brain, name) for name in self._BRAIN_ARRAYS}

    def _tick_seed(self, salt: int) -> int:
        return int((self.seed * 1_000_003 + int(self.tick) * 7_919 + salt * 104_729) & 0x7FFFFFFF)

    # --- sense ----------------------------------------------------------------------------------------------
    def _launches(self, brain: Brain) -> dict[str, Any]:
        """The tick's launches, recorded once and replayed (per-tick scalars are set on them each tick).

        They are recorded again only when the brain's arrays are other arrays than last time.
        """
        b = self._brain_arrays(brain)
        key = tuple((x.ptr, x.shape) for x in b.values())
        if self._cmds is not None and self._cmds_key == key:
            return self._cmds
        N, dev, g = brain.n_agents, self.device, self._g

        def rec(kernel, dim, inputs):
            return wp.launch(kernel, dim=dim, inputs=inputs, device=dev, record_cmd=True)

        cmds: dict[str, Any] = {}
        if N:
            cmds["sense"] = rec(sense_kernel, N, [
                b["states"], b["priorities"], b["costs"], b["enabled"], b["goal"], b["alive"], b["step"],
                b["plan_length"], b["action_status"], self._facts, g,
                self._acts, self._positions, self.home, self.trade, self.phase, self.base_priority, wp.int64(0), 0,
                self._due, STORM_P, 1, SPEED * TICKS_PER_COST])
            cmds["begin"] = rec(begin_kernel, N, [
                b["action"], b["action_ticks"], b["plan"], b["step"], b["plan_length"], b["alive"], g, self._acts,
                self._positions, self.home, self.cur_action, self.target, self.claim, self.progress, self.waited,
                self.searched, self.want])
            cmds["found"] = rec(fill_kernel, N, [self.found_any, 1])
            cmds["bid"] = rec(bid_kernel, N, [
                b["action"], g, self._acts, self._positions, self.want, self.choice, self.found_any, self.bid,
                self.target])
            cmds["settle"] = rec(settle_kernel, N, [g, self.choice, self.bid, self.want, self.claim, self.target])
            cmds["clear"] = rec(clear_bids_kernel, N, [self.choice, self.bid])
            cmds["advance"] = rec(advance_kernel, N, [
                b["action"], b["action_status"], g, self._acts, self._positions, self.target, self.claim,
                self.progress, self.waited, self.searched, self.want, self.found_any, self.tallies, float(SPEED)])
        self._cmds, self._cmds_key = cmds, key
        return cmds

    # --- sense ----------------------------------------------------------------------------------------------
    def sense(self, brain: Brain) -> None:
        if brain.n_agents == 0:
            return
        cmd = self._launches(brain)["sense"]
        now = int(brain.tick_count)
        cmd.set_param_by_name("tick", wp.int64(now))
        # A timer of period P fires for the agents whose phase is (-tick) mod P: (tick + phase) % P == 0.
        self._due.assign(np.asarray((-now) % self._period_values, dtype=np.int32))
        cmd.set_param_by_name("rng_seed", self._tick_seed(1))
        cmd.set_param_by_name("market_open", int((now % DAY) < DAY * 5 // 6))
        cmd.launch()

    # --- act ------------------------------------------------------------------------------------------------
    def act(self, brain: Brain, dt: float) -> None:
        cmds = self._launches(brain)
        if brain.n_agents:
            cmds["begin"].launch()
            cmds["found"].launch()
            for _ in range(CLAIM_ROUNDS):
                cmds["bid"].launch()
                cmds["settle"].launch()
                cmds["clear"].launch()
            cmds["advance"].set_param_by_name("step_len", float(SPEED * dt))
            cmds["advance"].launch()
        # The world moves on: stock regrows, a few kinds' nearest-available-site fields are rebuilt.
        if self.n_sites:
            self._regrow_cmd.set_param_by_name("rng_seed", self._tick_seed(2))
            self._regrow_cmd.launch()
        every = self._field_every
        if int(self.tick) % every == 0:
            for cmd in self._field_cmds[(int(self.tick) // every) % len(FIELD_SCHEDULE)]:
                cmd.launch()
        self.tick += 1

    # --- viewer and scoring ---------------------------------------------------------------------------------
    @property
    def positions(self) -> np.ndarray:
        """float32 [N, 2] host copy (a zero-copy view on the CPU)."""
        return self._positions.numpy().reshape(-1, 2)

    @property
    def sites(self) -> dict[str, np.ndarray]:
        pos, kind = self.site_pos.numpy().reshape(-1, 2), self.site_kind.numpy()
        return {name: pos[kind == k] for k, name in enumerate(KINDS)}

    @property
    def targets(self) -> np.ndarray:
        """float32 [N, 2]: where each agent is heading, NaN where it is not walking anywhere."""
        t = self.target.numpy()
        pos = self.site_pos.numpy().reshape(-1, 2)
        has = t >= 0
        return np.where(has[:, None], pos[np.maximum(t, 0)] if len(pos) else np.nan, np.nan).astype(np.float32)

    def score(self) -> dict[str, float]:
        out: dict[str, float] = {name: float(v) for name, v in zip(TALLIES, self.tallies.numpy(), strict=True)}
        b = self.brain
        if b is None:
            return out
        minutes = max(b.tick_count, 1) / 60.0
        out["goals_achieved_per_agent_minute"] = b.counters["goals_achieved"] / max(b.n_agents, 1) / minutes
        if b.n_agents:
            states = b.states if isinstance(b.states, np.ndarray) else b.states.numpy()
            f = _NAMES_F.index("hunger")
            lay = b.tables.layout
            hunger = (states[:, lay.word[f]] >> np.uint64(lay.shift[f])) & np.uint64(lay.field_mask(f))
            out["starving"] = float((hunger.astype(np.int64) + lay.min[f] >= self.domain.fact("hunger").max).sum())
        else:
            out["starving"] = 0.0
        m, s = self.site_max.numpy(), self.site_stock.numpy()
        out["sites_depleted"] = float(((m > 0) & (s == 0)).sum())
        return out

    # --- snapshots ------------------------------------------------------------------------------------------
    #: Per-agent arrays (their shapes are fixed by the brain) and the map's arrays (sized by the snapshot's map).
    _AGENT_STATE = (
        "home", "_positions", "trade", "phase", "base_priority", "cur_action", "target", "claim", "progress", "waited",
        "searched",
    )
    _MAP_STATE = ("site_pos", "site_kind", "site_max", "site_stock", "site_owner", "bucket", "field", "nearest")
    _STATE = (*_MAP_STATE, *_AGENT_STATE, "tallies")

    def get_state(self) -> dict[str, np.ndarray]:
        out = {name.lstrip("_"): getattr(self, name).numpy().copy() for name in self._STATE}
        out["terrain"] = self.terrain.copy()
        out["tick"] = self.tick.copy()
        out["seed"] = np.array(self.seed, dtype=np.int64)
        return out

    def set_state(self, arrays: dict[str, Any]) -> None:
        """Restore what `get_state` returned, on a world reset for the same number of agents.

        The map may be another one (another seed lays out another number of sites): its arrays take the
        snapshot's sizes. Every field's presence, dtype, shape and range is checked before anything is written;
        a bad one raises ValueError naming it, and the world is left as it was.
        """
        got: dict[str, np.ndarray] = {}

        def field(name: str, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
            if name not in arrays:
                raise ValueError(f"world state: missing field '{name}'")
            x = np.asarray(arrays[name])
            if x.dtype != np.dtype(dtype) or x.shape != shape:
                raise ValueError(f"world state: field '{name}' is {x.dtype}{list(x.shape)}, expected "
                                 f"{np.dtype(dtype)}{list(shape)}")
            got[name] = x
            return x

        terrain = np.asarray(arrays.get("terrain", np.zeros((0,), np.uint8)))
        if terrain.ndim != 2 or terrain.dtype != np.uint8 or terrain.shape[0] % RES or terrain.shape[1] % RES \
                or terrain.size == 0 or terrain.max(initial=0) >= len(TERRAIN_NAMES):
            raise ValueError(f"world state: field 'terrain' is {terrain.dtype}{list(terrain.shape)}, expected a "
                             f"uint8 grid of terrain codes 0..{len(TERRAIN_NAMES) - 1} with sides multiple of {RES}")
        got["terrain"] = terrain
        height, width = terrain.shape
        gw, gh = width // RES, height // RES
        n_cells = gw * gh
        pos = np.asarray(arrays.get("site_pos", np.zeros((0,), np.float32)))
        S = len(pos) if pos.ndim == 2 else -1
        field("site_pos", np.float32, (max(S, 0), 2))
        for name in ("site_kind", "site_max", "site_stock", "site_owner"):
            field(name, np.int32, (S,))
        field("bucket", np.int32, (N_KINDS * n_cells + 1,))
        field("field", np.int32, (N_KINDS, n_cells))
        field("nearest", np.int32, (N_KINDS, n_cells))
        for name in self._AGENT_STATE + ("tallies",):
            mine = getattr(self, name).numpy()
            field(name.lstrip("_"), mine.dtype, mine.shape)
        field("tick", np.int64, ())
        field("seed", np.int64, ())
        N = len(got["home"])
        checks = {
            "site_kind": (0, N_KINDS - 1), "site_owner": (-1, N - 1), "home": (0, S - 1), "field": (-1, S - 1),
            "nearest": (-1, S - 1), "target": (-1, S - 1), "claim": (-1, S - 1), "bucket": (0, S),
            "cur_action": (-1, len(self.action_names) - 1), "site_stock": (0, max(MAX_STOCK.values())),
            "site_max": (0, max(MAX_STOCK.values())), "trade": (0, len(TRADES) - 1), "tick": (0, 2**62),
            "seed": (0, 0x3FFFFFFF),
        }
        for name, (lo, hi) in checks.items():
            x = got[name]
            if x.size and (x.min() < lo or x.max() > hi):
                raise ValueError(f"world state: field '{name}' holds values outside {lo}..{hi}")
        if (np.diff(got["site_kind"]) < 0).any() or (np.diff(got["bucket"]) < 0).any() or \
                (len(got["bucket"]) and got["bucket"][-1] != S):
            raise ValueError("world state: fields 'site_kind' and 'bucket' are not sorted site buckets")
        if (got["site_stock"] > got["site_max"]).any():
            raise ValueError("world state: field 'site_stock' holds more than 'site_max' allows")
        for name in ("site_pos", "positions"):
            if not np.isfinite(got[name]).all():
                raise ValueError(f"world state: field '{name}' is not finite")
        # Everything checked: write. The map's arrays are new arrays (the map may differ in size).
        dev = self.device
        self.terrain = got["terrain"].copy()
        self.width, self.height, self.gw, self.gh = width, height, gw, gh
        self.n_sites = S
        for name in self._MAP_STATE:
            dtype = wp.vec2 if name == "site_pos" else wp.int32
            setattr(self, name, wp.array(got[name], dtype=dtype, device=dev))
        for name in self._AGENT_STATE + ("tallies",):
            getattr(self, name).assign(got[name.lstrip("_")])
        self.kind_first = np.searchsorted(got["site_kind"], np.arange(N_KINDS + 1)).astype(np.int64)
        self.tick = got["tick"].copy()
        self.seed = int(got["seed"])
        self._rebuild_launches()

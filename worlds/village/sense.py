"""The village's sense kernels: what the world writes into the agents' rows (facts, priorities, costs, enabled).

`sense_clock` turns the brain's clock (a device array: the tick is never a launch argument, so a captured graph
replays correctly on every tick) into the tick's timer firings, random seed and market hours; `sense_kernel` then
writes every agent's row. `start_kernel` and `work_costs_kernel` write the starting rows at reset. These three
per-agent kernels write only their own agent's rows and use no atomics, so they run in disjoint chunks over the
shared CPU pool (their last parameters ``first``, ``chunk``: `goap.launch.Launcher.launch_rows`).
"""

# Warp kernels declare dynamic variables as int(0) / float(0.0); UP018 would turn them into constants.
# ruff: noqa: UP018

from __future__ import annotations

import warp as wp

from goap.kernels.agents import Agents
from goap.kernels.codes import FAILED
from goap.kernels.semantics import Layout
from worlds.village.geometry import (
    C_COST_EVERY,
    C_HYSTERESIS,
    C_NO_SITE_COST,
    C_TOOL_P,
    F_AT,
    F_BERRIES,
    F_COINS,
    F_FATIGUE,
    F_FIRE,
    F_FOOD,
    F_HOE,
    F_HOUSE,
    F_HUNGER,
    F_IRON,
    F_MARKET,
    F_PICK,
    F_ROD,
    F_STOCK_FOOD,
    F_STOCK_WOOD,
    F_TAX,
    F_TOOLS,
    F_WOOD,
    G_EAT,
    G_FORGE,
    G_HOE,
    G_PICK,
    G_REST,
    G_TAX,
    K_BUSH,
    K_HOUSE,
    K_TREE,
    NOW_MARKET,
    NOW_SEED,
    Acts,
    Grid,
    Villagers,
    cell_of,
    get_fact,
    set_fact,
    tick_seed,
)
from worlds.village.layout import DAY

wp.set_module_options({"enable_backward": False})

C_DAY = wp.constant(DAY)
C_OPEN_TICKS = wp.constant(DAY * 5 // 6)  # the market closes for the last sixth of each day


@wp.kernel
def sense_clock(clock: wp.array(dtype=wp.int64), periods: wp.array(dtype=wp.int32), seed: int,
                now: wp.array(dtype=wp.int32)):
    """The tick's values for `sense_kernel` (one thread): which timers fire, the random seed, the market hours.

    A timer of period P fires for the agents whose phase is (-tick) mod P, i.e. (tick + phase) % P == 0.
    """
    tick = clock[0]
    for j in range(periods.shape[0]):
        p = wp.int64(periods[j])
        now[j] = wp.int32((p - tick % p) % p)
    now[NOW_SEED] = tick_seed(seed, tick, 1)
    now[NOW_MARKET] = wp.where(tick % wp.int64(C_DAY) < wp.int64(C_OPEN_TICKS), 1, 0)


@wp.kernel
def sense_kernel(
    agents: Agents,
    layout: Layout,
    g: Grid,
    ac: Acts,
    v: Villagers,
    clock: wp.array(dtype=wp.int64),
    now: wp.array(dtype=wp.int32),
    storm_p: float,
    speed: float,
    first: int,
    chunk: int,
):
    """Needs and the village's timers, storms and market hours into each agent's facts; its priorities; the
    walking costs and the enabled gathering actions."""
    i = wp.tid() + first
    if not agents.alive[i]:
        return
    states = agents.states
    hunger = get_fact(states, i, layout, F_HUNGER)
    if v.phase[i, 0] == now[0]:
        hunger = wp.min(hunger + 1, 5)
        set_fact(states, i, layout, F_HUNGER, hunger)
    fatigue = get_fact(states, i, layout, F_FATIGUE)
    if v.phase[i, 1] == now[1]:
        fatigue = wp.min(fatigue + 1, 5)
        set_fact(states, i, layout, F_FATIGUE, fatigue)
    if v.phase[i, 2] == now[2]:  # the village uses what the stockpile holds
        set_fact(states, i, layout, F_STOCK_WOOD, wp.max(get_fact(states, i, layout, F_STOCK_WOOD) - 1, 0))
        set_fact(states, i, layout, F_STOCK_FOOD, wp.max(get_fact(states, i, layout, F_STOCK_FOOD) - 1, 0))
    if v.phase[i, 3] == now[3]:
        set_fact(states, i, layout, F_FIRE, 0)
    if v.phase[i, 4] == now[4]:
        set_fact(states, i, layout, F_TAX, 0)
    if v.phase[i, 5] == now[5]:  # a merchant buys one forged tool
        tools = get_fact(states, i, layout, F_TOOLS)
        if tools > 0:
            set_fact(states, i, layout, F_TOOLS, tools - 1)
            set_fact(states, i, layout, F_COINS, wp.min(get_fact(states, i, layout, F_COINS) + 3, 9))
    rng = wp.rand_init(now[NOW_SEED], i)
    if wp.randf(rng) < storm_p:
        set_fact(states, i, layout, F_HOUSE, 0)
    market_open = now[NOW_MARKET]
    set_fact(states, i, layout, F_MARKET, market_open)

    p = v.positions[i]
    cell = cell_of(g, p)
    # Berries: 3 while some bush in the world has any (the reservations find the agent a bush with berries, and
    # another when it is stripped), 0 when none has. A count that followed the nearest bush's stock would change
    # the packed state of thousands of agents every tick for nothing a plan can use.
    bush = g.field[K_BUSH, cell]
    berries = int(0)
    if bush >= 0:
        berries = 3
    set_fact(states, i, layout, F_BERRIES, berries)

    # Priorities: needs grow with hunger and fatigue, the rest at a per-agent base level; the current goal keeps
    # a bonus; the taxman is only at the market while it is open.
    coins = get_fact(states, i, layout, F_COINS)
    iron = get_fact(states, i, layout, F_IRON) > 0 or coins >= 3  # has iron or can buy it
    n_goals = agents.priorities.shape[1]
    for q in range(n_goals):
        pr = v.base_priority[i, q]
        if q == G_EAT:
            pr = 1.0 + 2.0 * float(hunger)
        elif q == G_REST:
            pr = 1.0 + 1.6 * float(fatigue)
        elif q == G_TAX and (market_open == 0 or coins < 4):
            pr = 0.0
        elif q == G_FORGE and not (iron or get_fact(states, i, layout, F_PICK) != 0):
            pr = 0.0
        elif (q == G_PICK or q == G_HOE) and not iron:
            pr = 0.0
        if agents.goal[i] == q and pr > 0.0:
            pr = pr + C_HYSTERESIS
        agents.priorities[i, q] = pr

    # Costs: walking time to the nearest available site of each place (the forest: a tree or a bush), in units of
    # TICKS_PER_COST ticks, the domain cost at least. Enabled: a site of the kind exists (for gathering: has stock).
    # The work actions' costs depend on the trade only and are written once (`work_costs_kernel`). Walking costs
    # matter when the agent plans: they are refreshed every COST_EVERY ticks, and at once for an agent whose plan
    # has run out or whose action failed (the ones about to plan).
    for m in range(ac.gathers.shape[0]):
        a = ac.gathers[m]
        agents.enabled[i, a] = g.field[ac.kind[a], cell] >= 0
    refresh = (wp.int64(i) + clock[0]) % wp.int64(C_COST_EVERY) == wp.int64(0)
    if not refresh and agents.step[i] < agents.plan_length[i] and agents.action_status[i] != wp.int8(FAILED):
        return
    for m in range(ac.moves.shape[0]):
        a = ac.moves[m]
        k = ac.place_kind[ac.move_place[a]]
        s = int(-1)
        if k == K_HOUSE:
            s = v.home[i]
        else:
            s = g.field[k, cell]
            if s < 0:
                s = g.nearest[k, cell]
        d = C_NO_SITE_COST
        if s >= 0:
            d = wp.length(g.site_pos[s] - p) / speed
        if k == K_TREE and bush >= 0:
            d = wp.min(d, wp.length(g.site_pos[bush] - p) / speed)
        agents.costs[i, a] = wp.max(d, ac.base_cost[a])
        agents.enabled[i, a] = s >= 0


# --- reset ------------------------------------------------------------------------------------------------------
@wp.kernel
def work_costs_kernel(agents: Agents, v: Villagers, ac: Acts, first: int, chunk: int):
    """Every action's cost for the agent's trade (sense overwrites the walks' costs each tick); all enabled."""
    i = wp.tid() + first
    for a in range(agents.costs.shape[1]):
        agents.costs[i, a] = ac.base_cost[a] * ac.trade_cost[a, v.trade[i]]
        agents.enabled[i, a] = True


@wp.kernel
def start_kernel(
    agents: Agents,
    layout: Layout,
    g: Grid,
    v: Villagers,
    trade_cum: wp.array(dtype=wp.float32),
    periods: wp.array(dtype=wp.int32),
    goal_priority: wp.array(dtype=wp.float32),
    trade_goals: wp.array2d(dtype=wp.float32),
    seed: int,
    width: float,
    height: float,
    first: int,
    chunk: int,
):
    """Starting facts, trade, phases of the timers, base priorities and a spot beside the house, per agent."""
    i = wp.tid() + first
    states = agents.states
    rng = wp.rand_init(seed, i)
    set_fact(states, i, layout, F_AT, 0)
    set_fact(states, i, layout, F_HUNGER, wp.randi(rng, 0, 3))
    set_fact(states, i, layout, F_FATIGUE, wp.randi(rng, 0, 3))
    set_fact(states, i, layout, F_FOOD, wp.randi(rng, 0, 3))
    set_fact(states, i, layout, F_COINS, wp.randi(rng, 2, 7))
    set_fact(states, i, layout, F_WOOD, wp.randi(rng, 0, 2))
    # not everyone wakes to a cold hearth and an empty stockpile share
    set_fact(states, i, layout, F_FIRE, int(wp.randf(rng) < 0.6))
    set_fact(states, i, layout, F_STOCK_WOOD, wp.randi(rng, 0, 3))
    set_fact(states, i, layout, F_STOCK_FOOD, wp.randi(rng, 0, 3))
    u = wp.randf(rng)
    t = int(0)
    for j in range(trade_cum.shape[0]):
        if u >= trade_cum[j]:
            t = j + 1
    v.trade[i] = t
    hoe = wp.randf(rng) < wp.where(t == 2, C_TOOL_P, 0.1 * C_TOOL_P)
    rod = wp.randf(rng) < wp.where(t == 3, C_TOOL_P, 0.1 * C_TOOL_P)
    pick = wp.randf(rng) < wp.where(t == 4, C_TOOL_P, 0.1 * C_TOOL_P)
    set_fact(states, i, layout, F_HOE, int(hoe))
    set_fact(states, i, layout, F_ROD, int(rod))
    set_fact(states, i, layout, F_PICK, int(pick))
    set_fact(states, i, layout, F_HOUSE, int(wp.randf(rng) < 0.5))
    for j in range(v.phase.shape[1]):
        v.phase[i, j] = wp.randi(rng, 0, periods[j])
    for q in range(v.base_priority.shape[1]):  # the domain's priority x a personality x the trade's weight
        v.base_priority[i, q] = goal_priority[q] * wp.randf(rng, 0.7, 1.3) * trade_goals[t, q]
    h = g.site_pos[v.home[i]]
    p = h + wp.vec2(wp.randf(rng, -1.5, 1.5), wp.randf(rng, -1.5, 1.5))
    v.positions[i] = wp.vec2(wp.clamp(p[0], 0.0, width - 0.01), wp.clamp(p[1], 0.0, height - 0.01))

"""The village as a game: villages of a few thousand people, sites that deplete and regrow, needs that grow.

`VillageWorld` implements `goap.world.World` for the domain in ``domain.toml``. Every per-agent and per-site step
of a tick is a Warp kernel on the brain's device (``brain.device``), launched through ``brain.launcher``; host code
only loops over site kinds and launches. Nothing is read back to the host during a tick, and nothing that changes
from tick to tick is a launch argument: the world is ``capturable``.

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
``FIELD_SCHEDULE`` order) and one over all sites (built at reset).

The package, by layer: `worlds.village.layout` (tables and the numpy map), `worlds.village.geometry` (the Warp
structs and shared ``@wp.func``), `worlds.village.sense`, `worlds.village.act` and `worlds.village.fields` (the
kernels, one Warp module each), `worlds.village.snapshot` (get_state / set_state), this module (the world).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import warp as wp

from goap.kernels import semantics
from goap.launch import host_sized
from worlds.village import snapshot
from worlds.village.act import (
    act_clock,
    advance_kernel,
    begin_kernel,
    bid_kernel,
    clear_bids_kernel,
    regrow_kernel,
    settle_kernel,
)
from worlds.village.fields import FieldFlood
from worlds.village.geometry import N_NOW, Grid, Villagers, make_acts
from worlds.village.layout import (
    ACTION_NAMES,
    AGENTS_PER_HOUSE,
    AGENTS_PER_VILLAGE,
    ANVIL,
    BIG,
    BUSH,
    CLAIM_ROUNDS,
    DOMAIN,
    DOMAIN_PATH,
    DYNAMIC,
    FACT_NAMES,
    FIELD_CELLS_PER_TICK,
    FIELD_EVERY,
    FIELD_SCHEDULE,
    GOAL_NAMES,
    HOUSE,
    HYSTERESIS,
    KINDS,
    MAX_STOCK,
    N_KINDS,
    PLACES,
    PLOT,
    REGROW_P,
    RES,
    ROCK_SITE,
    SPEED,
    SPOT,
    STALL,
    STOCKED,
    STOCKPILE,
    STORM_P,
    TALLIES,
    TICKS_PER_COST,
    TIMERS,
    TRADE_GOALS,
    TRADE_SHARE,
    TRADES,
    TREE,
    VILLAGE_CELLS,
    WORK,
    lay_out,
    site_counts,
    village_terrain,
)
from worlds.village.objective import action_worth, credit_kernel, objective_total
from worlds.village.sense import sense_clock, sense_kernel, start_kernel, work_costs_kernel

if TYPE_CHECKING:
    from goap.runtime import Brain


class VillageWorld:
    """The villages, their sites and the villagers' bodies; see the module docstring.

    The tick's kernels read the brain's agents as ``brain.agents`` and the world's arrays as the structs of
    `worlds.village.geometry`; the tick number comes from device clocks (``brain.clock`` in sense, the world's own
    in act), so ``sense`` and ``act`` can be captured as graphs and replayed (``capturable = True``). What a graph
    bakes in is ``graph_key()``: the tuning attributes below, the seed, and the map (its arrays and sizes, replaced
    by `reset` and `set_state`); a brain that replays graphs captures them again when the key changes. ``act``'s
    ``dt`` is baked in too: a captured tick is for one ``dt``.

    Args:
        agents_per_village: the most people one village tile holds; more agents make more villages.
        village_size: cells per side of a village tile.

    Attributes:
        speed: cells walked per tick (at ``dt`` = 1).
        ticks_per_cost: walking this many ticks costs the planner 1.
        storm_p: chance per agent and tick that a storm damages its house.
    """

    name = "village"
    capturable = True
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
        self.domain = DOMAIN
        self.action_names = list(ACTION_NAMES)
        self.places = list(PLACES)
        for name in self.action_names:
            if not name.startswith("go_") and name not in WORK:
                raise ValueError(f"village world does not know action {name!r}")
        self.speed = SPEED
        self.ticks_per_cost = TICKS_PER_COST
        self.storm_p = STORM_P
        self.brain: Brain | None = None
        self.device = "cpu"
        self.width = self.height = self.village_size
        self.seed = 0
        self._map_epoch = 0  # counts the maps laid out or restored: a graph over an older map is stale

    def graph_key(self) -> tuple:
        """Every value a captured ``sense`` or ``act`` bakes in besides ``dt``: equal keys, the same graphs."""
        return (float(self.speed), float(self.ticks_per_cost), float(self.storm_p), self.seed, self._map_epoch)

    # --- layout ---------------------------------------------------------------------------------------------
    def generate(self, n_agents: int, seed: int) -> None:
        """Lay out the villages for ``n_agents`` people on the host (`worlds.village.layout.lay_out`).

        Sets ``terrain``, ``width``, ``height``, ``tiles``, the field grid's ``gw`` x ``gh``, and the site arrays
        and homes as numpy (``_host``); `reset` copies them to the device.
        """
        m = lay_out(n_agents, seed, self.agents_per_village, self.village_size)
        self.village_cells, self.tiles = m.village_cells, m.tiles
        self.width, self.height, self.gw, self.gh = m.width, m.height, m.gw, m.gh
        self.terrain = m.terrain
        self._host = m.sites

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
        del self._host
        self._load_map(self.terrain, {name: h[name] for name in ("site_pos", "site_kind", "site_max", "site_stock",
                                                                 "site_owner", "bucket")})
        self.home = wp.array(h["home"], dtype=wp.int32, device=dev)
        G = brain.tables.goals.n_goals
        self._positions = wp.zeros(N, dtype=wp.vec2, device=dev)
        self.phase = wp.zeros((N, len(TIMERS)), dtype=wp.int32, device=dev)
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
        v = self._villagers = Villagers()
        for name in Villagers.vars:
            setattr(v, name, getattr(self, "_positions" if name == "positions" else name))
        self.tallies = wp.zeros(len(TALLIES), dtype=wp.int64, device=dev)
        self._contribution = wp.zeros(N, dtype=wp.float64, device=dev)  # each agent's share of the objective
        self.starved = wp.zeros(1, dtype=wp.int64, device=dev)  # agent-ticks at the top of the hunger scale
        self._clock = wp.zeros(1, dtype=wp.int64, device=dev)  # the world's tick (+1 per act, in `act_clock`)
        self._tables(brain)
        for k in range(N_KINDS):
            self._refresh(k, self.nearest, only_free=False)
            self._refresh(k, self.field, only_free=k in DYNAMIC)
        if N:
            launcher = brain.launcher
            trade_cum = wp.array(np.cumsum(TRADE_SHARE)[:-1].astype(np.float32), dtype=wp.float32, device=dev)
            launcher.launch_rows(start_kernel, N, [
                brain.agents, self._layout, self._g, v, trade_cum, self._periods, self._goal_priority,
                self._trade_goals, self.seed, float(self.width), float(self.height)], record=False)
            launcher.launch_rows(work_costs_kernel, N, [brain.agents, v, self._acts], record=False)

    def _load_map(self, terrain: np.ndarray, sites: dict[str, np.ndarray]) -> None:
        """Take a map (at reset, or from a snapshot): its device arrays, the field grid, the scratch sized by it.

        ``sites`` holds the map's arrays by their attribute names; ``field`` and ``nearest`` start at -1 where it
        has none (a new map: `reset` builds them).
        """
        dev = self.device
        self.terrain = np.array(terrain, dtype=np.uint8)
        self.height, self.width = self.terrain.shape
        self.gw, self.gh = self.width // RES, self.height // RES
        n_cells = self.gw * self.gh
        S = self.n_sites = len(sites["site_pos"])
        for name in snapshot.MAP_STATE:
            if name in sites:
                dtype = wp.vec2 if name == "site_pos" else wp.int32
                setattr(self, name, wp.array(sites[name], dtype=dtype, device=dev))
            else:
                setattr(self, name, wp.full((N_KINDS, n_cells), -1, dtype=wp.int32, device=dev))
        self.kind_first = np.searchsorted(sites["site_kind"], np.arange(N_KINDS + 1)).astype(np.int64)
        self.bid = wp.full(max(S, 1), BIG, dtype=wp.int32, device=dev)
        g = self._g = Grid()
        g.gw, g.gh = self.gw, self.gh
        g.field, g.nearest, g.bucket = self.field, self.nearest, self.bucket
        g.site_pos, g.site_kind, g.site_max = self.site_pos, self.site_kind, self.site_max
        g.site_stock, g.site_owner = self.site_stock, self.site_owner
        self._fields = FieldFlood(g, dev)
        # A rebuild costs in proportion to the map: on big maps (many villages) rebuild less often.
        self._field_every = max(FIELD_EVERY, -(-n_cells // FIELD_CELLS_PER_TICK))
        self._map_epoch += 1

    def _tables(self, brain: Brain) -> None:
        """The domain's tables and the world's per-tick device values (allocated once per reset)."""
        dev = self.device
        self._layout = semantics.to_device(brain.tables.layout, semantics.Layout, dev)
        ac = self._acts = make_acts(self.action_names, brain.tables.cost, dev)
        self._worth = wp.array(action_worth(self.action_names), dtype=wp.float64, device=dev)
        f = brain.domain.fact_index("hunger")
        lay = brain.tables.layout
        self._hunger = (int(lay.word[f]), int(lay.shift[f]), wp.uint64(lay.field_mask(f)),
                        wp.uint64(brain.domain.facts[f].max - brain.domain.facts[f].min))
        self.move_place, self.kind_of_action, self.work_ticks = (
            ac.move_place.numpy(), ac.kind.numpy(), ac.work_ticks.numpy())
        self._goal_priority = wp.array(np.asarray(brain.tables.goals.priority, np.float32), dtype=wp.float32,
                                       device=dev)
        weights = np.ones((len(TRADES), len(GOAL_NAMES)), np.float32)
        for name, w in TRADE_GOALS.items():
            weights[:, GOAL_NAMES.index(name)] = w
        self._trade_goals = wp.array(weights, dtype=wp.float32, device=dev)
        regrow = np.zeros(N_KINDS, np.float32)
        for k, q in REGROW_P.items():
            regrow[k] = q
        self._regrow_p = wp.array(regrow, dtype=wp.float32, device=dev)
        self._periods = wp.array(np.array(TIMERS, np.int32), dtype=wp.int32, device=dev)
        self._schedule = wp.array(np.array(FIELD_SCHEDULE, np.int32), dtype=wp.int32, device=dev)
        self._now = wp.zeros(N_NOW, dtype=wp.int32, device=dev)  # sense's per-tick values (`sense_clock`)
        self._regrow_seed = wp.zeros(1, dtype=wp.int32, device=dev)  # act's (`act_clock`)
        self._field_kind = wp.full(1, -1, dtype=wp.int32, device=dev)
        self._refresh_kind = wp.full(1, -1, dtype=wp.int32, device=dev)

    def _refresh(self, k: int, out: wp.array, only_free: bool) -> None:
        """Rebuild kind k's row of a nearest-site field now (at reset, or after changing sites from the host)."""
        self._refresh_kind.fill_(k)
        self._fields.launch(self.brain.launcher, self._refresh_kind, out, only_free)

    @property
    def tick(self) -> int:
        """The world's tick: how many times ``act`` has run since reset (a host read of its device clock)."""
        return int(self._clock.numpy()[0])

    # --- sense ----------------------------------------------------------------------------------------------
    def sense(self, brain: Brain) -> None:
        N = brain.n_agents
        if N == 0:
            return
        launcher = brain.launcher
        launcher.launch(sense_clock, 1, [brain.clock, self._periods, self.seed, self._now])
        launcher.launch_rows(sense_kernel, N, [
            brain.agents, self._layout, self._g, self._acts, self._villagers, brain.clock, self._now,
            float(self.storm_p), float(self.speed * self.ticks_per_cost)])

    # --- act ------------------------------------------------------------------------------------------------
    def act(self, brain: Brain, dt: float) -> None:
        launcher, N, g, v = brain.launcher, brain.n_agents, self._g, self._villagers
        launcher.launch(act_clock, 1, [self._clock, self.seed, self._schedule, self._field_every, self._regrow_seed,
                                       self._field_kind])
        if N:
            agents, ac = brain.agents, self._acts
            launcher.launch(begin_kernel, N, [agents, g, ac, v])
            for _ in range(CLAIM_ROUNDS):
                launcher.launch(bid_kernel, N, [g, ac, v, self.bid])
                launcher.launch(settle_kernel, N, [g, v, self.bid])
                launcher.launch(clear_bids_kernel, N, [v, self.bid])
            launcher.launch(advance_kernel, N, [agents, g, ac, v, self.tallies, float(self.speed * dt)])
            launcher.launch(credit_kernel, N, [agents, self._worth, *self._hunger, self._contribution, self.starved])
        # The world moves on: stock regrows, a kind's nearest-available-site field is rebuilt when one is due.
        if self.n_sites:
            launcher.launch(regrow_kernel, self.n_sites, [g, self._regrow_p, self._regrow_seed])
        # The rebuild's launches do nothing on ticks where no field is due (`act_clock` wrote -1); on the CPU outside
        # a capture, where reading the device is free, they are skipped on those ticks (`goap.launch.host_sized`).
        if not host_sized(launcher.device) or self._field_kind.numpy()[0] >= 0:
            self._fields.launch(launcher, self._field_kind, self.field, True)

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

    def contribution(self, brain: Brain) -> wp.array:
        """float64 [N] on the device: what each agent's actions have earned the objective since the reset
        (`worlds.village.objective`); the objective's total is their sum."""
        return self._contribution

    def score(self) -> dict[str, float]:
        tallies = self.tallies.numpy()
        out: dict[str, float] = {name: float(v) for name, v in zip(TALLIES, tallies, strict=True)}
        total = objective_total(tallies, int(self.starved.numpy()[0]))
        out["objective_total"] = total
        b = self.brain
        if b is None:
            return out
        minutes = max(b.tick_count, 1) / 60.0
        out["objective"] = total / max(b.n_agents, 1) / minutes
        out["goals_achieved_per_agent_minute"] = b.counters["goals_achieved"] / max(b.n_agents, 1) / minutes
        if b.n_agents:
            states = b.states if isinstance(b.states, np.ndarray) else b.states.numpy()
            f = FACT_NAMES.index("hunger")
            lay = b.tables.layout
            hunger = (states[:, lay.word[f]] >> np.uint64(lay.shift[f])) & np.uint64(lay.field_mask(f))
            out["starving"] = float((hunger.astype(np.int64) + lay.min[f] >= self.domain.fact("hunger").max).sum())
        else:
            out["starving"] = 0.0
        m, s = self.site_max.numpy(), self.site_stock.numpy()
        out["sites_depleted"] = float(((m > 0) & (s == 0)).sum())
        return out

    # --- snapshots (`worlds.village.snapshot`) --------------------------------------------------------------
    def get_state(self) -> dict[str, np.ndarray]:
        return snapshot.get_state(self)

    def set_state(self, arrays: dict[str, Any]) -> None:
        """Restore what `get_state` returned, on a world reset for the same number of agents.

        The map may be another one (another seed lays out another number of sites): its arrays take the
        snapshot's sizes. Every field's presence, dtype, shape and range is checked before anything is written;
        a bad one raises ValueError naming it, and the world is left as it was.
        """
        snapshot.set_state(self, arrays)


__all__ = [
    "AGENTS_PER_HOUSE", "ANVIL", "BUSH", "DOMAIN_PATH", "HOUSE", "HYSTERESIS", "KINDS", "MAX_STOCK", "PLOT", "RES",
    "ROCK_SITE", "SPOT", "STALL", "STOCKED", "STOCKPILE", "TALLIES", "TRADES", "TREE", "VillageWorld", "site_counts",
    "village_terrain",
]

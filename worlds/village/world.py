"""The village as a game: a seeded map, resource sites that deplete and regrow, needs that grow, walking.

`VillageWorld` implements `goap.world.World` for the domain in ``domain.toml``. Everything per agent is numpy
over arrays (loops run over action kinds, site kinds or grid offsets, never over agents).

- **Map.** A ``terrain`` grid (grass, water, forest, rock, field) with a river, forest and rock blobs and field
  patches around a village centre. Sites (``sites``): houses (one per group of agents), trees and berry bushes
  in forests, ore rocks, field plots, fishing spots on the river, stockpiles, anvils (the smithy) and stalls
  (the market).
- **Where an agent is.** ``at`` is the place the agent last walked to (a ``go_*`` action finishing at a site of
  that place); agents start at home. A work action walks the last few cells to its own site (the nearest
  suitable one) and then works for a few ticks.
- **Resources.** Trees, bushes, rocks and fishing spots have stock that the work takes and that regrows.
  Trees, bushes, rocks, spots (fishing), plots and anvils are claimed by one agent at a time (lowest agent
  index first): a site already taken, or gone, fails the action (``FAILED``), the agent replans, and that
  action is disabled for it for a few ticks.
- **Needs and the village.** Hunger and fatigue grow on timers; the village eats from the stockpile, fires burn
  down, tax falls due, storms damage houses, a merchant collects forged tools; so the goals come back.
- **Costs and priorities.** ``go_*`` costs the walking time to the nearest suitable site (at least the domain
  cost); eat and rest priorities grow with hunger and fatigue, the other goals keep a per-agent base level.

Nearest-site lookups use a jump-flooding nearest-site field on a coarse grid, refreshed every few ticks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from goap.domain_file import load_domain
from goap.world import DONE, FAILED

if TYPE_CHECKING:
    from goap.runtime import Brain

DOMAIN_PATH = Path(__file__).with_name("domain.toml")

GRASS, WATER, FOREST, ROCK, FIELD = range(5)
TERRAIN_NAMES = ("grass", "water", "forest", "rock", "field")

# Site kinds.
KINDS = ("house", "tree", "bush", "rock", "plot", "spot", "stockpile", "anvil", "stall")
HOUSE, TREE, BUSH, ROCK_SITE, PLOT, SPOT, STOCKPILE, ANVIL, STALL = range(len(KINDS))
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
CLAIMED = (TREE, BUSH, ROCK_SITE, SPOT, PLOT, ANVIL)
MAX_STOCK = {TREE: 5, BUSH: 3, ROCK_SITE: 6, SPOT: 3}
REGROW_P = {TREE: 0.03, BUSH: 0.06, ROCK_SITE: 0.01, SPOT: 0.04}  # chance per site and tick of +1

# Work actions: site kind, whether it takes one stock, whether it claims the site, ticks of work.
WORK = {
    "chop_wood": (TREE, True, True, 3),
    "gather_berries": (BUSH, True, True, 2),
    "mine_ore": (ROCK_SITE, True, True, 4),
    "catch_fish": (SPOT, True, True, 3),
    "fill_bucket": (SPOT, False, False, 1),
    "plant_seeds": (PLOT, False, True, 3),
    "water_crops": (PLOT, False, True, 2),
    "harvest": (PLOT, False, True, 3),
    "smelt_ore": (ANVIL, False, True, 3),
    "forge_pickaxe": (ANVIL, False, True, 3),
    "forge_hoe": (ANVIL, False, True, 3),
    "forge_tool": (ANVIL, False, True, 3),
    "buy_iron": (STALL, False, False, 1),
    "buy_bread": (STALL, False, False, 1),
    "sell_wood": (STALL, False, False, 1),
    "sell_tool": (STALL, False, False, 1),
    "pay_tax": (STALL, False, False, 1),
    "deposit_wood": (STOCKPILE, False, False, 1),
    "deposit_food": (STOCKPILE, False, False, 1),
    "light_fire": (HOUSE, False, False, 2),
    "cook_fish": (HOUSE, False, False, 2),
    "saw_planks": (HOUSE, False, False, 3),
    "repair_house": (HOUSE, False, False, 4),
    "carve_rod": (HOUSE, False, False, 3),
    "sleep": (HOUSE, False, False, 6),
    "eat": (-1, False, False, 2),
}
#: What a finished action adds to the world's tallies.
TALLY = {
    "chop_wood": ("wood_produced", 1),
    "gather_berries": ("food_produced", 1),
    "harvest": ("food_produced", 3),
    "cook_fish": ("food_produced", 2),
    "mine_ore": ("ore_produced", 1),
    "catch_fish": ("fish_caught", 1),
}
TALLIES = (
    "wood_produced",
    "food_produced",
    "ore_produced",
    "fish_caught",
    "actions_taken",
    "actions_gone",
    "actions_contested",
    "ticks_waited",
)

SPEED = 1.5  # cells per tick
WORK_RADIUS = 12.0  # a work action walks at most this far to its site
BLOCK_TICKS = 8  # a failed action is disabled for the agent this long
FIELD_EVERY = 8  # refresh each nearest-available-site field every this many ticks
AGENTS_PER_HOUSE = 6
HUNGER_EVERY, FATIGUE_EVERY = 120, 100
VILLAGE_EATS_EVERY, FIRE_BURNS_EVERY, TAX_EVERY, TOOL_ORDER_EVERY = 150, 120, 400, 300
STORM_P = 0.002
DAY = 720  # ticks; the market closes for the last sixth of each day
NO_SITE_COST = 1000.0
CLAIM_ROUNDS = 2
MAX_WAIT = 5  # ticks an agent waits for a contested site before its action fails
#: Where a claiming action also looks for a free site (offsets from the agent, in cells).
CANDIDATE_OFFSETS = [
    np.array(o, dtype=np.float32)
    for o in ((0, 0), (4, 0), (-4, 0), (0, 4), (0, -4), (4, 4), (-4, -4), (4, -4), (-4, 4))
]


def _jump_flood(seed: np.ndarray, site_pos: np.ndarray, res: int) -> np.ndarray:
    """Nearest seeded site for every cell of a coarse grid (jump flooding, one extra pass at step 1)."""
    h, w = seed.shape
    cy = (np.arange(h, dtype=np.float32)[:, None] + 0.5) * res
    cx = (np.arange(w, dtype=np.float32)[None, :] + 0.5) * res
    idx = seed.copy()

    def dist(i: np.ndarray) -> np.ndarray:
        p = site_pos[np.maximum(i, 0)]
        d = (p[..., 0] - cx) ** 2 + (p[..., 1] - cy) ** 2
        return np.where(i >= 0, d, np.inf)

    best = dist(idx)
    step = 1 << max(0, (max(h, w) - 1).bit_length() - 1)
    steps = []
    while step >= 1:
        steps.append(step)
        step //= 2
    steps.append(1)
    for s in steps:
        for dy in (-s, 0, s):
            for dx in (-s, 0, s):
                if dy == 0 and dx == 0:
                    continue
                shifted = np.full_like(idx, -1)
                ys, yd = (slice(0, h - dy), slice(dy, h)) if dy >= 0 else (slice(-dy, h), slice(0, h + dy))
                xs, xd = (slice(0, w - dx), slice(dx, w)) if dx >= 0 else (slice(-dx, w), slice(0, w + dx))
                shifted[yd, xd] = idx[ys, xs]
                d = dist(shifted)
                better = d < best
                idx = np.where(better, shifted, idx)
                best = np.where(better, d, best)
    return idx


class VillageWorld:
    """The village map, its sites and its agents' bodies; see the module docstring."""

    name = "village"

    def __init__(self, width: int = 128, height: int = 128):
        self.width, self.height = int(width), int(height)
        self.domain = load_domain(DOMAIN_PATH)
        d = self.domain
        self.F = {f.name: i for i, f in enumerate(d.facts)}
        self.places = d.fact("at").labels
        A = len(d.actions)
        self.action_names = [a.name for a in d.actions]
        self.move_place = np.full(A, -1, dtype=np.int32)  # place index a go_* walks to
        self.kind = np.full(A, -1, dtype=np.int32)  # site kind of a work action (-1: none, eat)
        self.stocked = np.zeros(A, dtype=bool)
        self.claims = np.zeros(A, dtype=bool)
        self.work_ticks = np.ones(A, dtype=np.int32)
        for a, name in enumerate(self.action_names):
            if name.startswith("go_"):
                self.move_place[a] = self.places.index(name[3:])
            elif name in WORK:
                k, st, cl, t = WORK[name]
                self.kind[a], self.stocked[a], self.claims[a], self.work_ticks[a] = k, st, cl, t
            else:
                raise ValueError(f"village world does not know action {name!r}")
        self.place_kind = np.array([PLACE_KIND[p] for p in self.places], dtype=np.int32)
        self.place_of_kind = np.full(len(KINDS), -1, dtype=np.int32)
        for p, k in enumerate(self.place_kind):
            self.place_of_kind[k] = p
        self.place_of_kind[BUSH] = self.places.index("forest")
        self.res = max(1, max(self.width, self.height) // 64)
        self.gh, self.gw = -(-self.height // self.res), -(-self.width // self.res)
        self.brain: Brain | None = None
        self.rng = np.random.default_rng(0)

    # --- layout ---------------------------------------------------------------------------------------------
    def _terrain(self, rng: np.random.Generator) -> np.ndarray:
        H, W = self.height, self.width
        t = np.full((H, W), GRASS, dtype=np.uint8)
        yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)

        def blobs(kind: int, n: int, rmin: float, rmax: float, where: tuple[float, float, float, float]) -> None:
            x0, x1, y0, y1 = where
            for _ in range(n):
                cx, cy = rng.uniform(x0 * W, x1 * W), rng.uniform(y0 * H, y1 * H)
                r = rng.uniform(rmin, rmax) * min(H, W)
                t[((xx - cx) ** 2 + (yy - cy) ** 2 < r * r) & (t == GRASS)] = kind

        # A river winding north to south, west of the village.
        phase, amp = rng.uniform(0, 2 * np.pi), rng.uniform(0.04, 0.08) * W
        centre = 0.3 * W + amp * np.sin(yy / H * 2 * np.pi * 1.5 + phase)
        t[np.abs(xx - centre) < max(1.5, 0.02 * W)] = WATER
        blobs(FIELD, 6, 0.04, 0.07, (0.45, 0.8, 0.3, 0.7))
        blobs(ROCK, 3, 0.06, 0.1, (0.75, 1.0, 0.0, 0.3))
        blobs(FOREST, 14, 0.06, 0.12, (0.0, 1.0, 0.0, 1.0))
        t[(xx > 0.42 * W) & (xx < 0.78 * W) & (yy > 0.35 * H) & (yy < 0.65 * H) & (t == FOREST)] = GRASS
        return t

    def _place(
        self, rng: np.random.Generator, cells: np.ndarray, n: int, free: np.ndarray, weight: np.ndarray | None = None
    ) -> np.ndarray:
        """n distinct free cells (flat indices) from ``cells`` (a bool grid), as cell-centre positions."""
        cand = np.flatnonzero(cells.ravel() & free.ravel())
        if len(cand) == 0:
            cand = np.flatnonzero(free.ravel())
        n = min(n, len(cand))
        p = None
        if weight is not None:
            p = weight.ravel()[cand].astype(np.float64)
            p /= p.sum()
        pick = rng.choice(cand, size=n, replace=False, p=p)
        free.ravel()[pick] = False
        return np.stack([pick % self.width + 0.5, pick // self.width + 0.5], axis=1).astype(np.float32)

    def make_view(self):
        """The viewer's drawing hooks for this world (`worlds.village.view.VillageView`)."""
        from worlds.village.view import VillageView

        return VillageView(self)

    def reset(self, brain: Brain, seed: int) -> None:
        self.brain = brain
        rng = self.rng = np.random.default_rng(seed)
        N, H, W = brain.n_agents, self.height, self.width
        self.terrain = t = self._terrain(rng)
        free = np.ones((H, W), dtype=bool)
        yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
        near_centre = np.exp(-(((xx - 0.6 * W) / (0.15 * W)) ** 2 + ((yy - 0.5 * H) / (0.15 * H)) ** 2)) + 1e-3
        grass = t == GRASS
        water_edge = (t == WATER) & ~(np.roll(t == WATER, 1, 1) & np.roll(t == WATER, -1, 1))
        counts = {
            HOUSE: max(1, -(-N // AGENTS_PER_HOUSE)),
            STOCKPILE: max(1, N // 500),
            STALL: max(4, N // 100),
            ANVIL: max(4, N // 40),
            PLOT: max(8, N // 6),
            TREE: max(40, N // 2),
            BUSH: max(40, N // 2),
            ROCK_SITE: max(10, N // 10),
            SPOT: max(20, N // 8),
        }
        where = {
            HOUSE: grass,
            STOCKPILE: grass,
            STALL: grass,
            ANVIL: grass,
            PLOT: t == FIELD,
            TREE: t == FOREST,
            BUSH: t == FOREST,
            ROCK_SITE: t == ROCK,
            SPOT: water_edge,
        }
        pos, kind = [], []
        for k in (STOCKPILE, STALL, ANVIL, HOUSE, PLOT, TREE, BUSH, ROCK_SITE, SPOT):
            weight = near_centre if k in (HOUSE, STOCKPILE, STALL, ANVIL) else None
            p = self._place(rng, where[k], counts[k], free, weight)
            pos.append(p)
            kind.append(np.full(len(p), k, dtype=np.int8))
        self.site_pos = np.concatenate(pos)
        self.site_kind = np.concatenate(kind)
        S = len(self.site_pos)
        self.site_max = np.zeros(S, dtype=np.int32)
        for k, m in MAX_STOCK.items():
            self.site_max[self.site_kind == k] = m
        stock = rng.integers(1, np.maximum(self.site_max, 1) + 1, S)
        self.site_stock = np.where(self.site_max > 0, stock, 0).astype(np.int32)
        self.site_claim = np.full(S, -1, dtype=np.int32)
        houses = np.flatnonzero(self.site_kind == HOUSE)

        # Agents: in groups around their houses.
        self.home = houses[np.arange(N) % len(houses)].astype(np.int32)
        jitter = rng.uniform(-1.5, 1.5, size=(N, 2)).astype(np.float32)
        self.positions = np.clip(self.site_pos[self.home] + jitter, 0, [W - 0.01, H - 0.01]).astype(np.float32)
        self.loc = np.full(N, self.places.index("home"), dtype=np.int8)
        self.target_site = np.full(N, -1, dtype=np.int32)
        self.cur_action = np.full(N, -1, dtype=np.int32)
        self.progress = np.zeros(N, dtype=np.int32)
        self.waited = np.zeros(N, dtype=np.int32)
        self.ended = np.zeros(N, dtype=bool)
        self.block_until = np.zeros((N, len(self.action_names)), dtype=np.int64)
        self.phase = rng.integers(0, 10_000, size=(N, 6)).astype(np.int64)  # hunger, fatigue, eats, fire, tax, tools
        G = brain.tables.goals.n_goals
        self.personality = rng.uniform(0.7, 1.3, size=(N, G)).astype(np.float32)
        self.tallies = np.zeros(len(TALLIES), dtype=np.int64)
        self.tick = np.zeros((), dtype=np.int64)
        self.fields = np.full((len(KINDS), self.gh, self.gw), -1, dtype=np.int32)
        self._refresh_fields()

        # Starting facts.
        d, F = self.domain, self.F
        v = np.repeat(np.asarray(d.default_state(), dtype=np.int64)[None], N, axis=0)
        v[:, F["hunger"]] = rng.integers(0, 4, N)
        v[:, F["fatigue"]] = rng.integers(0, 3, N)
        v[:, F["food"]] = rng.integers(0, 3, N)
        v[:, F["coins"]] = rng.integers(2, 7, N)
        v[:, F["wood"]] = rng.integers(0, 2, N)
        v[:, F["has_rod"]] = rng.random(N) < 0.2
        v[:, F["has_pickaxe"]] = rng.random(N) < 0.1
        v[:, F["has_hoe"]] = rng.random(N) < 0.15
        v[:, F["house_repaired"]] = rng.random(N) < 0.5
        v[:, F["at"]] = self.loc
        brain.states[...] = brain.tables.pack_states(v)

    # --- nearest sites --------------------------------------------------------------------------------------
    def _refresh_fields(self, kinds: Any = None) -> None:
        kinds = range(len(KINDS)) if kinds is None else kinds
        cell = (self.site_pos // self.res).astype(np.int64)
        for k in kinds:
            if k == HOUSE:
                continue
            ok = self.site_kind == k
            if k in STOCKED:
                ok &= self.site_stock > 0
            ids = np.flatnonzero(ok).astype(np.int32)
            seed = np.full((self.gh, self.gw), -1, dtype=np.int32)
            seed[cell[ids, 1], cell[ids, 0]] = ids
            self.fields[k] = _jump_flood(seed, self.site_pos, self.res) if len(ids) else seed

    def _cells(self, pos: np.ndarray) -> np.ndarray:
        """Flat coarse-grid cell of each position."""
        cx = np.clip((pos[:, 0] // self.res).astype(np.int64), 0, self.gw - 1)
        cy = np.clip((pos[:, 1] // self.res).astype(np.int64), 0, self.gh - 1)
        return cy * self.gw + cx

    def _nearest(
        self, kind: np.ndarray, pos: np.ndarray, agents: np.ndarray, cells: np.ndarray | None = None
    ) -> np.ndarray:
        """Site index per agent: its own house for HOUSE, else the field's nearest site (-1: none)."""
        cells = self._cells(pos) if cells is None else cells
        site = self.fields.reshape(len(KINDS), -1)[np.maximum(kind, 0), cells]
        site = np.where(kind == HOUSE, self.home[agents], site)
        return np.where(kind >= 0, site, -1).astype(np.int32)

    def _has_stock(self, site: np.ndarray) -> np.ndarray:
        return (self.site_max[site] == 0) | (self.site_stock[site] > 0)

    def _choose(self, kind: np.ndarray, pos: np.ndarray, agents: np.ndarray, claim: np.ndarray) -> np.ndarray:
        """The nearest site, or for a claiming action the nearest free one among the fields' answers around."""
        site = self._nearest(kind, pos, agents)
        need = np.flatnonzero(claim & (site >= 0))
        if not len(need):
            return site
        cand = np.stack([self._nearest(kind[need], pos[need] + off, agents[need]) for off in CANDIDATE_OFFSETS], 1)
        c0 = np.maximum(cand, 0)
        d = np.linalg.norm(self.site_pos[c0] - pos[need, None], axis=2)
        ok = (cand >= 0) & (self.site_claim[c0] < 0) & self._has_stock(c0)
        d = np.where(ok, d, np.inf)
        best = np.argmin(d, axis=1)
        found = np.isfinite(d[np.arange(len(need)), best])
        site[need] = np.where(found, cand[np.arange(len(need)), best], site[need])
        return site

    # --- sense ----------------------------------------------------------------------------------------------
    def sense(self, brain: Brain) -> None:
        N, F, now = brain.n_agents, self.F, brain.tick_count
        if N == 0:
            return
        v = brain.tables.unpack_states(brain.states)
        clock = now + self.phase

        def every(col: int, period: int) -> np.ndarray:
            return (clock[:, col] % period) == 0

        v[:, F["hunger"]] = np.minimum(v[:, F["hunger"]] + every(0, HUNGER_EVERY), 5)
        v[:, F["fatigue"]] = np.minimum(v[:, F["fatigue"]] + every(1, FATIGUE_EVERY), 5)
        eats = every(2, VILLAGE_EATS_EVERY)
        v[:, F["stock_wood"]] = np.maximum(v[:, F["stock_wood"]] - eats, 0)
        v[:, F["stock_food"]] = np.maximum(v[:, F["stock_food"]] - eats, 0)
        v[:, F["fire_lit"]] &= ~every(3, FIRE_BURNS_EVERY)
        v[:, F["tax_paid"]] &= ~every(4, TAX_EVERY)
        order = every(5, TOOL_ORDER_EVERY) & (v[:, F["tools_made"]] > 0)
        v[:, F["tools_made"]] -= order
        v[:, F["coins"]] = np.minimum(v[:, F["coins"]] + 3 * order, 9)
        v[:, F["house_repaired"]] &= self.rng.random(N) >= STORM_P
        v[:, F["market_open"]] = (now % DAY) < DAY * 5 // 6
        v[:, F["at"]] = self.loc
        agents = np.arange(N)
        cells = self._cells(self.positions)
        bush = self._nearest(np.full(N, BUSH), self.positions, agents, cells)
        # What the nearest bush with berries has; the field can be a few ticks stale, and a bush it names may have
        # been stripped since: then the agent still knows berries grow somewhere and will go and look.
        stock = np.where(bush >= 0, np.minimum(self.site_stock[np.maximum(bush, 0)], 3), 0)
        somewhere = bool(((self.site_kind == BUSH) & (self.site_stock > 0)).any())
        v[:, F["berries"]] = np.where((bush >= 0) & (stock == 0) & somewhere, 1, stock)
        brain.states[...] = brain.tables.pack_states(v)

        # Costs: walking time to the nearest suitable site of each place.
        for a in np.flatnonzero(self.move_place >= 0):
            k = self.place_kind[self.move_place[a]]
            site = self._nearest(np.full(N, k), self.positions, agents, cells)
            dist = np.linalg.norm(self.site_pos[np.maximum(site, 0)] - self.positions, axis=1)
            cost = np.where(site >= 0, dist / SPEED, NO_SITE_COST)
            brain.costs[:, a] = np.maximum(cost, brain.tables.cost[a])
        # Enabled: not blocked after a failure, and something left of the kind it needs.
        brain.enabled[...] = self.block_until <= now
        for k in STOCKED:
            if not (self.fields[k] >= 0).any():
                brain.enabled[:, (self.kind == k) & self.stocked] = False

        # Priorities: needs grow with hunger and fatigue; the rest at a per-agent base level.
        base = brain.tables.goals.priority[None] * self.personality
        names = [g.name for g in self.domain.goals]
        base[:, names.index("eat")] = 1.0 + 2.0 * v[:, F["hunger"]]
        base[:, names.index("rest")] = 1.0 + 1.6 * v[:, F["fatigue"]]
        brain.priorities[...] = base

    # --- act ------------------------------------------------------------------------------------------------
    def act(self, brain: Brain, dt: float) -> None:
        N, now = brain.n_agents, brain.tick_count
        if N == 0:
            return
        action = brain.action
        # Stop what ended last tick or was interrupted (a new plan, a failure): free its site.
        stale = (self.cur_action >= 0) & ((action != self.cur_action) | self.ended)
        self._release(np.flatnonzero(stale))
        self.cur_action[stale] = -1
        self.target_site[stale] = -1
        self.progress[stale] = 0
        self.waited[stale] = 0
        self.ended[:] = False

        # Start new actions: choose a site.
        # Start new actions (and retry those waiting for a free site): choose a site.
        waiting = (self.cur_action >= 0) & (self.target_site < 0) & self.claims[np.maximum(action, 0)]
        new = np.flatnonzero((action >= 0) & ((self.cur_action < 0) | waiting))
        status = brain.action_status
        if len(new):
            a = action[new]
            self.cur_action[new] = a
            mp = self.move_place[a]
            kind = np.where(mp >= 0, self.place_kind[np.maximum(mp, 0)], self.kind[a])
            # A walk picks the site kind its plan's next step works at (a bush for gather_berries, ...).
            L = brain.plan.shape[1]
            nxt = brain.plan[new, np.minimum(brain.step[new] + 1, L - 1)]
            nxt = np.where(brain.step[new] + 1 < brain.plan_length[new], nxt, -1)
            nk = self.kind[np.maximum(nxt, 0)]
            use_next = (mp >= 0) & (nxt >= 0) & (nk >= 0) & (self.place_of_kind[np.maximum(nk, 0)] == mp)
            kind = np.where(use_next, nk, kind)
            site = self._choose(kind, self.positions[new], new, self.claims[a] & (mp < 0))
            bad = (kind >= 0) & (site < 0)
            s0 = np.maximum(site, 0)
            reach = np.linalg.norm(self.site_pos[s0] - self.positions[new], axis=1)
            far = (mp < 0) & (kind >= 0) & (reach > WORK_RADIUS)
            gone = (mp < 0) & self.stocked[a] & (self.site_stock[s0] <= 0)
            fail = bad | far | gone
            claim = (mp < 0) & self.claims[a] & ~fail
            # Among this tick's claimants of one site the lowest agent index wins (``new`` is sorted); the others
            # look again among the free sites around them, a few rounds, and fail if none is left.
            pending = np.flatnonzero(claim)
            for _ in range(CLAIM_ROUNDS):
                if not len(pending):
                    break
                sp = np.maximum(site[pending], 0)
                free = (site[pending] >= 0) & (self.site_claim[sp] < 0) & self._has_stock(sp)
                cand = pending[free]
                _, first = np.unique(site[cand], return_index=True)
                won = cand[first]
                self.site_claim[site[won]] = new[won]
                pending = np.setdiff1d(pending, won)
                if len(pending):
                    again = self._choose(
                        kind[pending], self.positions[new[pending]], new[pending], np.ones(len(pending), dtype=bool)
                    )
                    site[pending] = again
                    pending = pending[(again >= 0)]
            taken = np.zeros(len(new), dtype=bool)
            taken[pending] = True
            taken |= claim & (site < 0)
            # A contested site is waited for a few ticks (RUNNING, no site yet) before the action fails.
            self.waited[new[~taken]] = 0
            self.waited[new[taken]] += 1
            wait = taken & ~fail & (self.waited[new] <= MAX_WAIT)
            self.tallies[TALLIES.index("ticks_waited")] += int(wait.sum())
            taken &= ~wait
            fail |= taken
            self.target_site[new] = np.where(fail | wait, -1, site)
            self.tallies[TALLIES.index("actions_gone")] += int((bad | far | gone).sum())
            self.tallies[TALLIES.index("actions_contested")] += int((taken & ~(bad | far | gone)).sum())
            failed = new[fail]
            status[failed] = FAILED
            self.block_until[failed, action[failed]] = now + BLOCK_TICKS
            self.ended[failed] = True

        # Walk toward the target; work once there.
        busy = np.flatnonzero(
            (action >= 0)
            & (self.cur_action >= 0)
            & ~self.ended
            & ((self.target_site >= 0) | (self.kind[np.maximum(action, 0)] < 0))
        )
        if not len(busy):
            return
        site = self.target_site[busy]
        has = site >= 0
        target = np.where(has[:, None], self.site_pos[np.maximum(site, 0)], self.positions[busy])
        delta = target - self.positions[busy]
        dist = np.linalg.norm(delta, axis=1)
        step = np.float32(SPEED * dt)
        arrive = dist <= step
        scale = np.where(arrive, 1.0, step / np.maximum(dist, 1e-6)).astype(np.float32)
        self.positions[busy] = (self.positions[busy] + delta * scale[:, None]).astype(np.float32)
        a = action[busy]
        is_move = self.move_place[a] >= 0
        work = ~is_move & arrive
        self.progress[busy[work]] += 1
        done = np.where(is_move, arrive, work & (self.progress[busy] >= self.work_ticks[a]))
        fin = busy[done]
        fa = action[fin]
        mv = self.move_place[fa] >= 0
        self.loc[fin[mv]] = self.move_place[fa[mv]]
        st = fin[self.stocked[fa]]
        np.subtract.at(self.site_stock, self.target_site[st], 1)
        for name, (tally, amount) in TALLY.items():
            n = int((fa == self.action_names.index(name)).sum())
            self.tallies[TALLIES.index(tally)] += n * amount
        self.tallies[TALLIES.index("actions_taken")] += len(fin)
        status[fin] = DONE
        self.ended[fin] = True
        self._release(fin)

        # The world moves on: stock regrows, the nearest-site fields follow now and then.
        self.tick += 1
        self._regrow()
        phase = int(self.tick) % FIELD_EVERY
        if phase % 2 == 0 and phase // 2 < len(STOCKED):  # one stocked kind at a time, each every FIELD_EVERY
            self._refresh_fields(kinds=(STOCKED[phase // 2],))

    def _release(self, agents: np.ndarray) -> None:
        if not len(agents):
            return
        site = self.target_site[agents]
        mine = (site >= 0) & (self.site_claim[np.maximum(site, 0)] == agents)
        self.site_claim[site[mine]] = -1

    def _regrow(self) -> None:
        roll = self.rng.random(len(self.site_stock))
        p = np.zeros(len(self.site_stock))
        for k, q in REGROW_P.items():
            p[self.site_kind == k] = q
        grow = (roll < p) & (self.site_stock < self.site_max)
        self.site_stock[grow] += 1

    # --- viewer and scoring ---------------------------------------------------------------------------------
    @property
    def sites(self) -> dict[str, np.ndarray]:
        return {name: self.site_pos[self.site_kind == k] for k, name in enumerate(KINDS)}

    @property
    def targets(self) -> np.ndarray:
        has = self.target_site >= 0
        return np.where(has[:, None], self.site_pos[np.maximum(self.target_site, 0)], np.nan).astype(np.float32)

    def score(self) -> dict[str, float]:
        out: dict[str, float] = {name: float(v) for name, v in zip(TALLIES, self.tallies, strict=True)}
        b = self.brain
        if b is None:
            return out
        minutes = max(b.tick_count, 1) / 60.0
        out["goals_achieved_per_agent_minute"] = b.counters["goals_achieved"] / max(b.n_agents, 1) / minutes
        if b.n_agents:
            v = b.tables.unpack_states(b.states)
            out["starving"] = float((v[:, self.F["hunger"]] >= self.domain.fact("hunger").max).sum())
        else:
            out["starving"] = 0.0
        out["sites_depleted"] = float(((self.site_max > 0) & (self.site_stock == 0)).sum())
        return out

    # --- snapshots ------------------------------------------------------------------------------------------
    _STATE = (
        "terrain",
        "site_pos",
        "site_kind",
        "site_max",
        "site_stock",
        "site_claim",
        "home",
        "positions",
        "loc",
        "target_site",
        "cur_action",
        "progress",
        "waited",
        "ended",
        "block_until",
        "phase",
        "personality",
        "tallies",
        "tick",
        "fields",
    )

    def get_state(self) -> dict[str, np.ndarray]:
        out = {name: getattr(self, name) for name in self._STATE}
        out["rng"] = np.array(json.dumps(self.rng.bit_generator.state))
        return out

    def set_state(self, arrays: dict[str, Any]) -> None:
        for name in self._STATE:
            setattr(self, name, np.array(arrays[name], copy=True))
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = json.loads(str(arrays["rng"]))

"""SoldierWorld: two squads fight over an arena of walls, cover points, armories and medbays.

Every agent runs the soldier domain (``worlds/soldier/domain.toml``). The world keeps the physical truth in
arrays (positions, health, ammo, magazines, grenades, weapon and medkit, crouching, who shot whom when) and
writes it into the agents' facts each tick; the symbolic-only facts (``weapon_drawn``, ``escaped``) are left to
the brain's action effects, except that a respawn resets them.

How the symbols map onto the arena:

* ``enemy_alive`` / ``enemy_visible`` / ``enemy_in_range`` / ``enemy_suppressed`` describe the agent's tracked
  target: the nearest living enemy (exact for small squads, otherwise the nearest of the current target and
  ``K`` randomly sampled enemies each tick, so targets converge on near enemies). Visible means within
  ``sight`` and no wall on the segment between the two (segment vs axis-aligned boxes, vectorised).
  When the target dies, ``enemy_alive`` reads false for one tick (the kill_enemy goal counts as achieved);
  the next tick a new target is taken.
* ``at`` is the site within ``site_radius`` of the agent: the nearest cover point, the team's armory or
  medbay; otherwise ``open_ground``.
* ``under_fire`` is true for ``under_fire_ticks`` ticks after anyone shot at the agent (hit or miss).

Goal priorities follow F.E.A.R.: being shot (``under_fire``) out of cover raises take_cover above
kill_enemy, so the brain switches goal and replans; low health raises stay_alive; kill_enemy is high when
the enemy is visible and lower while it has to be searched for.

Walls block sight and movement (a blocked move slides along the wall); they are all in the middle of the
arena, the bases, armories and medbays are at the two ends. Dead agents are disabled (no goal) and respawn at
their base after ``respawn_ticks`` ticks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from goap.domain_file import load_domain
from goap.world import DONE, FAILED, RUNNING

if TYPE_CHECKING:
    from goap.runtime import Brain

DOMAIN_PATH = Path(__file__).resolve().parent / "domain.toml"

AT_OPEN, AT_COVER, AT_ARMORY, AT_MEDBAY = 0, 1, 2, 3
STATS = ("kills_team0", "kills_team1", "shots_fired", "hits", "heals", "deaths", "respawns", "grenades_thrown",
         "melee_hits", "suppressions")
MOVES = ("go_to_cover", "go_to_armory", "go_to_medbay", "approach_enemy", "search_for_enemy", "flee")

# World arrays saved by get_state (besides the RNG and the layout).
_AGENT_ARRAYS = ("positions", "team", "alive", "health", "ammo", "magazines", "grenades", "has_weapon",
                 "has_medkit", "in_cover", "last_shot_at", "suppressed_until", "respawn_at", "target",
                 "fresh", "stats", "obstacles", "cover", "armory", "medbay", "base", "clock")


class SoldierWorld:
    """Two squads of soldiers (team 0 on the left, team 1 on the right) in a walled arena."""

    name = "soldier"

    def __init__(
        self,
        width: float = 100.0,
        height: float = 100.0,
        *,
        speed: float = 3.0,
        sight: float = 45.0,
        melee_range: float = 2.5,
        grenade_range: float = 25.0,
        site_radius: float = 2.0,
        under_fire_ticks: int = 2,
        respawn_ticks: int = 15,
        move_timeout: int = 60,
        sample_k: int = 64,
        stagger: int = 4,
        exact_limit: int = 32_768,
    ):
        self.width, self.height = float(width), float(height)
        self.speed, self.sight, self.melee_range = float(speed), float(sight), float(melee_range)
        self.grenade_range, self.site_radius = float(grenade_range), float(site_radius)
        self.under_fire_ticks, self.respawn_ticks, self.move_timeout = under_fire_ticks, respawn_ticks, move_timeout
        self.sample_k, self.exact_limit, self.stagger = int(sample_k), int(exact_limit), max(1, int(stagger))
        self.domain = load_domain(DOMAIN_PATH)
        d = self.domain
        self.F = {f.name: i for i, f in enumerate(d.facts)}
        self.A = {a.name: i for i, a in enumerate(d.actions)}
        self.G = {g.name: i for i, g in enumerate(d.goals)}
        self.rng = np.random.default_rng(0)
        self._alloc(0)

    # --- layout -----------------------------------------------------------------------------------------------
    def _alloc(self, n: int) -> None:
        self.n = n
        self.positions = np.zeros((n, 2), np.float32)
        self.team = np.zeros(n, np.int8)
        self.alive = np.ones(n, bool)
        self.health = np.full(n, 4, np.int8)
        self.ammo = np.full(n, 6, np.int8)
        self.magazines = np.full(n, 2, np.int8)
        self.grenades = np.full(n, 1, np.int8)
        self.has_weapon = np.ones(n, bool)
        self.has_medkit = np.zeros(n, bool)
        self.in_cover = np.zeros(n, bool)
        self.last_shot_at = np.full(n, -1000, np.int64)
        self.suppressed_until = np.full(n, -1, np.int64)
        self.respawn_at = np.full(n, -1, np.int64)
        self.target = np.full(n, -1, np.int64)
        self.fresh = np.ones(n, bool)  # facts owned by the brain get reset at the next sense
        self.stats = np.zeros(len(STATS), np.int64)
        self.clock = np.array(0, np.int64)
        self.obstacles = np.zeros((0, 4), np.float32)
        self.cover = np.zeros((0, 2), np.float32)
        self.armory = np.zeros((2, 2), np.float32)
        self.medbay = np.zeros((2, 2), np.float32)
        self.base = np.zeros((2, 2), np.float32)

    @property
    def sites(self) -> dict[str, np.ndarray]:
        """Named points: ``cover`` [C, 2]; ``armory``, ``medbay``, ``base`` [2, 2] indexed by team."""
        return {"cover": self.cover, "armory": self.armory, "medbay": self.medbay, "base": self.base}

    def make_view(self):
        """The viewer's drawing hooks for this world (`worlds.soldier.view.SoldierView`)."""
        from worlds.soldier.view import SoldierView

        return SoldierView(self)

    def reset(self, brain: Brain, seed: int) -> None:
        N = brain.n_agents
        self.rng = rng = np.random.default_rng(seed)
        self._alloc(N)
        W, H = self.width, self.height
        # walls in the middle band, away from the bases
        k = int(rng.integers(8, 13))
        lo = rng.uniform([0.22 * W, 0.05 * H], [0.72 * W, 0.88 * H], size=(k, 2))
        size = rng.uniform([2.0, 3.0], [0.06 * W, 0.12 * H], size=(k, 2))
        self.obstacles = np.concatenate([lo, lo + size], axis=1).astype(np.float32)
        # cover points: just outside the middle of each wall's four sides
        ob, off = self.obstacles, 1.5
        cx, cy = (ob[:, 0] + ob[:, 2]) / 2, (ob[:, 1] + ob[:, 3]) / 2
        pts = np.concatenate([
            np.stack([ob[:, 0] - off, cy], 1), np.stack([ob[:, 2] + off, cy], 1),
            np.stack([cx, ob[:, 1] - off], 1), np.stack([cx, ob[:, 3] + off], 1),
        ])
        inside = self._inside_any(pts)
        self.cover = pts[~inside].astype(np.float32)
        mid = H / 2
        self.base = np.array([[0.06 * W, mid], [0.94 * W, mid]], np.float32)
        self.armory = np.array([[0.04 * W, mid - 0.3 * H], [0.96 * W, mid - 0.3 * H]], np.float32)
        self.medbay = np.array([[0.04 * W, mid + 0.3 * H], [0.96 * W, mid + 0.3 * H]], np.float32)
        self.team = (np.arange(N) >= N // 2).astype(np.int8) if N > 1 else np.zeros(N, np.int8)
        self.positions = self._spawn_points(self.team)
        self.has_medkit[:] = False
        brain.enabled[:] = True
        brain.states[:] = brain.tables.pack(self.domain.default_state())
        self._sense(brain)

    def _spawn_points(self, team: np.ndarray) -> np.ndarray:
        jitter = self.rng.uniform([-0.04 * self.width, -0.3 * self.height], [0.04 * self.width, 0.3 * self.height],
                                  size=(len(team), 2))
        p = self.base[team.astype(np.int64)] + jitter
        return np.clip(p, 0.0, [self.width, self.height]).astype(np.float32)

    def _inside_any(self, p: np.ndarray) -> np.ndarray:
        ob = self.obstacles
        if not len(ob) or not len(p):
            return np.zeros(len(p), bool)
        x, y = p[:, 0:1], p[:, 1:2]
        return ((x > ob[:, 0]) & (x < ob[:, 2]) & (y > ob[:, 1]) & (y < ob[:, 3])).any(axis=1)

    def line_of_sight(self, p: np.ndarray, q: np.ndarray) -> np.ndarray:
        """bool[N]: no wall crosses the segment p[i] -> q[i] (slab test against every box at once)."""
        ob = self.obstacles
        if not len(ob) or not len(p):
            return np.ones(len(p), bool)
        d = (q - p).astype(np.float64)
        d = np.where(np.abs(d) < 1e-9, 1e-9, d)
        inv = 1.0 / d
        tx1 = (ob[None, :, 0] - p[:, 0:1]) * inv[:, 0:1]
        tx2 = (ob[None, :, 2] - p[:, 0:1]) * inv[:, 0:1]
        ty1 = (ob[None, :, 1] - p[:, 1:2]) * inv[:, 1:2]
        ty2 = (ob[None, :, 3] - p[:, 1:2]) * inv[:, 1:2]
        tmin = np.maximum(np.minimum(tx1, tx2), np.minimum(ty1, ty2))
        tmax = np.minimum(np.maximum(tx1, tx2), np.maximum(ty1, ty2))
        hit = (tmax >= np.maximum(tmin, 0.0)) & (tmin <= 1.0)
        return ~hit.any(axis=1)

    # --- sensing ----------------------------------------------------------------------------------------------
    def mark_under_fire(self, agents: Any) -> None:
        """Someone shot at these agents just now (they read ``under_fire`` at the next sense)."""
        self.last_shot_at[agents] = int(self.clock)

    def _retarget(self) -> None:
        """Each living agent tracks the nearest living enemy (sampled for large squads); -1: no enemy left."""
        pos, rng = self.positions, self.rng
        keep = self.target >= 0
        keep[keep] = self.alive[self.target[keep]]
        new = np.where(keep, self.target, -1)
        for t in (0, 1):
            me = np.flatnonzero(self.alive & (self.team == t))
            foes = np.flatnonzero(self.alive & (self.team != t))
            if not len(me):
                continue
            if not len(foes):
                new[me] = -1
                continue
            if len(me) * len(foes) <= self.exact_limit:
                cand = np.broadcast_to(foes, (len(me), len(foes)))
            else:
                # large squads: an agent with a live target looks again every `stagger` ticks (by index), at the
                # current target and K random enemies; an agent without one looks every tick
                me = me[~keep[me] | (me % self.stagger == int(self.clock) % self.stagger)]
                if not len(me):
                    continue
                sample = foes[rng.integers(0, len(foes), size=(len(me), self.sample_k))]
                cur = np.where(keep[me], self.target[me], sample[:, 0])
                cand = np.concatenate([cur[:, None], sample], axis=1)
            d = pos[cand] - pos[me][:, None, :]
            d2 = d[..., 0] * d[..., 0] + d[..., 1] * d[..., 1]
            new[me] = cand[np.arange(len(me)), np.argmin(d2, axis=1)]
        new[~self.alive] = -1
        self.target = new.astype(np.int64)

    def _geometry(self) -> dict[str, np.ndarray]:
        """Distances to sites and the tracked target, and the target's visibility, for every agent."""
        pos, tm = self.positions, self.team.astype(np.int64)
        out: dict[str, np.ndarray] = {}
        if len(self.cover):
            dx = pos[:, 0:1] - self.cover[None, :, 0]
            dy = pos[:, 1:2] - self.cover[None, :, 1]
            d2 = dx * dx + dy * dy
            ci = np.argmin(d2, axis=1)
            out["cover_i"], out["d_cover"] = ci, np.sqrt(d2[np.arange(self.n), ci]).astype(np.float64)
        else:
            out["cover_i"], out["d_cover"] = np.zeros(self.n, np.int64), np.full(self.n, np.inf)
        for name in ("armory", "medbay", "base"):
            out[f"d_{name}"] = np.sqrt(((pos - getattr(self, name)[tm]) ** 2).sum(axis=1))
        has = self.target >= 0
        tpos = pos[np.maximum(self.target, 0)]
        dist = np.where(has, np.sqrt(((tpos - pos) ** 2).sum(axis=1)), np.inf)
        los = np.zeros(self.n, bool)
        near = has & (dist <= self.sight)
        if near.any():
            los[near] = self.line_of_sight(pos[near], tpos[near])
        out["d_target"], out["visible"] = dist, near & los
        return out

    def _sense(self, brain: Brain) -> dict[str, np.ndarray]:
        F, t = self.F, int(self.clock)
        self._retarget()
        g = self._geometry()
        self._geo = g
        alive = self.alive
        has = self.target >= 0
        self.in_cover &= alive & (g["d_cover"] <= self.site_radius)
        r = self.site_radius
        at = np.full(self.n, AT_OPEN, np.int64)
        at[g["d_cover"] <= r] = AT_COVER
        at[g["d_medbay"] <= r] = AT_MEDBAY
        at[g["d_armory"] <= r] = AT_ARMORY
        under_fire = alive & (t - self.last_shot_at <= self.under_fire_ticks)
        tgt = np.maximum(self.target, 0)

        facts = brain.tables.unpack_states(brain.states)
        facts[self.fresh, F["weapon_drawn"]] = 0
        facts[self.fresh, F["escaped"]] = 0
        self.fresh[:] = False
        facts[under_fire, F["escaped"]] = 0  # found again
        facts[:, F["has_weapon"]] = self.has_weapon
        facts[:, F["ammo"]] = self.ammo
        facts[:, F["magazines"]] = self.magazines
        facts[:, F["grenades"]] = self.grenades
        facts[:, F["health"]] = self.health
        facts[:, F["has_medkit"]] = self.has_medkit
        facts[:, F["at"]] = at
        facts[:, F["in_cover"]] = self.in_cover
        facts[:, F["under_fire"]] = under_fire
        facts[:, F["enemy_alive"]] = has
        facts[:, F["enemy_visible"]] = g["visible"]
        facts[:, F["enemy_in_range"]] = has & (g["d_target"] <= self.melee_range)
        facts[:, F["enemy_suppressed"]] = has & (self.suppressed_until[tgt] > t)
        facts[~self.has_weapon, F["weapon_drawn"]] = 0
        brain.states[:] = brain.tables.pack_states(facts)

        # per-agent costs: moves cost more the further they go
        A = self.A
        base = brain.tables.cost[None, :].astype(np.float32)
        costs = np.repeat(base, self.n, axis=0)
        for action, dist in (("go_to_cover", g["d_cover"]), ("go_to_armory", g["d_armory"]),
                             ("go_to_medbay", g["d_medbay"]), ("flee", g["d_base"]),
                             ("approach_enemy", np.where(has, g["d_target"], 0.0))):
            scale = 5.0 if action == "approach_enemy" else 15.0
            costs[:, A[action]] += np.minimum(dist, 1e3).astype(np.float32) / scale
        brain.costs[:] = costs
        brain.enabled[:] = alive[:, None]
        brain.enabled[:, A["throw_grenade"]] &= g["d_target"] <= self.grenade_range

        # goal priorities
        G = self.G
        pr = np.repeat(brain.tables.goals.priority[None, :], self.n, axis=0).astype(np.float32)
        hp = self.health
        pr[:, G["stay_alive"]] = np.select([hp <= 1, hp == 2], [13.0, 8.0], 0.0)
        pr[:, G["kill_enemy"]] = np.where(g["visible"], 10.0, np.where(has, 5.0, 0.0))
        pr[:, G["take_cover"]] = np.where(under_fire & ~self.in_cover, 11.0, 2.0)
        hopeless = (hp <= 1) & (self.ammo < 2) & (self.magazines == 0) & ~self.has_medkit
        pr[:, G["escape"]] = np.where(hopeless, 9.0, 0.0)
        pr[~alive] = 0.0
        brain.priorities[:] = pr
        return g

    def sense(self, brain: Brain) -> None:
        self._respawn()
        self._sense(brain)

    def _respawn(self) -> None:
        due = ~self.alive & (self.respawn_at >= 0) & (self.respawn_at <= int(self.clock))
        if not due.any():
            return
        self.positions[due] = self._spawn_points(self.team[due])
        self.alive[due] = True
        self.health[due], self.ammo[due], self.magazines[due], self.grenades[due] = 4, 6, 2, 1
        self.has_weapon[due], self.has_medkit[due], self.in_cover[due] = True, False, False
        self.last_shot_at[due], self.suppressed_until[due], self.respawn_at[due] = -1000, -1, -1
        self.target[due] = -1
        self.fresh[due] = True
        self.stats[STATS.index("respawns")] += int(due.sum())

    # --- acting -----------------------------------------------------------------------------------------------
    def _move(self, who: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """Step agents ``who`` toward ``goal`` [n, 2]; walls block, a blocked step slides; True where arrived."""
        p = self.positions[who].astype(np.float64)
        d = goal - p
        dist = np.sqrt((d**2).sum(axis=1))
        arrived = dist <= self.speed
        step = np.where(arrived[:, None], d, d / np.maximum(dist, 1e-9)[:, None] * self.speed)
        new = p + step
        blocked = self._inside_any(new)
        if blocked.any():
            sx = np.where(step[:, 0] == 0, self.speed, np.sign(step[:, 0]) * self.speed)
            sy = np.where(step[:, 1] == 0, self.speed, np.sign(step[:, 1]) * self.speed)
            only_x = np.stack([p[:, 0] + sx, p[:, 1]], 1)  # slide along a horizontal face
            only_y = np.stack([p[:, 0], p[:, 1] + sy], 1)  # slide along a vertical face
            ok_y = ~self._inside_any(only_y)
            ok_x = ~self._inside_any(only_x)
            # a wall crossed in x: slide in y; otherwise slide in x; stuck if neither works
            alt = np.where((ok_y & (np.abs(step[:, 0]) >= np.abs(step[:, 1])))[:, None], only_y,
                           np.where(ok_x[:, None], only_x, np.where(ok_y[:, None], only_y, p)))
            new = np.where(blocked[:, None], alt, new)
            arrived &= ~blocked
        self.positions[who] = np.clip(new, 0.0, [self.width, self.height]).astype(np.float32)
        return arrived

    def act(self, brain: Brain, dt: float) -> None:
        A, t, rng = self.A, int(self.clock), self.rng
        act = np.where(self.alive, brain.action, -1)
        status = brain.action_status
        status[:] = RUNNING
        ticks = brain.action_ticks
        g = self._geo
        tgt = np.maximum(self.target, 0)
        has = self.target >= 0
        ci = g["cover_i"]
        tm = self.team.astype(np.int64)
        stat = {s: i for i, s in enumerate(STATS)}

        def sel(name: str) -> np.ndarray:
            return np.flatnonzero(act == A[name])

        # moves (positions change here; attacks below use the geometry sensed at the start of the tick)
        targets = {
            "go_to_cover": lambda w: self.cover[ci[w]] if len(self.cover) else self.positions[w],
            "go_to_armory": lambda w: self.armory[tm[w]],
            "go_to_medbay": lambda w: self.medbay[tm[w]],
            "flee": lambda w: self.base[tm[w]],
            "approach_enemy": lambda w: self.positions[tgt[w]],
            "search_for_enemy": lambda w: self.positions[tgt[w]],
        }
        for name in MOVES:
            w = sel(name)
            if not len(w):
                continue
            self.in_cover[w] = False
            if name in ("approach_enemy", "search_for_enemy"):
                lost = w[~has[w]]
                status[lost] = FAILED
                w = w[has[w]]
                if name == "search_for_enemy":
                    found = g["visible"][w]
                    status[w[found]] = DONE
                    w = w[~found]
            goal = targets[name](w).astype(np.float64)
            if name == "approach_enemy":  # stop at arm's length
                d = goal - self.positions[w]
                n = np.sqrt((d**2).sum(axis=1, keepdims=True))
                goal = goal - d / np.maximum(n, 1e-9) * np.minimum(n, self.melee_range * 0.8)
            arrived = self._move(w, goal)
            status[w[arrived]] = DONE
            status[w[~arrived & (ticks[w] >= self.move_timeout)]] = FAILED

        # instant or short actions
        for name in ("draw_weapon", "holster_weapon", "leave_cover"):
            status[sel(name)] = DONE
        w = sel("leave_cover")
        self.in_cover[w] = False
        w = sel("drop_weapon")
        self.has_weapon[w] = False
        self.ammo[w] = 0
        status[w] = DONE
        w = sel("reload")
        status[w[self.magazines[w] == 0]] = FAILED
        ok = w[(self.magazines[w] > 0) & (ticks[w] >= 1)]
        self.ammo[ok], self.magazines[ok] = 6, self.magazines[ok] - 1
        status[ok] = DONE
        w = sel("take_cover")
        near = g["d_cover"][w] <= self.site_radius
        self.in_cover[w[near]] = True
        status[w[near]] = DONE
        status[w[~near]] = FAILED
        at_armory = g["d_armory"] <= self.site_radius
        at_medbay = g["d_medbay"] <= self.site_radius
        for name, where in (("pick_up_ammo", at_armory), ("pick_up_grenades", at_armory),
                            ("pick_up_weapon", at_armory), ("grab_medkit", at_medbay)):
            w = sel(name)
            ok, bad = w[where[w]], w[~where[w]]
            status[ok], status[bad] = DONE, FAILED
            if name == "pick_up_ammo":
                self.magazines[ok] = 3
            elif name == "pick_up_grenades":
                self.grenades[ok] = 2
            elif name == "pick_up_weapon":
                self.has_weapon[ok], self.ammo[ok] = True, 6
            else:
                self.has_medkit[ok] = True
        w = sel("heal")
        status[w[~self.has_medkit[w]]] = FAILED
        ok = w[self.has_medkit[w] & (ticks[w] >= 1)]
        self.health[ok] = np.minimum(self.health[ok] + 2, 4)
        self.has_medkit[ok] = False
        status[ok] = DONE
        self.stats[stat["heals"]] += len(ok)

        # attacks: all resolved at once against the start-of-tick geometry
        dmg = np.zeros(self.n, np.float64)
        vis, dist = g["visible"], g["d_target"]
        suppressed = self.suppressed_until > t
        for name in ("shoot", "suppressive_fire", "throw_grenade", "melee"):
            w = sel(name)
            if not len(w):
                continue
            if name == "melee":
                ok = has[w] & (dist[w] <= self.melee_range)
            elif name == "throw_grenade":
                ok = vis[w] & (self.grenades[w] > 0) & (dist[w] <= self.grenade_range)
            else:
                need = 2 if name == "shoot" else 3
                ok = vis[w] & self.has_weapon[w] & (self.ammo[w] >= need)
            status[w[~ok]] = FAILED
            w = w[ok]
            status[w] = DONE
            victim = tgt[w]
            u = rng.random(len(w))
            if name == "shoot":
                p = np.clip(0.9 - dist[w] / 60.0, 0.15, 0.9) * np.where(self.in_cover[victim], 0.35, 1.0)
                p *= np.where(suppressed[w], 0.5, 1.0)
                hit = u < p
                self.ammo[w] -= 2
                self.last_shot_at[victim] = t
                np.add.at(dmg, victim[hit], 1.0)
                self.stats[stat["shots_fired"]] += len(w)
                self.stats[stat["hits"]] += int(hit.sum())
            elif name == "suppressive_fire":
                self.ammo[w] -= 3
                self.last_shot_at[victim] = t
                self.suppressed_until[victim] = t + 5
                self.stats[stat["suppressions"]] += len(w)
            elif name == "throw_grenade":
                hit = u < np.where(self.in_cover[victim], 0.4, 0.7)
                self.grenades[w] -= 1
                self.last_shot_at[victim] = t
                np.add.at(dmg, victim[hit], 2.0)
                self.stats[stat["grenades_thrown"]] += len(w)
            else:
                hit = u < 0.6
                self.last_shot_at[victim] = t
                np.add.at(dmg, victim[hit], 1.0)
                self.stats[stat["melee_hits"]] += int(hit.sum())

        hurt = dmg > 0
        self.health[hurt] = np.maximum(self.health[hurt] - dmg[hurt], 0).astype(np.int8)
        died = self.alive & (self.health <= 0)
        if died.any():
            self.alive[died] = False
            self.in_cover[died] = False
            self.has_medkit[died] = False
            self.respawn_at[died] = t + self.respawn_ticks
            victims_team = self.team[died].astype(np.int64)
            kills = np.bincount(1 - victims_team, minlength=2)
            self.stats[stat["kills_team0"]] += int(kills[0])
            self.stats[stat["kills_team1"]] += int(kills[1])
            self.stats[stat["deaths"]] += int(died.sum())
            brain.enabled[died] = False
            brain.priorities[died] = 0.0
        self.clock = np.array(t + 1, np.int64)

    # --- measures and snapshots -------------------------------------------------------------------------------
    def score(self) -> dict[str, float]:
        out = {s: float(v) for s, v in zip(STATS, self.stats, strict=True)}
        for t in (0, 1):
            out[f"alive_team{t}"] = float((self.alive & (self.team == t)).sum())
        return out

    def get_state(self) -> dict[str, np.ndarray]:
        out = {k: np.array(getattr(self, k)) for k in _AGENT_ARRAYS}
        out["rng"] = np.array(json.dumps(self.rng.bit_generator.state))
        return out

    def set_state(self, arrays: dict[str, Any]) -> None:
        for k in _AGENT_ARRAYS:
            setattr(self, k, np.array(arrays[k]))
        self.n = len(self.positions)
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = json.loads(str(arrays["rng"]))
        self._geo = None  # recomputed by the next sense

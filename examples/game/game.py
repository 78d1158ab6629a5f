"""The wolf game's rules: the player's wolf, the game kernels around the brain's tick, catches and respawns.

A frame is: read the inputs, move the wolf, run the game kernels (who is near the wolf, written into the agents'
facts and turned into commands on device index lists), tick the brain (sense, decide, plan, act), then look for
catches (one small read: the nearest villager and guard within reach, and the frame's counts). No Python loop
runs over the agents, and only a few dozen bytes a frame come back from the device besides what is drawn.

How the agents hear of the wolf, each through a different part of the embedding API:

* **a game kernel** (`near_wolf`) sets ``danger`` with ``write_field`` (bounded by ``brain.fact_slot(...).top``)
  for the villagers within `FEAR_RADIUS` and compacts them on the device into an index list (a scan and a
  scatter), which `Brain.replan` takes as it is: they drop what they do and plan for ``flee``;
* **game code** writes ``alert`` for the guards within `ALERT_RADIUS` with `Brain.write_fact` on such a list;
* **the howl** (a key) pins goals with `Brain.set_goal`: ``flee`` for the villagers within `HOWL_RADIUS`,
  ``chase`` for the guards within twice that;
* **events**: ``brain.on("action_started")`` counts, in a kernel over the event's device list, the villagers
  that start running for a shelter; ``brain.on("action_interrupted")`` counts the work the wolf broke off;
* **spawn/despawn**: a caught villager is despawned, and spawned again at home `respawn_ticks` later;
* **a sensor with a cadence** (the world's chores, `examples.game.world.chores`) visits each agent every 10 ticks.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

import numpy as np
import warp as wp

from examples.game.world import (
    CHASE,
    DEN,
    GUARD,
    HEIGHT,
    HIDE,
    VILLAGER,
    WALK_SHELTER,
    WIDTH,
    WolfWorld,
    sheltered,
)
from goap.kernels.agents import Agents
from goap.kernels.semantics import read_field, write_field
from goap.runtime import Brain

FEAR_RADIUS = 60.0  # villagers this close to the wolf are in danger
ALERT_RADIUS = 120.0  # guards this close see the wolf
HOWL_RADIUS = 160.0  # villagers this close hear the howl (guards: twice as far)
CATCH_RADIUS = 7.0  # the wolf catches a villager, and a guard bites the wolf, this close
WOLF_SPEED = 4.5
EAT_TICKS = 15  # after a catch the wolf eats and catches nothing
HOWL_COOLDOWN = 60
KEYS = ("left", "right", "up", "down", "howl")

# Slots of the per-frame stats array (int32, read once a frame).
S_VILLAGER, S_GUARD, S_FLEEING, S_HIDING, S_CHASING, S_FLEE_STARTS, S_NEAR = range(7)
N_STATS = 8
NONE = 2**31 - 1


@wp.kernel
def near_wolf(agents: Agents, pos: wp.array(dtype=wp.vec2), role: wp.array(dtype=wp.int32),
              shelters: wp.array(dtype=wp.vec2), wolf: wp.array(dtype=wp.vec2), radius: float, want_role: int,
              word: int, shift: int, mask: wp.uint64, top: wp.uint64, write: int, flag: wp.array(dtype=wp.int32)):
    """Flag the live agents of ``want_role`` within ``radius`` of the wolf (villagers inside a shelter are
    safe) whose fact (a bool) is not set yet; with ``write`` set it too, bounded by the fact's ``top``."""
    i = wp.tid()
    flag[i] = 0
    if not agents.alive[i] or role[i] != want_role:
        return
    p = pos[i]
    if wp.length(p - wolf[0]) >= radius:
        return
    if want_role == VILLAGER and sheltered(shelters, p):
        return
    if read_field(agents.states, i, word, shift, mask) != wp.uint64(0):
        return
    if write != 0:
        write_field(agents.states, i, word, shift, mask, wp.min(wp.uint64(1), top))
    flag[i] = 1


@wp.kernel
def scatter_flags(flag: wp.array(dtype=wp.int32), at: wp.array(dtype=wp.int32), ids: wp.array(dtype=wp.int32)):
    """The flagged rows in index order (``at`` is the exclusive scan of ``flag``; `fill` set ``ids`` to -1)."""
    i = wp.tid()
    if flag[i] != 0:
        ids[at[i]] = i


@wp.kernel
def fill(ids: wp.array(dtype=wp.int32), value: int):
    ids[wp.tid()] = value


@wp.kernel
def look(agents: Agents, pos: wp.array(dtype=wp.vec2), role: wp.array(dtype=wp.int32),
         shelters: wp.array(dtype=wp.vec2), wolf: wp.array(dtype=wp.vec2), reach: float,
         stats: wp.array(dtype=wp.int32)):
    """The frame's counts, and the nearest villager and guard within ``reach`` of the wolf, as keys
    ``quantised distance * N + index`` (the smallest key wins: the same agent whatever the thread order)."""
    i = wp.tid()
    if not agents.alive[i]:
        return
    n = pos.shape[0]
    p = pos[i]
    d = wp.length(p - wolf[0])
    a = agents.action[i]
    if role[i] == GUARD:
        wp.atomic_add(stats, S_GUARD, 1)
        if a == CHASE:
            wp.atomic_add(stats, S_CHASING, 1)
        if d < reach and a == CHASE:  # a guard on a chase bites the wolf
            wp.atomic_min(stats, N_STATS + 1, int(d * 100.0) * n + i)
    else:
        wp.atomic_add(stats, S_VILLAGER, 1)
        if a == WALK_SHELTER:
            wp.atomic_add(stats, S_FLEEING, 1)
        if a == HIDE:
            wp.atomic_add(stats, S_HIDING, 1)
        if d < FEAR_RADIUS:
            wp.atomic_add(stats, S_NEAR, 1)
        if d < reach and not sheltered(shelters, p):
            wp.atomic_min(stats, N_STATS, int(d * 100.0) * n + i)


@wp.kernel
def count_starts(agents: Agents, ids: wp.array(dtype=wp.int32), action: int, stats: wp.array(dtype=wp.int32)):
    """Over an event's device list: the agents whose started action is ``action``."""
    i = ids[wp.tid()]
    if i >= 0 and agents.action[i] == action:
        wp.atomic_add(stats, S_FLEE_STARTS, 1)


@wp.kernel
def place_home(rows: wp.array(dtype=wp.int32), home: wp.array(dtype=wp.vec2), pos: wp.array(dtype=wp.vec2),
               target: wp.array(dtype=wp.vec2)):
    i = rows[wp.tid()]
    if i >= 0:
        pos[i] = home[i]
        target[i] = home[i]


@dataclass
class Score:
    """What the HUD shows and the tests compare (host values, updated once a frame)."""

    score: int = 0
    caught: int = 0
    bitten: int = 0
    respawned: int = 0
    flee_starts: int = 0
    interrupted: int = 0
    goals_reached: int = 0
    howls: int = 0
    villagers: int = 0
    guards: int = 0
    fleeing: int = 0
    hiding: int = 0
    chasing: int = 0
    near: int = 0
    log: list[tuple[int, str, int]] = field(default_factory=list)  # (tick, what, agent)


class Game:
    """The brain, the world and the game rules; `frame` advances one tick with the keys held down.

    Args:
        agents: the number of agents (villagers and guards).
        guards: the fraction of guards.
        seed: the map and the brain's seed.
        respawn_ticks: ticks before a caught villager is spawned again at home.
        device: the Warp device (None: Warp's default).
        capture: record the brain's tick as graphs (`Brain(capture=True)`).
    """

    def __init__(self, agents: int = 2000, *, guards: float = 0.04, seed: int = 1, respawn_ticks: int = 60,
                 device: str | None = None, capture: bool = False):
        if not isinstance(agents, int) or agents < 2 or agents > 1_000_000:
            raise ValueError(f"the number of agents must be an integer in 2..1000000, got {agents!r}")
        if respawn_ticks < 1:
            raise ValueError(f"respawn_ticks must be >= 1, got {respawn_ticks}")
        self.world = WolfWorld(guards=guards)
        self.brain = Brain(self.world.domain, agents, world=self.world, device=device, seed=seed,
                           plan_budget=max(256, agents // 4), capture=capture)
        b, dev, n = self.brain, self.brain.device, agents
        self.n = n
        self.respawn_ticks = int(respawn_ticks)
        self.fear_radius = FEAR_RADIUS
        self.wolf = np.array(DEN, np.float64)
        self.eating_until = -1
        self.howl_ready = 0
        self.held: set[str] = set()
        self.inputs: list[dict] = []  # every key that went down or up, as a script (`examples.game.main`) reads it
        self.pending: dict[int, list[int]] = {}  # tick -> villagers to spawn again then
        self.state = Score()
        self.timing = {"game": 0.0, "tick": 0.0}
        self._flag = wp.zeros(n, dtype=wp.int32, device=dev)
        self._scan = wp.zeros(n, dtype=wp.int32, device=dev)
        self._lists = {k: wp.zeros(n, dtype=wp.int32, device=dev) for k in ("fear", "alert", "howl_v", "howl_g")}
        self._stats = wp.zeros(N_STATS + 2, dtype=wp.int32, device=dev)
        self._danger, self._alert = b.fact_slot("danger"), b.fact_slot("alert")
        b.on("action_started", self._on_started)
        b.on("action_interrupted", self._on_interrupted)
        self._reset_stats()

    # --- the device lists ----------------------------------------------------------------------------------------
    def _near(self, name: str, radius: float, role: int, slot, write: bool) -> wp.array:
        """The agents of ``role`` within ``radius`` whose fact ``slot`` is not set, as a device index list of N
        entries (-1 padded: the brain's commands skip those), compacted on the device."""
        b, w = self.brain, self.world
        b.launcher.launch(near_wolf, self.n, [b.agents, w.pos, w.role, w.shelters, w.wolf, float(radius), role,
                                              slot.word, slot.shift, wp.uint64(slot.mask), wp.uint64(slot.top),
                                              int(write), self._flag])
        wp.utils.array_scan(self._flag, self._scan, inclusive=False)
        ids = self._lists[name]
        b.launcher.launch(fill, self.n, [ids, -1])
        b.launcher.launch(scatter_flags, self.n, [self._flag, self._scan, ids])
        return ids

    # --- events ----------------------------------------------------------------------------------------------------
    def _on_started(self, brain: Brain, agents: wp.array) -> None:
        brain.launcher.launch(count_starts, agents.shape[0], [brain.agents, agents, WALK_SHELTER, self._stats],
                              record=False)

    def _on_interrupted(self, brain: Brain, agents: wp.array) -> None:
        self.state.interrupted += int(agents.shape[0])

    def _reset_stats(self) -> None:
        s = np.zeros(N_STATS + 2, np.int32)
        s[N_STATS:] = NONE
        self._stats_init = s
        self._stats.assign(s)

    # --- a frame -----------------------------------------------------------------------------------------------------
    def press(self, key: str, down: bool) -> None:
        """A key goes down or up (``left``, ``right``, ``up``, ``down``; ``howl`` acts once when it goes down)."""
        if key not in KEYS:
            raise ValueError(f"unknown key {key!r}; keys are {', '.join(KEYS)}")
        if down == (key in self.held):
            return
        if down:
            self.held.add(key)
        else:
            self.held.discard(key)
        self.inputs.append({"tick": self.brain.tick_count, "key": key, "down": bool(down)})

    def frame(self) -> None:
        """One tick of the game: the wolf moves, the agents hear of it, the brain ticks, catches are resolved."""
        b, w = self.brain, self.world
        t0 = time.perf_counter()
        tick = b.tick_count
        dx = ("right" in self.held) - ("left" in self.held)
        dy = ("down" in self.held) - ("up" in self.held)
        if dx or dy:
            self.wolf += np.array([dx, dy], np.float64) * (WOLF_SPEED / np.hypot(dx, dy))
            self.wolf = np.clip(self.wolf, [5.0, 5.0], [WIDTH - 5.0, HEIGHT - 5.0])
        w.wolf.assign(self.wolf.astype(np.float32)[None])
        fear = self._near("fear", FEAR_RADIUS, VILLAGER, self._danger, write=True)  # danger written by the kernel
        b.replan(fear)  # ... and they drop what they do
        alert = self._near("alert", ALERT_RADIUS, GUARD, self._alert, write=False)
        b.write_fact("alert", True, agents=alert)  # game code writes the guards' fact
        if "howl" in self.held and tick >= self.howl_ready:
            self.howl_ready = tick + HOWL_COOLDOWN
            self.state.howls += 1
            heard = self._near("howl_v", HOWL_RADIUS, VILLAGER, self._danger, write=False)
            b.write_fact("danger", True, agents=heard)
            b.set_goal(heard, "flee")
            guards = self._near("howl_g", 2 * HOWL_RADIUS, GUARD, self._alert, write=False)
            b.write_fact("alert", True, agents=guards)
            b.set_goal(guards, "chase")
        self._stats.assign(self._stats_init)
        t1 = time.perf_counter()
        b.tick()
        t2 = time.perf_counter()
        self.state.goals_reached += b.events.count("goal_achieved")
        b.launcher.launch(look, self.n, [b.agents, w.pos, w.role, w.shelters, w.wolf, CATCH_RADIUS, self._stats])
        s = self._stats.numpy()  # the one read a frame: a few dozen bytes
        st = self.state
        st.villagers, st.guards, st.fleeing, st.hiding = int(s[S_VILLAGER]), int(s[S_GUARD]), int(s[S_FLEEING]), \
            int(s[S_HIDING])
        st.chasing, st.near = int(s[S_CHASING]), int(s[S_NEAR])
        st.flee_starts += int(s[S_FLEE_STARTS])
        now = b.tick_count
        victim, biter = int(s[N_STATS]), int(s[N_STATS + 1])
        if biter != NONE:
            st.bitten += 1
            st.score -= 25
            st.log.append((now, "bitten", biter % self.n))
            self.wolf = np.array(DEN, np.float64)  # back to the den
            w.wolf.assign(self.wolf.astype(np.float32)[None])
        elif victim != NONE and now >= self.eating_until:
            i = victim % self.n
            b.despawn([i])
            st.caught += 1
            st.score += 10
            st.log.append((now, "caught", i))
            self.eating_until = now + EAT_TICKS
            self.pending.setdefault(now + self.respawn_ticks, []).append(i)
        due = self.pending.pop(now, None)
        if due:
            rows = b.spawn(agents=due, states={"at": "home"})
            dev_rows = wp.array(np.asarray(rows, np.int32), dtype=wp.int32, device=b.device)
            b.launcher.launch(place_home, len(rows), [dev_rows, w.home, w.pos, w.target], record=False)
            st.respawned += len(rows)
            st.log.extend((now, "respawned", int(r)) for r in rows)
        t3 = time.perf_counter()
        self.timing = {"game": (t1 - t0) + (t3 - t2), "tick": t2 - t1}

    # --- state ---------------------------------------------------------------------------------------------------
    def state_hash(self) -> str:
        """The brain's state hash (agents and world) with the game's own state: equal hashes, equal games."""
        h = hashlib.sha256(self.brain.state_hash().encode())
        st = self.state
        h.update(repr((self.wolf.tolist(), st.score, st.caught, st.bitten, st.respawned, st.flee_starts,
                       st.interrupted, st.howls, sorted(self.pending.items()), st.log)).encode())
        return h.hexdigest()[:16]

    def positions(self) -> np.ndarray:
        """float32 [N, 2] host positions (a view on the CPU, a copy on a GPU)."""
        return self.world.pos.numpy()

"""The wolf game's world: the map, the agents' bodies and the two kernels the brain calls every tick.

Villagers walk between their house and their field, gather, store food at home and run to the nearest shelter
when they are in danger; guards walk rounds between posts and chase the wolf when alerted. The symbolic state the
planner sees (``at``, ``carrying``, ...) is written by the brain's effects when an action is DONE; the world keeps
the continuous part (positions, walk targets) in its own arrays and reports DONE when a walk arrives. Both kernels
read the wolf's position from a device array and the tick from ``brain.clock``, so the tick can be captured.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import warp as wp

from goap import load_domain
from goap.kernels.agents import Agents
from goap.kernels.semantics import read_field, write_field
from goap.world import DONE

DOMAIN = load_domain(Path(__file__).with_name("domain.toml"))
A = {a.name: i for i, a in enumerate(DOMAIN.actions)}
G = {g.name: i for i, g in enumerate(DOMAIN.goals)}
AT = {v: i for i, v in enumerate(DOMAIN.facts[DOMAIN.fact_index("at")].labels)}

WALK_FIELD, GATHER, WALK_HOME, STORE = A["walk_field"], A["gather"], A["walk_home"], A["store"]
WALK_SHELTER, HIDE, PATROL, CHASE = A["walk_shelter"], A["hide"], A["patrol"], A["chase"]
STOCK, FLEE, ROUND, HUNT = G["stock"], G["flee"], G["patrol"], G["chase"]
AT_ROAD = AT["road"]

VILLAGER, GUARD = 0, 1
#: The actions and goals of each role (the world writes them into the agents' ``enabled`` and ``priorities``).
ROLE_ACTIONS = {VILLAGER: ("walk_field", "gather", "walk_home", "store", "walk_shelter", "hide"),
                GUARD: ("patrol", "chase")}
ROLE_GOALS = {VILLAGER: ("stock", "flee"), GUARD: ("patrol", "chase")}

#: The map, in world units (one unit is one pixel of the default window).
WIDTH, HEIGHT = 1280.0, 720.0
CENTRE = (640.0, 390.0)
DEN = (70.0, 70.0)
SHELTER_RADIUS = 22.0  # a villager this close to a shelter's centre is safe from the wolf
FIELD_RADIUS = 42.0

#: Speeds in units per tick, and durations in ticks.
WALK_SPEED, FLEE_SPEED, PATROL_SPEED, CHASE_SPEED = 2.0, 2.2, 1.8, 2.2
GATHER_TICKS, STORE_TICKS = 30, 6
CHASE_TICKS = 60  # a guard gives up a chase after this many ticks
LOSE_RADIUS = 220.0  # ... or when the wolf is this far away
CLEAR_RADIUS = 110.0  # a hiding villager comes out when the wolf is this far away
CHORES_EVERY = 10  # the chores sensor visits each agent every this many ticks (staggered by index)
EAT_CHANCE = 0.35  # per visit of an idle villager: the larder is eaten and the villager goes out again
ROUND_CHANCE = 0.8  # per visit of an idle guard: it starts a new round


@wp.func
def noise(seed: int, tick: wp.int64, i: int, salt: int) -> float:
    """A uniform number in [0, 1) from (seed, tick, agent, salt): the same whatever the thread order."""
    state = wp.rand_init(seed, (int(tick) * 7919 + salt) * 1_000_003 + i)
    return wp.randf(state)


@wp.func
def nearest(points: wp.array(dtype=wp.vec2), p: wp.vec2) -> int:
    best = int(0)  # noqa: UP018 (Warp: a variable the loop changes is declared with its type)
    best_d = float(1.0e30)  # noqa: UP018
    for k in range(points.shape[0]):
        d = wp.length_sq(points[k] - p)
        if d < best_d:
            best_d = d
            best = k
    return best


@wp.func
def sheltered(shelters: wp.array(dtype=wp.vec2), p: wp.vec2) -> bool:
    """Whether a body at ``p`` is inside a shelter (the wolf cannot reach it there)."""
    return wp.length(shelters[nearest(shelters, p)] - p) < SHELTER_RADIUS


@wp.kernel
def sense(agents: Agents, role: wp.array(dtype=wp.int32), villager_enabled: wp.array(dtype=wp.bool),
          guard_enabled: wp.array(dtype=wp.bool), villager_priority: wp.array(dtype=wp.float32),
          guard_priority: wp.array(dtype=wp.float32)):
    """Each agent gets its role's actions and goals (the domain declares no agent types: see the domain file)."""
    i = wp.tid()
    if not agents.alive[i]:
        return
    r = role[i]
    for a in range(agents.enabled.shape[1]):
        if r == GUARD:
            agents.enabled[i, a] = guard_enabled[a]
        else:
            agents.enabled[i, a] = villager_enabled[a]
    for g in range(agents.priorities.shape[1]):
        if r == GUARD:
            agents.priorities[i, g] = guard_priority[g]
        else:
            agents.priorities[i, g] = villager_priority[g]


@wp.kernel
def chores(agents: Agents, rows: wp.array(dtype=wp.int32), clock: wp.array(dtype=wp.int64), seed: int,
           role: wp.array(dtype=wp.int32), w_stock: int, s_stock: int, m_stock: wp.uint64, w_round: int, s_round: int,
           m_round: wp.uint64):
    """A sensor with a cadence (the agents due this tick): an idle villager's larder is eaten now and then (it
    goes out to gather again), an idle guard starts a new round now and then."""
    i = rows[wp.tid()]
    if i < 0 or not agents.alive[i] or agents.action[i] >= 0:
        return
    t = clock[0]
    if role[i] == VILLAGER:
        if read_field(agents.states, i, w_stock, s_stock, m_stock) == wp.uint64(1) and noise(seed, t, i, 1) < \
                EAT_CHANCE:
            write_field(agents.states, i, w_stock, s_stock, m_stock, wp.uint64(0))
    else:
        if read_field(agents.states, i, w_round, s_round, m_round) == wp.uint64(1) and noise(seed, t, i, 2) < \
                ROUND_CHANCE:
            write_field(agents.states, i, w_round, s_round, m_round, wp.uint64(0))


@wp.func
def step_to(p: wp.vec2, goal: wp.vec2, speed: float) -> wp.vec2:
    d = goal - p
    n = wp.length(d)
    if n <= speed:
        return goal
    return p + d * (speed / n)


@wp.kernel
def act(agents: Agents, clock: wp.array(dtype=wp.int64), seed: int, pos: wp.array(dtype=wp.vec2),
        home: wp.array(dtype=wp.vec2), field: wp.array(dtype=wp.vec2), target: wp.array(dtype=wp.vec2),
        shelters: wp.array(dtype=wp.vec2), posts: wp.array(dtype=wp.vec2), wolf: wp.array(dtype=wp.vec2),
        w_at: int, s_at: int, m_at: wp.uint64):
    """Move the bodies and report DONE: walks when they arrive, work when its ticks are up, a chase when the wolf
    is lost (or the guard gives up), hiding when the wolf has gone."""
    i = wp.tid()
    a = agents.action[i]
    if a < 0 or not agents.alive[i]:
        return
    t = agents.action_ticks[i]
    p = pos[i]
    if a == WALK_FIELD or a == WALK_HOME or a == WALK_SHELTER or a == PATROL:
        if t == 0:  # the walk starts: pick where to, and leave the place the planner thinks the agent is at
            if a == WALK_FIELD:
                target[i] = field[i]
            elif a == WALK_HOME:
                target[i] = home[i]
            elif a == WALK_SHELTER:
                jitter = wp.vec2(noise(seed, clock[0], i, 3) - 0.5, noise(seed, clock[0], i, 4) - 0.5)
                target[i] = shelters[nearest(shelters, p)] + jitter * (1.2 * SHELTER_RADIUS)
            else:
                k = int(noise(seed, clock[0], i, 5) * float(posts.shape[0])) % posts.shape[0]
                jitter = wp.vec2(noise(seed, clock[0], i, 6) - 0.5, noise(seed, clock[0], i, 7) - 0.5)
                target[i] = posts[k] + jitter * 40.0
            if a != PATROL:
                write_field(agents.states, i, w_at, s_at, m_at, wp.uint64(AT_ROAD))
        speed = WALK_SPEED
        if a == WALK_SHELTER:
            speed = FLEE_SPEED
        elif a == PATROL:
            speed = PATROL_SPEED
        q = step_to(p, target[i], speed)
        pos[i] = q
        if wp.length(target[i] - q) < 0.01:
            agents.action_status[i] = wp.int8(DONE)
    elif a == CHASE:
        w = wolf[0]
        pos[i] = step_to(p, w, CHASE_SPEED)
        if wp.length(w - p) > LOSE_RADIUS or t + 1 >= CHASE_TICKS:
            agents.action_status[i] = wp.int8(DONE)
    elif a == GATHER:
        if t + 1 >= GATHER_TICKS:
            agents.action_status[i] = wp.int8(DONE)
    elif a == STORE:
        if t + 1 >= STORE_TICKS:
            agents.action_status[i] = wp.int8(DONE)
    elif a == HIDE:
        if wp.length(wolf[0] - p) > CLEAR_RADIUS:
            agents.action_status[i] = wp.int8(DONE)


def role_rows(role: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``enabled`` row (bool [A]) and ``priorities`` row (float32 [G]) of a role."""
    enabled = np.array([a.name in ROLE_ACTIONS[role] for a in DOMAIN.actions])
    priority = np.array([g.priority if g.name in ROLE_GOALS[role] else 0.0 for g in DOMAIN.goals], np.float32)
    return enabled, priority


def layout(seed: int) -> dict[str, np.ndarray]:
    """Houses, fields, shelters and guard posts around the village centre (the same for the same seed)."""
    rng = np.random.default_rng(seed)
    cx, cy = CENTRE
    ang = rng.uniform(0, 2 * np.pi, 70)
    rad = np.sqrt(rng.uniform(0.15, 1.0, 70))
    houses = np.stack([cx + np.cos(ang) * rad * 200, cy + np.sin(ang) * rad * 120], 1)
    k = np.arange(10)
    fa = 2 * np.pi * k / 10 + rng.uniform(-0.15, 0.15, 10)
    fields = np.stack([cx + np.cos(fa) * 410, cy + np.sin(fa) * 235], 1)
    sa = 2 * np.pi * np.arange(6) / 6 + np.pi / 6
    shelters = np.stack([cx + np.cos(sa) * 250, cy + np.sin(sa) * 145], 1)
    pa = 2 * np.pi * np.arange(8) / 8
    posts = np.stack([cx + np.cos(pa) * 330, cy + np.sin(pa) * 200], 1)
    return {name: np.clip(v, 30, [WIDTH - 30, HEIGHT - 30]).astype(np.float32)
            for name, v in (("houses", houses), ("fields", fields), ("shelters", shelters), ("posts", posts))}


class WolfWorld:
    """The world of the wolf game (the `goap.world.World` protocol): sense and act are one kernel each.

    Args:
        guards: the fraction of the agents that are guards (the last rows).
    """

    name = "wolf"
    domain = DOMAIN
    sensed_facts = ("danger", "alert", "at")  # with the chores sensor's stocked and patrolled
    capturable = True  # sense and act only launch kernels

    def __init__(self, guards: float = 0.04):
        if not 0.0 <= guards <= 1.0:
            raise ValueError(f"the fraction of guards must be in 0..1, got {guards}")
        self.guard_fraction = float(guards)

    def reset(self, brain, seed: int) -> None:
        dev, n = brain.device, brain.n_agents
        self.seed = int(seed)
        self.map = layout(seed)
        rng = np.random.default_rng(seed + 1)
        n_guards = round(n * self.guard_fraction)
        role = np.full(n, VILLAGER, np.int32)
        role[n - n_guards:] = GUARD
        houses, fields, posts = self.map["houses"], self.map["fields"], self.map["posts"]
        home = houses[rng.integers(0, len(houses), n)] + rng.uniform(-9, 9, (n, 2))
        field_at = fields[rng.integers(0, len(fields), n)]
        r, t = FIELD_RADIUS * np.sqrt(rng.uniform(0, 1, n)), rng.uniform(0, 2 * np.pi, n)
        field_at = field_at + np.stack([np.cos(t) * r, np.sin(t) * r], 1)
        guard_home = posts[rng.integers(0, len(posts), n)] + rng.uniform(-20, 20, (n, 2))
        home = np.where((role == GUARD)[:, None], guard_home, home)
        # A village already at work: some villagers in their field, some idle with a full larder, the rest at
        # home about to go out (else every villager would set off on the first tick, in step).
        start = rng.choice(3, n, p=[0.4, 0.3, 0.3])
        start[role == GUARD] = 3
        states = [({"at": "field"}, {"stocked": True}, {}, {"patrolled": True})[k] for k in start]
        brain.reset_agents(None, states=states)
        body = np.where((start == 0)[:, None], field_at, home)
        f32 = np.float32
        self.role_host = role
        self.role = wp.array(role, dtype=wp.int32, device=dev)
        self.home = wp.array(home.astype(f32), dtype=wp.vec2, device=dev)
        self.field = wp.array(field_at.astype(f32), dtype=wp.vec2, device=dev)
        self.pos = wp.array(body.astype(f32), dtype=wp.vec2, device=dev)
        self.target = wp.array(body.astype(f32), dtype=wp.vec2, device=dev)
        self.shelters = wp.array(self.map["shelters"], dtype=wp.vec2, device=dev)
        self.posts = wp.array(posts, dtype=wp.vec2, device=dev)
        self.wolf = wp.array(np.array([DEN], f32), dtype=wp.vec2, device=dev)
        (ve, vp), (ge, gp) = role_rows(VILLAGER), role_rows(GUARD)
        self.rows = [wp.array(x, device=dev) for x in (ve, ge, vp, gp)]
        self.slots = {f: brain.fact_slot(f) for f in ("stocked", "patrolled", "at", "danger", "alert")}
        args = [brain.clock, self.seed, self.role, *self._slot("stocked"), *self._slot("patrolled")]
        brain.add_sensor(lambda b, rows: b.launcher.launch(chores, rows.shape[0], [b.agents, rows, *args]),
                         every=CHORES_EVERY, facts=("stocked", "patrolled"), name="chores")

    def _slot(self, name: str) -> list:
        s = self.slots[name]
        return [s.word, s.shift, wp.uint64(s.mask)]

    def sense(self, brain) -> None:
        brain.launcher.launch(sense, brain.n_agents, [brain.agents, self.role, *self.rows])

    def act(self, brain, dt: float) -> None:
        brain.launcher.launch(act, brain.n_agents, [brain.agents, brain.clock, self.seed, self.pos, self.home,
                                                    self.field, self.target, self.shelters, self.posts, self.wolf,
                                                    *self._slot("at")])

    def graph_key(self) -> tuple:
        return (self.seed,)

    def score(self) -> dict[str, float]:
        return {}

    def get_state(self) -> dict[str, np.ndarray]:
        return {"pos": self.pos.numpy().copy(), "target": self.target.numpy().copy(),
                "wolf": self.wolf.numpy().copy()}

    def set_state(self, arrays: dict) -> None:
        n = self.pos.shape[0]
        want = {"pos": (n, 2), "target": (n, 2), "wolf": (1, 2)}
        for key, shape in want.items():
            v = arrays.get(key)
            if not isinstance(v, np.ndarray) or v.shape != shape or v.dtype != np.float32:
                raise ValueError(f"field '{key}' must be float32 of shape {shape}")
            if not np.isfinite(v).all():
                raise ValueError(f"field '{key}' must hold finite positions")
        extra = set(arrays) - set(want)
        if extra:
            raise ValueError(f"the wolf world keeps no field '{sorted(extra)[0]}'")
        for key in want:
            getattr(self, key).assign(arrays[key])

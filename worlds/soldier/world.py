"""SoldierWorld: two armies fight over a field of walls and control points, every rule a Warp kernel.

Every agent runs the soldier domain (``worlds/soldier/domain.toml``). The world keeps the physical truth in Warp
arrays on the brain's device (positions, health, ammo, magazines, grenades, medkit, rifle drawn, cover slot,
who shot whom when) and writes every fact of every agent each tick in one kernel (`sense_soldiers`); the actions
run in a handful of kernels (`act`). Host code only launches, through the brain's launcher: it never loops over
agents and never reads an array back during a tick, so both stages can be captured as graphs (``capturable``).

The package, by layer: `worlds.soldier.layout` (the domain's indices, the `Troops` and `Field` structs, the map laid
out in numpy), `worlds.soldier.geometry` (``@wp.func`` questions of the field), `worlds.soldier.sense` and
`worlds.soldier.act` (the kernels of each stage, one Warp module each), `worlds.soldier.snapshot` (get_state /
set_state and their checks), and this module (the world class the brain drives).

The field (all sizes in metres, a tick is about half a second):

* Team 0 lives on the left edge, team 1 on the right. Each team's back line holds medbays and armories, one
  every 20 m along it (medbays at y = 10, 50, 90, ..., armories at 30, 70, ...), so nobody walks far to one
  and no crowd forms at a single door. Soldiers spawn (and respawn after ``respawn_ticks``) at the back line.
* The middle of the field is cut into 10 m tiles; most tiles hold one wall (1.5 m thick, 4-7 m long, mostly
  across the line of fire). Walls never touch (each stays inside its tile with a margin), so a soldier who
  slides along a wall always gets round it: nobody is pinned against a wall. Walls block sight and movement.
* Cover slots line both long faces of every wall. A slot shields its holder from shooters on the wall's side
  only (the slot's ``normal`` points away from the wall): flanking is real. A soldier reserves a free slot
  before running to it: contested slots go to the lowest agent id (``atomic_min``), the others pick again.
* Control points sit in a grid over the middle of the field. Squads of ``squad_size`` soldiers (squads
  alternate teams) each have a row; a squad's objective is the first point of its row, from its own side, that
  its team has not held for ``hold_ticks``, so squads take a point, guard it, and push on. Presence captures a
  point over ``capture_ticks``; every held point scores a point per tick.

How the symbols map onto the field (all sensed each tick, so a plan's effects are what the world reports):

* ``enemy_*`` describe the tracked target: the best living enemy within ``sight`` (nearest, with fire spread
  over the enemy line; a grid of the enemy team sorted by cell), taken when the soldier has none or its target
  fell, re-chosen every 4 ticks when out of sight or crowded. Of those whose hits downed a target in one tick,
  the lowest id has the kill: it reads ``enemy_alive`` false for one tick (kill_enemy is achieved); the others
  are handed the next enemy at once. Visible: no wall on the segment between the two (the walls they crouch
  behind excepted: one sees over one's own cover), for 8 ticks after a target ducked away. ``enemy_in_cover``:
  the target holds a slot whose wall is between us. ``enemy_suppressed``: pinned for ``suppress_ticks``.
* ``at`` is ``cover`` on the soldier's own slot, ``medbay``/``armory`` inside one of its team's rooms,
  ``objective`` inside its squad's control point, else ``open_ground``.
* ``under_fire``: shot at during the last ``under_fire_ticks`` ticks while not in cover.
* ``escaped``: a flight ended out of sight and out of fire (for 3 ticks); ``area_secured``: a guard shift ended.

Actions run until the world can report their effects: ``shoot`` fires a burst every other tick until the target
is down, ``melee`` strikes until it is down, moves run until arrival, ``flank`` until the target's wall no longer
covers it, ``flee`` until nobody sees or shoots the soldier. Random numbers come from ``wp.rand_init(seed +
7919 tick, agent)``, contested slots and kills go to the lowest id, damage is summed with atomics and lands after
everyone acted, and ``act`` reads another soldier only through what ``sense`` copied: a run is the same on any
number of threads (and free of read-write races on a GPU).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import warp as wp

from worlds.soldier import snapshot
from worlds.soldier.act import (
    act_soldiers,
    advance_clock,
    award_cover,
    claim_cover,
    mark_shot_at,
    settle_attacks,
    settle_damage,
)
from worlds.soldier.layout import (
    DOMAIN,
    DOMAIN_PATH,
    FACTS,
    RULES,
    SITE_SPACING,
    STATS,
    Field,
    Troops,
    check_rules,
    field_size,
    make_field,
    make_troops,
    plan_field,
    room_positions,
    with_rules,
)
from worlds.soldier.objective import MERIT, credit_kernel, objective_total
from worlds.soldier.sense import (
    choose_squad_objectives,
    count_aims,
    count_at_objectives,
    grid_keys,
    grid_ranges,
    place_soldiers,
    respawn_soldiers,
    roll_aim_counts,
    sense_soldiers,
    update_objectives,
)

if TYPE_CHECKING:
    from goap.launch import Launcher
    from goap.runtime import Brain

__all__ = ["DOMAIN_PATH", "STATS", "SoldierWorld"]


class SoldierWorld:
    """Two armies (team 0 on the left, team 1 on the right) in squads, fighting over control points.

    Every stage launches through ``brain.launcher`` and only launches (kernels, the target grid's device radix
    sort, fills): ``capturable`` is True, and the tick is read from the world's own device clock. The rules
    (``speed`` ... ``hold_ticks``, the names of the arguments below) are plain attributes that the kernels receive
    inside the `Field` value, so a launch, recorded or captured, holds them as they were: `graph_key` returns them
    (with the layout's generation, which a reset or a restore bumps), and a brain that captures the tick captures it
    again when the key changes. A rule changed between ticks is checked and takes effect at the next stage; the
    field's size and ``squad_size`` are read at reset.

    Args:
        width, height: the field in metres; None sizes it to the army (``area_per_agent`` m2 a soldier, width
            clamped to 100..300 m, height at least 100 m), so a million soldiers get a long front, not a crowd.
        area_per_agent: m2 of field per soldier when a side is None.
        speed: metres a soldier runs per tick.
        sight: how far a soldier sees and tracks an enemy (at most 80 m).
        melee_range, grenade_range: metres within which a soldier strikes or throws.
        site_radius, objective_radius: metres from its centre that count as inside a room or a control point.
        under_fire_ticks: ticks a shot at a soldier keeps it ``under_fire``.
        respawn_ticks: ticks a dead soldier waits before it is back at its base.
        move_timeout: ticks a move may take before it fails (flights, supply runs and advances get more).
        guard_ticks: length of a guard shift at the objective.
        suppress_ticks: ticks suppressive fire pins its target.
        capture_ticks: ticks of a team's majority that capture a control point.
        hold_ticks: ticks a squad guards a point it holds before it pushes on.
        squad_size: soldiers per squad (squads alternate teams; a squad shares an objective).
    """

    name = "soldier"
    capturable = True
    sensed_facts: tuple[str, ...] = tuple(FACTS)
    #: Soldiers ask for plans often (a target ducks into cover, a suppression wears off, an enemy walks into view
    #: on the way to a point): 0.145 of them a tick at 2,000, 0.085 at 10,000 (``goap run`` with an unbounded
    #: budget, seed 7). The default budget of a tenth of the agents left 18.8% of them waiting at 2,000; this rate,
    #: with headroom, sizes the budget of ``goap run`` and ``goap view`` (`goap.world.default_plan_budget`).
    replan_rate = 0.2

    def __init__(
        self,
        width: float | None = None,
        height: float | None = None,
        *,
        area_per_agent: float = 8.0,
        speed: float = 3.0,
        sight: float = 40.0,
        melee_range: float = 4.0,
        grenade_range: float = 25.0,
        site_radius: float = 3.5,
        objective_radius: float = 8.0,
        under_fire_ticks: int = 2,
        respawn_ticks: int = 10,
        move_timeout: int = 60,
        guard_ticks: int = 15,
        suppress_ticks: int = 12,
        capture_ticks: int = 10,
        hold_ticks: int = 50,
        squad_size: int = 8,
    ):
        rules = {"speed": speed, "sight": sight, "melee_range": melee_range, "grenade_range": grenade_range,
                 "site_radius": site_radius, "objective_radius": objective_radius,
                 "under_fire_ticks": under_fire_ticks, "respawn_ticks": respawn_ticks, "move_timeout": move_timeout,
                 "guard_ticks": guard_ticks, "suppress_ticks": suppress_ticks, "capture_ticks": capture_ticks,
                 "hold_ticks": hold_ticks}
        if isinstance(area_per_agent, bool) or not isinstance(area_per_agent, int | float | np.number) or not (
                np.isfinite(area_per_agent) and area_per_agent > 0):
            raise ValueError(f"area_per_agent must be a finite number > 0, got {area_per_agent!r}")
        check_rules(rules)
        for key, value in (("width", width), ("height", height)):
            if value is not None and (not np.isfinite(value) or value < 60):
                raise ValueError(f"{key} must be at least 60 m, got {value!r}")
        if isinstance(squad_size, bool) or not isinstance(squad_size, int | np.integer) or squad_size < 1:
            raise ValueError(f"squad_size must be an integer >= 1, got {squad_size!r}")
        self.domain = DOMAIN
        self._width, self._height, self.area_per_agent = width, height, float(area_per_agent)
        for key in RULES:
            setattr(self, key, rules[key])
        self.squad_size = int(squad_size)
        self.device = None
        self.n = 0
        self.seed = 0
        self.width = float(width or 100.0)
        self.height = float(height or 100.0)
        self._generation = 0  # bumped whenever the field's arrays are made anew (reset, set_state)
        self._field_key: tuple = ()
        self._launcher: Launcher | None = None

    # --- what a captured tick holds -------------------------------------------------------------------------
    @property
    def rules(self) -> dict[str, Any]:
        """The rules' current values by name (`worlds.soldier.layout.RULES`)."""
        return {key: getattr(self, key) for key in RULES}

    def graph_key(self) -> tuple:
        """Every value the world's launches hold: the layout's generation and the rules. A graph captured from
        `sense` or `act` is valid while this is unchanged."""
        return (self._generation, *(getattr(self, key) for key in RULES))

    def _relaid(self) -> None:
        """The field's arrays were made anew: launches recorded or captured before hold the old ones."""
        self._generation += 1
        self._field_key = self.graph_key()

    def _current_field(self) -> Field:
        """The `Field` value to launch with: a new one (checked) when a rule changed since the last stage."""
        key = self.graph_key()
        if key != self._field_key:
            rules = self.rules
            check_rules(rules)
            self.field = with_rules(self.field, rules)
            self._field_key = key
        return self.field

    # --- layout ---------------------------------------------------------------------------------------------
    def reset(self, brain: Brain, seed: int) -> None:
        dev = self.device = brain.device
        n = self.n = brain.n_agents
        launcher = self._launcher = brain.launcher
        self.seed = int(seed) & 0x3FFFFFFF
        self.width, self.height = field_size(n, self._width, self._height, self.area_per_agent)
        plan = plan_field(self.width, self.height, n, self.squad_size, self.seed)
        self.obj_x0, self.obj_dx, self.obj_dy = plan.obj_x0, plan.obj_dx, plan.obj_dy
        self.obj_cols, self.obj_rows = plan.obj_cols, plan.obj_rows
        self.objectives = plan.objectives
        self.site_spacing = SITE_SPACING
        self.n_medbays, self.n_armories = plan.n_medbays, plan.n_armories
        self._key_bits = plan.key_bits
        check_rules(self.rules)
        self.field = make_field(plan, self.squad_size, self.seed, self.rules, n, dev)
        self._relaid()
        self.troops: Troops = make_troops(n, dev)
        self.clock = wp.zeros(1, dtype=wp.int32, device=dev)  # the tick: the world's kernels read clock[0]
        self.stats = wp.zeros(len(STATS), dtype=wp.int64, device=dev)
        self._contribution = wp.zeros(max(1, n), dtype=wp.float64, device=dev)  # each soldier's objective share
        self.merit = wp.zeros(len(MERIT), dtype=wp.int64, device=dev)  # what the objective counts
        L = brain.tables.layout
        self._layout = tuple(wp.array(x, dtype=dtype, device=dev) for x, dtype in (
            (L.word.astype(np.int32), wp.int32), (L.shift.astype(np.int32), wp.int32), (L.mask, wp.uint64)))
        self._base_cost = wp.array(brain.tables.cost.astype(np.float32), dtype=wp.float32, device=dev)
        launcher.launch(place_soldiers, n, [self.field, self.troops, self.clock, brain.agents], record=False)
        launcher.launch(choose_squad_objectives, plan.n_squads, [self.field, self.clock], record=False)
        self.sense(brain)

    # --- the tick -------------------------------------------------------------------------------------------
    def sense(self, brain: Brain) -> None:
        """Respawns, control points, the target grid, then every soldier's facts, costs, enabled actions and goal
        priorities (`worlds.soldier.sense`). Launches only: capturable."""
        n = self.n
        if not n:
            return
        f, t, agents, launch = self._current_field(), self.troops, brain.agents, brain.launcher.launch
        launch(respawn_soldiers, n, [f, t, self.clock, self.stats, agents])
        launch(count_at_objectives, n, [f, t])
        launch(update_objectives, self.obj_cols * self.obj_rows, [f, self.stats, self.clock])
        launch(choose_squad_objectives, f.squad_obj.shape[0], [f, self.clock])
        launch(grid_keys, n, [f, t, n])
        wp.utils.radix_sort_pairs(f.grid_keys, f.grid_ids, n, end_bit=self._key_bits)
        f.cell_start.zero_()
        f.cell_end.zero_()
        launch(grid_ranges, n, [f, n])
        launch(roll_aim_counts, n, [t])
        brain.launcher.launch_rows(sense_soldiers, n, [f, t, self.clock, *self._layout, self._base_cost, agents])
        launch(count_aims, n, [t])

    def act(self, brain: Brain, dt: float) -> None:
        """Cover bids, every soldier's action, wounds and deaths, kills (`worlds.soldier.act`); then the clock
        moves on. Launches only: capturable."""
        n, launch = self.n, brain.launcher.launch
        f, t, agents = self._current_field(), self.troops, brain.agents
        if n:
            launch(claim_cover, n, [f, t, agents])
            launch(award_cover, n, [f, t])
            launch(act_soldiers, n, [f, t, self.clock, self.stats, agents])
            launch(settle_damage, n, [f, t, self.clock, self.stats, agents])
            launch(settle_attacks, n, [f, t, self.clock, agents])
            launch(credit_kernel, n, [f, t, self.clock, self._contribution, self.merit])
        launch(advance_clock, 1, [self.clock])

    def mark_under_fire(self, agents: Any) -> None:
        """Someone shot at these soldiers just now: they sense ``under_fire`` next tick (a script's or test's
        hook between ticks; one launch, not a per-tick call)."""
        rows = np.atleast_1d(np.asarray(agents, dtype=np.int64))
        if len(rows) and (rows.min() < 0 or rows.max() >= self.n):
            raise ValueError(f"agents must be in 0..{self.n - 1}")
        if len(rows) and self._launcher is not None:
            self._launcher.launch(mark_shot_at, len(rows), [
                wp.array(rows.astype(np.int32), dtype=wp.int32, device=self.device), self.troops, self.clock,
            ], record=False)

    # --- what the viewer and the tests read (host numpy; zero-copy on the CPU) ------------------------------
    @property
    def positions(self) -> np.ndarray:
        return self.troops.pos.numpy()[: self.n]

    @property
    def team(self) -> np.ndarray:
        return self.troops.team.numpy()[: self.n].astype(np.int8)

    @property
    def alive(self) -> np.ndarray:
        return self.troops.alive.numpy()[: self.n] != 0

    @property
    def target(self) -> np.ndarray:
        return self.troops.target.numpy()[: self.n]

    @property
    def obstacles(self) -> np.ndarray:
        k = int((self.field.tile_wall.numpy() >= 0).sum())
        return self.field.walls.numpy()[:k]

    @property
    def sites(self) -> dict[str, np.ndarray]:
        """Named points: ``cover`` [S, 2] slots; ``objective`` [O, 2]; ``medbay`` / ``armory`` / ``base``
        [2, k, 2] per team (base: the middle of the team's back line)."""
        k = int(self.field.wall_slots.numpy()[-1])
        return {"cover": self.field.slot_pos.numpy()[:k], "objective": self.objectives,
                **room_positions(self.width, self.height, self.n_medbays, self.n_armories)}

    def objective_owners(self) -> np.ndarray:
        """int32 [O]: the team holding each control point (-1: nobody)."""
        return self.field.obj_owner.numpy().copy()

    def make_view(self) -> Any:
        """The viewer's drawing hooks for this world (`worlds.soldier.view.SoldierView`)."""
        from worlds.soldier.view import SoldierView

        return SoldierView(self)

    # --- measures and snapshots -----------------------------------------------------------------------------
    def contribution(self, brain: Brain) -> wp.array:
        """float64 [N] on the device: each soldier's share of the objective since the reset
        (`worlds.soldier.objective`); the objective's total is their sum."""
        return self._contribution[: self.n]

    def score(self) -> dict[str, float]:
        out = {s: float(v) for s, v in zip(STATS, self.stats.numpy(), strict=True)}
        merit = self.merit.numpy()
        out.update({f"merit_{name}": float(v) for name, v in zip(MERIT, merit, strict=True)})
        out["objective_total"] = objective_total(merit)
        minutes = max(int(self.clock.numpy()[0]), 1) / 60.0
        out["objective"] = out["objective_total"] / max(self.n, 1) / minutes
        alive, team = self.alive, self.team
        for k in (0, 1):
            out[f"alive_team{k}"] = float((alive & (team == k)).sum())
        owners = self.field.obj_owner.numpy()
        for k in (0, 1):
            out[f"held_team{k}"] = float((owners == k).sum())
        return out

    def get_state(self) -> dict[str, np.ndarray]:
        """Host copies of every array that defines the world now (`worlds.soldier.snapshot.get_state`)."""
        return snapshot.get_state(self)

    def set_state(self, arrays: dict[str, Any]) -> None:
        """Restore what `get_state` returned, into a world reset for the same number of soldiers on a field of the
        same size (the walls and cover slots come from the snapshot, whatever seed this world was laid out with).

        Every array is checked (present, dtype, shape, indices in range) before any is written; ValueError names
        the first bad one.
        """
        snapshot.set_state(self, arrays)

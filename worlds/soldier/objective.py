"""What a battle is for, as one number: control points held, and kills less deaths.

The objective a learned goal selector is judged on (`worlds.soldier.world.SoldierWorld.score`, ``"objective"``:
per agent-minute, 60 ticks a minute). Each tick a soldier spends inside the radius of a control point its team
holds is worth ``HOLD_WORTH``; a kill is worth ``KILL_WORTH`` to the soldier who made it and a death costs
``DEATH_COST`` to the one who died (per team, kills and deaths do not cancel; over both teams they nearly do, so
holding ground is most of the whole). `credit_kernel` credits each soldier with its own share (the world's
``contribution`` array) and counts the same events in the world's ``merit`` counters, from which
`objective_total` computes the objective.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from worlds.soldier.geometry import nearest_objective, objective_pos
from worlds.soldier.layout import Field, Troops

HOLD_WORTH = 0.05
KILL_WORTH = 1.0
DEATH_COST = 1.0
#: The ``merit`` counters: kills credited to a soldier, deaths, and soldier-ticks holding a point, per team.
MERIT = ("kills", "deaths", "held_team0", "held_team1")

wp.set_module_options({"enable_backward": False})


def objective_total(merit: np.ndarray) -> float:
    kills, deaths, held0, held1 = (float(x) for x in merit)
    return KILL_WORTH * kills - DEATH_COST * deaths + HOLD_WORTH * (held0 + held1)


@wp.kernel
def credit_kernel(f: Field, t: Troops, clock: wp.array(dtype=wp.int32), contribution: wp.array(dtype=wp.float64),
                  merit: wp.array(dtype=wp.int64)):
    """After the tick's wounds and kills (`worlds.soldier.act.settle_damage`): a soldier that died this tick pays
    for its death and its killer (the lowest id whose shot or blast downed it) earns the kill; a live soldier on
    a point its team holds earns the tick."""
    i = wp.tid()
    n = t.alive.shape[0]
    if t.alive[i] == 0:
        if t.health[i] == 0 and t.respawn_at[i] == clock[0] + f.respawn_ticks:  # died this tick
            contribution[i] = contribution[i] - wp.float64(DEATH_COST)
            wp.atomic_add(merit, 1, wp.int64(1))
            k = t.killer[i]
            if k >= 0 and k < n:
                wp.atomic_add(contribution, k, wp.float64(KILL_WORTH))
                wp.atomic_add(merit, 0, wp.int64(1))
        return
    o = nearest_objective(f, t.pos[i])
    team = t.team[i]
    if f.obj_owner[o] == team and wp.length(t.pos[i] - objective_pos(f, o)) <= f.objective_radius:
        contribution[i] = contribution[i] + wp.float64(HOLD_WORTH)
        wp.atomic_add(merit, 2 + team, wp.int64(1))

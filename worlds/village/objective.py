"""What the village is for, as one number: goods made and stockpiled at their worth, less the hunger it suffers.

The objective a learned goal selector is judged on (`worlds.village.world.VillageWorld.score`, ``"objective"``:
per agent-minute, 60 ticks a minute). Each finished action that the world tallies is worth ``WORTH[tally]`` a
unit (iron and tools above raw goods, coins from a sale above the wood sold); each tick an agent spends at the
top of its hunger costs ``STARVING_COST``. The same rules credit each agent with what its own actions earned
(`credit_kernel`, into the world's ``contribution`` array), so the sum of the contributions is the objective's
total, which `objective_total` computes from the world's tallies instead.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from goap.kernels.agents import Agents
from goap.kernels.codes import DONE
from goap.kernels.semantics import read_field
from worlds.village.layout import TALLIES, TALLY

#: Worth of one unit of each tally (a tally not named here is worth nothing: actions taken, waits, failures).
WORTH = {
    "wood_produced": 1.0, "food_produced": 1.0, "ore_produced": 2.0, "fish_caught": 1.0, "iron_made": 3.0,
    "tools_forged": 5.0, "coins_earned": 1.5, "wood_stockpiled": 1.0, "food_stockpiled": 1.0,
}
#: What one tick at the top of the hunger scale costs the village.
STARVING_COST = 0.25

wp.set_module_options({"enable_backward": False})


def action_worth(action_names: list[str]) -> np.ndarray:
    """float64 [A]: what finishing each action is worth (its tally's worth times the amount it tallies)."""
    out = np.zeros(max(1, len(action_names)), dtype=np.float64)
    for a, name in enumerate(action_names):
        if name in TALLY:
            tally, amount = TALLY[name]
            out[a] = WORTH.get(tally, 0.0) * amount
    return out


def objective_total(tallies: np.ndarray, starved_ticks: int) -> float:
    """The objective earned since the world's reset, from its tallies and its starved agent-ticks."""
    worth = sum(WORTH.get(name, 0.0) * float(v) for name, v in zip(TALLIES, tallies, strict=True))
    return worth - STARVING_COST * float(starved_ticks)


@wp.kernel
def credit_kernel(
    agents: Agents, worth: wp.array(dtype=wp.float64), hunger_word: int, hunger_shift: int, hunger_mask: wp.uint64,
    hunger_top: wp.uint64, contribution: wp.array(dtype=wp.float64), starved: wp.array(dtype=wp.int64),
):
    """After the world's act: each agent whose action is DONE this tick earns its worth; each at the top of its
    hunger pays `STARVING_COST` (counted in ``starved``)."""
    i = wp.tid()
    if not agents.alive[i]:
        return
    a = agents.action[i]
    if a >= 0 and agents.action_status[i] == wp.int8(DONE):
        contribution[i] = contribution[i] + worth[a]
    if read_field(agents.states, i, hunger_word, hunger_shift, hunger_mask) >= hunger_top:
        contribution[i] = contribution[i] - wp.float64(STARVING_COST)
        wp.atomic_add(starved, 0, wp.int64(1))

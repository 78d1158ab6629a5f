"""The `Agents` Warp struct: every per-agent array of a brain as one kernel argument, made from `goap.state.FIELDS`.

A tick kernel or a world kernel takes ``agents: Agents`` and reads ``agents.states[i, w]``, ``agents.action[i]``,
``agents.alive[i]``: the fields are those of `goap.state` (same names, shapes and dtypes), so an array added to
that table reaches every kernel without a new parameter. A brain hands its struct out as ``brain.agents``.

The functions below are the brain's per-agent lifecycle in kernel form, for world kernels that must act on an
agent's mind inside the tick (a soldier that dies and respawns): call them instead of writing the brain's
bookkeeping arrays one by one. They are what `goap.runtime.Brain.reset_agents` does for one row, less the
state and the domain's priorities and costs (which the world writes itself).
"""

from __future__ import annotations

import warp as wp

from goap.kernels.codes import RUNNING, ST_NOT_PLANNED
from goap.state import FIELDS

wp.set_module_options({"enable_backward": False})

_DTYPES = {"bool": wp.bool, "int8": wp.int8, "int32": wp.int32, "int64": wp.int64, "uint32": wp.uint32,
           "uint64": wp.uint64, "float32": wp.float32, "float64": wp.float64}


def _agents_struct() -> type:
    annotations = {f.name: wp.array(dtype=_DTYPES[f.dtype], ndim=1 + len(f.dims)) for f in FIELDS}
    cls = type("Agents", (), {"__annotations__": annotations, "__module__": __name__, "__qualname__": "Agents",
                              "__doc__": "Every per-agent array of a brain (`goap.state.FIELDS`), one row each."})
    return wp.struct(cls)


Agents = _agents_struct()


def make_agents(arrays) -> Agents:
    """An `Agents` value over ``arrays`` (a `goap.state.AgentArrays`): the struct refers to the same memory."""
    s = Agents()
    for f in FIELDS:
        setattr(s, f.name, getattr(arrays, f.name))
    return s


@wp.func
def clear_mind(agents: Agents, i: int):
    """Agent ``i`` forgets its goal, plan, action, cooldowns, wait and pending request (its facts stay)."""
    agents.goal[i] = -1
    agents.plan_length[i] = 0
    agents.plan_level[i] = wp.int8(0)
    agents.step[i] = 0
    agents.action[i] = -1
    agents.action_status[i] = wp.int8(RUNNING)
    agents.action_ticks[i] = 0
    agents.needs_plan[i] = False
    agents.replan_cause[i] = wp.int8(0)
    agents.waiting[i] = 0
    agents.fail_reason[i] = 0
    for g in range(agents.cooldown_until.shape[1]):
        agents.cooldown_until[i, g] = wp.int64(0)


@wp.func
def forget_plan(agents: Agents, i: int):
    """Agent ``i``'s plan is dropped (goal kept); with a goal it asks for a new plan next tick."""
    agents.plan_length[i] = 0
    agents.plan_level[i] = wp.int8(0)
    agents.step[i] = 0
    agents.action[i] = -1
    agents.action_ticks[i] = 0


@wp.func
def set_alive(agents: Agents, i: int, alive: bool):
    """Bring agent ``i`` into the simulation or take it out (every stage skips dead rows); its mind is cleared."""
    agents.alive[i] = alive
    clear_mind(agents, i)
    agents.pinned_goal[i] = -1
    agents.plan_status[i] = wp.int8(ST_NOT_PLANNED)
    agents.last_failure[i] = wp.int8(-1)

"""Kernels of `goap.world.EngineWorld`: timed actions and drifting facts, from per-agent random counters."""

from __future__ import annotations

import warp as wp

from goap.kernels.agents import Agents
from goap.kernels.codes import DONE, FAILED
from goap.kernels.semantics import write_field

wp.set_module_options({"enable_backward": False})


@wp.kernel
def drift_facts(
    seed: int,
    tick: wp.array(dtype=wp.int64),
    p: float,
    agents: Agents,
    word: wp.array(dtype=wp.int32),
    shift: wp.array(dtype=wp.int32),
    mask: wp.array(dtype=wp.uint64),
    hi: wp.array(dtype=wp.uint64),
    n_facts: int,
):
    i = wp.tid()
    if not agents.alive[i]:
        return
    rng = wp.rand_init(seed ^ int(tick[0] * wp.int64(7919)), i)
    if wp.randf(rng) >= p:
        return
    f = int(wp.randi(rng, 0, n_facts))
    v = wp.uint64(0)
    if hi[f] < wp.uint64(2147483646):
        v = wp.uint64(wp.randi(rng, 0, int(hi[f]) + 1))
    else:
        v = wp.uint64(wp.randi(rng, 0, 2147483647))
    write_field(agents.states, i, word[f], shift[f], mask[f], v)


@wp.kernel
def advance_actions(
    seed: int,
    tick: wp.array(dtype=wp.int64),
    duration: int,
    fail_p: float,
    agents: Agents,
):
    i = wp.tid()
    if agents.action[i] < 0:
        return
    if agents.action_ticks[i] + 1 < duration:
        return
    status = wp.int8(DONE)
    if fail_p > 0.0:
        rng = wp.rand_init(seed ^ int(tick[0] * wp.int64(104729)) ^ 0x5BD1E995, i)
        if wp.randf(rng) < fail_p:
            status = wp.int8(FAILED)
    agents.action_status[i] = status


@wp.kernel
def count_tick(tick: wp.array(dtype=wp.int64)):
    tick[0] = tick[0] + wp.int64(1)

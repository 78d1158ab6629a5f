"""The agents' struct of arrays: every per-agent array of a `goap.runtime.Brain`, on the brain's device.

One row per agent, allocated once for the brain's capacity N and never reallocated (spawning and despawning flip
``alive``). On the CPU device ``array.numpy()`` is a zero-copy numpy view, so game code may read and write them
with numpy; ``wp.to_torch(array)`` is a zero-copy torch view (uint64 states: view them as int64). Snapshots,
restores and the state hash walk `FIELDS`, so an array added here is saved, checked and hashed with the rest.

W = words per state, G = goals, A = actions, L = plan capacity (``max_plan_length``).

| array | shape | dtype | meaning | written by |
|---|---|---|---|---|
| states | N, W | uint64 | packed facts (`goap.encoding`) | world sense/act, game, effects of DONE actions |
| priorities | N, G | float32 | goal priorities (> 0 to be eligible) | world sense, game |
| costs | N, A | float32 | action costs per agent (>= 0) | world sense, game |
| enabled | N, A | bool | action usable by the agent now | world sense, game |
| alive | N | bool | live agent; dead rows are skipped by every stage | spawn, despawn |
| goal | N | int32 | goal pursued, -1 none | decide; plan (failure drops it) |
| pinned_goal | N | int32 | goal forced by `Brain.set_goal`, -1 none | set_goal / clear_goal; released when reached |
| plan | N, L | int32 | the plan, -1 padded | plan |
| plan_length | N | int32 | steps in plan | plan; cleared on goal change |
| plan_cost | N | float64 | the plan's cost | plan |
| plan_status | N | int8 | status of the agent's last search (`Status`) | plan |
| plan_level | N | int8 | node-pool level a deferred search resumes at | plan |
| expanded | N | int32 | nodes the last search expanded | plan |
| step | N | int32 | index in plan of the current action | plan (0), act (+1 when DONE) |
| action | N | int32 | action being executed, -1 none; always ``plan[step]`` while acting | act |
| action_status | N | int8 | RUNNING 0, DONE 1, FAILED 2 for this tick | world act, or the game |
| action_ticks | N | int32 | ticks the current action ran before this one | act |
| cooldown_until | N, G | int64 | tick until which a goal is skipped after a failed search | plan |
| waiting | N | int32 | ticks the agent has waited for a plan | plan queue |
| needs_plan | N | bool | the agent asks for a plan | decide, replan |
| replan_cause | N | int8 | why it asked (`goap.codes.CAUSES`) | decide, replan |
| last_failure | N | int8 | status of its last failed search, -1 none | plan |
| event_bits | N | uint32 | the last tick's events, one bit each (`goap.codes.EVENTS`) | every stage |
| agent_type | N | int32 | the agent's type (index in `goap.domain.Domain.types`) | spawn, set_type |
| failed_goal | N | int32 | the goal of the last failed search, -1 none | plan |
| interrupted_action | N | int32 | the action cut off this tick (event ``action_interrupted``), -1 none | decide |
| commanded | N | bool | `Brain.replan` was called since the last tick (taken by the next decide) | replan, decide |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Field:
    """One per-agent array: its trailing dimensions (by name), dtype, fill value and documentation."""

    name: str
    dims: tuple[str, ...]  # trailing dimensions after N: "W", "G", "A", "L"
    dtype: str  # numpy dtype name; the Warp dtype has the same name
    fill: Any
    doc: str


FIELDS: tuple[Field, ...] = (
    Field("states", ("W",), "uint64", 0, "packed facts"),
    Field("priorities", ("G",), "float32", 0.0, "goal priorities"),
    Field("costs", ("A",), "float32", 1.0, "action costs per agent"),
    Field("enabled", ("A",), "bool", True, "action usable now"),
    Field("alive", (), "bool", True, "live agent"),
    Field("goal", (), "int32", -1, "goal pursued"),
    Field("pinned_goal", (), "int32", -1, "goal forced by set_goal"),
    Field("plan", ("L",), "int32", -1, "the plan"),
    Field("plan_length", (), "int32", 0, "steps in the plan"),
    Field("plan_cost", (), "float64", 0.0, "the plan's cost"),
    Field("plan_status", (), "int8", 5, "status of the last search"),
    Field("plan_level", (), "int8", 0, "node-pool level of a deferred search"),
    Field("expanded", (), "int32", 0, "nodes the last search expanded"),
    Field("step", (), "int32", 0, "index of the current action in the plan"),
    Field("action", (), "int32", -1, "action being executed"),
    Field("action_status", (), "int8", 0, "RUNNING / DONE / FAILED"),
    Field("action_ticks", (), "int32", 0, "ticks the current action ran before this one"),
    Field("cooldown_until", ("G",), "int64", 0, "tick until which a goal is skipped"),
    Field("waiting", (), "int32", 0, "ticks waited for a plan"),
    Field("needs_plan", (), "bool", False, "asks for a plan"),
    Field("replan_cause", (), "int8", 0, "why it asked"),
    Field("last_failure", (), "int8", -1, "status of the last failed search"),
    Field("event_bits", (), "uint32", 0, "last tick's events, a bit each"),
    Field("agent_type", (), "int32", 0, "the agent's type"),
    Field("failed_goal", (), "int32", -1, "goal of the last failed search"),
    Field("interrupted_action", (), "int32", -1, "action cut off this tick"),
    Field("commanded", (), "bool", False, "a commanded replan waits for the next tick"),
    Field("fail_reason", (), "int32", 0, "the world's reason for its last FAILED action (goap.world.FAIL_REASONS)"),
)

FIELD_NAMES = tuple(f.name for f in FIELDS)


class AgentArrays:
    """The per-agent Warp arrays of a brain, allocated once on ``device`` (see the module docstring).

    Args:
        n: capacity (rows).
        dims: sizes of the named trailing dimensions: ``{"W": words, "G": goals, "A": actions, "L": plan}``.
        device: a Warp device.
        fills: per-field rows to start from instead of the constant fill (e.g. the default state), broadcast
            over agents.
    """

    def __init__(self, n: int, dims: dict[str, int], device: Any, fills: dict[str, np.ndarray] | None = None):
        import warp as wp

        self.n = int(n)
        self.dims = dict(dims)
        self.device = device
        fills = fills or {}
        for f in FIELDS:
            shape = self.shape_of(f)
            host = np.empty(shape, dtype=f.dtype)
            host[...] = fills.get(f.name, f.fill)
            setattr(self, f.name, wp.array(host, dtype=_warp_dtype(f.dtype), device=device))

    def shape_of(self, f: Field) -> tuple[int, ...]:
        return (self.n, *(max(1, self.dims[d]) if d == "L" else self.dims[d] for d in f.dims))

    def items(self) -> list[tuple[str, Any]]:
        return [(f.name, getattr(self, f.name)) for f in FIELDS]

    def host(self) -> dict[str, np.ndarray]:
        """Host copies of every array (for snapshots and hashes)."""
        return {name: arr.numpy().copy() for name, arr in self.items()}

    def check(self, arrays: dict[str, np.ndarray], where: str) -> None:
        """Raise ValueError naming the field when ``arrays`` does not match every field's shape and dtype."""
        for f in FIELDS:
            if f.name not in arrays:
                raise ValueError(f"{where}: field '{f.name}' is missing")
            arr = arrays[f.name]
            if not isinstance(arr, np.ndarray) or arr.dtype == object:
                raise ValueError(f"{where}: field '{f.name}' is not a numeric array")
            if arr.shape != self.shape_of(f):
                raise ValueError(f"{where}: field '{f.name}' has shape {arr.shape}, this brain has {self.shape_of(f)}")
            if arr.dtype != np.dtype(f.dtype):
                raise ValueError(f"{where}: field '{f.name}' has dtype {arr.dtype}, expected {f.dtype}")

    def load(self, arrays: dict[str, np.ndarray]) -> None:
        """Copy checked host arrays into the device arrays (call `check` first)."""
        import warp as wp

        for name, arr in self.items():
            wp.copy(arr, wp.array(np.ascontiguousarray(arrays[name]), dtype=arr.dtype, device=self.device))

    def nbytes(self) -> int:
        return arrays_nbytes(self.n, self.dims)


def arrays_nbytes(n: int, dims: dict[str, int]) -> int:
    """The bytes of the agents' arrays for ``n`` rows (`FIELDS`), computed before anything is allocated: a brain
    too large for the machine is refused with this figure rather than failing half allocated."""
    row = 0
    for f in FIELDS:
        cells = 1
        for d in f.dims:
            cells *= max(1, int(dims[d])) if d == "L" else int(dims[d])
        row += cells * np.dtype(f.dtype).itemsize
    return int(n) * row


def available_bytes(device: Any) -> int | None:
    """Memory a new allocation on ``device`` may take: the GPU's free memory; on the CPU the physical memory,
    less what the address-space limit (``ulimit -v``) leaves to this process. None when it cannot be told."""
    if not getattr(device, "is_cpu", True):
        free = getattr(device, "free_memory", None)
        return int(free) if isinstance(free, int) and free > 0 else None
    import os

    limits = []
    try:
        limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            with open("/proc/self/statm") as f:
                used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            limits.append(max(0, soft - used))
    except (ImportError, OSError, ValueError, IndexError):
        pass
    return min(limits) if limits else None


def _warp_dtype(name: str) -> Any:
    import warp as wp

    return {"bool": wp.bool, "int8": wp.int8, "int32": wp.int32, "int64": wp.int64, "uint32": wp.uint32,
            "uint64": wp.uint64, "float32": wp.float32, "float64": wp.float64}[name]

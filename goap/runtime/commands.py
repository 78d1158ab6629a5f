"""Commands and lifecycle of a `goap.runtime.Brain`: replan, pin and release goals, reset, spawn, despawn, hooks.

Each command is one launch over the rows it names (an index list checked against the capacity), between ticks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from goap.codes import CAUSES, cause_code


class Commands:
    """A mixin of `goap.runtime.Brain` (its wiring is in `goap.runtime.brain`)."""

    def on_plan(self, callback: Callable[..., None]) -> None:
        """Call ``callback(states, goals, costs, enabled, agents, count)`` before each planning call: the brain's
        device arrays, and the rows about to be planned (``agents[:count[0]]``, both device arrays). For recorders
        and benchmarks (``goap bench --suite world:...``). It runs on the host between captured graphs."""
        if not callable(callback):
            raise TypeError("on_plan needs a callable")
        self._plan_hooks.append(callback)

    def _rows(self, agents: Any) -> Any:
        """Agent indices as an int32 Warp array on the device, checked against the capacity."""
        wp = self._wp
        if agents is None:
            return wp.array(np.arange(self.n_agents, dtype=np.int32), dtype=wp.int32, device=self.device)
        if isinstance(agents, wp.array):
            if agents.dtype != wp.int32 or agents.ndim != 1:
                raise ValueError(f"agent indices must be a 1-D int32 Warp array, got {agents.dtype.__name__}")
            agents = agents.numpy()
        idx = np.atleast_1d(np.asarray(agents))
        if idx.dtype == bool:
            if idx.shape != (self.n_agents,):
                raise ValueError(f"an agent mask must have shape ({self.n_agents},), got {idx.shape}")
            idx = np.flatnonzero(idx)
        if idx.ndim != 1 or (len(idx) and not np.issubdtype(idx.dtype, np.integer)):
            raise ValueError("agents must be indices (a sequence of ints), a bool mask or None")
        if len(idx) and (idx.min() < 0 or idx.max() >= self.n_agents):
            bad = int(idx[(idx < 0) | (idx >= self.n_agents)][0])
            raise ValueError(f"agent {bad} is out of range 0..{self.n_agents - 1}")
        return wp.array(idx.astype(np.int32), dtype=wp.int32, device=self.device)

    def replan(self, agents: Any = None, cause: str = "commanded") -> None:
        """Drop the plans of ``agents`` and plan them again next tick; ``replan_cause`` records ``cause``."""
        if cause == "none":
            raise ValueError(f"unknown replan cause '{cause}'; causes are {', '.join(CAUSES[1:])}")
        code = cause_code(cause)
        rows = self._rows(agents)
        self.launcher.launch(self._kernels.replan_agents, rows.shape[0], [self.agents, rows, code], record=False)

    def set_goal(self, agents: Any, goal: str | int) -> None:
        """Pin ``goal`` for ``agents``: they pursue it (whatever its priority) until it is reached or cleared."""
        g = self._goal_index(goal)
        rows = self._rows(agents)
        self.launcher.launch(self._kernels.pin_goals, rows.shape[0], [self.agents, rows, g], record=False)

    def clear_goal(self, agents: Any = None) -> None:
        """Release pinned goals; the agents choose by priority again from the next tick."""
        rows = self._rows(agents)
        self.launcher.launch(self._kernels.pin_goals, rows.shape[0], [self.agents, rows, -1], record=False)

    def _goal_index(self, goal: str | int) -> int:
        names = [g.name for g in self.domain.goals]
        if isinstance(goal, str):
            if goal not in names:
                raise ValueError(f"unknown goal '{goal}'; goals are {', '.join(names)}")
            return names.index(goal)
        if not isinstance(goal, int | np.integer) or isinstance(goal, bool | np.bool_) or not 0 <= goal < len(names):
            raise ValueError(f"goal index {goal!r} is out of range 0..{len(names) - 1}")
        return int(goal)

    def reset_agents(self, agents: Any = None, states: Any = None) -> None:
        """Clear goals, pins, plans, actions, cooldowns and events of ``agents``; write ``states`` (packed
        uint64 [K, W], or fact dicts) or the domain's default state; priorities, costs and enabled go back to the
        domain's values."""
        rows = self._rows(agents)
        k = rows.shape[0]
        packed = self._packed_states(states, k)
        self.launcher.launch(self._kernels.reset_rows, k, [
            self.agents, rows, packed, self._tables_d.goals.priority, self._tables_d.cost,
        ], record=False)

    def _packed_states(self, states: Any, k: int) -> Any:
        """``states`` for k agents as a uint64 [k, W] device array (one row broadcast to all; None: default)."""
        wp, W = self._wp, self.tables.n_words
        if states is None:
            host = self._default_state[None]
        elif isinstance(states, wp.array):
            host = states.numpy()
        elif isinstance(states, np.ndarray) and states.dtype != object:
            if states.dtype.kind not in "iu":  # packed states are bits: a float row would be rounded into them
                raise ValueError(f"packed states must be an integer array (uint64 [{k}, {W}]), got {states.dtype}")
            host = np.asarray(states, dtype=np.uint64).reshape(-1, W) if states.size % W == 0 else states
        else:
            host = np.stack([self.tables.pack(s) for s in states]) if len(states) else np.zeros((0, W), np.uint64)
        if host.ndim != 2 or host.shape[1] != W or host.shape[0] not in (1, k):
            raise ValueError(f"states must be uint64 [{k}, {W}] (or one row for all), got shape {host.shape}")
        host = np.ascontiguousarray(np.broadcast_to(host, (max(1, k), W)), dtype=np.uint64)
        bad = self.tables.invalid_states(host)
        if len(bad):
            raise ValueError(f"state {int(bad[0])} is invalid: {self.tables.state_problem(host[bad[0]])}")
        return wp.array(host, dtype=wp.uint64, device=self.device)

    def spawn(self, count: int | None = None, *, agents: Any = None, states: Any = None) -> np.ndarray:
        """Bring dead rows to life (the first ``count`` free ones, or ``agents``), reset, with ``states``.

        Returns the indices spawned. Raises ValueError when fewer free rows are left than asked for.
        """
        alive = self.arrays.alive.numpy()
        if agents is None:
            free = np.flatnonzero(~alive)
            if count is not None and (not isinstance(count, int | np.integer) or isinstance(count, bool) or count < 0):
                raise ValueError(f"spawn count must be an integer >= 0, got {count!r}")
            count = len(free) if count is None else int(count)
            if count > len(free):
                raise ValueError(f"cannot spawn {count} agents: {len(free)} free rows of {self.n_agents}")
            idx = free[:count]
        else:
            idx = self._rows(agents).numpy()
            if alive[idx].any():
                raise ValueError(f"agent {int(idx[alive[idx]][0])} is already alive")
        self.reset_agents(idx, states)
        rows = self._rows(idx)
        self.launcher.launch(self._kernels.set_alive_rows, rows.shape[0], [self.agents, rows, 1], record=False)
        return idx.astype(np.int64)

    def despawn(self, agents: Any) -> None:
        """Take agents out of the simulation: every stage skips them until they are spawned again."""
        rows = self._rows(agents)
        self.reset_agents(rows.numpy())
        self.launcher.launch(self._kernels.set_alive_rows, rows.shape[0], [self.agents, rows, 0], record=False)

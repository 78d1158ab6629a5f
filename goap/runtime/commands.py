"""Commands and lifecycle of a `goap.runtime.Brain`: replan, pin and release goals, types, action statuses, reset,
spawn, despawn, sensors, hooks.

Each command is one launch over the rows it names, between ticks. Rows are given as host indices (a sequence of
ints, checked against the capacity and uploaded: 4 bytes a row to the device), a bool mask of N, None for every
agent (a cached device list: nothing is uploaded), or an int32 Warp array on the brain's device, used as it is
(no host trip; rows out of range, e.g. -1 padding, are skipped by the kernels). What crosses back to the host is
named in each docstring; `Brain.host_bytes_per_tick` counts it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from goap.codes import CAUSES, EVENTS, ActionStatus, cause_code


class Commands:
    """A mixin of `goap.runtime.Brain` (its wiring is in `goap.runtime.brain`)."""

    def on_plan(self, callback: Callable[..., None]) -> None:
        """Call ``callback(states, goals, costs, enabled, agents, count)`` before each planning call: the brain's
        device arrays, and the rows about to be planned (``agents[:count[0]]``, both device arrays). For recorders
        and benchmarks (``goap bench --suite world:...``). It runs on the host between captured graphs."""
        if not callable(callback):
            raise TypeError("on_plan needs a callable")
        self._plan_hooks.append(callback)

    def on(self, event: str, callback: Callable[[Any, Any], None]) -> None:
        """Call ``callback(brain, agents)`` once after each tick in which some agent had ``event``, with the
        agents as a device int32 array of their indices (`Events.indices`), never once per agent. Costs nothing
        on a tick without the event (the count comes from the tick's counters); the list is built on the device."""
        if event not in EVENTS:
            raise ValueError(f"unknown event '{event}'; events are {', '.join(EVENTS)}")
        if not callable(callback):
            raise TypeError(f"on('{event}', ...) needs a callable")
        self._event_hooks.append((event, callback))

    def _call_event_hooks(self) -> None:
        for event, callback in self._event_hooks:
            if self.events.count(event):
                callback(self, self.events.indices(event))

    # --- rows --------------------------------------------------------------------------------------------------
    def _rows(self, agents: Any) -> Any:
        """Agent indices as an int32 Warp array on the device (see the module docstring for the forms)."""
        wp = self._wp
        if agents is None:
            if self._all_rows is None:
                self._all_rows = wp.array(np.arange(self.n_agents, dtype=np.int32), dtype=wp.int32,
                                          device=self.device)
            return self._all_rows
        if isinstance(agents, wp.array):
            if agents.dtype != wp.int32 or agents.ndim != 1:
                raise ValueError(f"agent indices must be a 1-D int32 Warp array, got {agents.dtype.__name__} with "
                                 f"{agents.ndim} dimensions")
            if agents.device == self.device:
                return agents
            agents = self._host(agents)
        if isinstance(agents, str | bytes):
            raise ValueError(f"agents must be indices (a sequence of ints), a bool mask or None, got {agents!r}")
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

    def compact(self, mask: Any, name: str = "compact") -> tuple[Any, Any]:
        """The agents whose entry of ``mask`` (a bool Warp array of N on the brain's device, e.g. computed by a
        game kernel: "within the wolf's radius") is set, as a device list: ``(ids, count)``, ``ids`` of N entries
        in index order and -1 after the list, ``count[0]`` their number. A scan and a scatter on the device, no
        host read; the list is one buffer per ``name``, rewritten by the next call. Every command takes ``ids``
        as it is (the -1 padding is skipped)."""
        wp, N = self._wp, self.n_agents
        if not isinstance(mask, wp.array) or mask.dtype != wp.bool or mask.ndim != 1 or mask.shape[0] != N \
                or mask.device != self.device:
            raise ValueError(f"compact needs a bool Warp array of {N} entries on {self.device}")
        ids, count = self._list_buffers(f"compact:{name}")
        if N:
            k = self._kernels
            self.launcher.launch(k.mask_flags, N, [mask, self._event_flag], record=False)
            wp.utils.array_scan(self._event_flag, self._event_pos, inclusive=False)
            self.launcher.launch(k.scatter_list, N, [self._event_flag, self._event_pos, ids, count], record=False)
        return ids, count

    def _launch(self, kernel: Any, rows: Any, args: list[Any]) -> None:
        if rows.shape[0]:
            self.launcher.launch(kernel, rows.shape[0], [self.agents, rows, *args], record=False)

    # --- the mind ----------------------------------------------------------------------------------------------
    def replan(self, agents: Any = None, cause: str = "commanded") -> None:
        """Plan ``agents`` again: the next tick drops their plans and asks for new ones, ``replan_cause`` recording
        ``cause`` (counted as ``replan_<cause>``, with event ``replan``). An interruptible action under way is
        interrupted (event ``action_interrupted``); a non-interruptible one runs to its end first. Device-only."""
        if cause == "none":
            raise ValueError(f"unknown replan cause '{cause}'; causes are {', '.join(CAUSES[1:])}")
        code = cause_code(cause)
        self._launch(self._kernels.replan_agents, self._rows(agents), [code])

    def set_goal(self, agents: Any, goal: str | int) -> None:
        """Pin ``goal`` for ``agents``: they pursue it (whatever its priority) until it is reached or cleared; a
        pinned goal that already holds is released at the next tick. Device-only."""
        if isinstance(agents, str) and not isinstance(goal, str):
            raise ValueError(f"set_goal(agents, goal) takes the agents first: got agents={agents!r}, goal={goal!r}")
        g = self._goal_index(goal)
        self._launch(self._kernels.pin_goals, self._rows(agents), [g])

    def clear_goal(self, agents: Any = None) -> None:
        """Release pinned goals; the agents choose by priority again from the next tick. Device-only."""
        self._launch(self._kernels.pin_goals, self._rows(agents), [-1])

    def _goal_index(self, goal: str | int) -> int:
        names = [g.name for g in self.domain.goals]
        if isinstance(goal, str):
            if goal not in names:
                raise ValueError(f"unknown goal '{goal}'; goals are {', '.join(names)}")
            return names.index(goal)
        if not isinstance(goal, int | np.integer) or isinstance(goal, bool | np.bool_) or not 0 <= goal < len(names):
            raise ValueError(f"goal {goal!r} is neither a goal name nor a goal index 0..{len(names) - 1}")
        return int(goal)

    def type_index(self, agent_type: str | int) -> int:
        """The index of agent type ``agent_type`` (a name of `goap.domain.Domain.types`, or an index)."""
        names = self.type_names
        if isinstance(agent_type, str):
            if agent_type not in names:
                raise ValueError(f"unknown agent type '{agent_type}'; types are {', '.join(names)}")
            return names.index(agent_type)
        if not isinstance(agent_type, int | np.integer) or isinstance(agent_type, bool | np.bool_) \
                or not 0 <= agent_type < len(names):
            raise ValueError(f"agent type {agent_type!r} is neither a type name nor an index 0..{len(names) - 1}")
        return int(agent_type)

    def _types_arg(self, types: Any, k: int) -> Any:
        """``types`` (one name or index for all, one per agent, or an int32 device array) as a device array of
        1 or k entries."""
        wp = self._wp
        if isinstance(types, wp.array):
            if types.dtype != wp.int32 or types.ndim != 1 or types.shape[0] not in (1, k):
                raise ValueError(f"types must be a 1-D int32 Warp array of 1 or {k} entries")
            return types if types.device == self.device else types.to(self.device)
        if isinstance(types, str | int | np.integer):
            host = np.array([self.type_index(types)], dtype=np.int32)
        else:
            host = np.array([self.type_index(t) for t in types], dtype=np.int32)
            if len(host) not in (1, k):
                raise ValueError(f"{len(host)} types given for {k} agents")
        return wp.array(host, dtype=wp.int32, device=self.device)

    def set_type(self, agents: Any, agent_type: Any) -> None:
        """Change the type of ``agents`` (one type for all, or one each): they take the type's goal priorities
        and plan again at the next tick (with the type's actions and costs). Their facts are kept. Device-only."""
        rows = self._rows(agents)
        types = self._types_arg(agent_type, rows.shape[0])
        self._launch(self._kernels.set_type_rows, rows, [types, self._rules])

    def set_action_status(self, agents: Any, status: Any) -> None:
        """Report how the actions of ``agents`` went (a brain without a world): ``"running"``, ``"done"``,
        ``"failed"`` (or an `ActionStatus`) for all, or an int8 device array of one status each. The next tick
        applies them. Works on every device (writing ``brain.action_status.numpy()`` works only on the CPU, where
        it is a view)."""
        wp, rows = self._wp, self._rows(agents)
        if isinstance(status, wp.array):
            if status.dtype != wp.int8 or status.ndim != 1 or status.shape[0] not in (1, rows.shape[0]):
                raise ValueError(f"action statuses must be a 1-D int8 Warp array of 1 or {rows.shape[0]} entries")
            codes = status
        else:
            codes = wp.array(np.array([_status_code(status)], dtype=np.int8), dtype=wp.int8, device=self.device)
        self._launch(self._kernels.set_action_status_rows, rows, [codes])

    def assign(self, field: str, values: Any) -> None:
        """Write a whole per-agent array (``"costs"``, ``"enabled"``, ``"priorities"``, ``"states"``, ...) from
        host data or another array of the same shape: one copy to the device, correct on every device."""
        from goap.state import FIELD_NAMES

        wp = self._wp
        if field not in FIELD_NAMES:
            raise ValueError(f"unknown agent array '{field}'; arrays are {', '.join(FIELD_NAMES)}")
        dst = getattr(self.arrays, field)
        src = values if isinstance(values, wp.array) else np.asarray(values)
        if tuple(src.shape) != tuple(dst.shape):
            raise ValueError(f"brain.{field} has shape {tuple(dst.shape)}; got {tuple(src.shape)}")
        if isinstance(src, np.ndarray):
            if field == "states" and src.dtype.kind not in "iu":
                raise ValueError(f"packed states must be an integer array, got {src.dtype}")
            src = wp.array(np.ascontiguousarray(src, dtype=wp.dtype_to_numpy(dst.dtype)), dtype=dst.dtype,
                           device=self.device)
        elif src.dtype != dst.dtype:
            raise ValueError(f"brain.{field} is {dst.dtype.__name__}; got {src.dtype.__name__}")
        wp.copy(dst, src)

    # --- lifecycle ---------------------------------------------------------------------------------------------
    def reset_agents(self, agents: Any = None, states: Any = None, *, agent_type: Any = None, costs: Any = None,
                     enabled: Any = None) -> None:
        """Make ``agents`` as new: no goal, pin, plan, action, cooldown or failure, the goal priorities of their
        type, and ``states``. The type is kept unless ``agent_type`` is given (a name or index for all, or one
        each). Costs and enabled rows are kept (a game's per-agent settings) unless ``costs`` (``"domain"``, one
        row for all, or one row each) or ``enabled`` (True for all actions, one row, or one row each) is given.

        ``states``: None (the type's default state), a dict of facts (over the type's defaults, for every agent),
        a list of dicts (one each), or packed uint64 rows [K, W] (or one row for all). Device-only but for what
        the caller gives (uploaded once)."""
        self._reset(self._rows(agents), states, agent_type, costs, enabled, keep_type=agent_type is None)

    def _reset(self, rows: Any, states: Any, agent_type: Any, costs: Any, enabled: Any, keep_type: bool) -> None:
        wp, k = self._wp, rows.shape[0]
        types = self._types_arg(0 if agent_type is None else agent_type, k)
        new_states, state_by = self._packed_states(states, k, None if keep_type else agent_type)
        cost_rows, set_costs = self._row_arg("costs", costs, k, wp.float32)
        enabled_rows, set_enabled = self._row_arg("enabled", enabled, k, wp.bool)
        self._launch(self._kernels.reset_rows, rows, [
            types, int(keep_type), new_states, state_by, self._rules, cost_rows, set_costs, enabled_rows, set_enabled,
        ])

    def _row_arg(self, name: str, value: Any, k: int, dtype: Any) -> tuple[Any, int]:
        """``costs=`` / ``enabled=`` of reset and spawn as [1 or k, A] device rows and whether to write them."""
        wp, A = self._wp, self.tables.n_actions
        if value is None:
            return self._dummy_rows[name], 0
        if isinstance(value, str) and name == "costs" and value == "domain":
            host = self.tables.cost.astype(np.float32)[None]
        elif value is True and name == "enabled":
            host = np.ones((1, A), dtype=bool)
        elif isinstance(value, wp.array):
            if value.dtype != dtype or value.ndim != 2 or value.shape[1] != A or value.shape[0] not in (1, k):
                raise ValueError(f"{name} must be a {dtype.__name__} Warp array [1 or {k}, {A}]")
            return value, 1
        else:
            host = np.asarray(value)
            if name == "enabled" and host.dtype != bool:
                raise ValueError(f"enabled rows must be bools, got {host.dtype}")
            if name == "costs":
                if host.dtype.kind not in "iuf":
                    raise ValueError(f"costs must be numbers, got {host.dtype}")
                host = host.astype(np.float32)
                if not (np.isfinite(host).all() and (host >= 0).all()):
                    raise ValueError("costs must be finite and >= 0")
            host = host.reshape(1, -1) if host.ndim == 1 else host
            if host.ndim != 2 or host.shape[1] != A or host.shape[0] not in (1, k):
                raise ValueError(f"{name} must be one row of {A} or {k} rows, got shape {host.shape}")
        return wp.array(np.ascontiguousarray(host), dtype=dtype, device=self.device), 1

    def _packed_states(self, states: Any, k: int, agent_type: Any = None) -> tuple[Any, int]:
        """``states`` for k agents as uint64 device rows, and how `reset_rows` picks a row (0: row t, 1: row 0,
        2: the agent's type's row). A dict applies over each type's default state."""
        wp, W = self._wp, self.tables.n_words
        if states is None:
            return self._type_states, 2
        if isinstance(states, Mapping):
            rows = np.stack([self.tables.pack(self._type_state(t, states)) for t in range(len(self.type_names))])
            return wp.array(rows, dtype=wp.uint64, device=self.device), 2
        if isinstance(states, wp.array):
            host = self._host(states)
        elif isinstance(states, np.ndarray) and states.dtype != object:
            if states.dtype.kind not in "iu":  # packed states are bits: a float row would be rounded into them
                raise ValueError(f"packed states must be an integer array (uint64 [{k}, {W}]), got {states.dtype}")
            host = np.asarray(states, dtype=np.uint64)
            host = host.reshape(-1, W) if host.ndim == 1 and host.size % W == 0 else host
        elif isinstance(states, Sequence) and not isinstance(states, str | bytes):
            n_facts = len(self.domain.facts)

            def is_state(s: Any) -> bool:  # a `goap.domain.State`: one value per fact
                return isinstance(s, tuple | list) and len(s) == n_facts and all(
                    isinstance(v, int | np.integer) and not isinstance(v, bool) for v in s)

            if not all(isinstance(s, Mapping) or is_state(s) for s in states):
                raise ValueError("states must be None, a dict of facts, a list of dicts or states (one per agent) "
                                 f"or packed uint64 rows [{k}, {W}]")
            if len(states) not in (1, k):
                raise ValueError(f"{len(states)} state dicts given for {k} agents")
            types = self._host_types(agent_type, len(states))
            host = np.stack([self.tables.pack(self._type_state(t, s) if isinstance(s, Mapping) else tuple(s))
                             for t, s in zip(types, states, strict=True)]) \
                if len(states) else np.zeros((0, W), np.uint64)
        else:
            raise ValueError(f"states must be None, a dict of facts, a list of dicts (one per agent) or packed uint64 "
                             f"rows [{k}, {W}], got {type(states).__name__}")
        if host.ndim != 2 or host.shape[1] != W or host.shape[0] not in (1, k):
            raise ValueError(f"states must be uint64 [{k}, {W}] (or one row for all), got shape {host.shape}")
        host = np.ascontiguousarray(host, dtype=np.uint64)
        bad = self.tables.invalid_states(host)
        if len(bad):
            raise ValueError(f"state {int(bad[0])} is invalid: {self.tables.state_problem(host[bad[0]])}")
        if not len(host):
            host = np.zeros((1, W), np.uint64)
        return wp.array(host, dtype=wp.uint64, device=self.device), 1 if host.shape[0] == 1 else 0

    def _host_types(self, agent_type: Any, k: int) -> list[int]:
        """Type indices for k state dicts (the dicts apply over each one's type): a host-side list, since the
        caller gave k dicts anyway."""
        if agent_type is None:
            return [0] * k
        if isinstance(agent_type, str | int | np.integer):
            return [self.type_index(agent_type)] * k
        if isinstance(agent_type, self._wp.array):
            agent_type = self._host(agent_type)
        types = [self.type_index(int(t) if isinstance(t, np.integer) else t) for t in agent_type]
        return types * k if len(types) == 1 else types

    def _type_state(self, t: int, facts: Mapping[str, Any]) -> tuple[int, ...]:
        """Type ``t``'s default state with ``facts`` (name -> value, as in a domain file) written over it."""
        out = list(self._type_default_states[t])
        for name, raw in facts.items():
            try:
                f = self.domain.fact_index(name)
            except (KeyError, ValueError):
                raise ValueError(f"unknown fact {name!r} in states; facts are "
                                 f"{', '.join(x.name for x in self.domain.facts)}") from None
            value = raw.item() if isinstance(raw, np.generic) else raw
            out[f] = self.domain.facts[f].parse_value(value, "state value")
        return tuple(out)

    def spawn(self, count: int | None = None, *, agents: Any = None, states: Any = None, agent_type: Any = None,
              costs: Any = None, enabled: Any = None) -> np.ndarray:
        """Bring dead rows to life (the first ``count`` free ones, or ``agents``) as new agents of ``agent_type``
        (type 0 when None), with ``states`` (as `reset_agents`). Costs and enabled rows are kept unless given.

        Returns the host indices spawned (a read of 4 bytes, plus 4 a spawned agent). Raises ValueError when
        fewer free rows are left than asked for, or when a listed agent is alive (a read of 4 bytes)."""
        wp, k = self._wp, self._kernels
        if agents is None:
            if count is not None and (not isinstance(count, int | np.integer) or isinstance(count, bool) or count < 0):
                raise ValueError(f"spawn count must be an integer >= 0, got {count!r}")
            free, n_free = self._free_rows()
            count = n_free if count is None else int(count)
            if count > n_free:
                raise ValueError(f"cannot spawn {count} agents: {n_free} free rows of {self.n_agents}")
            rows = free[:count]
        else:
            rows = self._rows(agents)
            out = wp.full(1, 2**31 - 1, dtype=wp.int32, device=self.device)
            self._launch(k.first_alive, rows, [out])
            bad = int(self._host(out)[0])
            if bad != 2**31 - 1:
                raise ValueError(f"agent {bad} is already alive")
        self._reset(rows, states, 0 if agent_type is None else agent_type, costs, enabled, keep_type=False)
        self._launch(k.set_alive_rows, rows, [1])
        return self._host(rows).astype(np.int64) if rows.shape[0] else np.zeros(0, np.int64)

    def _free_rows(self) -> tuple[Any, int]:
        """The dead rows in index order as a device list, and their number (a read of 4 bytes)."""
        wp, k, N = self._wp, self._kernels, self.n_agents
        if not N:
            return wp.zeros(0, dtype=wp.int32, device=self.device), 0
        ids, count = self._list_buffers("free")
        self.launcher.launch(k.free_flags, N, [self.agents, self._flag], record=False)
        wp.utils.array_scan(self._flag, self._pos, inclusive=False)
        self.launcher.launch(k.scatter_list, N, [self._flag, self._pos, ids, count], record=False)
        return ids, int(self._host(count)[0])

    def despawn(self, agents: Any) -> None:
        """Take agents out of the simulation: every stage skips them until they are spawned again. Their minds
        are cleared (as `reset_agents`, type, facts, costs and enabled kept). Device-only."""
        rows = self._rows(agents)
        self._launch(self._kernels.reset_rows, rows, [
            self._type_zero, 1, self._type_states, 3, self._rules, self._dummy_rows["costs"], 0,
            self._dummy_rows["enabled"], 0,
        ])
        self._launch(self._kernels.set_alive_rows, rows, [0])

    # --- sensors -----------------------------------------------------------------------------------------------
    def add_sensor(self, sense: Callable[[Any, Any], None], *, every: int = 1, facts: Sequence[str] = (),
                   name: str | None = None) -> None:
        """Run ``sense(brain, rows)`` in the sense stage of each tick (after the world's sense) for the agents due
        this tick: ``rows`` is a device int32 list of ceil(N / every) entries, -1 padded, holding agent i on the
        ticks where ``tick % every == i % every``. So a sensor of 100,000 agents with ``every=10`` senses 10,000
        a tick, staggered by index. ``sense`` launches a kernel over ``rows.shape[0]`` that skips ``rows[t] < 0``
        (it must launch device work only to be captured). ``facts`` are the facts it writes: `sensed_facts`
        includes them (``goap validate --world`` treats them as free)."""
        if not callable(sense):
            raise TypeError("add_sensor needs a callable sense(brain, rows)")
        if not isinstance(every, int | np.integer) or isinstance(every, bool) or every < 1:
            raise ValueError(f"a sensor's cadence 'every' must be an integer >= 1, got {every!r}")
        for f in facts:
            if f not in {x.name for x in self.domain.facts}:
                raise ValueError(f"sensor {name or getattr(sense, '__name__', '?')!r} writes unknown fact '{f}'")
        wp = self._wp
        m = -(-self.n_agents // int(every)) if self.n_agents else 0
        rows = wp.full(max(1, m), -1, dtype=wp.int32, device=self.device)
        self._sensors.append(_Sensor(name or getattr(sense, "__name__", "sensor"), sense, int(every), tuple(facts),
                                     rows[:m] if m else rows[:0]))
        self.drop_graphs()

    @property
    def sensed_facts(self) -> tuple[str, ...]:
        """The facts the world's sense and the registered sensors write, in domain order."""
        names = set(getattr(self.world, "sensed_facts", ()) or ())
        for s in self._sensors:
            names.update(s.facts)
        return tuple(f.name for f in self.domain.facts if f.name in names)

    def _run_sensors(self) -> None:
        k = self._kernels
        for s in self._sensors:
            if s.rows.shape[0]:
                self.launcher.launch(k.due_rows, s.rows.shape[0], [self._tick, s.every, self.n_agents, s.rows])
                s.sense(self, s.rows)


class _Sensor:
    __slots__ = ("name", "sense", "every", "facts", "rows")

    def __init__(self, name: str, sense: Callable[[Any, Any], None], every: int, facts: tuple[str, ...],
                 rows: Any):
        self.name, self.sense, self.every, self.facts, self.rows = name, sense, every, facts, rows


def _status_code(status: Any) -> int:
    if isinstance(status, str):
        try:
            return int(ActionStatus[status.upper()])
        except KeyError:
            raise ValueError(f"unknown action status '{status}'; statuses are "
                             f"{', '.join(s.name.lower() for s in ActionStatus)}") from None
    if isinstance(status, int | np.integer) and not isinstance(status, bool) and status in set(ActionStatus):
        return int(status)
    raise ValueError(f"action status {status!r} is not one of {', '.join(s.name.lower() for s in ActionStatus)}")

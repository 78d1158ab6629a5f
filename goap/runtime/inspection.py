"""Inspection of a `goap.runtime.Brain`: events, outcome logging, summaries, and the input checks.

Everything here runs on the host between ticks, or as a host step of the tick (the input checks and outcome
logging read a few values back; a captured tick is split around them).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from goap.codes import EVENT_COUNTERS, EVENTS, ActionStatus, Status, counter_slot, event_bit
from goap.encoding import fingerprint
from goap.outcomes import OutcomeLog
from goap.planners.base import MAX_COST


class BrainError(ValueError):
    """Input from the game or the world that the brain cannot use (a bad action status, an out-of-range fact)."""


class EventList(NamedTuple):
    """The agents that had one event last tick, on the device: ``ids[:n]`` in index order (``ids`` holds N
    entries, -1 after the list), ``count[0] == n``. ``ids`` and ``count`` are for kernels (no host read);
    ``n`` comes from the tick's counters."""

    ids: Any
    count: Any
    n: int


class Events:
    """The last tick's events (`goap.codes.EVENTS`), on the device, built at most once a tick and only on demand.

    ========================  ==========================================================================
    call                      what it costs
    ========================  ==========================================================================
    ``bits``                  nothing: the uint32 [N] array of every agent's event bits
    ``count(name)``           nothing: read from the tick's counters (already on the host)
    ``mask(name)``, ``.name`` a kernel over N on the first call a tick (bool [N] kept on the device)
    ``list(name)``            the same kernel, a scan and a scatter (the device list), on the first call
    ``indices(name)``         `list`, as a device int32 array of the n agents (a view, no read)
    ``agents(name)``          `indices` copied to the host: a read of 4 n bytes
    ========================  ==========================================================================

    The arrays are allocated once per event and rewritten each tick: copy them to keep them.
    """

    def __init__(self, brain: Any):
        self._brain = brain
        self._built: dict[str, int] = {}
        self._masks: dict[str, Any] = {}

    @property
    def bits(self) -> Any:
        """uint32 [N]: every event of each agent, bit k for ``EVENTS[k]``."""
        return self._brain.arrays.event_bits

    def count(self, name: str) -> int:
        """How many agents had event ``name`` last tick (from the tick's counters: no read)."""
        event_bit(name)
        return int(self._brain._last_counts[counter_slot(EVENT_COUNTERS[name])])

    def _build(self, name: str) -> tuple[Any, Any, Any]:
        b = self._brain
        wp = b._wp
        ids, count = b._list_buffers(f"event:{name}")
        mask = self._masks.get(name)
        if mask is None:
            mask = self._masks[name] = wp.zeros(max(1, b.n_agents), dtype=wp.bool, device=b.device)
        if self._built.get(name) != b.tick_count and b.n_agents:
            flag, pos = b._event_flag, b._event_pos
            b.launcher.launch(b._kernels.event_flags, b.n_agents, [b.agents, wp.uint32(event_bit(name)), mask, flag],
                              record=False)
            wp.utils.array_scan(flag, pos, inclusive=False)
            b.launcher.launch(b._kernels.scatter_list, b.n_agents, [flag, pos, ids, count], record=False)
            self._built[name] = b.tick_count
        return mask, ids, count

    def mask(self, name: str) -> Any:
        """bool [N] on the device: the agents that had event ``name`` last tick."""
        event_bit(name)
        mask = self._build(name)[0]
        return mask[: self._brain.n_agents]

    def list(self, name: str) -> EventList:
        """The agents that had event ``name`` last tick as a device list (see `EventList`)."""
        event_bit(name)
        _, ids, count = self._build(name)
        return EventList(ids, count, self.count(name))

    def indices(self, name: str) -> Any:
        """int32 device array of the agents that had event ``name`` last tick, in index order (no read)."""
        lst = self.list(name)
        return lst.ids[: lst.n]

    def agents(self, name: str) -> np.ndarray:
        """Host indices of the agents that had event ``name`` last tick (a read of 4 bytes an agent)."""
        idx = self.indices(name)
        return self._brain._host(idx).astype(np.int64) if idx.shape[0] else np.zeros(0, np.int64)

    def __getattr__(self, name: str) -> Any:
        if name in EVENTS:
            return self.mask(name)
        raise AttributeError(f"no event '{name}'; events are {', '.join(EVENTS)}")


class Inspection:
    """A mixin of `goap.runtime.Brain` (its wiring is in `goap.runtime.brain`)."""

    @property
    def action_counts(self) -> dict[str, int]:
        """Times each action was completed (DONE), by action name."""
        counts = self._action_counts.numpy().sum(axis=0)
        return {a.name: int(counts[i]) for i, a in enumerate(self.domain.actions)}

    def current_goal_satisfied(self) -> np.ndarray:
        """Host bool [N]: whether each agent's current goal holds now (False without a goal)."""
        wp = self._wp
        out = wp.zeros(max(1, self.n_agents), dtype=wp.bool, device=self.device)
        self.launcher.launch(self._kernels.goal_holds, self.n_agents, [self.agents, self._tables_d.goals, out],
                             record=False)
        return out.numpy()[: self.n_agents]

    def agent_plan(self, i: int) -> list[str]:
        plan, length = self.arrays.plan.numpy()[i], int(self.arrays.plan_length.numpy()[i])
        return [self.domain.actions[a].name for a in plan[:length]]

    def summary(self, warmup: int = 0) -> dict[str, Any]:
        """Per-stage ms (mean, p95) after ``warmup`` ticks, ms per tick, idle fraction, counters, actions done.

        ``search`` is the part of the plan stage spent inside the planner; the rest of the tick is the engine's
        own bookkeeping and the world. ``graph`` says whether the tick was captured, and how many graphs were.
        """
        from goap.runtime.pipeline import STAGES

        return {
            "ticks": self.tick_count,
            "ms_per_tick": self.stage_stats["total"].summary(warmup),
            "stages": {s: self.stage_stats[s].summary(warmup) for s in STAGES},
            "search": self.stage_stats["search"].summary(warmup),
            "idle_fraction": self.idle_series.summary(warmup)["mean"],
            "planner": self.planner.stats() if callable(getattr(self.planner, "stats", None)) else {},
            "counters": dict(self.counters),
            "action_counts": self.action_counts,
            "graph": {"capture": self.config.capture, "captures": self.graph_captures},
            "host_bytes_per_tick": self.host_bytes_per_tick,
            "world_score": self._world_score(),
        }

    def _world_score(self) -> dict[str, float]:
        score = getattr(self.world, "score", None)
        return dict(score()) if callable(score) else {}

    # --- outcome logging (opt-in; host work over the planned agents) ------------------------------------------
    def record_outcomes(self, log: OutcomeLog | None = None) -> OutcomeLog:
        """Log every planning call from now on (see `goap.outcomes`); returns the log, also ``self.outcomes``."""
        self.outcomes = log if log is not None else OutcomeLog.for_domain(self.domain, self.tables.n_words)
        if self.outcomes.fingerprint != fingerprint(self.domain):
            raise ValueError(f"outcome log is of domain '{self.outcomes.domain_name}', not '{self.domain.name}'")
        self._open_row[:] = -1
        return self.outcomes

    def _open_outcomes(self) -> None:
        planned = self._q_ids.numpy()[: int(self._q_count.numpy()[1])] if self.n_agents else np.zeros(0, np.int32)
        if not len(planned):
            return
        log, a = self.outcomes, self.arrays
        contribution = self._contribution()
        stale = planned[self._open_row[planned] >= 0]  # replanned before reaching its goal: that plan failed
        self._close_rows(stale, contribution, achieved=0)
        status = a.plan_status.numpy()[planned]
        goal = a.goal.numpy()[planned]
        achieved = np.where(status == Status.SATISFIED, 1, np.where(status == Status.OK, -1, 0))
        rows = log.add({
            "states": a.states.numpy()[planned], "tick": np.full(len(planned), self.tick_count),
            "goal": goal, "status": status, "cost": a.plan_cost.numpy()[planned],
            "length": a.plan_length.numpy()[planned], "expanded": a.expanded.numpy()[planned], "achieved": achieved,
            "ticks_to_goal": np.where(status == Status.SATISFIED, 0, -1),
            "reward": a.priorities.numpy()[planned, np.maximum(goal, 0)],
        })
        self._open_row[planned] = np.where(status == Status.OK, rows, -1)
        self._open_tick[planned] = self.tick_count
        if contribution is not None:
            self._open_contribution[planned] = contribution[planned]
            satisfied = rows[status == Status.SATISFIED]
            log.update(satisfied, gain=0.0, ticks_open=0)

    def _contribution(self) -> np.ndarray | None:
        """Each agent's contribution to the world objective now (host float64 [N]), or None without the hook."""
        hook = getattr(self.world, "contribution", None)
        if not callable(hook):
            return None
        c = hook(self)
        return (self._host(c) if isinstance(c, self._wp.array) else np.asarray(c)).astype(np.float64)

    def _close_rows(self, agents: np.ndarray, contribution: np.ndarray | None, **values: Any) -> None:
        """Close the open outcome rows of ``agents``: ``values`` (achieved, ticks_to_goal), the ticks the goal was
        open and, with a contribution hook, the gain in contribution since the plan started."""
        rows = self._open_row[agents]
        extra: dict[str, Any] = {"ticks_open": self.tick_count - self._open_tick[agents]}
        if contribution is not None:
            extra["gain"] = contribution[agents] - self._open_contribution[agents]
        self.outcomes.update(rows, **values, **extra)

    def _close_outcomes(self) -> None:
        bits = self._host(self.arrays.event_bits)
        achieved = (bits & np.uint32(event_bit("goal_achieved"))) != 0
        changed = (bits & np.uint32(event_bit("goal_changed"))) != 0
        open_ = self._open_row >= 0
        contribution = self._contribution()
        done = np.flatnonzero(open_ & achieved)
        self._close_rows(done, contribution, achieved=1, ticks_to_goal=self.tick_count - self._open_tick[done])
        dropped = np.flatnonzero(open_ & changed & ~achieved)
        self._close_rows(dropped, contribution, achieved=0)
        self._open_row[done] = -1
        self._open_row[dropped] = -1

    # --- input checks (a debug pass the game may turn off) ------------------------------------------------------
    def _first_bad_agent(self, kernel: Any, inputs: list[Any]) -> int:
        self._first_bad.fill_(2**31 - 1)
        self.launcher.launch_rows(kernel, self.n_agents, [self.agents, *inputs, self._first_bad])
        bad = int(self._host(self._first_bad).min())
        return -1 if bad == 2**31 - 1 else bad

    def _check_actions(self) -> None:
        bad = self._first_bad_agent(self._kernels.check_actions, [self.tables.n_actions])
        if bad >= 0:
            a = self.arrays
            act, st = int(a.action.numpy()[bad]), int(a.action_status.numpy()[bad])
            names = ", ".join(f"{s.name}={int(s)}" for s in ActionStatus)
            raise BrainError(f"agent {bad}: action {act} with action_status {st} (actions are -1.."
                             f"{self.tables.n_actions - 1}; statuses {names})")

    def _check_costs(self) -> None:
        """Costs as every planner takes them (`goap.planners.base.MAX_COST`): the Warp planner would otherwise plan
        with a NaN, negative or huge cost that the reference planner's host check refuses."""
        bad = self._first_bad_agent(self._kernels.check_costs, [self._wp.float32(MAX_COST)])
        if bad >= 0:
            row = self.arrays.costs.numpy()[bad]
            a = int(np.flatnonzero(~(np.isfinite(row) & (row >= 0) & (row <= np.float32(MAX_COST))))[0])
            raise BrainError(f"agent {bad}: action '{self.domain.actions[a].name}' has cost {float(row[a])!r}; costs "
                             f"must be finite and in 0..{MAX_COST:g}")

    def _check_types(self) -> None:
        n = len(self.type_names)
        bad = self._first_bad_agent(self._kernels.check_types, [n])
        if bad >= 0:
            t = int(self.arrays.agent_type.numpy()[bad])
            raise BrainError(f"agent {bad}: agent_type {t} is out of range 0..{n - 1} (types are "
                             f"{', '.join(self.type_names)})")

    def _check_states(self, when: str) -> None:
        bad = self._first_bad_agent(self._kernels.check_states, list(self._layout_d))
        if bad >= 0:
            raise BrainError(f"agent {bad}: packed state {when} is invalid: {self._state_problem(bad)}")

    def _layout_arrays(self) -> tuple[Any, ...]:
        """What `check_states` needs: the facts whose field can hold a value above their range (a field of w bits
        holding a range that is not a power of two; bools and full-width ints cannot be out of range), and the
        bits of each word that some fact uses."""
        wp, L = self._wp, self.tables.layout
        mask = L.mask
        hi = np.array([f.max - f.min for f in self.domain.facts], dtype=np.uint64)
        used = np.zeros(self.tables.n_words, dtype=np.uint64)
        for f in range(len(self.domain.facts)):
            used[L.word[f]] |= np.uint64(int(mask[f]) << int(L.shift[f]))
        can_overflow = np.flatnonzero(hi < mask) if len(hi) else np.zeros(0, np.int64)

        def arr(x: np.ndarray, dtype: Any) -> Any:
            x = np.ascontiguousarray(x)
            return wp.array(x if len(x) else np.zeros(1, x.dtype), dtype=dtype, device=self.device)

        word = L.word.astype(np.int32)[can_overflow]
        return (arr(word, wp.int32) if len(word) else wp.zeros(0, dtype=wp.int32, device=self.device),
                arr(L.shift.astype(np.int32)[can_overflow], wp.int32), arr(mask[can_overflow], wp.uint64),
                arr(hi[can_overflow], wp.uint64), arr(used, wp.uint64))

    def _state_problem(self, i: int) -> str:
        return self.tables.state_problem(self.arrays.states.numpy()[i])

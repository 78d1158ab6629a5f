"""Brain: every agent's state, goal and plan in arrays, advanced one tick at a time.

One tick (`Brain.tick`) runs six stages in a fixed order:

1. **sense**: the world writes facts into ``states`` (and may write ``costs``, ``enabled``, ``priorities``).
2. **select**: each agent takes its highest-priority goal that is not satisfied and not cooling down (priority
   > 0; ties go to the lower goal index). Reaching the current goal counts as an achievement.
3. **validate**: an agent needs a plan when its goal changed, its plan finished without reaching the goal,
   its last action failed, or its next action's preconditions no longer hold (or the action was disabled).
4. **plan**: at most ``plan_budget`` agents are planned per tick, those waiting longest first, then by goal
   priority, then by index. A failed search puts that goal on cooldown for ``cooldown_ticks`` ticks.
5. **act**: the world advances each agent's current action and reports RUNNING, DONE or FAILED; a DONE
   action's symbolic effects are applied to ``states`` and the agent moves to its next step.
6. **metrics**: per-stage times and counters.

All per-agent work is numpy over the arrays (or the planner's kernels); nothing loops over agents in Python.
The arrays live on the host; the Warp planner copies what it needs to its device.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from goap.domain import Domain
from goap.encoding import DomainTables, encode, fingerprint
from goap.outcomes import OutcomeLog
from goap.planners import PlanBatch, Status, make_planner
from goap.vector import actions_applicable, apply_actions, goal_satisfied, goals_satisfied
from goap.world import DONE, FAILED, RUNNING, World

STAGES = ("sense", "select", "validate", "plan", "act", "metrics")

#: Why an agent needed a new plan (``Brain.replan_cause``).
CAUSES = ("none", "new_goal", "goal_changed", "plan_finished", "action_failed", "invalid")
NEW_GOAL, GOAL_CHANGED, PLAN_FINISHED, ACTION_FAILED, INVALID = 1, 2, 3, 4, 5

_ARRAYS = (
    "states", "priorities", "costs", "enabled", "goal", "plan", "plan_length", "step", "plan_cost", "action",
    "action_status", "action_ticks", "cooldown_until", "waiting", "needs_plan", "replan_cause", "last_failure",
)


@dataclass
class TickStats:
    """What one tick did: stage times in milliseconds and event counts."""

    tick: int
    ms: dict[str, float]
    events: dict[str, int] = field(default_factory=dict)


class Brain:
    """The agents' minds: arrays of N rows, one per agent, and the tick pipeline over them.

    Args:
        domain: the planning domain (or its tables).
        n_agents: N.
        world: the `goap.world.World` that senses and acts; None for a brain driven by hand.
        planner: a registered planner name ("warp", "reference").
        device: the Warp planner's device.
        plan_budget: most agents planned per tick (None: all that need a plan).
        cooldown_ticks: ticks a goal is skipped after its search failed.
        max_nodes, max_plan_length: planner budgets.
        apply_effects: apply a finished action's symbolic effects to ``states``.
        seed: passed to ``world.reset``; the same seed and inputs give the same run on the same device.
        goal_hysteresis: priority bonus of the goal an agent already pursues, when goals are compared (0: none).
        goal_scorer: called with the brain each tick; returns float32 [N, G] scores that replace ``priorities``
            when goals are compared (a learned utility, say). Eligibility is unchanged: a goal that holds, cools
            down or has priority <= 0 is never picked.
    """

    def __init__(
        self,
        domain: Domain | DomainTables,
        n_agents: int,
        world: World | None = None,
        *,
        planner: str = "warp",
        device: str | None = None,
        plan_budget: int | None = None,
        cooldown_ticks: int = 30,
        max_nodes: int | None = None,
        max_plan_length: int | None = None,
        apply_effects: bool = True,
        seed: int = 0,
        goal_hysteresis: float = 0.0,
        goal_scorer: Callable[[Brain], np.ndarray] | None = None,
    ):
        if not isinstance(n_agents, int | np.integer) or n_agents < 0:
            raise ValueError(f"n_agents must be an integer >= 0, got {n_agents!r}")
        if plan_budget is not None and plan_budget < 1:
            raise ValueError(f"plan_budget must be >= 1, got {plan_budget}")
        if cooldown_ticks < 0:
            raise ValueError(f"cooldown_ticks must be >= 0, got {cooldown_ticks}")
        self.tables = domain if isinstance(domain, DomainTables) else encode(domain)
        self.domain = self.tables.domain
        self.world = world
        self.n_agents = N = int(n_agents)
        options: dict[str, Any] = {}
        if max_nodes is not None:
            options["max_nodes"] = max_nodes
        if max_plan_length is not None:
            options["max_plan_length"] = max_plan_length
        if planner != "reference":
            options["device"] = device
        self.planner = make_planner(planner, self.tables, **options)
        self.plan_budget = plan_budget
        self.cooldown_ticks = int(cooldown_ticks)
        self.apply_effects = apply_effects
        if not np.isfinite(goal_hysteresis) or goal_hysteresis < 0:
            raise ValueError(f"goal_hysteresis must be a finite number >= 0, got {goal_hysteresis}")
        self.goal_hysteresis = float(goal_hysteresis)
        self.goal_scorer = goal_scorer
        self.outcomes: OutcomeLog | None = None
        A, G, L = self.tables.n_actions, self.tables.goals.n_goals, self.planner.max_plan_length

        default_state = self.tables.pack(self.domain.default_state())
        self.states = np.repeat(default_state[None], N, axis=0)
        self.priorities = np.repeat(self.tables.goals.priority[None], N, axis=0).astype(np.float32)
        self.costs = np.repeat(self.tables.cost[None], N, axis=0).astype(np.float32)
        self.enabled = np.ones((N, A), dtype=bool)
        self.goal = np.full(N, -1, dtype=np.int32)
        self.plan = np.full((N, L), -1, dtype=np.int32)
        self.plan_length = np.zeros(N, dtype=np.int32)
        self.step = np.zeros(N, dtype=np.int32)
        self.plan_cost = np.zeros(N, dtype=np.float32)
        self.action = np.full(N, -1, dtype=np.int32)
        self.action_status = np.full(N, RUNNING, dtype=np.int8)
        self.action_ticks = np.zeros(N, dtype=np.int32)
        self.cooldown_until = np.zeros((N, G), dtype=np.int64)
        self.waiting = np.zeros(N, dtype=np.int32)
        self.needs_plan = np.zeros(N, dtype=bool)
        self.replan_cause = np.zeros(N, dtype=np.int8)
        self.last_failure = np.full(N, -1, dtype=np.int8)  # the Status of the agent's last failed search
        self._batch = PlanBatch.empty(N, L)
        self._open_row = np.full(N, -1, dtype=np.int64)  # the outcome row an agent's current plan belongs to
        self._open_tick = np.zeros(N, dtype=np.int64)
        self.tick_count = 0
        self.counters: Counter[str] = Counter()
        self.stage_ms: dict[str, list[float]] = {s: [] for s in STAGES}
        self.seed = int(seed)
        if world is not None:
            world.reset(self, self.seed)

    # --- the tick -----------------------------------------------------------------------------------------
    def tick(self, dt: float = 1.0) -> TickStats:
        ms: dict[str, float] = {}
        events: Counter[str] = Counter()
        t = time.perf_counter()

        def lap(stage: str) -> None:
            nonlocal t
            now = time.perf_counter()
            ms[stage] = (now - t) * 1000.0
            t = now

        if self.world is not None:
            self.world.sense(self)
        lap("sense")
        self._select(events)
        lap("select")
        self._validate(events)
        lap("validate")
        self._plan(events)
        lap("plan")
        self._act(dt, events)
        lap("act")
        self.counters.update(events)
        self.tick_count += 1
        lap("metrics")
        for stage, value in ms.items():
            self.stage_ms[stage].append(value)
        return TickStats(tick=self.tick_count, ms=ms, events=dict(events))

    def _select(self, events: Counter[str]) -> None:
        sat = goals_satisfied(self.tables.goals, self.states)
        has_goal = self.goal >= 0
        achieved = has_goal & sat[np.arange(self.n_agents), np.maximum(self.goal, 0)]
        events["goals_achieved"] += int(achieved.sum())
        eligible = ~sat & (self.cooldown_until <= self.tick_count) & (self.priorities > 0)
        base = self.priorities if self.goal_scorer is None else np.asarray(self.goal_scorer(self), dtype=np.float32)
        if base.shape != self.priorities.shape:
            raise ValueError(f"goal_scorer returned shape {base.shape}, expected {self.priorities.shape}")
        score = np.where(eligible, base, -np.inf)
        if self.goal_hysteresis:
            # The goal being pursued keeps a bonus, so that small swings in priority do not throw plans away.
            rows = np.flatnonzero(has_goal)
            score[rows, self.goal[rows]] += self.goal_hysteresis
        best = np.argmax(score, axis=1).astype(np.int32) if score.shape[1] else np.zeros(self.n_agents, np.int32)
        best = np.where(eligible.any(axis=1), best, -1).astype(np.int32)
        changed = best != self.goal
        if self.outcomes is not None:
            self._close_outcomes(achieved, changed)
        if changed.any():
            self.goal[changed] = best[changed]
            self._clear_plans(changed)
            self.needs_plan[changed & (best < 0)] = False
            self._request(changed & (best >= 0), np.where(achieved | ~has_goal, NEW_GOAL, GOAL_CHANGED), events)

    def _validate(self, events: Counter[str]) -> None:
        active = (self.goal >= 0) & ~self.needs_plan
        failed = active & (self.action_status == FAILED)
        finished = active & ~failed & (self.step >= self.plan_length)
        rest = active & ~failed & ~finished
        nxt = np.where(rest, self.plan[np.arange(self.n_agents), np.minimum(self.step, self.plan.shape[1] - 1)], -1)
        usable = actions_applicable(self.tables, self.states, nxt)
        usable &= self.enabled[np.arange(self.n_agents), np.maximum(nxt, 0)]
        invalid = rest & ~usable
        self._request(failed, ACTION_FAILED, events)
        self._request(finished, PLAN_FINISHED, events)
        self._request(invalid, INVALID, events)
        self.action_status[failed] = RUNNING

    def _request(self, mask: np.ndarray, cause: int | np.ndarray, events: Counter[str]) -> None:
        if not mask.any():
            return
        causes = np.broadcast_to(np.asarray(cause, dtype=np.int8), mask.shape)[mask]
        self.needs_plan[mask] = True
        self.replan_cause[mask] = causes
        self.action[mask] = -1
        for c, n in zip(*np.unique(causes, return_counts=True), strict=True):
            events[f"replan_{CAUSES[c]}"] += int(n)

    def _plan(self, events: Counter[str]) -> None:
        want = np.flatnonzero(self.needs_plan & (self.goal >= 0))
        self.waiting[want] += 1
        if not len(want):
            return
        if self.plan_budget is not None and len(want) > self.plan_budget:
            prio = self.priorities[want, self.goal[want]]
            order = np.lexsort((want, -prio, -self.waiting[want]))
            want = want[order[: self.plan_budget]]
        want = np.sort(want)
        batch = self.planner.plan(self.states, self.goal, self.costs, self.enabled, agents=want, out=self._batch)
        if self.outcomes is not None:
            self._open_outcomes(want, batch)  # before failed goals are dropped: the rows name the goal planned
        status = batch.status[want]
        ok = want[status == Status.OK]
        done = want[status == Status.SATISFIED]
        bad = want[(status != Status.OK) & (status != Status.SATISFIED)]
        self.plan[ok] = batch.actions[ok]
        self.plan_length[ok] = batch.length[ok]
        self.plan_cost[ok] = batch.cost[ok]
        self.step[ok] = 0
        self.needs_plan[want] = False
        self.waiting[want] = 0
        self.last_failure[bad] = status[(status != Status.OK) & (status != Status.SATISFIED)]
        self.cooldown_until[bad, self.goal[bad]] = self.tick_count + self.cooldown_ticks
        self.goal[bad] = -1
        self._clear_plans(np.isin(np.arange(self.n_agents), np.concatenate([bad, done])))
        events["plans_made"] += len(ok)
        events["plans_failed"] += len(bad)
        codes, counts = np.unique(status[(status != Status.OK) & (status != Status.SATISFIED)], return_counts=True)
        for code, n in zip(codes, counts, strict=True):  # one line per status, not per agent
            events[f"plans_failed_{Status(int(code)).label}"] += int(n)
        events["nodes_expanded"] += int(batch.expanded[want].sum())
        events["plans_requested"] += len(want)

    def _act(self, dt: float, events: Counter[str]) -> None:
        rows = np.arange(self.n_agents)
        active = (self.goal >= 0) & ~self.needs_plan & (self.step < self.plan_length)
        current = np.where(active, self.plan[rows, np.minimum(self.step, self.plan.shape[1] - 1)], -1)
        # The same action continues only if it was still running; a repeat (chop, chop) starts from zero.
        same = (current == self.action) & (current >= 0) & (self.action_status == RUNNING)
        self.action_ticks = np.where(same, self.action_ticks + 1, 0).astype(np.int32)
        self.action[:] = current
        self.action_status[:] = RUNNING
        if self.world is not None:
            self.world.act(self, dt)
        else:
            self.action_status[current >= 0] = DONE
        done = (self.action >= 0) & (self.action_status == DONE)
        failed = (self.action >= 0) & (self.action_status == FAILED)
        if self.apply_effects:
            apply_actions(self.tables, self.states, np.where(done, self.action, -1))
        self.step[done] += 1
        events["actions_done"] += int(done.sum())
        events["actions_failed"] += int(failed.sum())

    # --- outcome logging ------------------------------------------------------------------------------------
    def record_outcomes(self, log: OutcomeLog | None = None) -> OutcomeLog:
        """Log every planning call from now on (see `goap.outcomes`); returns the log, also ``self.outcomes``."""
        self.outcomes = log if log is not None else OutcomeLog.for_domain(self.domain, self.tables.n_words)
        if self.outcomes.fingerprint != fingerprint(self.domain):
            raise ValueError(f"outcome log is of domain '{self.outcomes.domain_name}', not '{self.domain.name}'")
        self._open_row[:] = -1
        return self.outcomes

    def _open_outcomes(self, planned: np.ndarray, batch: PlanBatch) -> None:
        log = self.outcomes
        stale = planned[self._open_row[planned] >= 0]  # replanned before reaching its goal: that plan failed
        log.update(self._open_row[stale], achieved=0)
        status = batch.status[planned]
        achieved = np.where(status == Status.SATISFIED, 1, np.where(status == Status.OK, -1, 0))
        rows = log.add({
            "states": self.states[planned], "tick": np.full(len(planned), self.tick_count),
            "goal": self.goal[planned], "status": status, "cost": batch.cost[planned],
            "length": batch.length[planned], "expanded": batch.expanded[planned], "achieved": achieved,
            "ticks_to_goal": np.where(status == Status.SATISFIED, 0, -1),
            "reward": self.priorities[planned, self.goal[planned]],
        })
        self._open_row[planned] = np.where(status == Status.OK, rows, -1)
        self._open_tick[planned] = self.tick_count

    def _close_outcomes(self, achieved: np.ndarray, changed: np.ndarray) -> None:
        open_ = self._open_row >= 0
        done = np.flatnonzero(open_ & achieved)
        self.outcomes.update(self._open_row[done], achieved=1, ticks_to_goal=self.tick_count - self._open_tick[done])
        dropped = np.flatnonzero(open_ & changed & ~achieved)
        self.outcomes.update(self._open_row[dropped], achieved=0)
        self._open_row[done] = -1
        self._open_row[dropped] = -1

    def _clear_plans(self, mask: np.ndarray) -> None:
        if mask.any():
            self.plan[mask] = -1
            self.plan_length[mask] = 0
            self.step[mask] = 0
            self.action[mask] = -1

    # --- inspection -----------------------------------------------------------------------------------------
    def current_goal_satisfied(self) -> np.ndarray:
        return goal_satisfied(self.tables.goals, self.states, self.goal)

    def agent_plan(self, i: int) -> list[str]:
        return [self.domain.actions[a].name for a in self.plan[i, : self.plan_length[i]]]

    def summary(self, warmup: int = 0) -> dict[str, Any]:
        """Per-stage ms (mean, p95) after ``warmup`` ticks, ms per tick, and counters."""
        stages = {}
        per_tick = np.zeros(max(0, self.tick_count - warmup))
        for s in STAGES:
            v = np.asarray(self.stage_ms[s][warmup:])
            stages[s] = _mean_p95(v)
            if len(v):
                per_tick += v
        return {
            "ticks": self.tick_count,
            "ms_per_tick": _mean_p95(per_tick),
            "stages": stages,
            "counters": dict(self.counters),
        }

    # --- snapshots ------------------------------------------------------------------------------------------
    def get_state(self) -> dict[str, np.ndarray]:
        out = {f"brain/{name}": getattr(self, name) for name in _ARRAYS}
        out["brain/tick_count"] = np.array(self.tick_count)
        out["brain/counters"] = np.array(json.dumps(dict(self.counters), sort_keys=True))
        if self.world is not None:
            out.update({f"world/{k}": np.asarray(v) for k, v in self.world.get_state().items()})
        return out

    def state_hash(self) -> str:
        """A hash of every agent and world array: equal hashes mean bit-identical simulations."""
        h = hashlib.sha256()
        for key, value in sorted(self.get_state().items()):
            if key == "brain/counters":
                continue
            h.update(key.encode())
            arr = np.ascontiguousarray(value)
            h.update(str(arr.dtype).encode() + str(arr.shape).encode())
            h.update(arr.tobytes() if arr.dtype != object else repr(arr.tolist()).encode())
        return h.hexdigest()[:16]

    def snapshot(self, path: str | Path) -> None:
        """Save the brain and its world to a ``.npz`` file (written whole or not at all)."""
        from goap.encoding import fingerprint

        path = Path(path)
        buf = io.BytesIO()
        np.savez_compressed(buf, **{"meta/fingerprint": np.array(fingerprint(self.domain))}, **self.get_state())
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(buf.getvalue())
        tmp.replace(path)

    def restore(self, path: str | Path) -> None:
        """Load a snapshot saved by `snapshot` from a brain of the same domain and size."""
        from goap.encoding import fingerprint

        with np.load(path, allow_pickle=False) as data:
            if str(data["meta/fingerprint"]) != fingerprint(self.domain):
                raise ValueError(f"{path}: snapshot is of another domain")
            for name in _ARRAYS:
                arr = data[f"brain/{name}"]
                if arr.shape != getattr(self, name).shape:
                    mine = getattr(self, name).shape
                    raise ValueError(f"{path}: '{name}' has shape {arr.shape}, this brain has {mine}")
                getattr(self, name)[...] = arr
            self.tick_count = int(data["brain/tick_count"])
            self.counters = Counter(json.loads(str(data["brain/counters"])))
            if self.world is not None:
                self.world.set_state({k[len("world/"):]: data[k] for k in data.files if k.startswith("world/")})


def _mean_p95(values: np.ndarray) -> dict[str, float]:
    if not len(values):
        return {"mean": 0.0, "p95": 0.0}
    return {"mean": float(np.mean(values)), "p95": float(np.percentile(values, 95))}

"""`BrainConfig`: every setting of a `goap.runtime.Brain` in one dataclass, checked in one place.

Settings marked *live* may be changed on a running brain (``brain.plan_budget = 500``, or
``brain.config.plan_budget`` through the brain's property): the next tick uses them, and a brain that captures
its tick re-captures the graphs that baked the old value in. The others are fixed when the brain is made (they
size its arrays or its planner); setting them later raises AttributeError.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Settings a running brain may change (see the module docstring).
LIVE = ("plan_budget", "cooldown_ticks", "goal_hysteresis", "goal_scorer", "apply_effects", "check_inputs",
        "search_nodes_per_tick", "stage_timing")


@dataclass
class BrainConfig:
    """The settings of a brain.

    Attributes:
        planner: a registered planner name ("warp", "reference", ...).
        device: the Warp device of the arrays and the planner ("cpu", "cuda:0"); Warp's default when None.
        plan_budget: (live) most agents planned per tick (None: all that need a plan).
        cooldown_ticks: (live) ticks a goal is skipped after its search failed.
        max_nodes: the planner's first node pool (None: the planner's default).
        max_plan_length: the plan buffer (None: the planner's default); longer plans arrive in segments.
        apply_effects: (live) apply a finished action's symbolic effects to ``states``.
        seed: passed to ``world.reset``; the same seed and inputs give the same run on the same device.
        goal_hysteresis: (live) score bonus of the goal an agent already pursues (0: none).
        goal_scorer: (live) called with the brain each tick after ``sense``; returns float32 [N, G] scores (numpy, a
            Warp array on the brain's device, or a torch tensor) that replace ``priorities`` when goals are compared.
            Eligibility is unchanged: a goal that holds, cools down or has priority <= 0 is never picked. It runs on
            the host between captured graphs; its scores are copied into a device buffer the graph reads. A *row
            scorer* (an object with ``score_rows(brain, rows)``) is asked only about the agents due this tick: a
            device int32 list of those that choose a goal afresh (none, or theirs holds) and, staggered, every
            ``scorer.every`` ticks each other agent (`goap.kernels.tick.select_due`); it returns [len(rows), G]
            scores, written into those agents' rows of the buffer (the others keep their last scores). One with
            ``score_factors(brain, rows)`` returns a (factor, term) pair instead, and goals are compared on
            ``priority * factor + term`` with each tick's priorities, so an agent not due this tick still sees its
            priorities change. A *device scorer* (``launch_scores(brain, rows=None, count=None, dim=N, every=,
            mult=, add=, goals=, rules=)``) launches device work that finds the agents due
            (`goap.kernels.tick.scoring_due`) and writes their factors and terms itself: no host step and no list,
            so it is captured with the tick (`goap.learn.UtilitySelector`'s default, `goap.learn.fused`).
        n_alive: agents alive at the start (the first rows); the rest are free rows for ``spawn``. None: all.
        check_inputs: (live) check what the game and the world write (action statuses and indices, packed states,
            costs: finite and in 0..1e12 for every planner) every tick and raise `goap.runtime.BrainError` naming
            the agent. Each check reads one int per CPU
            chunk back to the host and splits a captured tick there; turn it off in release builds.
        capture: record the tick's launches as graphs and replay them (CUDA graphs on a GPU, Warp's CPU graphs on
            the CPU): the engine's stages, the planner, the grouping planner and the world (which must declare
            ``capturable = True``). The first tick runs plain; a change of a live setting, a hook or the world's
            ``graph_key()`` re-captures.
        stage_timing: (live) with ``capture``, one graph per stage and a device synchronise after each, so stage
            times are true on CUDA; False: one graph per run of stages between host steps (fewest launches; only
            the tick's total time is true on CUDA). Without capture, stages are timed with a synchronise on CUDA.
        dedupe: True: agents asking the same query in one tick are searched once (`goap.planners.dedupe`); False:
            never; "auto": while at least 5% of a tick's queries are repeats, re-tried every 32 ticks.
        plan_cache: entries of a plan cache across ticks (0: none).
        search_nodes_per_tick: (live) node-pool states the searches that outgrew their first pool may use per tick
            (None: 64 first pools); what does not fit waits for the next tick (deferred, no cooldown).
        cpu_threads: on the CPU, the spans a per-agent stage is split into over the shared worker pool (default:
            the cores, 1..8); 1: every stage in one launch. Results do not depend on it.
        planner_options: further options of the planner (``threads``, ``heuristic``, ``node_ceiling``, ...). A
            brain's default ``node_ceiling`` is 512 first pools.
    """

    planner: str = "warp"
    device: str | None = None
    plan_budget: int | None = None
    cooldown_ticks: int = 30
    max_nodes: int | None = None
    max_plan_length: int | None = None
    apply_effects: bool = True
    seed: int = 0
    goal_hysteresis: float = 0.0
    goal_scorer: Callable[[Any], Any] | None = None
    n_alive: int | None = None
    check_inputs: bool = True
    capture: bool = False
    stage_timing: bool = True
    dedupe: bool | str = "auto"
    plan_cache: int = 0
    search_nodes_per_tick: int | None = None
    cpu_threads: int | None = None
    planner_options: dict[str, Any] | None = field(default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_made", True)

    def __setattr__(self, name: str, value: Any) -> None:
        """A live setting changed on a made config (``brain.config.plan_budget = True``) is checked as the brain's
        property checks it; the settings are checked together with the brain's size in `check`."""
        if name in LIVE and getattr(self, "_made", False):
            check_setting(name, value, 0)
        object.__setattr__(self, name, value)

    def check(self, n_agents: int) -> None:
        """Raise ValueError naming the first bad setting."""
        for f in dataclasses.fields(self):
            check_setting(f.name, getattr(self, f.name), n_agents)

    def live_key(self) -> tuple:
        """The live settings as a hashable tuple (a callable by identity): what a captured graph may bake in."""
        return tuple(id(v) if callable(v) else v for v in (getattr(self, name) for name in LIVE))


def _is_int(x: Any) -> bool:
    return isinstance(x, int | np.integer) and not isinstance(x, bool)


def check_setting(name: str, value: Any, n_agents: int) -> None:
    """Raise ValueError when ``value`` is not a valid ``name`` setting for a brain of ``n_agents`` rows."""
    if name == "plan_budget" and value is not None and (not _is_int(value) or not 1 <= value <= 2**31 - 1):
        raise ValueError(f"plan_budget must be an integer in 1..{2**31 - 1}, got {value!r}")
    if name == "cooldown_ticks" and (not _is_int(value) or not 0 <= value <= 2**31 - 1):  # a Warp int32 argument
        raise ValueError(f"cooldown_ticks must be an integer in 0..{2**31 - 1}, got {value!r}")
    if name == "goal_hysteresis" and (not isinstance(value, int | float | np.integer | np.floating)
                                      or isinstance(value, bool)
                                      or not math.isfinite(value) or value < 0):
        raise ValueError(f"goal_hysteresis must be a finite number >= 0, got {value!r}")
    if name == "n_alive" and value is not None and (not _is_int(value) or not 0 <= value <= n_agents):
        raise ValueError(f"n_alive must be in 0..{n_agents}, got {value!r}")
    if name == "dedupe" and not (isinstance(value, bool | np.bool_) or (isinstance(value, str) and value == "auto")):
        raise ValueError(f"dedupe must be True, False or 'auto', got {value!r}")
    if name == "plan_cache" and (not _is_int(value) or value < 0):
        raise ValueError(f"plan_cache must be an integer >= 0, got {value!r}")
    if name == "search_nodes_per_tick" and value is not None and (not _is_int(value) or value < 1):
        raise ValueError(f"search_nodes_per_tick must be >= 1, got {value!r}")
    if name == "cpu_threads" and value is not None and (not _is_int(value) or not 1 <= value <= 64):
        raise ValueError(f"cpu_threads must be an integer in 1..64, got {value!r}")
    if name == "goal_scorer" and value is not None and not callable(value) \
            and not callable(getattr(value, "score_rows", None)):
        raise ValueError(f"goal_scorer must be callable, a row scorer (with score_rows) or None, got "
                         f"{type(value).__name__}")
    if name in ("apply_effects", "check_inputs", "capture", "stage_timing") and not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    if name == "planner_options" and value is not None and not isinstance(value, dict):
        raise ValueError(f"planner_options must be a dict, got {type(value).__name__}")
    if name in ("max_nodes", "max_plan_length") and value is not None and (not _is_int(value) or value < 1):
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if name == "seed" and not _is_int(value):
        raise ValueError(f"seed must be an integer, got {value!r}")


class Setting:
    """A brain attribute that reads and writes ``brain.config.<name>``: live settings are checked and take effect
    next tick; fixed ones refuse to change."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return getattr(obj.config, self.name)

    def __set__(self, obj: Any, value: Any) -> None:
        if self.name not in LIVE:
            raise AttributeError(f"brain.{self.name} is fixed when the brain is made")
        check_setting(self.name, value, obj.n_agents)
        setattr(obj.config, self.name, value)

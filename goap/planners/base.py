"""What every planner shares: statuses, the batched result, input checks and the registry.

The planner contract (the same for the reference planner and every Warp planner)::

    plan(states[N, W] uint64, goals[N] int, costs[N, A] float32 | None, enabled[N, A] bool | None,
         *, goal_table=None, agents=None) -> PlanBatch

``goals`` index ``goal_table.goals`` (by default the domain's goals). ``costs`` replace the domain's action
costs per agent (distances, say) and must be finite and >= 0; ``enabled`` switches actions off per agent
(context preconditions). ``agents`` plans only those rows; the other rows of the result are left as they were
in ``out`` (or NOT_PLANNED in a fresh batch).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Protocol

import numpy as np

from goap.domain import Domain
from goap.encoding import DomainTables, GoalTables

DEFAULT_MAX_NODES = 1024
DEFAULT_MAX_PLAN_LENGTH = 32


class Status(IntEnum):
    """Outcome of one search."""

    OK = 0  #: a plan was found; with an admissible heuristic its cost is optimal
    SATISFIED = 1  #: the goal already holds: empty plan, cost 0
    NO_PLAN = 2  #: the reachable space was exhausted without reaching the goal
    BUDGET = 3  #: the node pool or open list filled up before the search ended
    TOO_LONG = 4  #: the optimal plan has more steps than the result can hold (``max_plan_length``)
    NOT_PLANNED = 5  #: the row was not in ``agents``

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass
class PlanBatch:
    """Results for N agents. ``actions[i, :length[i]]`` is agent i's plan; unused entries are -1.

    ``cost`` is the plan's cost for OK, SATISFIED (0) and TOO_LONG, NaN otherwise. ``expanded`` counts the
    nodes taken off the open list and expanded.
    """

    status: np.ndarray  # int8[N]
    cost: np.ndarray  # float32[N]
    length: np.ndarray  # int32[N]
    actions: np.ndarray  # int32[N, L]
    expanded: np.ndarray  # int32[N]

    @classmethod
    def empty(cls, n: int, max_plan_length: int) -> PlanBatch:
        return cls(
            status=np.full(n, Status.NOT_PLANNED, dtype=np.int8),
            cost=np.full(n, np.nan, dtype=np.float32),
            length=np.zeros(n, dtype=np.int32),
            actions=np.full((n, max_plan_length), -1, dtype=np.int32),
            expanded=np.zeros(n, dtype=np.int32),
        )

    def __len__(self) -> int:
        return len(self.status)

    def counts(self) -> dict[str, int]:
        """How many rows ended with each status, by label (``{"ok": 950, "budget": 50}``)."""
        values, counts = np.unique(self.status, return_counts=True)
        return {Status(int(v)).label: int(c) for v, c in zip(values, counts, strict=True)}

    def plan(self, i: int) -> list[int]:
        """Agent i's plan as action indices (empty unless OK)."""
        if self.status[i] != Status.OK:
            return []
        return [int(a) for a in self.actions[i, : self.length[i]]]

    def plan_names(self, i: int, domain: Domain) -> list[str]:
        return [domain.actions[a].name for a in self.plan(i)]


class Planner(Protocol):
    name: str
    domain: Domain
    tables: DomainTables
    max_nodes: int
    max_plan_length: int

    def plan(
        self,
        states: Any,
        goals: Any,
        costs: Any = None,
        enabled: Any = None,
        *,
        goal_table: GoalTables | None = None,
        agents: Any = None,
        out: PlanBatch | None = None,
    ) -> PlanBatch: ...


HEURISTICS = ("h2", "h1")


def check_options(max_nodes: int, max_plan_length: int, weight: float = 1.0, heuristic: str = "h2") -> None:
    if not isinstance(max_nodes, int | np.integer) or not 2 <= max_nodes <= 2**28:
        raise ValueError(f"max_nodes must be an integer in 2..2**28, got {max_nodes!r}")
    if not isinstance(max_plan_length, int | np.integer) or not 1 <= max_plan_length <= 4096:
        raise ValueError(f"max_plan_length must be an integer in 1..4096, got {max_plan_length!r}")
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 1.0 <= weight < float("inf"):
        raise ValueError(f"weight must be a finite number >= 1, got {weight!r}")
    if heuristic not in HEURISTICS:
        raise ValueError(f"unknown heuristic {heuristic!r} (known: {', '.join(HEURISTICS)})")


def check_inputs(
    tables: DomainTables,
    goal_table: GoalTables,
    states: np.ndarray,
    goals: np.ndarray,
    costs: np.ndarray | None,
    enabled: np.ndarray | None,
    agents: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """Validate shapes, dtypes and ranges of host inputs; returns them as contiguous numpy arrays."""
    states = np.ascontiguousarray(states, dtype=np.uint64)
    W, A = tables.n_words, tables.n_actions
    if states.ndim != 2 or states.shape[1] != W:
        raise ValueError(f"states must have shape [N, {W}], got {states.shape}")
    n = states.shape[0]
    goals = np.ascontiguousarray(goals, dtype=np.int32).reshape(-1)
    if goals.shape != (n,):
        raise ValueError(f"goals must have shape [{n}], got {goals.shape}")
    if costs is not None:
        costs = np.ascontiguousarray(costs, dtype=np.float32)
        if costs.shape != (n, A):
            raise ValueError(f"costs must have shape [{n}, {A}], got {costs.shape}")
        if not np.all(np.isfinite(costs)) or np.any(costs < 0):
            raise ValueError("costs must be finite and >= 0")
    if enabled is not None:
        enabled = np.ascontiguousarray(enabled, dtype=np.bool_)
        if enabled.shape != (n, A):
            raise ValueError(f"enabled must have shape [{n}, {A}], got {enabled.shape}")
    if agents is not None:
        agents = np.asarray(agents)
        if agents.dtype == np.bool_:
            if agents.shape != (n,):
                raise ValueError(f"an agent mask must have shape [{n}], got {agents.shape}")
            agents = np.flatnonzero(agents)
        agents = np.ascontiguousarray(agents, dtype=np.int32).reshape(-1)
        if len(agents) and (agents.min() < 0 or agents.max() >= n):
            raise ValueError(f"agent indices must be in 0..{n - 1}")
    planned = goals if agents is None else goals[agents]
    if len(planned) and (planned.min() < 0 or planned.max() >= goal_table.n_goals):
        raise ValueError(f"goal indices of the agents planned must be in 0..{goal_table.n_goals - 1}")
    return states, goals, costs, enabled, agents


# --- registry ----------------------------------------------------------------------------------------------
#: name -> "module:Class"; imported on first use so that listing planners does not load Warp.
PLANNERS: dict[str, str] = {
    "reference": "goap.planners.reference:ReferencePlanner",
    "warp": "goap.planners.warp_astar:WarpAStarPlanner",
    "warp-wastar": "goap.planners.warp_astar:WarpWeightedAStarPlanner",
    "warp-greedy": "goap.planners.warp_astar:WarpGreedyPlanner",
}


def make_planner(name: str, domain: Domain | DomainTables, **options: Any) -> Planner:
    """Create a registered planner for a domain, e.g. ``make_planner("warp", domain, device="cpu")``.

    ``dedupe=True`` and/or ``plan_cache=K`` wrap it in `goap.planners.dedupe.DedupingPlanner`: the equal queries
    of a call are searched once, and a K-entry cache answers queries seen in earlier calls.
    """
    dedupe, plan_cache = options.pop("dedupe", False), options.pop("plan_cache", 0)
    if name not in PLANNERS:
        raise ValueError(f"unknown planner '{name}' (known: {', '.join(sorted(PLANNERS))})")
    module_name, cls_name = PLANNERS[name].split(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    planner = cls(domain, **options)
    if dedupe or plan_cache:
        from goap.planners.dedupe import wrap

        return wrap(planner, dedupe=bool(dedupe), plan_cache=plan_cache)
    return planner

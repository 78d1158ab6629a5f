"""Planners: the reference oracle and the batched Warp planners, behind one registry."""

from goap.planners.base import (
    DEFAULT_MAX_NODES,
    DEFAULT_MAX_PLAN_LENGTH,
    PLANNERS,
    PlanBatch,
    Planner,
    Status,
    make_planner,
)

__all__ = [
    "DEFAULT_MAX_NODES",
    "DEFAULT_MAX_PLAN_LENGTH",
    "PLANNERS",
    "PlanBatch",
    "Planner",
    "Status",
    "make_planner",
]

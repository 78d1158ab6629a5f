"""warp-goap: goal-oriented action planning for thousands of agents at once, on NVIDIA Warp.

The core (domain, encoding, reference planner) is pure Python and numpy; Warp is imported only by the Warp
planners and kernels, when first used.
"""

from goap.domain import (
    Action,
    AgentType,
    Condition,
    Domain,
    DomainBuilder,
    DomainError,
    Effect,
    Fact,
    Goal,
    domain_from_spec,
)
from goap.domain_file import load_domain, loads_domain, save_domain
from goap.encoding import DomainTables, encode
from goap.planners import PLANNERS, PlanBatch, Status, make_planner

__version__ = "0.1.0"

__all__ = [
    "Action",
    "AgentType",
    "Condition",
    "Domain",
    "DomainBuilder",
    "DomainError",
    "DomainTables",
    "Effect",
    "Fact",
    "Goal",
    "PLANNERS",
    "PlanBatch",
    "Status",
    "domain_from_spec",
    "encode",
    "load_domain",
    "loads_domain",
    "make_planner",
    "save_domain",
]

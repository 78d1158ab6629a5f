"""The World protocol: what a game implements so that a `goap.runtime.Brain` can drive its agents.

A world owns everything that is not the agents' symbolic state: positions, resources, timers. Each tick the
brain calls ``sense`` (the world writes facts into ``brain.states`` and, if it likes, per-agent action costs
``brain.costs``, enabled masks ``brain.enabled`` and goal priorities ``brain.priorities``), plans, then calls
``act`` (the world advances every agent's ``brain.action`` and reports it in ``brain.action_status`` as
RUNNING, DONE or FAILED). Everything per agent is done over arrays, never in a Python loop over agents.

When an action is DONE, the brain applies its symbolic effects to ``brain.states``; the next ``sense`` may
overwrite any fact the world knows better (a position, an inventory the world keeps itself).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from goap.domain import Domain

if TYPE_CHECKING:
    from goap.runtime import Brain

RUNNING, DONE, FAILED = 0, 1, 2


@runtime_checkable
class World(Protocol):
    name: str
    domain: Domain

    def reset(self, brain: Brain, seed: int) -> None:
        """Lay out the world for ``brain.n_agents`` agents and write their starting facts."""

    def sense(self, brain: Brain) -> None:
        """Write facts (and optionally costs, enabled masks, priorities) for every agent."""

    def act(self, brain: Brain, dt: float) -> None:
        """Advance every agent's ``brain.action`` (-1: idle) and set ``brain.action_status``."""

    def score(self) -> dict[str, float]:
        """The world's own measures of how well the agents do, for summaries."""

    def get_state(self) -> dict[str, np.ndarray]:
        """Every array that defines the world now (RNG state included), for snapshots and hashes."""

    def set_state(self, arrays: dict[str, Any]) -> None:
        """Restore what `get_state` returned."""

"""A game's own world, as small as a world gets, for the tests of ``--world package.module:Class``.

Lamplighters: each agent lives in a house at x = 2 on its own row and tends a lamp at x = 12 on that row. Lamps
go out every 40 ticks (staggered by agent), and lighting one takes oil fetched at home. Walking takes as many
ticks as the distance; every other action takes one tick. Per-agent work is numpy over arrays; facts are
written in place with the layout's word, shift and mask, so the world works whether the brain's arrays are numpy
or Warp arrays on the CPU (their ``.numpy()`` views are zero-copy).

    goap run --world tests.custom_world:LampWorld --agents 200 --ticks 100
    goap view --world tests.custom_world:LampWorld --headless --frames 5
"""

from __future__ import annotations

from typing import Any

import numpy as np

from goap import DomainBuilder
from goap.world import DONE, FAILED, RUNNING

DOMAIN = (
    DomainBuilder("lamplighters")
    .enum("at", ["home", "lamp"])
    .bool("has_oil")
    .bool("lamp_lit", default=True)
    .int("tired", 0, 3)
    .action("walk_to_lamp", cost=2, pre={"at": "home"}, effects={"at": "lamp"})
    .action("walk_home", cost=2, pre={"at": "lamp"}, effects={"at": "home"})
    .action("fetch_oil", cost=1, pre={"at": "home", "has_oil": False}, effects={"has_oil": True})
    .action("light_lamp", cost=1, pre={"at": "lamp", "has_oil": True, "lamp_lit": False},
            effects={"lamp_lit": True, "has_oil": False, "tired": "+= 1"})
    .action("rest", cost=1, pre={"at": "home", "tired": "> 0"}, effects={"tired": 0})
    .goal("light_the_lamp", want={"lamp_lit": True}, priority=5)
    .goal("be_rested", want={"tired": 0, "at": "home"}, priority=1)
    .build()
)

HOME_X, LAMP_X = 2.0, 12.0


def _view(a: Any) -> np.ndarray:
    """A numpy view of a brain array (numpy already, or a CPU Warp array)."""
    return a if isinstance(a, np.ndarray) else a.numpy()


def _write_fact(brain: Any, name: str, rows: np.ndarray, value: int) -> None:
    """Set fact ``name`` to ``value`` for the agents ``rows`` (a bool mask), in place."""
    f = brain.domain.fact_index(name)
    layout = brain.tables.layout
    word, shift = int(layout.word[f]), np.uint64(int(layout.shift[f]))
    mask = np.uint64(layout.field_mask(f)) << shift
    enc = np.uint64(value - int(layout.min[f])) << shift
    states = _view(brain.states)
    states[rows, word] = (states[rows, word] & ~mask) | enc


class LampWorld:
    """Lamplighters on a 14 x N/2 strip (see the module docstring)."""

    name = "lamplighters"
    domain = DOMAIN
    width = 14.0

    def __init__(self, out_every: int = 40):
        if out_every < 1:
            raise ValueError(f"out_every must be >= 1, got {out_every}")
        self.out_every = int(out_every)
        self.height = 1.0
        self.positions = np.zeros((0, 2), np.float32)
        self.targets = np.zeros((0, 2), np.float32)
        self.clock = 0
        self.lit = 0

    def reset(self, brain: Any, seed: int) -> None:
        if str(getattr(brain, "device", "cpu")) != "cpu":  # numpy views write through on the CPU only
            raise ValueError(f"LampWorld runs on the cpu device (numpy views of brain arrays), not {brain.device}")
        n = brain.n_agents
        rng = np.random.default_rng(seed)
        rows = np.arange(n, dtype=np.float32) * 0.5 + 0.5
        self.height = float(max(1.0, n * 0.5 + 1.0))
        self.positions = np.stack([np.full(n, HOME_X, np.float32), rows], axis=1)
        self.targets = np.full((n, 2), np.nan, np.float32)
        self.phase = rng.integers(0, self.out_every, n)
        self.clock = 0
        self.lit = 0
        self._a = {a.name: k for k, a in enumerate(DOMAIN.actions)}

    def sense(self, brain: Any) -> None:
        self.clock += 1
        out = (self.clock + self.phase) % self.out_every == 0
        if out.any():
            _write_fact(brain, "lamp_lit", out, 0)

    def act(self, brain: Any, dt: float) -> None:
        action, status = _view(brain.action), _view(brain.action_status)
        walking_to = action == self._a["walk_to_lamp"]
        walking_home = action == self._a["walk_home"]
        goal_x = np.where(walking_to, LAMP_X, HOME_X).astype(np.float32)
        walking = walking_to | walking_home
        self.targets[:] = np.nan
        self.targets[walking, 0] = goal_x[walking]
        self.targets[walking, 1] = self.positions[walking, 1]
        step = np.clip(goal_x - self.positions[:, 0], -dt, dt).astype(np.float32)
        self.positions[walking, 0] += step[walking]
        arrived = walking & (np.abs(self.positions[:, 0] - goal_x) < 1e-4)
        busy = action >= 0
        status[busy] = RUNNING
        status[busy & ~walking] = DONE
        status[arrived] = DONE
        # a lamp can only be lit by someone standing at it: a stale plan fails instead of lighting from afar
        lighting = action == self._a["light_lamp"]
        away = lighting & (np.abs(self.positions[:, 0] - LAMP_X) > 1e-4)
        status[away] = FAILED
        self.lit += int((lighting & ~away).sum())

    def score(self) -> dict[str, float]:
        return {"lamps_lit": float(self.lit), "clock": float(self.clock)}

    def get_state(self) -> dict[str, np.ndarray]:
        return {"positions": self.positions.copy(), "targets": self.targets.copy(), "phase": self.phase.copy(),
                "clock": np.array(self.clock), "lit": np.array(self.lit)}

    def set_state(self, arrays: dict[str, Any]) -> None:
        self.positions = np.array(arrays["positions"], np.float32)
        self.targets = np.array(arrays["targets"], np.float32)
        self.phase = np.array(arrays["phase"])
        self.clock, self.lit = int(arrays["clock"]), int(arrays["lit"])


def make_small_world() -> LampWorld:
    """A factory rather than a class, for ``--world tests.custom_world:make_small_world``."""
    return LampWorld(out_every=20)


class NotAWorld:
    """Has a name and a domain but no sense/act: the registry must refuse it, naming what is missing."""

    name = "broken"
    domain = DOMAIN

    def reset(self, brain: Any, seed: int) -> None:
        pass


class WrongDomain(LampWorld):
    """A domain that is a plain dict: refused with a hint on how to make a Domain."""

    domain = {"facts": {}}  # type: ignore[assignment]


NOT_CALLABLE = 42

"""Model inputs from packed states: every fact as numbers in [0, 1], plus a one-hot of the goal.

One row of input is ``[state features | goal one-hot]``:

- a bool fact is one column, 0 or 1, named ``fact``;
- an int fact is one column, ``(value - min) / (max - min)``, named ``fact``;
- an enum fact is one column per label, one-hot, named ``fact=label``;
- then one column per goal, one-hot, named ``goal=name``.

`FeatureLayout` holds this layout for a domain; its ``names`` are saved with a model, so a model is never fed
columns it was not trained on. Facts are read straight from the packed words (one shift-and-mask per fact,
vectorised over rows), in numpy (`state_features`) or in torch on any device (`state_features_torch`, which
takes the uint64 states viewed as int64: ``torch.from_numpy(states.view(np.int64))`` is zero-copy).

For goal selection every agent is scored for every goal: `grid_features` tiles the state features of N agents
into N * G rows (unpacking each state once). The model itself does better still (`UtilityModel.forward_grid`):
its first layer is linear, so it applies the state part once per agent and adds one vector per goal.

numpy only at import; torch is imported by the torch functions when they are called.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from goap.domain import BOOL, ENUM, Domain
from goap.encoding import DomainTables, encode

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class FeatureLayout:
    """Where each fact and goal goes in a model's input row; see the module docstring."""

    names: tuple[str, ...]
    n_state: int  # state columns; the goal one-hot follows
    n_goals: int
    # Per fact: its packed word, shift and field mask (as in the domain's Layout).
    word: np.ndarray  # int64[F]
    shift: np.ndarray  # uint64[F]
    mask: np.ndarray  # uint64[F]
    # Scalar facts (bools and ints): the fact, its column, and 1 / (max - min) (0 for a constant fact).
    scalar_fact: np.ndarray  # int64[S1]
    scalar_col: np.ndarray  # int64[S1]
    scalar_scale: np.ndarray  # float32[S1]
    # Enum facts: the fact and the column of its first label (its encoded value is added).
    enum_fact: np.ndarray  # int64[E]
    enum_col: np.ndarray  # int64[E]

    @classmethod
    def from_domain(cls, domain: Domain | DomainTables) -> FeatureLayout:
        tables = domain if isinstance(domain, DomainTables) else encode(domain)
        domain = tables.domain
        L = tables.layout
        names: list[str] = []
        scalar_fact, scalar_col, scalar_scale, enum_fact, enum_col = [], [], [], [], []
        for f, fact in enumerate(domain.facts):
            if fact.kind == ENUM:
                enum_fact.append(f)
                enum_col.append(len(names))
                names.extend(f"{fact.name}={label}" for label in fact.labels)
            else:
                scalar_fact.append(f)
                scalar_col.append(len(names))
                span = fact.max - fact.min
                scalar_scale.append(1.0 if fact.kind == BOOL else (1.0 / span if span > 0 else 0.0))
                names.append(fact.name)
        n_state = len(names)
        names.extend(f"goal={g.name}" for g in domain.goals)
        return cls(
            names=tuple(names),
            n_state=n_state,
            n_goals=len(domain.goals),
            word=L.word.astype(np.int64),
            shift=L.shift.astype(np.uint64),
            mask=np.array([L.field_mask(f) for f in range(len(domain.facts))], dtype=np.uint64),
            scalar_fact=np.array(scalar_fact, dtype=np.int64),
            scalar_col=np.array(scalar_col, dtype=np.int64),
            scalar_scale=np.array(scalar_scale, dtype=np.float32),
            enum_fact=np.array(enum_fact, dtype=np.int64),
            enum_col=np.array(enum_col, dtype=np.int64),
        )

    @property
    def n_features(self) -> int:
        return len(self.names)

    @property
    def n_words(self) -> int:
        return int(self.word.max(initial=-1)) + 1

    # --- numpy ----------------------------------------------------------------------------------------------
    def encoded_values(self, states: np.ndarray) -> np.ndarray:
        """uint64[N, W] packed states -> int64[N, F] encoded fact values (``value - min``)."""
        states = np.asarray(states, dtype=np.uint64)
        if states.ndim != 2:
            raise ValueError(f"expected packed states of shape [N, W], got {states.shape}")
        if len(self.word) and states.shape[1] <= int(self.word.max()):
            raise ValueError(f"expected packed states of shape [N, {self.n_words}], got {states.shape}")
        return ((states[:, self.word] >> self.shift) & self.mask).astype(np.int64)

    def state_features(self, states: np.ndarray) -> np.ndarray:
        """uint64[N, W] packed states -> float32[N, n_state]."""
        v = self.encoded_values(states)
        out = np.zeros((len(v), self.n_state), dtype=np.float32)
        out[:, self.scalar_col] = v[:, self.scalar_fact] * self.scalar_scale
        if len(self.enum_fact):
            out[np.arange(len(v))[:, None], self.enum_col + v[:, self.enum_fact]] = 1.0
        return out

    def goal_features(self, goals: np.ndarray) -> np.ndarray:
        """int[R] goal indices -> float32[R, G] one-hot."""
        goals = np.asarray(goals, dtype=np.int64)
        if len(goals) and (goals.min() < 0 or goals.max() >= self.n_goals):
            bad = goals[(goals < 0) | (goals >= self.n_goals)][0]
            raise ValueError(f"goal index {bad} out of range 0..{self.n_goals - 1}")
        out = np.zeros((len(goals), self.n_goals), dtype=np.float32)
        out[np.arange(len(goals)), goals] = 1.0
        return out

    def row_features(self, states: np.ndarray, goals: np.ndarray) -> np.ndarray:
        """One input row per (state, goal) pair: float32[R, n_features]."""
        return np.concatenate([self.state_features(states), self.goal_features(goals)], axis=1)

    def grid_features(self, states: np.ndarray) -> np.ndarray:
        """Every agent with every goal: float32[N * G, n_features], agent-major (row ``n * G + g``)."""
        s = self.state_features(states)
        N, G = len(s), self.n_goals
        out = np.empty((N, G, self.n_features), dtype=np.float32)
        out[:, :, : self.n_state] = s[:, None, :]
        out[:, :, self.n_state :] = np.eye(G, dtype=np.float32)[None]
        return out.reshape(N * G, self.n_features)

    # --- torch ----------------------------------------------------------------------------------------------
    def torch_tables(self, device: Any = "cpu") -> dict[str, torch.Tensor]:
        """The layout as tensors on ``device``, for `state_features_torch` (build once, reuse every tick)."""
        from goap.learn import require_torch

        torch = require_torch()
        # Shifts and masks as int64: every field lies within bits 0..63, and an arithmetic shift followed by the
        # field mask (at most 63 bits wide here) keeps exactly the field's bits.
        mask = np.where(self.mask > np.uint64(2**63 - 1), np.uint64(2**63 - 1), self.mask).astype(np.int64)
        return {
            "word": torch.as_tensor(self.word, device=device),
            "shift": torch.as_tensor(self.shift.astype(np.int64), device=device),
            "mask": torch.as_tensor(mask, device=device),
            "scalar_fact": torch.as_tensor(self.scalar_fact, device=device),
            "scalar_col": torch.as_tensor(self.scalar_col, device=device),
            "scalar_scale": torch.as_tensor(self.scalar_scale, device=device),
            "enum_fact": torch.as_tensor(self.enum_fact, device=device),
            "enum_col": torch.as_tensor(self.enum_col, device=device),
        }

    def state_features_torch(self, states: torch.Tensor, tables: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        """int64[N, W] (packed uint64 words viewed as int64) -> float32[N, n_state] on the states' device."""
        from goap.learn import require_torch

        torch = require_torch()
        t = tables if tables is not None else self.torch_tables(states.device)
        v = (states[:, t["word"]] >> t["shift"]) & t["mask"]
        out = torch.zeros((states.shape[0], self.n_state), dtype=torch.float32, device=states.device)
        out[:, t["scalar_col"]] = v[:, t["scalar_fact"]].to(torch.float32) * t["scalar_scale"]
        if len(self.enum_fact):
            out.scatter_(1, t["enum_col"] + v[:, t["enum_fact"]], 1.0)
        return out


def states_as_torch(states: np.ndarray) -> torch.Tensor:
    """A uint64[N, W] numpy array as an int64 torch tensor sharing its memory (torch has no uint64)."""
    from goap.learn import require_torch

    torch = require_torch()
    states = np.ascontiguousarray(states, dtype=np.uint64)
    return torch.from_numpy(states.view(np.int64))

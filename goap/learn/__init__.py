"""Learned goal utility: a small torch model trained on planning outcomes that helps agents choose goals.

Nothing here is imported by the engine, and importing this package does not import torch: the modules that
need it (`goap.learn.model`, `goap.learn.train`, `goap.learn.selector`) call `require_torch` first, which
raises `LearnUnavailable` naming the extra to install when torch is missing.

- `goap.learn.features`: packed states -> model inputs (bools 0/1, ints scaled to [0, 1], enums one-hot, plus
  a one-hot of the goal), with a named layout saved alongside the model.
- `goap.learn.model`: `UtilityModel`, an MLP with three heads (P(plan found), expected plan cost, expected
  value), saved and loaded safely (`torch.load(weights_only=True)`), refused for another domain.
- `goap.learn.train`: `train(log, ...)` -> (model, report) against per-goal baselines; `goap train`.
- `goap.learn.selector`: `UtilitySelector`, a `Brain` ``goal_scorer`` that scores every agent x goal per tick.
"""

from __future__ import annotations

from types import ModuleType

#: The pip command that brings torch from a checkout, and the version the tests run with (the extra asks only
#: torch>=2.13; `make` installs this CPU build first, since a bare torch from PyPI is a multi-GB CUDA build).
EXTRA = 'pip install -e ".[learn]"'
TORCH_PIN = "torch==2.13.0"


class LearnUnavailable(RuntimeError):
    """torch is not installed, so nothing in `goap.learn` that trains or runs a model can work."""


def require_torch() -> ModuleType:
    """Import torch lazily; `LearnUnavailable` naming the extra when it is missing."""
    try:
        import torch
    except ImportError as e:
        raise LearnUnavailable(
            f"goap.learn needs torch, which is not installed: {EXTRA} (tested with {TORCH_PIN}, the CPU build)"
        ) from e
    return torch


__all__ = ["EXTRA", "TORCH_PIN", "LearnUnavailable", "require_torch"]

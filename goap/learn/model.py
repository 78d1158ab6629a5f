"""`UtilityModel`: an MLP from (state, goal) to three predictions about planning that goal from that state.

Heads (all read from one shared trunk):

- **feasible**: the logit of P(plan found): the planner answered OK or SATISFIED (not NO_PLAN, BUDGET or
  TOO_LONG). Trained with binary cross-entropy on every row.
- **cost**: the expected plan cost, regressed as ``log1p(cost)`` (standardised) on the rows that have a plan.
  `predict` returns it in cost units (``expm1``).
- **value**: the expected gain per tick of pursuing the goal. Where the world reports its objective (the log's
  ``gain``: the change of the agent's contribution to the world objective until the goal was reached or
  abandoned), ``gain / max(1, ticks_open)``, reached or not; in logs without it, ``reward / max(1,
  ticks_to_goal)`` when the goal was then achieved and 0 when the plan failed or was abandoned (``reward`` is
  the goal's priority when it was planned). Regressed (standardised) on the rows whose outcome is known
  (``achieved`` 0 or 1, not the rows still open when the log was saved). It is the rate at which that goal pays
  off, and it includes the chance that it does not.

Files: `save` writes ``torch.save`` of a dict of tensors and plain types only (the state dict, the feature
names, the domain's fingerprint and name, the target standardisation, the hidden sizes, a format version and
optionally a training summary), written whole or not at all; `load` reads it with
``torch.load(weights_only=True)``, so a model file cannot run code. A file of another domain is refused with a
ValueError naming both domains, and a file that is not a model (corrupted, truncated, another format) with a
ValueError saying so.
"""

from __future__ import annotations

import io
import math
import pickle
import re
from pathlib import Path
from typing import Any

import numpy as np

from goap.domain import Domain, show
from goap.encoding import DomainTables, fingerprint
from goap.learn import require_torch
from goap.learn.features import FeatureLayout

torch = require_torch()
nn = torch.nn

FORMAT = "goap-utility-model"
FORMAT_VERSION = 1
HEADS = ("feasible", "cost", "value")
#: Bounds on a model's shape, checked before any weight is allocated (a model file could claim any size).
MAX_HIDDEN = 4096
MAX_LAYERS = 16
MAX_PARAMETERS = 2**26
STATS_KEYS = ("cost_mean", "cost_std", "value_mean", "value_std")


class UtilityModel(nn.Module):
    """MLP ``[state | goal one-hot] -> (feasible logit, cost, value)``; see the module docstring.

    Args:
        layout: the domain's `FeatureLayout` (input columns).
        domain_name, domain_fingerprint: the domain the model is for (`goap.encoding.fingerprint`).
        hidden: hidden layer sizes (at least one).
        stats: target standardisation, ``cost_mean``/``cost_std`` (of ``log1p(cost)``) and
            ``value_mean``/``value_std``; set by training.
    """

    def __init__(
        self,
        layout: FeatureLayout | tuple[str, ...],
        n_state: int | None = None,
        *,
        domain_name: str,
        domain_fingerprint: str,
        hidden: tuple[int, ...] = (64, 64),
        stats: dict[str, float] | None = None,
    ):
        super().__init__()
        if isinstance(layout, FeatureLayout):
            names, n_state = layout.names, layout.n_state
        else:
            names = tuple(layout)
        if n_state is None or not 0 <= n_state <= len(names):
            raise ValueError("n_state (the number of state columns) is required with a list of feature names")
        if (
            not hidden
            or len(hidden) > MAX_LAYERS
            or any(isinstance(h, bool) or not isinstance(h, int) or not 1 <= h <= MAX_HIDDEN for h in hidden)
        ):
            raise ValueError(
                f"hidden sizes must be 1 to {MAX_LAYERS} integers in 1..{MAX_HIDDEN}, got {show(list(hidden))}"
            )
        sizes = [len(names), *hidden, len(HEADS)]
        n_params = sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
        if n_params > MAX_PARAMETERS:
            raise ValueError(f"a model of {n_params:,} parameters is too large (at most {MAX_PARAMETERS:,})")
        self.feature_names = tuple(str(n) for n in names)
        self.n_state = int(n_state)
        self.n_goals = len(self.feature_names) - self.n_state
        self.domain_name = str(domain_name)
        self.domain_fingerprint = str(domain_fingerprint)
        self.hidden = tuple(int(h) for h in hidden)
        self.stats = {"cost_mean": 0.0, "cost_std": 1.0, "value_mean": 0.0, "value_std": 1.0}
        for k, v in (stats or {}).items():
            if k not in self.stats or isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise ValueError(f"stats: expected finite numbers {', '.join(STATS_KEYS)}, got {show(k)}={show(v)}")
            self.stats[k] = float(v)
        self.summary: dict[str, Any] = {}  # plain numbers describing how it was trained (saved with the model)
        self.first = nn.Linear(len(self.feature_names), self.hidden[0])
        layers: list[nn.Module] = []
        for a, b in zip(self.hidden[:-1], self.hidden[1:], strict=True):
            layers += [nn.ReLU(), nn.Linear(a, b)]
        layers.append(nn.ReLU())
        self.trunk = nn.Sequential(*layers)
        self.head = nn.Linear(self.hidden[-1], len(HEADS))

    @classmethod
    def for_domain(cls, domain: Domain | DomainTables, **kwargs: Any) -> UtilityModel:
        d = domain.domain if isinstance(domain, DomainTables) else domain
        return cls(FeatureLayout.from_domain(domain), domain_name=d.name, domain_fingerprint=fingerprint(d), **kwargs)

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    # --- forward --------------------------------------------------------------------------------------------
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """float32[B, n_features] -> float32[B, 3]: feasible logit, standardised log1p cost, standardised value."""
        return self.head(self.trunk(self.first(x)))

    def forward_grid(self, state_x: torch.Tensor) -> torch.Tensor:
        """float32[N, n_state] state features -> float32[N, G, 3], every agent with every goal.

        The same as `forward` on the N * G rows of `FeatureLayout.grid_features`, but the first layer's state
        part runs once per agent: ``W [s | e_g] + b = (W_s s + b) + W[:, S + g]``.
        """
        w = self.first.weight
        h = state_x @ w[:, : self.n_state].T + self.first.bias  # [N, H]
        h = h[:, None, :] + w[:, self.n_state :].T[None]  # [N, G, H]
        return self.head(self.trunk(h))

    def decode(self, raw: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Raw head outputs [..., 3] -> (P(plan found), expected cost, expected value), in their own units."""
        s = self.stats
        p = torch.sigmoid(raw[..., 0])
        cost = torch.expm1(raw[..., 1] * s["cost_std"] + s["cost_mean"]).clamp_min(0.0)
        value = raw[..., 2] * s["value_std"] + s["value_mean"]
        return p, cost, value

    @torch.no_grad()
    def predict(self, x: np.ndarray | torch.Tensor) -> dict[str, np.ndarray]:
        """Input rows -> ``{"p_feasible", "cost", "value"}`` as numpy arrays (eval mode, no gradients)."""
        was = self.training
        self.eval()
        try:
            dev = next(self.parameters()).device
            xt = torch.as_tensor(np.asarray(x, dtype=np.float32) if isinstance(x, np.ndarray) else x, device=dev)
            p, cost, value = self.decode(self(xt))
        finally:
            self.train(was)
        return {"p_feasible": p.cpu().numpy(), "cost": cost.cpu().numpy(), "value": value.cpu().numpy()}

    # --- files ----------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Everything needed to rebuild the model: tensors and plain types only."""
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "domain_name": self.domain_name,
            "domain_fingerprint": self.domain_fingerprint,
            "feature_names": list(self.feature_names),
            "n_state": self.n_state,
            "hidden": list(self.hidden),
            "stats": dict(self.stats),
            "summary": _plain(self.summary),
            "state_dict": {k: v.detach().cpu().clone() for k, v in self.state_dict().items()},
        }

    def check_finite(self, source: str = "model") -> None:
        """ValueError naming the first weight that holds NaN or an infinity (a diverged training run)."""
        for name, tensor in self.state_dict().items():
            if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
                raise ValueError(f"{source}: weight '{name}' is not finite (NaN or infinity): the model is unusable")

    def save(self, path: str | Path) -> None:
        """Write the model (see the module docstring), whole or not at all; a model with non-finite weights is
        refused (ValueError), so that no file of NaNs is ever written."""
        from goap.files import write_atomic

        self.check_finite()
        buf = io.BytesIO()
        torch.save(self.to_dict(), buf)
        write_atomic(path, buf.getvalue())

    @classmethod
    def load(cls, path: str | Path, domain: Domain | DomainTables | None = None, device: Any = "cpu") -> UtilityModel:
        """Read a model saved by `save`; with ``domain``, refuse a model of any other domain (ValueError)."""
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"{path}: no such model file" if not path.exists() else f"{path}: not a model file")
        try:
            data = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as e:  # a damaged file can fail in many ways inside torch, zipfile or pickle
            if isinstance(e, pickle.UnpicklingError):  # torch's own message is several lines about weights_only
                if re.search(r"\bGLOBAL\b", str(e), re.IGNORECASE):
                    raise ValueError(
                        f"{path}: refused: it holds Python objects other than tensors and plain values (a pickle "
                        "that could run code), which a utility model file never does"
                    ) from None
                raise ValueError(f"{path}: not a readable utility model file (a damaged pickle)") from None
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            raise ValueError(f"{path}: not a readable utility model file ({type(e).__name__}: {show(first, 200)})"
                             ) from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"{path}: not a utility model file (no '{FORMAT}' header)")
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(
                f"{path}: utility model format version {data.get('version')!r}; this goap reads {FORMAT_VERSION}"
            )
        _check_fields(data, path)
        try:
            model = cls(
                tuple(data["feature_names"]), data["n_state"], domain_name=data["domain_name"],
                domain_fingerprint=data["domain_fingerprint"], hidden=tuple(data["hidden"]), stats=data["stats"],
            )
            model.load_state_dict(data["state_dict"])
        except (KeyError, TypeError, ValueError, RuntimeError) as e:
            raise ValueError(f"{path}: damaged utility model file ({type(e).__name__}: {show(str(e), 200)})") from None
        model.check_finite(source=str(path))
        model.summary = dict(data.get("summary") or {})
        if domain is not None:
            model.check_domain(domain, source=str(path))
        model.eval()
        return model.to(device)

    def check_domain(self, domain: Domain | DomainTables, source: str = "model") -> None:
        """ValueError unless this model was trained on ``domain`` (same fingerprint and feature layout)."""
        d = domain.domain if isinstance(domain, DomainTables) else domain
        fp = fingerprint(d)
        if fp != self.domain_fingerprint:
            raise ValueError(
                f"{source}: this utility model was trained on domain '{self.domain_name}' "
                f"(fingerprint {self.domain_fingerprint}), not on domain '{d.name}' (fingerprint {fp})"
            )
        names = FeatureLayout.from_domain(domain).names
        if names != self.feature_names:
            raise ValueError(f"{source}: the model's feature layout does not match domain '{d.name}'")


def _check_fields(data: dict[str, Any], path: Path) -> None:
    """ValueError naming the first field of a model file that has the wrong type (before anything is built)."""
    expected: dict[str, tuple[type, ...]] = {
        "domain_name": (str,), "domain_fingerprint": (str,), "feature_names": (list, tuple), "n_state": (int,),
        "hidden": (list, tuple), "stats": (dict,), "state_dict": (dict,), "summary": (dict, type(None)),
    }
    for key, types in expected.items():
        if key == "summary" and key not in data:
            continue
        if key not in data:
            raise ValueError(f"{path}: damaged utility model file (no field '{key}')")
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, types):
            want = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise ValueError(f"{path}: damaged utility model file ('{key}' must be a {want}, got {show(value)})")
    if not all(isinstance(n, str) for n in data["feature_names"]):
        raise ValueError(f"{path}: damaged utility model file ('feature_names' must be strings)")
    if not all(isinstance(t, torch.Tensor) for t in data["state_dict"].values()):
        raise ValueError(f"{path}: damaged utility model file ('state_dict' must hold tensors only)")


def _plain(value: Any) -> Any:
    """A copy of ``value`` made of dicts, lists, str, int, float, bool and None only (safe for weights_only)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bool | str) or value is None:
        return value
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        f = float(value)
        return f if math.isfinite(f) else None
    return str(value)

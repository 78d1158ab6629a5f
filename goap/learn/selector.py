"""`UtilitySelector`: a `Brain` goal scorer that asks a `UtilityModel` about every agent x goal each tick.

Each tick the brain calls the selector; it reads ``brain.states`` (zero-copy into torch), builds the state
features of all N agents once, runs one batched forward pass over all N x G (agent, goal) pairs under
``torch.no_grad`` on its device, and returns float32 [N, G] scores::

    score[n, g] = priority[n, g] * P_feasible[n, g] ** alpha + beta * value[n, g] - gamma * cost[n, g]

- ``priority`` is ``brain.priorities`` (what the world says each goal is worth to each agent now);
- ``P_feasible`` the model's probability that planning ``g`` from the agent's state finds a plan; ``alpha``
  sets how hard a likely failure is punished (0: not at all, 1: expected priority, > 1: harder);
- ``value`` the model's expected reward per tick of pursuing ``g`` (0 when it would fail or be abandoned),
  weighted by ``beta``;
- ``cost`` the model's expected plan cost, weighted by ``gamma`` (in priority units per unit of cost).

With ``alpha = beta = gamma = 0`` the scores are the priorities: the brain behaves as without a scorer. The
brain still decides eligibility: a goal that holds, is cooling down or has priority <= 0 is never picked,
whatever it scores.

In a brain the selector is a *row scorer* (`score_rows`): each tick the brain compacts, on the device, the agents
that choose a goal afresh (no goal, or theirs holds) and, staggered by index, every ``every`` ticks each of the
others, and the selector runs only those rows through the model: gathered from the brain's arrays with torch
zero-copy views (on the CPU and on CUDA), one batched forward pass, scores written back into those rows of the
brain's score buffer. Called with the whole brain (``selector(brain)``) it scores every agent.

    brain = Brain(domain, n, world=world, goal_scorer=UtilitySelector.load("model.pt", domain))
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from goap.domain import Domain
from goap.encoding import DomainTables
from goap.learn import require_torch
from goap.learn.features import FeatureLayout, states_as_torch
from goap.learn.model import UtilityModel

if TYPE_CHECKING:
    from goap.runtime import Brain

torch = require_torch()

DEFAULT_ALPHA = 1.0
DEFAULT_BETA = 4.0
DEFAULT_GAMMA = 0.0
BACKENDS = ("auto", "warp", "torch")


class UtilitySelector:
    """Scores goals with a `UtilityModel`; pass it as ``Brain(..., goal_scorer=...)``. See the module docstring.

    Args:
        model: a model trained on ``domain`` (refused otherwise, ValueError).
        domain: the brain's domain (or its tables).
        alpha: exponent of P(plan found) on the priority (default 1).
        beta: weight of the expected reward per tick (default: the model's ``summary["beta"]``, which
            ``goap train --rounds`` sets, else 4).
        gamma: weight of the expected plan cost, subtracted (default: the model's ``summary["gamma"]``, else 0).
        device: torch device for the forward pass ("cpu", "cuda", "cuda:0", ...).
        keep_predictions: keep the last tick's predictions in ``last`` (numpy [N, G] each), for inspection.
        cache: run only the agents whose packed state changed since the last call through the model (the
            others' predictions cannot have changed); off: every agent every call.
        torch_threads: on a CPU device, torch's intra-op threads (``torch.set_num_threads``, process-wide); 1 by
            default because torch's pool competes with Warp's CPU planner threads for the same cores (measured:
            26.5 ms per village tick without the selector, 102 ms with torch's default threads, 15.1 ms with
            one); None leaves torch's setting alone.
        every: in a brain, each agent that pursues a goal is scored again every ``every`` ticks (staggered);
            agents choosing a goal afresh are scored on the tick they choose (see the module docstring).
        backend: how a brain runs the selector each tick: "warp" (the model exported as one Warp kernel on the
            brain's device, `goap.learn.fused`: captured with the tick, no torch call per tick), "torch" (the row
            scorer: torch on ``device``, between captured graphs), or "auto" (default): "warp" unless
            ``keep_predictions`` is on (which inspects the torch path) or a hidden layer is wider than the fused
            kernels (`goap.learn.fused.WIDTHS`). Measured at 2,000 village agents: see the README.
    """

    def __init__(
        self,
        model: UtilityModel,
        domain: Domain | DomainTables,
        alpha: float | None = None,
        beta: float | None = None,
        gamma: float | None = None,
        *,
        device: Any = "cpu",
        keep_predictions: bool = False,
        cache: bool = True,
        torch_threads: int | None = 1,
        every: int = 16,
        backend: str = "auto",
    ):
        learned = getattr(model, "summary", None) or {}  # the weights the model was trained in rounds with
        alpha = DEFAULT_ALPHA if alpha is None else alpha
        beta = float(learned.get("beta", DEFAULT_BETA)) if beta is None else beta
        gamma = float(learned.get("gamma", DEFAULT_GAMMA)) if gamma is None else gamma
        for name, v in (("alpha", alpha), ("beta", beta), ("gamma", gamma)):
            if not np.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {v}")
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            raise ValueError(f"every must be an integer >= 1, got {every!r}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        self.every = every
        model.check_domain(domain)
        model.check_finite()
        self.layout = FeatureLayout.from_domain(domain)
        self.device = torch.device(device)
        if torch_threads is not None:
            if not isinstance(torch_threads, int) or torch_threads < 1:
                raise ValueError(f"torch_threads must be an integer >= 1 or None, got {torch_threads!r}")
            if self.device.type == "cpu":
                torch.set_num_threads(torch_threads)
        self.model = model.to(self.device).eval()
        self._fused: dict[str, Any] = {}  # Warp device -> goap.learn.fused.FusedScorer
        self._alpha, self._beta, self._gamma = float(alpha), float(beta), float(gamma)
        self.keep_predictions = keep_predictions
        self.last: dict[str, np.ndarray] = {}
        self.last_rows = np.zeros(0, dtype=np.int64)
        self.cache = cache
        self.calls = 0
        self.seconds = 0.0
        self._rows_torch = 0  # agents the torch path ran through the model
        self._prev: np.ndarray | None = None
        self._cached: tuple[torch.Tensor, torch.Tensor, torch.Tensor] = ()  # type: ignore[assignment]
        self._tables = self.layout.torch_tables(self.device)
        from goap.learn.fused import width_for

        fits = width_for(model.hidden) is not None
        if backend == "warp" and not fits:
            raise ValueError(f"backend 'warp': no fused kernel for a hidden layer of {max(model.hidden)} units")
        self.backend = backend if backend != "auto" else ("warp" if fits and not keep_predictions else "torch")
        if self.backend != "warp":
            self.launch_scores = None  # the brain then calls score_rows (a host step)

    # --- the weights of the score: on the device too, so captured ticks read their current values ------------
    @property
    def alpha(self) -> float:
        return self._alpha

    @alpha.setter
    def alpha(self, v: float) -> None:
        self._set_weight("alpha", v)

    @property
    def beta(self) -> float:
        return self._beta

    @beta.setter
    def beta(self, v: float) -> None:
        self._set_weight("beta", v)

    @property
    def gamma(self) -> float:
        return self._gamma

    @gamma.setter
    def gamma(self, v: float) -> None:
        self._set_weight("gamma", v)

    def _set_weight(self, name: str, v: float) -> None:
        if not np.isfinite(v) or v < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {v}")
        setattr(self, f"_{name}", float(v))
        for fused in self._fused.values():
            fused.set_params(self._alpha, self._beta, self._gamma, self.model.stats)

    @property
    def rows_predicted(self) -> int:
        """Agents run through the model (at least one goal predicted), all calls together, both paths (the fused
        path's count is read from the device)."""
        return self._rows_torch + sum(int(f.predicted.numpy().sum()) for f in self._fused.values())

    @classmethod
    def load(
        cls, path: str | Path, domain: Domain | DomainTables, device: Any = "cpu", **kwargs: Any
    ) -> UtilitySelector:
        """A selector for a model file (`UtilityModel.load`: refused for another domain or a damaged file)."""
        return cls(UtilityModel.load(path, domain, device=device), domain, device=device, **kwargs)

    def predictions(self, states: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(P(plan found), expected cost, expected value), each [N, G] on the device, for packed states [N, W].

        With ``cache`` on, only the agents whose packed state changed since the last call are run through the
        model; the others keep their predictions (a state's predictions depend on nothing else).
        """
        n = len(states)
        with torch.no_grad():
            rows = None
            if self.cache and self._prev is not None and self._prev.shape == states.shape:
                rows = np.flatnonzero((states != self._prev).any(axis=1))
                if len(rows) == 0:
                    return self._cached
                if len(rows) > n // 2:
                    rows = None
            sub = states if rows is None else states[rows]
            st = states_as_torch(sub).to(self.device, non_blocking=True)
            raw = self.model.forward_grid(self.layout.state_features_torch(st, self._tables))
            p, cost, value = self.model.decode(raw)
            if rows is not None:
                idx = torch.from_numpy(rows).to(self.device)
                for full, part in zip(self._cached, (p, cost, value), strict=True):
                    full[idx] = part
                p, cost, value = self._cached
            if self.cache:
                self._prev = np.array(states, dtype=np.uint64, copy=True)
                self._cached = (p, cost, value)
            self._rows_torch += len(sub)
        return p, cost, value

    def scores(self, states: np.ndarray, priorities: np.ndarray) -> np.ndarray:
        """float32 [N, G] scores for packed states uint64 [N, W] and priorities [N, G]."""
        t0 = time.perf_counter()
        n, g = priorities.shape
        if len(states) != n or g != self.layout.n_goals:
            raise ValueError(
                f"expected states [{n}, W] and priorities [N, {self.layout.n_goals}], got {states.shape} and "
                f"{priorities.shape}"
            )
        with torch.no_grad():
            p, cost, value = self.predictions(np.asarray(states, dtype=np.uint64))
            prio = torch.from_numpy(np.ascontiguousarray(priorities, dtype=np.float32)).to(self.device)
            score = prio * p.pow(self.alpha) if self.alpha != 1.0 else prio * p
            if self.beta:
                score = score + self.beta * value
            if self.gamma:
                score = score - self.gamma * cost
            out = score.cpu().numpy().astype(np.float32, copy=False)
            if self.keep_predictions:
                self.last = {"p_feasible": p.cpu().numpy().copy(), "cost": cost.cpu().numpy().copy(),
                             "value": value.cpu().numpy().copy(), "score": out}
        self.calls += 1
        self.seconds += time.perf_counter() - t0
        return out

    def __call__(self, brain: Brain) -> np.ndarray:
        return self.scores(_host(brain.states), _host(brain.priorities))

    def score_rows(self, brain: Brain, rows: Any) -> torch.Tensor:
        """float32 [len(rows), G] scores of the agents ``rows`` (a device int32 Warp array of the brain's), with
        their priorities now: ``priority * mult + add`` of `score_factors`."""
        mult, add = self.score_factors(brain, rows)
        idx = self._row_index(rows)
        prio = _torch_view(brain.priorities).index_select(0, idx).to(self.device)
        return (prio * mult + add).float().contiguous()

    def score_factors(self, brain: Brain, rows: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """The torch path's row scorer: (factor, term), each float32 [len(rows), G], for the agents ``rows`` (a
        device int32 Warp array of the brain's): their packed states are gathered through zero-copy torch views of
        the brain's arrays and run through the model in one batch on the selector's device; ``factor = P ** alpha``
        and ``term = beta * value - gamma * cost``, which the brain combines with each tick's priorities
        (``priority * factor + term``, `goap.kernels.tick.decide`). With ``cache`` on, each agent's predictions are
        kept and only the rows whose packed state changed since that agent's last prediction are run through the
        model. ``last_rows`` keeps the rows scored when ``keep_predictions`` is on."""
        import warp as wp

        t0 = time.perf_counter()
        with torch.no_grad():
            idx = self._row_index(rows)
            states = wp.to_torch(brain.states.view(wp.int64)).index_select(0, idx).to(self.device)
            p, cost, value = self._row_predictions(brain, idx.to(self.device), states)
            mult = p.pow(self.alpha) if self.alpha != 1.0 else p
            add = torch.zeros_like(p)
            if self.beta:
                add = add + self.beta * value
            if self.gamma:
                add = add - self.gamma * cost
            if self.keep_predictions:
                prio = _torch_view(brain.priorities).index_select(0, idx).to(self.device)
                self.last_rows = idx.cpu().numpy().copy()
                self.last = {"p_feasible": p.cpu().numpy().copy(), "cost": cost.cpu().numpy().copy(),
                             "value": value.cpu().numpy().copy(), "score": (prio * mult + add).cpu().numpy()}
        self.calls += 1
        self.seconds += time.perf_counter() - t0
        return mult.float().contiguous(), add.float().contiguous()

    @staticmethod
    def _row_index(rows: Any) -> torch.Tensor:
        import warp as wp

        return wp.to_torch(rows).long()

    def launch_scores(self, brain: Brain, *, rows: Any, count: Any, dim: int, mult: Any, add: Any, goals: Any,
                      rules: Any, every: int | None = None) -> None:
        """The fused path (``backend="warp"``): launch the scoring kernel into the brain's score buffers ``mult``
        and ``add``, device work only (captured with the tick): for the agents ``rows[:count[0]]`` (``dim``
        threads), or with ``rows=None`` for those of the brain's ``dim`` agents due this tick
        (`goap.kernels.tick.scoring_due`, every ``every`` ticks, default ``self.every``), tested in the kernel. The
        model's weights are copied to the brain's device on the first call there (outside a capture: a brain's
        first tick runs plain)."""
        from goap.learn.fused import FusedScorer

        key = str(brain.device)
        fused = self._fused.get(key)
        if fused is None:
            fused = self._fused[key] = FusedScorer(self.model, self.layout, brain.device)
            fused.set_params(self._alpha, self._beta, self._gamma, self.model.stats)
        t0 = time.perf_counter()
        fused.launch(brain, rows, count, dim, mult, add, goals, rules, cache=self.cache,
                     every=self.every if every is None else every)
        self.calls += 1
        self.seconds += time.perf_counter() - t0

    def _row_predictions(self, brain: Brain, idx: torch.Tensor, states: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """(P, cost, value) [k, G] for agents ``idx`` in ``states``; see `score_rows` for the cache."""
        n, G = brain.n_agents, self.layout.n_goals
        if not self.cache:
            self._rows_torch += int(idx.shape[0])
            return self.model.decode(self.model.forward_grid(self.layout.state_features_torch(states, self._tables)))
        key = (id(brain), n, states.shape[1])
        if getattr(self, "_rows_key", None) != key:  # per-agent predictions, and the state each was made for
            self._rows_key = key
            self._rows_state = torch.full((n, states.shape[1]), -1, dtype=torch.int64, device=self.device)
            self._rows_known = torch.zeros(n, dtype=torch.bool, device=self.device)
            self._rows_pred = torch.zeros((3, n, G), dtype=torch.float32, device=self.device)
        stale = ~self._rows_known[idx] | (self._rows_state[idx] != states).any(dim=1)
        todo = idx[stale]
        if todo.numel():
            raw = self.model.forward_grid(self.layout.state_features_torch(states[stale], self._tables))
            for k, part in enumerate(self.model.decode(raw)):
                self._rows_pred[k, todo] = part
            self._rows_state[todo] = states[stale]
            self._rows_known[todo] = True
            self._rows_torch += int(todo.numel())
        pred = self._rows_pred[:, idx]
        return pred[0], pred[1], pred[2]

    def __repr__(self) -> str:
        return (f"UtilitySelector(domain={self.model.domain_name!r}, alpha={self.alpha}, beta={self.beta}, "
                f"gamma={self.gamma}, device={str(self.device)!r}, backend={self.backend!r})")


def _torch_view(a: Any) -> torch.Tensor:
    import warp as wp

    return wp.to_torch(a)


def _host(a: Any) -> np.ndarray:
    """A brain array as numpy: a Warp array's host view (zero-copy on the CPU device), else ``np.asarray``."""
    return a if isinstance(a, np.ndarray) else (a.numpy() if hasattr(a, "numpy") else np.asarray(a))

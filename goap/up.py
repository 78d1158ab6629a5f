"""The planner as a Unified Planning engine: ``OneshotPlanner(name="warp-goap")``.

Unified Planning (``pip install "warp-goap[up]"``) reaches its planners through engines, each a class the
environment's factory knows by name. The factory's list of names is fixed in UP's source (the ``up-*``
packages of its own project are in it) plus whatever is added with ``factory.add_engine`` or an ``up.ini``
file; it reads no entry points. So the engine is registered by one call::

    import goap.up
    goap.up.register()  # = get_environment().factory.add_engine("warp-goap", "goap.up", "WarpGoapEngine")

    from unified_planning.shortcuts import OneshotPlanner
    with OneshotPlanner(name="warp-goap") as planner:
        result = planner.solve(problem)

or, without code, by an ``up.ini`` (in the working folder or a parent, or ``~/.up.ini``)::

    [engine warp-goap]
    module_name: goap.up
    class_name: WarpGoapEngine

How a problem is planned: UP's own `PDDLWriter` writes the problem as PDDL, `goap.pddl.parse_task` reads,
grounds and compiles those texts (the importer's public entry point, the same path as ``goap solve``), a goap
planner searches it, and each step of the plan found is mapped back to the UP action and objects through the
writer's ``get_item_named`` (PDDL names are lower-cased and sanitised; the writer knows the originals). Going
through UP's writer, rather than walking UP's expression trees here, keeps one importer in the project: what
it accepts (and refuses, naming the construct) is what this engine accepts.

The problem kinds accepted are `SUPPORTED_FEATURES`, exactly what the importer reads (classical STRIPS with
typing, negative conditions, equality, conditional effects, action costs); ``supports(kind)`` refuses everything
else, so UP's own checks (``OneshotPlanner(problem_kind=...)``, ``solve`` on an unsupported problem) say so
before any work.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

try:
    import unified_planning as up
    from unified_planning.engines import Credits, Engine, PlanGenerationResult, PlanGenerationResultStatus
    from unified_planning.engines.mixins.anytime_planner import AnytimeGuarantee, AnytimePlannerMixin
    from unified_planning.engines.mixins.oneshot_planner import OneshotPlannerMixin, OptimalityGuarantee
    from unified_planning.engines.results import LogLevel, LogMessage
    from unified_planning.model import ProblemKind
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'goap.up needs Unified Planning: pip install "warp-goap[up]" (or pip install unified-planning)'
    ) from e

#: The engines' names in UP's factory (``OneshotPlanner(name=ENGINE_NAME)``, ``AnytimePlanner(name=...)``).
ENGINE_NAME = "warp-goap"
ANYTIME_ENGINE_NAME = "warp-goap-anytime"

#: The UP problem features the PDDL importer (`goap.pddl`) reads: the one place to widen when it reads more
#: (conditional effects: add ``"CONDITIONAL_EFFECTS"`` here once `goap.pddl` grounds them).
SUPPORTED_FEATURES = frozenset({
    "ACTION_BASED",  # PROBLEM_CLASS
    "FLAT_TYPING", "HIERARCHICAL_TYPING",  # TYPING
    "NEGATIVE_CONDITIONS", "EQUALITIES",  # CONDITIONS_KIND
    "CONDITIONAL_EFFECTS",  # EFFECTS_KIND: the importer keeps them (goap.domain.When), both planners plan with them
    "ACTIONS_COST", "PLAN_LENGTH",  # QUALITY_METRICS: both minimised by a cost-optimal search
    "STATIC_FLUENTS_IN_ACTIONS_COST", "INT_NUMBERS_IN_ACTIONS_COST", "REAL_NUMBERS_IN_ACTIONS_COST",
})

#: Defaults of the search, the same as ``goap bench --suite pddl``'s (`goap.bench.cli`): A* with LM-cut,
#: node pools escalating up to the planner's ceiling, plans up to 256 steps.
DEFAULT_PLANNER = "warp"
DEFAULT_MAX_NODES = 1_000_000
DEFAULT_MAX_PLAN_LENGTH = 256

#: goap planners whose plans are optimal with an admissible heuristic (every goap heuristic is admissible).
_OPTIMAL_PLANNERS = ("warp", "reference")


def supported_kind() -> ProblemKind:
    """`SUPPORTED_FEATURES` as a UP `ProblemKind`."""
    return ProblemKind(SUPPORTED_FEATURES, version=up.model.problem_kind_versioning.LATEST_PROBLEM_KIND_VERSION)


def register(environment: Any = None) -> None:
    """Make ``OneshotPlanner(name="warp-goap")`` and ``AnytimePlanner(name="warp-goap-anytime")`` work in
    ``environment`` (UP's global one by default).

    Idempotent: a second call (or an ``up.ini`` that named the engine already) changes nothing.
    """
    env = environment if environment is not None else up.environment.get_environment()
    for name, cls in ((ENGINE_NAME, "WarpGoapEngine"), (ANYTIME_ENGINE_NAME, "WarpGoapAnytimeEngine")):
        if name not in env.factory.engines:
            env.factory.add_engine(name, __name__, cls)


class _WarpGoapBase(Engine):
    """What the one-shot and the anytime engine share: parameters, kinds, credits, the import and one search."""

    _engine_name = ENGINE_NAME

    def __init__(
        self, planner: str = DEFAULT_PLANNER, heuristic: str = "lmcut", weight: float | None = None,
        max_nodes: int = DEFAULT_MAX_NODES, max_plan_length: int = DEFAULT_MAX_PLAN_LENGTH,
        device: str | None = None, **kwargs: Any,
    ) -> None:
        Engine.__init__(self)
        from goap.planners.base import PLANNERS, check_options

        if planner not in PLANNERS:
            raise up.exceptions.UPUsageError(f"{self._engine_name}: unknown planner {planner!r} (known: "
                                             f"{', '.join(sorted(PLANNERS))})")
        try:
            check_options(max_nodes, max_plan_length, 1.0 if weight is None else weight, heuristic)
        except ValueError as e:
            raise up.exceptions.UPUsageError(f"{self._engine_name}: {e}") from None
        if kwargs:
            raise up.exceptions.UPUsageError(
                f"{self._engine_name}: unknown parameter(s) {', '.join(sorted(kwargs))}")
        self.planner = planner
        self.heuristic = heuristic
        self.weight = weight
        self.max_nodes = int(max_nodes)
        self.max_plan_length = int(max_plan_length)
        self.device = device

    @property
    def name(self) -> str:
        return self._engine_name

    @staticmethod
    def supported_kind() -> ProblemKind:
        return supported_kind()

    @staticmethod
    def supports(problem_kind: ProblemKind) -> bool:
        return problem_kind <= supported_kind()

    @staticmethod
    def get_credits(**kwargs: Any) -> Credits | None:
        return Credits(
            ENGINE_NAME, "the warp-goap project", "", "", "Apache-2.0",
            "Batched A* (LM-cut) in NVIDIA Warp kernels, on the GPU or every CPU core.",
            "Goal-oriented action planning engine for game AI; classical STRIPS PDDL through its importer.",
        )

    @property
    def optimal(self) -> bool:
        """Whether a plan this configuration returns is cost-optimal."""
        return _is_optimal(self.planner, self.weight)

    def _failed(self, f: _Failed, logs: list[LogMessage], t0: float) -> PlanGenerationResult:
        logs.append(LogMessage(LogLevel.ERROR, f.message))
        metrics = {"engine_internal_time": f"{time.perf_counter() - t0:.6f}"}
        return PlanGenerationResult(f.status, None, self.name, metrics=metrics, log_messages=logs)

    def _prepare(self, problem: Any, timeout: float | None) -> tuple[Any, Any]:
        """(UP's PDDL writer for the problem, the grounded `goap.pddl.PddlTask`); `_Failed` when it cannot be."""
        from goap.pddl import GroundingLimits, PddlError, parse_task

        Result = PlanGenerationResultStatus
        # UP's solve() checks the kind unless told to skip the checks or only to warn; this engine cannot plan
        # what the importer does not read either way, so it says which features those are.
        extra = sorted(set(problem.kind.features) - SUPPORTED_FEATURES)
        if extra:
            raise _Failed(Result.UNSUPPORTED_PROBLEM, f"{ENGINE_NAME} does not support {', '.join(extra)}")
        writer = up.io.PDDLWriter(problem)
        try:
            domain_text, problem_text = writer.get_domain(), writer.get_problem()
        except Exception as e:  # the writer's own failure on a problem it cannot express, in UP's words
            raise _Failed(Result.UNSUPPORTED_PROBLEM, f"UP's PDDL writer cannot write this problem: "
                                                      f"{type(e).__name__}: {e}") from None
        limits = GroundingLimits(seconds=timeout if timeout else GroundingLimits.seconds)
        try:
            task = parse_task(domain_text, problem_text, problem.name or "problem", limits=limits)
        except PddlError as e:
            text = str(e)
            if "took more than" in text:
                raise _Failed(Result.TIMEOUT, text) from None
            if "raise the" in text and "limit" in text:
                raise _Failed(Result.MEMOUT, text) from None
            raise _Failed(Result.UNSUPPORTED_PROBLEM, f"the goap importer refused the problem: {text}") from None
        return writer, task

    def _search(
        self, problem: Any, writer: Any, task: Any, planner_name: str, weight: float | None, timeout: float | None,
        logs: list[LogMessage], t0: float, output_stream: IO[str] | None,
    ) -> PlanGenerationResult:
        """One search of the grounded task with ``planner_name`` (``weight`` for the weighted one), within what
        is left of ``timeout`` since ``t0``; the result as UP states it."""
        import numpy as np

        from goap.pddl.validate import goap_step
        from goap.planners import make_planner
        from goap.planners.base import Status
        from goap.problems import TimeUp, deadline

        Result = PlanGenerationResultStatus
        options: dict[str, Any] = {"max_nodes": self.max_nodes, "max_plan_length": self.max_plan_length,
                                   "heuristic": self.heuristic}
        if weight is not None:
            options["weight"] = weight
        if planner_name != "reference":
            options.update(device=self.device, chunk_size=1)  # one search: scratch for one agent, not 16
        try:
            planner = make_planner(planner_name, task.domain, **options)
        except (TypeError, ValueError) as e:
            raise _Failed(Result.INTERNAL_ERROR, f"cannot make planner {planner_name!r}: {e}") from None
        if hasattr(planner, "load"):
            planner.load()
        left = None if not timeout else max(1e-3, timeout - (time.perf_counter() - t0))
        t_search = time.perf_counter()
        try:
            with deadline(left) if left else contextlib.nullcontext():
                batch = planner.plan(planner.tables.pack(task.state)[None], np.array([task.goal], dtype=np.int32))
        except TimeUp:
            batch = None
        finally:
            close = getattr(planner, "close", None)
            if callable(close):
                close()
        search_s = time.perf_counter() - t_search
        total_s = time.perf_counter() - t0
        metrics = {
            "engine_internal_time": f"{total_s:.6f}", "search_time": f"{search_s:.6f}",
            "ground_time": f"{task.ground_seconds:.6f}", "n_facts": str(task.n_facts),
            "n_actions": str(task.n_actions), "planner": planner_name, "heuristic": self.heuristic,
        }
        if weight is not None:
            metrics["weight"] = f"{weight:g}"
        if batch is None or (timeout and total_s > timeout):
            return PlanGenerationResult(Result.TIMEOUT, None, self.name, metrics=metrics, log_messages=list(logs))
        status = Status(int(batch.status[0]))
        metrics["expansions"] = str(int(batch.expanded[0]))
        if status in (Status.OK, Status.SATISFIED):
            actions = [self._instance(writer, goap_step(n)) for n in batch.plan_names(0, task.domain)]
            cost = float(batch.cost[0])
            metrics["cost"] = f"{cost:g}" if math.isfinite(cost) else "0"
            plan = up.plans.SequentialPlan(actions, problem.environment)
            verdict = Result.SOLVED_OPTIMALLY if _is_optimal(planner_name, weight) else Result.SOLVED_SATISFICING
            if output_stream is not None:
                output_stream.write(f"{self.name}: {planner_name} {status.label}, {len(actions)} steps, cost "
                                    f"{metrics['cost']}, {metrics['expansions']} expansions, {total_s:.3f} s\n")
            return PlanGenerationResult(verdict, plan, self.name, metrics=metrics, log_messages=list(logs))
        out_logs = list(logs)
        if status == Status.NO_PLAN:  # the reachable space was exhausted: A* and weighted A* are complete
            verdict = Result.UNSOLVABLE_PROVEN if planner_name != "warp-greedy" else Result.UNSOLVABLE_INCOMPLETELY
        elif status == Status.BUDGET:
            out_logs.append(LogMessage(LogLevel.INFO, "every node pool filled up (raise max_nodes)"))
            verdict = Result.MEMOUT
        else:  # TOO_LONG: a plan exists, longer than max_plan_length
            out_logs.append(LogMessage(LogLevel.INFO, f"the plan found has {int(batch.length[0])} steps, more "
                                                      f"than max_plan_length={self.max_plan_length}"))
            verdict = Result.UNSOLVABLE_INCOMPLETELY
        return PlanGenerationResult(verdict, None, self.name, metrics=metrics, log_messages=out_logs)

    @staticmethod
    def _instance(writer: Any, step: tuple[str, tuple[str, ...]]) -> Any:
        """The UP action instance of one grounded step, through the names the writer chose."""
        name, args = step
        action = writer.get_item_named(name)
        return up.plans.ActionInstance(action, tuple(writer.get_item_named(a) for a in args))


def _is_optimal(planner: str, weight: float | None) -> bool:
    return planner in _OPTIMAL_PLANNERS and (weight is None or weight == 1)


class WarpGoapEngine(_WarpGoapBase, OneshotPlannerMixin):
    """A goap planner on a UP problem (``OneshotPlanner(name="warp-goap")``): A* with LM-cut by default.

    Engine parameters (``OneshotPlanner(name="warp-goap", params={...})``), taken as keywords:

        planner: a goap planner name (``warp``, ``reference``, ``warp-wastar``, ``warp-greedy``).
        heuristic: ``lmcut`` (default), ``hmax``, ``hmax_depth2`` or ``hmax_depth1``.
        weight: for ``warp-wastar``: plans within ``weight`` x the optimal cost.
        max_nodes: the first node pool (states); pools escalate from there.
        max_plan_length: the longest plan returned; a longer optimal plan is ``UNSOLVABLE_INCOMPLETELY``.
        device: the Warp device (``cpu``, ``cuda:0``); Warp's default when None.
    """

    def __init__(self, **params: Any) -> None:
        _WarpGoapBase.__init__(self, **params)
        OneshotPlannerMixin.__init__(self)

    @staticmethod
    def satisfies(optimality_guarantee: OptimalityGuarantee) -> bool:
        # The default configuration (A* + LM-cut, admissible) is optimal; a weighted or greedy planner chosen by
        # parameter says SOLVED_SATISFICING in its results.
        return optimality_guarantee in (OptimalityGuarantee.SATISFICING, OptimalityGuarantee.SOLVED_OPTIMALLY)

    def _solve(
        self, problem: Any, heuristic: Callable[[Any], float | None] | None = None, timeout: float | None = None,
        output_stream: IO[str] | None = None,
    ) -> PlanGenerationResult:
        logs: list[LogMessage] = []
        if heuristic is not None:
            logs.append(LogMessage(LogLevel.WARNING, f"{ENGINE_NAME} ignores a user heuristic: it uses "
                                                     f"its own ({self.heuristic})"))
        t0 = time.perf_counter()
        try:
            writer, task = self._prepare(problem, timeout)
            return self._search(problem, writer, task, self.planner, self.weight, timeout, logs, t0, output_stream)
        except _Failed as f:
            return self._failed(f, logs, t0)


#: The anytime engine's default weights: weighted A* at 5, then 2, then A* (weight 1), the last plan optimal.
DEFAULT_WEIGHTS = (5.0, 2.0, 1.0)


class WarpGoapAnytimeEngine(_WarpGoapBase, AnytimePlannerMixin):
    """Plans of decreasing cost (``AnytimePlanner(name="warp-goap-anytime")``): weighted A* with each of
    ``weights`` in turn on one grounding, a result for every plan cheaper than the ones before.

    Every plan but the last is ``INTERMEDIATE``; a search at weight 1 ends the stream with ``SOLVED_OPTIMALLY``
    (A* with LM-cut). A weighted search returns a plan within ``weight`` x the optimum, usually after far fewer
    expansions, so a caller with a deadline has a plan early. When the time runs out after a plan was found, the
    last result is ``TIMEOUT`` carrying the cheapest plan found.

    Engine parameters (``params={...}``), taken as keywords:

        weights: strictly decreasing, each a finite number >= 1 (default 5, 2, 1).
        heuristic, max_nodes, max_plan_length, device: as for `WarpGoapEngine`.
    """

    _engine_name = ANYTIME_ENGINE_NAME

    def __init__(self, weights: Any = DEFAULT_WEIGHTS, **params: Any) -> None:
        for key in ("planner", "weight"):
            if key in params:
                raise up.exceptions.UPUsageError(f"{ANYTIME_ENGINE_NAME}: takes weights, not {key}")
        try:
            ws = [float(w) for w in weights]
        except (TypeError, ValueError):
            ws = []
        decreasing = all(a > b for a, b in zip(ws, ws[1:], strict=False))
        if not ws or any(not math.isfinite(w) or w < 1 for w in ws) or not decreasing:
            raise up.exceptions.UPUsageError(f"{ANYTIME_ENGINE_NAME}: weights must be strictly decreasing finite "
                                             f"numbers >= 1, got {weights!r}")
        _WarpGoapBase.__init__(self, planner="warp", **params)
        AnytimePlannerMixin.__init__(self)
        self.weights = tuple(ws)

    @staticmethod
    def ensures(anytime_guarantee: AnytimeGuarantee) -> bool:
        return anytime_guarantee == AnytimeGuarantee.INCREASING_QUALITY

    def _get_solutions(
        self, problem: Any, timeout: float | None = None, output_stream: IO[str] | None = None,
    ) -> Iterator[PlanGenerationResult]:
        Result = PlanGenerationResultStatus
        logs: list[LogMessage] = []
        t0 = time.perf_counter()
        try:
            writer, task = self._prepare(problem, timeout)
        except _Failed as f:
            yield self._failed(f, logs, t0)
            return
        best: PlanGenerationResult | None = None
        for w in self.weights:
            planner, weight = ("warp", None) if w == 1 else ("warp-wastar", w)
            try:
                res = self._search(problem, writer, task, planner, weight, timeout, logs, t0, output_stream)
            except _Failed as f:
                yield self._failed(f, logs, t0)
                return
            if res.status == Result.SOLVED_OPTIMALLY:
                yield res
                return
            if res.status == Result.SOLVED_SATISFICING:
                if best is None or float(res.metrics["cost"]) < float(best.metrics["cost"]):
                    best = res
                    yield PlanGenerationResult(Result.INTERMEDIATE, res.plan, self.name, metrics=res.metrics,
                                               log_messages=res.log_messages)
                continue
            if res.status == Result.TIMEOUT and best is not None:
                logs.append(LogMessage(LogLevel.INFO, f"out of time at weight {w:g}; the cheapest plan found "
                                                      f"costs {best.metrics['cost']}"))
                yield PlanGenerationResult(Result.TIMEOUT, best.plan, self.name, metrics=best.metrics,
                                           log_messages=list(logs))
                return
            yield res  # unsolvable, out of memory, out of time before any plan: final
            return
        if best is not None:  # the last weight was above 1: the cheapest plan, not known to be optimal
            yield PlanGenerationResult(Result.SOLVED_SATISFICING, best.plan, self.name, metrics=best.metrics,
                                       log_messages=best.log_messages)


class _Failed(Exception):
    """A result without a plan that ends the solve early (bad problem, limits), with its UP status."""

    def __init__(self, status: PlanGenerationResultStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

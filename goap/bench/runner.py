"""Running planners on problem batches: timing, limits and validation, one row of results per problem.

Honest numbers, as a planning researcher reads them:

* ``seconds`` is the search alone; ``ground_seconds`` the PDDL parsing and grounding of that task; their sum
  is ``total_seconds``, what the IPC agile score and the cactus plot use. For an external planner,
  ``total_seconds`` is the process's wall time (its own translation included). ``setup_seconds`` (compiling or
  loading kernels, warming the scratch) is paid once per planner and batch and reported apart.
* ``timing`` says what ``seconds`` is: ``solo`` (the problem was planned alone), ``batch/n`` (a batched planner
  planned the whole group in one call; each row holds the call's time divided by its problems, never presented
  as a per-problem measurement), or ``process`` (an external planner's wall time).
* The time limit holds for every planner and for the whole task: parsing, grounding, encoding and search all
  count (compiling or loading the kernels does not). An isolated goap planner (the default for PDDL) runs in a
  worker process that tells its parent each phase as it enters it (``parse``, ``ground``, ``encode``,
  ``search``); the parent kills it at the limit whatever it is doing, and the ``timeout`` row's ``phase`` says
  where it was. In process, grounding stops at its own deadline (the limit), the reference planner is
  interrupted (SIGALRM), an external planner is killed, and a Warp search (one launch, which cannot be stopped)
  that ends after the limit is reported as ``timeout`` all the same, its real outcome kept in ``late_status``.
* Every plan, ours included, is replayed by the project's validator (`goap.pddl.validate` on the lifted PDDL
  task; `goap.domain.Domain.replay` with the problem's costs and enabled actions otherwise). ``valid`` is True,
  False (with ``invalid_reason``) or None (no plan); a solved row whose plan is invalid counts as unsolved.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from goap.bench.suites import PddlRecipe, ProblemBatch, Recipe
from goap.problems import TimeUp, deadline

SOLVED = ("ok", "satisfied")
#: Options that change only how fast or in how much memory a planner works, not what it computes: they do not
#: change a row's planner label. Every other option (weight, heuristic, ...) does.
RESOURCE_OPTIONS = frozenset({
    "chunk_size", "max_scratch_bytes", "growth", "node_ceiling", "threads", "max_escalated_nodes", "device",
})
_POSITIVE_INT_OPTIONS = ("chunk_size", "max_scratch_bytes", "growth", "node_ceiling", "threads",
                         "max_escalated_nodes")


@dataclass(frozen=True)
class PlannerConfig:
    """One column of a comparison: a goap planner with options, or an external planner."""

    name: str  # the registry name (warp) or the external planner's name (fd-lmcut)
    options: dict[str, Any] = field(default_factory=dict)
    external: Any = None  # goap.bench.external.ExternalPlanner
    #: PDDL: the form the task is planned in (`goap.pddl.TRANSLATIONS`); None: `goap.pddl.DEFAULT_TRANSLATION`.
    translate: str | None = None

    @property
    def label(self) -> str:
        """``warp``, or ``warp[weight=5]`` when an option changes what the planner computes (``translate=strips``
        when the task's form was chosen)."""
        algo = {k: v for k, v in sorted(self.options.items()) if k not in RESOURCE_OPTIONS}
        if self.translate is not None:
            algo["translate"] = self.translate
        if not algo:
            return self.name
        return f"{self.name}[{','.join(f'{k}={_short(v)}' for k, v in algo.items())}]"


def _short(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


@dataclass(frozen=True)
class Settings:
    """What every planner of a run shares."""

    max_nodes: int
    max_plan_length: int
    time_limit: float | None = 60.0
    memory_limit: int | None = None  # bytes, for external planners
    device: str | None = None
    solo: bool = False
    keep_plans: bool = True
    isolate: bool = False  # run goap planners in a child process that is killed at the limit (see `Workers`)


def check_options(options: dict[str, Any]) -> None:
    """Refuse resource options of the wrong type before any planner is built (``chunk_size="abc"``)."""
    for key in _POSITIVE_INT_OPTIONS:
        if key in options:
            v = options[key]
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"--planner-option {key}: expected a positive integer, got {v!r}")
    if "weight" in options:
        w = options["weight"]
        if isinstance(w, bool) or not isinstance(w, int | float) or not 1 <= w < math.inf:
            raise ValueError(f"--planner-option weight: expected a finite number >= 1, got {w!r}")


# --- one recipe, every planner -------------------------------------------------------------------------------
def run_recipe(recipe: Recipe, planners: list[PlannerConfig], settings: Settings) -> list[dict[str, Any]]:
    """Load one recipe (grounding it, for PDDL) and run every planner on it; rows in planner order.

    A task that cannot be grounded (a bound, a deadline, an unsupported construct) gives rows with status
    ``error`` (``timeout`` for the grounding deadline) and the message, for goap planners; external planners
    still run on its files, and their plans are still validated on the lifted task.
    """
    internal = [c for c in planners if c.external is None]
    if settings.isolate and internal:
        return _run_isolated(recipe, planners, settings)
    batch: ProblemBatch | None = None
    failure: str | None = None
    t0 = time.perf_counter()
    global _task_started, _paused
    _task_started, _paused = t0, 0.0
    form = internal[0].translate if internal else None
    try:
        if internal:
            batch = _load(recipe, form)
    except ValueError as e:  # PddlError is a DomainError is a ValueError
        failure = str(e)
    ground_failed_s = time.perf_counter() - t0
    lifted = None
    if isinstance(recipe, PddlRecipe):
        try:
            lifted = recipe.lifted() if batch is None else (batch.tasks[0].lifted, batch.tasks[0].problem)
        except ValueError:
            lifted = None
    rows: list[dict[str, Any]] = []
    for config in planners:
        if config.external is None and config.translate != form:  # another form of the task: load it anew
            form, batch, failure = config.translate, None, None
            _task_started, _paused = time.perf_counter(), 0.0
            try:
                batch = _load(recipe, form)
            except ValueError as e:
                failure = str(e)
            ground_failed_s = time.perf_counter() - _task_started
        if config.external is not None:
            rows += _run_external(config, recipe, batch, lifted, settings)
        elif batch is None:
            late = bool(failure and "grounding took more than" in failure)
            for pid in recipe.ids:
                rows.append(_row(recipe.suite, recipe.group, pid, config, status="timeout" if late else "error",
                                 error=failure, phase="ground" if late else None, ground_seconds=ground_failed_s,
                                 total_seconds=ground_failed_s, timing="solo"))
        else:
            rows += _run_internal(config, batch, lifted, settings)
    _fill_optimal(rows, recipe, batch)
    return rows


def _load(recipe: Recipe, translate: str | None) -> ProblemBatch:
    """The recipe's batch; a PDDL task in the form ``translate`` (None: the default)."""
    if translate is not None and isinstance(recipe, PddlRecipe):
        return recipe.load(translate)
    return recipe.load()


def _run_isolated(recipe: Recipe, planners: list[PlannerConfig], settings: Settings) -> list[dict[str, Any]]:
    """`run_recipe` with every goap planner in its worker process (external planners are processes already)."""
    from dataclasses import replace

    inner = replace(settings, isolate=False)
    by_label: dict[str, list[dict[str, Any]]] = {}
    for config in planners:
        if config.external is None:
            by_label[config.label] = WORKERS.run(recipe, config, inner)
    externals = [c for c in planners if c.external is not None]
    if externals:
        lifted = None
        if isinstance(recipe, PddlRecipe):
            try:
                lifted = recipe.lifted()
            except ValueError:
                lifted = None
        sizes = next(({k: r[k] for k in ("n_facts", "n_actions") if k in r} for rs in by_label.values()
                      for r in rs), {})
        for config in externals:
            rs = _run_external(config, recipe, None, lifted, inner)
            for r in rs:
                r.update(sizes)
            by_label[config.label] = rs
    rows = [r for c in planners for r in by_label[c.label]]
    for r in rows:
        r.pop("optimal", None)
        r.pop("optimal_source", None)
    _fill_optimal(rows, recipe, None)
    return rows


# --- goap planners in a child process ------------------------------------------------------------------------
#: Seconds a worker may spend compiling or loading kernels (the ``setup`` phase, which the time limit does not
#: count: it is paid once per planner, and the first time it compiles the kernels).
SETUP_SECONDS = 600.0
_phase_entered: Any = None  # set in a worker: called with a phase name as the task enters it
_search_started: Any = None  # set in a worker: called with (seconds allowed, ground seconds) before each search
_task_started: float = 0.0  # perf_counter() when run_recipe started the task (parsing starts then)
_paused: float = 0.0  # seconds of the current task spent in setup, which the limit does not count


def _load_table_kernels(device: str | None) -> None:
    """Load (or compile) the pattern databases' build kernels, so that building a task's tables times the build."""
    from goap.kernels import init_warp
    from goap.kernels import pdb as kp

    wp = init_warp()
    wp.load_module(kp.pdb_init.module, device=wp.get_device(device))


def _notify_phase(phase: str) -> None:
    if _phase_entered is not None:
        _phase_entered(phase)


def _notify_search(allowed: float | None, ground: float) -> None:
    if _search_started is not None:
        _search_started(allowed, ground)


def _spent() -> float:
    """Seconds the current task has used against the limit: since it started, less its setup."""
    return time.perf_counter() - _task_started - _paused


class Workers:
    """One child process per goap planner (label), reused from task to task so its kernels stay loaded.

    The time limit is held here, for the whole task: a Warp search is one launch that cannot be interrupted,
    and grounding or encoding a large task can take longer than the limit too. The worker tells the parent each
    phase as it enters it (``parse``, ``ground``, ``encode``, ``setup``, ``search``: see `goap.pddl.phase_hook`);
    the parent's clock runs from the job's start and stops during ``setup`` (compiling or loading kernels,
    warming the scratch; bounded by `SETUP_SECONDS` on its own). At the limit (plus a small grace) the parent kills the
    worker whatever it is doing, reports the task's rows as ``timeout`` with the phase, and starts a fresh worker
    for the next task. A worker that dies (out of memory under ``--memory-limit``, a crash) gives ``memout`` or
    ``error``.
    """

    GRACE = 0.5

    def __init__(self) -> None:
        self.procs: dict[str, tuple[Any, Any]] = {}

    def _start(self, label: str, memory: int | None) -> tuple[Any, Any]:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker_main, args=(child, memory), daemon=True, name=f"goap-bench-{label}")
        proc.start()
        child.close()
        self.procs[label] = (proc, parent)
        return proc, parent

    def run(self, recipe: Recipe, config: PlannerConfig, settings: Settings) -> list[dict[str, Any]]:
        proc, conn = self.procs.get(config.label) or self._start(config.label, settings.memory_limit)
        if not proc.is_alive():
            proc, conn = self._start(config.label, settings.memory_limit)
        conn.send((recipe, config, settings))
        limit = settings.time_limit
        t0 = time.perf_counter()
        # A fresh worker imports the engine first (not part of the task): the clock starts at its first phase.
        deadline = t0 + SETUP_SECONDS
        phase, ground, paused, setup_at = "start", 0.0, 0.0, None
        while True:
            wait = deadline - time.perf_counter()
            try:
                ready = wait > 0 and conn.poll(wait)
                message = conn.recv() if ready else None
            except (EOFError, OSError):
                proc.join(5)
                status = "memout" if settings.memory_limit else "error"
                return self._failed(recipe, config, status, f"the planner's process ended ({proc.exitcode})", ground)
            now = time.perf_counter()
            if message is None:
                self.kill(config.label)
                spent = now - t0 - paused
                if phase == "setup":
                    error = f"loading or compiling the kernels took more than {SETUP_SECONDS:g} s"
                else:
                    error = f"the time limit of {limit:g} s ran out while in phase '{phase}'"
                return self._failed(recipe, config, "timeout", error, ground, spent, phase)
            kind, payload = message
            if kind == "phase":
                if phase == "start":
                    t0 = now
                    deadline = math.inf if limit is None else now + limit + self.GRACE
                if payload == "setup":
                    setup_at = now
                    deadline = now + SETUP_SECONDS
                elif setup_at is not None:
                    paused += now - setup_at
                    setup_at = None
                    deadline = math.inf if limit is None else t0 + paused + limit + self.GRACE
                phase = payload
            elif kind == "search":
                allowed, ground = payload
                if setup_at is not None:
                    paused += now - setup_at
                    setup_at = None
                phase = "search"
                deadline = math.inf if allowed is None else now + allowed + self.GRACE
            elif kind == "rows":
                return payload
            elif kind == "memout":
                self.kill(config.label)
                return self._failed(recipe, config, "memout", payload, ground)
            else:
                raise ValueError(payload)

    @staticmethod
    def _failed(recipe: Recipe, config: PlannerConfig, status: str, error: str | None, ground: float,
                spent: float | None = None, phase: str | None = None) -> list[dict[str, Any]]:
        total = None if spent is None else max(ground, spent)
        return [_row(recipe.suite, recipe.group, pid, config, status=status, error=error, ground_seconds=ground,
                     total_seconds=total, timing="solo", phase=phase) for pid in recipe.ids]

    def kill(self, label: str) -> None:
        proc, conn = self.procs.pop(label, (None, None))
        if proc is not None:
            proc.kill()
            proc.join(10)
            conn.close()

    def close(self) -> None:
        for label in list(self.procs):
            proc, conn = self.procs[label]
            try:
                conn.send(None)
                proc.join(5)
            except (OSError, BrokenPipeError):
                pass
            self.kill(label)


WORKERS = Workers()


def _worker_main(conn: Any, memory: int | None) -> None:
    """The loop of a worker process: (recipe, config, settings) in, ("rows", rows) out, until None."""
    global _search_started, _phase_entered
    import resource

    import goap.pddl

    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    _search_started = lambda allowed, ground: conn.send(("search", (allowed, ground)))  # noqa: E731
    _phase_entered = lambda phase: conn.send(("phase", phase))  # noqa: E731
    goap.pddl.phase_hook = _phase_entered
    try:  # Warp's start-up is the worker's, before any task's clock starts
        from goap.kernels import init_warp

        init_warp()
    except ImportError:
        pass
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        recipe, config, settings = job
        try:
            _phase_entered("parse" if isinstance(recipe, PddlRecipe) else "load")
            conn.send(("rows", run_recipe(recipe, [config], settings)))
        except MemoryError as e:
            conn.send(("memout", f"out of memory: {e}"))
        except ValueError as e:
            conn.send(("error", str(e)))


def _row(suite: str, group: str, problem: str, config: PlannerConfig, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "suite": suite, "group": group, "problem": problem, "planner": config.label, "planner_name": config.name,
        "status": "error", "cost": None, "length": None, "expanded": None,
        "expanded_before_last_f": None, "seconds": None, "ground_seconds": 0.0,
        "total_seconds": None, "setup_seconds": 0.0, "timing": None, "batch": 1, "valid": None,
        "invalid_reason": None, "late_status": None, "error": None, "plan": None, "phase": None,
    }
    row.update(values)
    return row


# --- goap planners -------------------------------------------------------------------------------------------
def _run_internal(config: PlannerConfig, batch: ProblemBatch, lifted: Any, settings: Settings
                  ) -> list[dict[str, Any]]:
    from goap.planners import make_planner
    from goap.planners.base import (
        PDB_HEURISTICS,
        PDDL_HEURISTIC,
        PDDL_PRUNING,
        SCP_HEURISTICS,
        Status,
        pddl_lmcut_options,
    )

    n = len(batch)
    serial = config.name == "reference"
    kwargs = dict(config.options, max_nodes=settings.max_nodes, max_plan_length=settings.max_plan_length)
    name = config.name
    if batch.suite == "pddl" and name == "warp" and int(kwargs.get("threads") or 1) > 1:
        from goap.planners.hda import one_task_planner

        name, threaded = one_task_planner(name, kwargs.pop("threads"))  # one task over K workers: HDA*
        kwargs.update(threaded)
    if batch.suite == "pddl" and "heuristic" not in kwargs and _accepts(config.name, "heuristic"):
        kwargs["heuristic"] = PDDL_HEURISTIC  # goap.planners.base: the PDDL commands' default
    if batch.suite == "pddl" and "pruning" not in kwargs and PDDL_PRUNING != "none" and _accepts(config.name,
                                                                                                 "pruning"):
        kwargs["pruning"] = PDDL_PRUNING
    if batch.suite == "pddl":  # LM-cut's tie settings (goap.planners.base.pddl_lmcut_options), unless given
        for key, value in pddl_lmcut_options(name, kwargs.get("heuristic")).items():
            if key not in kwargs and _accepts(name, key):
                kwargs[key] = value
    if not serial:
        kwargs["device"] = settings.device
        if (n < 16 or settings.solo) and "chunk_size" not in kwargs and _accepts(config.name, "chunk_size"):
            kwargs["chunk_size"] = 1  # on the CPU: scratch for 1 agent per thread, not 16
    global _paused
    builds = kwargs.get("heuristic") in (*PDB_HEURISTICS, *SCP_HEURISTICS) and not serial
    if builds:  # the tables' kernels are loaded before the clock: the planner launches them when it is made
        _notify_phase("setup")
        t_load = time.perf_counter()
        _load_table_kernels(settings.device)
        _paused += time.perf_counter() - t_load
        _notify_phase("encode")
    t0 = time.perf_counter()
    try:
        planner = make_planner(name, batch.tables, **kwargs)  # still the task's time (encode)
    except TypeError as e:
        raise ValueError(f"planner '{config.name}' does not take these options {sorted(config.options)}: {e}") from None
    effective = planner_settings(planner)
    peak_scope = reset_peak_rss()
    ground = float(batch.info.get("ground_seconds", 0.0))
    limit = settings.time_limit
    results: list[tuple[int, float, Any]] = []  # (problem index, seconds, PlanBatch row index or None)
    built = 0.0  # seconds building the heuristic's tables (once for the batch: a share per row)
    try:
        _notify_phase("setup")  # the clock stops: compiling or loading kernels, warming the scratch
        t_setup = time.perf_counter()
        if hasattr(planner, "load"):
            planner.load()  # compile or load the kernels before the clock starts
        warm = None if serial else _satisfied_states(batch)
        if warm is not None:  # allocate the search scratch before the clock starts, on searches that end at once
            planner.plan(warm, batch.goals, batch.costs, batch.enabled)
        _paused += time.perf_counter() - t_setup
        # A heuristic built from the task (pattern databases: tables per goal, built when the planner is made) is
        # the task's work, as a baseline's heuristic construction is: the planner says how long it took.
        built = float(getattr(getattr(planner, "inner", planner), "table_seconds", 0.0))
        setup = time.perf_counter() - t0
        # parse, ground, encode (and building the planner), the heuristic's tables
        before = _spent() if _task_started else ground + built
        if serial or settings.solo or n == 1:
            for i in range(n):
                left = None if limit is None else max(1e-3, limit - before)
                _notify_search(left, ground)
                res, seconds = _timed(planner, batch, np.array([i]), left if serial else None)
                results.append((i, seconds, None if res is None else (res, 0)))
            timing = "solo"
        else:
            _notify_search(None if limit is None else limit * n, ground)
            res, seconds = _timed(planner, batch, np.arange(n), None)
            results += [(i, seconds / n, (res, i)) for i in range(n)]
            timing = "batch/n"
    finally:
        close = getattr(planner, "close", None)
        if callable(close):
            close()

    peak = peak_rss_bytes()
    rows = []
    for i, seconds, found in results:
        row = _row(batch.suite, batch.group, batch.ids[i], config, **batch.info)
        row.update(seconds=seconds, ground_seconds=ground, total_seconds=ground + built / n + seconds,
                   setup_seconds=setup, heuristic_seconds=built / n,
                   timing=timing, batch=1 if timing == "solo" else n)
        row["planner_settings"] = effective
        row.update(peak_rss_bytes=peak, peak_rss_scope=peak_scope)
        if found is None:
            row["status"] = "timeout"
        else:
            res, j = found
            status = Status(int(res.status[j]))
            cost = float(res.cost[j])
            row.update(status=status.label, cost=None if math.isnan(cost) else cost,
                       expanded=int(res.expanded[j]))
            last_f = getattr(res, "expanded_before_last_f", None)
            if last_f is not None and status in (Status.OK, Status.TOO_LONG) and int(last_f[j]) >= 0:
                row["expanded_before_last_f"] = int(last_f[j])
            if status in (Status.OK, Status.SATISFIED):
                plan = [int(a) for a in res.plan(j)]
                row["length"] = len(plan)
                _validate_internal(row, batch, i, plan, lifted)
            elif status == Status.TOO_LONG:
                row["length"] = int(res.length[j])
            if limit is not None and row["total_seconds"] > limit:
                row["late_status"], row["status"] = row["status"], "timeout"
        rows.append(row)
    return rows


def _validate_internal(row: dict[str, Any], batch: ProblemBatch, i: int, plan: list[int], lifted: Any) -> None:
    """Replay a goap plan: on the lifted PDDL task when there is one, else on the goap domain."""
    from goap.pddl.validate import plan_steps, same_cost, step_text, validate_plan

    domain = batch.tables.domain
    names = [domain.actions[a].name for a in plan]
    if lifted is not None:
        steps = plan_steps(names)
        row["plan"] = [step_text(s) for s in steps]
        check = validate_plan(lifted[0], lifted[1], steps)
        valid, reason, cost = check.valid, check.error, check.cost
    else:
        row["plan"] = names
        valid, reason, cost = _replay_goap(batch, i, plan)
    if valid and not same_cost(cost, row["cost"]):
        valid, reason = False, f"the planner says cost {row['cost']:g}, the plan costs {cost:g}"
    row["valid"], row["invalid_reason"] = valid, reason


def _replay_goap(batch: ProblemBatch, i: int, plan: list[int]) -> tuple[bool, str | None, float | None]:
    tables = batch.tables
    domain = tables.domain
    state = tables.unpack(batch.states[i])
    costs = tables.cost if batch.costs is None else batch.costs[i]
    kind = domain.types[0]  # problems are planned as agents of type 0
    cost = 0.0
    for k, a in enumerate(plan, start=1):
        if batch.enabled is not None and not bool(batch.enabled[i, a]):
            return False, f"step {k} '{domain.actions[a].name}' is switched off for this problem", None
        if not kind.actions[a]:
            return False, f"step {k} '{domain.actions[a].name}' is not an action of type '{kind.name}'", None
        if not domain.is_applicable(state, domain.actions[a]):
            return False, f"step {k} '{domain.actions[a].name}' is not applicable", None
        cost += domain.action_cost(a, state, float(costs[a]), kind.cost_scale[a])  # in the state it applies to
        state = domain.apply(state, domain.actions[a])
    goal = tables.goals.goals[int(batch.goals[i])]
    if not domain.satisfies(state, goal.want):
        return False, f"the goal '{goal.name}' does not hold at the end", None
    return True, None, cost


#: Planner attributes that say what it computed and within which limits (`planner_settings`).
SETTING_ATTRIBUTES = ("heuristic", "pruning", "pdb_states", "scp_orders", "lmcut_ties", "lmcut_zone_ties", "weight",
                      "greedy", "max_nodes", "max_plan_length", "pools", "max_escalated_nodes", "threads", "chunk_size",
                      "max_scratch_bytes", "device")


def planner_settings(planner: Any) -> dict[str, Any]:
    """What a goap planner actually runs with, read from the planner made (the user's options, the suite's
    defaults such as the PDDL heuristic, and the class's own defaults alike): the JSON's ``planner_settings``.
    ``pools`` are the node-pool sizes of the escalation levels (``max_nodes`` times ``growth`` per level, up to
    the ceiling)."""
    inner = getattr(planner, "inner", planner)  # a DedupingPlanner wraps the searching one
    out: dict[str, Any] = {"class": f"{type(inner).__module__}:{type(inner).__qualname__}"}
    for key in SETTING_ATTRIBUTES:
        if hasattr(inner, key):
            value = getattr(inner, key)
            out[key] = [int(v) for v in value] if key == "pools" else (
                value if value is None or isinstance(value, bool | int | float | str) else str(value))
    return out


def reset_peak_rss() -> str:
    """Start a new peak-memory measurement for this process: ``task`` when the kernel's peak (VmHWM) could be
    reset (Linux: ``5`` written to ``/proc/self/clear_refs``), else ``process`` (the peak since it started).

    A goap planner runs in a worker process kept from task to task, so without the reset every task would report
    the largest task before it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return "task"
    except OSError:
        return "process"


def peak_rss_bytes() -> int | None:
    """This process's peak resident memory since `reset_peak_rss` (or since it started): VmHWM on Linux,
    ``ru_maxrss`` elsewhere. What the JSON's ``peak_rss_bytes`` holds for a goap planner's rows: the grounded
    task, the planner's tables and search scratch, and the interpreter and kernels under them."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource

        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(rss) * (1 if sys.platform == "darwin" else 1024)
    except (ImportError, OSError):
        return None


def _accepts(name: str, option: str) -> bool:
    """Whether the registered planner's constructor takes ``option``."""
    import importlib
    import inspect

    from goap.planners.base import PLANNERS

    module, cls = PLANNERS[name].split(":")
    try:
        params = inspect.signature(getattr(importlib.import_module(module), cls)).parameters
    except (ImportError, AttributeError, TypeError, ValueError):
        return False
    return option in params


def _satisfied_states(p: ProblemBatch) -> np.ndarray | None:
    """States where each problem's goal already holds (a warm-up that ends at once), or None if one is not found."""
    tables = p.tables
    domain = tables.domain
    goals = tables.goals.goals
    out = {}
    for g in {int(x) for x in p.goals}:
        values = list(domain.default_state())
        for c in goals[g].want:
            f = domain.fact_index(c.fact)
            fact = domain.facts[f]
            pick = {"==": c.value, "<=": c.value, ">=": c.value, "<": c.value - 1, ">": c.value + 1}.get(c.op)
            if pick is None:  # "!="
                pick = fact.min if c.value != fact.min else fact.max
            values[f] = min(max(pick, fact.min), fact.max)
        if not domain.satisfies(tuple(values), goals[g].want):
            return None
        out[g] = tables.pack(tuple(values))
    return np.stack([out[int(g)] for g in p.goals]) if len(p.goals) else None


def _timed(planner: Any, p: ProblemBatch, rows: np.ndarray, limit: float | None) -> tuple[Any, float]:
    """One planning call on ``rows``; (None, seconds) when ``limit`` (SIGALRM) interrupted it."""
    costs = None if p.costs is None else p.costs[rows]
    enabled = None if p.enabled is None else p.enabled[rows]
    t0 = time.perf_counter()
    try:
        with deadline(limit):
            batch = planner.plan(p.states[rows], p.goals[rows], costs, enabled)
    except TimeUp:
        return None, time.perf_counter() - t0
    return batch, time.perf_counter() - t0


# --- external planners ---------------------------------------------------------------------------------------
def _run_external(config: PlannerConfig, recipe: Recipe, batch: ProblemBatch | None, lifted: Any,
                  settings: Settings) -> list[dict[str, Any]]:
    from goap.bench.external import DEFAULT_MEMORY_LIMIT, run_external
    from goap.pddl.validate import step_text, validate_plan

    if not isinstance(recipe, PddlRecipe):
        raise ValueError(f"planner '{config.name}' reads PDDL files: it runs on --suite pddl only")
    res = run_external(config.external, recipe.domain_text, recipe.problem_text, settings.time_limit,
                       settings.memory_limit or DEFAULT_MEMORY_LIMIT)
    info = dict(batch.info) if batch is not None else {}
    info.pop("ground_seconds", None)
    row = _row(recipe.suite, recipe.group, recipe.name, config, **info)
    row.update(status=res.status, seconds=res.seconds, total_seconds=res.seconds, timing="process",
               expanded=res.expanded, expanded_before_last_f=res.expanded_before_last_f, error=res.error)
    row.update(res.phases, peak_rss_bytes=res.peak_rss_bytes)  # the log's own phase times; the process's memory
    if res.plan is not None:
        row["plan"] = [step_text(s) for s in res.plan]
        row["length"] = len(res.plan)
        if lifted is None:
            row["valid"], row["invalid_reason"] = None, "the task could not be read to check the plan"
        else:
            check = validate_plan(lifted[0], lifted[1], res.plan)
            row["valid"], row["invalid_reason"] = check.valid, check.error
            row["cost"] = check.cost
        row["status"] = "ok" if res.plan or row["valid"] is False else "satisfied"
    return [row]


# --- optima --------------------------------------------------------------------------------------------------
def _fill_optimal(rows: list[dict[str, Any]], recipe: Recipe, batch: ProblemBatch | None) -> None:
    """The known optimum of each problem: the suite's own, else the reference planner's valid cost (the
    reference, an optimal A*, is never judged against itself)."""
    known = dict(zip(recipe.ids, (batch.optimal if batch is not None and batch.optimal else None)
                     or [getattr(recipe, "optimum", None)] * len(recipe.ids), strict=True))
    reference = {r["problem"]: r["cost"] for r in rows
                 if r["planner"] == "reference" and r["status"] in SOLVED and r["valid"] is not False}
    for r in rows:
        opt, source = known.get(r["problem"]), "suite"
        if opt is None and r["problem"] in reference and r["planner"] != "reference":
            opt, source = reference[r["problem"]], "reference"
        r["optimal"] = opt
        r["optimal_source"] = source if opt is not None else None


def solved(row: dict[str, Any]) -> bool:
    """Solved within the limit with a plan the validator accepted (or no plan needed)."""
    return row["status"] in SOLVED and row.get("valid") is not False

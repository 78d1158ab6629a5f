"""``goap validate DOMAIN.pddl PROBLEM.pddl`` and ``goap solve DOMAIN.pddl PROBLEM.pddl``: a PDDL task directly.

``validate`` reads and grounds the task (under the grounding bounds) and reports its size, what grounding
folded away and the domain checks' warnings. ``solve`` plans it with a goap planner, replays the plan with
`goap.pddl.validate` and prints one JSON line (``id``, ``status``, ``cost``, ``length``, ``plan`` as IPC steps,
``valid``); ``--plan-file`` also writes the plan in the IPC form (one ``(action args)`` per line and a
``; cost = C`` line), which VAL and Fast Downward's tools read.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from goap.files import check_writable, write_output
from goap.pddl import DEFAULT_TRANSLATION, GroundingLimits, PddlTask, load_pddl


def is_pddl(path: str) -> bool:
    return str(path).lower().endswith(".pddl")


def _problem_alone(args: argparse.Namespace) -> None:
    """``goap solve PROBLEM.pddl``: a problem file given alone takes its domain file as the Fast Downward benchmark
    collection lays them out (`goap.pddl.task_domain`); a domain file alone still needs its problem."""
    from goap.pddl import is_domain_file, task_domain

    given = Path(args.domain)
    domain = None if is_domain_file(given) else task_domain(given)
    if domain is None:
        raise ValueError(f"{args.domain}: a PDDL domain needs its problem file: goap {args.command} DOMAIN.pddl "
                         "PROBLEM.pddl (a problem file alone needs a domain.pddl or its own pNN-domain.pddl beside "
                         "it)")
    args.domain, args.problem = str(domain), str(given)


def _load(args: argparse.Namespace) -> PddlTask:
    if not getattr(args, "problem", None):
        _problem_alone(args)
    limit = getattr(args, "time_limit", None)
    form = getattr(args, "translate", None) or DEFAULT_TRANSLATION
    return load_pddl(args.domain, args.problem, limits=GroundingLimits(seconds=limit or GroundingLimits.seconds),
                     translate=form)


class _Phases:
    """The phase a task is in (`goap.pddl.phase_hook`), to name it when the time limit runs out. With ``limit``, a
    phase that ends past it raises TimeUp before the next begins, so the limit names the phase it ran out in even
    when the alarm's TimeUp is lost (Python ignores an exception raised in a gc callback or a ``__del__``)."""

    def __init__(self, limit: float | None = None) -> None:
        self.name = "parse"
        self._limit = limit
        self._until: float | None = None

    def __enter__(self) -> _Phases:
        import goap.pddl

        self._old = goap.pddl.phase_hook
        goap.pddl.phase_hook = self.enter
        self._until = time.perf_counter() + self._limit if self._limit else None
        return self

    def enter(self, name: str) -> None:
        if self._until is not None and time.perf_counter() > self._until:
            from goap.problems import TimeUp

            raise TimeUp
        self.name = name

    def __exit__(self, *exc: object) -> None:
        import goap.pddl

        goap.pddl.phase_hook = self._old


def _grounding_deadline(e: ValueError) -> bool:
    return "grounding took more than" in str(e)


def validate(args: argparse.Namespace) -> int:
    from goap.analysis import check_domain
    from goap.encoding import make_layout
    from goap.problems import TimeUp, deadline

    limit = getattr(args, "time_limit", None)
    with _Phases(limit) as phases:
        try:
            with deadline(limit) if limit else contextlib.nullcontext():
                task = _load(args)
                phases.enter("check")
                tables = make_layout(task.domain)  # the state words only: the full tables are the search's
                report = check_domain(task.domain)
        except TimeUp:
            raise ValueError(f"{args.problem}: not validated: the time limit of {limit:g} s ran out while in phase "
                             f"'{phases.name}'") from None
    tr = task.translation
    if tr is None:
        print(
            f"{args.problem}: task '{task.name}' of {args.domain} is valid: grounded in {task.ground_seconds:.2f} s "
            f"to {task.n_facts} facts in {tables.n_words} word(s), {task.n_actions} actions "
            f"({task.n_static} static atoms folded into them), one goal"
        )
    else:
        bounded = f"; the synthesis stopped at its {tr.stopped} bound" if tr.stopped else ""
        print(
            f"{args.problem}: task '{task.name}' of {args.domain} is valid: grounded to {tr.strips_facts} facts, "
            f"{tr.strips_actions} actions ({task.n_static} static atoms folded into them), one goal; in the "
            f"finite-domain form {task.n_facts} facts in {tables.n_words} word(s), {task.n_actions} actions "
            f"({task.ground_seconds:.2f} s in all)"
        )
        print(f"{len(tr.variables)} finite-domain variables from {tr.invariants} invariants ({tr.candidates} "
              f"candidates{bounded}); {tr.pruned_actions} irrelevant actions and {tr.pruned_facts} facts pruned; "
              f"translated in {tr.seconds:.2f} s:")
        for line in tr.describe():
            print(f"  {line}")
    for w in task.warnings:
        print(f"warning: {w}")
    for w in report.warnings:
        print(f"{args.problem}: warning: {w}")
    return 1 if args.strict and (report.warnings or task.warnings) else 0


def solve(args: argparse.Namespace) -> int:
    import numpy as np

    from goap.pddl.validate import plan_steps, step_text, validate_plan
    from goap.planners import make_planner
    from goap.planners.base import LMCUT_ZONE_NAMES, PDDL_HEURISTIC, PDDL_PRUNING, Status, pddl_lmcut_options
    from goap.problems import TIMEOUT, TimeUp, deadline

    if getattr(args, "problems", None):
        raise ValueError("--problems is for goap domain files; a PDDL task is its own problem: "
                         "goap solve DOMAIN.pddl PROBLEM.pddl")
    plan_file = getattr(args, "plan_file", None)
    if plan_file:
        check_writable(plan_file)
    from goap.planners.hda import one_task_planner

    options: dict[str, Any] = {"max_nodes": args.max_nodes, "max_plan_length": args.max_plan_length,
                               "heuristic": getattr(args, "heuristic", None) or PDDL_HEURISTIC,
                               "pruning": getattr(args, "pruning", None) or PDDL_PRUNING}
    planner_name, threaded = one_task_planner(args.planner, getattr(args, "threads", None))
    options.update(threaded)  # --threads K > 1: HDA* over K workers
    options.update(pddl_lmcut_options(planner_name, options["heuristic"]))
    if getattr(args, "lmcut_zone_ties", None) is not None:
        options["lmcut_zone_ties"] = LMCUT_ZONE_NAMES[args.lmcut_zone_ties]
    if getattr(args, "lmcut_ties", None) is not None:
        options["lmcut_ties"] = args.lmcut_ties
    if planner_name == "warp-hda" and options.pop("pruning") != "none":
        raise ValueError("--pruning stubborn with --threads > 1: the HDA* planner prunes nothing; use one thread")
    if args.planner != "reference":
        options["device"] = args.device
        options["chunk_size"] = 1
    # The time limit holds for the whole task, parse, ground, encode and search, as in goap bench; loading or
    # compiling the kernels (the planner's load) is not the task's time.
    time_limit = getattr(args, "time_limit", None)
    if args.planner != "reference":
        from goap.kernels import init_warp

        init_warp()  # Warp's start-up, like the kernels' loading, is not the task's time
    t_task = time.perf_counter()
    task: PddlTask | None = None

    def timeout(phase: str, late: str | None = None) -> int:
        name = task.name if task is not None else f"{Path(args.problem).parent.name}/{Path(args.problem).stem}"
        row = {"id": name, "status": TIMEOUT, "phase": phase, "cost": None, "length": None, "plan": None}
        if late is not None:
            row["late_status"] = late
        sys.stdout.write(json.dumps(row) + "\n")
        sys.stdout.flush()
        return 0

    with _Phases(time_limit) as phases:
        try:
            with deadline(time_limit) if time_limit else contextlib.nullcontext():
                task = _load(args)
                try:
                    planner = make_planner(planner_name, task.domain, **options)
                except TypeError:
                    options.pop("chunk_size", None)
                    planner = make_planner(planner_name, task.domain, **options)
        except TimeUp:
            return timeout(phases.name)
        except ValueError as e:
            if time_limit and _grounding_deadline(e):
                return timeout("ground")
            raise
    before = time.perf_counter() - t_task
    if hasattr(planner, "load"):
        planner.load()
    left = None if not time_limit else max(1e-3, time_limit - before)
    t0 = time.perf_counter()
    try:
        with deadline(left) if left else contextlib.nullcontext():
            batch = planner.plan(planner.tables.pack(task.state)[None], np.array([task.goal], dtype=np.int32))
    except TimeUp:
        batch = None
    seconds = time.perf_counter() - t0
    if batch is None or (left and seconds > left):
        return timeout("search", None if batch is None else Status(int(batch.status[0])).label)
    status = Status(int(batch.status[0]))
    row: dict[str, Any] = {"id": task.name, "status": status.label, "cost": None, "length": None, "plan": None}
    if status in (Status.OK, Status.SATISFIED):
        steps = plan_steps(batch.plan_names(0, task.domain))
        check = validate_plan(task.lifted, task.problem, steps)
        row.update(cost=check.cost if check.valid else float(batch.cost[0]), length=len(steps),
                   plan=[step_text(s) for s in steps], valid=check.valid)
        if not check.valid:
            row["invalid_reason"] = check.error
            # The row says why on stdout; exit status 1 also says it on stderr, in the one error line every
            # other failure gives.
            print(f"goap: error: {args.problem}: the plan found is not valid: {check.error}", file=sys.stderr)
    sys.stdout.write(json.dumps(row) + "\n")
    sys.stdout.flush()
    if plan_file and row["plan"] is not None:
        write_output(plan_file, "".join(s + "\n" for s in row["plan"]) + f"; cost = {row['cost']:g}\n")
    if args.stats:
        stats = {"planner": planner_name, "threads": getattr(planner, "workers", 1), "plans": 1,
                 "expanded": int(batch.expanded[0]), "ground_seconds": round(task.ground_seconds, 6),
                 "plan_seconds": round(seconds, 6), "n_facts": task.n_facts, "n_actions": task.n_actions}
        print(json.dumps(stats), file=sys.stderr)
    return 0 if row.get("valid", True) else 1

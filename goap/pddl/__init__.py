"""PDDL import (STRIPS and ADL): parse a domain and a problem, ground them, and compile a goap `Domain`.

Supported: the requirements ``:strips :typing :negative-preconditions :equality :action-costs`` and ADL's
(``:adl :conditional-effects :universal-preconditions :existential-preconditions :quantified-preconditions
:disjunctive-preconditions``; types are accepted without ``:typing`` being declared, as the IPC miconic files
need); types with inheritance and ``(either ...)``; constants; preconditions and goals built from atoms,
``(= ?x ?y)``, ``not``, ``and``, ``or``, ``imply``, ``exists`` and ``forall`` (compiled away by
`goap.pddl.normal`); effects that are an ``and`` of atoms, negated atoms, ``(forall (vars) EFFECT)``, ``(when
CONDITION EFFECT)`` and ``(increase (total-cost) N)`` (``N`` a number or a function term given in the
problem's ``:init``). Anything else (derived predicates, durative actions, numeric fluents) is a `PddlError`
naming the file, line, action and construct where the task uses it; a requirement is judged by use, not by
declaration: one declared but not supported (or unknown) is a warning (`PddlTask.warnings`, printed by ``goap
validate``), and the task loads when it uses none of it. Keywords and
names are case-insensitive and are lower-cased.

Grounding, as planners usually do it:

* Reachability: the delete relaxation (positive preconditions only) as a semi-naive Datalog fixpoint, as Fast
  Downward's translator grounds: each schema is a rule whose body is its positive preconditions;
  a queue of newly reached atoms is joined, one atom at a time, with the atoms reached before it, in a join order
  chosen per rule and per triggering atom, through hash indexes that grow with the atoms. Every instance is
  found once, when its last precondition is reached; atoms and actions never reached are dropped.
* Static predicates (in no action's effects) are constants: they are indexed before the fixpoint starts, never
  trigger a join, are matched first (with the static negative preconditions and (in)equalities tested as soon
  as their variables are bound), and vanish from the compiled domain.
* Every reachable atom of a changing predicate becomes one bool fact named like ``on(a,b)``; every reachable
  action instance becomes an action named like ``stack(a,b)`` with cost 1 (or its action cost). An atom both
  added and deleted by an action ends up true, as in STRIPS semantics. The goal is one goal named ``goal``.

By default the grounded task is then translated to finite-domain variables (`goap.pddl.fdr`: mutex groups by
invariant synthesis, `goap.pddl.invariants`, and backward relevance pruning); ``translate="strips"`` keeps one bool
fact per atom. Action names are the same in both forms.

The stages are separate modules, as in pyperplan: `goap.pddl.reader` (S-expressions), `goap.pddl.lifted`
(schemas, atoms, objects) and `goap.pddl.grounder`. ``load_pddl(domain_file, problem_file)`` gives a `PddlTask`;
its domain's default state is the initial state.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from goap.domain import Domain, State
from goap.pddl.grounder import GOAL_NAME, GroundingLimits, ground
from goap.pddl.lifted import SUPPORTED_REQUIREMENTS, LiftedDomain, LiftedProblem, read_domain, read_problem
from goap.pddl.reader import PddlError, parse_sexpr, read_file

__all__ = [
    "DEFAULT_TRANSLATION", "GOAL_NAME", "SUPPORTED_REQUIREMENTS", "TRANSLATIONS", "GroundingLimits", "PddlError",
    "PddlTask", "load_pddl", "optimal_costs",
    "read_optima", "parse_sexpr", "parse_task", "pddl_tasks",
]


@dataclass(frozen=True)
class PddlTask:
    """A grounded PDDL task compiled to a goap domain.

    Attributes:
        domain: the goap domain: bool facts, ground actions, one goal ``"goal"``; its default state is the
            task's initial state.
        start: the facts true in the initial state, ``{fact: True}`` (every other fact is false).
        name: ``"blocks/task01"`` for ``.../blocks/task01.pddl``.
        n_facts, n_actions: the grounded sizes (after reachability and static folding).
        n_static: ground atoms of static predicates true initially (folded into the actions).
        ground_seconds: time spent parsing, grounding and compiling.
        lifted, problem: the task before grounding, for `goap.pddl.validate` (which replays plans on it).
    """

    domain: Domain
    start: dict[str, bool]
    name: str
    n_facts: int
    n_actions: int
    n_static: int = 0
    ground_seconds: float = 0.0
    domain_file: str = ""
    problem_file: str = ""
    lifted: LiftedDomain | None = field(default=None, repr=False, compare=False)
    problem: LiftedProblem | None = field(default=None, repr=False, compare=False)
    warnings: tuple[str, ...] = ()  # "FILE:LINE: what": requirements declared but not used, unknown ones
    #: `goap.pddl.fdr.Translation` of a finite-domain task (``translate="fdr"``); None for the STRIPS form.
    translation: Any = field(default=None, repr=False, compare=False)

    @property
    def state(self) -> State:
        """The initial state as a value tuple."""
        return self.domain.state(self.start)

    @property
    def goal(self) -> int:
        return self.domain.goal_index(GOAL_NAME)


#: The forms `load_pddl` can give a task: one bool fact per atom, or finite-domain variables (`goap.pddl.fdr`).
TRANSLATIONS = ("fdr", "strips")
#: The form `load_pddl` gives unless told otherwise (the one that wins on the IPC tasks: see docs/pddl.md).
DEFAULT_TRANSLATION = "fdr"


def load_pddl(
    domain_path: str | Path, problem_path: str | Path, name: str | None = None, limits: GroundingLimits | None = None,
    translate: str = DEFAULT_TRANSLATION,
) -> PddlTask:
    """Parse, ground and compile a STRIPS domain file and problem file (bounded by ``limits``).

    ``translate``: ``"fdr"`` (finite-domain variables from mutex groups, irrelevant actions and facts pruned:
    `goap.pddl.fdr`) or ``"strips"`` (one bool fact per reachable atom)."""
    dfile, pfile = str(domain_path), str(problem_path)
    return parse_task(read_file(dfile), read_file(pfile), name or _task_name(Path(problem_path)), dfile, pfile, limits,
                      translate)


def parse_task(
    domain_text: str, problem_text: str, name: str, domain_file: str = "domain.pddl",
    problem_file: str = "problem.pddl", limits: GroundingLimits | None = None, translate: str = DEFAULT_TRANSLATION,
) -> PddlTask:
    """`load_pddl` on texts already read (a worker of a cluster gets the texts, not the paths)."""
    if translate not in TRANSLATIONS:
        raise ValueError(f"unknown PDDL translation {translate!r} (expected one of {', '.join(TRANSLATIONS)})")
    t0 = time.perf_counter()
    _enter("parse")
    lifted = read_domain(domain_text, domain_file)
    problem = read_problem(problem_text, problem_file, lifted)
    _enter("ground")
    domain, start, n_static = ground(lifted, problem, name, limits)
    task = PddlTask(
        domain=domain, start=start, name=name, n_facts=len(domain.facts), n_actions=len(domain.actions),
        n_static=n_static, ground_seconds=time.perf_counter() - t0, domain_file=domain_file,
        problem_file=problem_file, lifted=lifted, problem=problem, warnings=tuple(lifted.warnings),
    )
    if translate == "fdr":
        from goap.pddl.fdr import translate as to_fdr

        _enter("translate")
        task = to_fdr(task)
    _enter("encode")  # what every caller does next with the domain
    return task


#: Called with the name of each phase of a task as `parse_task` enters it: "parse", "ground", then "encode" as it
#: returns (its callers encode the domain next). `goap bench`'s worker process reports the phases to its parent,
#: which kills it at the time limit and names the phase in the timeout row; `goap solve` names it the same way.
phase_hook: Callable[[str], None] | None = None


def _enter(phase: str) -> None:
    if phase_hook is not None:
        phase_hook(phase)


def is_domain_file(path: str | Path) -> bool:
    """Whether ``path`` names a domain file in the Fast Downward benchmark collection's layout: ``domain.pddl``,
    or a task's own (``pNN-domain.pddl``, ``domain_pNN.pddl``, ``domain-pNN.pddl``)."""
    name = Path(path).name.lower()
    return name == "domain.pddl" or name.endswith("-domain.pddl") or name.startswith(("domain_", "domain-"))


def task_domain(problem: str | Path) -> Path | None:
    """The domain file of a problem file, as the benchmark collection lays them out: the task's own domain file
    (for ``p01.pddl`` or ``p01-airport1-p1.pddl``: ``p01-domain.pddl``, ``domain_p01.pddl`` or
    ``domain-p01.pddl``), else the folder's ``domain.pddl``; None when there is neither."""
    problem = Path(problem)
    folder, stem = problem.parent, problem.stem
    keys = [stem]
    for sep in ("-", "_"):  # p01-airport1-p1 -> p01
        head = stem.split(sep, 1)[0]
        if head and head not in keys:
            keys.append(head)
    for key in keys:
        for name in (f"{key}-domain.pddl", f"domain_{key}.pddl", f"domain-{key}.pddl"):
            if (folder / name).is_file():
                return folder / name
    shared = folder / "domain.pddl"
    return shared if shared.is_file() else None


def pddl_tasks(root: str | Path) -> list[tuple[Path, Path, str]]:
    """``(domain file, problem file, "folder/problem")`` for every task under ``root``, sorted by name.

    ``root`` holds one folder per domain (or is such a folder itself), laid out as the Fast Downward benchmark
    collection does: a ``domain.pddl`` for every problem file of the folder, or per task its own domain file
    (`task_domain`); every other ``.pddl`` file is a problem. A problem file without a domain file is skipped.
    """
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"no PDDL task folder at {root}")

    def holds_tasks(folder: Path) -> bool:
        return any(is_domain_file(p) for p in folder.glob("*.pddl"))

    folders = [root] if holds_tasks(root) else sorted(p for p in root.iterdir() if p.is_dir() and holds_tasks(p))
    out = []
    for folder in folders:
        for prob in sorted(folder.glob("*.pddl")):
            if is_domain_file(prob):
                continue
            dom = task_domain(prob)
            if dom is not None:
                out.append((dom, prob, f"{folder.name}/{prob.stem}"))
    return out


def optimal_costs(root: str | Path) -> dict[str, float | None]:
    """``{"blocks/task01": 6, ...}`` from ``root/optimal.json`` (None where unknown); empty if there is none.
    Both forms `read_optima` reads, for the tasks `pddl_tasks` finds under ``root``."""
    return read_optima(Path(root) / "optimal.json", [name for _, _, name in pddl_tasks(root)])[0]


def read_optima(path: str | Path, tasks: list[str]) -> tuple[dict[str, float | None], list[str]]:
    """The known optima of an ``optimal.json`` (none when the file is missing), and warnings about it.

    Two forms are read, one key per task (``DOMAIN/TASK`` or ``DOMAIN/TASK.pddl``)::

        {"blocks/task05.pddl": 10, "blocks/task06": null}
        {"problems": {"blocks/task05.pddl": {"optimal_cost": 10, ...}}, "meta": {...}}

    (entries of the second kind may also stand at the top level). ``null`` means unknown, as a missing entry
    does; a bench table then says ``unknown`` rather than counting the task as not optimal. An entry that names
    no task of the folder is a warning (a typo would otherwise leave that task's optimum unknown in silence).

    Raises:
        ValueError: the file is not JSON, or an optimum is not a number >= 0 (naming the file and the entry).
    """
    path = Path(path)
    if not path.is_file():
        return {}, []
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"{path}: cannot read the optima: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected an object of task -> optimal cost, got {type(data).__name__}")
    entries = data["problems"] if isinstance(data.get("problems"), dict) else data
    names = set(tasks)
    out: dict[str, float | None] = {}
    unmatched = []
    for key, value in entries.items():
        if key in ("meta", "problems") and isinstance(value, dict) and entries is data:
            continue
        cost = value.get("optimal_cost") if isinstance(value, dict) else value
        if cost is not None and (isinstance(cost, bool) or not isinstance(cost, int | float) or not math.isfinite(cost)
                                 or cost < 0):
            raise ValueError(f"{path}: entry '{key}': the optimal cost must be a number >= 0 or null, got {cost!r}")
        name = key[:-5] if key.lower().endswith(".pddl") else key
        if name not in names:
            unmatched.append(key)
            continue
        out[name] = None if cost is None else float(cost)
    warnings = []
    if unmatched:
        shown = ", ".join(f"'{k}'" for k in unmatched[:5]) + (f" and {len(unmatched) - 5} more" if len(unmatched) > 5
                                                               else "")
        warnings.append(f"{path}: {len(unmatched)} entr{'y' if len(unmatched) == 1 else 'ies'} match no task of "
                        f"{path.parent} ({shown}); keys are DOMAIN/TASK or DOMAIN/TASK.pddl")
    return out, warnings


def _task_name(problem: Path) -> str:
    return f"{problem.parent.name}/{problem.stem}" if problem.parent.name else problem.stem


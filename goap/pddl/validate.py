"""A plan validator on the lifted task: every planner's plan is replayed here, ours included.

It works on the task as the files state it (`goap.pddl.lifted`), not on our grounding: each step's action is
instantiated from its schema on the spot, its parameters' types, preconditions and (in)equalities are checked
against the current set of true atoms (static ones included), its delete effects and then its add effects are
applied, and its cost is added. The goal is checked at the end. So a bug in the grounder, or a plan from an
external planner that grounds differently, is caught by a check that shares no code with either, as VAL does
for the IPC. Plans are read in the usual IPC form: one ``(action arg ...)`` per line, ``;`` comments.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from goap.pddl.lifted import Atom, LiftedDomain, LiftedProblem, Schema

Step = tuple[str, tuple[str, ...]]  # (action name, object names), lower-cased


@dataclass(frozen=True)
class PlanCheck:
    """The verdict on one plan.

    Attributes:
        valid: every step applies and the goal holds at the end.
        cost: the plan's cost by the task's own metric (None when a step fails).
        length: the number of steps.
        error: why it is invalid, naming the step (1-based) and the failed condition; None when valid.
    """

    valid: bool
    cost: float | None
    length: int
    error: str | None = None


_STEP = re.compile(r"^\(\s*([^\s()]+)((?:\s+[^\s()]+)*)\s*\)$")


def parse_plan(text: str) -> list[Step]:
    """IPC plan text: ``(stack a b)`` lines; blank lines and ``;`` comments (FD's ``; cost = ...``) skipped.

    Also accepts our own action names, ``stack(a,b)``, so a goap plan can be checked the same way.
    Raises ValueError naming the line of anything else.
    """
    steps: list[Step] = []
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = raw.split(";", 1)[0].strip()
        if not line:
            continue
        m = _STEP.match(line)
        if m:
            steps.append((m.group(1).lower(), tuple(x.lower() for x in m.group(2).split())))
            continue
        steps.append(goap_step(line, lineno))
    return steps


def goap_step(name: str, lineno: int | None = None) -> Step:
    """``stack(a,b)`` (a grounded action's name) as a step; ``handempty``-style names have no arguments."""
    m = re.fullmatch(r"([^\s(),]+)(?:\(([^\s()]*)\))?", name.strip())
    if not m:
        where = f"line {lineno}: " if lineno is not None else ""
        raise ValueError(f"{where}expected a plan step like (stack a b), got {name.strip()[:80]!r}")
    args = tuple(x.lower() for x in m.group(2).split(",")) if m.group(2) else ()
    return m.group(1).lower(), args


def step_text(step: Step) -> str:
    """A step in IPC form, ``(stack a b)``."""
    return "(" + " ".join((step[0], *step[1])) + ")"


def validate_plan(lifted: LiftedDomain, problem: LiftedProblem, plan: Sequence[Step]) -> PlanCheck:
    """Replay ``plan`` from the problem's initial state; see the module docstring for the semantics."""
    schemas = {s.name: s for s in lifted.schemas}
    types_of = _supertypes(lifted.parents)
    state = set(problem.init)
    cost = 0.0
    for k, (name, args) in enumerate(plan, start=1):
        where = f"step {k} {step_text((name, args))}"
        s = schemas.get(name)
        if s is None:
            return PlanCheck(False, None, len(plan), f"{where}: the domain has no action '{name}'")
        if len(args) != len(s.params):
            return PlanCheck(False, None, len(plan), f"{where}: '{name}' takes {len(s.params)} argument(s)")
        for (var, allowed), obj in zip(s.params, args, strict=True):
            t = problem.objects.get(obj)
            if t is None:
                return PlanCheck(False, None, len(plan), f"{where}: unknown object '{obj}'")
            if not types_of.get(t, {t}) & set(allowed):
                return PlanCheck(False, None, len(plan), f"{where}: '{obj}' is not of type {'/'.join(allowed)} "
                                                         f"(parameter {var})")
        failed = _first_false(s, args, state)
        if failed:
            return PlanCheck(False, None, len(plan), f"{where}: precondition {failed} is false")
        state -= {_ground(a, args) for a in s.delete}
        state |= {_ground(a, args) for a in s.add}
        c = _cost(s, args, problem)
        if c is None:
            return PlanCheck(False, None, len(plan), f"{where}: its cost term has no value in the problem")
        cost += c
    for a in problem.goal_pos:
        if _ground(a, ()) not in state:
            return PlanCheck(False, None, len(plan), f"the goal {_atom_text(_ground(a, ()))} is false at the end")
    for a in problem.goal_neg:
        if _ground(a, ()) in state:
            return PlanCheck(False, None, len(plan), f"the goal (not {_atom_text(_ground(a, ()))}) is false at the end")
    return PlanCheck(True, cost, len(plan))


def same_cost(a: float | None, b: float | None) -> bool:
    """Costs equal up to float32 rounding (the planners sum costs in float32)."""
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6)


def _ground(a: Atom, args: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    return a.pred, tuple(args[x] if isinstance(x, int) else x for x in a.args)


def _atom_text(g: tuple[str, tuple[str, ...]]) -> str:
    return "(" + " ".join((g[0], *g[1])) + ")"


def _first_false(s: Schema, args: tuple[str, ...], state: set) -> str | None:
    def val(x: int | str) -> str:
        return args[x] if isinstance(x, int) else x

    for a in s.pos:
        if _ground(a, args) not in state:
            return _atom_text(_ground(a, args))
    for a in s.neg:
        if _ground(a, args) in state:
            return f"(not {_atom_text(_ground(a, args))})"
    for x, y in s.eq:
        if val(x) != val(y):
            return f"(= {val(x)} {val(y)})"
    for x, y in s.neq:
        if val(x) == val(y):
            return f"(not (= {val(x)} {val(y)}))"
    return None


def _cost(s: Schema, args: tuple[str, ...], problem: LiftedProblem) -> float | None:
    if s.cost is None:
        return 1.0
    if isinstance(s.cost, Atom):
        return problem.values.get(_ground(s.cost, args))
    return float(s.cost)


def _supertypes(parents: dict[str, str | None]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for t in parents:
        seen, u = set(), t
        while u is not None and u not in seen:
            seen.add(u)
            u = parents.get(u)
        out[t] = seen
    return out

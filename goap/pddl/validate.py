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
from itertools import product

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


def plan_steps(names: Sequence[str]) -> list[Step]:
    """The PDDL steps of a goap plan: the goal actions of an ADL goal (``@goal~k``) left out (`goap.pddl.normal`)."""
    return [goap_step(n) for n in names if not n.startswith("@")]


def goap_step(name: str, lineno: int | None = None) -> Step:
    """``stack(a,b)`` (a grounded action's name) as a step; ``handempty``-style names have no arguments. A
    ``~k`` suffix (a second variant of the same step, from a disjunctive precondition) is dropped."""
    m = re.fullmatch(r"([^\s(),~]+)(?:\(([^\s()]*)\))?(?:~\d+)?", name.strip())
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
    by_type: dict[str, list[str]] = {}
    for obj, t in sorted(problem.objects.items()):
        for sup in types_of.get(t, {t}):
            by_type.setdefault(sup, []).append(obj)

    def objects(types: tuple[str, ...]) -> list[str]:
        return sorted({o for t in types for o in by_type.get(t, ())})
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
        if failed is None and s.formula is not None and not _holds(s.formula, args, {}, state, s.qvars, objects):
            failed = "(the ADL precondition)"
        if failed:
            return PlanCheck(False, None, len(plan), f"{where}: precondition {failed} is false")
        # Every conditional effect is judged on the state before the step; deletes, then adds.
        dels = {_ground(a, args) for a in s.delete}
        adds = {_ground(a, args) for a in s.add}
        for ce in s.when:
            pools = [objects(s.qvars[v][1]) for v in ce.vars]
            for combo in product(*pools):
                env = dict(zip(ce.vars, combo, strict=True))
                if ce.cond is None or _holds(ce.cond, args, env, state, s.qvars, objects):
                    dels |= {_ground_env(a, args, env) for a in ce.delete}
                    adds |= {_ground_env(a, args, env) for a in ce.add}
        state = (state - dels) | adds
        c = _cost(s, args, problem)
        if c is None:
            return PlanCheck(False, None, len(plan), f"{where}: its cost term has no value in the problem")
        cost += c
    if problem.goal_formula is not None and not _holds(problem.goal_formula, (), {}, state, problem.goal_qvars,
                                                        objects):
        return PlanCheck(False, None, len(plan), "the goal is false at the end")
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


def _ground_env(a: Atom, args: tuple[str, ...], env: dict[int, str]) -> tuple[str, tuple[str, ...]]:
    return a.pred, tuple((env[x] if x in env else args[x]) if isinstance(x, int) else x for x in a.args)


def _holds(f: tuple, args: tuple[str, ...], env: dict[int, str], state: set, qvars: dict, objects) -> bool:
    """Whether an ADL formula holds in ``state``, quantifiers by enumerating the objects of their types."""
    kind = f[0]
    if kind == "atom":
        return _ground_env(f[1], args, env) in state
    if kind == "eq":
        x, y = ((env[t] if t in env else args[t]) if isinstance(t, int) else t for t in f[1:])
        return x == y
    if kind == "not":
        return not _holds(f[1], args, env, state, qvars, objects)
    if kind == "and":
        return all(_holds(g, args, env, state, qvars, objects) for g in f[1])
    if kind == "or":
        return any(_holds(g, args, env, state, qvars, objects) for g in f[1])
    if kind == "imply":
        return not _holds(f[1], args, env, state, qvars, objects) or _holds(f[2], args, env, state, qvars, objects)
    test = all if kind == "forall" else any
    variables = f[1]
    return test(_holds(f[2], args, {**env, **dict(zip(variables, combo, strict=True))}, state, qvars, objects)
                for combo in product(*(objects(qvars[v][1]) for v in variables)))


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

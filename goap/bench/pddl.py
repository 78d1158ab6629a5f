"""STRIPS PDDL import: parse a domain and a problem, ground them, and compile a goap `Domain`.

Supported: the requirements ``:strips :typing :negative-preconditions :equality :action-costs`` (types are
accepted without ``:typing`` being declared, as the IPC miconic files need); types with inheritance and
``(either ...)``; constants; preconditions that are an ``and`` of atoms, negated atoms, ``(= ?x ?y)`` and
``(not (= ?x ?y))``; effects that are an ``and`` of atoms, negated atoms and ``(increase (total-cost) N)``
(``N`` a number or a function term given in the problem's ``:init``); goals that are an ``and`` of atoms and
negated atoms. Anything else (conditional or quantified effects, disjunctions, derived predicates, durative
actions, numeric fluents) is a `PddlError` naming the file, line and construct; keywords and names are
case-insensitive and are lower-cased.

Grounding, as planners usually do it:

* Reachability: starting from the initial atoms, every action schema is instantiated against the atoms
  reached so far (positive preconditions only: the delete relaxation), and the add effects of those
  instances are added, until nothing changes. Atoms and actions never reached are dropped.
* Static predicates (in no action's effects) are constants: they prune instantiation early (preconditions on
  them are matched first, through per-predicate indexes) and vanish from the compiled domain.
* Every reachable atom of a changing predicate becomes one bool fact named like ``on(a,b)``; every reachable
  action instance becomes an action named like ``stack(a,b)`` with cost 1 (or its action cost). An atom both
  added and deleted by an action ends up true, as in STRIPS semantics. The goal is one goal named ``goal``.

``load_pddl(domain_file, problem_file)`` gives a `PddlTask`; its domain's default state is the initial state.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

from goap.domain import Domain, DomainError, State, domain_from_spec

SUPPORTED_REQUIREMENTS = (":strips", ":typing", ":negative-preconditions", ":equality", ":action-costs")
GOAL_NAME = "goal"


class PddlError(DomainError):
    """A PDDL file that cannot be read or is outside the supported STRIPS fragment."""


# --- S-expressions ---------------------------------------------------------------------------------------------
class Sym(str):
    """A lower-cased symbol with the line it was read from."""

    line: int

    def __new__(cls, text: str, line: int) -> Sym:
        obj = super().__new__(cls, text)
        obj.line = line
        return obj


class Expr(list):
    """A parenthesised list with the line of its opening parenthesis."""

    def __init__(self, line: int):
        super().__init__()
        self.line = line


_TOKEN = re.compile(r"\s+|;[^\n]*|\(|\)|[^\s();]+")


def parse_sexpr(text: str, file: str | None = None) -> list[Expr | Sym]:
    """Every top-level expression of a PDDL text; PddlError with the line on unbalanced parentheses."""
    line = 1
    stack: list[Expr] = []
    top: list[Expr | Sym] = []
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok[0].isspace() or tok[0] == ";":
            line += tok.count("\n")
            continue
        if tok == "(":
            e = Expr(line)
            (stack[-1] if stack else top).append(e)
            stack.append(e)
        elif tok == ")":
            if not stack:
                raise PddlError("syntax error: unexpected ')'", file=file, line=line)
            stack.pop()
        else:
            (stack[-1] if stack else top).append(Sym(tok.lower(), line))
    if stack:
        raise PddlError("syntax error: '(' is never closed", file=file, line=stack[-1].line)
    return top


# --- the lifted task -------------------------------------------------------------------------------------------
Term = int | str  # a parameter index or an object name


@dataclass
class _Atom:
    pred: str
    args: tuple[Term, ...]
    line: int


@dataclass
class _Schema:
    name: str
    params: list[tuple[str, tuple[str, ...]]]  # (variable, allowed types)
    pos: list[_Atom] = field(default_factory=list)
    neg: list[_Atom] = field(default_factory=list)
    eq: list[tuple[Term, Term]] = field(default_factory=list)
    neq: list[tuple[Term, Term]] = field(default_factory=list)
    add: list[_Atom] = field(default_factory=list)
    delete: list[_Atom] = field(default_factory=list)
    cost: Any = None  # None (unit), a number, or _Atom (a function term)
    line: int = 0


@dataclass
class _Lifted:
    name: str
    requirements: set[str]
    parents: dict[str, str | None]  # type -> parent type
    constants: dict[str, str]  # object -> type
    predicates: dict[str, tuple[tuple[str, ...], ...]]  # name -> argument types
    functions: dict[str, int]  # name -> arity
    schemas: list[_Schema]


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

    @property
    def state(self) -> State:
        """The initial state as a value tuple."""
        return self.domain.state(self.start)

    @property
    def goal(self) -> int:
        return self.domain.goal_index(GOAL_NAME)


def load_pddl(domain_path: str | Path, problem_path: str | Path, name: str | None = None) -> PddlTask:
    """Parse, ground and compile a STRIPS domain file and problem file."""
    t0 = time.perf_counter()
    dfile, pfile = str(domain_path), str(problem_path)
    lifted = _read_domain(_read(dfile), dfile)
    problem = _read_problem(_read(pfile), pfile, lifted)
    name = name or _task_name(Path(problem_path))
    domain, start, n_static = _ground(lifted, problem, name, pfile)
    return PddlTask(
        domain=domain, start=start, name=name, n_facts=len(domain.facts), n_actions=len(domain.actions),
        n_static=n_static, ground_seconds=time.perf_counter() - t0, domain_file=dfile, problem_file=pfile,
    )


def pddl_tasks(root: str | Path) -> list[tuple[Path, Path, str]]:
    """``(domain.pddl, taskNN.pddl, "folder/taskNN")`` for every task under ``root``, sorted by name.

    ``root`` holds one folder per domain, each with a ``domain.pddl`` and its problem files (or is such a
    folder itself).
    """
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"no PDDL task folder at {root}")
    folders = [root] if (root / "domain.pddl").is_file() else sorted(p for p in root.iterdir() if p.is_dir())
    out = []
    for folder in folders:
        dom = folder / "domain.pddl"
        if not dom.is_file():
            continue
        for prob in sorted(folder.glob("*.pddl")):
            if prob.name != "domain.pddl":
                out.append((dom, prob, f"{folder.name}/{prob.stem}"))
    return out


def optimal_costs(root: str | Path) -> dict[str, float | None]:
    """``{"blocks/task01": 6, ...}`` from ``root/optimal.json`` (None where unknown); empty if there is none."""
    path = Path(root) / "optimal.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read {path}: {e}") from None
    problems = data.get("problems", data) if isinstance(data, dict) else {}
    out: dict[str, float | None] = {}
    for key, info in problems.items():
        if isinstance(info, dict) and key != "meta":
            cost = info.get("optimal_cost")
            out[key[:-5] if key.endswith(".pddl") else key] = None if cost is None else float(cost)
    return out


def _task_name(problem: Path) -> str:
    return f"{problem.parent.name}/{problem.stem}" if problem.parent.name else problem.stem


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise PddlError(f"cannot read the file: {e.strerror or e}", file=path) from None


# --- reading the domain ----------------------------------------------------------------------------------------
class _Reader:
    """Helpers that raise PddlError at the right line of one file."""

    def __init__(self, file: str):
        self.file = file

    def fail(self, message: str, where: Any = None, item: str | None = None) -> PddlError:
        return PddlError(message, item=item, file=self.file, line=getattr(where, "line", None))

    def expect_list(self, x: Any, what: str, where: Any) -> Expr:
        if not isinstance(x, Expr):
            raise self.fail(f"syntax error: expected {what} in parentheses, got {x!r}", getattr(x, "line", where))
        return x

    def expect_name(self, x: Any, what: str, where: Any) -> Sym:
        if not isinstance(x, Sym) or x.startswith(("?", ":")):
            raise self.fail(f"syntax error: expected {what}, got {_show(x)}", x if isinstance(x, Sym) else where)
        return x

    def define(self, top: list[Expr | Sym], kind: str) -> tuple[Sym, list[Any], Expr]:
        if len(top) != 1 or not isinstance(top[0], Expr):
            where = top[1] if len(top) > 1 else (top[0] if top else None)
            raise self.fail(f"syntax error: expected exactly one (define ({kind} NAME) ...)", where)
        d = top[0]
        if len(d) < 2 or d[0] != "define" or not isinstance(d[1], Expr) or len(d[1]) != 2 or d[1][0] != kind:
            raise self.fail(f"syntax error: expected (define ({kind} NAME) ...)", d)
        return self.expect_name(d[1][1], f"a {kind} name", d[1]), list(d[2:]), d

    def typed_list(self, items: list[Any], where: Any, what: str) -> list[tuple[Sym, tuple[str, ...]]]:
        """``a b - t c - (either u v) d`` -> [(a, (t,)), (b, (t,)), (c, (u, v)), (d, ("object",))]."""
        out: list[tuple[Sym, tuple[str, ...]]] = []
        pending: list[Sym] = []
        i = 0
        while i < len(items):
            x = items[i]
            if x == "-":
                if i + 1 >= len(items):
                    raise self.fail(f"syntax error: '-' without a type in the {what}", x)
                t = items[i + 1]
                if isinstance(t, Expr):
                    if len(t) < 2 or t[0] != "either":
                        raise self.fail("syntax error: a type is a name or (either TYPE ...)", t)
                    types = tuple(self.expect_name(u, "a type name", t) for u in t[1:])
                else:
                    types = (self.expect_name(t, "a type name", x),)
                if not pending:
                    raise self.fail(f"syntax error: a type with nothing before it in the {what}", x)
                out.extend((p, types) for p in pending)
                pending = []
                i += 2
                continue
            if not isinstance(x, Sym):
                at = x if hasattr(x, "line") else where
                raise self.fail(f"syntax error: unexpected {_show(x)} in the {what}", at)
            pending.append(x)
            i += 1
        out.extend((p, ("object",)) for p in pending)
        return out


def _show(x: Any) -> str:
    if isinstance(x, Expr):
        return "(" + " ".join(_show(y) for y in x) + ")"
    return repr(str(x))


_REJECTED_SECTIONS = {
    ":derived": "derived predicates", ":durative-action": "durative actions", ":constraints": "constraints",
    ":process": "processes", ":event": "events",
}
_REJECTED_CONNECTIVES = {"or", "imply", "exists", "forall", "when"}


def _check_requirements(r: _Reader, sec: Expr) -> set[str]:
    reqs = set()
    for x in sec[1:]:
        if not isinstance(x, Sym) or not x.startswith(":"):
            raise r.fail(f"syntax error: expected a requirement like :strips, got {_show(x)}", sec)
        if x not in SUPPORTED_REQUIREMENTS:
            raise r.fail(
                f"unsupported requirement {x} (supported: {' '.join(SUPPORTED_REQUIREMENTS)})", x, item="requirements"
            )
        reqs.add(str(x))
    return reqs


def _read_domain(text: str, file: str) -> _Lifted:
    r = _Reader(file)
    name, sections, _ = r.define(parse_sexpr(text, file), "domain")
    lifted = _Lifted(str(name), set(), {"object": None}, {}, {}, {}, [])
    for sec in sections:
        sec = r.expect_list(sec, "a domain section", sec)
        head = sec[0] if sec else None
        if not isinstance(head, Sym) or not head.startswith(":"):
            raise r.fail(f"syntax error: expected a section like (:predicates ...), got {_show(sec)}", sec)
        if head == ":requirements":
            lifted.requirements |= _check_requirements(r, sec)
        elif head == ":types":
            for t, parents in r.typed_list(list(sec[1:]), sec, "types"):
                if len(parents) != 1:
                    raise r.fail("(either ...) is not allowed as a parent type", t, item=f"type '{t}'")
                if t == "object":
                    continue
                lifted.parents[str(t)] = parents[0]
            for parent in list(lifted.parents.values()):
                if parent is not None and parent not in lifted.parents:
                    lifted.parents[parent] = "object"
        elif head == ":constants":
            for obj, types in r.typed_list(list(sec[1:]), sec, "constants"):
                lifted.constants[str(obj)] = _object_type(r, obj, types)
        elif head == ":predicates":
            for p in sec[1:]:
                p = r.expect_list(p, "a predicate", sec)
                pname = r.expect_name(p[0] if p else None, "a predicate name", p)
                if pname in lifted.predicates:
                    raise r.fail("duplicate predicate", p, item=f"predicate '{pname}'")
                args = r.typed_list(list(p[1:]), p, f"predicate '{pname}'")
                lifted.predicates[str(pname)] = tuple(types for _, types in args)
        elif head == ":functions":
            _read_functions(r, lifted, sec)
        elif head == ":action":
            lifted.schemas.append(_read_action(r, lifted, sec))
        elif head in _REJECTED_SECTIONS:
            raise r.fail(f"unsupported construct: {_REJECTED_SECTIONS[head]} ({head})", sec)
        else:
            raise r.fail(f"unknown or unsupported domain section {head}", sec)
    names = [s.name for s in lifted.schemas]
    for s in lifted.schemas:
        if names.count(s.name) > 1:
            raise r.fail("duplicate action name", s, item=f"action '{s.name}'")
    return lifted


def _read_functions(r: _Reader, lifted: _Lifted, sec: Expr) -> None:
    items = list(sec[1:])
    i = 0
    while i < len(items):
        f = items[i]
        if f == "-":  # a function type, such as "- number"
            t = items[i + 1] if i + 1 < len(items) else None
            if t != "number":
                raise r.fail(f"unsupported function type {_show(t) if t is not None else ''} (only number)", f)
            i += 2
            continue
        f = r.expect_list(f, "a function", sec)
        fname = r.expect_name(f[0] if f else None, "a function name", f)
        lifted.functions[str(fname)] = len(r.typed_list(list(f[1:]), f, f"function '{fname}'"))
        i += 1


def _object_type(r: _Reader, obj: Sym, types: tuple[str, ...]) -> str:
    if len(types) != 1:
        raise r.fail("an object must have a single type", obj, item=f"object '{obj}'")
    return types[0]


def _read_action(r: _Reader, lifted: _Lifted, sec: Expr) -> _Schema:
    aname = r.expect_name(sec[1] if len(sec) > 1 else None, "an action name", sec)
    item = f"action '{aname}'"
    parts: dict[str, Any] = {}
    rest = list(sec[2:])
    for i in range(0, len(rest), 2):
        key = rest[i]
        if not isinstance(key, Sym) or key not in (":parameters", ":precondition", ":effect"):
            raise r.fail(f"syntax error: expected :parameters, :precondition or :effect, got {_show(key)}",
                         key if hasattr(key, "line") else sec, item)
        if i + 1 >= len(rest):
            raise r.fail(f"syntax error: {key} without a value", key, item)
        parts[str(key)] = rest[i + 1]
    params_expr = parts.get(":parameters", Expr(sec.line))
    params_expr = r.expect_list(params_expr, ":parameters", sec)
    params = r.typed_list(list(params_expr), params_expr, f"parameters of {item}")
    var_index: dict[str, int] = {}
    for v, types in params:
        if not v.startswith("?"):
            raise r.fail(f"syntax error: parameter {v!r} must start with '?'", v, item)
        if v in var_index:
            raise r.fail(f"duplicate parameter {v}", v, item)
        var_index[str(v)] = len(var_index)
        for t in types:
            _check_type(r, lifted, t, v, item)
    schema = _Schema(str(aname), [(str(v), tuple(types)) for v, types in params], line=sec.line)
    ctx = _Context(r, lifted, var_index, item)
    if ":precondition" in parts:
        ctx.condition(parts[":precondition"], schema, sec)
    if ":effect" in parts:
        ctx.effect(parts[":effect"], schema, sec)
    if not schema.add and not schema.delete:
        raise r.fail("an action needs at least one effect", sec, item)
    if schema.cost is None and ":action-costs" in lifted.requirements:
        schema.cost = 0.0  # IPC semantics: no increase means cost 0, which the engine refuses below
    return schema


def _check_type(r: _Reader, lifted: _Lifted, t: str, where: Any, item: str) -> None:
    if t not in lifted.parents:
        raise r.fail(f"unknown type '{t}'", where, item)


class _Context:
    """Reads the formulas of one action (or of a problem's goal) into a schema."""

    def __init__(self, r: _Reader, lifted: _Lifted, var_index: dict[str, int], item: str, objects: Any = None):
        self.r, self.lifted, self.vars, self.item = r, lifted, var_index, item
        self.objects = objects if objects is not None else lifted.constants

    def term(self, x: Any, where: Any) -> Term:
        if not isinstance(x, Sym):
            raise self.r.fail(f"syntax error: expected a variable or an object, got {_show(x)}", where, self.item)
        if x.startswith("?"):
            if x not in self.vars:
                raise self.r.fail(f"unknown variable {x}", x, self.item)
            return self.vars[x]
        if x not in self.objects:
            raise self.r.fail(f"unknown object or constant '{x}'", x, self.item)
        return str(x)

    def atom(self, e: Any, where: Any) -> _Atom:
        e = self.r.expect_list(e, "an atom", where)
        pred = e[0] if e else None
        if isinstance(pred, Sym) and pred in _REJECTED_CONNECTIVES:
            raise self.r.fail(f"unsupported construct: ({pred} ...) (only STRIPS: and, not, =)", e, self.item)
        pred = self.r.expect_name(pred, "a predicate name", e)
        if pred not in self.lifted.predicates:
            raise self.r.fail(f"unknown predicate '{pred}'", e, self.item)
        arity = len(self.lifted.predicates[pred])
        if len(e) - 1 != arity:
            raise self.r.fail(f"wrong arity: '{pred}' takes {arity} argument(s), got {len(e) - 1}", e, self.item)
        return _Atom(str(pred), tuple(self.term(x, e) for x in e[1:]), e.line)

    def literals(self, e: Any, where: Any) -> Iterator[tuple[bool, Expr]]:
        """(positive, atom expression) for each literal of an ``and`` of literals."""
        e = self.r.expect_list(e, "a formula", where)
        if not e:
            return
        head = e[0]
        if head == "and":
            for x in e[1:]:
                yield from self.literals(x, e)
        elif head == "not":
            if len(e) != 2:
                raise self.r.fail("syntax error: (not X) takes exactly one formula", e, self.item)
            inner = self.r.expect_list(e[1], "a formula", e)
            if inner and inner[0] in ("and", "not", *_REJECTED_CONNECTIVES):
                raise self.r.fail(f"unsupported construct: (not ({inner[0]} ...)) (only STRIPS literals)", e, self.item)
            yield False, inner
        elif isinstance(head, Sym) and head in _REJECTED_CONNECTIVES:
            raise self.r.fail(f"unsupported construct: ({head} ...) (only STRIPS: and, not, =)", e, self.item)
        else:
            yield True, e

    def condition(self, e: Any, schema: _Schema, where: Any) -> None:
        for positive, lit in self.literals(e, where):
            if lit and lit[0] == "=":
                if len(lit) != 3:
                    raise self.r.fail("syntax error: (= a b) takes two terms", lit, self.item)
                pair = (self.term(lit[1], lit), self.term(lit[2], lit))
                (schema.eq if positive else schema.neq).append(pair)
                continue
            # Negative preconditions are accepted even when :negative-preconditions is not declared (as types are
            # without :typing): the meaning is unambiguous and many published files leave the flags out.
            (schema.pos if positive else schema.neg).append(self.atom(lit, where))

    def effect(self, e: Any, schema: _Schema, where: Any) -> None:
        e = self.r.expect_list(e, "an effect", where)
        if not e:
            return
        head = e[0]
        if head == "and":
            for x in e[1:]:
                self.effect(x, schema, e)
        elif head == "increase":
            self.increase(e, schema)
        elif head in ("decrease", "assign", "scale-up", "scale-down"):
            raise self.r.fail(f"unsupported construct: numeric effect ({head} ...)", e, self.item)
        elif head in ("when", "forall"):
            what = "conditional effects" if head == "when" else "universal effects"
            raise self.r.fail(f"unsupported construct: {what} ({head} ...)", e, self.item)
        elif head == "not":
            if len(e) != 2:
                raise self.r.fail("syntax error: (not X) takes exactly one atom", e, self.item)
            schema.delete.append(self.atom(e[1], e))
        else:
            schema.add.append(self.atom(e, where))

    def increase(self, e: Expr, schema: _Schema) -> None:
        if len(e) != 3 or not isinstance(e[1], Expr) or list(e[1]) != ["total-cost"]:
            raise self.r.fail("unsupported construct: only (increase (total-cost) N) is supported", e, self.item)
        if schema.cost is not None:
            raise self.r.fail("an action may increase total-cost only once", e, self.item)
        value = e[2]
        if isinstance(value, Sym):
            try:
                schema.cost = float(value)
            except ValueError:
                raise self.r.fail(f"expected a number or a function term, got {_show(value)}", e, self.item) from None
            return
        value = self.r.expect_list(value, "a function term", e)
        fname = value[0] if value else None
        if fname not in self.lifted.functions:
            raise self.r.fail(f"unknown function {_show(fname) if fname is not None else '()'}", value, self.item)
        if len(value) - 1 != self.lifted.functions[fname]:
            raise self.r.fail(f"wrong arity for function '{fname}'", value, self.item)
        schema.cost = _Atom(str(fname), tuple(self.term(x, value) for x in value[1:]), value.line)


# --- reading the problem ---------------------------------------------------------------------------------------
@dataclass
class _Problem:
    name: str
    objects: dict[str, str]  # object -> type (with the domain's constants)
    init: set[tuple[str, tuple[str, ...]]]
    values: dict[tuple[str, tuple[str, ...]], float]  # function values from (= (f args) N)
    goal_pos: list[_Atom]
    goal_neg: list[_Atom]
    goal_line: int


def _read_problem(text: str, file: str, lifted: _Lifted) -> _Problem:
    r = _Reader(file)
    name, sections, define = r.define(parse_sexpr(text, file), "problem")
    objects = dict(lifted.constants)
    init: set[tuple[str, tuple[str, ...]]] = set()
    values: dict[tuple[str, tuple[str, ...]], float] = {}
    goal = None
    init_expr = None
    for sec in sections:
        sec = r.expect_list(sec, "a problem section", sec)
        head = sec[0] if sec else None
        if head == ":domain":
            if len(sec) != 2 or sec[1] != lifted.name:
                raise r.fail(f"the problem is for domain {_show(sec[1]) if len(sec) > 1 else '?'}, "
                             f"the domain file defines '{lifted.name}'", sec)
        elif head == ":requirements":
            lifted.requirements |= _check_requirements(r, sec)
        elif head == ":objects":
            for obj, types in r.typed_list(list(sec[1:]), sec, "objects"):
                t = _object_type(r, obj, types)
                _check_type(r, lifted, t, obj, f"object '{obj}'")
                objects[str(obj)] = t
        elif head == ":init":
            init_expr = sec
        elif head == ":goal":
            if len(sec) != 2:
                raise r.fail("syntax error: (:goal FORMULA) takes one formula", sec)
            goal = sec
        elif head == ":metric":
            if len(sec) != 3 or sec[1] != "minimize" or not isinstance(sec[2], Expr) or list(sec[2]) != ["total-cost"]:
                raise r.fail("unsupported construct: only (:metric minimize (total-cost)) is supported", sec)
        elif head in (":constraints", ":length"):
            raise r.fail(f"unsupported construct: {head}", sec)
        else:
            raise r.fail(f"unknown or unsupported problem section {_show(head) if head else '()'}", sec)
    ctx = _Context(r, lifted, {}, "init", objects)
    for e in init_expr[1:] if init_expr is not None else []:
        e = r.expect_list(e, "an initial atom", init_expr)
        if e and e[0] == "=":
            if len(e) != 3 or not isinstance(e[1], Expr) or not isinstance(e[2], Sym):
                raise r.fail("syntax error: expected (= (FUNCTION ARGS) NUMBER)", e, "init")
            f = e[1]
            if not f or f[0] not in lifted.functions or len(f) - 1 != lifted.functions[f[0]]:
                raise r.fail(f"unknown function or wrong arity: {_show(f)}", f, "init")
            try:
                values[(str(f[0]), tuple(str(ctx.term(x, f)) for x in f[1:]))] = float(e[2])
            except ValueError:
                raise r.fail(f"expected a number, got {_show(e[2])}", e, "init") from None
            continue
        if e and e[0] == "not":
            continue  # closed world: a negated initial atom says nothing new
        a = ctx.atom(e, init_expr)
        init.add((a.pred, tuple(str(x) for x in a.args)))
    if goal is None:
        raise r.fail("the problem has no (:goal ...)", define)
    gctx = _Context(r, lifted, {}, "goal", objects)
    pos, neg = [], []
    for positive, lit in gctx.literals(goal[1], goal):
        if lit and lit[0] == "=":
            raise r.fail("unsupported construct: equality in the goal", lit, "goal")
        (pos if positive else neg).append(gctx.atom(lit, goal))
    return _Problem(str(name), objects, init, values, pos, neg, goal.line)


# --- grounding -------------------------------------------------------------------------------------------------
GroundAtom = tuple[str, tuple[str, ...]]


class _Index:
    """Per-predicate lookup of reachable atoms by the values at some argument positions."""

    def __init__(self, atoms: dict[str, set[tuple[str, ...]]]):
        self.atoms = atoms
        self.cache: dict[tuple[str, tuple[int, ...]], dict[tuple[str, ...], list[tuple[str, ...]]]] = {}

    def lookup(self, pred: str, positions: tuple[int, ...], key: tuple[str, ...]) -> list[tuple[str, ...]]:
        table = self.cache.get((pred, positions))
        if table is None:
            table = {}
            for args in self.atoms.get(pred, ()):
                table.setdefault(tuple(args[p] for p in positions), []).append(args)
            self.cache[(pred, positions)] = table
        return table.get(key, [])


def _subtypes(parents: dict[str, str | None]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {t: set() for t in parents}
    for t in parents:
        seen, u = set(), t
        while u is not None and u not in seen:
            seen.add(u)
            out.setdefault(u, set()).add(t)
            u = parents.get(u)
    return out


def _ground(lifted: _Lifted, problem: _Problem, name: str, file: str) -> tuple[Domain, dict[str, bool], int]:
    subtypes = _subtypes(lifted.parents)
    objects_of: dict[str, set[str]] = {t: set() for t in lifted.parents}
    for obj, t in problem.objects.items():
        for sup in (u for u, subs in subtypes.items() if t in subs):
            objects_of[sup].add(obj)

    fluent = {a.pred for s in lifted.schemas for a in (*s.add, *s.delete)}
    reached: dict[str, set[tuple[str, ...]]] = {p: set() for p in lifted.predicates}
    for pred, args in problem.init:
        reached[pred].add(args)
    static_init = {(p, a) for p, a in problem.init if p not in fluent}

    instances: list[tuple[_Schema, tuple[str, ...]]] = []
    for _ in range(1_000_000):
        index = _Index(reached)
        instances = [(s, b) for s in lifted.schemas for b in _bindings(s, index, objects_of, reached, fluent)]
        grew = False
        for s, b in instances:
            for a in s.add:
                args = tuple(b[x] if isinstance(x, int) else x for x in a.args)
                if args not in reached[a.pred]:
                    reached[a.pred].add(args)
                    grew = True
        if not grew:
            break

    def fact_name(pred: str, args: tuple[str, ...]) -> str:
        return f"{pred}({','.join(args)})" if args else pred

    facts: dict[GroundAtom, str] = {}
    for pred in lifted.predicates:
        if pred in fluent:
            for args in sorted(reached[pred]):
                facts[(pred, args)] = fact_name(pred, args)

    def ground(a: _Atom, b: tuple[str, ...]) -> GroundAtom:
        return a.pred, tuple(b[x] if isinstance(x, int) else x for x in a.args)

    # Goal: static atoms are decided now; unreachable ones stay as facts no action makes true (NO_PLAN).
    want: dict[str, bool] = {}
    extra_facts: dict[str, bool] = {}  # facts that exist only for the goal, with their initial value
    for positive, atoms in ((True, problem.goal_pos), (False, problem.goal_neg)):
        for a in atoms:
            g = ground(a, ())
            holds_initially = g in problem.init
            if g in facts:
                want[facts[g]] = positive
            elif (a.pred not in fluent and holds_initially == positive) or (a.pred in fluent and not positive):
                continue  # always true: a static atom as wanted, or a never-reached atom wanted false
            else:
                extra_facts[fact_name(*g)] = holds_initially
                want[fact_name(*g)] = positive
    if not want:
        extra_facts["goal-holds-statically"] = True
        want["goal-holds-statically"] = True

    actions: dict[str, dict[str, Any]] = {}
    rank = {id(s): i for i, s in enumerate(lifted.schemas)}
    for s, b in sorted(instances, key=lambda sb: (rank[id(sb[0])], sb[1])):  # the same order in every run
        pre: dict[str, bool] = {}
        dead = False
        for a in s.pos:
            g = ground(a, b)
            if a.pred in fluent:
                pre[facts[g]] = True
        for a in s.neg:
            g = ground(a, b)
            if a.pred in fluent and g in facts:
                if pre.get(facts[g]) is True:
                    dead = True  # needs p and not p
                pre[facts[g]] = False
        if dead:
            continue
        effects: dict[str, bool] = {}
        for a in s.delete:
            g = ground(a, b)
            if g in facts:
                effects[facts[g]] = False
        for a in s.add:
            effects[facts[ground(a, b)]] = True  # add wins over delete
        if all(pre.get(f) is v for f, v in effects.items()):
            continue  # changes nothing wherever it applies (move(a,a)): never useful, so dropped
        aname = fact_name(s.name, b)
        cost = _cost(s, b, problem, file)
        actions[aname] = {"cost": cost, "pre": pre, "effects": effects}
    if not actions:
        raise PddlError("no action can ever apply in this task (after grounding)", file=file, line=problem.goal_line)

    spec_facts: dict[str, Any] = {n: (atom in problem.init) for atom, n in facts.items()}
    spec_facts.update(extra_facts)
    spec = {
        "name": name,
        "facts": spec_facts,
        "actions": actions,
        "goals": {GOAL_NAME: {"priority": 1, "want": want}},
    }
    try:
        domain = domain_from_spec(spec)
    except DomainError as e:
        raise PddlError(e.message, item=e.item, file=file) from None
    start = {n: True for n, v in spec_facts.items() if v}
    return domain, start, len(static_init)


def _cost(s: _Schema, b: tuple[str, ...], problem: _Problem, file: str) -> float:
    if s.cost is None:
        return 1.0
    if isinstance(s.cost, _Atom):
        key = (s.cost.pred, tuple(b[x] if isinstance(x, int) else x for x in s.cost.args))
        if key not in problem.values:
            raise PddlError(f"no value for ({key[0]} {' '.join(key[1])}) in :init", item=f"action '{s.name}'",
                            file=file, line=s.cost.line)
        cost = problem.values[key]
    else:
        cost = float(s.cost)
    if not cost > 0:
        raise PddlError(f"action cost {cost:g}: the engine needs costs > 0", item=f"action '{s.name}'", file=file,
                        line=s.line)
    return cost


def _bindings(
    s: _Schema,
    index: _Index,
    objects_of: dict[str, set[str]],
    reached: dict[str, set[tuple[str, ...]]],
    fluent: set[str],
) -> Iterator[tuple[str, ...]]:
    """Every parameter tuple whose positive preconditions are all reached and whose static negative
    preconditions and (in)equalities hold: a join over the preconditions, static ones first."""
    n = len(s.params)
    allowed = [set().union(*(objects_of.get(t, set()) for t in types)) for _, types in s.params]

    # Order the atoms: at each step the one with the most bound arguments, static before changing, then smaller.
    bound: set[int] = set()
    order: list[_Atom] = []
    left = list(s.pos)
    while left:
        def score(a: _Atom, bound: set[int] = bound) -> tuple[int, int, int]:
            free = len({x for x in a.args if isinstance(x, int) and x not in bound})
            return (free, a.pred in fluent, len(reached.get(a.pred, ())))

        best = min(left, key=score)
        left.remove(best)
        order.append(best)
        bound |= {x for x in best.args if isinstance(x, int)}
    rest = [i for i in range(n) if i not in bound]

    # Each check runs at the first step after which all its variables are bound.
    steps: list[set[int]] = []
    seen: set[int] = set()
    for a in order:
        seen |= {x for x in a.args if isinstance(x, int)}
        steps.append(set(seen))
    for i in rest:
        seen.add(i)
        steps.append(set(seen))
    checks: list[list[tuple[str, Any]]] = [[] for _ in range(len(steps) + 1)]

    def place(kind: str, payload: Any, vars_: set[int]) -> None:
        k = next((i + 1 for i, st in enumerate(steps) if vars_ <= st), 0)
        checks[k].append((kind, payload))

    for pair in s.eq:
        place("eq", pair, {x for x in pair if isinstance(x, int)})
    for pair in s.neq:
        place("neq", pair, {x for x in pair if isinstance(x, int)})
    for a in s.neg:
        if a.pred not in fluent:
            place("neg", a, {x for x in a.args if isinstance(x, int)})

    binding: list[str | None] = [None] * n

    def val(x: Term) -> str:
        return binding[x] if isinstance(x, int) else x  # type: ignore[return-value]

    def ok(k: int) -> bool:
        for kind, payload in checks[k]:
            if kind == "eq" and val(payload[0]) != val(payload[1]):
                return False
            if kind == "neq" and val(payload[0]) == val(payload[1]):
                return False
            if kind == "neg" and tuple(val(x) for x in payload.args) in reached[payload.pred]:
                return False
        return True

    if not ok(0):
        return

    def search(k: int) -> Iterator[tuple[str, ...]]:
        if k == len(order):
            if not rest:
                yield tuple(binding)  # type: ignore[arg-type]
                return
            for combo in product(*(sorted(allowed[i]) for i in rest)):
                for i, o in zip(rest, combo, strict=True):
                    binding[i] = o
                if all(ok(len(order) + 1 + j) for j in range(len(rest))):
                    yield tuple(binding)  # type: ignore[arg-type]
            for i in rest:
                binding[i] = None
            return
        a = order[k]
        positions = tuple(p for p, x in enumerate(a.args) if not isinstance(x, int) or binding[x] is not None)
        key = tuple(val(a.args[p]) for p in positions)
        free = [(p, a.args[p]) for p in range(len(a.args)) if p not in positions]
        for args in index.lookup(a.pred, positions, key):
            newly: list[int] = []
            good = True
            for p, x in free:
                if binding[x] is None:
                    if args[p] not in allowed[x]:
                        good = False
                        break
                    binding[x] = args[p]
                    newly.append(x)
                elif binding[x] != args[p]:  # the same variable twice in one atom
                    good = False
                    break
            if good and ok(k + 1):
                yield from search(k + 1)
            for x in newly:
                binding[x] = None

    yield from search(0)

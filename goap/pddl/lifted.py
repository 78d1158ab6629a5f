"""The lifted task: a PDDL domain and problem read from S-expressions into schemas, atoms and objects.

This stage checks what the file says against the supported fragment (see `goap.pddl`) and names the file, line
and item of anything it refuses; it does not ground anything.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from goap.pddl.reader import Expr, Reader, Sym, parse_sexpr, show

SUPPORTED_REQUIREMENTS = (
    ":strips", ":typing", ":negative-preconditions", ":equality", ":action-costs", ":adl", ":conditional-effects",
    ":universal-preconditions", ":existential-preconditions", ":quantified-preconditions",
    ":disjunctive-preconditions",
)
#: Requirements of PDDL 3.1 this importer does not support, with what they allow. A task is judged by what it
#: uses, not by what it declares (IPC files often declare more than they use): declaring one is a warning, and
#: using what it allows is the error, naming the construct, the action and the line.
UNSUPPORTED_REQUIREMENTS = {
    ":derived-predicates": "derived predicates", ":durative-actions": "durative actions",
    ":duration-inequalities": "duration inequalities", ":continuous-effects": "continuous effects",
    ":fluents": "numeric and object fluents", ":numeric-fluents": "numeric fluents",
    ":object-fluents": "object fluents", ":timed-initial-literals": "timed initial literals",
    ":preferences": "preferences", ":constraints": "constraints",
}


Term = int | str  # a parameter index or an object name
#: Deepest nesting of a precondition, effect condition or goal (the reader and the rewriting recurse on it).
MAX_FORMULA_DEPTH = 64


@dataclass
class Atom:
    """A predicate (or function) applied to terms: parameter indices of a schema, or object names."""

    pred: str
    args: tuple[Term, ...]
    line: int


@dataclass
class Schema:
    """An action schema: typed parameters, STRIPS preconditions and effects, and its cost term."""

    name: str
    params: list[tuple[str, tuple[str, ...]]]  # (variable, allowed types)
    pos: list[Atom] = field(default_factory=list)
    neg: list[Atom] = field(default_factory=list)
    eq: list[tuple[Term, Term]] = field(default_factory=list)
    neq: list[tuple[Term, Term]] = field(default_factory=list)
    add: list[Atom] = field(default_factory=list)
    delete: list[Atom] = field(default_factory=list)
    cost: Any = None  # None (unit), a number, or Atom (a function term)
    line: int = 0
    cost_line: int = 0  # the line of its (increase (total-cost) ...), or of the action when there is none
    #: An ADL precondition (see `Formula`), when it is not a conjunction of literals (pos, neg, eq, neq are then
    #: empty); the grounder compiles it away (`goap.pddl.normal`).
    formula: Any = None
    when: list[CondEffect] = field(default_factory=list)  # conditional and universally quantified effects
    qvars: dict[int, tuple[str, tuple[str, ...]]] = field(default_factory=dict)  # quantified variable -> (name, types)
    arity: int = -1  # the PDDL action's own parameters (params may have more: existential ones); -1: all of them


@dataclass
class CondEffect:
    """``(forall (vars) (when cond (and add... (not delete)...)))``: the effect part of ADL.

    ``vars`` are variable indices of the schema (`Schema.qvars`); ``cond`` is a `Formula` or None (always).
    """

    vars: list[int]
    cond: Any
    add: list[Atom] = field(default_factory=list)
    delete: list[Atom] = field(default_factory=list)
    line: int = 0


#: A precondition, effect condition or goal: ("atom", Atom) | ("eq", Term, Term) | ("not", F) | ("and", [F]) |
#: ("or", [F]) | ("imply", F, F) | ("exists", [var], F) | ("forall", [var], F), with variables as indices.
Formula = tuple


@dataclass
class LiftedDomain:
    """A domain file read and checked, before any grounding; ``file`` is where it was read from."""

    name: str
    requirements: set[str]
    parents: dict[str, str | None]  # type -> parent type
    constants: dict[str, str]  # object -> type
    predicates: dict[str, tuple[tuple[str, ...], ...]]  # name -> argument types
    functions: dict[str, int]  # name -> arity
    schemas: list[Schema]
    file: str = ""
    warnings: list[str] = field(default_factory=list)  # "FILE:LINE: what", requirements declared but not used




_REJECTED_SECTIONS = {
    ":derived": "derived predicates (requirement :derived-predicates)",
    ":durative-action": "durative actions (requirement :durative-actions)",
    ":constraints": "constraints (requirement :constraints)", ":process": "processes", ":event": "events",
}
_REJECTED_CONNECTIVES = {"or", "imply", "exists", "forall", "when"}  # in an atom's place: not atoms


def _check_requirements(r: Reader, sec: Expr, warnings: list[str]) -> set[str]:
    reqs = set()
    for x in sec[1:]:
        if not isinstance(x, Sym) or not x.startswith(":"):
            raise r.fail(f"syntax error: expected a requirement like :strips, got {show(x)}", sec)
        if x in UNSUPPORTED_REQUIREMENTS:
            warnings.append(f"{r.file}:{x.line}: requirement {x} is declared but not supported ("
                            f"{UNSUPPORTED_REQUIREMENTS[x]}); it is an error only where the task uses it")
        elif x not in SUPPORTED_REQUIREMENTS:
            warnings.append(f"{r.file}:{x.line}: unknown requirement {x} (ignored)")
        reqs.add(str(x))
    return reqs


def read_domain(text: str, file: str) -> LiftedDomain:
    r = Reader(file)
    name, sections, _ = r.define(parse_sexpr(text, file), "domain")
    lifted = LiftedDomain(str(name), set(), {"object": None}, {}, {}, {}, [], file=file)
    declared: dict[str, Sym] = {}  # each type as first written in :types, for the line of an error
    typed_by: list[tuple[str, Any, str]] = []  # (type, where, item) of predicate arguments and constants
    for sec in sections:
        sec = r.expect_list(sec, "a domain section", sec)
        head = sec[0] if sec else None
        if not isinstance(head, Sym) or not head.startswith(":"):
            raise r.fail(f"syntax error: expected a section like (:predicates ...), got {show(sec)}", sec)
        if head == ":requirements":
            lifted.requirements |= _check_requirements(r, sec, lifted.warnings)
        elif head == ":types":
            for t, parents in r.typed_list(list(sec[1:]), sec, "types"):
                if len(parents) != 1:
                    raise r.fail("(either ...) is not allowed as a parent type", t, item=f"type '{t}'")
                if t == "object":
                    continue
                if str(t) in declared and lifted.parents[str(t)] != parents[0]:
                    raise r.fail(
                        f"declared twice with different parents (first at line {declared[str(t)].line})",
                        t, item=f"type '{t}'",
                    )
                declared.setdefault(str(t), t)
                lifted.parents[str(t)] = parents[0]
            for parent in list(lifted.parents.values()):
                if parent is not None and parent not in lifted.parents:
                    lifted.parents[parent] = "object"
        elif head == ":constants":
            for obj, types in r.typed_list(list(sec[1:]), sec, "constants"):
                lifted.constants[str(obj)] = _object_type(r, obj, types)
                typed_by.append((lifted.constants[str(obj)], obj, f"constant '{obj}'"))
        elif head == ":predicates":
            for p in sec[1:]:
                p = r.expect_list(p, "a predicate", sec)
                pname = r.expect_name(p[0] if p else None, "a predicate name", p)
                if pname in lifted.predicates:
                    raise r.fail("duplicate predicate", p, item=f"predicate '{pname}'")
                args = r.typed_list(list(p[1:]), p, f"predicate '{pname}'")
                lifted.predicates[str(pname)] = tuple(types for _, types in args)
                typed_by.extend((t, v, f"predicate '{pname}'") for v, types in args for t in types)
        elif head == ":functions":
            _read_functions(r, lifted, sec)
        elif head == ":action":
            lifted.schemas.append(_read_action(r, lifted, sec))
        elif head in _REJECTED_SECTIONS:
            raise r.fail(f"unsupported construct: {_REJECTED_SECTIONS[head]} ({head})", sec)
        else:
            raise r.fail(f"unknown or unsupported domain section {head}", sec)
    _check_type_tree(r, lifted, declared)
    for t, where, item in typed_by:  # checked after every section, so that :types may come after its users
        _check_type(r, lifted, t, where, item)
    seen: dict[str, int] = {}
    for s in lifted.schemas:
        if s.name in seen:
            raise r.fail(f"duplicate action name (first defined at line {seen[s.name]})", s, item=f"action '{s.name}'")
        seen[s.name] = s.line
    return lifted


def _check_type_tree(r: Reader, lifted: LiftedDomain, declared: dict[str, Sym]) -> None:
    """Refuse a type that is its own ancestor (``a - b b - a``, ``a - a``): its objects would have no root type,
    and walking up from it would never reach ``object``."""
    done: set[str] = {"object"}
    for start in lifted.parents:
        path: list[str] = []
        t: str | None = start
        while t is not None and t not in done:
            if t in path:
                cycle = path[path.index(t):] + [t]
                at = declared.get(t)
                raise r.fail(f"type cycle: {' - '.join(cycle)}", at, item=f"type '{t}'")
            path.append(t)
            t = lifted.parents.get(t)
        done.update(path)


def _read_functions(r: Reader, lifted: LiftedDomain, sec: Expr) -> None:
    items = list(sec[1:])
    i = 0
    while i < len(items):
        f = items[i]
        if f == "-":  # a function type, such as "- number"
            t = items[i + 1] if i + 1 < len(items) else None
            if t != "number":
                raise r.fail(f"unsupported function type {show(t) if t is not None else ''} (only number)", f)
            i += 2
            continue
        f = r.expect_list(f, "a function", sec)
        fname = r.expect_name(f[0] if f else None, "a function name", f)
        lifted.functions[str(fname)] = len(r.typed_list(list(f[1:]), f, f"function '{fname}'"))
        i += 1


def _object_type(r: Reader, obj: Sym, types: tuple[str, ...]) -> str:
    if len(types) != 1:
        raise r.fail("an object must have a single type", obj, item=f"object '{obj}'")
    return types[0]


def _read_action(r: Reader, lifted: LiftedDomain, sec: Expr) -> Schema:
    aname = r.expect_name(sec[1] if len(sec) > 1 else None, "an action name", sec)
    item = f"action '{aname}'"
    parts: dict[str, Any] = {}
    rest = list(sec[2:])
    for i in range(0, len(rest), 2):
        key = rest[i]
        if not isinstance(key, Sym) or key not in (":parameters", ":precondition", ":effect"):
            raise r.fail(f"syntax error: expected :parameters, :precondition or :effect, got {show(key)}",
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
    schema = Schema(str(aname), [(str(v), tuple(types)) for v, types in params], line=sec.line)
    ctx = _Context(r, lifted, var_index, item)
    if ":precondition" in parts:
        ctx.condition(parts[":precondition"], schema, sec)
    if ":effect" in parts:
        ctx.effect(parts[":effect"], schema, sec)
    if not schema.add and not schema.delete and not any(ce.add or ce.delete for ce in schema.when):
        raise r.fail("an action needs at least one effect", sec, item)
    schema.when = [ce for ce in schema.when if ce.add or ce.delete]
    if schema.cost is None and ":action-costs" in lifted.requirements:
        schema.cost = 0.0  # IPC semantics: an action that does not increase total-cost costs 0
        schema.cost_line = sec.line
    return schema


def _check_type(r: Reader, lifted: LiftedDomain, t: str, where: Any, item: str) -> None:
    if t not in lifted.parents:
        raise r.fail(f"unknown type '{t}'", where, item)


class _Context:
    """Reads the formulas of one action (or of a problem's goal) into a schema."""

    def __init__(self, r: Reader, lifted: LiftedDomain, var_index: dict[str, int], item: str, objects: Any = None):
        self.r, self.lifted, self.vars, self.item = r, lifted, var_index, item
        self.objects = objects if objects is not None else lifted.constants

    def term(self, x: Any, where: Any) -> Term:
        if not isinstance(x, Sym):
            raise self.r.fail(f"syntax error: expected a variable or an object, got {show(x)}", where, self.item)
        if x.startswith("?"):
            if x not in self.vars:
                raise self.r.fail(f"unknown variable {x}", x, self.item)
            return self.vars[x]
        if x not in self.objects:
            raise self.r.fail(f"unknown object or constant '{x}'", x, self.item)
        return str(x)

    def atom(self, e: Any, where: Any) -> Atom:
        e = self.r.expect_list(e, "an atom", where)
        pred = e[0] if e else None
        if isinstance(pred, Sym) and pred in (*_REJECTED_CONNECTIVES, "and", "not"):
            raise self.r.fail(f"unsupported construct: ({pred} ...) where an atom is expected", e, self.item)
        pred = self.r.expect_name(pred, "a predicate name", e)
        if pred not in self.lifted.predicates:
            raise self.r.fail(f"unknown predicate '{pred}'", e, self.item)
        arity = len(self.lifted.predicates[pred])
        if len(e) - 1 != arity:
            raise self.r.fail(f"wrong arity: '{pred}' takes {arity} argument(s), got {len(e) - 1}", e, self.item)
        return Atom(str(pred), tuple(self.term(x, e) for x in e[1:]), e.line)

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

    def formula(self, e: Any, where: Any, schema: Schema | None, depth: int = 0) -> Formula:
        """An ADL formula (`Formula`); quantified variables get new indices, recorded in ``schema.qvars``."""
        e = self.r.expect_list(e, "a formula", where)
        if depth > MAX_FORMULA_DEPTH:
            raise self.r.fail(f"a formula nested more than {MAX_FORMULA_DEPTH} levels deep", e, self.item)
        if not e:
            return ("and", [])
        head = e[0]
        depth += 1
        if head in ("and", "or"):
            return (str(head), [self.formula(x, e, schema, depth) for x in e[1:]])
        if head == "not":
            if len(e) != 2:
                raise self.r.fail("syntax error: (not X) takes exactly one formula", e, self.item)
            return ("not", self.formula(e[1], e, schema, depth))
        if head == "imply":
            if len(e) != 3:
                raise self.r.fail("syntax error: (imply A B) takes two formulas", e, self.item)
            return ("imply", self.formula(e[1], e, schema, depth), self.formula(e[2], e, schema, depth))
        if head in ("exists", "forall"):
            if len(e) != 3:
                raise self.r.fail(f"syntax error: ({head} (VARS) FORMULA) takes a variable list and a formula", e,
                                  self.item)
            with self.quantified(e[1], e, schema) as indices:
                return (str(head), indices, self.formula(e[2], e, schema, depth))
        if head == "when":
            raise self.r.fail("syntax error: (when ...) is an effect, not a condition", e, self.item)
        if head == "=":
            if len(e) != 3:
                raise self.r.fail("syntax error: (= a b) takes two terms", e, self.item)
            return ("eq", self.term(e[1], e), self.term(e[2], e))
        return ("atom", self.atom(e, where))

    @contextlib.contextmanager
    def quantified(self, params: Any, where: Any, schema: Schema | None) -> Iterator[list[int]]:
        """The variables of a quantifier in scope (shadowing outer ones of the same name) while the body is read."""
        if schema is None:
            raise self.r.fail("internal: a quantifier needs a schema", where, self.item)
        params = self.r.expect_list(params, "a variable list", where)
        typed = self.r.typed_list(list(params), params, f"variables of {self.item}")
        saved = dict(self.vars)
        indices = []
        for v, types in typed:
            if not v.startswith("?"):
                raise self.r.fail(f"syntax error: variable {v!r} must start with '?'", v, self.item)
            for t in types:
                _check_type(self.r, self.lifted, t, v, self.item)
            idx = max([*self.vars.values(), *schema.qvars, len(schema.params) - 1]) + 1
            schema.qvars[idx] = (str(v), tuple(types))
            self.vars[str(v)] = idx
            indices.append(idx)
        try:
            yield indices
        finally:
            self.vars = saved

    def condition(self, e: Any, schema: Schema, where: Any) -> None:
        f = self.formula(e, where, schema)
        lits = _conjunction_of_literals(f)
        if lits is None:
            schema.formula = f
            return
        for positive, lit in lits:
            if lit[0] == "eq":
                (schema.eq if positive else schema.neq).append((lit[1], lit[2]))
            else:
                # Negative preconditions are accepted even when :negative-preconditions is not declared (as types
                # are without :typing): the meaning is unambiguous and many published files leave the flags out.
                (schema.pos if positive else schema.neg).append(lit[1])

    def effect(self, e: Any, schema: Schema, where: Any, ce: CondEffect | None = None) -> None:
        e = self.r.expect_list(e, "an effect", where)
        if not e:
            return
        head = e[0]
        if head == "and":
            for x in e[1:]:
                self.effect(x, schema, e, ce)
        elif head == "increase":
            if ce is not None:
                raise self.r.fail("unsupported construct: (increase ...) inside (forall ...) or (when ...)", e,
                                  self.item)
            self.increase(e, schema)
        elif head in ("decrease", "assign", "scale-up", "scale-down"):
            raise self.r.fail(f"unsupported construct: numeric effect ({head} ...) (requirement :numeric-fluents)",
                              e, self.item)
        elif head == "forall":
            if len(e) != 3:
                raise self.r.fail("syntax error: (forall (VARS) EFFECT) takes a variable list and an effect", e,
                                  self.item)
            if ce is not None and ce.cond is not None:
                raise self.r.fail("syntax error: (forall ...) inside (when ...)", e, self.item)
            with self.quantified(e[1], e, schema) as indices:
                inner = CondEffect([*(ce.vars if ce else []), *indices], None, line=e.line)
                schema.when.append(inner)
                self.effect(e[2], schema, e, inner)
        elif head == "when":
            if len(e) != 3:
                raise self.r.fail("syntax error: (when CONDITION EFFECT) takes a condition and an effect", e,
                                  self.item)
            if ce is not None and ce.cond is not None:
                raise self.r.fail("syntax error: (when ...) inside (when ...)", e, self.item)
            inner = CondEffect(list(ce.vars) if ce else [], self.formula(e[1], e, schema), line=e.line)
            schema.when.append(inner)
            self.effect(e[2], schema, e, inner)
        elif head == "not":
            if len(e) != 2:
                raise self.r.fail("syntax error: (not X) takes exactly one atom", e, self.item)
            (ce.delete if ce is not None else schema.delete).append(self.atom(e[1], e))
        else:
            (ce.add if ce is not None else schema.add).append(self.atom(e, where))

    def increase(self, e: Expr, schema: Schema) -> None:
        if len(e) != 3 or not isinstance(e[1], Expr) or list(e[1]) != ["total-cost"]:
            raise self.r.fail("unsupported construct: only (increase (total-cost) N) is supported", e, self.item)
        if schema.cost is not None:
            raise self.r.fail("an action may increase total-cost only once", e, self.item)
        value = e[2]
        schema.cost_line = e.line
        if isinstance(value, Sym):
            schema.cost = number(self.r, value, e, self.item, "an action cost")
            return
        value = self.r.expect_list(value, "a function term", e)
        fname = value[0] if value else None
        if fname not in self.lifted.functions:
            raise self.r.fail(f"unknown function {show(fname) if fname is not None else '()'}", value, self.item)
        if len(value) - 1 != self.lifted.functions[fname]:
            raise self.r.fail(f"wrong arity for function '{fname}'", value, self.item)
        schema.cost = Atom(str(fname), tuple(self.term(x, value) for x in value[1:]), value.line)


def _conjunction_of_literals(f: Formula) -> list[tuple[bool, Formula]] | None:
    """[(positive, atom or eq formula)] when ``f`` is a conjunction of literals (STRIPS), else None."""
    out: list[tuple[bool, Formula]] = []
    todo = [f]
    while todo:
        g = todo.pop()
        if g[0] == "and":
            todo.extend(reversed(g[1]))
        elif g[0] in ("atom", "eq"):
            out.append((True, g))
        elif g[0] == "not" and g[1][0] in ("atom", "eq"):
            out.append((False, g[1]))
        else:
            return None
    return out


def number(r: Reader, x: Any, where: Any, item: str, what: str) -> float:
    """A finite number >= 0 (a cost or a function value); PddlError at its line otherwise."""
    try:
        value = float(x)
    except (TypeError, ValueError, OverflowError):
        raise r.fail(f"{what}: expected a number, got {show(x)}", x if isinstance(x, Sym) else where, item) from None
    if not math.isfinite(value) or value < 0:
        raise r.fail(f"{what}: expected a finite number >= 0, got {show(x)}", where, item)
    return value


# --- reading the problem ---------------------------------------------------------------------------------------
@dataclass
class LiftedProblem:
    """A problem file read against its lifted domain: objects, initial atoms and function values, the goal."""

    name: str
    objects: dict[str, str]  # object -> type (with the domain's constants)
    init: set[tuple[str, tuple[str, ...]]]
    values: dict[tuple[str, tuple[str, ...]], float]  # function values from (= (f args) N)
    goal_pos: list[Atom]
    goal_neg: list[Atom]
    goal_line: int
    file: str = ""
    value_lines: dict[tuple[str, tuple[str, ...]], int] = field(default_factory=dict)  # where each value is set
    #: An ADL goal (`Formula`) when it is not a conjunction of literals (goal_pos and goal_neg are then empty)
    goal_formula: Any = None
    goal_qvars: dict[int, tuple[str, tuple[str, ...]]] = field(default_factory=dict)


def read_problem(text: str, file: str, lifted: LiftedDomain) -> LiftedProblem:
    r = Reader(file)
    name, sections, define = r.define(parse_sexpr(text, file), "problem")
    objects = dict(lifted.constants)
    init: set[tuple[str, tuple[str, ...]]] = set()
    values: dict[tuple[str, tuple[str, ...]], float] = {}
    value_lines: dict[tuple[str, tuple[str, ...]], int] = {}
    goal = None
    init_expr = None
    for sec in sections:
        sec = r.expect_list(sec, "a problem section", sec)
        head = sec[0] if sec else None
        if head == ":domain":
            if len(sec) != 2 or sec[1] != lifted.name:
                raise r.fail(f"the problem is for domain {show(sec[1]) if len(sec) > 1 else '?'}, "
                             f"the domain file defines '{lifted.name}'", sec)
        elif head == ":requirements":
            lifted.requirements |= _check_requirements(r, sec, lifted.warnings)
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
            raise r.fail(f"unknown or unsupported problem section {show(head) if head else '()'}", sec)
    ctx = _Context(r, lifted, {}, "init", objects)
    for e in init_expr[1:] if init_expr is not None else []:
        e = r.expect_list(e, "an initial atom", init_expr)
        if e and e[0] == "=":
            if len(e) != 3 or not isinstance(e[1], Expr) or not isinstance(e[2], Sym):
                raise r.fail("syntax error: expected (= (FUNCTION ARGS) NUMBER)", e, "init")
            f = e[1]
            if not f or f[0] not in lifted.functions or len(f) - 1 != lifted.functions[f[0]]:
                raise r.fail(f"unknown function or wrong arity: {show(f)}", f, "init")
            key = (str(f[0]), tuple(str(ctx.term(x, f)) for x in f[1:]))
            values[key] = number(r, e[2], e, "init", f"the value of {show(f)}")
            value_lines[key] = e.line
            continue
        if e and e[0] == "not":
            continue  # closed world: a negated initial atom says nothing new
        a = ctx.atom(e, init_expr)
        init.add((a.pred, tuple(str(x) for x in a.args)))
    if goal is None:
        raise r.fail("the problem has no (:goal ...)", define)
    gctx = _Context(r, lifted, {}, "goal", objects)
    holder = Schema("goal", [], line=goal.line)  # holds the goal's quantified variables
    formula = gctx.formula(goal[1], goal, holder)
    lits = _conjunction_of_literals(formula)
    pos, neg = [], []
    if lits is not None and all(lit[0] == "atom" for _, lit in lits):
        for positive, lit in lits:
            (pos if positive else neg).append(lit[1])
        formula = None
    return LiftedProblem(str(name), objects, init, values, pos, neg, goal.line, file=file, value_lines=value_lines,
                         goal_formula=formula, goal_qvars=holder.qvars)



"""ADL compiled away by normal-form rewriting, as Fast Downward's translator normalises a task before grounding.

A precondition or goal (`goap.pddl.lifted.Formula`) is put in negation normal form (``imply`` rewritten, ``not``
pushed to the literals) and then in disjunctive normal form:

* an existential quantifier in a positive place (``exists``, or ``forall`` under a negation) becomes new
  variables of the disjunct: the action gets them as extra parameters (they do not appear in its name or plan
  step, which keep the PDDL action's own parameters);
* a universal quantifier in a positive place (``forall``, or ``exists`` under a negation) becomes the
  conjunction of its body over the objects of the variables' types (the problem's objects are known by then);
* each disjunct of the result is one variant of the action: a STRIPS schema the grounder grounds as any other.
  Two variants that ground to the same PDDL step are kept apart by a ``~k`` suffix of the goap action name.

A conditional effect's condition is normalised the same way; its disjuncts become separate conditional effects
(one firing is enough, and firing twice changes nothing), and its existential variables become universal
variables of the effect (``(exists y c) -> e`` is ``forall y (c -> e)``).

An ADL goal that is not a conjunction of literals becomes a fact ``@goal`` and one action per disjunct,
``@goal~k``, of cost 0, whose precondition is the disjunct; plans leave those steps out (`plan_steps`).

The number of disjuncts is bounded (`MAX_DISJUNCTS`, per action, effect or goal): DNF can be exponential.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product
from typing import Any

from goap.pddl.lifted import Atom, LiftedProblem, Schema, Term
from goap.pddl.reader import PddlError

#: Most disjuncts one precondition, effect condition or goal may have after the DNF rewriting.
MAX_DISJUNCTS = 4096
#: The goap fact made true by the goal actions of a disjunctive or quantified goal, and their name's stem.
GOAL_ATOM = "@goal"

Literal = tuple[bool, tuple]  # (positive, ("atom", Atom) or ("eq", Term, Term))


@dataclass
class Conj:
    """One disjunct: literals, and the new (existential) variables they use, with their types."""

    lits: list[Literal] = field(default_factory=list)
    new: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)


@dataclass
class GroundableEffect:
    """A conditional effect of a variant, in the variant's variable numbering: for every binding of ``vars``
    (indices after the schema's parameters) with ``lits`` true in the state before the action, ``delete``
    then ``add``."""

    vars: list[tuple[int, tuple[str, ...]]]
    lits: list[Literal]
    add: list[Atom]
    delete: list[Atom]


class _Normaliser:
    def __init__(self, objects_of: dict[str, set[str]], qvars: dict[int, tuple[str, tuple[str, ...]]], where: Any,
                 fresh: int):
        self.objects_of, self.qvars, self.where = objects_of, qvars, where
        self.fresh = fresh  # the next unused variable index

    def objects(self, types: tuple[str, ...]) -> list[str]:
        return sorted(set().union(*(self.objects_of.get(t, set()) for t in types)))

    def dnf(self, f: tuple, positive: bool, env: dict[int, Term]) -> list[Conj]:
        kind = f[0]
        if kind == "atom":
            a: Atom = f[1]
            return [Conj([(positive, ("atom", Atom(a.pred, tuple(_sub(x, env) for x in a.args), a.line)))])]
        if kind == "eq":
            return [Conj([(positive, ("eq", _sub(f[1], env), _sub(f[2], env)))])]
        if kind == "not":
            return self.dnf(f[1], not positive, env)
        if kind == "imply":
            return self.dnf(("or", [("not", f[1]), f[2]]), positive, env)
        if kind in ("and", "or"):
            parts = [self.dnf(g, positive, env) for g in f[1]]
            return self.join(parts) if (kind == "and") == positive else self.union(parts)
        if kind in ("exists", "forall"):
            variables, body = f[1], f[2]
            if (kind == "exists") == positive:  # new variables of the disjunct
                inner = dict(env)
                new = []
                for v in variables:
                    inner[v] = self.fresh
                    new.append((self.fresh, self.qvars[v][1]))
                    self.fresh += 1
                out = self.dnf(body, positive, inner)
                for c in out:
                    c.new = new + c.new
                return out
            # the body over every object of the variables' types
            pools = [self.objects(self.qvars[v][1]) for v in variables]
            parts = []
            for combo in product(*pools):
                inner = dict(env)
                inner.update(zip(variables, combo, strict=True))
                parts.append(self.dnf(body, positive, inner))
                self.check(sum(len(p) for p in parts))
            return self.join(parts) if positive == (kind == "forall") else self.union(parts)
        raise PddlError(f"internal: unknown formula {kind!r}")

    def join(self, parts: list[list[Conj]]) -> list[Conj]:
        out = [Conj()]
        for part in parts:
            out = [Conj(a.lits + b.lits, a.new + b.new) for a in out for b in part]
            self.check(len(out))
        return out

    def union(self, parts: list[list[Conj]]) -> list[Conj]:
        out = [c for part in parts for c in part]
        self.check(len(out))
        return out

    def check(self, n: int) -> None:
        if n > MAX_DISJUNCTS:
            item, file, line = self.where
            raise PddlError(f"more than {MAX_DISJUNCTS:,} disjuncts after rewriting the formula in disjunctive "
                            "normal form; simplify it", item=item, file=file, line=line)


def _sub(x: Term, env: dict[int, Term]) -> Term:
    return env.get(x, x) if isinstance(x, int) else x


def _static_eq(lits: list[Literal]) -> list[Literal] | None:
    """The literals with equalities between objects decided (None when one is false)."""
    out = []
    for positive, lit in lits:
        if lit[0] == "eq" and isinstance(lit[1], str) and isinstance(lit[2], str):
            if (lit[1] == lit[2]) != positive:
                return None
            continue
        out.append((positive, lit))
    return out


def variants(s: Schema, objects_of: dict[str, set[str]], file: str) -> list[Schema]:
    """The STRIPS variants of one schema (itself when it has no ADL precondition and no conditional effect), each
    with ``arity`` (the PDDL parameters) and ``effects`` (its `GroundableEffect` list)."""
    if s.formula is None and not s.when:
        s.arity = len(s.params)
        s.effects = []  # type: ignore[attr-defined]
        return [s]
    n = len(s.params)
    fresh = max([n - 1, *s.qvars]) + 1
    norm = _Normaliser(objects_of, s.qvars, (f"action '{s.name}'", file, s.line), fresh)
    if s.formula is not None:
        conjs = norm.dnf(s.formula, True, {})
    else:
        conjs = [Conj([(True, ("atom", a)) for a in s.pos] + [(False, ("atom", a)) for a in s.neg]
                      + [(True, ("eq", x, y)) for x, y in s.eq] + [(False, ("eq", x, y)) for x, y in s.neq])]
    effects = []
    for ce in s.when:
        norm.where = (f"action '{s.name}'", file, ce.line)
        for c in (norm.dnf(ce.cond, True, {}) if ce.cond is not None else [Conj()]):
            effects.append((list(ce.vars), c, ce.add, ce.delete))
    out = []
    for k, c in enumerate(conjs):
        lits = _static_eq(c.lits)
        if lits is None:
            continue
        remap: dict[int, int] = {i: i for i in range(n)}
        params = list(s.params)
        for idx, types in c.new:
            remap[idx] = len(params)
            params.append((f"?v{idx}", types))
        v = Schema(s.name, params, cost=s.cost, line=s.line, cost_line=s.cost_line, arity=n)
        _fill(v, lits, remap)
        v.add = [_re(a, remap) for a in s.add]
        v.delete = [_re(a, remap) for a in s.delete]
        v.effects = []  # type: ignore[attr-defined]
        for evars, ec, add, delete in effects:
            elits = _static_eq(ec.lits)
            if elits is None:
                continue
            emap = dict(remap)
            ev: list[tuple[int, tuple[str, ...]]] = []
            for idx in evars:
                emap[idx] = len(params) + len(ev)
                ev.append((emap[idx], s.qvars[idx][1]))
            for idx, types in ec.new:
                emap[idx] = len(params) + len(ev)
                ev.append((emap[idx], types))
            v.effects.append(GroundableEffect(  # type: ignore[attr-defined]
                ev, [(p, _re_lit(lit, emap)) for p, lit in elits], [_re(a, emap) for a in add],
                [_re(a, emap) for a in delete]))
        v.variant = k  # type: ignore[attr-defined]
        out.append(v)
    return out


def goal_schemas(problem: LiftedProblem, objects_of: dict[str, set[str]]) -> tuple[list[Schema], list[Literal]]:
    """(goal actions, goal literals): the literals when the goal is one conjunction without new variables (no
    actions then), else one ``@goal`` action per disjunct and the single literal ``@goal``."""
    fresh = max([-1, *problem.goal_qvars]) + 1
    norm = _Normaliser(objects_of, problem.goal_qvars, ("goal", problem.file, problem.goal_line), fresh)
    conjs = norm.dnf(problem.goal_formula, True, {})
    decided = [lits for lits in (_static_eq(c.lits) for c in conjs) if lits is not None]
    if len(conjs) == 1 and not conjs[0].new and decided:
        return [], decided[0]
    out = []
    for k, c in enumerate(conjs):
        lits = _static_eq(c.lits)
        if lits is None:
            continue
        remap = {}
        params = []
        for idx, types in c.new:
            remap[idx] = len(params)
            params.append((f"?v{idx}", types))
        v = Schema(f"{GOAL_ATOM}~{k}", params, cost=0.0, line=problem.goal_line, cost_line=problem.goal_line,
                   arity=len(params))
        _fill(v, lits, remap)
        v.add = [Atom(GOAL_ATOM, (), problem.goal_line)]
        v.effects = []  # type: ignore[attr-defined]
        out.append(v)
    return out, [(True, ("atom", Atom(GOAL_ATOM, (), problem.goal_line)))]


def _re(a: Atom, remap: dict[int, int]) -> Atom:
    return Atom(a.pred, tuple(remap.get(x, x) if isinstance(x, int) else x for x in a.args), a.line)


def _re_lit(lit: tuple, remap: dict[int, int]) -> tuple:
    if lit[0] == "atom":
        return ("atom", _re(lit[1], remap))
    return ("eq", *(remap.get(x, x) if isinstance(x, int) else x for x in lit[1:]))


def _fill(v: Schema, lits: list[Literal], remap: dict[int, int]) -> None:
    for positive, lit in lits:
        lit = _re_lit(lit, remap)
        if lit[0] == "eq":
            (v.eq if positive else v.neq).append((lit[1], lit[2]))
        else:
            (v.pos if positive else v.neg).append(lit[1])

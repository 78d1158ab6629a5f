"""The finite-domain translation of a grounded PDDL task, as Fast Downward's translator makes it, and pruning.

`translate` takes the STRIPS task `goap.pddl.grounder` builds (one bool fact per reachable atom) and returns the
same task over multi-valued variables:

* Variables: the mutex groups of `goap.pddl.invariants` (invariant synthesis), covered greedily, largest first;
  each group becomes one enum fact whose values are its atoms (labelled by the atoms' fact names), plus
  ``<none>`` (Fast Downward's ``<none of those>``) when some action can make every atom of the group false.
  An atom in no group stays a bool fact. The encoding packs an enum of ``n`` values into ``ceil(log2 n)`` bits.
* Conditions: ``atom`` becomes ``var == atom``, ``not atom`` becomes ``var != atom`` (two different atoms of one
  group required at once, or ``var == a`` and ``var != a``, make the action dead: it is dropped).
* Effects: an add becomes ``var = atom``. A delete with an add in the same group is implied by the add and
  dropped; otherwise it becomes ``var = <none>`` when the precondition says the atom is true, nothing when the
  precondition says it is false, and else the conditional effect ``when var == atom: var = <none>``. Conditional
  effects are translated the same way, deletes before adds, so that an add firing with them still wins (as in
  PDDL, where an atom both deleted and added ends up true). An action that adds two atoms of one group can
  never apply in a reachable state (the invariant says so) and is dropped.

Pruning (`prune`), backwards from the goal, after the forwards pruning the grounder does (relaxed reachability):
a condition is *relevant* when the goal or a relevant action needs it; an action is relevant when it achieves a
relevant condition (`goap.domain.achieves`: an effect that can make it true) or writes a fact that a relevant
action's conditional effect tests (such facts are tracked whole, so that every conditional effect of a kept
action fires as it would in the full task). Irrelevant actions are dropped, and then every fact that no
relevant action reads and the goal does not name, with the effects on it. A plan of the pruned task is a plan
of the full one: every condition a kept step reads was made true by a kept step (or held at the start), and no
dropped step is needed for that.

Action names are kept, so plans print and validate (`goap.pddl.validate`) against the PDDL task as before.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from typing import Any

from goap.domain import ENUM, Action, Condition, Domain, Effect, Fact, Goal, When
from goap.pddl.invariants import MAX_CANDIDATES, MAX_SECONDS, choose_groups, mutex_groups, task_invariants

#: The value of a variable whose atoms are all false (Fast Downward's ``<none of those>``).
NONE_LABEL = "<none>"

GroundAtom = tuple[str, tuple[str, ...]]
_ATOM = re.compile(r"([^()]+)(?:\((.*)\))?")


@dataclass(frozen=True)
class Variable:
    """One finite-domain variable: value ``i`` is the atom ``atoms[i]`` (a fact name of the STRIPS task); value
    ``len(atoms)`` is ``<none>`` when ``none``."""

    name: str
    atoms: tuple[str, ...]
    none: bool

    @property
    def size(self) -> int:
        return len(self.atoms) + self.none


@dataclass(frozen=True)
class Translation:
    """How a task was translated: its variables and what was pruned (`PddlTask.translation`)."""

    variables: tuple[Variable, ...]
    strips_facts: int
    strips_actions: int
    invariants: int
    candidates: int
    stopped: str | None  # the bound that cut the invariant synthesis short, if one did
    pruned_actions: int
    pruned_facts: int
    seconds: float

    def describe(self, most: int = 40) -> list[str]:
        """One line per variable, ``name (n values): a | b | <none>`` (long ones shortened; past ``most``
        variables, one line saying how many more)."""
        out = []
        for v in self.variables[:most]:
            values = list(v.atoms[:6]) + (["..."] if len(v.atoms) > 6 else []) + ([NONE_LABEL] if v.none else [])
            out.append(f"{v.name} ({v.size} values): {' | '.join(values)}")
        if len(self.variables) > most:
            out.append(f"... and {len(self.variables) - most} more variables")
        return out


def atom_of(name: str) -> GroundAtom | None:
    """The ground atom a grounded fact is named after (``on(a,b)`` -> ``("on", ("a", "b"))``)."""
    m = _ATOM.fullmatch(name)
    if not m:
        return None
    return m.group(1), tuple(m.group(2).split(",")) if m.group(2) else ()


class _Dead(Exception):
    """An action (or a conditional effect) that cannot apply in a reachable state."""


def translate(task: Any, prune_irrelevant: bool = True, max_candidates: int = MAX_CANDIDATES,
              seconds: float | None = MAX_SECONDS) -> Any:
    """The finite-domain form of a STRIPS `goap.pddl.PddlTask` (see the module docstring), a new `PddlTask` with
    its `Translation`. A task the translation cannot help is returned as it is (its ``translation`` None): a goal
    that needs two atoms of one group at once (unreachable: the STRIPS task's search says so), or one where no
    action is left."""
    t0 = time.perf_counter()
    dom: Domain = task.domain
    report = task_invariants(task.lifted, task.problem, max_candidates, seconds)
    atom_fact: dict[GroundAtom, str] = {}
    for f in dom.facts:
        a = atom_of(f.name)
        if a is not None:
            atom_fact[a] = f.name
    init = {a for a, n in atom_fact.items() if dom.fact(n).default}
    groups = choose_groups(mutex_groups(report.proven, atom_fact, init), atom_fact)

    # value of each grouped fact: (variable index, value index)
    var_of: dict[str, tuple[int, int]] = {}
    names = {f.name for f in dom.facts}
    var_names = []
    for k, g in enumerate(groups):
        name, j = f"var{k}", 0
        while name in names:
            j += 1
            name = f"var{k}~{j}"
        var_names.append(name)
        for i, a in enumerate(g):
            var_of[atom_fact[a]] = (k, i)
    none_needed = [False] * len(groups)

    def conds(cs: tuple[Condition, ...] | list[Condition], base: dict | None = None) -> dict:
        """Conditions keyed by fact: ("==", v) or ("!=", {values}) for a variable, ("==", 0/1) for a bool."""
        out: dict = dict(base or {})
        for c in cs:
            if c.fact in var_of:
                k, i = var_of[c.fact]
                key, have = ("v", k), out.get(("v", k))
                if c.value:  # atom true: var == i
                    if have is not None and ((have[0] == "==" and have[1] != i) or (have[0] == "!=" and i in have[1])):
                        raise _Dead
                    out[key] = ("==", i)
                else:
                    if have is not None and have[0] == "==":
                        if have[1] == i:
                            raise _Dead
                        continue
                    out[key] = ("!=", (have[1] if have else frozenset()) | {i})
            else:
                key = ("b", c.fact)
                have = out.get(key)
                if have is not None and have[1] != c.value:
                    raise _Dead
                out[key] = ("==", c.value)
        return out

    def known(cs: dict, k: int, i: int) -> bool | None:
        """Whether ``cs`` says atom i of variable k is true (True), false (False) or nothing (None)."""
        have = cs.get(("v", k))
        if have is None:
            return None
        if have[0] == "==":
            return have[1] == i
        return False if i in have[1] else None

    def effects_of(effs: tuple[Effect, ...], cs: dict, added: set[int]) -> tuple[list, list]:
        """(assignments, deletes needing a test) of one effect list: assignments ("v", k, value or None for
        <none>) / ("b", fact, 0/1); deletes as (k, i) to guard with ``var == i``."""
        out, guarded = [], []
        adds: dict[int, int] = {}
        for e in effs:
            if e.fact in var_of and e.value:
                k, i = var_of[e.fact]
                if adds.get(k, i) != i:
                    raise _Dead  # two atoms of one group added at once
                adds[k] = i
        for e in effs:
            if e.fact not in var_of:
                out.append(("b", e.fact, e.value))
                continue
            k, i = var_of[e.fact]
            if e.value:
                out.append(("v", k, i))
            elif k in adds or k in added:
                continue  # implied by the add
            else:
                now = known(cs, k, i)
                if now is True:
                    out.append(("v", k, None))
                    none_needed[k] = True
                elif now is None:
                    guarded.append((k, i))
                    none_needed[k] = True
        return out, guarded

    # First pass: the actions in variable terms (values of <none> decided once none_needed is known).
    plans = []
    for a in dom.actions:
        try:
            pre = conds(a.pre)
            added = {var_of[e.fact][0] for e in a.effects if e.fact in var_of and e.value}
            main, guarded = effects_of(a.effects, pre, added)
            dels, adds = [], []
            for k, i in guarded:
                dels.append(({("v", k): ("==", i)}, [("v", k, None)]))
            for w in a.when:
                try:
                    c = conds(w.cond, pre)
                except _Dead:
                    continue  # never fires where the action applies
                own = {key: v for key, v in c.items() if pre.get(key) != v}
                d_part = [e for e in w.effects if not e.value]
                a_part = [e for e in w.effects if e.value]
                w_added = added | {var_of[e.fact][0] for e in a_part if e.fact in var_of}
                try:
                    got_d, guard_d = effects_of(tuple(d_part), c, w_added)
                    got_a, _ = effects_of(tuple(a_part), c, w_added)
                except _Dead:
                    continue
                if got_d:
                    dels.append((own, got_d))
                for k, i in guard_d:
                    dels.append(({**own, ("v", k): ("==", i)}, [("v", k, None)]))
                if got_a:
                    adds.append((own, got_a))
            plans.append((a, pre, main, dels + adds))
        except _Dead:
            continue
    try:
        goal_c = [conds(g.want) for g in dom.goals]
    except _Dead:  # the goal needs two atoms of one group: unreachable; the STRIPS task says so as well
        return task

    variables = tuple(Variable(var_names[k], tuple(atom_fact[a] for a in g), none_needed[k])
                      for k, g in enumerate(groups))

    made: dict[tuple, Condition | Effect] = {}  # one object per condition and effect, shared by the actions

    def condition(key, v) -> list[Condition]:
        if key[0] == "b":
            items = [(key[1], "==", v[1])]
        elif v[0] == "==":
            items = [(var_names[key[1]], "==", v[1])]
        else:
            items = [(var_names[key[1]], "!=", i) for i in sorted(v[1])]
        out = []
        for item in items:
            c = made.get(item)
            if c is None:
                c = made[item] = Condition(*item)
            out.append(c)
        return out

    def effect(e) -> Effect:
        if e[0] == "b":
            item = (e[1], e[2])
        else:
            k, val = e[1], e[2]
            item = (var_names[k], len(groups[k]) if val is None else val)
        got = made.get(("=",) + item)
        if got is None:
            got = made[("=",) + item] = Effect(item[0], "=", item[1])
        return got  # type: ignore[return-value]

    def cond_list(cs: dict) -> tuple[Condition, ...]:
        return tuple(c for key, v in cs.items() for c in condition(key, v))

    actions = []
    for a, pre, main, whens in plans:
        effs = tuple(effect(e) for e in main)
        wl = tuple(When(cond_list(c), tuple(effect(e) for e in es)) for c, es in whens if es)
        if not wl and all(_holds(pre, e) for e in main):
            continue  # changes nothing where it applies
        actions.append(Action(name=a.name, cost=a.cost, pre=cond_list(pre), effects=effs, when=wl,
                              cost_terms=a.cost_terms, interruptible=a.interruptible))
    facts = []
    grouped = set(var_of)
    for f in dom.facts:
        if f.name not in grouped:
            facts.append(f)
    start: dict[str, object] = {f.name: True for f in facts if f.default}
    for v in variables:
        value = next((i for i, n in enumerate(v.atoms) if dom.fact(n).default), len(v.atoms))
        labels = (*v.atoms, NONE_LABEL) if v.none else v.atoms
        facts.append(Fact(name=v.name, kind=ENUM, min=0, max=len(labels) - 1, default=value, labels=labels))
        start[v.name] = labels[value]
    goals = tuple(Goal(g.name, cond_list(c), g.priority) for g, c in zip(dom.goals, goal_c, strict=True))
    if not actions:
        return task
    out = Domain(name=dom.name, facts=tuple(facts), actions=tuple(actions), goals=goals)
    n_actions, n_facts = len(out.actions), len(out.facts)
    if prune_irrelevant:
        pruned = prune(out)
        if pruned.actions:  # none relevant: the goal holds at the start or never; the search says which
            out = pruned
            start = {n: v for n, v in start.items() if n in {f.name for f in out.facts}}
    kept = {f.name for f in out.facts}
    translation = Translation(
        variables=tuple(v for v in variables if v.name in kept), strips_facts=len(dom.facts),
        strips_actions=len(dom.actions), invariants=len(report.proven), candidates=report.candidates,
        stopped=report.stopped, pruned_actions=n_actions - len(out.actions), pruned_facts=n_facts - len(out.facts),
        seconds=time.perf_counter() - t0,
    )
    return replace(task, domain=out, start=start, n_facts=len(out.facts), n_actions=len(out.actions),
                   ground_seconds=task.ground_seconds + translation.seconds, translation=translation)


def _holds(pre: dict, e) -> bool:
    """Whether an assignment changes nothing given the precondition."""
    key = ("b", e[1]) if e[0] == "b" else ("v", e[1])
    have = pre.get(key)
    if have is None or have[0] != "==":
        return False
    return have[1] == e[2] if e[0] == "b" else e[2] is not None and have[1] == e[2]


def prune(domain: Domain) -> Domain:
    """The domain without the actions irrelevant to its goals and the facts no relevant action or goal reads
    (see the module docstring)."""
    writes: dict[str, dict[int, list[int]]] = {}  # fact -> value -> the actions that assign it
    for ai, a in enumerate(domain.actions):
        for e in (*a.effects, *(e for w in a.when for e in w.effects)):
            writes.setdefault(e.fact, {}).setdefault(e.value, []).append(ai)
    relevant = [False] * len(domain.actions)
    tracked: set[str] = set()
    seen: set[Condition] = set()
    todo: list[Condition] = [c for g in domain.goals for c in g.want]
    queue: list[int] = []

    def mark(ai: int) -> None:
        if not relevant[ai]:
            relevant[ai] = True
            queue.append(ai)

    while todo or queue:
        while todo:
            c = todo.pop()
            if c in seen:
                continue
            seen.add(c)
            by_value = writes.get(c.fact, {})
            for v in ([c.value] if c.op == "==" else by_value):
                if c.holds(v):
                    for ai in by_value.get(v, ()):
                        mark(ai)
        if queue:
            a = domain.actions[queue.pop()]
            todo.extend(a.pre)
            for w in a.when:
                todo.extend(w.cond)
                for c in w.cond:
                    if c.fact not in tracked:
                        tracked.add(c.fact)
                        for ais in writes.get(c.fact, {}).values():
                            for ai in ais:
                                mark(ai)
    keep_actions = [a for ai, a in enumerate(domain.actions) if relevant[ai]]
    read = {c.fact for g in domain.goals for c in g.want}
    for a in keep_actions:
        read |= {c.fact for c in a.pre} | {c.fact for w in a.when for c in w.cond}
    actions = []
    for a in keep_actions:
        if all(e.fact in read for e in a.effects) and all(e.fact in read for w in a.when for e in w.effects):
            actions.append(a)
            continue
        whens = tuple(When(w.cond, tuple(e for e in w.effects if e.fact in read)) for w in a.when)
        actions.append(replace(a, effects=tuple(e for e in a.effects if e.fact in read),
                               when=tuple(w for w in whens if w.effects)))
    facts = tuple(f for f in domain.facts if f.name in read)
    return Domain(name=domain.name, facts=facts, actions=tuple(actions), goals=domain.goals)


__all__ = ["NONE_LABEL", "Translation", "Variable", "atom_of", "prune", "translate"]

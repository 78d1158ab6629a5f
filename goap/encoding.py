"""Bit-packed states and the numpy tables the Warp kernels read.

A state is ``W`` 64-bit words. A bool takes one bit; a bounded int or enum takes
``max(1, (max - min).bit_length())`` bits holding ``value - min``, at an offset that never straddles a word
(facts are placed widest first, each into the first word with room, so W is as small as first-fit allows).

Conditions become, per word, a ``(mask, value)`` pair, ``(s & mask) == value``, covering every bool and every
``==`` on an int; the rest (``!= < <= > >=``) are short lists of ``(word, shift, mask, op, k)``. Effects become
``(set, clear)`` per word, ``s = (s & ~clear) | set``, covering every assignment; ``+=`` and ``-=`` are lists of
``(word, shift, mask, delta, hi)``, clamped to ``0..hi`` in the encoded (``value - min``) space.

Costs: ``cost`` is each action's base, ``min_cost`` its least cost over every state (`Domain.action_min_cost`,
what the heuristics charge at the domain's costs). Cost terms in compressed rows: action a's terms are
``term_fact[k]``, ``term_per[k]`` for k in ``term_start[a]:term_start[a + 1]``, ``term_min[k]`` = ``min(per * lo,
per * hi)`` over the fact's range (added in that order, as `Domain.action_min_cost` adds them); ``has_terms`` is 0
when no action has any (the kernels then skip the term loop). Agent types: ``type_allowed[T, A]``,
``type_scale[T, A]``, ``type_priority[T, G]`` and ``type_states[T, W]`` (each type's default state, packed);
``typed`` is 0 when the domain declares no types (the kernels then skip the lookups).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from goap.domain import Condition, Domain, Goal, State, achieves

OP_CODES = {"==": 0, "!=": 1, "<": 2, "<=": 3, ">": 4, ">=": 5}
WORD_BITS = 64


@dataclass(frozen=True)
class Layout:
    """Where each fact lives: ``word[f]``, ``shift[f]`` and ``width[f]`` bits, storing ``value - min[f]``."""

    n_words: int
    word: np.ndarray  # int32[F]
    shift: np.ndarray  # int32[F]
    width: np.ndarray  # int32[F]
    min: np.ndarray  # int64[F]

    @property
    def n_bits(self) -> int:
        return int(self.width.sum())

    def field_mask(self, f: int) -> int:
        return (1 << int(self.width[f])) - 1

    @property
    def mask(self) -> np.ndarray:
        """uint64[F]: each fact's field mask before shifting."""
        return np.array([self.field_mask(f) for f in range(len(self.word))], dtype=np.uint64)


def fact_width(lo: int, hi: int) -> int:
    return max(1, (hi - lo).bit_length())


def make_layout(domain: Domain) -> Layout:
    """First-fit decreasing: widest facts first, each into the first word with enough free bits."""
    n = len(domain.facts)
    width = np.array([fact_width(f.min, f.max) for f in domain.facts], dtype=np.int32)
    word = np.zeros(n, dtype=np.int32)
    shift = np.zeros(n, dtype=np.int32)
    used: list[int] = []
    for f in sorted(range(n), key=lambda i: (-int(width[i]), i)):
        w = next((i for i, bits in enumerate(used) if bits + width[f] <= WORD_BITS), len(used))
        if w == len(used):
            used.append(0)
        word[f], shift[f] = w, used[w]
        used[w] += int(width[f])
    mins = np.array([f.min for f in domain.facts], dtype=np.int64)
    return Layout(n_words=max(1, len(used)), word=word, shift=shift, width=width, min=mins)


@dataclass(frozen=True)
class CondList:
    """Conditions in compressed rows: row ``r`` owns items ``start[r]:start[r + 1]``."""

    start: np.ndarray  # int32[R + 1]
    word: np.ndarray  # int32[K]
    shift: np.ndarray  # int32[K]
    mask: np.ndarray  # uint64[K], the field mask before shifting
    op: np.ndarray  # int32[K], OP_CODES
    k: np.ndarray  # uint64[K], encoded (value - min)


@dataclass(frozen=True)
class StepList:
    """``+=`` / ``-=`` effects in compressed rows, clamped to ``0..hi`` in encoded space."""

    start: np.ndarray  # int32[A + 1]
    word: np.ndarray  # int32[K]
    shift: np.ndarray  # int32[K]
    mask: np.ndarray  # uint64[K]
    delta: np.ndarray  # int64[K], signed
    hi: np.ndarray  # uint64[K], max - min


@dataclass(frozen=True)
class GoalTables:
    """A set of goals, encoded. Agents name their goal by index into ``goals``.

    ``mask``/``value`` and ``ints`` give the exact goal test. ``atoms`` lists every condition of every goal
    one by one, with ``achievers`` (row per atom: the actions that can make it true) and ``max_achieved``
    (per goal: the most atoms of that goal one action can make true) for the admissible heuristic.
    """

    goals: tuple[Goal, ...]
    mask: np.ndarray  # uint64[G, W]
    value: np.ndarray  # uint64[G, W]
    ints: CondList  # rows: goals
    atoms: CondList  # rows: goals
    achievers: np.ndarray  # int32[total atoms + 1] row starts into achiever_action
    achiever_action: np.ndarray  # int32[...]
    max_achieved: np.ndarray  # int32[G]
    atom_fact: np.ndarray  # int32[total atoms], the fact of each atom
    atom_sat: np.ndarray  # uint64[total atoms], bit v set when encoded value v satisfies the atom
    priority: np.ndarray  # float32[G]

    @property
    def n_goals(self) -> int:
        return len(self.goals)


@dataclass(frozen=True)
class RelaxedTables:
    """Fact-level actions for the delete-relaxed reachability check, over encoded values ``0..n_values - 1``.

    Facts with more than ``RELAXED_MAX_VALUES`` values have ``n_values = 0``: every value counts as reached.
    ``pre_*`` rows hold every precondition of an action; ``eff_*`` rows every effect, ``eff_op`` 0 for ``=``
    (``eff_value`` the encoded value), 1 for ``+=`` and 2 for ``-=`` (``eff_value`` the step).
    """

    n_values: np.ndarray  # int32[F]
    pre_start: np.ndarray  # int32[A + 1]
    pre_fact: np.ndarray  # int32[K]
    pre_op: np.ndarray  # int32[K]
    pre_k: np.ndarray  # uint64[K]
    pre_sat: np.ndarray  # uint64[K], bit v set when encoded value v satisfies the precondition
    eff_start: np.ndarray  # int32[A + 1]
    eff_fact: np.ndarray  # int32[K]
    eff_op: np.ndarray  # int32[K]
    eff_value: np.ndarray  # int64[K]
    pre_ach_start: np.ndarray  # int32[K + 1], row per precondition: the actions that can make it true
    pre_ach_action: np.ndarray  # int32[...]

    @property
    def n_pre(self) -> int:
        return len(self.pre_fact)

    @property
    def total_values(self) -> int:
        return int(self.n_values.sum())


#: Facts with more values than this are not tracked value by value in the relaxed reachability check.
RELAXED_MAX_VALUES = 64


@dataclass(frozen=True)
class WhenTables:
    """Conditional effects (`goap.domain.When`) as rows: action a's are rows ``start[a]..start[a + 1]``, each a
    condition (``mask``/``value`` words and ``ints`` for the rest, as preconditions) and effects (as actions')."""

    start: np.ndarray  # int32[A + 1]
    mask: np.ndarray  # uint64[C, W]
    value: np.ndarray  # uint64[C, W]
    ints: CondList  # rows: conditional effects
    eff_set: np.ndarray  # uint64[C, W]
    eff_clear: np.ndarray  # uint64[C, W]
    eff_steps: StepList  # rows: conditional effects

    @property
    def n_when(self) -> int:
        return int(self.start[-1])


@dataclass(frozen=True)
class DomainTables:
    """Everything a kernel needs to know about a domain, as flat numpy arrays."""

    domain: Domain
    layout: Layout
    pre_mask: np.ndarray  # uint64[A, W]
    pre_value: np.ndarray  # uint64[A, W]
    pre_ints: CondList  # rows: actions
    eff_set: np.ndarray  # uint64[A, W]
    eff_clear: np.ndarray  # uint64[A, W]
    eff_steps: StepList  # rows: actions
    cost: np.ndarray  # float64[A]
    goals: GoalTables
    relaxed: RelaxedTables
    min_cost: np.ndarray  # float64[A], the least cost over every state (the heuristics' cost at the domain's)
    term_start: np.ndarray  # int32[A + 1]
    term_fact: np.ndarray  # int32[K]
    term_per: np.ndarray  # float64[K]
    term_min: np.ndarray  # float64[K], min(per * lo, per * hi) over the fact's range
    type_allowed: np.ndarray  # bool[T, A]
    type_scale: np.ndarray  # float64[T, A]
    type_priority: np.ndarray  # float32[T, G], per type the domain goals' priorities
    type_states: np.ndarray  # uint64[T, W], per type its agents' default state, packed (Domain.type_state)
    when: WhenTables | None = None  # conditional effects; `encode` always sets it

    @property
    def has_terms(self) -> int:
        return int(len(self.term_fact) > 0)

    @property
    def typed(self) -> int:
        return int(self.domain.declares_types)

    @property
    def n_types(self) -> int:
        return len(self.domain.types)

    @property
    def n_words(self) -> int:
        return self.layout.n_words

    @property
    def n_actions(self) -> int:
        return len(self.domain.actions)

    # --- states ----------------------------------------------------------------------------------------
    def pack(self, values: State | Mapping[str, Any]) -> np.ndarray:
        """One state (a value tuple, or ``{fact: literal}`` with defaults for the rest) as uint64[W]."""
        if isinstance(values, Mapping):
            values = self.domain.state(values)
        return self.pack_states(np.asarray([values], dtype=np.int64))[0]

    def pack_states(self, values: np.ndarray) -> np.ndarray:
        """int64[N, F] fact values -> uint64[N, W]; vectorised over agents, one pass per fact."""
        values = np.asarray(values, dtype=np.int64)
        if values.ndim != 2 or values.shape[1] != len(self.domain.facts):
            raise ValueError(f"expected values of shape [N, {len(self.domain.facts)}], got {values.shape}")
        lo = np.array([f.min for f in self.domain.facts], dtype=np.int64)
        hi = np.array([f.max for f in self.domain.facts], dtype=np.int64)
        bad = (values < lo) | (values > hi)
        if bad.any():
            n, f = np.argwhere(bad)[0]
            fact = self.domain.facts[f]
            raise ValueError(f"row {n}: value {values[n, f]} of fact '{fact.name}' out of range {fact.min}..{fact.max}")
        out = np.zeros((values.shape[0], self.n_words), dtype=np.uint64)
        L = self.layout
        for f in range(values.shape[1]):
            enc = (values[:, f] - L.min[f]).astype(np.uint64) << np.uint64(L.shift[f])
            out[:, L.word[f]] |= enc
        return out

    def invalid_states(self, words: np.ndarray) -> np.ndarray:
        """Indices of the rows of uint64[N, W] packed states that no fact values give: a field above its range,
        or bits set outside every field (a bad restore, a game kernel's bug). Vectorised, one pass per fact."""
        words = np.asarray(words, dtype=np.uint64)
        L = self.layout
        bad = np.zeros(words.shape[0], dtype=bool)
        used = np.zeros(self.n_words, dtype=np.uint64)
        for f, fact in enumerate(self.domain.facts):
            m = np.uint64(L.field_mask(f))
            used[L.word[f]] |= m << np.uint64(L.shift[f])
            bad |= ((words[:, L.word[f]] >> np.uint64(L.shift[f])) & m) > np.uint64(fact.max - fact.min)
        bad |= ((words & ~used) != 0).any(axis=1)
        return np.flatnonzero(bad)

    def state_problem(self, words: np.ndarray) -> str:
        """What is wrong with one packed state (see `invalid_states`), or "" when nothing is."""
        L = self.layout
        row = np.asarray(words, dtype=np.uint64).reshape(-1)
        used = np.zeros(self.n_words, dtype=np.uint64)
        for f, fact in enumerate(self.domain.facts):
            m = L.field_mask(f)
            used[L.word[f]] |= np.uint64(m << int(L.shift[f]))
            v = (int(row[L.word[f]]) >> int(L.shift[f])) & m
            if v > fact.max - fact.min:
                return f"fact '{fact.name}' holds encoded value {v}, above its range {fact.min}..{fact.max}"
        stray = row & ~used
        if stray.any():
            w = int(np.flatnonzero(stray)[0])
            return f"word {w} has bits set outside every fact (0x{int(stray[w]):x})"
        return ""

    def unpack(self, words: np.ndarray) -> State:
        return tuple(int(v) for v in self.unpack_states(np.asarray(words, dtype=np.uint64).reshape(1, -1))[0])

    def unpack_states(self, words: np.ndarray) -> np.ndarray:
        """uint64[N, W] -> int64[N, F] fact values."""
        words = np.asarray(words, dtype=np.uint64)
        if words.ndim != 2 or words.shape[1] != self.n_words:
            raise ValueError(f"expected states of shape [N, {self.n_words}], got {words.shape}")
        L = self.layout
        out = np.empty((words.shape[0], len(self.domain.facts)), dtype=np.int64)
        for f in range(out.shape[1]):
            field = (words[:, L.word[f]] >> np.uint64(L.shift[f])) & np.uint64(L.field_mask(f))
            out[:, f] = field.astype(np.int64) + L.min[f]
        return out

    def describe(self, words: np.ndarray) -> str:
        """``weapon_drawn=true ammo=3 ...`` for one packed state."""
        return self.domain.describe_state(self.unpack(words))

    def encode_goals(self, goals: Sequence[Goal]) -> GoalTables:
        return encode_goals(self.domain, self.layout, goals)

    def bytes_per_agent(self, max_nodes: int, max_plan_length: int) -> int:
        """Scratch one Warp search needs with a pool of ``max_nodes`` states (`scratch_bytes_per_agent`)."""
        n_conditions = len({c for a in self.domain.actions for c in a.pre})
        return scratch_bytes_per_agent(
            self.n_words, max_nodes, self.n_actions, self.relaxed.n_pre, max_plan_length, len(self.domain.facts),
            n_conditions,
        )


#: Buckets of h_max's bucket queue (`goap.kernels.astar.hmax_dijkstra`): used when every usable action of the goal's
#: cone costs an integer below this, else the binary heap.
HMAX_BUCKETS = 64


def hash_size(max_nodes: int) -> int:
    """Slots of a search's hash table: the power of two >= 2 * max_nodes (at most half full)."""
    return 1 << max(1, (2 * max_nodes - 1).bit_length())


def scratch_bytes_per_agent(
    n_words: int, max_nodes: int, n_actions: int, n_pre: int, max_plan_length: int, n_facts: int = 1,
    n_conditions: int | None = None, heuristic: str = "hmax_depth2",
) -> int:
    """Device memory one agent's search needs with a pool of ``max_nodes`` states (see `goap.kernels.astar`)::

        8 W (M + 1)            node states
        + 28 M                 g, h (float64), parent, open-list position, open list
        + 4 H                  hash table (H = the power of two >= 2M)
        + 8 A                  this agent's action costs
        + 8 P                  hmax_depth2: cheapest achiever per precondition (P preconditions in all)
        + 12 A + 16 C          hmax and lmcut: per action its h_max and unmet preconditions; per distinct
                               precondition (C, at most P) its h_max, queue entry and queue position
        + 4 K + 4 + 4 C        hmax and lmcut: the bucket queue's K = HMAX_BUCKETS heads, a flag, back links
        + 32 A + 12 C          lmcut: per action remaining cost, pcf, last round's pcf and its round, mark and its
                               place on its pcf's list; per condition a mark, a list entry and the head of its pcf list
        + 8 F                  the relaxed reachability check's reached values per fact
        + 4 L + 18             results
    (An array a heuristic does not read takes one element: 8 bytes for pre_cost, 36 for h_max's, 44 for
    LM-cut's.)
    """
    m = max_nodes
    a, c = max(1, n_actions), max(1, n_pre if n_conditions is None else n_conditions)
    per_node = 8 * n_words * (m + 1) + 28 * m + 4 * hash_size(m)
    per_agent = 8 * a + 8 * max(1, n_facts)
    per_agent += 8 * max(1, n_pre) if heuristic == "hmax_depth2" else 8
    lm = ("lmcut", "max_lmcut_pdb", "max_lmcut_scp")
    per_agent += 12 * a + 20 * c + 4 * HMAX_BUCKETS + 4 if heuristic == "hmax" or heuristic in lm else 36
    per_agent += 32 * a + 12 * c if heuristic in lm else 44
    return per_node + per_agent + 4 * max_plan_length + 18


def encode(domain: Domain) -> DomainTables:
    """Compile a domain into kernel tables."""
    layout = make_layout(domain)
    W, A = layout.n_words, len(domain.actions)
    pre_mask = np.zeros((A, W), dtype=np.uint64)
    pre_value = np.zeros((A, W), dtype=np.uint64)
    eff_set = np.zeros((A, W), dtype=np.uint64)
    eff_clear = np.zeros((A, W), dtype=np.uint64)
    pre_rows, step_rows = [], []
    for a, action in enumerate(domain.actions):
        pre_rows.append(_fold_conditions(domain, layout, action.pre, pre_mask[a], pre_value[a]))
        steps = []
        for e in action.effects:
            f = domain.fact_index(e.fact)
            w, s, m = int(layout.word[f]), int(layout.shift[f]), layout.field_mask(f)
            if e.op == "=":
                eff_clear[a, w] |= np.uint64(m << s)
                eff_set[a, w] |= np.uint64((e.value - int(layout.min[f])) << s)
            else:
                fact = domain.facts[f]
                steps.append((w, s, m, e.value if e.op == "+=" else -e.value, fact.max - fact.min))
        step_rows.append(steps)
    cost = np.array([a.cost for a in domain.actions], dtype=np.float64)  # summed exactly by the planners
    terms = [
        [(f, k, min(k * float(domain.facts[f].min), k * float(domain.facts[f].max))) for f, k in a.cost_terms]
        for a in domain.actions
    ]
    term_start, term_fact, term_per, term_min = _csr(terms, (np.int32, np.float64, np.float64))
    types = domain.types
    when = _when_tables(domain, layout)
    return DomainTables(
        domain=domain,
        layout=layout,
        pre_mask=pre_mask,
        pre_value=pre_value,
        pre_ints=_cond_list(pre_rows),
        eff_set=eff_set,
        eff_clear=eff_clear,
        eff_steps=_step_list(step_rows),
        cost=cost,
        goals=encode_goals(domain, layout, domain.goals),
        relaxed=_relaxed_tables(domain, layout),
        min_cost=np.array([domain.action_min_cost(a) for a in range(A)], dtype=np.float64),
        term_start=term_start,
        term_fact=term_fact.astype(np.int32),
        term_per=term_per,
        term_min=term_min,
        type_allowed=np.array([t.actions for t in types], dtype=np.bool_).reshape(len(types), A),
        type_scale=np.array([t.cost_scale for t in types], dtype=np.float64).reshape(len(types), A),
        type_priority=np.array([t.priority for t in types], dtype=np.float32).reshape(len(types), len(domain.goals)),
        type_states=_pack_rows(domain, layout, [domain.type_state(i) for i in range(len(types))]),
        when=when,
    )


def _when_tables(domain: Domain, layout: Layout) -> WhenTables:
    """The conditional effects' rows (see `WhenTables`), encoded as preconditions and effects are."""
    rows = [w for a in domain.actions for w in a.when]
    W, C = layout.n_words, len(rows)
    start = np.zeros(len(domain.actions) + 1, dtype=np.int32)
    start[1:] = np.cumsum([len(a.when) for a in domain.actions])
    mask = np.zeros((C, W), dtype=np.uint64)
    value = np.zeros((C, W), dtype=np.uint64)
    eff_set = np.zeros((C, W), dtype=np.uint64)
    eff_clear = np.zeros((C, W), dtype=np.uint64)
    int_rows, step_rows = [], []
    for c, w in enumerate(rows):
        int_rows.append(_fold_conditions(domain, layout, w.cond, mask[c], value[c]))
        steps = []
        for e in w.effects:
            f = domain.fact_index(e.fact)
            wd, sh, m = int(layout.word[f]), int(layout.shift[f]), layout.field_mask(f)
            if e.op == "=":
                eff_clear[c, wd] |= np.uint64(m << sh)
                kept = eff_set[c, wd] & ~np.uint64(m << sh)
                eff_set[c, wd] = kept | np.uint64((e.value - int(layout.min[f])) << sh)
            else:
                fact = domain.facts[f]
                steps.append((wd, sh, m, e.value if e.op == "+=" else -e.value, fact.max - fact.min))
        step_rows.append(steps)
    return WhenTables(start=start, mask=mask, value=value, ints=_cond_list(int_rows), eff_set=eff_set,
                      eff_clear=eff_clear, eff_steps=_step_list(step_rows))


def encode_goals(domain: Domain, layout: Layout, goals: Sequence[Goal]) -> GoalTables:
    """Encode goals (the domain's own, or ad-hoc ones such as a problem file's) against a layout."""
    G, W = len(goals), layout.n_words
    mask = np.zeros((G, W), dtype=np.uint64)
    value = np.zeros((G, W), dtype=np.uint64)
    int_rows, atom_rows, achiever_rows, max_achieved = [], [], [], []
    changers: dict[str, list[int]] = {}  # fact -> the actions with an effect on it, in order: only they can achieve
    for a, action in enumerate(domain.actions):
        for f in dict.fromkeys(e.fact for e in (*action.effects, *(e for w in action.when for e in w.effects))):
            changers.setdefault(f, []).append(a)
    for g, goal in enumerate(goals):
        int_rows.append(_fold_conditions(domain, layout, goal.want, mask[g], value[g]))
        atom_rows.append([_cond_item(domain, layout, c) for c in goal.want])
        per_action = np.zeros(len(domain.actions), dtype=np.int32)
        for c in goal.want:
            row = [a for a in changers.get(c.fact, ()) if achieves(domain.actions[a], c)]
            achiever_rows.append(row)
            per_action[row] += 1
        max_achieved.append(int(per_action.max(initial=0)))
    starts, flat = _csr([[(a,) for a in r] for r in achiever_rows], (np.int32,))
    return GoalTables(
        goals=tuple(goals),
        mask=mask,
        value=value,
        ints=_cond_list(int_rows),
        atoms=_cond_list(atom_rows),
        achievers=starts,
        achiever_action=flat,
        max_achieved=np.array(max_achieved, dtype=np.int32),
        atom_fact=np.array([domain.fact_index(c.fact) for g in goals for c in g.want], dtype=np.int32),
        atom_sat=np.array([satisfying_values(domain, c) for g in goals for c in g.want], dtype=np.uint64),
        priority=np.array([g.priority for g in goals], dtype=np.float32),
    )


def _relaxed_tables(domain: Domain, layout: Layout) -> RelaxedTables:
    ranges = np.array([f.max - f.min + 1 for f in domain.facts], dtype=np.int64)
    n_values = np.where(ranges > RELAXED_MAX_VALUES, 0, ranges).astype(np.int32)
    pre, eff = [], []
    ops = {"=": 0, "+=": 1, "-=": 2}
    # A conditional effect counts as unconditional here: more effects only make the relaxed task easier, so every
    # heuristic over these tables (h_max, its depth-bounded forms, LM-cut) stays admissible, only weaker.
    for action in domain.actions:
        pre.append([(domain.fact_index(c.fact), OP_CODES[c.op], c.value - domain.fact(c.fact).min) for c in action.pre])
        eff.append([
            (domain.fact_index(e.fact), ops[e.op], e.value - domain.fact(e.fact).min if e.op == "=" else e.value)
            for e in (*action.effects, *(e for w in action.when for e in w.effects))
        ])

    ps, pf, po, pk = _csr(pre, (np.int32, np.int32, np.uint64))
    es, ef, eo, ev = _csr(eff, (np.int32, np.int32, np.int64))
    touching: dict[str, list[int]] = {}
    for a, action in enumerate(domain.actions):
        for f in dict.fromkeys(e.fact for e in (*action.effects, *(e for w in action.when for e in w.effects))):
            touching.setdefault(f, []).append(a)
    # One achiever list per distinct condition (a grounded PDDL task has tens of thousands of preconditions over a
    # few hundred conditions), laid out per precondition with numpy: spider-opt18-strips/p01 took 26 s here.
    by_condition: dict[Condition, np.ndarray] = {}
    rows = []
    for action in domain.actions:
        for c in action.pre:
            row = by_condition.get(c)
            if row is None:
                row = np.array([b for b in touching.get(c.fact, []) if achieves(domain.actions[b], c)], dtype=np.int32)
                by_condition[c] = row
            rows.append(row)
    ach_start = np.zeros(len(rows) + 1, dtype=np.int32)
    ach_start[1:] = np.cumsum([len(r) for r in rows])
    ach_action = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int32)
    return RelaxedTables(
        n_values=n_values, pre_start=ps, pre_fact=pf, pre_op=po, pre_k=pk,
        eff_start=es, eff_fact=ef, eff_op=eo, eff_value=ev,
        pre_ach_start=ach_start, pre_ach_action=ach_action,
        pre_sat=np.array([satisfying_values(domain, c) for a in domain.actions for c in a.pre], dtype=np.uint64),
    )


def satisfying_values(domain: Domain, c: Condition) -> int:
    """Bit v set when encoded value v (value - min) satisfies c; 0 for facts too wide to track."""
    fact = domain.fact(c.fact)
    if fact.max - fact.min + 1 > RELAXED_MAX_VALUES:
        return 0
    return sum(1 << (v - fact.min) for v in range(fact.min, fact.max + 1) if c.holds(v))


def fingerprint(domain: Domain) -> str:
    """A short stable hash of a domain's structure: files that load to the same domain share it.

    Built from the domain's own dataclasses (facts, actions, goals with every field, agent types), so it needs no
    file format. Cost terms and types enter only when a domain has them, so that a domain without them keeps the
    fingerprint it had before they existed (snapshots and outcome files made then still match).
    """

    def action(a: Any) -> dict[str, Any]:
        out = dataclasses.asdict(a)
        if not a.cost_terms:
            del out["cost_terms"]
        return out

    spec = {
        "name": domain.name,
        "facts": [dataclasses.asdict(f) for f in domain.facts],
        "actions": [action(a) for a in domain.actions],
        "goals": [dataclasses.asdict(g) for g in domain.goals],
    }
    if domain.declares_types:
        spec["types"] = [dataclasses.asdict(t) for t in domain.types]
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# --- helpers ---------------------------------------------------------------------------------------------
def _pack_rows(domain: Domain, layout: Layout, states: Sequence[State]) -> np.ndarray:
    """States (value tuples, already in range) packed as uint64[len(states), W], as `DomainTables.pack_states`."""
    out = np.zeros((len(states), layout.n_words), dtype=np.uint64)
    for r, state in enumerate(states):
        for f, v in enumerate(state):
            out[r, layout.word[f]] |= np.uint64((int(v) - int(layout.min[f])) << int(layout.shift[f]))
    return out


def _cond_item(domain: Domain, layout: Layout, c: Condition) -> tuple[int, int, int, int, int]:
    f = domain.fact_index(c.fact)
    k = c.value - int(layout.min[f])
    return (int(layout.word[f]), int(layout.shift[f]), layout.field_mask(f), OP_CODES[c.op], k)


def _fold_conditions(
    domain: Domain, layout: Layout, conditions: Sequence[Condition], mask: np.ndarray, value: np.ndarray
) -> list[tuple[int, int, int, int, int]]:
    """Fold bools and ``==`` into the (mask, value) words; return the rest as condition items."""
    rest = []
    for c in conditions:
        w, s, m, op, k = _cond_item(domain, layout, c)
        if op == OP_CODES["=="]:
            mask[w] |= np.uint64(m << s)
            value[w] |= np.uint64(k << s)
        else:
            rest.append((w, s, m, op, k))
    return rest


def _csr(rows: list[list[tuple]], dtypes: tuple[type, ...]) -> tuple[np.ndarray, ...]:
    """Row starts (int32[R + 1]) and one array per tuple field, for rows of equal-length tuples."""
    start = np.zeros(len(rows) + 1, dtype=np.int32)
    start[1:] = np.cumsum([len(r) for r in rows])
    items = [it for r in rows for it in r]
    return (start, *(np.array([i[c] for i in items], dtype=dt) for c, dt in enumerate(dtypes)))


def _cond_list(rows: list[list[tuple[int, int, int, int, int]]]) -> CondList:
    return CondList(*_csr(rows, (np.int32, np.int32, np.uint64, np.int32, np.uint64)))


def _step_list(rows: list[list[tuple[int, int, int, int, int]]]) -> StepList:
    return StepList(*_csr(rows, (np.int32, np.int32, np.uint64, np.int64, np.uint64)))

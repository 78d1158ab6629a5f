"""Partial-order reduction by strong stubborn sets: the rules, and the tables the Warp planner computes sets from.

Strong stubborn sets (Alkhazraji, Wehrle, Mattmüller & Helmert 2012; Wehrle & Helmert 2014, as Fast Downward's
``stubborn_sets_simple``; tables per fact value, as its ``atom_centric_stubborn_sets`` of Röger, Wehrle, Helmert et
al. 2020, so that no action-by-action relation is ever built). In a state s that is not a goal, the set T is the
least set of the agent's usable actions such that

* T holds the achievers of the first goal condition false in s (a disjunctive action landmark);
* for an action a in T applicable in s, T holds every action that *interferes* with a (`interferes`);
* for an action a in T not applicable in s, T holds the achievers (`goap.domain.achieves`) of a's first precondition
  false in s (in the action's own order: a necessary enabling set).

Only the applicable actions of T are expanded. Every plan from s can be reordered into one of the same cost that
starts with one of them, so A* keeps its optimal cost (and every search its completeness). The fixpoint is unique:
the choices (the first false goal condition, each action's first false precondition) depend on the state alone.

Interference, for the goap condition model (conditions ``fact op k`` over bool and int facts, effects ``= k``,
``+= k``, ``-= k`` clamped to the range, conditional effects, cost terms), conservatively: a and b interfere when

* both write a fact, unless both write it with one and the same unconditional effect (the same map of values,
  which commutes with itself);
* one's effects on a fact can falsify a precondition of the other (`can_falsify`: some value satisfying the
  condition is mapped to one that does not);
* one writes a fact the other reads in a conditional effect's condition or in a cost term (reordering would change
  the other's effects or its cost: a reordered plan must cost the same).

Disabled actions (an agent's enabled mask, its type) are not in the agent's task and never enter T.

The tables (`StubbornTables`), built once per domain, index the facts' *write keys*: the distinct ways an action
writes a fact (its effects on that fact, in order; ``simple`` when it is one unconditional effect). An applicable
action a in T then adds: the writers of every other key of each fact it writes (of its own key too when that is not
simple), the actions with a precondition its key can falsify, the readers (conditions of conditional effects, cost
terms) of each fact it writes, the writers of every key that can falsify one of its preconditions, and the writers
of every fact it reads. Each list is walked once per state (marks per key, condition and fact), so a set costs at
most the sizes of the lists of its actions. The entries are bounded by `MAX_STUBBORN_ENTRIES`; a domain above it
plans without pruning (`StubbornTables.refused` says why).

Like Fast Downward's ``limited_pruning``, a search switches pruning off when, after ``check_after`` expansions
with it, it pruned less than ``min_ratio`` of the applicable actions (1 - kept / applicable over those expansions):
both planners count the same way, so they stay equal node for node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from goap.domain import Action, Condition, Domain, Effect

#: The pruning methods every planner takes (``pruning=``): none, or strong stubborn sets.
PRUNINGS = ("none", "stubborn")
DEFAULT_PRUNING = "none"
#: Fast Downward's ``limited_pruning`` defaults: switch pruning off when it pruned less than 20% of the applicable
#: actions over the first 1,000 expansions.
DEFAULT_MIN_PRUNING_RATIO = 0.2
DEFAULT_PRUNING_CHECK_AFTER = 1000
#: The most table entries (int32) a domain's stubborn-set tables may hold (64 MiB); above it, no pruning.
MAX_STUBBORN_ENTRIES = 1 << 24
#: Fact ranges up to this size are checked value by value in `can_falsify`; larger ones by the effect's direction.
EXACT_RANGE = 4096


def check_pruning(pruning: str, min_ratio: float, check_after: int) -> str:
    """Refuse pruning options no planner can honour, naming the option and the accepted values."""
    if pruning not in PRUNINGS:
        raise ValueError(f"unknown pruning {pruning!r} (known: {', '.join(PRUNINGS)})")
    if isinstance(min_ratio, bool) or not isinstance(min_ratio, int | float) or not 0.0 <= min_ratio <= 1.0:
        raise ValueError(f"pruning_min_ratio must be a number in 0..1, got {min_ratio!r}")
    if isinstance(check_after, bool) or not isinstance(check_after, int | np.integer) or not 0 <= check_after <= 2**30:
        raise ValueError(f"pruning_check_after must be an integer in 0..2**30, got {check_after!r}")
    return pruning


def pruning_off(before: int, after: int, expanded: int, min_ratio: float, check_after: int) -> bool:
    """Whether a search switches pruning off at its expansion number ``expanded`` (counted from 1), having seen
    ``before`` applicable actions and kept ``after`` of them over its first ``check_after`` expansions (the Warp
    kernel's test, in the same float64 arithmetic)."""
    if expanded <= check_after:
        return False
    ratio = 1.0 if before == 0 else 1.0 - float(after) / float(before)
    return ratio < min_ratio


# --- the rules ------------------------------------------------------------------------------------------------
def _effects(action: Action) -> list[tuple[Effect, bool]]:
    """The action's effects in the order they apply, each with whether it is conditional."""
    return [(e, False) for e in action.effects] + [(e, True) for w in action.when for e in w.effects]


def write_keys(action: Action) -> dict[str, tuple]:
    """Per fact the action writes, its write key: ``(simple, ((op, value, conditional), ...))``."""
    out: dict[str, list] = {}
    for e, cond in _effects(action):
        out.setdefault(e.fact, []).append((e.op, e.value, cond))
    return {f: (len(r) == 1 and not r[0][2], tuple(r)) for f, r in out.items()}


def other_reads(domain: Domain, action: Action) -> set[str]:
    """The facts the action reads outside its preconditions: its conditional effects' conditions, its cost terms."""
    out = {c.fact for w in action.when for c in w.cond}
    out |= {domain.facts[f].name for f, _ in action.cost_terms}
    return out


def _apply(op: str, value: int, x: int, lo: int, hi: int) -> int:
    if op == "=":
        return value
    moved = x + value if op == "+=" else x - value
    return min(max(moved, lo), hi)


def _satisfiable(c: Condition, lo: int, hi: int) -> bool:
    """Whether some value in ``lo..hi`` satisfies c."""
    k = c.value
    if c.op == "==":
        return lo <= k <= hi
    if c.op == "!=":
        return lo < hi or lo != k
    if c.op == "<":
        return lo < k
    if c.op == "<=":
        return lo <= k
    if c.op == ">":
        return hi > k
    return hi >= k


def can_falsify(domain: Domain, key: tuple, c: Condition) -> bool:
    """Whether a write with ``key`` (`write_keys`) can turn condition ``c`` (on the same fact) from true to false.

    Each effect on the fact is checked alone: effects that each keep every value satisfying c satisfying also do in
    sequence. Ranges up to `EXACT_RANGE` values are checked value by value, larger ones by the effect's direction.
    """
    fact = domain.fact(c.fact)
    lo, hi = fact.min, fact.max
    for op, value, _cond in key[1]:
        if op == "=":  # falsifies c unless it writes a value satisfying c (or no value in range satisfies c)
            if not c.holds(value) and _satisfiable(c, lo, hi):
                return True
        elif hi - lo + 1 <= EXACT_RANGE:
            if any(c.holds(x) and not c.holds(_apply(op, value, x, lo, hi)) for x in range(lo, hi + 1)):
                return True
        elif c.op in ("==", "!=") or (op == "+=" and c.op in ("<", "<=")) or (op == "-=" and c.op in (">", ">=")):
            return True
    return False


def interferes(domain: Domain, a: int, b: int) -> bool:
    """Whether actions a and b interfere (see the module docstring); symmetric, and False for a == b."""
    if a == b:
        return False
    x, y = domain.actions[a], domain.actions[b]
    wx, wy = write_keys(x), write_keys(y)
    for f in wx.keys() & wy.keys():
        if not (wx[f][0] and wy[f][0] and wx[f] == wy[f]):
            return True
    for w, act in ((wx, y), (wy, x)):
        for c in act.pre:
            if c.fact in w and can_falsify(domain, w[c.fact], c):
                return True
    return bool(wx.keys() & other_reads(domain, y) or wy.keys() & other_reads(domain, x))


# --- the tables -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StubbornTables:
    """What the Warp planner computes stubborn sets from (the Warp mirror `goap.kernels.stubborn.StubbornTables`
    has the same names); conditions are `goap.planners.base.ConditionTables` ids.

    Write keys are numbered fact by fact: fact f's keys are ``key_start[f]:key_start[f + 1]``, so its writers,
    key after key, are ``writer_action[writer_start[key_start[f]]:writer_start[key_start[f + 1]]]``.
    """

    write_start: np.ndarray  # int32[A + 1]: action a's write keys are write_key[write_start[a]:write_start[a + 1]]
    write_key: np.ndarray  # int32[...]
    key_fact: np.ndarray  # int32[K]
    key_simple: np.ndarray  # int32[K]: 1 when the key is one unconditional effect (commutes with itself)
    key_start: np.ndarray  # int32[F + 1]
    writer_start: np.ndarray  # int32[K + 1]: the actions writing with each key
    writer_action: np.ndarray  # int32[...]
    falsifies_start: np.ndarray  # int32[K + 1]: the conditions each key can falsify
    falsifies_cond: np.ndarray  # int32[...]
    falsified_start: np.ndarray  # int32[C + 1]: the keys that can falsify each condition
    falsified_key: np.ndarray  # int32[...]
    reader_start: np.ndarray  # int32[F + 1]: the actions reading each fact outside their preconditions
    reader_action: np.ndarray  # int32[...]
    read_start: np.ndarray  # int32[A + 1]: the facts each action reads outside its preconditions
    read_fact: np.ndarray  # int32[...]
    refused: str = field(default="")  # non-empty: the tables would exceed MAX_STUBBORN_ENTRIES (they are empty)

    @property
    def n_keys(self) -> int:
        return len(self.key_fact)

    @property
    def n_facts(self) -> int:
        return len(self.key_start) - 1

    @property
    def entries(self) -> int:
        return sum(int(getattr(self, f).size) for f in self.__dataclass_fields__ if f != "refused")


def _starts(rows: list[list[int]]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum([len(r) for r in rows], dtype=np.int64)]).astype(np.int32)


def _flat(rows: list[list[int]]) -> np.ndarray:
    return np.array([x for r in rows for x in r], dtype=np.int32)


def stubborn_tables(domain: Domain, conditions: list[Condition], limit: int | None = None) -> StubbornTables:
    """The tables of ``domain``; ``conditions`` are the distinct preconditions in `ConditionTables` order.

    Sizes are counted before anything is built: a domain whose tables would exceed ``limit`` entries gets empty
    tables with ``refused`` set (the planners then search without pruning and say so).
    """
    limit = MAX_STUBBORN_ENTRIES if limit is None else limit
    A, F = len(domain.actions), len(domain.facts)
    fact_id = {f.name: i for i, f in enumerate(domain.facts)}
    keys_of = [write_keys(a) for a in domain.actions]
    per_fact: list[dict[tuple, list[int]]] = [{} for _ in range(F)]
    for a, keys in enumerate(keys_of):
        for f, key in keys.items():
            per_fact[fact_id[f]].setdefault(key, []).append(a)
    conds_of_fact: list[list[int]] = [[] for _ in range(F)]
    for c, cond in enumerate(conditions):
        conds_of_fact[fact_id[cond.fact]].append(c)
    n_keys = sum(len(k) for k in per_fact)
    pairs = sum(len(k) * len(conds_of_fact[f]) for f, k in enumerate(per_fact))  # at least the falsify lists
    reads = [other_reads(domain, a) for a in domain.actions]
    estimate = (2 * (A + 1) + 2 * (F + 1) + 4 * n_keys + 2 + len(conditions) + 1 + 2 * sum(len(k) for k in keys_of)
                + 2 * pairs + 2 * sum(len(r) for r in reads))
    if estimate > limit:
        empty = np.zeros(0, dtype=np.int32)
        return StubbornTables(
            write_start=np.zeros(A + 1, dtype=np.int32), write_key=empty, key_fact=empty, key_simple=empty,
            key_start=np.zeros(F + 1, dtype=np.int32), writer_start=np.zeros(1, dtype=np.int32), writer_action=empty,
            falsifies_start=np.zeros(1, dtype=np.int32), falsifies_cond=empty,
            falsified_start=np.zeros(len(conditions) + 1, dtype=np.int32), falsified_key=empty,
            reader_start=np.zeros(F + 1, dtype=np.int32), reader_action=empty,
            read_start=np.zeros(A + 1, dtype=np.int32), read_fact=empty,
            refused=(f"stubborn-set tables of {domain.name!r} would hold about {estimate:,} entries, above the "
                     f"{limit:,} allowed: searching without pruning"),
        )
    key_id: dict[tuple[int, tuple], int] = {}
    key_fact, key_simple, writers, key_start = [], [], [], [0]
    falsifies: list[list[int]] = []
    falsified: list[list[int]] = [[] for _ in conditions]
    for f in range(F):
        for key, acts in per_fact[f].items():
            k = len(key_fact)
            key_id[(f, key)] = k
            key_fact.append(f)
            key_simple.append(int(key[0]))
            writers.append(acts)
            row = [c for c in conds_of_fact[f] if can_falsify(domain, key, conditions[c])]
            falsifies.append(row)
            for c in row:
                falsified[c].append(k)
        key_start.append(len(key_fact))
    write_rows = [sorted(key_id[(fact_id[f], key)] for f, key in keys.items()) for keys in keys_of]
    read_rows = [sorted(fact_id[f] for f in r) for r in reads]
    readers: list[list[int]] = [[] for _ in range(F)]
    for a, row in enumerate(read_rows):
        for f in row:
            readers[f].append(a)
    return StubbornTables(
        write_start=_starts(write_rows), write_key=_flat(write_rows),
        key_fact=np.array(key_fact, dtype=np.int32), key_simple=np.array(key_simple, dtype=np.int32),
        key_start=np.array(key_start, dtype=np.int32),
        writer_start=_starts(writers), writer_action=_flat(writers),
        falsifies_start=_starts(falsifies), falsifies_cond=_flat(falsifies),
        falsified_start=_starts(falsified), falsified_key=_flat(falsified),
        reader_start=_starts(readers), reader_action=_flat(readers),
        read_start=_starts(read_rows), read_fact=_flat(read_rows),
    )


def interferers(tables: StubbornTables, pre: list[list[int]], pre_of: list[list[int]], a: int) -> set[int]:
    """The actions the tables add for an applicable action a (its interferers, a itself possibly among them):
    what the kernel pushes, for the test that the tables and `interferes` agree. ``pre[a]`` are a's precondition
    ids, ``pre_of[c]`` the actions with precondition c."""
    t = tables
    out: set[int] = set()

    def writers(k: int) -> list[int]:
        return [int(b) for b in t.writer_action[t.writer_start[k]:t.writer_start[k + 1]]]

    for k in t.write_key[t.write_start[a]:t.write_start[a + 1]]:
        f = int(t.key_fact[k])
        for k2 in range(int(t.key_start[f]), int(t.key_start[f + 1])):
            if k2 != k or not t.key_simple[k]:
                out.update(writers(k2))
        for c in t.falsifies_cond[t.falsifies_start[k]:t.falsifies_start[k + 1]]:
            out.update(pre_of[int(c)])
        out.update(int(b) for b in t.reader_action[t.reader_start[f]:t.reader_start[f + 1]])
    for c in pre[a]:
        for k in t.falsified_key[t.falsified_start[c]:t.falsified_start[c + 1]]:
            out.update(writers(int(k)))
    for f in t.read_fact[t.read_start[a]:t.read_start[a + 1]]:
        for k2 in range(int(t.key_start[f]), int(t.key_start[f + 1])):
            out.update(writers(k2))
    return out


def distinct_preconditions(domain: Domain) -> list[Condition]:
    """The domain's distinct action preconditions, numbered as `goap.planners.base.condition_tables` numbers them."""
    seen: dict[Condition, None] = {}
    for action in domain.actions:
        for c in action.pre:
            seen.setdefault(c, None)
    return list(seen)

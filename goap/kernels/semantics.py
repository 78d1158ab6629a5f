"""The planning rules as Warp functions: one home, used by the search kernel and by every tick kernel.

A goal test, a precondition test and the application of an action's effects are written here once, over a
2-D array of packed states and a row index, so the same function serves the brain's ``states[N, W]`` and the
search's node rows. `goap.domain` (pure Python) is their oracle in the tests.

The Warp structs mirror the numpy tables of `goap.encoding` field for field, under the same names
(``tables.pre_ints.start`` is ``DomainTables.pre_ints.start`` in both worlds), and `to_device` copies any of
them by walking the struct's fields, so a table gains a field in one place and the copy follows.

Helpers for game code: `read_field` / `write_field` read and write one packed fact given the layout a fact
exports (``word``, ``shift``, ``mask``, and ``top``, the encoded maximum; see `goap.runtime.Brain.fact_slot`), for
a game's own kernels. Values are encoded as value - min; the field's ``mask`` is the width's all-ones value, which
is above the fact's range unless the range is 2^k values, so bound a value by ``top``, never by ``mask``::

    @wp.kernel
    def starve(states: wp.array2d(dtype=wp.uint64), word: int, shift: int, mask: wp.uint64, top: wp.uint64):
        i = wp.tid()
        v = read_field(states, i, word, shift, mask)  # encoded: value - min
        if v < top:
            write_field(states, i, word, shift, mask, v + wp.uint64(1))

    slot = brain.fact_slot("hunger")
    wp.launch(starve, brain.n_agents, [brain.states, slot.word, slot.shift, wp.uint64(slot.mask),
                                       wp.uint64(slot.top)], device=brain.device)
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import warp as wp

OP_EQ = wp.constant(0)
OP_NE = wp.constant(1)
OP_LT = wp.constant(2)
OP_LE = wp.constant(3)
OP_GT = wp.constant(4)
OP_GE = wp.constant(5)


# --- tables (names as in goap.encoding) ----------------------------------------------------------------------
@wp.struct
class Layout:
    """`goap.encoding.Layout`: where each fact lives; ``mask`` is the field mask before shifting."""

    word: wp.array(dtype=wp.int32)
    shift: wp.array(dtype=wp.int32)
    width: wp.array(dtype=wp.int32)
    mask: wp.array(dtype=wp.uint64)
    min: wp.array(dtype=wp.int64)
    n_words: int


@wp.struct
class CondList:
    """`goap.encoding.CondList`: condition rows; row r owns items ``start[r]:start[r + 1]``."""

    start: wp.array(dtype=wp.int32)
    word: wp.array(dtype=wp.int32)
    shift: wp.array(dtype=wp.int32)
    mask: wp.array(dtype=wp.uint64)
    op: wp.array(dtype=wp.int32)
    k: wp.array(dtype=wp.uint64)


@wp.struct
class StepList:
    """`goap.encoding.StepList`: ``+=`` / ``-=`` effects, clamped to ``0..hi`` in encoded space."""

    start: wp.array(dtype=wp.int32)
    word: wp.array(dtype=wp.int32)
    shift: wp.array(dtype=wp.int32)
    mask: wp.array(dtype=wp.uint64)
    delta: wp.array(dtype=wp.int64)
    hi: wp.array(dtype=wp.uint64)


@wp.struct
class GoalTables:
    """`goap.encoding.GoalTables`: the exact goal test plus the per-atom data of the heuristics."""

    mask: wp.array2d(dtype=wp.uint64)
    value: wp.array2d(dtype=wp.uint64)
    ints: CondList
    atoms: CondList
    achievers: wp.array(dtype=wp.int32)
    achiever_action: wp.array(dtype=wp.int32)
    max_achieved: wp.array(dtype=wp.int32)
    atom_fact: wp.array(dtype=wp.int32)
    atom_sat: wp.array(dtype=wp.uint64)
    priority: wp.array(dtype=wp.float32)
    n_goals: int


@wp.struct
class RelaxedTables:
    """`goap.encoding.RelaxedTables`: fact-level actions for the delete-relaxed reachability check."""

    n_values: wp.array(dtype=wp.int32)
    pre_start: wp.array(dtype=wp.int32)
    pre_fact: wp.array(dtype=wp.int32)
    pre_op: wp.array(dtype=wp.int32)
    pre_k: wp.array(dtype=wp.uint64)
    pre_sat: wp.array(dtype=wp.uint64)
    eff_start: wp.array(dtype=wp.int32)
    eff_fact: wp.array(dtype=wp.int32)
    eff_op: wp.array(dtype=wp.int32)
    eff_value: wp.array(dtype=wp.int64)
    pre_ach_start: wp.array(dtype=wp.int32)
    pre_ach_action: wp.array(dtype=wp.int32)
    n_pre: int
    total_values: int


@wp.struct
class WhenTables:
    """`goap.encoding.WhenTables`: conditional effects, rows per action."""

    start: wp.array(dtype=wp.int32)
    mask: wp.array2d(dtype=wp.uint64)
    value: wp.array2d(dtype=wp.uint64)
    ints: CondList
    eff_set: wp.array2d(dtype=wp.uint64)
    eff_clear: wp.array2d(dtype=wp.uint64)
    eff_steps: StepList


@wp.struct
class DomainTables:
    """`goap.encoding.DomainTables`: a domain's actions (and its layout, goals and relaxed tables)."""

    layout: Layout
    pre_mask: wp.array2d(dtype=wp.uint64)
    pre_value: wp.array2d(dtype=wp.uint64)
    pre_ints: CondList
    eff_set: wp.array2d(dtype=wp.uint64)
    eff_clear: wp.array2d(dtype=wp.uint64)
    eff_steps: StepList
    cost: wp.array(dtype=wp.float64)
    goals: GoalTables
    relaxed: RelaxedTables
    min_cost: wp.array(dtype=wp.float64)
    term_start: wp.array(dtype=wp.int32)
    term_fact: wp.array(dtype=wp.int32)
    term_per: wp.array(dtype=wp.float64)
    term_min: wp.array(dtype=wp.float64)
    has_terms: int
    type_allowed: wp.array2d(dtype=wp.bool)
    type_scale: wp.array2d(dtype=wp.float64)
    typed: int
    n_words: int
    n_actions: int
    when: WhenTables


_STRUCT = type(Layout)


def struct_fields(struct: Any) -> dict[str, Any]:
    """A Warp struct type's fields: name -> Warp type (an array type, a nested struct or a scalar)."""
    return {name: var.type for name, var in struct.vars.items()}


def to_device(tables: Any, struct: Any, device: Any) -> Any:
    """Copy a numpy table (a `goap.encoding` dataclass) into an instance of the Warp ``struct`` of the same names.

    Walks the struct's fields: an array field takes the table's attribute of that name (converted to the field's
    dtype; an empty array stays valid), a nested struct recurses, a scalar takes the attribute (properties too).
    """
    out = struct()
    for name, wtype in struct_fields(struct).items():
        if not hasattr(tables, name):
            raise AttributeError(f"{type(tables).__name__} has no field '{name}' that {struct.key} expects")
        value = getattr(tables, name)
        if isinstance(wtype, _STRUCT):
            setattr(out, name, to_device(value, wtype, device))
        elif wp.types.is_array(wtype):
            np_dtype = wp.dtype_to_numpy(wtype.dtype)
            arr = np.ascontiguousarray(np.asarray(value, dtype=np_dtype))
            if arr.ndim != wtype.ndim:
                raise ValueError(f"field '{name}' has {arr.ndim} dimensions, {struct.key} expects {wtype.ndim}")
            if arr.size == 0:  # Warp arrays of size 0 have a null pointer; keep one harmless element
                arr = np.zeros((1,) * wtype.ndim, dtype=np_dtype)
            setattr(out, name, wp.array(arr, dtype=wtype.dtype, device=device))
        else:
            setattr(out, name, int(value) if wtype is int or wtype is wp.int32 else value)
    return out


def table_field_names(tables: Any) -> set[str]:
    """The numpy dataclass's fields and properties that a Warp mirror may name (for the parity test)."""
    names = {f.name for f in dataclasses.fields(tables)}
    names |= {n for n in dir(type(tables)) if isinstance(getattr(type(tables), n), property)}
    return names


# --- the rules -----------------------------------------------------------------------------------------------
@wp.func
def condition_holds(v: wp.uint64, op: int, k: wp.uint64) -> bool:
    """Whether encoded value v satisfies ``v op k`` (op in OP_EQ .. OP_GE)."""
    if op == OP_EQ:
        return v == k
    if op == OP_NE:
        return v != k
    if op == OP_LT:
        return v < k
    if op == OP_LE:
        return v <= k
    if op == OP_GT:
        return v > k
    return v >= k


@wp.func
def field_value(word: wp.uint64, shift: int, fmask: wp.uint64) -> wp.uint64:
    """The encoded value of a field in a state word."""
    return (word >> wp.uint64(shift)) & fmask


@wp.func
def read_field(states: wp.array2d(dtype=wp.uint64), row: int, word: int, shift: int, mask: wp.uint64) -> wp.uint64:
    """One packed fact of ``states[row]``, encoded (value - min)."""
    return (states[row, word] >> wp.uint64(shift)) & mask


@wp.func
def write_field(
    states: wp.array2d(dtype=wp.uint64), row: int, word: int, shift: int, mask: wp.uint64, value: wp.uint64
):
    """Write the encoded ``value`` (value - min, at most ``mask``) of one packed fact of ``states[row]``."""
    sh = wp.uint64(shift)
    states[row, word] = (states[row, word] & ~(mask << sh)) | ((value & mask) << sh)


@wp.func
def term_cost(
    states: wp.array2d(dtype=wp.uint64), row: int, term_start: wp.array(dtype=wp.int32),
    term_fact: wp.array(dtype=wp.int32), term_per: wp.array(dtype=wp.float64), lay_word: wp.array(dtype=wp.int32),
    lay_shift: wp.array(dtype=wp.int32), lay_mask: wp.array(dtype=wp.uint64), lay_min: wp.array(dtype=wp.int64),
    a: int, base: wp.float64,
) -> wp.float64:
    """``max(0, base + sum_k per_k * value_k)`` of action a in ``states[row]``: `goap.domain.Domain.action_cost`
    before the type's scale (float64, terms in declaration order, fact values decoded: encoded + min)."""
    acc = base
    for k in range(term_start[a], term_start[a + 1]):
        f = term_fact[k]
        v = wp.int64(field_value(states[row, lay_word[f]], lay_shift[f], lay_mask[f])) + lay_min[f]
        acc = acc + term_per[k] * wp.float64(v)
    return wp.max(wp.float64(0.0), acc)


@wp.func
def conds_hold(states: wp.array2d(dtype=wp.uint64), row: int, c: CondList, r: int) -> bool:
    """Whether every listed condition of row r of ``c`` holds in ``states[row]``."""
    for j in range(c.start[r], c.start[r + 1]):
        v = field_value(states[row, c.word[j]], c.shift[j], c.mask[j])
        if not condition_holds(v, c.op[j], c.k[j]):
            return False
    return True


@wp.func
def masks_hold(
    states: wp.array2d(dtype=wp.uint64), row: int, mask: wp.array2d(dtype=wp.uint64),
    value: wp.array2d(dtype=wp.uint64), r: int,
) -> bool:
    """``(s & mask[r]) == value[r]`` in every word of ``states[row]``."""
    for w in range(states.shape[1]):
        if (states[row, w] & mask[r, w]) != value[r, w]:
            return False
    return True


@wp.func
def goal_satisfied(
    states: wp.array2d(dtype=wp.uint64), row: int, mask: wp.array2d(dtype=wp.uint64),
    value: wp.array2d(dtype=wp.uint64), ints: CondList, g: int,
) -> bool:
    """Whether goal g holds in ``states[row]``, from the goal table's arrays (see `action_applicable` for why hot
    loops call this rather than `goal_reached`)."""
    if not masks_hold(states, row, mask, value, g):
        return False
    return conds_hold(states, row, ints, g)


@wp.func
def goal_reached(states: wp.array2d(dtype=wp.uint64), row: int, gt: GoalTables, g: int) -> bool:
    """Whether goal g holds in ``states[row]``."""
    return goal_satisfied(states, row, gt.mask, gt.value, gt.ints, g)


@wp.func
def action_applicable(
    states: wp.array2d(dtype=wp.uint64), row: int, pre_mask: wp.array2d(dtype=wp.uint64),
    pre_value: wp.array2d(dtype=wp.uint64), pre_ints: CondList, a: int,
) -> bool:
    """Whether action a's preconditions hold in ``states[row]``, from the tables they are made of.

    Hot loops call this rather than `is_applicable`: a Warp function takes its arguments by value, and the whole
    `DomainTables` struct is dozens of arrays, which the CPU backend copies at each call it does not inline away.
    """
    if not masks_hold(states, row, pre_mask, pre_value, a):
        return False
    return conds_hold(states, row, pre_ints, a)


@wp.func
def is_applicable(states: wp.array2d(dtype=wp.uint64), row: int, tables: DomainTables, a: int) -> bool:
    """Whether action a's preconditions hold in ``states[row]``."""
    return action_applicable(states, row, tables.pre_mask, tables.pre_value, tables.pre_ints, a)


@wp.func
def apply_action(
    src: wp.array2d(dtype=wp.uint64), src_row: int, dst: wp.array2d(dtype=wp.uint64), dst_row: int,
    eff_clear: wp.array2d(dtype=wp.uint64), eff_set: wp.array2d(dtype=wp.uint64), st: StepList, a: int,
):
    """``dst[dst_row]`` = ``src[src_row]`` after action a's effects, from the tables they are made of (see
    `action_applicable` for why hot loops call this rather than `apply_effects`)."""
    for w in range(src.shape[1]):
        dst[dst_row, w] = (src[src_row, w] & ~eff_clear[a, w]) | eff_set[a, w]
    for j in range(st.start[a], st.start[a + 1]):
        w = st.word[j]
        sh = wp.uint64(st.shift[j])
        fm = st.mask[j]
        word = dst[dst_row, w]
        v = wp.int64((word >> sh) & fm) + st.delta[j]
        v = wp.clamp(v, wp.int64(0), wp.int64(st.hi[j]))
        dst[dst_row, w] = (word & ~(fm << sh)) | (wp.uint64(v) << sh)


@wp.func
def apply_when(
    src: wp.array2d(dtype=wp.uint64), src_row: int, dst: wp.array2d(dtype=wp.uint64), dst_row: int,
    wt: WhenTables, a: int,
):
    """Action a's conditional effects on ``dst[dst_row]`` (already holding its unconditional effects), each judged
    on ``src[src_row]``, the state before the action (a different row), in order: `goap.domain.Domain.apply`."""
    for c in range(wt.start[a], wt.start[a + 1]):
        if action_applicable(src, src_row, wt.mask, wt.value, wt.ints, c):
            apply_action(dst, dst_row, dst, dst_row, wt.eff_clear, wt.eff_set, wt.eff_steps, c)


@wp.func
def apply_effects(
    src: wp.array2d(dtype=wp.uint64), src_row: int, dst: wp.array2d(dtype=wp.uint64), dst_row: int,
    tables: DomainTables, a: int,
):
    """``dst[dst_row]`` = ``src[src_row]`` after action a's effects (assignments, then clamped steps).

    ``src`` and ``dst`` may be the same array and row.
    """
    apply_action(src, src_row, dst, dst_row, tables.eff_clear, tables.eff_set, tables.eff_steps, a)

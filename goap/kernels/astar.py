"""Batched A*: one search per thread, the agents of a wave in one launch.

The kernel follows `goap.planners.reference.ReferencePlanner.search` step for step (same heuristics, same float64
sums, same (f, h, node) order on the open list, same pool checks, the same stubborn sets with ``pruning``: each
expanded state's set computed by `goap.kernels.stubborn.stubborn_set`, only its applicable actions expanded), so
both planners expand the same nodes and return the same statuses, costs and plans. The ``pdb`` heuristic reads
the pattern databases of the goal table (``pt``, built once by `goap.kernels.pdb`), scaled by a factor the
per-search loop over actions computes; ``scp`` reads the same layout as sums over orders of patterns
(`goap.kernels.pdb.scp_value`), ``max_lmcut_pdb`` / ``max_lmcut_scp`` add LM-cut where the tables leave a state
open. The
rules (goal test, precondition test, effects) are the ones of `goap.kernels.semantics`, applied to node rows:
thread t's node n is row ``t * (pool + 1) + n`` of ``node_state``.

Costs: ``act_cost`` holds each action's least cost for the agent (its base, plus each cost term at its cheaper end,
clamped at 0, times its type's scale; inf where disabled or not its type's): what every heuristic charges, so they
stay admissible. An expansion of an action with cost terms charges the exact cost in the state expanded
(`goap.kernels.semantics.term_cost`, as `goap.domain.Domain.action_cost`), and so does the plan read-back. A domain
without terms (``has_terms`` 0) or without types (``typed`` 0) skips those loops and lookups. (On a GPU the compiler
may fuse ``acc + per * v`` into one multiply-add: with coefficients whose products are not exact in float64, a
cost can then differ from the reference's in its last bit.)

Scratch rows (``t = scratch_first + tid * row_step``): one per thread on a GPU (``row_step`` 1); on the CPU, where a
launch runs its threads one after another, the searches of a launch share one row (``row_step`` 0), which stays in
cache. For a pool of M states a row holds:

    node_state   uint64 [T (M + 1), W]   row M of each thread is where a successor is built before it is kept
    node_g/h     float64[T, M]
    node_parent  int32  [T, M]
    node_pos     int32  [T, M]           the node's place in the open list, -1 once closed
    heap         int32  [T, M]           binary heap of node ids ordered by (f, h, node); f = g + w h from node_g/h
    table        int32  [T, H]           open addressing, -1 = empty; H = the power of two >= 2M
    act_cost     float64[T, A]           this agent's action costs, inf where disabled
    pre_cost     float64[T, P]           cheapest usable achiever of each action precondition (hmax_depth2)
    cond_h/act_h float64[T, C] / [T, A]  h_max of each distinct precondition, and per action the max over its own
    cond_heap/pos int32 [T, C]           h_max's heap of conditions (next links on buckets), positions (buckets)
    bucket       int32  [T, K + 1]       h_max's bucket heads (K = HMAX_BUCKETS), and whether LM-cut may use them
    cond_prev    int32  [T, C]           back links of the bucket lists
    act_left     int32  [T, A]           per action, its preconditions not yet popped (-2: outside the cone, off)
    act_rc/pcf   float64/int32 [T, A]    LM-cut: remaining cost, pcf (precondition of largest h_max) per action
    act/cond_mark int32 [T, A] / [T, C]  LM-cut: achieves the goal zone / in the cut; in the zone / before it
    cond_list    int32  [T, C]           LM-cut: the true conditions, then a round's zone and before-zone sets
    cond_child   int32  [T, C]           LM-cut: per condition, the first action whose pcf it is
    act_next/prev int32 [T, A]           LM-cut: the rest of those lists
    reached      uint64 [T, F]           the relaxed reachability check's reached values, per fact

No action is stored per node: a plan is read back by finding, for each node on the path, the first usable action
that turns its parent's state into its own at exactly its g (the action the search recorded, as the reference's).
The open list holds each open node once (a decrease-key heap), so it never outgrows the pool. The hash table is
left empty after every search (the stored nodes are looked up and cleared); escalated levels share one arena of
scratch, so there the first search of a row in a launch empties the row's table first. A* reopens a closed state
reached again more cheaply (only LM-cut, which is not consistent, does that). Every loop is bounded: probing by H,
sifting by 32 levels, the search by `pop_limit(M)` pops (M + 1 unless it reopens a state), h_max by C pops of
its queue, LM-cut by A + 2 rounds of it. The h_max and LM-cut functions write their loops as ``while i < end``
over a counter that climbs by one to a fixed end (each body ends with ``i += 1`` and has no ``continue``): Warp's
``range`` keeps a run-time step whose sign every iteration tests, which cost LM-cut about a fifth of its time.
"""

from __future__ import annotations

import functools

import warp as wp

from goap.encoding import HMAX_BUCKETS
from goap.kernels.codes import ST_BUDGET, ST_NO_PLAN, ST_OK, ST_SATISFIED, ST_TOO_LONG
from goap.kernels.pdb import PatternLookup, pdb_value, scp_value
from goap.kernels.semantics import (
    CondList,
    DomainTables,
    GoalTables,
    action_applicable,
    apply_action,
    apply_when,
    condition_holds,
    field_value,
    goal_satisfied,
    term_cost,
)
from goap.kernels.stubborn import Pruning, applicable_count, pruning_off, stubborn_set
from goap.planners.base import (
    LMCUT_PROBE,
    LMCUT_TIES_AUTO,
    LMCUT_ZONE_AUTO,
    RELAXED_CHECK_AFTER,
    lmcut_ties_code,
    lmcut_zone_code,
)

HEUR_HMAX = wp.constant(0)
HEUR_HMAX_DEPTH2 = wp.constant(1)
HEUR_HMAX_DEPTH1 = wp.constant(2)
HEUR_LMCUT = wp.constant(3)
HEUR_PDB = wp.constant(4)
#: The heuristics' codes (``Search.heuristic``), by their names in `goap.planners.base.HEURISTICS`.
HEUR_MAX_LMCUT_PDB = wp.constant(5)
HEUR_SCP = wp.constant(6)
HEUR_MAX_LMCUT_SCP = wp.constant(7)
HEURISTIC_CODES = {"hmax": 0, "hmax_depth2": 1, "hmax_depth1": 2, "lmcut": 3, "pdb": 4, "max_lmcut_pdb": 5,
                   "scp": 6, "max_lmcut_scp": 7}
RELAXED_AFTER = wp.constant(RELAXED_CHECK_AFTER)
LM_PROBE = wp.constant(LMCUT_PROBE)
ZONE_AUTO = wp.constant(lmcut_zone_code(LMCUT_ZONE_AUTO))
TIES_AUTO = wp.constant(lmcut_ties_code(LMCUT_TIES_AUTO))
CARRY_HEAD = 12  # the columns of a kept search's head (Carry.head)
OUTSIDE = wp.constant(-2)  # cond_pos of a condition outside the goal's cone, act_left of an action outside or off
BUCKETS = wp.constant(HMAX_BUCKETS)  # h_max's bucket queue: integral action costs below this (else the binary heap)
BUCKETS_F = wp.constant(wp.float64(HMAX_BUCKETS))  # the same, for comparisons with costs and values
MARK_OUTSIDE = wp.constant(3)  # LM-cut's cond_mark of a condition outside the goal's cone (0: in it, unmarked)


@wp.struct
class ConditionTables:
    """`goap.planners.base.ConditionTables`: distinct action preconditions for h_max (names as there)."""

    word: wp.array(dtype=wp.int32)
    shift: wp.array(dtype=wp.int32)
    mask: wp.array(dtype=wp.uint64)
    op: wp.array(dtype=wp.int32)
    k: wp.array(dtype=wp.uint64)
    action_start: wp.array(dtype=wp.int32)
    action_cond: wp.array(dtype=wp.int32)
    achiever_start: wp.array(dtype=wp.int32)
    achiever_action: wp.array(dtype=wp.int32)
    default_pre_cost: wp.array(dtype=wp.float64)
    pre_of_start: wp.array(dtype=wp.int32)
    pre_of_action: wp.array(dtype=wp.int32)
    effect_start: wp.array(dtype=wp.int32)
    effect_cond: wp.array(dtype=wp.int32)
    n_conditions: int
    n_actions: int
    lm_stable: int  # LM-cut's pcf ties (`goap.planners.base.LMCUT_TIES`): 0 highest, 1 stable, 2 the max of both,
    # 3 "auto" (each search probes both on its first states: `goap.planners.base.LMCUT_TIES_AUTO`)
    lm_zone: int  # 1: LM-cut's goal-zone tie rule (`goap.planners.base.DEFAULT_LMCUT_ZONE_TIES`), 0: off, 2: both, max,
    # 3: "auto" (each search probes both on its first states: `goap.planners.base.LMCUT_ZONE_AUTO`)


@wp.struct
class Relevance:
    """`goap.planners.base.Relevance`: per goal of a goal table, the preconditions (ids of `ConditionTables`)
    its h_max can depend on and the actions whose precondition maxima it reads; per goal atom, the equal
    precondition's id (or -1)."""

    cond_start: wp.array(dtype=wp.int32)
    cond: wp.array(dtype=wp.int32)
    action_start: wp.array(dtype=wp.int32)
    action: wp.array(dtype=wp.int32)
    atom_cond: wp.array(dtype=wp.int32)
    free_start: wp.array(dtype=wp.int32)
    free: wp.array(dtype=wp.int32)


@wp.struct
class Query:
    """What one call plans: the brain's (or the caller's) arrays, and which rows."""

    states: wp.array2d(dtype=wp.uint64)
    goals: wp.array(dtype=wp.int32)
    costs: wp.array2d(dtype=wp.float32)
    has_costs: int
    enabled: wp.array2d(dtype=wp.bool)
    has_enabled: int
    ids: wp.array(dtype=wp.int32)  # rows to plan, ids[first + t]; unused when use_ids is 0
    use_ids: int
    count: wp.array(dtype=wp.int32)  # count[0]: how many entries (of ids, or rows) this call plans
    types: wp.array(dtype=wp.int32)  # each row's agent type (read only when the domain declares types)
    has_types: int  # 0: every row is of type 0


@wp.struct
class Search:
    """One wave's options: its pool level and size, ordering and heuristic."""

    level: int  # the pool level of this wave
    last_level: int  # the highest pool level (overflowing it sets level last_level + 1: a final BUDGET)
    entry: int  # 1: the first wave of a call, over every requested row (rows at a higher level only get reset)
    pool: int
    hash_mask: int
    weight: wp.float64
    greedy: int
    heuristic: int
    reopen: int  # 1 for A*: a closed state reached more cheaply is reopened (an inconsistent heuristic: LM-cut)
    max_pops: int  # goap.planners.base.pop_limit(pool): pops past it end the search BUDGET


@wp.struct
class Scratch:
    node_state: wp.array2d(dtype=wp.uint64)
    node_g: wp.array2d(dtype=wp.float64)
    node_h: wp.array2d(dtype=wp.float64)
    node_parent: wp.array2d(dtype=wp.int32)
    node_pos: wp.array2d(dtype=wp.int32)
    heap: wp.array2d(dtype=wp.int32)
    table: wp.array2d(dtype=wp.int32)
    act_cost: wp.array2d(dtype=wp.float64)
    pre_cost: wp.array2d(dtype=wp.float64)
    cond_h: wp.array2d(dtype=wp.float64)
    act_h: wp.array2d(dtype=wp.float64)
    cond_heap: wp.array2d(dtype=wp.int32)
    cond_pos: wp.array2d(dtype=wp.int32)
    act_left: wp.array2d(dtype=wp.int32)
    act_rc: wp.array2d(dtype=wp.float64)
    act_pcf: wp.array2d(dtype=wp.int32)
    act_pcf0: wp.array2d(dtype=wp.int32)
    act_round: wp.array2d(dtype=wp.int32)
    act_mark: wp.array2d(dtype=wp.int32)
    cond_mark: wp.array2d(dtype=wp.int32)
    reached: wp.array2d(dtype=wp.uint64)
    cond_list: wp.array2d(dtype=wp.int32)
    cond_child: wp.array2d(dtype=wp.int32)
    act_next: wp.array2d(dtype=wp.int32)
    act_prev: wp.array2d(dtype=wp.int32)
    bucket: wp.array2d(dtype=wp.int32)
    cond_prev: wp.array2d(dtype=wp.int32)


@wp.struct
class Carry:
    """Searches that outgrew level ``level``'s pool, kept so that the next level continues them (see the module
    docstring): slot k holds one search's nodes, open list and where it stopped. ``slot_of[row]`` is the slot of a
    row's kept search (-1: none), shared by every level; ``taken[level * lanes + lane]`` counts the slots a lane
    handed out this call."""

    state: wp.array2d(dtype=wp.uint64)  # [slots * pool, W]
    g: wp.array2d(dtype=wp.float64)  # [slots, pool]
    h: wp.array2d(dtype=wp.float64)
    parent: wp.array2d(dtype=wp.int32)
    pos: wp.array2d(dtype=wp.int32)
    heap: wp.array2d(dtype=wp.int32)
    head: wp.array2d(dtype=wp.int32)  # [slots, CARRY_HEAD]: count, heap size, expanded, pops, node being expanded,
    # action, the pruning's counts (applicable actions, kept ones: goap.planners.stubborn), expansions before the top f,
    # the zone probe's states and score (lmcut_zone_ties="auto")
    top: wp.array(dtype=wp.float64)  # [slots]: the largest f popped (Results.expanded_before_last_f)
    slot_of: wp.array(dtype=wp.int32)
    taken: wp.array(dtype=wp.int32)  # [levels * lanes]
    level: int
    slots: int  # 0: this level keeps nothing
    lanes: int  # CPU workers launch at once, and Warp's CPU atomics are not atomic across threads: lane l (the
    lane_slots: int  # launch's ``lane`` argument) counts in its own taken entry and owns slots l * lane_slots ...
    pool: int


@wp.struct
class Results:
    status: wp.array(dtype=wp.int8)
    cost: wp.array(dtype=wp.float64)
    length: wp.array(dtype=wp.int32)
    actions: wp.array2d(dtype=wp.int32)
    expanded: wp.array(dtype=wp.int32)
    level: wp.array(dtype=wp.int8)
    expanded_before_last_f: wp.array(dtype=wp.int32)  # empty where the batch does not keep it


@wp.func
def is_inf(x: wp.float64) -> bool:
    """x is +inf (a disabled action, an unreachable condition): costs and sums stay far below 1e300. Inline, where
    ``wp.isinf`` is a call into the runtime in CPU kernels."""
    return x > wp.float64(1.0e300)


@wp.func
def before(
    node_g: wp.array2d(dtype=wp.float64), node_h: wp.array2d(dtype=wp.float64), t: int, a: int, b: int,
    weight: wp.float64, greedy: int,
) -> bool:
    """Open-list order: lower f (g + weight h, or h alone when greedy), then lower h (deeper), then the older node.

    The heap functions take the arrays they touch rather than the Scratch struct: a Warp function takes its
    arguments by value, and copying a struct of a dozen arrays at every comparison costs more than the search.
    """
    ha = node_h[t, a]
    hb = node_h[t, b]
    fa = ha
    fb = hb
    if greedy == 0:
        fa = node_g[t, a] + weight * ha
        fb = node_g[t, b] + weight * hb
    if fa != fb:
        return fa < fb
    if ha != hb:
        return ha < hb
    return a < b


@wp.func
def sift_up(
    node_g: wp.array2d(dtype=wp.float64), node_h: wp.array2d(dtype=wp.float64), heap: wp.array2d(dtype=wp.int32),
    node_pos: wp.array2d(dtype=wp.int32), t: int, i0: int, weight: wp.float64, greedy: int,
):
    i = i0
    node = heap[t, i]
    for _level in range(32):
        if i == 0:
            break
        p = (i - 1) // 2
        q = heap[t, p]
        if not before(node_g, node_h, t, node, q, weight, greedy):
            break
        heap[t, i] = q
        node_pos[t, q] = i
        i = p
    heap[t, i] = node
    node_pos[t, node] = i


@wp.func
def pop_first(
    node_g: wp.array2d(dtype=wp.float64), node_h: wp.array2d(dtype=wp.float64), heap: wp.array2d(dtype=wp.int32),
    node_pos: wp.array2d(dtype=wp.int32), t: int, size: int, weight: wp.float64, greedy: int,
) -> int:
    """Remove the first node of a heap of ``size`` > 0 entries and return it (its position becomes -1)."""
    top = heap[t, 0]
    node_pos[t, top] = -1
    last = size - 1
    if last == 0:
        return top
    node = heap[t, last]
    i = int(0)
    for _level in range(32):
        c = 2 * i + 1
        if c >= last:
            break
        if c + 1 < last:
            if before(node_g, node_h, t, heap[t, c + 1], heap[t, c], weight, greedy):
                c = c + 1
        q = heap[t, c]
        if not before(node_g, node_h, t, q, node, weight, greedy):
            break
        heap[t, i] = q
        node_pos[t, q] = i
        i = c
    heap[t, i] = node
    node_pos[t, node] = i
    return top


@wp.func
def value_bit(v: int) -> wp.uint64:
    return wp.uint64(1) << wp.uint64(v)


@wp.func
def step_values(x: wp.uint64, step: int, n: int) -> wp.uint64:
    """The reached-value set x (bit v = value v) after adding ``step`` to every value, clamped to 0..n-1."""
    full = wp.uint64(0xFFFFFFFFFFFFFFFF)
    if n < 64:
        full = value_bit(n) - wp.uint64(1)
    out = x
    if step > 0:
        if step >= n:
            out = out | value_bit(n - 1)
        else:
            out = out | ((x << wp.uint64(step)) & full)
            if (x >> wp.uint64(n - step)) != wp.uint64(0):
                out = out | value_bit(n - 1)
    else:
        down = -step
        if down >= n:
            out = out | wp.uint64(1)
        else:
            out = out | (x >> wp.uint64(down))
            if (x & (value_bit(down) - wp.uint64(1))) != wp.uint64(0):
                out = out | wp.uint64(1)
    return out


@wp.func
def relaxed_reachable(
    sc: Scratch, t: int, base: int, row: int, q: Query, dt: DomainTables, gt: GoalTables, g: int
) -> bool:
    """`ReferencePlanner.relaxed_reachable` for the state in node row ``base``: can the goal hold without deletes?

    Each tracked fact's reached values are one 64-bit set; a condition can hold when the set meets the
    condition's precomputed set of satisfying values. Facts with more values are not tracked (all reached).
    """
    rx = dt.relaxed
    lay = dt.layout
    n_facts = rx.n_values.shape[0]
    for f in range(n_facts):
        if rx.n_values[f] > 0:
            v0 = field_value(sc.node_state[base, lay.word[f]], lay.shift[f], lay.mask[f])
            sc.reached[t, f] = value_bit(int(v0))
    for _pass in range(rx.total_values + 1):
        grew = int(0)
        for a in range(dt.n_actions):
            if is_inf(sc.act_cost[t, a]):  # disabled for this agent, or not its type's
                continue
            ok = int(1)
            for p in range(rx.pre_start[a], rx.pre_start[a + 1]):
                f = rx.pre_fact[p]
                if ok != 0 and rx.n_values[f] > 0:
                    if (sc.reached[t, f] & rx.pre_sat[p]) == wp.uint64(0):
                        ok = 0
            if ok == 0:
                continue
            for p in range(rx.eff_start[a], rx.eff_start[a + 1]):
                f = rx.eff_fact[p]
                n = rx.n_values[f]
                if n > 0:
                    x = sc.reached[t, f]
                    y = x
                    op = rx.eff_op[p]
                    if op == 0:
                        y = x | value_bit(int(rx.eff_value[p]))
                    elif op == 1:
                        y = step_values(x, int(rx.eff_value[p]), n)
                    else:
                        y = step_values(x, -int(rx.eff_value[p]), n)
                    if y != x:
                        sc.reached[t, f] = y
                        grew = 1
        if grew == 0:
            break
    for j in range(gt.atoms.start[g], gt.atoms.start[g + 1]):
        f = gt.atom_fact[j]
        if rx.n_values[f] > 0:
            if (sc.reached[t, f] & gt.atom_sat[j]) == wp.uint64(0):
                return False
    return True


@wp.func
def cond_first(cond_h: wp.array2d(dtype=wp.float64), t: int, a: int, b: int) -> bool:
    """Order of h_max's condition queue: lower value, then lower id (the values do not depend on it)."""
    ha = cond_h[t, a]
    hb = cond_h[t, b]
    if ha != hb:
        return ha < hb
    return a < b


@wp.func
def cond_sift_up(
    heap: wp.array2d(dtype=wp.int32), pos: wp.array2d(dtype=wp.int32), cond_h: wp.array2d(dtype=wp.float64),
    t: int, i0: int,
):
    i = i0
    c = heap[t, i]
    for _level in range(32):
        if i == 0:
            break
        p = (i - 1) // 2
        q = heap[t, p]
        if not cond_first(cond_h, t, c, q):
            break
        heap[t, i] = q
        pos[t, q] = i
        i = p
    heap[t, i] = c
    pos[t, c] = i


@wp.func
def cond_pop(
    heap: wp.array2d(dtype=wp.int32), pos: wp.array2d(dtype=wp.int32), cond_h: wp.array2d(dtype=wp.float64),
    t: int, size: int,
) -> int:
    """Remove the first condition of a queue of ``size`` > 0 and return it (its position becomes -1)."""
    top = heap[t, 0]
    pos[t, top] = -1
    last = size - 1
    if last == 0:
        return top
    c = heap[t, last]
    i = int(0)
    for _level in range(32):
        k = 2 * i + 1
        if k >= last:
            break
        if k + 1 < last:
            if cond_first(cond_h, t, heap[t, k + 1], heap[t, k]):
                k = k + 1
        q = heap[t, k]
        if not cond_first(cond_h, t, q, c):
            break
        heap[t, i] = q
        pos[t, q] = i
        i = k
    heap[t, i] = c
    pos[t, c] = i
    return top


@wp.func
def relax_effects(
    heap: wp.array2d(dtype=wp.int32), pos: wp.array2d(dtype=wp.int32), cond_h: wp.array2d(dtype=wp.float64),
    effect_start: wp.array(dtype=wp.int32), effect_cond: wp.array(dtype=wp.int32), t: int, a: int, v: wp.float64,
    size: int,
) -> int:
    """Offer value v to every cone condition action a achieves; returns the queue's new size. (The queue
    functions take the arrays they touch: Warp passes a struct by value, a copy at every call.)"""
    p = int(effect_start[a])
    p_end = int(effect_start[a + 1])
    while p < p_end:
        e = effect_cond[p]
        at = pos[t, e]
        if at != OUTSIDE and v < cond_h[t, e]:
            cond_h[t, e] = v
            if at < 0:  # (a condition already popped has its final value, never above v)
                heap[t, size] = e
                size += 1
                cond_sift_up(heap, pos, cond_h, t, size - 1)
            else:
                cond_sift_up(heap, pos, cond_h, t, at)
        p += 1
    return size


@wp.func
def cone_reset(sc: Scratch, t: int, ct: ConditionTables):
    """Mark every condition and action outside the goal's cone (the cone's own are set by `hmax_dijkstra`)."""
    c = int(0)
    c_end = int(ct.n_conditions)
    while c < c_end:
        sc.cond_pos[t, c] = OUTSIDE
        c += 1
    a = int(0)
    a_end = int(ct.n_actions)
    while a < a_end:
        sc.act_left[t, a] = OUTSIDE
        a += 1


@wp.func
def pcf_link(
    child: wp.array2d(dtype=wp.int32), nxt: wp.array2d(dtype=wp.int32), prv: wp.array2d(dtype=wp.int32), t: int,
    a: int, c: int,
):
    """Put action a first on condition c's list of the actions whose pcf c is (LM-cut's explorations walk it)."""
    h = child[t, c]
    nxt[t, a] = h
    prv[t, a] = -1
    if h >= 0:
        prv[t, h] = a
    child[t, c] = a


@wp.func
def pcf_unlink(
    child: wp.array2d(dtype=wp.int32), nxt: wp.array2d(dtype=wp.int32), prv: wp.array2d(dtype=wp.int32), t: int,
    a: int, c: int,
):
    """Take action a off condition c's pcf list."""
    n = nxt[t, a]
    p = prv[t, a]
    if p >= 0:
        nxt[t, p] = n
    else:
        child[t, c] = n
    if n >= 0:
        prv[t, n] = p


@wp.func
def bucket_push(
    bucket: wp.array2d(dtype=wp.int32), nxt: wp.array2d(dtype=wp.int32), prv: wp.array2d(dtype=wp.int32),
    pos: wp.array2d(dtype=wp.int32), t: int, c: int, b: int,
):
    """Put condition c first in bucket b of h_max's bucket queue (pos: its bucket while queued)."""
    h = bucket[t, b]
    nxt[t, c] = h
    prv[t, c] = -1
    if h >= 0:
        prv[t, h] = c
    bucket[t, b] = c
    pos[t, c] = b


@wp.func
def bucket_remove(
    bucket: wp.array2d(dtype=wp.int32), nxt: wp.array2d(dtype=wp.int32), prv: wp.array2d(dtype=wp.int32),
    pos: wp.array2d(dtype=wp.int32), t: int, c: int,
):
    """Take queued condition c out of its bucket (its pos becomes -1)."""
    n = nxt[t, c]
    p = prv[t, c]
    if p >= 0:
        nxt[t, p] = n
    else:
        bucket[t, pos[t, c]] = n
    if n >= 0:
        prv[t, n] = p
    pos[t, c] = -1


@wp.func
def relax_buckets(
    bucket: wp.array2d(dtype=wp.int32), nxt: wp.array2d(dtype=wp.int32), prv: wp.array2d(dtype=wp.int32),
    pos: wp.array2d(dtype=wp.int32), cond_h: wp.array2d(dtype=wp.float64), effect_start: wp.array(dtype=wp.int32),
    effect_cond: wp.array(dtype=wp.int32), t: int, a: int, v: wp.float64, size: int, nb: int,
) -> int:
    """`relax_effects` over the bucket queue of ``nb`` buckets: value v (an integer) goes to bucket v mod nb."""
    p = int(effect_start[a])
    p_end = int(effect_start[a + 1])
    while p < p_end:
        e = effect_cond[p]
        at = pos[t, e]
        if at != OUTSIDE and v < cond_h[t, e]:
            cond_h[t, e] = v
            if at >= 0:
                bucket_remove(bucket, nxt, prv, pos, t, e)
            else:  # (a condition already popped has its final value, never above v)
                size += 1
            bucket_push(bucket, nxt, prv, pos, t, e, int(v) % nb)
        p += 1
    return size


@wp.func
def hmax_dijkstra(sc: Scratch, t: int, r: int, ct: ConditionTables, rel: Relevance, g: int, lm: int) -> int:
    """h_max in node row r of the preconditions goal g can depend on (cond_h), and per action of its cone the max
    over its own (act_h; inf while one is unreachable), by a generalized Dijkstra: conditions leave a queue in
    order of their final value; an action whose last precondition leaves it fires and offers cost + that value to
    what it achieves. The same fixpoint as rounds of Bellman-Ford (same float64 sums), in one pass over the cone.
    With ``lm`` (1: ties to the highest id, 2: the stable rule), costs are LM-cut's remaining costs and each firing
    action records its pcf (`lmcut`). Call `cone_reset` first (once per state). With ``lm``, also clears LM-cut's
    marks of the cone and lists the cone's conditions true in r in cond_list; returns how many. Bounded: each cone
    condition enters and leaves the queue once.

    The queue: when every usable cone action costs an integer below BUCKETS (unit-cost PDDL tasks, integral game
    costs), Dial's buckets, one per value modulo the largest cost + 1 (every queued value lies within that cost of
    the last one popped), as lists through cond_heap (next) and cond_prev; otherwise the binary heap of
    (value, id). The values and pcfs do not depend on the order in which equal values leave the queue. With
    ``lm``, bucket[t, BUCKETS] says whether `hmax_lower` may use buckets too: the largest finite value when the
    costs were integral and it lies below BUCKETS (no value ever rises), else -1."""
    inf = wp.float64(wp.inf)
    zero = wp.float64(0.0)
    c0 = rel.cond_start[g]
    c1 = rel.cond_start[g + 1]
    integral = int(1)
    top_cost = zero
    i = int(rel.action_start[g])
    i_end = int(rel.action_start[g + 1])
    while i < i_end:
        a = rel.action[i]
        sc.act_h[t, a] = inf
        if lm != 0:
            sc.act_mark[t, a] = 0
            sc.act_round[t, a] = -1
        cost = sc.act_cost[t, a]  # the agent's (inf where disabled), or LM-cut's remaining cost
        if lm != 0:
            cost = sc.act_rc[t, a]
        if not is_inf(cost):
            sc.act_left[t, a] = ct.action_start[a + 1] - ct.action_start[a]
            if cost > top_cost:
                top_cost = cost
            if cost != wp.floor(cost):
                integral = 0
        i += 1
    nb = int(0)  # buckets in use (0: the heap)
    if integral != 0 and top_cost < BUCKETS_F:
        nb = int(top_cost) + 1
        b = int(0)
        while b < nb:
            sc.bucket[t, b] = -1
            b += 1
    size = int(0)
    i = int(c0)
    i_end = int(c1)
    while i < i_end:  # ascending ids, the true ones (value 0) in order: already a valid heap
        c = rel.cond[i]
        sc.cond_pos[t, c] = -1
        v = field_value(sc.node_state[r, ct.word[c]], ct.shift[c], ct.mask[c])
        if lm != 0:
            sc.cond_mark[t, c] = 0
            sc.cond_child[t, c] = -1
        if condition_holds(v, ct.op[c], ct.k[c]):
            sc.cond_h[t, c] = zero
            if nb > 0:
                bucket_push(sc.bucket, sc.cond_heap, sc.cond_prev, sc.cond_pos, t, c, 0)
            else:
                sc.cond_heap[t, size] = c
                sc.cond_pos[t, c] = size
            if lm != 0:
                sc.cond_list[t, size] = c
            size += 1
        else:
            sc.cond_h[t, c] = inf
        i += 1
    n_true = size
    i = int(rel.free_start[g])
    i_end = int(rel.free_start[g + 1])
    while i < i_end:  # the usable actions without preconditions fire at once
        a = rel.free[i]
        if sc.act_left[t, a] == 0:
            sc.act_h[t, a] = zero
            cost = sc.act_cost[t, a]
            if lm != 0:
                sc.act_pcf[t, a] = -1
                cost = sc.act_rc[t, a]
            if nb > 0:
                size = relax_buckets(sc.bucket, sc.cond_heap, sc.cond_prev, sc.cond_pos, sc.cond_h, ct.effect_start,
                                     ct.effect_cond, t, a, cost + zero, size, nb)
            else:
                size = relax_effects(sc.cond_heap, sc.cond_pos, sc.cond_h, ct.effect_start, ct.effect_cond, t, a,
                                     cost + zero, size)
        i += 1
    cur = int(0)  # the bucket of the last value popped
    last = zero  # the last value popped: the largest finite one
    pop_i = int(0)
    n_pops = int(c1 - c0)
    while pop_i < n_pops:
        if size == 0:
            break
        c = int(-1)
        if nb > 0:
            scan = int(0)
            while scan < nb:
                if sc.bucket[t, cur] >= 0:
                    break
                cur = (cur + 1) % nb
                scan += 1
            c = sc.bucket[t, cur]
            bucket_remove(sc.bucket, sc.cond_heap, sc.cond_prev, sc.cond_pos, t, c)
        else:
            c = cond_pop(sc.cond_heap, sc.cond_pos, sc.cond_h, t, size)
        size -= 1
        hc = sc.cond_h[t, c]
        last = hc
        p = int(ct.pre_of_start[c])
        p_end = int(ct.pre_of_start[c + 1])
        while p < p_end:
            a = ct.pre_of_action[p]
            left = sc.act_left[t, a]
            if left > 0:
                sc.act_left[t, a] = left - 1
                if left == 1:  # c was its last precondition: hc is the max over them
                    sc.act_h[t, a] = hc
                    if lm != 0:  # the pcf: a precondition at the max, the highest id or (stable) the first
                        best = int(-1)
                        k = int(ct.action_start[a])
                        k_end = int(ct.action_start[a + 1])
                        while k < k_end:
                            d = ct.action_cond[k]
                            if sc.cond_h[t, d] == hc:
                                if lm == 2:
                                    best = d
                                    break
                                if d > best:
                                    best = d
                            k += 1
                        sc.act_pcf[t, a] = best
                        pcf_link(sc.cond_child, sc.act_next, sc.act_prev, t, a, best)
                    cost = sc.act_cost[t, a]
                    if lm != 0:
                        cost = sc.act_rc[t, a]
                    if nb > 0:
                        size = relax_buckets(sc.bucket, sc.cond_heap, sc.cond_prev, sc.cond_pos, sc.cond_h,
                                             ct.effect_start, ct.effect_cond, t, a, cost + hc, size, nb)
                    else:
                        size = relax_effects(sc.cond_heap, sc.cond_pos, sc.cond_h, ct.effect_start, ct.effect_cond, t,
                                             a, cost + hc, size)
            p += 1
        pop_i += 1
    if lm != 0:  # (see hmax_lower: its buckets are one per value, all BUCKETS of them, the first nb empty now)
        sc.bucket[t, BUCKETS] = -1
        if nb > 0 and last < BUCKETS_F:
            sc.bucket[t, BUCKETS] = int(last)
            b = int(nb)
            while b < BUCKETS:
                sc.bucket[t, b] = -1
                b += 1
    return n_true


@wp.func
def hmax_lower(
    sc: Scratch, t: int, ct: ConditionTables, rel: Relevance, g: int, size: int, nb: int, lo: int, round_i: int,
    stable: int,
):
    """Bring h_max up to date after LM-cut lowered the remaining costs of some actions, whose new offers the queue
    already holds (``size`` entries). Values only fall: a popped condition that is an action's pcf makes the action
    take its new max and pcf, and offer what it achieves when that max fell (Fast Downward's incremental
    exploration). The result is the from-scratch fixpoint, float for float (each value is the least of the same
    offers), and the same pcfs (only an action whose pcf fell can change its pcf; with ``stable`` its pcf of
    round ``round_i`` is saved in act_pcf0 the first time it changes, and kept whenever it is a maximum again, so
    the last choice sees the final values: the reference's "stable" rule). Each cone condition leaves the
    queue at most once (later offers are never below the value popped); the actions whose pcf it is are walked on
    its list (`pcf_link`), each once. The queue: with ``nb`` = BUCKETS, one bucket per value (every value an
    integer below BUCKETS, see `hmax_dijkstra`), none queued below ``lo``; with ``nb`` 0, the binary heap."""
    n_acts = rel.action_start[g + 1] - rel.action_start[g]
    cur = lo
    pop_i = int(0)
    n_pops = int(rel.cond_start[g + 1] - rel.cond_start[g])
    while pop_i < n_pops:
        if size == 0:
            break
        c = int(-1)
        if nb > 0:
            while cur < nb:
                if sc.bucket[t, cur] >= 0:
                    break
                cur += 1
            if cur >= nb:  # (never: size counts what the buckets hold)
                break
            c = sc.bucket[t, cur]
            bucket_remove(sc.bucket, sc.cond_heap, sc.cond_prev, sc.cond_pos, t, c)
        else:
            c = cond_pop(sc.cond_heap, sc.cond_pos, sc.cond_h, t, size)
        size -= 1
        hc = sc.cond_h[t, c]
        a = sc.cond_child[t, c]
        walk_i = int(0)
        k_bound = int(n_acts)
        while walk_i < k_bound:
            if a < 0:
                break
            after = sc.act_next[t, a]  # (a may move to another list)
            old = sc.act_h[t, a]
            if old > hc:
                if stable != 0 and sc.act_round[t, a] != round_i:  # its first new pcf this round: c was its last
                    sc.act_round[t, a] = round_i
                    sc.act_pcf0[t, a] = c
                top = wp.float64(-1.0)
                best = int(-1)
                k = int(ct.action_start[a])
                k_end = int(ct.action_start[a + 1])
                while k < k_end:
                    d = ct.action_cond[k]
                    v = sc.cond_h[t, d]
                    if v > top or (stable == 0 and v == top and d > best):
                        top = v
                        best = d
                    k += 1
                if stable != 0:  # the last round's pcf while it is a max again
                    if sc.cond_h[t, sc.act_pcf0[t, a]] == top:
                        best = sc.act_pcf0[t, a]
                sc.act_h[t, a] = top
                if best != c:
                    pcf_unlink(sc.cond_child, sc.act_next, sc.act_prev, t, a, c)
                    pcf_link(sc.cond_child, sc.act_next, sc.act_prev, t, a, best)
                    sc.act_pcf[t, a] = best
                if top < old:
                    if nb > 0:
                        size = relax_buckets(sc.bucket, sc.cond_heap, sc.cond_prev, sc.cond_pos, sc.cond_h,
                                             ct.effect_start, ct.effect_cond, t, a, sc.act_rc[t, a] + top, size, nb)
                    else:
                        size = relax_effects(sc.cond_heap, sc.cond_pos, sc.cond_h, ct.effect_start, ct.effect_cond,
                                             t, a, sc.act_rc[t, a] + top, size)
            a = after
            walk_i += 1
        pop_i += 1


@wp.func
def lm_trigger(
    act_mark: wp.array2d(dtype=wp.int32), cond_mark: wp.array2d(dtype=wp.int32), stack: wp.array2d(dtype=wp.int32),
    effect_start: wp.array(dtype=wp.int32), effect_cond: wp.array(dtype=wp.int32), t: int, a: int, size: int,
) -> int:
    """LM-cut's forward exploration reaches action a through its pcf: into the cut when it achieves a goal-zone
    condition (act_mark 1 -> 2), else what it achieves in the cone joins the before-zone set (pushed on the stack;
    a condition outside the cone is marked MARK_OUTSIDE, so one test skips it and what is already marked)."""
    if act_mark[t, a] != 0:
        if act_mark[t, a] == 1:
            act_mark[t, a] = 2
        return size
    p = effect_start[a]
    end = effect_start[a + 1]
    while p < end:
        e = effect_cond[p]
        if cond_mark[t, e] == 0:
            cond_mark[t, e] = 2
            stack[t, size] = e
            size += 1
        p += 1
    return size


@wp.func
def lm_zone_achiever(
    act_mark: wp.array2d(dtype=wp.int32), act_left: wp.array2d(dtype=wp.int32), act_rc: wp.array2d(dtype=wp.float64),
    act_pcf: wp.array2d(dtype=wp.int32), cond_mark: wp.array2d(dtype=wp.int32), stack: wp.array2d(dtype=wp.int32),
    t: int, b: int, size: int,
) -> int:
    """Action b achieves a goal-zone condition: mark it, and when it is reached at zero remaining cost its pcf
    joins the zone (pushed on the stack)."""
    act_mark[t, b] = 1
    if act_left[t, b] == 0:
        if act_rc[t, b] == wp.float64(0.0):
            p = act_pcf[t, b]
            if p >= 0:
                if cond_mark[t, p] == 0:
                    cond_mark[t, p] = 1
                    stack[t, size] = p
                    size += 1
    return size


@wp.func
def zero_cost_achiever(sc: Scratch, start: wp.array(dtype=wp.int32), action: wp.array(dtype=wp.int32), t: int,
                       i: int) -> bool:
    """Whether an action of achiever list i (``start``/``action``) is in the goal's cone, usable, and at zero
    remaining cost (LM-cut's zone rule: a condition without one lies on the goal zone's border)."""
    p = int(start[i])
    p_end = int(start[i + 1])
    while p < p_end:
        x = action[p]
        if sc.act_left[t, x] != OUTSIDE:
            if sc.act_rc[t, x] == wp.float64(0.0):
                return True
        p += 1
    return False


@wp.func
def lm_zone_pcf(sc: Scratch, ct: ConditionTables, t: int, b: int):
    """LM-cut's zone rule (`goap.planners.base.DEFAULT_LMCUT_ZONE_TIES`) for b, a reached zero-cost achiever of a
    goal-zone condition: its pcf becomes the first of its maximal preconditions, in its precondition order, that is
    in the zone (cond_mark 1) or has no zero-cost achiever, moved onto that condition's pcf list; unchanged when
    none is."""
    p = sc.act_pcf[t, b]
    if p < 0:
        return
    top = sc.act_h[t, b]
    k = int(ct.action_start[b])
    k_end = int(ct.action_start[b + 1])
    while k < k_end:
        q = ct.action_cond[k]
        if sc.cond_h[t, q] == top:
            pick = sc.cond_mark[t, q] == 1
            if not pick:
                pick = not zero_cost_achiever(sc, ct.achiever_start, ct.achiever_action, t, q)
            if pick:
                if q != p:
                    pcf_unlink(sc.cond_child, sc.act_next, sc.act_prev, t, b, p)
                    pcf_link(sc.cond_child, sc.act_next, sc.act_prev, t, b, q)
                    sc.act_pcf[t, b] = q
                return
        k += 1


@wp.func
def lm_zone_visit(sc: Scratch, ct: ConditionTables, t: int, b: int, size: int, zone: int) -> int:
    """`lm_zone_achiever`, after the zone rule when it is on (``zone``)."""
    if zone != 0:
        if sc.act_left[t, b] == 0:
            if sc.act_rc[t, b] == wp.float64(0.0):
                lm_zone_pcf(sc, ct, t, b)
    return lm_zone_achiever(sc.act_mark, sc.act_left, sc.act_rc, sc.act_pcf, sc.cond_mark, sc.cond_list, t, b, size)


@wp.func
def lm_charge(
    act_mark: wp.array2d(dtype=wp.int32), act_rc: wp.array2d(dtype=wp.float64), act_h: wp.array2d(dtype=wp.float64),
    heap: wp.array2d(dtype=wp.int32), pos: wp.array2d(dtype=wp.int32), cond_h: wp.array2d(dtype=wp.float64),
    bucket: wp.array2d(dtype=wp.int32), prv: wp.array2d(dtype=wp.int32), effect_start: wp.array(dtype=wp.int32),
    effect_cond: wp.array(dtype=wp.int32), t: int, b: int, m: wp.float64, size: int, nb: int,
) -> int:
    """Zone achiever b after a round: in the cut (act_mark 2), its remaining cost falls by m and it offers its new
    value to what it achieves (queued for `hmax_lower`, on buckets when ``nb`` > 0); its mark is cleared either
    way."""
    if act_mark[t, b] == 2:
        act_rc[t, b] = act_rc[t, b] - m
        v = act_rc[t, b] + act_h[t, b]
        if nb > 0:
            size = relax_buckets(bucket, heap, prv, pos, cond_h, effect_start, effect_cond, t, b, v, size, nb)
        else:
            size = relax_effects(heap, pos, cond_h, effect_start, effect_cond, t, b, v, size)
    act_mark[t, b] = 0
    return size


@wp.func
def lm_forward(
    act_mark: wp.array2d(dtype=wp.int32), cond_mark: wp.array2d(dtype=wp.int32), child: wp.array2d(dtype=wp.int32),
    nxt: wp.array2d(dtype=wp.int32), effect_start: wp.array(dtype=wp.int32), effect_cond: wp.array(dtype=wp.int32),
    stack: wp.array2d(dtype=wp.int32), t: int, c: int, size: int, bound: int,
) -> int:
    """LM-cut's forward exploration from before-zone condition c: every reached action whose pcf is c (its list,
    at most ``bound`` long) triggers."""
    a = child[t, c]
    walk_i = int(0)
    k_bound = int(bound)
    while walk_i < k_bound:
        if a < 0:
            break
        size = lm_trigger(act_mark, cond_mark, stack, effect_start, effect_cond, t, a, size)
        a = nxt[t, a]
        walk_i += 1
    return size


@wp.func
def lmcut(
    sc: Scratch, t: int, r: int, gt: GoalTables, g: int, ct: ConditionTables, rel: Relevance, stable: int, zone: int,
) -> wp.float64:
    """LM-cut of node row r for goal g (`goap.planners.reference`, node for node): rounds of h_max with remaining
    costs (from scratch once, then lowered where the cut's costs fell: `hmax_lower`), each cutting the
    justification graph between the state and the goal zone and charging the cut's cheapest remaining cost.

    As Fast Downward's, a round touches only what it explores: cond_list holds the cone's conditions true in r
    (from `hmax_dijkstra`, once per state), then the round's goal zone, then the rest of its before-zone set, each
    condition once; the cut is read from the zone's achievers (act_mark 2), and the marks are cleared through the
    same lists, never by a pass over the cone. Bounded: at most cone actions + 1 rounds (each zeroes a cut action),
    each visiting a condition at most once per exploration."""
    inf = wp.float64(wp.inf)
    zero = wp.float64(0.0)
    at = gt.atoms
    c0 = rel.cond_start[g]
    c1 = rel.cond_start[g + 1]
    a0 = rel.action_start[g]
    a1 = rel.action_start[g + 1]
    cone_reset(sc, t, ct)
    c = int(0)
    c_end = int(ct.n_conditions)
    while c < c_end:  # (hmax_dijkstra clears the cone's)
        sc.cond_mark[t, c] = MARK_OUTSIDE
        c += 1
    i = int(a0)
    i_end = int(a1)
    while i < i_end:
        a = rel.action[i]
        sc.act_rc[t, a] = sc.act_cost[t, a]
        i += 1
    total = zero
    n_true = hmax_dijkstra(sc, t, r, ct, rel, g, 1 + stable)
    nb = int(0)  # hmax_lower's queue: one bucket per value (BUCKETS of them) or the heap (0)
    if sc.bucket[t, BUCKETS] >= 0:
        nb = BUCKETS
    round_i = int(0)
    n_rounds = int(a1 - a0 + 2)
    while round_i < n_rounds:
        # The goal action's pcf: the unmet goal condition of largest h_max, ties to the highest condition id. An
        # atom equal to a cone condition has that condition's h_max (the least of its achievers' rc + act_h, the
        # same sums); one at 0 (true in r, or reached at no cost) can only matter when all are, and then the round
        # ends anyway: skipped without reading the state.
        top = wp.float64(-1.0)
        goal_pcf = int(-1)
        key = int(-1)
        border = int(0)  # the zone rule: whether goal_pcf has no zero-cost achiever (then the first such wins)
        j = int(at.start[g])
        j_end = int(at.start[g + 1])
        while j < j_end:
            kj = rel.atom_cond[j]
            hj = zero
            if kj >= 0 and sc.cond_pos[t, kj] != OUTSIDE:
                hj = sc.cond_h[t, kj]
            else:
                v = field_value(sc.node_state[r, at.word[j]], at.shift[j], at.mask[j])
                if not condition_holds(v, at.op[j], at.k[j]):
                    hj = inf
                    p = int(gt.achievers[j])
                    p_end = int(gt.achievers[j + 1])
                    while p < p_end:
                        b = gt.achiever_action[p]
                        cb = sc.act_rc[t, b]
                        if not is_inf(cb):
                            hj = wp.min(hj, cb + sc.act_h[t, b])
                        p += 1
            if hj > zero:
                on_border = int(0)
                if zone != 0 and (goal_pcf < 0 or hj > top or (hj == top and border == 0)):
                    if kj >= 0:
                        if not zero_cost_achiever(sc, ct.achiever_start, ct.achiever_action, t, kj):
                            on_border = 1
                    elif not zero_cost_achiever(sc, gt.achievers, gt.achiever_action, t, j):
                        on_border = 1
                if kj < 0:
                    kj = ct.n_conditions + (j - at.start[g])
                if goal_pcf < 0 or hj > top or (hj == top and border == 0 and (on_border != 0 or kj > key)):
                    top = hj
                    goal_pcf = j
                    key = kj
                    border = on_border
            j += 1
        if is_inf(top):
            return inf
        if goal_pcf < 0:  # h_max of the goal is 0
            break
        # The goal zone (cond_mark 1; its achievers act_mark 1), listed after the true conditions. Every zone
        # condition has h_max >= top > 0, so none is true in r: the lists never hold a condition twice.
        n = n_true
        gc = rel.atom_cond[goal_pcf]
        if gc >= 0:
            sc.cond_mark[t, gc] = 1
            sc.cond_list[t, n] = gc
            n += 1
        else:
            p = int(gt.achievers[goal_pcf])
            p_end = int(gt.achievers[goal_pcf + 1])
            while p < p_end:
                n = lm_zone_visit(sc, ct, t, gt.achiever_action[p], n, zone)
                p += 1
        # gc may lie outside the cone (an atom equal to the precondition of an action the goal never needs): one
        # more condition than the cone holds.
        head = n_true
        walk_i = int(0)
        k_bound = int(c1 - c0 + 1)
        while walk_i < k_bound:
            if head == n:
                break
            c = sc.cond_list[t, head]
            head += 1
            p = int(ct.achiever_start[c])
            p_end = int(ct.achiever_start[c + 1])
            while p < p_end:
                n = lm_zone_visit(sc, ct, t, ct.achiever_action[p], n, zone)
                p += 1
            walk_i += 1
        z1 = n
        # Before the zone (cond_mark 2): from the conditions true in r and the always-true precondition.
        k = int(0)
        k_end = int(n_true)
        while k < k_end:
            sc.cond_mark[t, sc.cond_list[t, k]] = 2
            k += 1
        i = int(rel.free_start[g])
        i_end = int(rel.free_start[g + 1])
        while i < i_end:
            a = rel.free[i]
            if sc.act_left[t, a] == 0:
                n = lm_trigger(sc.act_mark, sc.cond_mark, sc.cond_list, ct.effect_start, ct.effect_cond,
                               t, a, n)
            i += 1
        k = int(0)
        k_end = int(n_true)
        while k < k_end:
            n = lm_forward(sc.act_mark, sc.cond_mark, sc.cond_child, sc.act_next, ct.effect_start,
                           ct.effect_cond, sc.cond_list, t, sc.cond_list[t, k], n, a1 - a0)
            k += 1
        head = z1
        walk_i = int(0)
        k_bound = int(c1 - c0)
        while walk_i < k_bound:
            if head == n:
                break
            c = sc.cond_list[t, head]
            head += 1
            n = lm_forward(sc.act_mark, sc.cond_mark, sc.cond_child, sc.act_next, ct.effect_start,
                           ct.effect_cond, sc.cond_list, t, c, n, a1 - a0)
            walk_i += 1
        # The cut: the zone's achievers the exploration reached (act_mark 2); low: the least rc + act_h among them.
        m = inf
        low = inf
        k = int(n_true)
        k_end = int(z1)
        while k < k_end:
            c = sc.cond_list[t, k]
            p = int(ct.achiever_start[c])
            p_end = int(ct.achiever_start[c + 1])
            while p < p_end:
                b = ct.achiever_action[p]
                if sc.act_mark[t, b] == 2:
                    m = wp.min(m, sc.act_rc[t, b])
                    low = wp.min(low, sc.act_rc[t, b] + sc.act_h[t, b])
                p += 1
            k += 1
        if gc < 0:
            p = int(gt.achievers[goal_pcf])
            p_end = int(gt.achievers[goal_pcf + 1])
            while p < p_end:
                b = gt.achiever_action[p]
                if sc.act_mark[t, b] == 2:
                    m = wp.min(m, sc.act_rc[t, b])
                    low = wp.min(low, sc.act_rc[t, b] + sc.act_h[t, b])
                p += 1
        if is_inf(m):
            break
        total = total + m
        lo = int(0)  # no offer of the charge below low - m: where hmax_lower's buckets start
        if nb > 0:
            lo = wp.max(int(low - m), 0)
        # Charge the cut (each cut action once: its mark is cleared as it is charged) and clear the round's marks.
        size = int(0)
        k = int(n_true)
        k_end = int(z1)
        while k < k_end:
            c = sc.cond_list[t, k]
            p = int(ct.achiever_start[c])
            p_end = int(ct.achiever_start[c + 1])
            while p < p_end:
                size = lm_charge(sc.act_mark, sc.act_rc, sc.act_h, sc.cond_heap, sc.cond_pos, sc.cond_h, sc.bucket,
                                 sc.cond_prev, ct.effect_start, ct.effect_cond, t, ct.achiever_action[p], m, size, nb)
                p += 1
            k += 1
        if gc < 0:
            p = int(gt.achievers[goal_pcf])
            p_end = int(gt.achievers[goal_pcf + 1])
            while p < p_end:
                size = lm_charge(sc.act_mark, sc.act_rc, sc.act_h, sc.cond_heap, sc.cond_pos, sc.cond_h, sc.bucket,
                                 sc.cond_prev, ct.effect_start, ct.effect_cond, t, gt.achiever_action[p], m, size, nb)
                p += 1
        k = int(0)
        k_end = int(n)
        while k < k_end:
            sc.cond_mark[t, sc.cond_list[t, k]] = 0
            k += 1
        if gc >= 0 and sc.cond_pos[t, gc] == OUTSIDE:
            sc.cond_mark[t, gc] = MARK_OUTSIDE
        hmax_lower(sc, t, ct, rel, g, size, nb, lo, round_i, stable)
        round_i += 1
    return total


@wp.func
def unmet_goal_term(
    node_state: wp.array2d(dtype=wp.uint64), r: int, act_cost: wp.array2d(dtype=wp.float64),
    act_h: wp.array2d(dtype=wp.float64), pre_cost: wp.array2d(dtype=wp.float64), t: int, at: CondList,
    achievers: wp.array(dtype=wp.int32), achiever_action: wp.array(dtype=wp.int32),
    max_achieved: wp.array(dtype=wp.int32), pre_start: wp.array(dtype=wp.int32), pre_fact: wp.array(dtype=wp.int32),
    pre_op: wp.array(dtype=wp.int32), pre_k: wp.array(dtype=wp.uint64), lay_word: wp.array(dtype=wp.int32),
    lay_shift: wp.array(dtype=wp.int32), lay_mask: wp.array(dtype=wp.uint64),
    default_pre_cost: wp.array(dtype=wp.float64), g: int, c_min: wp.float64, kind: int, per_agent: int,
) -> wp.float64:
    """h of node row r for ``hmax`` (after `hmax_dijkstra` filled act_h), ``hmax_depth2`` and ``hmax_depth1``: the
    max over unmet goal conditions of the cheapest way through an achiever, maxed with the step-count bound.

    It takes the arrays it reads, not the table structs: Warp passes arguments by value, and the CPU backend
    copies every struct argument at each call (the Scratch and four table structs were about 8 KB a node).
    """
    inf = wp.float64(wp.inf)
    unsat = int(0)
    term = wp.float64(0.0)
    for j in range(at.start[g], at.start[g + 1]):
        v = field_value(node_state[r, at.word[j]], at.shift[j], at.mask[j])
        if not condition_holds(v, at.op[j], at.k[j]):
            unsat += 1
            best = inf
            for p in range(achievers[j], achievers[j + 1]):
                a = achiever_action[p]
                c = act_cost[t, a]
                if not is_inf(c):
                    through = c
                    if kind == HEUR_HMAX:
                        through = c + act_h[t, a]
                    elif kind == HEUR_HMAX_DEPTH2:
                        pending = wp.float64(0.0)
                        for q in range(pre_start[a], pre_start[a + 1]):
                            f = pre_fact[q]
                            pv = field_value(node_state[r, lay_word[f]], lay_shift[f], lay_mask[f])
                            if not condition_holds(pv, pre_op[q], pre_k[q]):
                                if per_agent != 0:
                                    pending = wp.max(pending, pre_cost[t, q])
                                else:
                                    pending = wp.max(pending, default_pre_cost[q])
                        through = c + pending
                    best = wp.min(best, through)
            term = wp.max(term, best)
    if unsat == 0:
        return wp.float64(0.0)
    if is_inf(term):
        return inf
    e = max_achieved[g]
    return wp.max(term, wp.float64((unsat + e - 1) // e) * c_min)


@wp.func
def pdb_heuristic(
    node_state: wp.array2d(dtype=wp.uint64), r: int, at: CondList, max_achieved: wp.array(dtype=wp.int32),
    lay_word: wp.array(dtype=wp.int32), lay_shift: wp.array(dtype=wp.int32), lay_mask: wp.array(dtype=wp.uint64),
    goal_start: wp.array(dtype=wp.int32), pattern_rows: wp.array2d(dtype=wp.int32),
    fact_rows: wp.array2d(dtype=wp.int32), dist: wp.array(dtype=wp.float64), g: int, factor: wp.float64,
    c_min: wp.float64, summed: int,
) -> wp.float64:
    """h of node row r for ``pdb``: the scaled pattern-database value (`goap.kernels.pdb.pdb_value`), maxed with
    the step-count bound; 0 when the goal holds, inf at a dead end. With ``summed`` (``scp``) the tables' value is
    `goap.kernels.pdb.scp_value` (sums over orders)."""
    unsat = int(0)
    for j in range(at.start[g], at.start[g + 1]):
        v = field_value(node_state[r, at.word[j]], at.shift[j], at.mask[j])
        if not condition_holds(v, at.op[j], at.k[j]):
            unsat += 1
    if unsat == 0:
        return wp.float64(0.0)
    term = wp.float64(0.0)
    if summed != 0:
        term = scp_value(node_state, r, lay_word, lay_shift, lay_mask, goal_start, pattern_rows, fact_rows, dist, g,
                         factor)
    else:
        term = pdb_value(node_state, r, lay_word, lay_shift, lay_mask, goal_start, pattern_rows, fact_rows, dist, g,
                         factor)
    if is_inf(term):
        return wp.float64(wp.inf)
    e = max_achieved[g]
    return wp.max(term, wp.float64((unsat + e - 1) // e) * c_min)


@wp.func
def exact_cost(
    node_state: wp.array2d(dtype=wp.uint64), r: int, dt: DomainTables, q: Query, row: int, ty: int, a: int
) -> wp.float64:
    """Action a's cost in node row r for query row ``row`` of type ``ty``: `goap.domain.Domain.action_cost` with
    the row's base cost and its type's scale. Called only for actions with cost terms (a domain without any never
    pays for it)."""
    base = dt.cost[a]
    if q.has_costs != 0:
        base = wp.float64(q.costs[row, a])
    lay = dt.layout
    c = term_cost(node_state, r, dt.term_start, dt.term_fact, dt.term_per, lay.word, lay.shift, lay.mask, lay.min, a,
                  base)
    if dt.typed != 0:
        c = dt.type_scale[ty, a] * c
    return c


@wp.func
def heuristic(
    sc: Scratch, t: int, r: int, dt: DomainTables, gt: GoalTables, g: int, ct: ConditionTables, rel: Relevance,
    c_min: wp.float64, kind: int, per_agent: int, zone_code: int, ties_code: int,
) -> wp.float64:
    """The admissible heuristic of node row r (see `goap.planners.reference`); ``zone_code`` LM-cut's goal-zone
    setting (`goap.planners.base.lmcut_zone_code`: 0 off, 1 on, 2 the larger of both) and ``ties_code`` its tie
    rule (`goap.planners.base.lmcut_ties_code`: 0 highest, 1 stable, 2 the larger of both); the A* kernel resolves
    "auto" to one of them."""
    rx = dt.relaxed
    lay = dt.layout
    at = gt.atoms
    inf = wp.float64(wp.inf)
    unsat = int(0)
    for j in range(at.start[g], at.start[g + 1]):
        v = field_value(sc.node_state[r, at.word[j]], at.shift[j], at.mask[j])
        if not condition_holds(v, at.op[j], at.k[j]):
            unsat += 1
    if unsat == 0:
        return wp.float64(0.0)
    if kind == HEUR_LMCUT:
        # "max" (ties_code 2, zone_code 2): the larger of the rules' values (a dead end for one is one for all)
        zone = wp.min(zone_code, 1)
        lm = lmcut(sc, t, r, gt, g, ct, rel, wp.min(ties_code, 1), zone)
        if is_inf(lm):
            return inf
        if ties_code == 2:
            lm = wp.max(lm, lmcut(sc, t, r, gt, g, ct, rel, 0, zone))
        if zone_code == 2:
            lm = wp.max(lm, lmcut(sc, t, r, gt, g, ct, rel, wp.min(ties_code, 1), 0))
            if ties_code == 2:
                lm = wp.max(lm, lmcut(sc, t, r, gt, g, ct, rel, 0, 0))
        e = gt.max_achieved[g]
        return wp.max(lm, wp.float64((unsat + e - 1) // e) * c_min)
    if kind == HEUR_HMAX:
        cone_reset(sc, t, ct)
        _n_true = hmax_dijkstra(sc, t, r, ct, rel, g, 0)
    return unmet_goal_term(
        sc.node_state, r, sc.act_cost, sc.act_h, sc.pre_cost, t, at, gt.achievers, gt.achiever_action,
        gt.max_achieved, rx.pre_start, rx.pre_fact, rx.pre_op, rx.pre_k, lay.word, lay.shift, lay.mask,
        ct.default_pre_cost, g, c_min, kind, per_agent)


@wp.func
def lm_auto(ct: ConditionTables) -> int:
    """1 where LM-cut's zone or tie rule is "auto": the search probes its first LM_PROBE stored states."""
    if ct.lm_zone == ZONE_AUTO or ct.lm_stable == TIES_AUTO:
        return 1
    return 0


@wp.func
def zone_setting(lm_zone: int, score: int) -> int:
    """The zone code a search uses after its probe: ``lm_zone`` itself, or under "auto" (3) the rule (1) unless it
    lost more of the probed states than it won (0)."""
    if lm_zone != ZONE_AUTO:
        return lm_zone
    if score >= 0:
        return 1
    return 0


@wp.func
def ties_setting(lm_stable: int, score: int) -> int:
    """The tie code a search uses after its probe: ``lm_stable`` itself, or under "auto" (3) "highest" (0) unless
    it lost more of the probed states than "stable" (1)."""
    if lm_stable != TIES_AUTO:
        return lm_stable
    if score >= 0:
        return 0
    return 1


@wp.func
def vote(a: wp.float64, b: wp.float64) -> wp.float64:
    """+1 where a is the larger, -1 where it is the smaller, 0 on a tie."""
    if a > b:
        return wp.float64(1.0)
    if a < b:
        return wp.float64(-1.0)
    return wp.float64(0.0)


@wp.func
def lm_probe(
    sc: Scratch, t: int, r: int, dt: DomainTables, gt: GoalTables, g: int, ct: ConditionTables, rel: Relevance,
    c_min: wp.float64, per_agent: int,
) -> wp.vec3d:
    """LM-cut of node row r while a search probes (`lm_auto`): the largest value over the settings that are "auto"
    (each with the other option as set), the zone rule's vote (+1 it gave the larger value, -1 the smaller, 0 a tie
    or not "auto") and "highest"'s vote against "stable". inf and no votes at a dead end."""
    z_auto = ct.lm_zone == ZONE_AUTO
    t_auto = ct.lm_stable == TIES_AUTO
    z1 = ct.lm_zone
    if z_auto:
        z1 = 1
    t1 = ct.lm_stable
    if t_auto:
        t1 = 0
    zero = wp.float64(0.0)
    v11 = heuristic(sc, t, r, dt, gt, g, ct, rel, c_min, HEUR_LMCUT, per_agent, z1, t1)
    if is_inf(v11):
        return wp.vec3d(v11, zero, zero)
    v01 = v11  # the zone rule off, the first tie rule (v11 itself unless the zone is "auto")
    if z_auto:
        v01 = heuristic(sc, t, r, dt, gt, g, ct, rel, c_min, HEUR_LMCUT, per_agent, 0, t1)
    v12 = v11  # the zone as z1, "stable" (v11 unless the ties are "auto")
    v02 = v01
    if t_auto:
        v12 = heuristic(sc, t, r, dt, gt, g, ct, rel, c_min, HEUR_LMCUT, per_agent, z1, 1)
        v02 = v12
        if z_auto:
            v02 = heuristic(sc, t, r, dt, gt, g, ct, rel, c_min, HEUR_LMCUT, per_agent, 0, 1)
    z_vote = zero
    t_vote = zero
    if z_auto:
        z_vote = vote(wp.max(v11, v12), wp.max(v01, v02))
    if t_auto:
        t_vote = vote(wp.max(v11, v01), wp.max(v12, v02))
    return wp.vec3d(wp.max(wp.max(v11, v01), wp.max(v12, v02)), z_vote, t_vote)


@wp.func
def max_lmcut_pdb(
    sc: Scratch, t: int, r: int, dt: DomainTables, gt: GoalTables, g: int, ct: ConditionTables, rel: Relevance,
    c_min: wp.float64, per_agent: int, pt: PatternLookup, factor: wp.float64, summed: int,
) -> wp.float64:
    """``max_lmcut_pdb`` (``max_lmcut_scp`` with ``summed``) of node row r: the tables first (a lookup), LM-cut
    only where they do not prove a dead end; the larger of the two."""
    lay = dt.layout
    hp = pdb_heuristic(sc.node_state, r, gt.atoms, gt.max_achieved, lay.word, lay.shift, lay.mask, pt.goal_start,
                       pt.pattern_rows, pt.fact_rows, pt.dist, g, factor, c_min, summed)
    if is_inf(hp):
        return hp
    return wp.max(hp, heuristic(sc, t, r, dt, gt, g, ct, rel, c_min, HEUR_LMCUT, per_agent, ct.lm_zone,
                                ct.lm_stable))


@functools.cache
def astar_kernel(n_words: int, terms: bool = False, typed: bool = False, pruning: bool = False) -> wp.Kernel:
    """The A* kernel specialised for states of ``n_words`` words, with or without cost terms (``terms``), agent
    types (``typed``) and stubborn-set pruning (``pruning``, `goap.kernels.stubborn`); one module per combination,
    built once. Without them the term loops, type lookups and pruning are not compiled at all (``wp.static``): a
    domain that has none runs the kernel it ran before they existed."""
    W = wp.constant(n_words)
    TERMS = bool(terms)
    TYPED = bool(typed)
    PRUNE = bool(pruning)

    @wp.func
    def state_hash(node_state: wp.array2d(dtype=wp.uint64), r: int) -> wp.uint64:
        x = wp.uint64(0x9E3779B97F4A7C15)
        for w in range(W):
            x = x ^ node_state[r, w]
            x = (x ^ (x >> wp.uint64(30))) * wp.uint64(0xBF58476D1CE4E5B9)
            x = (x ^ (x >> wp.uint64(27))) * wp.uint64(0x94D049BB133111EB)
            x = x ^ (x >> wp.uint64(31))
        return x

    @wp.func
    def same_state(node_state: wp.array2d(dtype=wp.uint64), a: int, b: int) -> bool:
        for w in range(W):
            if node_state[a, w] != node_state[b, w]:
                return False
        return True

    @wp.func
    def find_slot(
        node_state: wp.array2d(dtype=wp.uint64), table: wp.array2d(dtype=wp.int32), t: int, base: int, r: int,
        hash_mask: int,
    ) -> int:
        """Slot of the stored state equal to row ``r``, or of the empty slot where it would go."""
        pos = int(state_hash(node_state, r) & wp.uint64(hash_mask))
        for _probe in range(hash_mask + 1):
            idx = table[t, pos]
            if idx < 0:
                return pos
            if same_state(node_state, base + idx, r):
                return pos
            pos = (pos + 1) & hash_mask
        return -1  # unreachable: the table is never more than half full

    @wp.kernel(enable_backward=False, module="unique")
    def plan_astar(
        q: Query, first: int, per_thread: int, scratch_first: int, row_step: int, dt: DomainTables, gt: GoalTables,
        ct: ConditionTables, rel: Relevance, s: Search, sc: Scratch, out: Results, pending: wp.array(dtype=wp.int32),
        keep: Carry, resume: Carry, lane: int, pt: PatternLookup, pr: Pruning,
    ):
        tid = wp.tid()
        # Queries first + tid * per_thread + k, k < per_thread: on the CPU one thread takes a whole span of queries
        # (per_thread = the span, one thread per launch), so the kernel's arguments (a few dozen KB of table
        # structs, copied for every thread by the CPU backend) are copied once a span, not once a query; on a GPU
        # per_thread is 1, one query per thread.
        for k_query in range(per_thread):
            i = first + tid * per_thread + k_query
            if i >= q.count[0]:
                break
            row = i
            if q.use_ids != 0:
                row = q.ids[i]
            # This thread's scratch row: its own on a GPU (row_step 1); on the CPU, where a launch runs its threads
            # one after another, every search of the launch reuses one row (row_step 0), which stays in cache.
            t = scratch_first + tid * row_step
            M = s.pool
            base = t * (M + 1)
            spare = base + M  # where successors are built
            if s.level > 0 and k_query == 0 and (row_step != 0 or tid == 0):
                # Escalated levels share one arena of scratch (see WarpAStarPlanner._level_scratch), so a row's
                # hash table may hold another level's data: emptied by the first search of the row in this launch
                # (later ones find it empty, as every search leaves it).
                for k in range(s.hash_mask + 1):
                    sc.table[t, k] = -1
            L = out.actions.shape[1]
            if s.entry != 0 or s.level > 0:
                for k in range(L):
                    out.actions[row, k] = -1
                out.length[row] = 0
                out.expanded[row] = 0
                if out.expanded_before_last_f.shape[0] > 0:
                    out.expanded_before_last_f[row] = 0
                out.cost[row] = wp.float64(wp.nan)
            if s.entry != 0:
                if keep.slots > 0:
                    keep.slot_of[row] = -1  # nothing kept from an earlier call: a row deferred then starts over
                lv = wp.clamp(int(out.level[row]), 0, s.last_level + 1)
                if lv > s.level:
                    out.level[row] = wp.int8(lv)
                    out.status[row] = wp.int8(ST_BUDGET)
                    if lv <= s.last_level:
                        wp.atomic_add(pending, 0, 1)  # searched by a later wave of this call (or a later call)
                    continue  # (past the last level: every pool was tried; final)
            out.level[row] = wp.int8(s.level)
            g = q.goals[row]

            for w in range(W):
                sc.node_state[base, w] = q.states[row, w]
            if goal_satisfied(sc.node_state, base, gt.mask, gt.value, gt.ints, g):
                out.status[row] = wp.int8(ST_SATISFIED)
                out.cost[row] = wp.float64(0.0)
                continue

            # Per-agent heuristic tables: action costs (the least over every state: Domain.action_min_cost; inf where
            # disabled or not the agent's type's), the cheapest usable action, and for every precondition of every
            # action its cheapest usable achiever.
            inf = wp.float64(wp.inf)
            c_min = inf
            factor = inf  # pdb: min over actions of positive least domain cost of the agent's least cost over it
            ty = int(0)
            if wp.static(TYPED):
                if q.has_types != 0:
                    ty = q.types[row]
            for a in range(dt.n_actions):
                c = dt.cost[a]
                if q.has_costs != 0:
                    c = wp.float64(q.costs[row, a])
                if wp.static(TERMS):  # base + each term at its cheaper end, in declaration order, clamped at 0
                    for k in range(dt.term_start[a], dt.term_start[a + 1]):
                        c = c + dt.term_min[k]
                    c = wp.max(wp.float64(0.0), c)
                if wp.static(TYPED):
                    if ty < 0 or ty >= dt.type_allowed.shape[0]:
                        c = inf  # a type out of range (device inputs are not scanned): nothing usable, never a bad read
                    elif dt.type_allowed[ty, a]:
                        c = dt.type_scale[ty, a] * c
                    else:
                        c = inf
                if q.has_enabled != 0:
                    if not q.enabled[row, a]:
                        c = inf
                sc.act_cost[t, a] = c
                c_min = wp.min(c_min, c)
                if s.heuristic >= HEUR_PDB:  # pdb, scp and their max with LM-cut
                    if dt.min_cost[a] > wp.float64(0.0):
                        factor = wp.min(factor, c / dt.min_cost[a])
            rx = dt.relaxed
            if s.heuristic == HEUR_HMAX_DEPTH2 and q.has_costs + q.has_enabled + wp.static(int(TYPED)) > 0:
                for p in range(rx.n_pre):
                    best = inf
                    for k in range(rx.pre_ach_start[p], rx.pre_ach_start[p + 1]):
                        best = wp.min(best, sc.act_cost[t, rx.pre_ach_action[k]])
                    sc.pre_cost[t, p] = best

            per_agent = q.has_costs + q.has_enabled + wp.static(int(TYPED))
            # No per-node tables for the truncated h_max: see unmet_goal_term.
            cheap = s.heuristic == HEUR_HMAX_DEPTH2 or s.heuristic == HEUR_HMAX_DEPTH1
            lay = dt.layout
            cont = int(-1)  # the slot where the previous level kept this row's search, if it did
            if s.level > 0 and resume.slots > 0:
                cont = resume.slot_of[row]
                resume.slot_of[row] = -1
                if cont >= resume.slots:
                    cont = -1
            summed = int(0)  # scp: the tables' value sums over orders
            if s.heuristic == HEUR_SCP or s.heuristic == HEUR_MAX_LMCUT_SCP:
                summed = 1
            h0 = wp.float64(0.0)
            z_vote = int(0)  # "auto": the votes of the state just evaluated (lm_probe), counted once it is stored
            t_vote = int(0)
            if s.heuristic == HEUR_PDB or s.heuristic == HEUR_SCP:
                h0 = pdb_heuristic(sc.node_state, base, gt.atoms, gt.max_achieved, lay.word, lay.shift, lay.mask,
                                   pt.goal_start, pt.pattern_rows, pt.fact_rows, pt.dist, g, factor, c_min, summed)
            elif s.heuristic == HEUR_MAX_LMCUT_PDB or s.heuristic == HEUR_MAX_LMCUT_SCP:
                if cont < 0:
                    h0 = max_lmcut_pdb(sc, t, base, dt, gt, g, ct, rel, c_min, per_agent, pt, factor, summed)
            elif cheap:
                h0 = unmet_goal_term(
                    sc.node_state, base, sc.act_cost, sc.act_h, sc.pre_cost, t, gt.atoms, gt.achievers,
                    gt.achiever_action, gt.max_achieved, rx.pre_start, rx.pre_fact, rx.pre_op, rx.pre_k, lay.word,
                    lay.shift, lay.mask, ct.default_pre_cost, g, c_min, s.heuristic, per_agent)
            elif cont < 0:
                if lm_auto(ct) == 1 and s.heuristic == HEUR_LMCUT:  # the first state probed
                    probe = lm_probe(sc, t, base, dt, gt, g, ct, rel, c_min, per_agent)
                    h0 = probe[0]
                    z_vote = int(probe[1])
                    t_vote = int(probe[2])
                else:
                    h0 = heuristic(sc, t, base, dt, gt, g, ct, rel, c_min, s.heuristic, per_agent, ct.lm_zone,
                                   ct.lm_stable)
            heap_size = int(1)
            count = int(1)
            expanded = int(0)
            pops = int(0)
            part_node = int(-1)  # a node whose expansion stopped at action part_action when the pool filled up
            part_action = int(0)
            prune_before = int(0)  # pruning: applicable actions and kept ones over the first check_after expansions
            prune_after = int(0)
            f_top = wp.float64(-wp.inf)  # the largest f = g + h popped, and the expansions made before its first pop
            jump = int(0)
            # "auto" (lm_auto): the states stored while probing, the zone rule's wins less its losses, "highest"'s
            # wins less its losses against "stable"
            z_probed = int(0)
            z_score = int(0)
            t_score = int(0)
            if cont >= 0:
                # The search this row began in the previous level's pool, continued where it stopped: its nodes,
                # open list and counters as they were, the hash table rebuilt. Up to here it is the search a fresh
                # start in this pool would have made (a pool's size changes nothing until it is full).
                count = resume.head[cont, 0]
                heap_size = resume.head[cont, 1]
                expanded = resume.head[cont, 2]
                pops = resume.head[cont, 3]
                part_node = resume.head[cont, 4]
                part_action = resume.head[cont, 5]
                prune_before = resume.head[cont, 6]
                prune_after = resume.head[cont, 7]
                jump = resume.head[cont, 8]
                z_probed = resume.head[cont, 9]
                z_score = resume.head[cont, 10]
                t_score = resume.head[cont, 11]
                f_top = resume.top[cont]
                for n in range(count):
                    for w in range(W):
                        sc.node_state[base + n, w] = resume.state[cont * resume.pool + n, w]
                    sc.node_g[t, n] = resume.g[cont, n]
                    sc.node_h[t, n] = resume.h[cont, n]
                    sc.node_parent[t, n] = resume.parent[cont, n]
                    sc.node_pos[t, n] = resume.pos[cont, n]
                    sc.table[t, find_slot(sc.node_state, sc.table, t, base, base + n, s.hash_mask)] = n
                for k in range(heap_size):
                    sc.heap[t, k] = resume.heap[cont, k]
            else:
                if is_inf(h0):
                    out.status[row] = wp.int8(ST_NO_PLAN)
                    continue
                if s.level > 0:  # an escalated search: prove the goal relaxed-unreachable before a large search
                    if not relaxed_reachable(sc, t, base, row, q, dt, gt, g):
                        out.status[row] = wp.int8(ST_NO_PLAN)
                        continue
                sc.node_g[t, 0] = wp.float64(0.0)
                sc.node_h[t, 0] = h0
                if lm_auto(ct) == 1:
                    z_probed = 1
                    z_score = z_vote
                    t_score = t_vote
                sc.node_parent[t, 0] = -1
                sc.table[t, find_slot(sc.node_state, sc.table, t, base, base, s.hash_mask)] = 0
                sc.heap[t, 0] = 0
                sc.node_pos[t, 0] = 0
            status = int(ST_NO_PLAN)
            goal_node = int(-1)
            proved = int(0)  # 1: the goal proved relaxed-unreachable during the search

            # At most max_pops pops in all (those of the previous pool included), plus the step that finishes a
            # node's expansion cut short by the previous pool.
            steps = s.max_pops - pops
            if part_node >= 0:
                steps += 1
            for _pop in range(steps):
                node = int(-1)
                first_action = int(0)
                fresh = int(0)  # 1: a node popped now (0: an expansion cut short by the previous pool, taken up)
                if part_node >= 0:
                    node = part_node
                    first_action = part_action
                    part_node = -1
                else:
                    if heap_size == 0:
                        break
                    node = pop_first(sc.node_g, sc.node_h, sc.heap, sc.node_pos, t, heap_size, s.weight, s.greedy)
                    heap_size -= 1
                    pops += 1
                    if sc.node_g[t, node] + sc.node_h[t, node] > f_top:
                        f_top = sc.node_g[t, node] + sc.node_h[t, node]
                        jump = expanded
                    if goal_satisfied(sc.node_state, base + node, gt.mask, gt.value, gt.ints, g):
                        status = ST_OK
                        goal_node = node
                        break
                    expanded += 1
                    fresh = 1
                    if expanded == RELAXED_AFTER and s.level == 0 and (
                        cheap or s.heuristic == HEUR_PDB or s.heuristic == HEUR_SCP
                    ):
                        # (see goap.planners.base.RELAXED_CHECK_AFTER)
                        if not relaxed_reachable(sc, t, base, row, q, dt, gt, g):
                            proved = 1
                            break
                g_node = sc.node_g[t, node]
                f_node = g_node + sc.node_h[t, node]  # A*: no plan costs less (the node had the least f)
                r_node = base + node
                prune = int(0)
                epoch = int(0)
                if wp.static(PRUNE):  # strong stubborn sets (goap.kernels.stubborn), as the reference's
                    if pr.on != 0:
                        if not pruning_off(prune_before, prune_after, expanded, pr.min_ratio, pr.check_after):
                            prune = 1
                            epoch = stubborn_set(
                                pr, sc.node_state, r_node, t, sc.act_cost, dt.n_actions, ct.n_conditions, ct.word,
                                ct.shift, ct.mask, ct.op, ct.k, ct.action_start, ct.action_cond, ct.achiever_start,
                                ct.achiever_action, ct.pre_of_start, ct.pre_of_action, gt.atoms, gt.achievers,
                                gt.achiever_action, g)
                            if fresh != 0 and expanded <= pr.check_after:
                                counted = applicable_count(
                                    pr, sc.node_state, r_node, t, sc.act_cost, dt.n_actions, ct.word, ct.shift,
                                    ct.mask, ct.op, ct.k, ct.action_start, ct.action_cond, epoch)
                                prune_before += counted[0]
                                prune_after += counted[1]
                for a in range(first_action, dt.n_actions):
                    c = sc.act_cost[t, a]
                    if is_inf(c):
                        continue
                    if wp.static(PRUNE):
                        if prune != 0:
                            if pr.act_mark[t, a] != 2 * epoch + 1:
                                continue
                    # The precondition test and the effects of `goap.kernels.semantics` (action_applicable,
                    # apply_action), written out here: this is the hottest loop, and a call passes its tables by
                    # value (a few hundred bytes of array descriptors copied per action where not inlined).
                    fits = bool(True)
                    for w in range(W):
                        if (sc.node_state[r_node, w] & dt.pre_mask[a, w]) != dt.pre_value[a, w]:
                            fits = False
                            break
                    if not fits:
                        continue
                    for j in range(dt.pre_ints.start[a], dt.pre_ints.start[a + 1]):
                        v = field_value(sc.node_state[r_node, dt.pre_ints.word[j]], dt.pre_ints.shift[j],
                                        dt.pre_ints.mask[j])
                        if not condition_holds(v, dt.pre_ints.op[j], dt.pre_ints.k[j]):
                            fits = False
                            break
                    if not fits:
                        continue
                    for w in range(W):
                        sc.node_state[spare, w] = (sc.node_state[r_node, w] & ~dt.eff_clear[a, w]) | dt.eff_set[a, w]
                    for j in range(dt.eff_steps.start[a], dt.eff_steps.start[a + 1]):
                        sw = dt.eff_steps.word[j]
                        sh = wp.uint64(dt.eff_steps.shift[j])
                        fm = dt.eff_steps.mask[j]
                        word = sc.node_state[spare, sw]
                        sv = wp.int64((word >> sh) & fm) + dt.eff_steps.delta[j]
                        sv = wp.clamp(sv, wp.int64(0), wp.int64(dt.eff_steps.hi[j]))
                        sc.node_state[spare, sw] = (word & ~(fm << sh)) | (wp.uint64(sv) << sh)
                    if dt.when.start[a + 1] > dt.when.start[a]:
                        apply_when(sc.node_state, base + node, sc.node_state, spare, dt.when, a)
                    if wp.static(TERMS):  # the exact cost in the state expanded (act_cost holds the least)
                        if dt.term_start[a] != dt.term_start[a + 1]:
                            c = dt.cost[a]
                            if q.has_costs != 0:
                                c = wp.float64(q.costs[row, a])
                            c = term_cost(sc.node_state, base + node, dt.term_start, dt.term_fact, dt.term_per,
                                          lay.word, lay.shift, lay.mask, lay.min, a, c)
                            if wp.static(TYPED):
                                c = dt.type_scale[ty, a] * c
                    g_child = g_node + c
                    slot = find_slot(sc.node_state, sc.table, t, base, spare, s.hash_mask)
                    known = sc.table[t, slot]
                    if known < 0:
                        h_child = wp.float64(0.0)
                        if s.heuristic == HEUR_PDB or s.heuristic == HEUR_SCP:
                            h_child = pdb_heuristic(
                                sc.node_state, spare, gt.atoms, gt.max_achieved, lay.word, lay.shift, lay.mask,
                                pt.goal_start, pt.pattern_rows, pt.fact_rows, pt.dist, g, factor, c_min, summed)
                        elif s.heuristic == HEUR_MAX_LMCUT_PDB or s.heuristic == HEUR_MAX_LMCUT_SCP:
                            h_child = max_lmcut_pdb(sc, t, spare, dt, gt, g, ct, rel, c_min, per_agent, pt, factor,
                                                    summed)
                        elif cheap:
                            h_child = unmet_goal_term(
                                sc.node_state, spare, sc.act_cost, sc.act_h, sc.pre_cost, t, gt.atoms, gt.achievers,
                                gt.achiever_action, gt.max_achieved, rx.pre_start, rx.pre_fact, rx.pre_op, rx.pre_k,
                                lay.word, lay.shift, lay.mask, ct.default_pre_cost, g, c_min, s.heuristic, per_agent)
                        else:
                            if lm_auto(ct) == 1 and z_probed < LM_PROBE and s.heuristic == HEUR_LMCUT:
                                probe = lm_probe(sc, t, spare, dt, gt, g, ct, rel, c_min, per_agent)
                                h_child = probe[0]
                                z_vote = int(probe[1])
                                t_vote = int(probe[2])
                            else:
                                h_child = heuristic(sc, t, spare, dt, gt, g, ct, rel, c_min, s.heuristic, per_agent,
                                                    zone_setting(ct.lm_zone, z_score),
                                                    ties_setting(ct.lm_stable, t_score))
                        if is_inf(h_child):
                            continue
                        if count >= M:
                            status = ST_BUDGET
                            part_node = node  # the next pool takes this node up again at this action
                            part_action = a
                            break
                        known = count
                        count += 1
                        if lm_auto(ct) == 1 and z_probed < LM_PROBE:
                            z_probed += 1
                            z_score += z_vote
                            t_score += t_vote
                        for w in range(W):
                            sc.node_state[base + known, w] = sc.node_state[spare, w]
                        sc.table[t, slot] = known
                        sc.node_h[t, known] = h_child
                        sc.node_g[t, known] = g_child
                        sc.node_parent[t, known] = node
                        sc.heap[t, heap_size] = known
                        sc.node_pos[t, known] = heap_size
                        heap_size += 1
                        sift_up(sc.node_g, sc.node_h, sc.heap, sc.node_pos, t, heap_size - 1, s.weight, s.greedy)
                    else:
                        pos = sc.node_pos[t, known]
                        if g_child >= sc.node_g[t, known] or (pos < 0 and s.reopen == 0):
                            continue
                        sc.node_g[t, known] = g_child
                        sc.node_parent[t, known] = node
                        if pos < 0:  # closed: reopened (each stored node is in the heap at most once: size <= M)
                            pos = heap_size
                            sc.heap[t, pos] = known
                            heap_size += 1
                        sift_up(sc.node_g, sc.node_h, sc.heap, sc.node_pos, t, pos, s.weight, s.greedy)
                    # A goal reached at the f of the node expanded is optimal (A*: every open node has f >= it, and
                    # f bounds the optimal cost from below): the search ends here, without popping it.
                    if s.reopen != 0 and g_child <= f_node:
                        if goal_satisfied(sc.node_state, base + known, gt.mask, gt.value, gt.ints, g):
                            status = ST_OK
                            goal_node = known
                            break
                if status == ST_BUDGET or status == ST_OK:
                    break
            if status == ST_NO_PLAN and heap_size > 0 and proved == 0:
                status = ST_BUDGET  # the pop limit: only reopening gets here (see goap.planners.base.POP_FACTOR)

            out.expanded[row] = expanded
            if out.expanded_before_last_f.shape[0] > 0:
                out.expanded_before_last_f[row] = 0
                if status == ST_OK:
                    out.expanded_before_last_f[row] = jump
            if status == ST_BUDGET and s.level == 0:  # the first pool filled up: escalate only if it can help
                if not relaxed_reachable(sc, t, base, row, q, dt, gt, g):
                    status = ST_NO_PLAN
            if status == ST_OK:
                length = int(0)
                n = goal_node
                for _step in range(count):
                    if sc.node_parent[t, n] < 0:
                        break
                    length += 1
                    n = sc.node_parent[t, n]
                out.length[row] = length
                out.cost[row] = sc.node_g[t, goal_node]
                if length > L:
                    status = ST_TOO_LONG
                # Read the plan back: the first usable action from the parent to the node at exactly the node's g.
                n = goal_node
                for k in range(length):
                    p = sc.node_parent[t, n]
                    found = int(-1)
                    for a in range(dt.n_actions):
                        c = sc.act_cost[t, a]
                        if found < 0 and not is_inf(c):
                            if wp.static(TERMS):
                                if dt.term_start[a] != dt.term_start[a + 1]:
                                    c = exact_cost(sc.node_state, base + p, dt, q, row, ty, a)
                            if sc.node_g[t, p] + c == sc.node_g[t, n]:
                                if action_applicable(sc.node_state, base + p, dt.pre_mask, dt.pre_value,
                                                 dt.pre_ints, a):
                                    apply_action(sc.node_state, base + p, sc.node_state, spare, dt.eff_clear,
                                                 dt.eff_set, dt.eff_steps, a)
                                    if dt.when.start[a + 1] > dt.when.start[a]:
                                        apply_when(sc.node_state, base + p, sc.node_state, spare, dt.when, a)
                                    if same_state(sc.node_state, spare, base + n):
                                        found = a
                    step = length - 1 - k
                    if step < L:
                        out.actions[row, step] = found
                    n = p
            if status == ST_BUDGET:
                out.level[row] = wp.int8(s.level + 1)  # the next pool, or last_level + 1: every pool was tried
                if s.level < s.last_level:
                    wp.atomic_add(pending, 0, 1)
                    if keep.lane_slots > 0:  # kept for the next pool to continue, while slots last (else restarts)
                        k = wp.atomic_add(keep.taken, keep.level * keep.lanes + lane, 1)
                        if k < keep.lane_slots:
                            k = lane * keep.lane_slots + k
                            keep.head[k, 0] = count
                            keep.head[k, 1] = heap_size
                            keep.head[k, 2] = expanded
                            keep.head[k, 3] = pops
                            keep.head[k, 4] = part_node
                            keep.head[k, 5] = part_action
                            keep.head[k, 6] = prune_before
                            keep.head[k, 7] = prune_after
                            keep.head[k, 8] = jump
                            keep.head[k, 9] = z_probed
                            keep.head[k, 10] = z_score
                            keep.head[k, 11] = t_score
                            keep.top[k] = f_top
                            for n in range(count):
                                for w in range(W):
                                    keep.state[k * keep.pool + n, w] = sc.node_state[base + n, w]
                                keep.g[k, n] = sc.node_g[t, n]
                                keep.h[k, n] = sc.node_h[t, n]
                                keep.parent[k, n] = sc.node_parent[t, n]
                                keep.pos[k, n] = sc.node_pos[t, n]
                            for n in range(heap_size):
                                keep.heap[k, n] = sc.heap[t, n]
                            keep.slot_of[row] = k
            out.status[row] = wp.int8(status)

            # Leave the hash table empty for the next search: clear exactly the slots this search used.
            for n in range(count):
                pos = int(state_hash(sc.node_state, base + n) & wp.uint64(s.hash_mask))
                for _probe in range(s.hash_mask + 1):
                    if sc.table[t, pos] == n:
                        sc.table[t, pos] = -1
                        break
                    pos = (pos + 1) & s.hash_mask

    return plan_astar


@wp.kernel(enable_backward=False)
def select_level(
    q: Query, out: Results, level: int, flags: wp.array(dtype=wp.int32)
):
    """flags[i] = 1 when requested row i waits for a search at ``level`` (BUDGET at that level)."""
    i = wp.tid()
    flags[i] = 0
    if i < q.count[0]:
        row = i
        if q.use_ids != 0:
            row = q.ids[i]
        if int(out.status[row]) == ST_BUDGET and int(out.level[row]) == level:
            flags[i] = 1


@wp.kernel(enable_backward=False)
def compact_level(
    q: Query, flags: wp.array(dtype=wp.int32), offsets: wp.array(dtype=wp.int32), rows: wp.array(dtype=wp.int32)
):
    """rows[offsets[i]] = the row of requested entry i when it is flagged (in request order)."""
    i = wp.tid()
    if flags[i] != 0:
        row = i
        if q.use_ids != 0:
            row = q.ids[i]
        rows[offsets[i]] = row


@wp.kernel(enable_backward=False)
def start_budget(budget: wp.array(dtype=wp.int64), nodes: wp.int64):
    """A call's escalation budget (see `grant_level`): ``nodes`` pool states, no escalated search run yet. A kernel,
    so that a captured call starts from the bound again at every replay."""
    budget[0] = nodes
    budget[1] = wp.int64(0)


@wp.kernel(enable_backward=False)
def grant_level(
    flags: wp.array(dtype=wp.int32), offsets: wp.array(dtype=wp.int32), n: int, pool: int, slots: int,
    bounded: int, budget: wp.array(dtype=wp.int64), granted: wp.array(dtype=wp.int32),
):
    """How many of the waiting rows this wave searches: all that fit its slots, within the call's node budget.

    budget[0] is the escalated pool states left in this call, budget[1] the escalated searches run so far (the
    first always runs, whatever the budget).
    """
    waiting = int(0)
    if n > 0:
        waiting = offsets[n - 1] + flags[n - 1]
    run = wp.min(waiting, slots)
    if bounded != 0:
        allowed = int(0)  # the first search may overdraw the budget: none runs after it then
        if budget[0] > wp.int64(0):
            allowed = int(budget[0] // wp.int64(pool))
        if budget[1] == wp.int64(0):
            allowed = wp.max(allowed, 1)
        run = wp.min(run, allowed)
        budget[0] = budget[0] - wp.int64(run) * wp.int64(pool)
        budget[1] = budget[1] + wp.int64(run)
    granted[0] = run

"""Pattern databases on the device: the tables' struct, their build (backward Bellman-Ford sweeps) and the lookup.

`goap.planners.pdb` selects the patterns and flattens the projected actions (`goap.planners.pdb.PatternTables`,
mirrored field for field by `PatternTables` here). The build: `pdb_init` sets each abstract state's distance (0
where the goal's conditions on the pattern hold, else inf); each `pdb_sweep` has one thread per abstract state
pull ``min over its abstract transitions (a, s') of c_a + d[s']`` and lower its own value, in place (Gauss-Seidel:
a value read may be this sweep's, which only speeds convergence; the fixpoint is unique, see
`goap.planners.pdb`), and sets ``changed`` when it lowered one. A sweep that changes nothing has reached the
fixpoint; at most one sweep per abstract state is ever needed (bounded by the caller). Every loop is bounded by the
tables' sizes, and the conditional effects a state leaves undecided by ``2**WHEN_CAP`` outcomes.

Saturated cost partitioning (`goap.planners.scp`) builds a goal's patterns order by order: per pattern,
`scp_costs` sets its action rows' costs to the order's remaining costs, the sweeps above give its distances,
`scp_saturate` has one thread per abstract state s with a finite distance take, per action row, ``wp.atomic_max``
of ``d[s] - d[s']`` over its transitions to states s' with a finite one (rows start at 0; a max is the same float
in any order), and `scp_subtract` has one thread per row clamp that to the remaining cost and take it off. The
search reads the sum over an order's patterns, the max over orders (`scp_value`).

Digits are read from an abstract index as ``(s // stride) % radix``; a successor's index is built by adding
``(new - old) * stride`` per effect, so no local arrays are needed.
"""

from __future__ import annotations

import warp as wp

from goap.kernels.semantics import condition_holds, field_value


@wp.struct
class PatternTables:
    """`goap.planners.pdb.PatternTables` on the device, plus ``dist``, the distances (names as there)."""

    goal_start: wp.array(dtype=wp.int32)
    fact_start: wp.array(dtype=wp.int32)
    fact: wp.array(dtype=wp.int32)
    radix: wp.array(dtype=wp.int32)
    stride: wp.array(dtype=wp.int32)
    dist_start: wp.array(dtype=wp.int32)
    dist: wp.array(dtype=wp.float64)
    act_start: wp.array(dtype=wp.int32)
    act_cost: wp.array(dtype=wp.float64)
    act_action: wp.array(dtype=wp.int32)
    pre_start: wp.array(dtype=wp.int32)
    pre_pos: wp.array(dtype=wp.int32)
    pre_op: wp.array(dtype=wp.int32)
    pre_k: wp.array(dtype=wp.int32)
    eff_start: wp.array(dtype=wp.int32)
    eff_pos: wp.array(dtype=wp.int32)
    eff_op: wp.array(dtype=wp.int32)
    eff_value: wp.array(dtype=wp.int32)
    when_start: wp.array(dtype=wp.int32)
    wunknown: wp.array(dtype=wp.int32)
    wcond_start: wp.array(dtype=wp.int32)
    wcond_pos: wp.array(dtype=wp.int32)
    wcond_op: wp.array(dtype=wp.int32)
    wcond_k: wp.array(dtype=wp.int32)
    weff_start: wp.array(dtype=wp.int32)
    weff_pos: wp.array(dtype=wp.int32)
    weff_op: wp.array(dtype=wp.int32)
    weff_value: wp.array(dtype=wp.int32)
    gcond_start: wp.array(dtype=wp.int32)
    gcond_pos: wp.array(dtype=wp.int32)
    gcond_op: wp.array(dtype=wp.int32)
    gcond_k: wp.array(dtype=wp.int32)


@wp.struct
class PatternLookup:
    """What a search reads of the pattern databases (`goap.planners.pdb.PatternTables`' names): goal g's patterns
    ``goal_start[g]:goal_start[g + 1]``, per pattern p ``pattern_rows[p] = (fact_start, dist_start, order_first)``,
    per pattern
    fact ``fact_rows[k] = (fact, radix, stride)``, and the distances. Few arrays: the CPU backend copies a kernel's
    struct arguments for every thread, so the search kernel takes this, not the build's struct."""

    goal_start: wp.array(dtype=wp.int32)
    pattern_rows: wp.array2d(dtype=wp.int32)
    fact_rows: wp.array2d(dtype=wp.int32)
    dist: wp.array(dtype=wp.float64)


@wp.func
def digit_holds(s: int, pos: int, k0: int, radix: wp.array(dtype=wp.int32), stride: wp.array(dtype=wp.int32),
                op: int, k: int) -> bool:
    """Whether the digit of pattern position ``pos`` (``k0``: the pattern's first fact row) satisfies ``op k``."""
    v = (s // stride[k0 + pos]) % radix[k0 + pos]
    if k < 0:  # below every value (k clamped to -1..radix): compare in signed ints
        return op == 1 or op == 4 or op == 5
    return condition_holds(wp.uint64(v), op, wp.uint64(k))


@wp.func
def apply_digit(o: int, pos: int, k0: int, radix: wp.array(dtype=wp.int32), stride: wp.array(dtype=wp.int32),
                op: int, value: int) -> int:
    """Abstract index ``o`` after one effect: set the digit (op 0) or add to it, clamped to its range (op 1)."""
    st = stride[k0 + pos]
    cur = (o // st) % radix[k0 + pos]
    new = value
    if op != 0:
        new = wp.clamp(cur + value, 0, radix[k0 + pos] - 1)
    return o + (new - cur) * st


@wp.func
def when_status(pt: PatternTables, w: int, s: int, k0: int) -> int:
    """0: conditional effect w does not apply in abstract state s; 1: it applies; 2: undecided (its conditions on
    the pattern hold and it also reads a fact outside)."""
    for i in range(pt.wcond_start[w], pt.wcond_start[w + 1]):
        if not digit_holds(s, pt.wcond_pos[i], k0, pt.radix, pt.stride, pt.wcond_op[i], pt.wcond_k[i]):
            return 0
    if pt.wunknown[w] != 0:
        return 2
    return 1


@wp.kernel(enable_backward=False)
def pdb_init(pt: PatternTables, p: int):
    """d[s] = 0 where the goal's conditions on pattern p hold in abstract state s, else inf."""
    s = wp.tid()
    k0 = pt.fact_start[p]
    ok = int(1)
    for i in range(pt.gcond_start[p], pt.gcond_start[p + 1]):
        if not digit_holds(s, pt.gcond_pos[i], k0, pt.radix, pt.stride, pt.gcond_op[i], pt.gcond_k[i]):
            ok = 0
    d = wp.float64(wp.inf)
    if ok != 0:
        d = wp.float64(0.0)
    pt.dist[pt.dist_start[p] + s] = d


@wp.kernel(enable_backward=False)
def pdb_sweep(pt: PatternTables, p: int, changed: wp.array(dtype=wp.int32)):
    """One backward sweep over pattern p: each abstract state takes the least c_a + d[s'] over its transitions."""
    s = wp.tid()
    base = pt.dist_start[p]
    k0 = pt.fact_start[p]
    d0 = pt.dist[base + s]
    if d0 == wp.float64(0.0):
        return
    best = d0
    for r in range(pt.act_start[p], pt.act_start[p + 1]):
        ok = int(1)
        for i in range(pt.pre_start[r], pt.pre_start[r + 1]):
            if ok != 0:
                if not digit_holds(s, pt.pre_pos[i], k0, pt.radix, pt.stride, pt.pre_op[i], pt.pre_k[i]):
                    ok = 0
        if ok == 0:
            continue
        o = s
        for i in range(pt.eff_start[r], pt.eff_start[r + 1]):
            o = apply_digit(o, pt.eff_pos[i], k0, pt.radix, pt.stride, pt.eff_op[i], pt.eff_value[i])
        undecided = int(0)
        for w in range(pt.when_start[r], pt.when_start[r + 1]):
            if when_status(pt, w, s, k0) == 2:
                undecided += 1
        c = pt.act_cost[r]
        for combo in range(1 << undecided):  # at most 2**WHEN_CAP (goap.planners.pdb.select_patterns)
            o2 = o
            bit = int(0)
            for w in range(pt.when_start[r], pt.when_start[r + 1]):
                st = when_status(pt, w, s, k0)
                on = st == 1
                if st == 2:
                    on = ((combo >> bit) & 1) != 0
                    bit += 1
                if on:
                    for i in range(pt.weff_start[w], pt.weff_start[w + 1]):
                        o2 = apply_digit(o2, pt.weff_pos[i], k0, pt.radix, pt.stride, pt.weff_op[i], pt.weff_value[i])
            best = wp.min(best, c + pt.dist[base + o2])
    if best < d0:
        pt.dist[base + s] = best
        changed[0] = 1


@wp.kernel(enable_backward=False)
def scp_costs(pt: PatternTables, p: int, remaining: wp.array(dtype=wp.float64)):
    """Pattern p's action row ``act_start[p] + tid`` costs its action's remaining cost."""
    r = pt.act_start[p] + wp.tid()
    pt.act_cost[r] = remaining[pt.act_action[r]]


@wp.kernel(enable_backward=False)
def scp_saturate(pt: PatternTables, p: int, sat: wp.array(dtype=wp.float64)):
    """``sat[r] = max(sat[r], d[s] - d[s'])`` over abstract state s's transitions by each row r of pattern p to a
    state s' (both distances finite; the transitions of `pdb_sweep`)."""
    s = wp.tid()
    base = pt.dist_start[p]
    k0 = pt.fact_start[p]
    d0 = pt.dist[base + s]
    if d0 > wp.float64(1.0e300):
        return
    for r in range(pt.act_start[p], pt.act_start[p + 1]):
        ok = int(1)
        for i in range(pt.pre_start[r], pt.pre_start[r + 1]):
            if ok != 0:
                if not digit_holds(s, pt.pre_pos[i], k0, pt.radix, pt.stride, pt.pre_op[i], pt.pre_k[i]):
                    ok = 0
        if ok == 0:
            continue
        o = s
        for i in range(pt.eff_start[r], pt.eff_start[r + 1]):
            o = apply_digit(o, pt.eff_pos[i], k0, pt.radix, pt.stride, pt.eff_op[i], pt.eff_value[i])
        undecided = int(0)
        for w in range(pt.when_start[r], pt.when_start[r + 1]):
            if when_status(pt, w, s, k0) == 2:
                undecided += 1
        most = wp.float64(0.0)
        for combo in range(1 << undecided):  # at most 2**WHEN_CAP (goap.planners.pdb.select_patterns)
            o2 = o
            bit = int(0)
            for w in range(pt.when_start[r], pt.when_start[r + 1]):
                st = when_status(pt, w, s, k0)
                on = st == 1
                if st == 2:
                    on = ((combo >> bit) & 1) != 0
                    bit += 1
                if on:
                    for i in range(pt.weff_start[w], pt.weff_start[w + 1]):
                        o2 = apply_digit(o2, pt.weff_pos[i], k0, pt.radix, pt.stride, pt.weff_op[i], pt.weff_value[i])
            d1 = pt.dist[base + o2]
            if d1 <= wp.float64(1.0e300):
                most = wp.max(most, d0 - d1)
        if most > wp.float64(0.0):
            wp.atomic_max(sat, r, most)


@wp.kernel(enable_backward=False)
def scp_subtract(pt: PatternTables, p: int, sat: wp.array(dtype=wp.float64), remaining: wp.array(dtype=wp.float64)):
    """Row ``act_start[p] + tid``: its saturated cost clamped to its action's remaining cost, and taken off it (a
    pattern has one row per action)."""
    r = pt.act_start[p] + wp.tid()
    a = pt.act_action[r]
    c = wp.min(sat[r], remaining[a])
    sat[r] = c
    remaining[a] = remaining[a] - c


@wp.func
def scp_value(
    node_state: wp.array2d(dtype=wp.uint64), r: int, lay_word: wp.array(dtype=wp.int32),
    lay_shift: wp.array(dtype=wp.int32), lay_mask: wp.array(dtype=wp.uint64), goal_start: wp.array(dtype=wp.int32),
    pattern_rows: wp.array2d(dtype=wp.int32), fact_rows: wp.array2d(dtype=wp.int32), dist: wp.array(dtype=wp.float64),
    g: int, factor: wp.float64,
) -> wp.float64:
    """``factor * max over orders of sum_p d_p`` of node row r for goal g
    (`goap.planners.scp.ReferencePartitions.value`): 0 where the max is 0, inf where a d_p is inf; a pattern whose
    fact holds a value outside its range counts 0."""
    top = wp.float64(0.0)
    total = wp.float64(0.0)
    for p in range(goal_start[g], goal_start[g + 1]):
        if pattern_rows[p, 2] != 0:
            top = wp.max(top, total)
            total = wp.float64(0.0)
        idx = int(0)
        ok = int(1)
        for k in range(pattern_rows[p, 0], pattern_rows[p + 1, 0]):
            f = fact_rows[k, 0]
            v = field_value(node_state[r, lay_word[f]], lay_shift[f], lay_mask[f])
            if v >= wp.uint64(fact_rows[k, 1]):
                ok = 0
            else:
                idx += int(v) * fact_rows[k, 2]
        if ok != 0:
            total = total + dist[pattern_rows[p, 1] + idx]
    top = wp.max(top, total)
    if top > wp.float64(1.0e300):
        return wp.float64(wp.inf)
    if top == wp.float64(0.0):
        return top
    return top * factor


@wp.func
def pdb_value(
    node_state: wp.array2d(dtype=wp.uint64), r: int, lay_word: wp.array(dtype=wp.int32),
    lay_shift: wp.array(dtype=wp.int32), lay_mask: wp.array(dtype=wp.uint64), goal_start: wp.array(dtype=wp.int32),
    pattern_rows: wp.array2d(dtype=wp.int32), fact_rows: wp.array2d(dtype=wp.int32), dist: wp.array(dtype=wp.float64),
    g: int, factor: wp.float64,
) -> wp.float64:
    """``factor * max_p d_p`` of node row r for goal g (`goap.planners.pdb.ReferencePatterns.value`): 0 where
    the max is 0, inf where it is inf; a pattern whose fact holds a value outside its range counts 0. Takes the
    arrays it reads, not the struct (a struct argument is copied at every call on the CPU)."""
    top = wp.float64(0.0)
    for p in range(goal_start[g], goal_start[g + 1]):
        idx = int(0)
        ok = int(1)
        for k in range(pattern_rows[p, 0], pattern_rows[p + 1, 0]):
            f = fact_rows[k, 0]
            v = field_value(node_state[r, lay_word[f]], lay_shift[f], lay_mask[f])
            if v >= wp.uint64(fact_rows[k, 1]):
                ok = 0
            else:
                idx += int(v) * fact_rows[k, 2]
        if ok != 0:
            top = wp.max(top, dist[pattern_rows[p, 1] + idx])
    if top > wp.float64(1.0e300):
        return wp.float64(wp.inf)
    if top == wp.float64(0.0):
        return top
    return top * factor

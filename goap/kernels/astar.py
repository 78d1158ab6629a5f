"""Batched A*: one search per thread, the agents of a wave in one launch.

The kernel follows `goap.planners.reference.ReferencePlanner.search` step for step (same heuristics, same float64
sums, same (f, h, node) order on the open list, same pool checks), so both planners expand the same nodes and
return the same statuses, costs and plans. The rules (goal test, precondition test, effects) are the ones of
`goap.kernels.semantics`, applied to node rows: thread t's node n is row ``t * (pool + 1) + n`` of ``node_state``.

Per-thread scratch (one row per thread of a wave, so CPU chunks reuse a chunk-sized set), for a pool of M states:

    node_state   uint64 [T (M + 1), W]   row M of each thread is where a successor is built before it is kept
    node_g/h     float64[T, M]
    node_parent  int32  [T, M]
    node_pos     int32  [T, M]           the node's place in the open list, -1 once closed
    heap         int32  [T, M]           binary heap of node ids ordered by (f, h, node); f = g + w h from node_g/h
    table        int32  [T, H]           open addressing, -1 = empty; H = the power of two >= 2M
    act_cost     float64[T, A]           this agent's action costs, inf where disabled
    pre_cost     float64[T, P]           cheapest usable achiever of each action precondition (hmax2)
    cond_h/act_h float64[T, C] / [T, A]  h_max of each distinct precondition, and per action the max over its own
    reached      uint64 [T, F]           the relaxed reachability check's reached values, per fact

No action is stored per node: a plan is read back by finding, for each node on the path, the first usable action
that turns its parent's state into its own at exactly its g (the action the search recorded, as the reference's).
The open list holds each open node once (a decrease-key heap), so it never outgrows the pool. The hash table is
left empty after every search (the stored nodes are looked up and cleared). Every loop is bounded: probing by H,
sifting by 32 levels, the search by M + 1 pops, h_max by C + 1 rounds.
"""

from __future__ import annotations

import functools

import warp as wp

from goap.kernels.semantics import (
    DomainTables,
    GoalTables,
    apply_effects,
    condition_holds,
    field_value,
    goal_reached,
    is_applicable,
)

STATUS_OK = wp.constant(0)
STATUS_SATISFIED = wp.constant(1)
STATUS_NO_PLAN = wp.constant(2)
STATUS_BUDGET = wp.constant(3)
STATUS_TOO_LONG = wp.constant(4)

HEUR_HMAX = wp.constant(0)
HEUR_HMAX2 = wp.constant(1)
HEUR_HMAX1 = wp.constant(2)
HEURISTIC_CODES = {"hmax": 0, "hmax2": 1, "hmax1": 2}


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
    n_conditions: int


@wp.struct
class Relevance:
    """`goap.planners.base.Relevance`: per goal of a goal table, the preconditions (ids of `ConditionTables`)
    its h_max can depend on and the actions whose precondition maxima it reads."""

    cond_start: wp.array(dtype=wp.int32)
    cond: wp.array(dtype=wp.int32)
    action_start: wp.array(dtype=wp.int32)
    action: wp.array(dtype=wp.int32)


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
    reached: wp.array2d(dtype=wp.uint64)


@wp.struct
class Results:
    status: wp.array(dtype=wp.int8)
    cost: wp.array(dtype=wp.float64)
    length: wp.array(dtype=wp.int32)
    actions: wp.array2d(dtype=wp.int32)
    expanded: wp.array(dtype=wp.int32)
    level: wp.array(dtype=wp.int8)


@wp.func
def is_inf(x: wp.float64) -> bool:
    """x is +inf (a disabled action, an unreachable condition): costs and sums stay far below 1e300. Inline, where
    ``wp.isinf`` is a call into the runtime in CPU kernels."""
    return x > wp.float64(1.0e300)


@wp.func
def open_key(sc: Scratch, t: int, n: int, s: Search) -> wp.float64:
    """f = g + weight * h (A* when weight is 1), or h alone for greedy best-first."""
    h = sc.node_h[t, n]
    if s.greedy != 0:
        return h
    return sc.node_g[t, n] + s.weight * h


@wp.func
def before(sc: Scratch, t: int, a: int, b: int, s: Search) -> bool:
    """Open-list order: lower f, then lower h (deeper), then the older node."""
    fa = open_key(sc, t, a, s)
    fb = open_key(sc, t, b, s)
    if fa != fb:
        return fa < fb
    ha = sc.node_h[t, a]
    hb = sc.node_h[t, b]
    if ha != hb:
        return ha < hb
    return a < b


@wp.func
def sift_up(sc: Scratch, t: int, i0: int, s: Search):
    i = i0
    node = sc.heap[t, i]
    for _level in range(32):
        if i == 0:
            break
        p = (i - 1) // 2
        q = sc.heap[t, p]
        if not before(sc, t, node, q, s):
            break
        sc.heap[t, i] = q
        sc.node_pos[t, q] = i
        i = p
    sc.heap[t, i] = node
    sc.node_pos[t, node] = i


@wp.func
def pop_first(sc: Scratch, t: int, size: int, s: Search) -> int:
    """Remove the first node of a heap of ``size`` > 0 entries and return it (its position becomes -1)."""
    top = sc.heap[t, 0]
    sc.node_pos[t, top] = -1
    last = size - 1
    if last == 0:
        return top
    node = sc.heap[t, last]
    i = int(0)
    for _level in range(32):
        c = 2 * i + 1
        if c >= last:
            break
        if c + 1 < last:
            if before(sc, t, sc.heap[t, c + 1], sc.heap[t, c], s):
                c = c + 1
        q = sc.heap[t, c]
        if not before(sc, t, q, node, s):
            break
        sc.heap[t, i] = q
        sc.node_pos[t, q] = i
        i = c
    sc.heap[t, i] = node
    sc.node_pos[t, node] = i
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
            if q.has_enabled != 0:
                if not q.enabled[row, a]:
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
def hmax_fixpoint(sc: Scratch, t: int, r: int, ct: ConditionTables, rel: Relevance, g: int):
    """h_max in node row r of the preconditions goal g can depend on (cond_h), and per action that can matter the
    max over its own (act_h). The fixpoint is unique, so restricting it to the goal's backward cone (the
    conditions its achievers need, recursively) gives the values of the full computation, at a fraction of it."""
    inf = wp.float64(wp.inf)
    zero = wp.float64(0.0)
    c0 = rel.cond_start[g]
    c1 = rel.cond_start[g + 1]
    for i in range(c0, c1):
        c = rel.cond[i]
        v = field_value(sc.node_state[r, ct.word[c]], ct.shift[c], ct.mask[c])
        if condition_holds(v, ct.op[c], ct.k[c]):
            sc.cond_h[t, c] = zero
        else:
            sc.cond_h[t, c] = inf
    for _round in range(c1 - c0 + 1):
        for i in range(rel.action_start[g], rel.action_start[g + 1]):
            a = rel.action[i]
            m = zero
            for p in range(ct.action_start[a], ct.action_start[a + 1]):
                m = wp.max(m, sc.cond_h[t, ct.action_cond[p]])
            sc.act_h[t, a] = m
        changed = int(0)
        for i in range(c0, c1):
            c = rel.cond[i]
            hc = sc.cond_h[t, c]
            if hc != zero:
                best = inf
                for p in range(ct.achiever_start[c], ct.achiever_start[c + 1]):
                    b = ct.achiever_action[p]
                    cb = sc.act_cost[t, b]
                    if not is_inf(cb):
                        best = wp.min(best, cb + sc.act_h[t, b])
                if best < hc:
                    sc.cond_h[t, c] = best
                    changed = 1
        if changed == 0:
            break


@wp.func
def heuristic(
    sc: Scratch, t: int, r: int, dt: DomainTables, gt: GoalTables, g: int, ct: ConditionTables, rel: Relevance,
    c_min: wp.float64, kind: int, per_agent: int,
) -> wp.float64:
    """The admissible heuristic of node row r (see `goap.planners.reference`)."""
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
    if kind == HEUR_HMAX:
        hmax_fixpoint(sc, t, r, ct, rel, g)
    term = wp.float64(0.0)
    for j in range(at.start[g], at.start[g + 1]):
        v = field_value(sc.node_state[r, at.word[j]], at.shift[j], at.mask[j])
        if not condition_holds(v, at.op[j], at.k[j]):
            best = inf
            for p in range(gt.achievers[j], gt.achievers[j + 1]):
                a = gt.achiever_action[p]
                c = sc.act_cost[t, a]
                if not is_inf(c):
                    through = c
                    if kind == HEUR_HMAX:
                        through = c + sc.act_h[t, a]
                    elif kind == HEUR_HMAX2:
                        pending = wp.float64(0.0)
                        for q in range(rx.pre_start[a], rx.pre_start[a + 1]):
                            f = rx.pre_fact[q]
                            pv = field_value(sc.node_state[r, lay.word[f]], lay.shift[f], lay.mask[f])
                            if not condition_holds(pv, rx.pre_op[q], rx.pre_k[q]):
                                if per_agent != 0:
                                    pending = wp.max(pending, sc.pre_cost[t, q])
                                else:
                                    pending = wp.max(pending, ct.default_pre_cost[q])
                        through = c + pending
                    best = wp.min(best, through)
            term = wp.max(term, best)
    if is_inf(term):
        return inf
    e = gt.max_achieved[g]
    steps = (unsat + e - 1) // e
    return wp.max(term, wp.float64(steps) * c_min)


@functools.cache
def astar_kernel(n_words: int) -> wp.Kernel:
    """The A* kernel specialised for states of ``n_words`` words; one module per word count, built once."""
    W = wp.constant(n_words)

    @wp.func
    def state_hash(sc: Scratch, r: int) -> wp.uint64:
        x = wp.uint64(0x9E3779B97F4A7C15)
        for w in range(W):
            x = x ^ sc.node_state[r, w]
            x = (x ^ (x >> wp.uint64(30))) * wp.uint64(0xBF58476D1CE4E5B9)
            x = (x ^ (x >> wp.uint64(27))) * wp.uint64(0x94D049BB133111EB)
            x = x ^ (x >> wp.uint64(31))
        return x

    @wp.func
    def same_state(sc: Scratch, a: int, b: int) -> bool:
        for w in range(W):
            if sc.node_state[a, w] != sc.node_state[b, w]:
                return False
        return True

    @wp.func
    def find_slot(sc: Scratch, t: int, base: int, r: int, hash_mask: int) -> int:
        """Slot of the stored state equal to row ``r``, or of the empty slot where it would go."""
        pos = int(state_hash(sc, r) & wp.uint64(hash_mask))
        for _probe in range(hash_mask + 1):
            idx = sc.table[t, pos]
            if idx < 0:
                return pos
            if same_state(sc, base + idx, r):
                return pos
            pos = (pos + 1) & hash_mask
        return -1  # unreachable: the table is never more than half full

    @wp.kernel(enable_backward=False, module="unique")
    def plan_astar(
        q: Query, first: int, scratch_first: int, row_step: int, dt: DomainTables, gt: GoalTables,
        ct: ConditionTables, rel: Relevance, s: Search, sc: Scratch, out: Results, pending: wp.array(dtype=wp.int32),
    ):
        tid = wp.tid()
        i = first + tid
        if i >= q.count[0]:
            return
        row = i
        if q.use_ids != 0:
            row = q.ids[i]
        # This thread's scratch row: its own on a GPU (row_step 1); on the CPU, where a launch runs its threads one
        # after another, every thread of the launch reuses one row (row_step 0), which stays in cache.
        t = scratch_first + tid * row_step
        M = s.pool
        base = t * (M + 1)
        spare = base + M  # where successors are built
        L = out.actions.shape[1]
        if s.entry != 0 or s.level > 0:
            for k in range(L):
                out.actions[row, k] = -1
            out.length[row] = 0
            out.expanded[row] = 0
            out.cost[row] = wp.float64(wp.nan)
        if s.entry != 0:
            lv = wp.clamp(int(out.level[row]), 0, s.last_level + 1)
            if lv > s.level:
                out.level[row] = wp.int8(lv)
                out.status[row] = wp.int8(STATUS_BUDGET)
                if lv <= s.last_level:
                    wp.atomic_add(pending, 0, 1)  # searched by a later wave of this call (or a later call)
                return  # (past the last level: every pool was tried; final)
        out.level[row] = wp.int8(s.level)
        g = q.goals[row]

        for w in range(W):
            sc.node_state[base, w] = q.states[row, w]
        if goal_reached(sc.node_state, base, gt, g):
            out.status[row] = wp.int8(STATUS_SATISFIED)
            out.cost[row] = wp.float64(0.0)
            return

        # Per-agent heuristic tables: action costs (inf where disabled), the cheapest usable action, and for
        # every precondition of every action its cheapest usable achiever.
        inf = wp.float64(wp.inf)
        c_min = inf
        for a in range(dt.n_actions):
            c = dt.cost[a]
            if q.has_costs != 0:
                c = wp.float64(q.costs[row, a])
            if q.has_enabled != 0:
                if not q.enabled[row, a]:
                    c = inf
            sc.act_cost[t, a] = c
            c_min = wp.min(c_min, c)
        rx = dt.relaxed
        if s.heuristic == HEUR_HMAX2 and q.has_costs + q.has_enabled > 0:
            for p in range(rx.n_pre):
                best = inf
                for k in range(rx.pre_ach_start[p], rx.pre_ach_start[p + 1]):
                    best = wp.min(best, sc.act_cost[t, rx.pre_ach_action[k]])
                sc.pre_cost[t, p] = best

        per_agent = q.has_costs + q.has_enabled
        h0 = heuristic(sc, t, base, dt, gt, g, ct, rel, c_min, s.heuristic, q.has_costs + q.has_enabled)
        if is_inf(h0):
            out.status[row] = wp.int8(STATUS_NO_PLAN)
            return
        if s.level > 0:  # an escalated search: prove the goal relaxed-unreachable before a large search
            if not relaxed_reachable(sc, t, base, row, q, dt, gt, g):
                out.status[row] = wp.int8(STATUS_NO_PLAN)
                return

        sc.node_g[t, 0] = wp.float64(0.0)
        sc.node_h[t, 0] = h0
        sc.node_parent[t, 0] = -1
        sc.table[t, find_slot(sc, t, base, base, s.hash_mask)] = 0
        sc.heap[t, 0] = 0
        sc.node_pos[t, 0] = 0
        heap_size = int(1)
        count = int(1)
        expanded = int(0)
        status = int(STATUS_NO_PLAN)
        goal_node = int(-1)

        for _pop in range(M + 1):
            if heap_size == 0:
                break
            node = pop_first(sc, t, heap_size, s)
            heap_size -= 1
            if goal_reached(sc.node_state, base + node, gt, g):
                status = STATUS_OK
                goal_node = node
                break
            expanded += 1
            g_node = sc.node_g[t, node]
            for a in range(dt.n_actions):
                c = sc.act_cost[t, a]
                if is_inf(c):
                    continue
                if not is_applicable(sc.node_state, base + node, dt, a):
                    continue
                apply_effects(sc.node_state, base + node, sc.node_state, spare, dt, a)
                g_child = g_node + c
                slot = find_slot(sc, t, base, spare, s.hash_mask)
                known = sc.table[t, slot]
                if known < 0:
                    h_child = heuristic(sc, t, spare, dt, gt, g, ct, rel, c_min, s.heuristic, per_agent)
                    if is_inf(h_child):
                        continue
                    if count >= M:
                        status = STATUS_BUDGET
                        break
                    known = count
                    count += 1
                    for w in range(W):
                        sc.node_state[base + known, w] = sc.node_state[spare, w]
                    sc.table[t, slot] = known
                    sc.node_h[t, known] = h_child
                    sc.node_g[t, known] = g_child
                    sc.node_parent[t, known] = node
                    sc.heap[t, heap_size] = known
                    sc.node_pos[t, known] = heap_size
                    heap_size += 1
                    sift_up(sc, t, heap_size - 1, s)
                else:
                    pos = sc.node_pos[t, known]
                    if pos < 0 or g_child >= sc.node_g[t, known]:
                        continue
                    sc.node_g[t, known] = g_child
                    sc.node_parent[t, known] = node
                    sift_up(sc, t, pos, s)
            if status == STATUS_BUDGET:
                break

        out.expanded[row] = expanded
        if status == STATUS_BUDGET and s.level == 0:  # the first pool filled up: escalate only if it can help
            if not relaxed_reachable(sc, t, base, row, q, dt, gt, g):
                status = STATUS_NO_PLAN
        if status == STATUS_OK:
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
                status = STATUS_TOO_LONG
            # Read the plan back: the first usable action from the parent to the node at exactly the node's g.
            n = goal_node
            for k in range(length):
                p = sc.node_parent[t, n]
                found = int(-1)
                for a in range(dt.n_actions):
                    c = sc.act_cost[t, a]
                    if found < 0 and not is_inf(c):
                        if sc.node_g[t, p] + c == sc.node_g[t, n]:
                            if is_applicable(sc.node_state, base + p, dt, a):
                                apply_effects(sc.node_state, base + p, sc.node_state, spare, dt, a)
                                if same_state(sc, spare, base + n):
                                    found = a
                step = length - 1 - k
                if step < L:
                    out.actions[row, step] = found
                n = p
        if status == STATUS_BUDGET:
            out.level[row] = wp.int8(s.level + 1)  # the next pool, or last_level + 1: every pool was tried
            if s.level < s.last_level:
                wp.atomic_add(pending, 0, 1)
        out.status[row] = wp.int8(status)

        # Leave the hash table empty for the next search: clear exactly the slots this search used.
        for n in range(count):
            pos = int(state_hash(sc, base + n) & wp.uint64(s.hash_mask))
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
        if int(out.status[row]) == STATUS_BUDGET and int(out.level[row]) == level:
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
        allowed = int(budget[0] // wp.int64(pool))
        if budget[1] == wp.int64(0):
            allowed = wp.max(allowed, 1)
        run = wp.min(run, allowed)
        budget[0] = budget[0] - wp.int64(run) * wp.int64(pool)
        budget[1] = budget[1] + wp.int64(run)
    granted[0] = run

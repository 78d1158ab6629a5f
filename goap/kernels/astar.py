"""Batched A*: one search per thread, every agent of a wave in one launch.

The kernel follows `goap.planners.reference.ReferencePlanner.search` step for step (same heuristic, same
float32 sums, same (f, h, node) order on the open list, same budget checks), so both planners expand the same
nodes and return the same statuses and costs.

Per-thread scratch lives in global arrays with one row per thread of the wave (not per agent, so a CPU launch
over a chunk reuses a chunk-sized scratch):

    node_state   uint64 [wave, max_nodes + 1, W]   the last row is where a successor is built before it is kept
    node_g/h     float32[wave, max_nodes]
    node_parent  int32  [wave, max_nodes]
    node_action  int32  [wave, max_nodes]
    node_closed  uint8  [wave, max_nodes]
    heap_f/h     float32[wave, max_nodes]          binary heap ordered by (f, h, node)
    heap_node    int32  [wave, max_nodes]
    table        int32  [wave, hash_size]          open addressing, -1 = empty; hash_size = pow2 >= 2 max_nodes
    act_cost     float32[wave, A]                  this agent's action costs, inf where disabled
    pre_cost     float32[wave, P]                  cheapest usable achiever of each action precondition
    reached      uint64 [wave, F]                  the relaxed reachability check's reached values, per fact

The hash table is left empty after every search (the nodes a search stored are looked up and cleared), so it is
never cleared in full. Every loop is bounded: probing by hash_size, sifting by 32 levels, the search by
``1 + max_nodes * A`` pops (the most entries that can ever be pushed).
"""

from __future__ import annotations

import functools

import warp as wp

STATUS_OK = wp.constant(0)
STATUS_SATISFIED = wp.constant(1)
STATUS_NO_PLAN = wp.constant(2)
STATUS_BUDGET = wp.constant(3)
STATUS_TOO_LONG = wp.constant(4)

OP_EQ = wp.constant(0)
OP_NE = wp.constant(1)
OP_LT = wp.constant(2)
OP_LE = wp.constant(3)
OP_GT = wp.constant(4)
OP_GE = wp.constant(5)


@wp.struct
class ActionArrays:
    """A domain's actions (see `goap.encoding.DomainTables`)."""

    pre_mask: wp.array2d(dtype=wp.uint64)
    pre_value: wp.array2d(dtype=wp.uint64)
    pre_start: wp.array(dtype=wp.int32)
    pre_word: wp.array(dtype=wp.int32)
    pre_shift: wp.array(dtype=wp.int32)
    pre_fmask: wp.array(dtype=wp.uint64)
    pre_op: wp.array(dtype=wp.int32)
    pre_k: wp.array(dtype=wp.uint64)
    eff_set: wp.array2d(dtype=wp.uint64)
    eff_clear: wp.array2d(dtype=wp.uint64)
    step_start: wp.array(dtype=wp.int32)
    step_word: wp.array(dtype=wp.int32)
    step_shift: wp.array(dtype=wp.int32)
    step_fmask: wp.array(dtype=wp.uint64)
    step_delta: wp.array(dtype=wp.int64)
    step_hi: wp.array(dtype=wp.uint64)
    cost: wp.array(dtype=wp.float32)
    n_actions: int


@wp.struct
class GoalArrays:
    """A goal table (see `goap.encoding.GoalTables`)."""

    mask: wp.array2d(dtype=wp.uint64)
    value: wp.array2d(dtype=wp.uint64)
    int_start: wp.array(dtype=wp.int32)
    int_word: wp.array(dtype=wp.int32)
    int_shift: wp.array(dtype=wp.int32)
    int_fmask: wp.array(dtype=wp.uint64)
    int_op: wp.array(dtype=wp.int32)
    int_k: wp.array(dtype=wp.uint64)
    atom_start: wp.array(dtype=wp.int32)
    atom_word: wp.array(dtype=wp.int32)
    atom_shift: wp.array(dtype=wp.int32)
    atom_fmask: wp.array(dtype=wp.uint64)
    atom_op: wp.array(dtype=wp.int32)
    atom_k: wp.array(dtype=wp.uint64)
    ach_start: wp.array(dtype=wp.int32)
    ach_action: wp.array(dtype=wp.int32)
    max_achieved: wp.array(dtype=wp.int32)
    atom_fact: wp.array(dtype=wp.int32)
    atom_sat: wp.array(dtype=wp.uint64)


@wp.struct
class RelaxArrays:
    """Fact-level actions for the delete-relaxed reachability check (see `goap.encoding.RelaxedTables`)."""

    fact_word: wp.array(dtype=wp.int32)
    fact_shift: wp.array(dtype=wp.int32)
    fact_mask: wp.array(dtype=wp.uint64)
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
    n_facts: int
    total_values: int


@wp.struct
class Scratch:
    node_state: wp.array3d(dtype=wp.uint64)
    node_g: wp.array2d(dtype=wp.float32)
    node_h: wp.array2d(dtype=wp.float32)
    node_parent: wp.array2d(dtype=wp.int32)
    node_action: wp.array2d(dtype=wp.int32)
    node_closed: wp.array2d(dtype=wp.uint8)
    heap_f: wp.array2d(dtype=wp.float32)
    heap_h: wp.array2d(dtype=wp.float32)
    heap_node: wp.array2d(dtype=wp.int32)
    table: wp.array2d(dtype=wp.int32)
    act_cost: wp.array2d(dtype=wp.float32)
    pre_cost: wp.array2d(dtype=wp.float32)
    reached: wp.array2d(dtype=wp.uint64)


@wp.struct
class Results:
    status: wp.array(dtype=wp.int8)
    cost: wp.array(dtype=wp.float32)
    length: wp.array(dtype=wp.int32)
    actions: wp.array2d(dtype=wp.int32)
    expanded: wp.array(dtype=wp.int32)


@wp.func
def condition_holds(v: wp.uint64, op: int, k: wp.uint64) -> bool:
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
    return (word >> wp.uint64(shift)) & fmask


@wp.func
def heap_before(f1: float, h1: float, n1: int, f2: float, h2: float, n2: int) -> bool:
    """Open-list order: lower f, then lower h (deeper), then the older node."""
    if f1 != f2:
        return f1 < f2
    if h1 != h2:
        return h1 < h2
    return n1 < n2


@wp.func
def open_key(g: float, h: float, weight: float, greedy: int) -> float:
    """f = g + weight * h (A* when weight is 1), or h alone for greedy best-first."""
    if greedy != 0:
        return h
    return g + weight * h


@wp.func
def heap_push(sc: Scratch, t: int, size: int, f: float, h: float, node: int):
    i = size
    for _level in range(32):
        if i == 0:
            break
        p = (i - 1) // 2
        if not heap_before(f, h, node, sc.heap_f[t, p], sc.heap_h[t, p], sc.heap_node[t, p]):
            break
        sc.heap_f[t, i] = sc.heap_f[t, p]
        sc.heap_h[t, i] = sc.heap_h[t, p]
        sc.heap_node[t, i] = sc.heap_node[t, p]
        i = p
    sc.heap_f[t, i] = f
    sc.heap_h[t, i] = h
    sc.heap_node[t, i] = node


@wp.func
def heap_pop(sc: Scratch, t: int, size: int) -> int:
    """Remove the first entry of a heap of ``size`` > 0 entries and return its node."""
    top = sc.heap_node[t, 0]
    last = size - 1
    f = sc.heap_f[t, last]
    h = sc.heap_h[t, last]
    node = sc.heap_node[t, last]
    i = int(0)
    for _level in range(32):
        c = 2 * i + 1
        if c >= last:
            break
        if c + 1 < last:
            if heap_before(
                sc.heap_f[t, c + 1], sc.heap_h[t, c + 1], sc.heap_node[t, c + 1],
                sc.heap_f[t, c], sc.heap_h[t, c], sc.heap_node[t, c],
            ):
                c = c + 1
        if not heap_before(sc.heap_f[t, c], sc.heap_h[t, c], sc.heap_node[t, c], f, h, node):
            break
        sc.heap_f[t, i] = sc.heap_f[t, c]
        sc.heap_h[t, i] = sc.heap_h[t, c]
        sc.heap_node[t, i] = sc.heap_node[t, c]
        i = c
    if last > 0:
        sc.heap_f[t, i] = f
        sc.heap_h[t, i] = h
        sc.heap_node[t, i] = node
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
    sc: Scratch, t: int, row: int, rx: RelaxArrays, acts: ActionArrays, gt: GoalArrays, g: int,
    enabled: wp.array2d(dtype=wp.uint8), has_enabled: int,
) -> bool:
    """`ReferencePlanner.relaxed_reachable` for the state in node row 0: can the goal hold without deletes?

    Each tracked fact's reached values are one 64-bit set; a condition can hold when the set meets the
    condition's precomputed set of satisfying values.
    """
    for f in range(rx.n_facts):
        if rx.n_values[f] > 0:
            v0 = field_value(sc.node_state[t, 0, rx.fact_word[f]], rx.fact_shift[f], rx.fact_mask[f])
            sc.reached[t, f] = value_bit(int(v0))
    for _pass in range(rx.total_values + 1):
        grew = int(0)
        for a in range(acts.n_actions):
            if has_enabled != 0:
                if enabled[row, a] == wp.uint8(0):
                    continue
            ok = int(1)
            for q in range(rx.pre_start[a], rx.pre_start[a + 1]):
                f = rx.pre_fact[q]
                if ok != 0 and rx.n_values[f] > 0:
                    if (sc.reached[t, f] & rx.pre_sat[q]) == wp.uint64(0):
                        ok = 0
            if ok == 0:
                continue
            for q in range(rx.eff_start[a], rx.eff_start[a + 1]):
                f = rx.eff_fact[q]
                n = rx.n_values[f]
                if n > 0:
                    x = sc.reached[t, f]
                    y = x
                    op = rx.eff_op[q]
                    if op == 0:
                        y = x | value_bit(int(rx.eff_value[q]))
                    elif op == 1:
                        y = step_values(x, int(rx.eff_value[q]), n)
                    else:
                        y = step_values(x, -int(rx.eff_value[q]), n)
                    if y != x:
                        sc.reached[t, f] = y
                        grew = 1
        if grew == 0:
            break
    for j in range(gt.atom_start[g], gt.atom_start[g + 1]):
        f = gt.atom_fact[j]
        if rx.n_values[f] > 0:
            if (sc.reached[t, f] & gt.atom_sat[j]) == wp.uint64(0):
                return False
    return True


@functools.cache
def astar_kernel(n_words: int) -> wp.Kernel:
    """The A* kernel specialised for states of ``n_words`` words; one module per word count, built once."""
    W = wp.constant(n_words)

    @wp.func
    def state_hash(sc: Scratch, t: int, n: int) -> wp.uint64:
        x = wp.uint64(0x9E3779B97F4A7C15)
        for w in range(W):
            x = x ^ sc.node_state[t, n, w]
            x = (x ^ (x >> wp.uint64(30))) * wp.uint64(0xBF58476D1CE4E5B9)
            x = (x ^ (x >> wp.uint64(27))) * wp.uint64(0x94D049BB133111EB)
            x = x ^ (x >> wp.uint64(31))
        return x

    @wp.func
    def same_state(sc: Scratch, t: int, a: int, b: int) -> bool:
        for w in range(W):
            if sc.node_state[t, a, w] != sc.node_state[t, b, w]:
                return False
        return True

    @wp.func
    def goal_reached(sc: Scratch, t: int, n: int, gt: GoalArrays, g: int) -> bool:
        for w in range(W):
            if (sc.node_state[t, n, w] & gt.mask[g, w]) != gt.value[g, w]:
                return False
        for k in range(gt.int_start[g], gt.int_start[g + 1]):
            v = field_value(sc.node_state[t, n, gt.int_word[k]], gt.int_shift[k], gt.int_fmask[k])
            if not condition_holds(v, gt.int_op[k], gt.int_k[k]):
                return False
        return True

    @wp.func
    def is_applicable(sc: Scratch, t: int, n: int, acts: ActionArrays, a: int) -> bool:
        for w in range(W):
            if (sc.node_state[t, n, w] & acts.pre_mask[a, w]) != acts.pre_value[a, w]:
                return False
        for k in range(acts.pre_start[a], acts.pre_start[a + 1]):
            v = field_value(sc.node_state[t, n, acts.pre_word[k]], acts.pre_shift[k], acts.pre_fmask[k])
            if not condition_holds(v, acts.pre_op[k], acts.pre_k[k]):
                return False
        return True

    @wp.func
    def apply_effects(sc: Scratch, t: int, n: int, dst: int, acts: ActionArrays, a: int):
        for w in range(W):
            sc.node_state[t, dst, w] = (sc.node_state[t, n, w] & ~acts.eff_clear[a, w]) | acts.eff_set[a, w]
        for k in range(acts.step_start[a], acts.step_start[a + 1]):
            w = acts.step_word[k]
            sh = wp.uint64(acts.step_shift[k])
            fm = acts.step_fmask[k]
            word = sc.node_state[t, dst, w]
            v = wp.int64((word >> sh) & fm) + acts.step_delta[k]
            v = wp.clamp(v, wp.int64(0), wp.int64(acts.step_hi[k]))
            sc.node_state[t, dst, w] = (word & ~(fm << sh)) | (wp.uint64(v) << sh)

    @wp.func
    def pre_pending(sc: Scratch, t: int, n: int, rx: RelaxArrays, q: int) -> bool:
        """Whether precondition q (fact-level) is false in node row n."""
        f = rx.pre_fact[q]
        v = field_value(sc.node_state[t, n, rx.fact_word[f]], rx.fact_shift[f], rx.fact_mask[f])
        return not condition_holds(v, rx.pre_op[q], rx.pre_k[q])

    @wp.func
    def heuristic(
        sc: Scratch, t: int, n: int, gt: GoalArrays, g: int, rx: RelaxArrays, c_min: float, two_level: int
    ) -> float:
        unsat = int(0)
        h_two = float(0.0)
        for j in range(gt.atom_start[g], gt.atom_start[g + 1]):
            v = field_value(sc.node_state[t, n, gt.atom_word[j]], gt.atom_shift[j], gt.atom_fmask[j])
            if not condition_holds(v, gt.atom_op[j], gt.atom_k[j]):
                unsat += 1
                best = float(wp.inf)
                for q in range(gt.ach_start[j], gt.ach_start[j + 1]):
                    a = gt.ach_action[q]
                    c = sc.act_cost[t, a]
                    if not wp.isinf(c):
                        pending = float(0.0)
                        if two_level != 0:
                            for p in range(rx.pre_start[a], rx.pre_start[a + 1]):
                                if pre_pending(sc, t, n, rx, p):
                                    pending = wp.max(pending, sc.pre_cost[t, p])
                        best = wp.min(best, c + pending)
                h_two = wp.max(h_two, best)
        if unsat == 0:
            return 0.0
        if wp.isinf(h_two):
            return wp.inf
        e = gt.max_achieved[g]
        steps = (unsat + e - 1) // e
        return wp.max(h_two, float(steps) * c_min)

    @wp.func
    def find_slot(sc: Scratch, t: int, n: int, hash_mask: int) -> int:
        """Slot of the stored state equal to node row ``n``, or of the empty slot where it would go."""
        pos = int(state_hash(sc, t, n) & wp.uint64(hash_mask))
        for _probe in range(hash_mask + 1):
            idx = sc.table[t, pos]
            if idx < 0:
                return pos
            if same_state(sc, t, idx, n):
                return pos
            pos = (pos + 1) & hash_mask
        return -1  # unreachable: the table is never more than half full

    @wp.kernel(enable_backward=False, module="unique")
    def plan_astar(
        states: wp.array2d(dtype=wp.uint64),
        goals: wp.array(dtype=wp.int32),
        costs: wp.array2d(dtype=wp.float32),
        has_costs: int,
        enabled: wp.array2d(dtype=wp.uint8),
        has_enabled: int,
        agent_ids: wp.array(dtype=wp.int32),
        use_ids: int,
        first: int,
        acts: ActionArrays,
        gt: GoalArrays,
        rx: RelaxArrays,
        max_nodes: int,
        hash_mask: int,
        max_pops: int,
        weight: float,
        greedy: int,
        two_level: int,
        sc: Scratch,
        out: Results,
    ):
        t = wp.tid()
        row = first + t
        if use_ids != 0:
            row = agent_ids[first + t]
        g = goals[row]
        L = out.actions.shape[1]
        for k in range(L):
            out.actions[row, k] = -1
        out.length[row] = 0
        out.expanded[row] = 0
        out.cost[row] = wp.nan

        for w in range(W):
            sc.node_state[t, 0, w] = states[row, w]
        if goal_reached(sc, t, 0, gt, g):
            out.status[row] = wp.int8(STATUS_SATISFIED)
            out.cost[row] = 0.0
            return

        # Per-agent heuristic tables: action costs (inf where disabled), the cheapest usable action, and for
        # every precondition of every action its cheapest usable achiever.
        c_min = float(wp.inf)
        for a in range(acts.n_actions):
            c = acts.cost[a]
            if has_costs != 0:
                c = costs[row, a]
            if has_enabled != 0:
                if enabled[row, a] == wp.uint8(0):
                    c = wp.inf
            sc.act_cost[t, a] = c
            c_min = wp.min(c_min, c)
        for p in range(rx.pre_start[acts.n_actions]):
            best = float(wp.inf)
            for q in range(rx.pre_ach_start[p], rx.pre_ach_start[p + 1]):
                best = wp.min(best, sc.act_cost[t, rx.pre_ach_action[q]])
            sc.pre_cost[t, p] = best

        h0 = heuristic(sc, t, 0, gt, g, rx, c_min, two_level)
        if wp.isinf(h0):
            out.status[row] = wp.int8(STATUS_NO_PLAN)
            return
        if not relaxed_reachable(sc, t, row, rx, acts, gt, g, enabled, has_enabled):
            out.status[row] = wp.int8(STATUS_NO_PLAN)
            return

        sc.node_g[t, 0] = 0.0
        sc.node_h[t, 0] = h0
        sc.node_parent[t, 0] = -1
        sc.node_action[t, 0] = -1
        sc.node_closed[t, 0] = wp.uint8(0)
        sc.table[t, find_slot(sc, t, 0, hash_mask)] = 0
        heap_push(sc, t, 0, open_key(0.0, h0, weight, greedy), h0, 0)
        heap_size = int(1)
        count = int(1)
        expanded = int(0)
        status = int(STATUS_NO_PLAN)
        goal_node = int(-1)
        spare = max_nodes  # the node_state row where successors are built

        for _pop in range(max_pops):
            if heap_size == 0:
                break
            node = heap_pop(sc, t, heap_size)
            heap_size -= 1
            if sc.node_closed[t, node] != wp.uint8(0):
                continue
            if goal_reached(sc, t, node, gt, g):
                status = STATUS_OK
                goal_node = node
                break
            sc.node_closed[t, node] = wp.uint8(1)
            expanded += 1
            g_node = sc.node_g[t, node]
            for a in range(acts.n_actions):
                if has_enabled != 0:
                    if enabled[row, a] == wp.uint8(0):
                        continue
                if not is_applicable(sc, t, node, acts, a):
                    continue
                apply_effects(sc, t, node, spare, acts, a)
                g_child = g_node + sc.act_cost[t, a]
                slot = find_slot(sc, t, spare, hash_mask)
                known = sc.table[t, slot]
                h_child = float(0.0)
                if known < 0:
                    h_child = heuristic(sc, t, spare, gt, g, rx, c_min, two_level)
                    if wp.isinf(h_child):
                        continue
                    if count >= max_nodes:
                        status = STATUS_BUDGET
                        break
                    known = count
                    count += 1
                    for w in range(W):
                        sc.node_state[t, known, w] = sc.node_state[t, spare, w]
                    sc.table[t, slot] = known
                    sc.node_h[t, known] = h_child
                    sc.node_closed[t, known] = wp.uint8(0)
                else:
                    if sc.node_closed[t, known] != wp.uint8(0) or g_child >= sc.node_g[t, known]:
                        continue
                    h_child = sc.node_h[t, known]
                sc.node_g[t, known] = g_child
                sc.node_parent[t, known] = node
                sc.node_action[t, known] = a
                if heap_size >= max_nodes:
                    status = STATUS_BUDGET
                    break
                heap_push(sc, t, heap_size, open_key(g_child, h_child, weight, greedy), h_child, known)
                heap_size += 1
            if status == STATUS_BUDGET:
                break

        out.expanded[row] = expanded
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
            else:
                n = goal_node
                for k in range(length):
                    out.actions[row, length - 1 - k] = sc.node_action[t, n]
                    n = sc.node_parent[t, n]
        out.status[row] = wp.int8(status)

        # Leave the hash table empty for the next search: clear exactly the slots this search used.
        for n in range(count):
            pos = int(state_hash(sc, t, n) & wp.uint64(hash_mask))
            for _probe in range(hash_mask + 1):
                if sc.table[t, pos] == n:
                    sc.table[t, pos] = -1
                    break
                pos = (pos + 1) & hash_mask

    return plan_astar

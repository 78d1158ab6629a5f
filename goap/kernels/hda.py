"""Hash-distributed A* (HDA*, Kishimoto, Fukunaga and Botea 2009): one query searched by K workers at once.

Every state has one owner, worker ``(state_hash >> 40) mod K`` (the high bits of the hash whose low bits place it in
the owner's table, so that each worker's table is filled evenly). A worker holds its own node pool, hash table and
open list: rows ``t`` of a `goap.kernels.astar.Scratch` of K rows, its nodes at ``t * (M + 1) + n`` of
``node_state`` (row M is where successors are built). Successors it owns go straight into its open list; the others
are sent to their owner's inbox. The search runs in bulk-synchronous rounds (`ROUND`, one launch per worker, in
parallel on the CPU worker pool, or one launch of K threads on a GPU): a worker first takes the messages sent to it
in the round before into its pool (duplicate detection against its table, keeping the lower g, reopening a closed
state reached more cheaply), then expands up to ``batch`` nodes of lowest f (the planner's order: f, then h, then
the older node). `JOIN` (one thread) then reads every worker's counters: the incumbent, the lowest f left, the
messages in flight and whether a pool needs to grow. Messages are double-buffered: the outboxes of round r are the
inboxes of round r + 1, and box ``(phase, sender, receiver)`` is written by its sender only and emptied by its
receiver only (Warp's CPU atomics are not atomic across concurrent launches: nothing here needs them). On the CPU a
round ends for every worker soon after the first has expanded its batch (``Options.share_stop``: that worker sets
one flag, ``ctl[CTL_STOP]``, which the others read before each pop once they have popped a node; every writer
writes the same 1, so the race is benign), so that no worker idles at the barrier while a slower one finishes its
batch: each expands at its own rate, as in asynchronous HDA*.

Optimality: a state that satisfies the goal is an incumbent of cost g when it is stored (it never enters an open
list); nodes with g + h at or above the incumbent are neither stored nor sent, and the search ends when no message is
in flight and every worker's lowest f (its open list and an expansion it left half done) is at or above the incumbent
(no incumbent and nothing left: NO_PLAN). The heuristic of a state is computed by its owner
(`goap.kernels.astar.heuristic`) when it is first stored, or, with ``Options.lazy``, when it is first popped: until
then its h is the bound its parent gives, the parent's h less the action's cost (``msg_h``; admissible, so the key
stays a lower bound on the state's f and the termination rule holds), and a state whose h turns out higher goes back
into the open list once. Duplicates cost no heuristic call either way. A node's parent is stored as
``node * K + worker``, which does not depend on the pool size: the plan is read back across the workers (`FINISH`) by
finding, for each node on the path, the first usable action that turns its parent's state into its own at exactly
its g, as the planner's read-back does.

Memory is bounded: a worker expands a node only while its pool has room for a whole expansion's successors
(``M - count >= A``), and `JOIN` asks for larger pools (`MOVE` copies every worker's nodes and rebuilds its table)
when a worker could not go on, or when what its inbox holds would not fit; past the largest pool the search ends
BUDGET. An outbox that fills up mid-expansion stops the worker's round there; the next round continues that node
from the action it stopped at. Every loop is bounded: inboxes by their slots, expansions by ``batch`` (and pops by
`goap.planners.base.pop_limit` of the pool), probing by the table size, the read-back by the nodes stored.

One kernel (`hda_kernel`, one module per state width and cost-term / type combination), in five modes, so that one
compile covers the whole search.
"""

from __future__ import annotations

import functools

import warp as wp

from goap.kernels.astar import (
    HEUR_HMAX,
    HEUR_HMAX_DEPTH2,
    HEUR_LMCUT,
    ConditionTables,
    Query,
    Relevance,
    Results,
    Scratch,
    exact_cost,
    heuristic,
    is_inf,
    pop_first,
    relaxed_reachable,
    sift_up,
)
from goap.kernels.codes import ST_BUDGET, ST_NO_PLAN, ST_OK, ST_SATISFIED, ST_TOO_LONG
from goap.kernels.semantics import (
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

# Modes of the kernel.
START = wp.constant(0)  # K threads: per-worker tables and counters of the query, the root to its owner
ROUND = wp.constant(1)  # one thread per worker: take the inbox, expand up to `batch` nodes
JOIN = wp.constant(2)  # one thread: the incumbent, the verdict, the phase flip
MOVE = wp.constant(3)  # K threads: every worker's nodes into larger pools (`old` to `sc`)
FINISH = wp.constant(4)  # one thread: status, cost, plan and expansions of the query into `out`

# ctl[2], the verdict: what START and JOIN found.
GOING = wp.constant(0)  # searching
DONE = wp.constant(1)  # ended: solved when an incumbent exists, else the reachable space is exhausted (NO_PLAN)
GROW = wp.constant(2)  # a worker needs a larger pool
SATISFIED = wp.constant(3)  # the goal holds in the query's state
DEAD = wp.constant(4)  # the root is a dead end (h = inf, or relaxed-unreachable)
BUDGET = wp.constant(5)  # set by the host when no larger pool is left: FINISH writes BUDGET

#: Host-side names of the verdicts.
VERDICTS = {"going": 0, "done": 1, "grow": 2, "satisfied": 3, "dead": 4, "budget": 5}
#: Slots of the control array (``ctl``): the inbox phase, the query row, the verdict, the work of the last round, the
#: round's batch.
CTL_PHASE = wp.constant(0)
CTL_ROW = wp.constant(1)
CTL_VERDICT = wp.constant(2)
CTL_WORK = wp.constant(3)
CTL_BATCH = wp.constant(4)  # expansions per worker this round (at most Options.batch): set by the host
CTL_STOP = wp.constant(16)  # 1 once a worker has expanded its batch this round (Options.share_stop): a line of its own
CTL_SIZE = 32
#: The stride, in elements, of every per-worker counter and message-box count in `Workers` (worker t's is at
#: ``t * PAD``): 16 elements are 64 bytes of int32 and 128 of float64, at least a cache line, so that two workers'
#: counters, which each writes at every expansion, never share one.
PAD = wp.constant(16)


@wp.struct
class Options:
    """The search's sizes: workers, their pools, and the round's batch."""

    workers: int  # K
    pool: int  # M states per worker
    hash_mask: int  # a worker's table size - 1
    batch: int  # the most expansions per worker per round (ctl[CTL_BATCH] sets a round's, up to this)
    slots: int  # messages per (phase, sender, receiver) box
    max_pops: int  # pops per worker before the pool must grow (goap.planners.base.pop_limit)
    heuristic: int
    plan_length: int  # L: the longest plan written whole
    share_stop: int  # 1: a worker ends its round once another has expanded its batch (concurrent CPU launches)
    lazy: int  # 1: a state's h is computed when it is first popped, not when it is stored


@wp.struct
class Workers:
    """Per-worker counters (worker t's at ``t * PAD``) and the message boxes (box ``(phase * K + sender) * K +
    receiver``, its count at ``box * PAD``)."""

    count: wp.array(dtype=wp.int32)  # nodes stored
    heap_size: wp.array(dtype=wp.int32)
    pops: wp.array(dtype=wp.int32)
    expanded: wp.array(dtype=wp.int32)
    part_node: wp.array(dtype=wp.int32)  # a node whose expansion stopped at part_action (an outbox was full)
    part_action: wp.array(dtype=wp.int32)
    goal_cost: wp.array(dtype=wp.float64)  # the worker's best goal node's g (inf: none)
    goal_node: wp.array(dtype=wp.int32)
    low_f: wp.array(dtype=wp.float64)  # lowest f left after the round (inf: nothing)
    blocked: wp.array(dtype=wp.int32)  # 1: the round stopped for want of room (pool, or pops)
    work: wp.array(dtype=wp.int32)  # messages taken + nodes expanded this round
    c_min: wp.array(dtype=wp.float64)  # the query's cheapest usable action (the step-count bound of h)
    msg_state: wp.array2d(dtype=wp.uint64)  # [2 K K slots, W]
    msg_g: wp.array(dtype=wp.float64)
    msg_h: wp.array(dtype=wp.float64)  # a lower bound on the state's h: its parent's h less the action's cost (lazy)
    msg_parent: wp.array(dtype=wp.int32)
    msg_count: wp.array(dtype=wp.int32)  # [(2 K K + K) PAD]
    ctl: wp.array(dtype=wp.int32)  # CTL_*
    bound: wp.array(dtype=wp.float64)  # [1]: the incumbent as of the last JOIN
    lazy: wp.array2d(dtype=wp.int8)  # [K, M]: 1 while a stored node's h is the lower bound, not yet computed
    lazy_old: wp.array2d(dtype=wp.int8)  # the previous pools' flags, while MOVE copies them


@functools.cache
def hda_kernel(n_words: int, terms: bool = False, typed: bool = False) -> wp.Kernel:
    """The HDA* kernel for states of ``n_words`` words, with or without cost terms and agent types (as
    `goap.kernels.astar.astar_kernel`); one module per combination, built once."""
    W = wp.constant(n_words)
    TERMS = bool(terms)
    TYPED = bool(typed)

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
    def owner_of(node_state: wp.array2d(dtype=wp.uint64), r: int, workers: int) -> int:
        return int((state_hash(node_state, r) >> wp.uint64(40)) % wp.uint64(workers))

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

    @wp.func
    def agent_type(q: Query, row: int) -> int:
        ty = int(0)
        if wp.static(TYPED):
            if q.has_types != 0:
                ty = q.types[row]
        return ty

    @wp.func
    def start_worker(
        q: Query, dt: DomainTables, gt: GoalTables, ct: ConditionTables, rel: Relevance, op: Options, sc: Scratch,
        wk: Workers, t: int,
    ):
        """Worker t's part of a query's start: its action costs (as `plan_astar`'s), counters, table and inboxes;
        the owner of the query's state stores it (or says SATISFIED / DEAD)."""
        inf = wp.float64(wp.inf)
        K = op.workers
        M = op.pool
        row = wk.ctl[CTL_ROW]
        g = q.goals[row]
        ty = agent_type(q, row)
        c_min = inf
        for a in range(dt.n_actions):
            c = dt.cost[a]
            if q.has_costs != 0:
                c = wp.float64(q.costs[row, a])
            if wp.static(TERMS):  # base + each term at its cheaper end, clamped at 0
                for k in range(dt.term_start[a], dt.term_start[a + 1]):
                    c = c + dt.term_min[k]
                c = wp.max(wp.float64(0.0), c)
            if wp.static(TYPED):
                if ty < 0 or ty >= dt.type_allowed.shape[0]:
                    c = inf
                elif dt.type_allowed[ty, a]:
                    c = dt.type_scale[ty, a] * c
                else:
                    c = inf
            if q.has_enabled != 0:
                if not q.enabled[row, a]:
                    c = inf
            sc.act_cost[t, a] = c
            c_min = wp.min(c_min, c)
        wk.c_min[t * PAD] = c_min
        per_agent = q.has_costs + q.has_enabled + wp.static(int(TYPED))
        rx = dt.relaxed
        if op.heuristic == HEUR_HMAX_DEPTH2 and per_agent > 0:
            for p in range(rx.n_pre):
                best = inf
                for k in range(rx.pre_ach_start[p], rx.pre_ach_start[p + 1]):
                    best = wp.min(best, sc.act_cost[t, rx.pre_ach_action[k]])
                sc.pre_cost[t, p] = best
        for k in range(op.hash_mask + 1):
            sc.table[t, k] = -1
        wk.count[t * PAD] = 0
        wk.heap_size[t * PAD] = 0
        wk.pops[t * PAD] = 0
        wk.expanded[t * PAD] = 0
        wk.part_node[t * PAD] = -1
        wk.part_action[t * PAD] = 0
        wk.goal_cost[t * PAD] = inf
        wk.goal_node[t * PAD] = -1
        wk.low_f[t * PAD] = inf
        wk.blocked[t * PAD] = 0
        wk.work[t * PAD] = 0
        for phase in range(2):
            for s in range(K):
                wk.msg_count[((phase * K + s) * K + t) * PAD] = 0
        wk.msg_count[(2 * K * K + t) * PAD] = 0  # the self box
        base = t * (M + 1)
        for w in range(W):
            sc.node_state[base, w] = q.states[row, w]
        if owner_of(sc.node_state, base, K) != t:
            return
        wk.bound[0] = inf
        wk.ctl[CTL_PHASE] = 0
        wk.ctl[CTL_WORK] = 0
        wk.ctl[CTL_STOP] = 0
        if goal_satisfied(sc.node_state, base, gt.mask, gt.value, gt.ints, g):
            wk.ctl[CTL_VERDICT] = SATISFIED
            return
        if op.heuristic != HEUR_LMCUT and op.heuristic != HEUR_HMAX:  # (those are inf exactly there)
            if not relaxed_reachable(sc, t, base, row, q, dt, gt, g):
                wk.ctl[CTL_VERDICT] = DEAD
                return
        h0 = heuristic(sc, t, base, dt, gt, g, ct, rel, c_min, op.heuristic, per_agent, ct.lm_zone, ct.lm_stable)
        if is_inf(h0):
            wk.ctl[CTL_VERDICT] = DEAD
            return
        wk.ctl[CTL_VERDICT] = GOING
        sc.table[t, find_slot(sc.node_state, sc.table, t, base, base, op.hash_mask)] = 0
        wk.count[t * PAD] = 1
        sc.node_g[t, 0] = wp.float64(0.0)
        sc.node_h[t, 0] = h0
        sc.node_parent[t, 0] = -1
        sc.heap[t, 0] = 0
        sc.node_pos[t, 0] = 0
        wk.lazy[t, 0] = wp.int8(0)
        wk.heap_size[t * PAD] = 1

    @wp.func
    def round_worker(
        q: Query, dt: DomainTables, gt: GoalTables, ct: ConditionTables, rel: Relevance, op: Options, sc: Scratch,
        wk: Workers, t: int,
    ):
        """Worker t's round: its inboxes into its pool, then up to ``batch`` expansions (see the module docstring).

        Every state reaches the pool through one place, the drain of a box: at step 0 the inboxes and the self box,
        at each later step the self box alone, which holds the successors the worker owns of the node expanded in
        the step before. One place, written out here rather than called: a call would copy the table structs by
        value for every successor (Warp passes structs by value), which cost a third of an expansion on cheap
        heuristics.
        """
        inf = wp.float64(wp.inf)
        one = wp.float64(1.0)
        K = op.workers
        M = op.pool
        A = dt.n_actions
        base = t * (M + 1)
        spare = base + M
        row = wk.ctl[CTL_ROW]
        g = q.goals[row]
        ty = agent_type(q, row)
        c_min = wk.c_min[t * PAD]
        per_agent = q.has_costs + q.has_enabled + wp.static(int(TYPED))
        lay = dt.layout
        inb = wk.ctl[CTL_PHASE]
        outb = 1 - inb
        own = 2 * K * K + t  # the self box: this worker's count slot
        own_first = 2 * K * K * op.slots + t * A  # and its first message (A slots: one expansion's successors)
        work = int(0)
        done = int(0)
        stop = int(0)
        wk.blocked[t * PAD] = 0
        batch = wp.clamp(wk.ctl[CTL_BATCH], 1, op.batch)
        for step in range(op.batch + 2):
            for s in range(K + 1):
                box = own
                first_msg = own_first
                if s < K:
                    if step > 0:
                        continue
                    box = (inb * K + s) * K + t
                    first_msg = box * op.slots
                n = wk.msg_count[box * PAD]
                for k in range(wp.max(op.slots, A)):
                    if k >= n:
                        break
                    m = first_msg + k
                    for w in range(W):
                        sc.node_state[spare, w] = wk.msg_state[m, w]
                    g_child = wk.msg_g[m]
                    parent = wk.msg_parent[m]
                    h_low = wk.msg_h[m]
                    # The state in row spare reached at g_child from parent: a new state is stored (its h computed
                    # here) unless it is a dead end or cannot beat the incumbent; a known one keeps the lower g,
                    # reopened when closed. A goal state is an incumbent, stored but never opened.
                    bound = wp.min(wk.bound[0], wk.goal_cost[t * PAD])
                    if g_child >= bound:
                        continue
                    slot = find_slot(sc.node_state, sc.table, t, base, spare, op.hash_mask)
                    known = sc.table[t, slot]
                    if known >= 0:
                        if g_child >= sc.node_g[t, known] or g_child + sc.node_h[t, known] >= bound:
                            continue
                        sc.node_g[t, known] = g_child
                        sc.node_parent[t, known] = parent
                        if goal_satisfied(sc.node_state, base + known, gt.mask, gt.value, gt.ints, g):
                            wk.goal_cost[t * PAD] = g_child
                            wk.goal_node[t * PAD] = known
                            continue
                        pos = sc.node_pos[t, known]
                        if pos < 0:  # closed: reopened (each stored node is in the heap at most once)
                            pos = wk.heap_size[t * PAD]
                            sc.heap[t, pos] = known
                            wk.heap_size[t * PAD] = pos + 1
                        sift_up(sc.node_g, sc.node_h, sc.heap, sc.node_pos, t, pos, one, 0)
                        continue
                    goal = goal_satisfied(sc.node_state, spare, gt.mask, gt.value, gt.ints, g)
                    h = wp.float64(0.0)
                    deferred = wp.int8(0)
                    if not goal:
                        if op.lazy != 0:  # its h when it is popped; until then the parent's bound
                            h = h_low
                            deferred = wp.int8(1)
                        else:
                            h = heuristic(sc, t, spare, dt, gt, g, ct, rel, c_min, op.heuristic, per_agent,
                                          ct.lm_zone, ct.lm_stable)
                        if is_inf(h) or g_child + h >= bound:
                            continue
                    nn = wk.count[t * PAD]
                    if nn >= M:
                        continue  # unreachable: a worker expands only with room for all successors (JOIN grows)
                    for w in range(W):
                        sc.node_state[base + nn, w] = sc.node_state[spare, w]
                    sc.table[t, slot] = nn
                    wk.count[t * PAD] = nn + 1
                    sc.node_g[t, nn] = g_child
                    sc.node_h[t, nn] = h
                    sc.node_parent[t, nn] = parent
                    sc.node_pos[t, nn] = -1
                    wk.lazy[t, nn] = deferred
                    if goal:
                        wk.goal_cost[t * PAD] = g_child
                        wk.goal_node[t * PAD] = nn
                    else:
                        hs = wk.heap_size[t * PAD]
                        sc.heap[t, hs] = nn
                        sc.node_pos[t, nn] = hs
                        wk.heap_size[t * PAD] = hs + 1
                        sift_up(sc.node_g, sc.node_h, sc.heap, sc.node_pos, t, hs, one, 0)
                wk.msg_count[box * PAD] = 0
                if s < K:
                    work += n
            if stop != 0:
                break
            if M - wk.count[t * PAD] < A:  # no room for a whole expansion's successors: JOIN grows the pools
                wk.blocked[t * PAD] = 1
                break
            node = int(-1)
            first_action = int(0)
            if wk.part_node[t * PAD] >= 0:
                node = wk.part_node[t * PAD]
                first_action = wk.part_action[t * PAD]
                wk.part_node[t * PAD] = -1
            else:
                hs = wk.heap_size[t * PAD]
                if hs == 0:
                    break
                if done >= batch:
                    if op.share_stop != 0:  # the others end their rounds too: none waits for the slowest's batch
                        wk.ctl[CTL_STOP] = 1
                    break
                if op.share_stop != 0 and done > 0 and wk.ctl[CTL_STOP] != 0:
                    break  # another worker has done its batch (after one pop here: every worker advances)
                top = sc.heap[t, 0]
                if sc.node_g[t, top] + sc.node_h[t, top] >= wp.min(wk.bound[0], wk.goal_cost[t * PAD]):
                    break  # nothing here can beat the incumbent
                if wk.pops[t * PAD] >= op.max_pops:
                    wk.blocked[t * PAD] = 1
                    break
                node = pop_first(sc.node_g, sc.node_h, sc.heap, sc.node_pos, t, hs, one, 0)
                wk.heap_size[t * PAD] = hs - 1
                wk.pops[t * PAD] = wk.pops[t * PAD] + 1
                done += 1
                if wk.lazy[t, node] != 0:
                    # Lazy evaluation: the node's h now. A dead end, or one that cannot beat the incumbent, stays
                    # closed; one whose f rose goes back into the open list (once: its h is now exact); one whose
                    # bound was its h is expanded now, as eager A* would have.
                    wk.lazy[t, node] = wp.int8(0)
                    work += 1
                    h_low = sc.node_h[t, node]
                    h = heuristic(sc, t, base + node, dt, gt, g, ct, rel, c_min, op.heuristic, per_agent,
                                  ct.lm_zone, ct.lm_stable)
                    sc.node_h[t, node] = h
                    if is_inf(h) or sc.node_g[t, node] + h >= wp.min(wk.bound[0], wk.goal_cost[t * PAD]):
                        continue
                    if h > h_low:
                        pos = wk.heap_size[t * PAD]
                        sc.heap[t, pos] = node
                        sc.node_pos[t, node] = pos
                        wk.heap_size[t * PAD] = pos + 1
                        sift_up(sc.node_g, sc.node_h, sc.heap, sc.node_pos, t, pos, one, 0)
                        continue
                wk.expanded[t * PAD] = wk.expanded[t * PAD] + 1
            work += 1
            g_node = sc.node_g[t, node]
            r_node = base + node
            for a in range(first_action, A):
                c = sc.act_cost[t, a]
                if is_inf(c):
                    continue
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
                    apply_when(sc.node_state, r_node, sc.node_state, spare, dt.when, a)
                if wp.static(TERMS):  # the exact cost in the state expanded (act_cost holds the least)
                    if dt.term_start[a] != dt.term_start[a + 1]:
                        c = dt.cost[a]
                        if q.has_costs != 0:
                            c = wp.float64(q.costs[row, a])
                        c = term_cost(sc.node_state, r_node, dt.term_start, dt.term_fact, dt.term_per, lay.word,
                                      lay.shift, lay.mask, lay.min, a, c)
                        if wp.static(TYPED):
                            c = dt.type_scale[ty, a] * c
                g_child = g_node + c
                if g_child >= wp.min(wk.bound[0], wk.goal_cost[t * PAD]):
                    continue
                dest = owner_of(sc.node_state, spare, K)
                box = own
                slot = own_first + wk.msg_count[own * PAD]  # (at most A successors: the self box never fills)
                if dest != t:
                    box = (outb * K + t) * K + dest
                    used = wk.msg_count[box * PAD]
                    if used >= op.slots:  # the outbox is full: this node's expansion goes on from a next round
                        wk.part_node[t * PAD] = node
                        wk.part_action[t * PAD] = a
                        stop = 1
                        break
                    slot = box * op.slots + used
                for w in range(W):
                    wk.msg_state[slot, w] = sc.node_state[spare, w]
                wk.msg_g[slot] = g_child
                wk.msg_h[slot] = wp.max(wp.float64(0.0), g_node + sc.node_h[t, node] - g_child)
                wk.msg_parent[slot] = node * K + t
                wk.msg_count[box * PAD] = wk.msg_count[box * PAD] + 1
        low = inf
        if wk.heap_size[t * PAD] > 0:
            head = sc.heap[t, 0]
            low = sc.node_g[t, head] + sc.node_h[t, head]
        pn = wk.part_node[t * PAD]
        if pn >= 0:
            low = wp.min(low, sc.node_g[t, pn] + sc.node_h[t, pn])
        wk.low_f[t * PAD] = low
        wk.work[t * PAD] = work

    @wp.func
    def join(dt: DomainTables, op: Options, wk: Workers):
        """After a round: the incumbent, and whether the search is done, must grow its pools, or goes on."""
        inf = wp.float64(wp.inf)
        K = op.workers
        inb = wk.ctl[CTL_PHASE]
        outb = 1 - inb
        best = inf
        low = inf
        work = int(0)
        grow = int(0)
        sent = int(0)
        for t in range(K):
            best = wp.min(best, wk.goal_cost[t * PAD])
            low = wp.min(low, wk.low_f[t * PAD])
            work += wk.work[t * PAD]
            if wk.blocked[t * PAD] != 0:
                grow = 1
            incoming = int(0)
            for s in range(K):
                incoming += wk.msg_count[((outb * K + s) * K + t) * PAD]
            sent += incoming
            if wk.count[t * PAD] + incoming + dt.n_actions > op.pool:
                grow = 1
        wk.bound[0] = best
        verdict = int(GOING)
        if sent == 0 and low >= best:
            verdict = int(DONE)
        elif grow != 0:
            verdict = int(GROW)
        wk.ctl[CTL_VERDICT] = verdict
        wk.ctl[CTL_WORK] = work + sent
        wk.ctl[CTL_PHASE] = outb  # the boxes written this round are read in the next
        wk.ctl[CTL_STOP] = 0

    @wp.func
    def move_worker(old: Scratch, sc: Scratch, old_pool: int, op: Options, wk: Workers, t: int):
        """Worker t's nodes, open list and table from pools of ``old_pool`` states into pools of ``op.pool``."""
        ob = t * (old_pool + 1)
        nb = t * (op.pool + 1)
        n = wk.count[t * PAD]
        for i in range(n):
            for w in range(W):
                sc.node_state[nb + i, w] = old.node_state[ob + i, w]
            sc.node_g[t, i] = old.node_g[t, i]
            sc.node_h[t, i] = old.node_h[t, i]
            sc.node_parent[t, i] = old.node_parent[t, i]
            sc.node_pos[t, i] = old.node_pos[t, i]
            wk.lazy[t, i] = wk.lazy_old[t, i]
        for i in range(wk.heap_size[t * PAD]):
            sc.heap[t, i] = old.heap[t, i]
        for k in range(op.hash_mask + 1):
            sc.table[t, k] = -1
        for i in range(n):
            sc.table[t, find_slot(sc.node_state, sc.table, t, nb, nb + i, op.hash_mask)] = i

    @wp.func
    def finish(q: Query, dt: DomainTables, op: Options, sc: Scratch, wk: Workers, out: Results):
        """The query's result: status, cost, expansions and the plan read back across the workers."""
        K = op.workers
        M = op.pool
        row = wk.ctl[CTL_ROW]
        ty = agent_type(q, row)
        L = out.actions.shape[1]
        for k in range(L):
            out.actions[row, k] = -1
        expanded = int(0)
        total = int(0)
        best = wp.float64(wp.inf)
        bw = int(-1)
        for t in range(K):
            expanded += wk.expanded[t * PAD]
            total += wk.count[t * PAD]
            if wk.goal_cost[t * PAD] < best:
                best = wk.goal_cost[t * PAD]
                bw = t
        out.expanded[row] = expanded
        out.length[row] = 0
        out.cost[row] = wp.float64(wp.nan)
        verdict = wk.ctl[CTL_VERDICT]
        if verdict == SATISFIED:
            out.status[row] = wp.int8(ST_SATISFIED)
            out.cost[row] = wp.float64(0.0)
            return
        if verdict == DEAD or (verdict == DONE and bw < 0):
            out.status[row] = wp.int8(ST_NO_PLAN)
            return
        if verdict != DONE:
            out.status[row] = wp.int8(ST_BUDGET)
            return
        spare = M  # worker 0's spare row: where the read-back builds successors
        length = int(0)
        nw = bw
        nn = wk.goal_node[bw * PAD]
        for _step in range(total):
            p = sc.node_parent[nw, nn]
            if p < 0:
                break
            length += 1
            nw = p % K
            nn = p // K
        out.length[row] = length
        out.cost[row] = best
        status = int(ST_OK)
        if length > L:
            status = int(ST_TOO_LONG)
        nw = bw
        nn = wk.goal_node[bw * PAD]
        for k in range(length):
            p = sc.node_parent[nw, nn]
            pw = p % K
            pn = p // K
            pr = pw * (M + 1) + pn
            nr = nw * (M + 1) + nn
            found = int(-1)
            for a in range(dt.n_actions):
                c = sc.act_cost[pw, a]
                if found < 0 and not is_inf(c):
                    if wp.static(TERMS):
                        if dt.term_start[a] != dt.term_start[a + 1]:
                            c = exact_cost(sc.node_state, pr, dt, q, row, ty, a)
                    if sc.node_g[pw, pn] + c == sc.node_g[nw, nn]:
                        if action_applicable(sc.node_state, pr, dt.pre_mask, dt.pre_value, dt.pre_ints, a):
                            apply_action(sc.node_state, pr, sc.node_state, spare, dt.eff_clear, dt.eff_set,
                                         dt.eff_steps, a)
                            if dt.when.start[a + 1] > dt.when.start[a]:
                                apply_when(sc.node_state, pr, sc.node_state, spare, dt.when, a)
                            if same_state(sc.node_state, spare, nr):
                                found = a
            step = length - 1 - k
            if step < L:
                out.actions[row, step] = found
            nw = pw
            nn = pn
        out.status[row] = wp.int8(status)

    @wp.kernel(enable_backward=False, module="unique")
    def hda_step(
        mode: int, first: int, q: Query, dt: DomainTables, gt: GoalTables, ct: ConditionTables, rel: Relevance,
        op: Options, sc: Scratch, old: Scratch, old_pool: int, wk: Workers, out: Results,
    ):
        t = first + wp.tid()
        if mode == START:
            start_worker(q, dt, gt, ct, rel, op, sc, wk, t)
        elif mode == ROUND:
            round_worker(q, dt, gt, ct, rel, op, sc, wk, t)
        elif mode == JOIN:
            join(dt, op, wk)
        elif mode == MOVE:
            move_worker(old, sc, old_pool, op, wk, t)
        else:
            finish(q, dt, op, sc, wk, out)

    return hda_step


__all__ = ["BUDGET", "CTL_BATCH", "CTL_PHASE", "CTL_ROW", "CTL_SIZE", "CTL_STOP", "CTL_VERDICT", "CTL_WORK",
           "FINISH", "JOIN", "MOVE", "Options", "PAD", "ROUND", "START", "VERDICTS", "Workers", "hda_kernel"]

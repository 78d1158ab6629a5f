"""Strong stubborn sets on the device: the tables' struct, the per-row marks, and the set of one state.

`goap.planners.stubborn` defines the sets and builds the tables (`goap.planners.stubborn.StubbornTables`, mirrored
field for field by `StubbornTables` here); the reference planner computes the same set from the domain's own
rules. `stubborn_set` is called by the A* kernel once per expanded state: it marks the set's actions in
``act_mark`` (``2 * epoch`` in the set, ``2 * epoch + 1`` in the set and applicable) and returns the epoch. Marks
carry the epoch of the state they belong to, so nothing is cleared between states (a row's epoch restarts, its
marks cleared, once in 2**29 states). Every action enters the queue once, and each list is walked once per state
(its key, condition or fact marked): the fixpoint is bounded by the tables' sizes.

Scratch per search row (int32): ``act_mark`` and ``queue`` [A], ``key_mark`` [K], ``cond_mark`` [C], ``fact_mark``
[F], ``epoch`` [1].
"""

from __future__ import annotations

import warp as wp

from goap.kernels.semantics import CondList, condition_holds, field_value

EPOCH_LIMIT = wp.constant(1 << 29)


@wp.struct
class StubbornTables:
    """`goap.planners.stubborn.StubbornTables` (names as there)."""

    write_start: wp.array(dtype=wp.int32)
    write_key: wp.array(dtype=wp.int32)
    key_fact: wp.array(dtype=wp.int32)
    key_simple: wp.array(dtype=wp.int32)
    key_start: wp.array(dtype=wp.int32)
    writer_start: wp.array(dtype=wp.int32)
    writer_action: wp.array(dtype=wp.int32)
    falsifies_start: wp.array(dtype=wp.int32)
    falsifies_cond: wp.array(dtype=wp.int32)
    falsified_start: wp.array(dtype=wp.int32)
    falsified_key: wp.array(dtype=wp.int32)
    reader_start: wp.array(dtype=wp.int32)
    reader_action: wp.array(dtype=wp.int32)
    read_start: wp.array(dtype=wp.int32)
    read_fact: wp.array(dtype=wp.int32)
    n_keys: int
    n_facts: int


@wp.struct
class Pruning:
    """The pruning of one scratch set: ``on`` (0: none), the switch-off rule (`goap.planners.stubborn`), the
    tables, and one row of marks per scratch row of the set."""

    on: int
    min_ratio: wp.float64
    check_after: int
    tables: StubbornTables
    act_mark: wp.array2d(dtype=wp.int32)
    queue: wp.array2d(dtype=wp.int32)
    key_mark: wp.array2d(dtype=wp.int32)
    cond_mark: wp.array2d(dtype=wp.int32)
    fact_mark: wp.array2d(dtype=wp.int32)
    epoch: wp.array(dtype=wp.int32)


@wp.func
def pruning_off(before: int, after: int, expanded: int, min_ratio: wp.float64, check_after: int) -> bool:
    """`goap.planners.stubborn.pruning_off`: too little pruned over the first ``check_after`` expansions."""
    if expanded <= check_after:
        return False
    ratio = wp.float64(1.0)
    if before > 0:
        ratio = wp.float64(1.0) - wp.float64(after) / wp.float64(before)
    return ratio < min_ratio


@wp.func
def stubborn_set(
    pr: Pruning, node_state: wp.array2d(dtype=wp.uint64), r: int, t: int, act_cost: wp.array2d(dtype=wp.float64),
    n_actions: int, n_conditions: int, cond_word: wp.array(dtype=wp.int32), cond_shift: wp.array(dtype=wp.int32),
    cond_mask: wp.array(dtype=wp.uint64), cond_op: wp.array(dtype=wp.int32), cond_k: wp.array(dtype=wp.uint64),
    pre_start: wp.array(dtype=wp.int32), pre_cond: wp.array(dtype=wp.int32),
    achiever_start: wp.array(dtype=wp.int32), achiever_action: wp.array(dtype=wp.int32),
    pre_of_start: wp.array(dtype=wp.int32), pre_of_action: wp.array(dtype=wp.int32),
    atoms: CondList, goal_achievers: wp.array(dtype=wp.int32), goal_achiever_action: wp.array(dtype=wp.int32),
    g: int,
) -> int:
    """Mark the strong stubborn set of the (non-goal) state in node row r for scratch row t; returns its epoch.

    The condition arrays are `goap.planners.base.ConditionTables`' (``pre_start`` / ``pre_cond``: its
    ``action_start`` / ``action_cond``); ``atoms`` and the goal achievers are the goal table's. An action enters
    the set (``push``) when it is usable and not in it yet; a key's writers, a condition's consumers and a fact's
    readers are pushed once per state. The pushes are written out rather than called: Warp passes arrays by value,
    and a call per candidate action costs more than the set.
    """
    tb = pr.tables
    act_mark = pr.act_mark
    queue = pr.queue
    key_mark = pr.key_mark
    cond_mark = pr.cond_mark
    fact_mark = pr.fact_mark
    ws = tb.writer_start
    wa = tb.writer_action
    inf = wp.float64(1.0e300)
    ep = pr.epoch[t] + 1
    if ep >= EPOCH_LIMIT:  # restart the row's epochs: every mark back below the first
        for a in range(n_actions):
            act_mark[t, a] = 0
        for k in range(tb.n_keys):
            key_mark[t, k] = 0
        for c in range(n_conditions):
            cond_mark[t, c] = 0
        for f in range(tb.n_facts):
            fact_mark[t, f] = 0
        ep = 1
    pr.epoch[t] = ep
    mark = 2 * ep  # in the set; mark + 1: in the set and applicable
    n = int(0)
    for j in range(atoms.start[g], atoms.start[g + 1]):  # the first goal condition false here: its achievers
        v = field_value(node_state[r, atoms.word[j]], atoms.shift[j], atoms.mask[j])
        if not condition_holds(v, atoms.op[j], atoms.k[j]):
            for i in range(goal_achievers[j], goal_achievers[j + 1]):
                b = goal_achiever_action[i]
                if act_mark[t, b] < mark and act_cost[t, b] <= inf:  # push b
                    act_mark[t, b] = mark
                    queue[t, n] = b
                    n += 1
            break
    head = int(0)
    for _step in range(n_actions):  # each action enters the queue once
        if head >= n:
            break
        a = queue[t, head]
        head += 1
        unmet = int(-1)
        for p in range(pre_start[a], pre_start[a + 1]):
            c = pre_cond[p]
            v = field_value(node_state[r, cond_word[c]], cond_shift[c], cond_mask[c])
            if not condition_holds(v, cond_op[c], cond_k[c]):
                unmet = c
                break
        if unmet >= 0:  # not applicable: a necessary enabling set, the achievers of its first false precondition
            for i in range(achiever_start[unmet], achiever_start[unmet + 1]):
                b = achiever_action[i]
                if act_mark[t, b] < mark and act_cost[t, b] <= inf:
                    act_mark[t, b] = mark
                    queue[t, n] = b
                    n += 1
            continue
        act_mark[t, a] = mark + 1
        for w in range(tb.write_start[a], tb.write_start[a + 1]):
            k = tb.write_key[w]
            f = tb.key_fact[k]
            for k2 in range(tb.key_start[f], tb.key_start[f + 1]):  # conflicting writers
                if (k2 != k or tb.key_simple[k] == 0) and key_mark[t, k2] != ep:
                    key_mark[t, k2] = ep
                    for i in range(ws[k2], ws[k2 + 1]):
                        b = wa[i]
                        if act_mark[t, b] < mark and act_cost[t, b] <= inf:
                            act_mark[t, b] = mark
                            queue[t, n] = b
                            n += 1
            for i in range(tb.falsifies_start[k], tb.falsifies_start[k + 1]):  # actions a can disable
                c = tb.falsifies_cond[i]
                if cond_mark[t, c] != ep:
                    cond_mark[t, c] = ep
                    for q in range(pre_of_start[c], pre_of_start[c + 1]):
                        b = pre_of_action[q]
                        if act_mark[t, b] < mark and act_cost[t, b] <= inf:
                            act_mark[t, b] = mark
                            queue[t, n] = b
                            n += 1
            if fact_mark[t, f] != ep:  # actions whose conditional effects or costs read what a writes
                fact_mark[t, f] = ep
                for i in range(tb.reader_start[f], tb.reader_start[f + 1]):
                    b = tb.reader_action[i]
                    if act_mark[t, b] < mark and act_cost[t, b] <= inf:
                        act_mark[t, b] = mark
                        queue[t, n] = b
                        n += 1
        for p in range(pre_start[a], pre_start[a + 1]):  # actions that can disable a
            c = pre_cond[p]
            for i in range(tb.falsified_start[c], tb.falsified_start[c + 1]):
                k2 = tb.falsified_key[i]
                if key_mark[t, k2] != ep:
                    key_mark[t, k2] = ep
                    for q in range(ws[k2], ws[k2 + 1]):
                        b = wa[q]
                        if act_mark[t, b] < mark and act_cost[t, b] <= inf:
                            act_mark[t, b] = mark
                            queue[t, n] = b
                            n += 1
        for i in range(tb.read_start[a], tb.read_start[a + 1]):  # writers of what a's effects or cost read
            f = tb.read_fact[i]
            for k2 in range(tb.key_start[f], tb.key_start[f + 1]):
                if key_mark[t, k2] != ep:
                    key_mark[t, k2] = ep
                    for q in range(ws[k2], ws[k2 + 1]):
                        b = wa[q]
                        if act_mark[t, b] < mark and act_cost[t, b] <= inf:
                            act_mark[t, b] = mark
                            queue[t, n] = b
                            n += 1
    return ep


@wp.func
def applicable_count(
    pr: Pruning, node_state: wp.array2d(dtype=wp.uint64), r: int, t: int, act_cost: wp.array2d(dtype=wp.float64),
    n_actions: int, cond_word: wp.array(dtype=wp.int32), cond_shift: wp.array(dtype=wp.int32),
    cond_mask: wp.array(dtype=wp.uint64), cond_op: wp.array(dtype=wp.int32), cond_k: wp.array(dtype=wp.uint64),
    pre_start: wp.array(dtype=wp.int32), pre_cond: wp.array(dtype=wp.int32), ep: int,
) -> wp.vec2i:
    """(usable actions applicable in the state, those of them in the set of epoch ``ep``): what the switch-off rule
    counts."""
    before = int(0)
    after = int(0)
    for a in range(n_actions):
        if act_cost[t, a] > wp.float64(1.0e300):
            continue
        if pr.act_mark[t, a] == 2 * ep + 1:
            before += 1
            after += 1
            continue
        ok = bool(True)
        for p in range(pre_start[a], pre_start[a + 1]):
            c = pre_cond[p]
            if not condition_holds(field_value(node_state[r, cond_word[c]], cond_shift[c], cond_mask[c]), cond_op[c],
                                   cond_k[c]):
                ok = False
                break
        if ok:
            before += 1
    return wp.vec2i(before, after)

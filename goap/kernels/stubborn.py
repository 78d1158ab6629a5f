"""Strong stubborn sets on the device: the tables' struct, the per-row marks, and the set of one state.

`goap.planners.stubborn` defines the sets and builds the tables (`goap.planners.stubborn.StubbornTables`, mirrored
field for field by `StubbornTables` here); the reference planner computes the same set from the domain's own
rules. `stubborn_set` is called by the A* kernel once per expanded state: it marks the set's actions in
``act_mark`` (``2 * epoch`` in the set, ``2 * epoch + 1`` in the set and applicable) and returns the epoch. Marks
carry the epoch of the state they belong to, so nothing is cleared between states (a row's epoch restarts, its
marks cleared, once in 2**29 states). Every action enters the queue once, and each list is walked once per state
(its key, condition or fact marked): the fixpoint is bounded by the tables' sizes.

Each list is walked once per state: a condition's achievers, a key's writers, the conditions it can falsify, a
condition's consumers and the keys that can falsify it, a fact's readers, all its keys (or all but one: the
conflicting writers of a key that commutes with itself, FD's sibling shortcut), each marked when walked. So a set
costs at most the tables' size, not the sum of its actions' lists (spider-opt18-strips: 2,870 actions, most of them
in the set of each state, each inapplicable one walking the achievers of its first false precondition: 1.6 ms a
state before the walks were marked).

Scratch per search row (int32): ``act_mark`` and ``queue`` [A], ``key_mark`` and ``key_walk`` [K], ``cond_mark``,
``cond_walk`` and ``cond_ach`` [C], ``fact_mark``, ``fact_all``, ``fact_but``, ``fact_but_key`` [F], ``epoch`` [1].
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
    key_mark: wp.array2d(dtype=wp.int32)  # the key's writers pushed
    key_walk: wp.array2d(dtype=wp.int32)  # the conditions the key can falsify walked
    cond_mark: wp.array2d(dtype=wp.int32)  # the condition's consumers pushed
    cond_walk: wp.array2d(dtype=wp.int32)  # the keys that can falsify the condition walked
    cond_ach: wp.array2d(dtype=wp.int32)  # the condition's achievers pushed
    fact_mark: wp.array2d(dtype=wp.int32)  # the fact's readers pushed
    fact_all: wp.array2d(dtype=wp.int32)  # every key of the fact pushed
    fact_but: wp.array2d(dtype=wp.int32)  # every key of the fact but fact_but_key pushed
    fact_but_key: wp.array2d(dtype=wp.int32)
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
    key_walk = pr.key_walk
    cond_walk = pr.cond_walk
    cond_ach = pr.cond_ach
    fact_all = pr.fact_all
    fact_but = pr.fact_but
    fact_but_key = pr.fact_but_key
    ws = tb.writer_start
    wa = tb.writer_action
    inf = wp.float64(1.0e300)
    ep = pr.epoch[t] + 1
    if ep >= EPOCH_LIMIT:  # restart the row's epochs: every mark back below the first
        for a in range(n_actions):
            act_mark[t, a] = 0
        for k in range(tb.n_keys):
            key_mark[t, k] = 0
            key_walk[t, k] = 0
        for c in range(n_conditions):
            cond_mark[t, c] = 0
            cond_walk[t, c] = 0
            cond_ach[t, c] = 0
        for f in range(tb.n_facts):
            fact_mark[t, f] = 0
            fact_all[t, f] = 0
            fact_but[t, f] = 0
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
            if cond_ach[t, unmet] != ep:
                cond_ach[t, unmet] = ep
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
            if fact_all[t, f] != ep:  # conflicting writers: every key of f (but k itself when it is simple)
                skip = int(-1)
                if tb.key_simple[k] != 0:
                    skip = k
                if fact_but[t, f] == ep:  # every key but one pushed already: at most that one is left
                    k2 = fact_but_key[t, f]
                    if k2 != skip:
                        if key_mark[t, k2] != ep:
                            key_mark[t, k2] = ep
                            for i in range(ws[k2], ws[k2 + 1]):
                                b = wa[i]
                                if act_mark[t, b] < mark and act_cost[t, b] <= inf:
                                    act_mark[t, b] = mark
                                    queue[t, n] = b
                                    n += 1
                        fact_all[t, f] = ep
                else:
                    for k2 in range(tb.key_start[f], tb.key_start[f + 1]):
                        if k2 != skip and key_mark[t, k2] != ep:
                            key_mark[t, k2] = ep
                            for i in range(ws[k2], ws[k2 + 1]):
                                b = wa[i]
                                if act_mark[t, b] < mark and act_cost[t, b] <= inf:
                                    act_mark[t, b] = mark
                                    queue[t, n] = b
                                    n += 1
                    if skip < 0:
                        fact_all[t, f] = ep
                    else:
                        fact_but[t, f] = ep
                        fact_but_key[t, f] = skip
            if key_walk[t, k] != ep:  # actions a can disable (the list walked once a state)
                key_walk[t, k] = ep
                for i in range(tb.falsifies_start[k], tb.falsifies_start[k + 1]):
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
            if cond_walk[t, c] != ep:
                cond_walk[t, c] = ep
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
            if fact_all[t, f] != ep:
                for k2 in range(tb.key_start[f], tb.key_start[f + 1]):
                    if key_mark[t, k2] != ep:
                        key_mark[t, k2] = ep
                        for q in range(ws[k2], ws[k2 + 1]):
                            b = wa[q]
                            if act_mark[t, b] < mark and act_cost[t, b] <= inf:
                                act_mark[t, b] = mark
                                queue[t, n] = b
                                n += 1
                fact_all[t, f] = ep
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

"""Kernels that find the distinct planning queries of a call, and the plan cache's probes and inserts.

A query is what a search's result depends on: the agent's packed state words, its goal index (and the goal
table it indexes, as a small token), its action-cost row (compared as float32 bit patterns), its enabled row and
the node-pool level its search starts at (``PlanBatch.level``, read by the planner). Missing cost rows mean the
domain's costs, missing enabled rows mean all enabled, so an explicit row equal to the default is the same query.

Grouping (`goap.planners.dedupe.DedupingPlanner`):

1. `hash_queries`: a 64-bit hash per requested row (FxHash steps over the key's words, splitmix64's finaliser),
   masked to ``hash_mask`` (a test hook: fewer bits force collisions); rows past the count get the largest key,
   so a stable sort leaves them last.
2. ``wp.utils.radix_sort_pairs`` (stable) on (hash, request position), by the hash's low 32 bits.
3. `mark_hash_runs`, a scan, `record_run_starts`, `spread_run_starts`: where each run of equal (whole) hashes
   starts; `invert_order`: where each request went in the sort.
4. `find_representatives`, in request order: each row's representative is the first row of its hash run whose
   query is *equal* (compared word by word, never by hash alone), which is its first row in request order, the
   sort being stable; a row that is its own representative heads a group. Every row learns the row its results
   will be copied from.
5. a scan of the head flags and `compact_representatives`: the heads' rows, in request order, to be searched.
6. after the search: `copy_rows` per PlanBatch field, from each group's head to the others.

Every loop is bounded: hashing by W + A, finding a representative by the length of its hash run (one compare per
row unless hashes collide), cache probes by ``probes``.

Plan cache: ``capacity`` entries in fixed arrays, open addressing with linear probing over a window of
``probes`` slots from ``hash % capacity``. An entry keeps its full key (verified on every hit) and its result
rows (one byte-row array per PlanBatch field, see `goap.planners.dedupe`). Inserts take the first empty slot of
the window, or else evict the least recently used entry of the window that was not used or written in this call;
a window with neither refuses the insert. Slots are claimed with ``atomic_max`` on a per-slot claim epoch, so on a
GPU two inserts never write one slot in the same call.
"""

from __future__ import annotations

from typing import Any

import warp as wp

wp.set_module_options({"enable_backward": False})

# Counter indices (`goap.planners.dedupe.COUNTERS` names them).
C_CALLS = wp.constant(0)
C_REQUESTS = wp.constant(1)
C_DISTINCT = wp.constant(2)
C_HITS = wp.constant(3)
C_MISSES = wp.constant(4)
C_INSERTED = wp.constant(5)
C_EVICTED = wp.constant(6)
C_REFUSED = wp.constant(7)
C_UNCACHEABLE = wp.constant(8)
N_COUNTERS = 9

NO_COST_ROW = wp.constant(wp.uint32(0xFFFFFFFF))
NO_COST_PAIR = wp.constant(wp.uint64(0xFFFFFFFFFFFFFFFF))
ALL_BITS = wp.constant(wp.uint64(0xFFFFFFFFFFFFFFFF))
ENTRY_EMPTY = wp.constant(0)
ENTRY_VALID = wp.constant(1)


@wp.struct
class Queries:
    """The inputs a query is read from; ``has_*`` = 0 means the default row (domain costs, all enabled, level 0).

    The domain's costs are not compared by value: a row without costs has the bit pattern NO_COST_ROW (a NaN,
    which no accepted cost is) for every action, so it never equals an explicit cost row.
    """

    states: wp.array2d(dtype=wp.uint64)
    goals: wp.array(dtype=wp.int32)
    cost_bits: wp.array2d(dtype=wp.uint32)
    has_costs: int
    n_actions: int
    enabled: wp.array2d(dtype=wp.uint8)
    has_enabled: int
    level: wp.array(dtype=wp.int8)
    has_level: int
    token: int


@wp.struct
class Requests:
    """Which rows are asked for: ``agents[:min(count[0], n)]`` (or rows ``0..n-1`` when ``use_agents`` is 0)."""

    agents: wp.array(dtype=wp.int32)
    use_agents: int
    count: wp.array(dtype=wp.int32)
    has_count: int
    n: int


@wp.struct
class CacheEntries:
    """The plan cache's keys and bookkeeping (results live in per-field byte rows beside it)."""

    hash: wp.array(dtype=wp.uint64)
    state: wp.array(dtype=wp.int32)  # ENTRY_EMPTY or ENTRY_VALID
    used: wp.array(dtype=wp.int32)  # epoch of the last hit or insert
    claim: wp.array(dtype=wp.int32)  # epoch of the last claim (an insert in progress or done)
    states: wp.array2d(dtype=wp.uint64)
    goal: wp.array(dtype=wp.int32)
    token: wp.array(dtype=wp.int32)
    level: wp.array(dtype=wp.int8)
    cost_bits: wp.array2d(dtype=wp.uint32)
    enabled: wp.array2d(dtype=wp.uint8)
    capacity: int
    probes: int


# --- the key -----------------------------------------------------------------------------------------------
@wp.func
def mix64(x: wp.uint64) -> wp.uint64:
    """splitmix64's finaliser: every input bit flips each output bit with probability about 1/2."""
    x = (x ^ (x >> wp.uint64(30))) * wp.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> wp.uint64(27))) * wp.uint64(0x94D049BB133111EB)
    return x ^ (x >> wp.uint64(31))


@wp.func
def absorb(h: wp.uint64, v: wp.uint64) -> wp.uint64:
    """One word into the running hash (FxHash's step: rotate, xor, multiply); `mix64` finishes it."""
    return (((h << wp.uint64(5)) | (h >> wp.uint64(59))) ^ v) * wp.uint64(0x9E3779B97F4A7C15)


@wp.func
def row_cost_bits(q: Queries, row: int, a: int) -> wp.uint32:
    if q.has_costs != 0:
        return q.cost_bits[row, a]
    return NO_COST_ROW


@wp.func
def row_enabled(q: Queries, row: int, a: int) -> wp.uint32:
    if q.has_enabled != 0:
        if q.enabled[row, a] != wp.uint8(0):
            return wp.uint32(1)
        return wp.uint32(0)
    return wp.uint32(1)


@wp.func
def row_level(q: Queries, row: int) -> wp.int8:
    if q.has_level != 0:
        return q.level[row]
    return wp.int8(0)


@wp.func
def query_hash(q: Queries, row: int) -> wp.uint64:
    """The hash of row's query: one step for goal, level and goal table, then the state words, the cost row two
    costs a step and the enabled row 64 actions a step (the multiply chain is what costs, not the loads)."""
    head = wp.uint64(wp.uint32(q.goals[row])) | (wp.uint64(wp.uint8(row_level(q, row))) << wp.uint64(32))
    h = absorb(wp.uint64(0x243F6A8885A308D3), head | (wp.uint64(wp.uint32(q.token)) << wp.uint64(40)))
    for w in range(q.states.shape[1]):
        h = absorb(h, q.states[row, w])
    A = q.n_actions
    if q.has_costs != 0:
        for j in range(A // 2):
            lo = wp.uint64(q.cost_bits[row, 2 * j])
            h = absorb(h, lo | (wp.uint64(q.cost_bits[row, 2 * j + 1]) << wp.uint64(32)))
        if A % 2 == 1:
            h = absorb(h, wp.uint64(q.cost_bits[row, A - 1]))
    else:  # what the loop above gives for a row of NO_COST_ROW
        for _j in range(A // 2):
            h = absorb(h, NO_COST_PAIR)
        if A % 2 == 1:
            h = absorb(h, wp.uint64(NO_COST_ROW))
    bits = wp.uint64(0)
    if q.has_enabled != 0:
        for a in range(A):
            if q.enabled[row, a] != wp.uint8(0):
                bits = bits | (wp.uint64(1) << wp.uint64(a % 64))
            if a % 64 == 63:
                h = absorb(h, bits)
                bits = wp.uint64(0)
    else:  # what the loop above gives for an all-true row
        for _b in range(A // 64):
            h = absorb(h, ALL_BITS)
        if A % 64 != 0:
            bits = (wp.uint64(1) << wp.uint64(A % 64)) - wp.uint64(1)
    return mix64(absorb(h, bits))


@wp.func
def same_query(q: Queries, ra: int, rb: int) -> bool:
    """Whether rows ra and rb ask the same query (every key element compared exactly)."""
    if ra == rb:
        return True
    if q.goals[ra] != q.goals[rb] or row_level(q, ra) != row_level(q, rb):
        return False
    for w in range(q.states.shape[1]):
        if q.states[ra, w] != q.states[rb, w]:
            return False
    if q.has_costs != 0:
        for a in range(q.n_actions):
            if q.cost_bits[ra, a] != q.cost_bits[rb, a]:
                return False
    if q.has_enabled != 0:
        for a in range(q.n_actions):
            if (q.enabled[ra, a] != wp.uint8(0)) != (q.enabled[rb, a] != wp.uint8(0)):
                return False
    return True


@wp.func
def entry_matches(c: CacheEntries, s: int, q: Queries, row: int) -> bool:
    """Whether cache entry s holds exactly row's query."""
    if c.goal[s] != q.goals[row] or c.token[s] != q.token or c.level[s] != row_level(q, row):
        return False
    for w in range(q.states.shape[1]):
        if c.states[s, w] != q.states[row, w]:
            return False
    for a in range(q.n_actions):
        if c.cost_bits[s, a] != row_cost_bits(q, row, a) or wp.uint32(c.enabled[s, a]) != row_enabled(q, row, a):
            return False
    return True


@wp.func
def active_count(r: Requests) -> int:
    n = r.n
    if r.has_count != 0:
        n = wp.max(0, wp.min(r.count[0], r.n))
    return n


@wp.func
def request_row(r: Requests, i: int) -> int:
    if r.use_agents != 0:
        return r.agents[i]
    return i


# --- grouping ----------------------------------------------------------------------------------------------
@wp.kernel
def hash_queries(
    q: Queries,
    r: Requests,
    first: int,
    hash_mask: wp.uint64,
    keys: wp.array(dtype=wp.uint64),
    order: wp.array(dtype=wp.int32),
    n_reps: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int64),
):
    i = wp.tid() + first
    n = active_count(r)
    if i == 0:
        n_reps[0] = 0
        counters[C_CALLS] = counters[C_CALLS] + wp.int64(1)
        counters[C_REQUESTS] = counters[C_REQUESTS] + wp.int64(n)
    order[i] = i
    if i < n:
        keys[i] = query_hash(q, request_row(r, i)) & hash_mask
    else:
        keys[i] = hash_mask


@wp.kernel
def mark_hash_runs(r: Requests, keys: wp.array(dtype=wp.uint64), run_flag: wp.array(dtype=wp.int32)):
    """Flag the first position of each run of equal hashes (positions past the count are left out)."""
    p = wp.tid()
    flag = int(0)
    if p < active_count(r):
        if p == 0:
            flag = 1
        elif keys[p] != keys[p - 1]:
            flag = 1
    run_flag[p] = flag


@wp.kernel
def record_run_starts(
    run_flag: wp.array(dtype=wp.int32), run_id: wp.array(dtype=wp.int32), run_start: wp.array(dtype=wp.int32)
):
    p = wp.tid()
    if run_flag[p] != 0:
        run_start[run_id[p] - 1] = p


@wp.kernel
def spread_run_starts(
    r: Requests, run_id: wp.array(dtype=wp.int32), run_start: wp.array(dtype=wp.int32),
    run_first: wp.array(dtype=wp.int32),
):
    """The first position of each position's hash run, read in sequence here rather than at random later."""
    p = wp.tid()
    if p < active_count(r):
        run_first[p] = run_start[run_id[p] - 1]


@wp.kernel
def invert_order(r: Requests, order: wp.array(dtype=wp.int32), position: wp.array(dtype=wp.int32)):
    p = wp.tid()
    if p < active_count(r):
        position[order[p]] = p


@wp.kernel
def find_representatives(
    q: Queries,
    r: Requests,
    first: int,
    order: wp.array(dtype=wp.int32),
    position: wp.array(dtype=wp.int32),
    run_first: wp.array(dtype=wp.int32),
    head: wp.array(dtype=wp.int32),
    src_row: wp.array(dtype=wp.int32),
    dst_row: wp.array(dtype=wp.int32),
):
    """For request i (in request order, so its own row is read in sequence): the first row of its hash run with
    an equal query is its representative, where its results will come from; a row that is its own heads a group."""
    i = wp.tid() + first
    if i >= active_count(r):
        head[i] = 0
        src_row[i] = -1
        dst_row[i] = -1
        return
    p = position[i]
    row = request_row(r, i)
    rep = p
    for k in range(run_first[p], p):
        if same_query(q, request_row(r, order[k]), row):
            rep = k
            break
    if rep == p:
        head[i] = 1
    else:
        head[i] = 0
    src_row[i] = request_row(r, order[rep])
    dst_row[i] = row


@wp.kernel
def compact_representatives(
    r: Requests,
    keys: wp.array(dtype=wp.uint64),
    position: wp.array(dtype=wp.int32),
    head: wp.array(dtype=wp.int32),
    slot: wp.array(dtype=wp.int32),
    reps: wp.array(dtype=wp.int32),
    rep_key: wp.array(dtype=wp.uint64),
    n_reps: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int64),
):
    """The groups' head rows in request order (``slot``: the exclusive scan of ``head``), with their hashes, and
    their number. Request order keeps the planner's memory access as it would be without grouping."""
    i = wp.tid()
    n = active_count(r)
    if i >= n:
        return
    if head[i] != 0:
        reps[slot[i]] = request_row(r, i)
        rep_key[slot[i]] = keys[position[i]]
    if i == n - 1:
        total = slot[i] + head[i]
        n_reps[0] = total
        counters[C_DISTINCT] = counters[C_DISTINCT] + wp.int64(total)


@wp.kernel
def copy_rows(
    first: int, src_row: wp.array(dtype=wp.int32), dst_row: wp.array(dtype=wp.int32), field: wp.array2d(dtype=Any)
):
    """field[dst_row[i]] = field[src_row[i]] (a PlanBatch field seen as rows of words)."""
    i = wp.tid() + first
    s = src_row[i]
    d = dst_row[i]
    if s != d:
        for j in range(field.shape[1]):
            field[d, j] = field[s, j]


# --- plan cache ----------------------------------------------------------------------------------------------
@wp.kernel
def advance_epoch(epoch: wp.array(dtype=wp.int32)):
    epoch[0] = epoch[0] + 1


@wp.kernel
def cache_lookup(
    q: Queries,
    c: CacheEntries,
    reps: wp.array(dtype=wp.int32),
    rep_key: wp.array(dtype=wp.uint64),
    n_reps: wp.array(dtype=wp.int32),
    epoch: wp.array(dtype=wp.int32),
    hit_slot: wp.array(dtype=wp.int32),
    miss_flag: wp.array(dtype=wp.int32),
    n_miss: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int64),
):
    i = wp.tid()
    if i == 0:
        n_miss[0] = 0
    hit_slot[i] = -1
    miss_flag[i] = 0
    if i >= n_reps[0]:
        return
    row = reps[i]
    h = rep_key[i]
    home = int(h % wp.uint64(c.capacity))
    found = int(-1)
    for j in range(c.probes):
        s = (home + j) % c.capacity
        if c.state[s] == ENTRY_VALID and c.hash[s] == h:
            if entry_matches(c, s, q, row):
                found = s
                break
    if found >= 0:
        hit_slot[i] = found
        c.used[found] = epoch[0]
        wp.atomic_add(counters, C_HITS, wp.int64(1))
    else:
        miss_flag[i] = 1
        wp.atomic_add(counters, C_MISSES, wp.int64(1))


@wp.kernel
def compact_misses(
    reps: wp.array(dtype=wp.int32),
    rep_key: wp.array(dtype=wp.uint64),
    n_reps: wp.array(dtype=wp.int32),
    miss_flag: wp.array(dtype=wp.int32),
    miss_pos: wp.array(dtype=wp.int32),
    q: Queries,
    misses: wp.array(dtype=wp.int32),
    miss_key: wp.array(dtype=wp.uint64),
    miss_level: wp.array(dtype=wp.int32),
    n_miss: wp.array(dtype=wp.int32),
):
    """The rows to search, with their keys and their levels as they are before the search writes ``level``."""
    i = wp.tid()
    n = n_reps[0]
    if i >= n:
        return
    if miss_flag[i] != 0:
        misses[miss_pos[i]] = reps[i]
        miss_key[miss_pos[i]] = rep_key[i]
        miss_level[miss_pos[i]] = int(row_level(q, reps[i]))
    if i == n - 1:
        n_miss[0] = miss_pos[i] + miss_flag[i]


@wp.kernel
def fetch_cached(
    reps: wp.array(dtype=wp.int32),
    hit_slot: wp.array(dtype=wp.int32),
    cached: wp.array2d(dtype=Any),
    field: wp.array2d(dtype=Any),
):
    """Hit rows of one PlanBatch field from the cache (``hit_slot`` is -1 for misses and unused threads)."""
    i = wp.tid()
    s = hit_slot[i]
    if s >= 0:
        row = reps[i]
        for j in range(field.shape[1]):
            field[row, j] = cached[s, j]


@wp.kernel
def cache_insert(
    q: Queries,
    c: CacheEntries,
    misses: wp.array(dtype=wp.int32),
    miss_key: wp.array(dtype=wp.uint64),
    miss_level: wp.array(dtype=wp.int32),
    n_miss: wp.array(dtype=wp.int32),
    status: wp.array(dtype=wp.int8),
    cacheable: int,
    epoch: wp.array(dtype=wp.int32),
    ins_slot: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int64),
):
    """Store the result of planned row misses[i] when its status is in the ``cacheable`` bit set."""
    i = wp.tid()
    ins_slot[i] = -1
    if i >= n_miss[0]:
        return
    row = misses[i]
    st = int(status[row])
    if st < 0 or st > 30 or ((cacheable >> st) & 1) == 0:
        wp.atomic_add(counters, C_UNCACHEABLE, wp.int64(1))
        return
    e = epoch[0]
    h = miss_key[i]
    home = int(h % wp.uint64(c.capacity))
    chosen = int(-1)
    for j in range(c.probes):
        s = (home + j) % c.capacity
        if c.state[s] == ENTRY_EMPTY:
            if wp.atomic_max(c.claim, s, e) < e:
                chosen = s
                break
    if chosen < 0:
        best = int(-1)
        best_used = int(2147483647)
        for j in range(c.probes):
            s = (home + j) % c.capacity
            if c.claim[s] < e and c.used[s] < e and c.used[s] < best_used:
                best = s
                best_used = c.used[s]
        if best >= 0:
            if wp.atomic_max(c.claim, best, e) < e:
                chosen = best
                wp.atomic_add(counters, C_EVICTED, wp.int64(1))
    if chosen < 0:
        wp.atomic_add(counters, C_REFUSED, wp.int64(1))
        return
    c.hash[chosen] = h
    c.goal[chosen] = q.goals[row]
    c.token[chosen] = q.token
    c.level[chosen] = wp.int8(miss_level[i])
    for w in range(q.states.shape[1]):
        c.states[chosen, w] = q.states[row, w]
    for a in range(q.n_actions):
        c.cost_bits[chosen, a] = row_cost_bits(q, row, a)
        c.enabled[chosen, a] = wp.uint8(row_enabled(q, row, a))
    c.used[chosen] = e
    c.state[chosen] = ENTRY_VALID
    ins_slot[i] = chosen
    wp.atomic_add(counters, C_INSERTED, wp.int64(1))


@wp.kernel
def store_cached(
    misses: wp.array(dtype=wp.int32),
    ins_slot: wp.array(dtype=wp.int32),
    field: wp.array2d(dtype=Any),
    cached: wp.array2d(dtype=Any),
):
    """The inserted rows of one PlanBatch field into the cache (``ins_slot`` is -1 where nothing was stored)."""
    i = wp.tid()
    s = ins_slot[i]
    if s >= 0:
        row = misses[i]
        for j in range(field.shape[1]):
            cached[s, j] = field[row, j]


# Row copies see every PlanBatch field as rows of the widest unsigned word dividing its row (see
# `goap.planners.dedupe`), so these four overloads serve any field dtype; declared here so the module is built once.
#: A 32-byte word (four uint64) for wide rows such as ``actions``: a quarter of the loop steps of uint64 copies.
WIDE_WORD = wp.types.vector(length=4, dtype=wp.uint64)
WORDS = (wp.uint8, wp.uint16, wp.uint32, wp.uint64, WIDE_WORD)
for _t in WORDS:
    wp.overload(copy_rows, {"field": wp.array2d(dtype=_t)})
    wp.overload(fetch_cached, {"cached": wp.array2d(dtype=_t), "field": wp.array2d(dtype=_t)})
    wp.overload(store_cached, {"field": wp.array2d(dtype=_t), "cached": wp.array2d(dtype=_t)})
del _t

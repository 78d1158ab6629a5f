"""Kernels that find the distinct planning queries of a call, and the plan cache's probes and inserts.

A query is what a search's result depends on: the agent's packed state words, its goal index (and the goal
table it indexes, as a small token), its action-cost row (compared as float32 bit patterns), its enabled row, its
agent type and the node-pool level its search starts at (``PlanBatch.level``, read by the planner). Missing cost
rows mean the domain's costs, missing enabled rows mean all enabled, missing types mean type 0, so an explicit row
equal to the default is the same query.

Grouping (`goap.planners.dedupe.DedupingPlanner`), by hash-table inserts rather than a sort:

1. `start_call` (one thread): advance the epochs, zero the head counts, count the call.
2. `group_queries`: each request's 64-bit query hash (FxHash steps in four independent lanes, splitmix64's
   finaliser; masked to ``hash_mask``, a test hook: fewer bits force collisions), then a probe of an open-addressing
   table of claimed slots. A slot whose request has an equal hash *and* an equal query (every key element compared,
   never the hash alone) gives the group; an empty slot is claimed and the request heads a new group. Slots hold
   ``epoch << 32 | request``, so a slot of an earlier call is empty and the table is never cleared.
   On the CPU each worker thread runs one span of requests in request order with its own table (Warp's CPU atomics
   are plain reads and writes, so no table is shared); on a GPU one thread per request shares one table, claims by
   compare-and-swap, and `hash_queries` computes the keys first.
3. `join_groups` (CPU, several spans; one thread): the spans' heads into one table for the call, so equal queries
   of different spans are one group; or `list_heads` (one table already): the heads' rows and keys. These rows
   are searched, in request order on the CPU.
4. after the search: `copy_results`, one pass over the requests copying every standard PlanBatch field from the
   group's head (`copy_rows` for fields a PlanBatch subclass adds).

Every loop is bounded: hashing by W + A, a probe sequence by the table's size (one compare per request unless
hashes collide), the join by the number of heads, cache probes by ``probes``.

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

from goap.codes import DEDUPE_COUNTERS
from goap.kernels.codes import (
    DC_CALLS,
    DC_DISTINCT,
    DC_EVICTED,
    DC_HITS,
    DC_INSERTED,
    DC_MISSES,
    DC_REFUSED,
    DC_REQUESTS,
    DC_UNCACHEABLE,
)

wp.set_module_options({"enable_backward": False})

#: The counter slots are the table's (`goap.codes.DEDUPE_COUNTERS`, Warp constants DC_* in `goap.kernels.codes`).
N_COUNTERS = len(DEDUPE_COUNTERS)
#: The group tables' tag before it could repeat (int32 epochs, compared as uint32 tags): `start_call` then empties
#: the tables and counts again from 1.
EPOCH_LIMIT = wp.constant(2147483647)

NO_COST_ROW = wp.constant(wp.uint32(0xFFFFFFFF))
NO_COST_PAIR = wp.constant(wp.uint64(0xFFFFFFFFFFFFFFFF))
ALL_BITS = wp.constant(wp.uint64(0xFFFFFFFFFFFFFFFF))
HIGH_WORD = wp.constant(wp.uint64(0xFFFFFFFF00000000))
LOW_WORD = wp.constant(wp.uint64(0x00000000FFFFFFFF))
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
    cost_words: wp.array2d(dtype=wp.uint64)  # the same rows as 64-bit words (costs 2j, 2j + 1), when they line up
    has_cost_words: int
    n_actions: int
    enabled: wp.array2d(dtype=wp.uint8)
    has_enabled: int
    level: wp.array(dtype=wp.int8)
    has_level: int
    types: wp.array(dtype=wp.int32)
    has_types: int
    type_class: wp.array(dtype=wp.int32)  # per type, the lowest type with the same actions and cost multipliers
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
    agent_type: wp.array(dtype=wp.int32)
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
def row_type(q: Queries, row: int) -> wp.int32:
    """The row's type as the planners see it: its class (types that allow the same actions at the same cost
    multipliers plan alike, so their agents share searches); -1 for a type out of range (planned NO_PLAN)."""
    if q.has_types != 0:
        t = q.types[row]
        if t < 0 or t >= q.type_class.shape[0]:
            return wp.int32(-1)
        return q.type_class[t]
    return wp.int32(0)


@wp.func
def cost_pair(q: Queries, row: int, j: int) -> wp.uint64:
    """Costs 2j and 2j + 1 of row's cost row as one word of their bit patterns (the same value either way)."""
    if q.has_cost_words != 0:
        return q.cost_words[row, j]
    return wp.uint64(q.cost_bits[row, 2 * j]) | (wp.uint64(q.cost_bits[row, 2 * j + 1]) << wp.uint64(32))


@wp.func
def rotl(x: wp.uint64, k: int) -> wp.uint64:
    return (x << wp.uint64(k)) | (x >> wp.uint64(64 - k))


@wp.func
def query_hash(q: Queries, row: int) -> wp.uint64:
    """The hash of row's query, in four lanes that run side by side (a chain of multiplies is what costs, and the
    four are independent): goal, level and goal table, the state words, the cost row two costs a word and the
    enabled row 64 actions a word, word k of the cost row into lane k % 4. A row without costs hashes a marker
    instead (it never equals an explicit row anyway); a row without an enabled row hashes what an all-true row
    does (they are the same query)."""
    head = wp.uint64(wp.uint32(q.goals[row])) | (wp.uint64(wp.uint8(row_level(q, row))) << wp.uint64(32))
    la = absorb(wp.uint64(0x243F6A8885A308D3), head | (wp.uint64(wp.uint32(q.token)) << wp.uint64(40)))
    lb = absorb(wp.uint64(0x13198A2E03707344), wp.uint64(wp.uint32(row_type(q, row))))
    lc = wp.uint64(0xA4093822299F31D0)
    ld = wp.uint64(0x082EFA98EC4E6C89)
    for w in range(q.states.shape[1]):
        la = absorb(la, q.states[row, w])
    A = q.n_actions
    if q.has_costs != 0:
        pairs = A // 2
        quads = pairs // 4
        for k in range(quads):
            lb = absorb(lb, cost_pair(q, row, 4 * k))
            lc = absorb(lc, cost_pair(q, row, 4 * k + 1))
            ld = absorb(ld, cost_pair(q, row, 4 * k + 2))
            la = absorb(la, cost_pair(q, row, 4 * k + 3))
        rest = pairs - 4 * quads
        if rest > 0:
            lb = absorb(lb, cost_pair(q, row, 4 * quads))
        if rest > 1:
            lc = absorb(lc, cost_pair(q, row, 4 * quads + 1))
        if rest > 2:
            ld = absorb(ld, cost_pair(q, row, 4 * quads + 2))
        if A % 2 == 1:
            la = absorb(la, wp.uint64(q.cost_bits[row, A - 1]))
    else:
        lb = absorb(lb, NO_COST_PAIR)
    bits = wp.uint64(0)
    if q.has_enabled != 0:
        for a in range(A):
            if q.enabled[row, a] != wp.uint8(0):
                bits = bits | (wp.uint64(1) << wp.uint64(a % 64))
            if a % 64 == 63:
                ld = absorb(ld, bits)
                bits = wp.uint64(0)
    else:  # what the loop above gives for an all-true row
        for _b in range(A // 64):
            ld = absorb(ld, ALL_BITS)
        if A % 64 != 0:
            bits = (wp.uint64(1) << wp.uint64(A % 64)) - wp.uint64(1)
    lc = absorb(lc, bits)
    return mix64(la ^ rotl(lb, 16) ^ rotl(lc, 32) ^ rotl(ld, 48))


@wp.func
def same_costs(q: Queries, ra: int, rb: int) -> bool:
    """Whether two rows' cost rows have the same bit patterns: 64-bit words (two costs) four at a time, no branch
    inside the loops."""
    A = q.n_actions
    pairs = A // 2
    diff = wp.uint64(0)
    if q.has_cost_words != 0:
        quads = pairs // 4
        for k in range(quads):
            j = 4 * k
            d0 = q.cost_words[ra, j] ^ q.cost_words[rb, j]
            d1 = q.cost_words[ra, j + 1] ^ q.cost_words[rb, j + 1]
            d2 = q.cost_words[ra, j + 2] ^ q.cost_words[rb, j + 2]
            d3 = q.cost_words[ra, j + 3] ^ q.cost_words[rb, j + 3]
            diff = diff | d0 | d1 | d2 | d3
        for j in range(4 * quads, pairs):
            diff = diff | (q.cost_words[ra, j] ^ q.cost_words[rb, j])
    else:
        for j in range(pairs):
            diff = diff | (cost_pair(q, ra, j) ^ cost_pair(q, rb, j))
    if A % 2 == 1:
        diff = diff | wp.uint64(q.cost_bits[ra, A - 1] ^ q.cost_bits[rb, A - 1])
    return diff == wp.uint64(0)


@wp.func
def same_query(q: Queries, ra: int, rb: int) -> bool:
    """Whether rows ra and rb ask the same query (every key element compared exactly)."""
    if ra == rb:
        return True
    if q.goals[ra] != q.goals[rb] or row_level(q, ra) != row_level(q, rb) or row_type(q, ra) != row_type(q, rb):
        return False
    for w in range(q.states.shape[1]):
        if q.states[ra, w] != q.states[rb, w]:
            return False
    if q.has_costs != 0:
        if not same_costs(q, ra, rb):
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
    if c.agent_type[s] != row_type(q, row):
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
@wp.func
def home_slot(h: wp.uint64, bits: int) -> int:
    """A query's first slot in a table of 2**bits slots: the top bits of a multiplicative hash of ``h``, so that
    every bit of the key hash (also the few a ``hash_mask`` leaves) moves it."""
    return int((h * wp.uint64(0x9E3779B97F4A7C15)) >> wp.uint64(64 - bits))


@wp.func
def span_end(r: Requests, lo: int, per: int) -> int:
    return wp.min(lo + per, active_count(r))


@wp.kernel
def start_call(
    r: Requests, epoch: wp.array(dtype=wp.int32), n_heads: wp.array(dtype=wp.int32), n_miss: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int64), table: wp.array(dtype=wp.uint64), join_table: wp.array(dtype=wp.uint64),
):
    """One thread: advance the epochs (the cache's clock, the group table's tag), zero the head and miss counts,
    count the call and its requests. Once in 2**31 calls the tag would come round to values slots may still hold:
    the group tables are emptied then (on the device, so a captured call needs no host counter)."""
    epoch[0] = epoch[0] + 1
    tag = epoch[1]
    if tag >= EPOCH_LIMIT:
        for k in range(table.shape[0]):
            table[k] = wp.uint64(0)
        for k in range(join_table.shape[0]):
            join_table[k] = wp.uint64(0)
        tag = 0
    epoch[1] = tag + 1
    n_miss[0] = 0
    for p in range(n_heads.shape[0]):
        n_heads[p] = 0
    counters[DC_CALLS] = counters[DC_CALLS] + wp.int64(1)
    counters[DC_REQUESTS] = counters[DC_REQUESTS] + wp.int64(active_count(r))


@wp.kernel
def hash_queries(
    q: Queries, r: Requests, first: int, per: int, hash_mask: wp.uint64, keys: wp.array(dtype=wp.uint64)
):
    """keys[i] = the hash of request i's query, for the span of requests of thread g (before `group_queries` on a
    GPU, where one thread may compare with another's key; on the CPU `group_queries` hashes its own span)."""
    lo = (wp.tid() + first) * per
    for i in range(lo, span_end(r, lo, per)):
        keys[i] = query_hash(q, request_row(r, i)) & hash_mask


@wp.func
def find_or_claim(
    q: Queries, r: Requests, i: int, h: wp.uint64, keys: wp.array(dtype=wp.uint64), table: wp.array(dtype=wp.uint64),
    base: int, bits: int, tag: wp.uint64,
) -> int:
    """The request whose query equals request i's and that claimed a slot of the table at ``base`` (``2**bits``
    slots) first, or i itself when it claims an empty slot; -1 when the probe sequence is full. A slot holds
    ``tag | request`` (the call's epoch in the high word): a slot of another epoch is empty."""
    size = 1 << bits
    mine = tag | wp.uint64(i)
    pos = home_slot(h, bits)
    row = request_row(r, i)
    for _probe in range(size):
        cur = table[base + pos]
        if (cur & HIGH_WORD) != tag:
            prev = wp.atomic_cas(table, base + pos, cur, mine)
            if prev == cur:
                return i
            cur = prev  # claimed meanwhile by another thread (a GPU): compare with that request
        j = int(cur & LOW_WORD)
        if keys[j] == h:
            if same_query(q, request_row(r, j), row):
                return j
        pos = (pos + 1) & (size - 1)
    return -1


@wp.kernel
def group_queries(
    q: Queries,
    r: Requests,
    first: int,
    per: int,
    shared: int,
    hashed: int,
    table_bits: int,
    hash_mask: wp.uint64,
    keys: wp.array(dtype=wp.uint64),
    epoch: wp.array(dtype=wp.int32),
    table: wp.array(dtype=wp.uint64),
    local: wp.array(dtype=wp.int32),
    heads: wp.array(dtype=wp.int32),
    n_heads: wp.array(dtype=wp.int32),
):
    """Each request of thread g's span finds the first request of the span (``shared`` 0) or of the call
    (``shared`` 1) with an equal query, in a hash table of claimed slots: an equal hash, then every key element
    compared, so a collision never merges two queries. ``local[i]`` is that request; a request that finds none
    heads a group and is listed in ``heads``.

    On the CPU each worker is one thread with a span of requests, its own table (``2**table_bits`` slots from
    ``g << table_bits``) and its own part of ``heads`` (from its first request; the count in ``n_heads[g]``), so
    nothing is shared between threads (Warp's CPU atomics are plain reads and writes); it hashes its requests as
    it goes (``hashed`` 0), in request order, so a group's head is its first request in the span. `join_groups`
    then merges the spans' groups. On a GPU every request is a thread, the table is shared and claimed by
    compare-and-swap, heads are appended with an atomic count and the keys were computed by `hash_queries`.

    A table with no free slot along a probe sequence (only when hashes pile up) leaves the request a group of its
    own, searched alone: exact still.
    """
    g = wp.tid() + first
    lo = g * per
    hi = span_end(r, lo, per)
    base = int(0)
    if shared == 0:
        base = g << table_bits
    tag = wp.uint64(wp.uint32(epoch[1])) << wp.uint64(32)
    c = int(0)
    for i in range(lo, hi):
        h = wp.uint64(0)
        if hashed != 0:
            h = keys[i]
        else:
            h = query_hash(q, request_row(r, i)) & hash_mask
            keys[i] = h
        rep = find_or_claim(q, r, i, h, keys, table, base, table_bits, tag)
        if rep < 0:
            rep = i
        if rep == i:
            if shared != 0:
                heads[wp.atomic_add(n_heads, 0, 1)] = i
            else:
                heads[lo + c] = i
                c += 1
        local[i] = rep
    if shared == 0 and lo < hi:
        n_heads[g] = c


@wp.kernel
def list_heads(
    r: Requests,
    first: int,
    per: int,
    keys: wp.array(dtype=wp.uint64),
    heads: wp.array(dtype=wp.int32),
    n_heads: wp.array(dtype=wp.int32),
    reps: wp.array(dtype=wp.int32),
    rep_key: wp.array(dtype=wp.uint64),
    n_reps: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int64),
):
    """One table for the whole call (a GPU, or one CPU span): its heads are the groups; their rows and keys."""
    g = wp.tid() + first
    m = n_heads[0]
    lo = g * per
    for c in range(lo, wp.min(lo + per, m)):
        reps[c] = request_row(r, heads[c])
        rep_key[c] = keys[heads[c]]
    if g == 0:
        n_reps[0] = m
        counters[DC_DISTINCT] = counters[DC_DISTINCT] + wp.int64(m)


@wp.kernel
def join_groups(
    q: Queries,
    r: Requests,
    spans: int,
    per: int,
    table_bits: int,
    keys: wp.array(dtype=wp.uint64),
    epoch: wp.array(dtype=wp.int32),
    table: wp.array(dtype=wp.uint64),
    heads: wp.array(dtype=wp.int32),
    n_heads: wp.array(dtype=wp.int32),
    rep_of: wp.array(dtype=wp.int32),
    reps: wp.array(dtype=wp.int32),
    rep_key: wp.array(dtype=wp.uint64),
    n_reps: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int64),
):
    """One thread: the spans' heads, span by span, into one table for the call (the same probes and comparisons as
    `group_queries`): ``rep_of[head]`` is the first request of the call with that query, and the groups' rows and
    keys are listed in request order. Only heads are visited: a few per distinct query."""
    tag = wp.uint64(wp.uint32(epoch[1])) << wp.uint64(32)
    m = int(0)
    for g in range(spans):
        lo = g * per
        if lo < active_count(r):
            for c in range(n_heads[g]):
                j = heads[lo + c]
                rep = find_or_claim(q, r, j, keys[j], keys, table, 0, table_bits, tag)
                if rep < 0:
                    rep = j
                if rep == j:
                    reps[m] = request_row(r, j)
                    rep_key[m] = keys[j]
                    m += 1
                rep_of[j] = rep
    n_reps[0] = m
    counters[DC_DISTINCT] = counters[DC_DISTINCT] + wp.int64(m)


@wp.func
def source_row(r: Requests, i: int, local: wp.array(dtype=wp.int32), rep_of: wp.array(dtype=wp.int32),
               joined: int) -> int:
    """The row request i's results come from: its group's head's (through the call's table when spans were
    joined)."""
    j = local[i]
    if joined != 0:
        j = rep_of[j]
    return request_row(r, j)


@wp.struct
class ResultFields:
    """The fields every PlanBatch has, with their dtypes (``actions`` is passed beside it, as rows of words)."""

    status: wp.array(dtype=wp.int8)
    cost: wp.array(dtype=wp.float64)
    length: wp.array(dtype=wp.int32)
    expanded: wp.array(dtype=wp.int32)
    level: wp.array(dtype=wp.int8)


@wp.func
def copy_result(
    src: ResultFields, src_actions: wp.array2d(dtype=Any), s: int,
    dst: ResultFields, dst_actions: wp.array2d(dtype=Any), d: int,
):
    """Row s of one set of result fields (and its plan row) into row d of another (or the same) set."""
    dst.status[d] = src.status[s]
    dst.cost[d] = src.cost[s]
    dst.length[d] = src.length[s]
    dst.expanded[d] = src.expanded[s]
    dst.level[d] = src.level[s]
    for j in range(dst_actions.shape[1]):
        dst_actions[d, j] = src_actions[s, j]


@wp.kernel
def copy_results(
    r: Requests,
    first: int,
    per: int,
    local: wp.array(dtype=wp.int32),
    rep_of: wp.array(dtype=wp.int32),
    joined: int,
    res: ResultFields,
    actions: wp.array2d(dtype=Any),
):
    """Every request's results from its group's head: status, cost, length, expanded, level and the plan row."""
    lo = (wp.tid() + first) * per
    for i in range(lo, span_end(r, lo, per)):
        s = source_row(r, i, local, rep_of, joined)
        d = request_row(r, i)
        if s != d:
            copy_result(res, actions, s, res, actions, d)


@wp.kernel
def copy_rows(
    r: Requests,
    first: int,
    per: int,
    local: wp.array(dtype=wp.int32),
    rep_of: wp.array(dtype=wp.int32),
    joined: int,
    field: wp.array2d(dtype=Any),
):
    """field[row] = field[its head's row] for each request (any PlanBatch field, seen as rows of words)."""
    lo = (wp.tid() + first) * per
    for i in range(lo, span_end(r, lo, per)):
        s = source_row(r, i, local, rep_of, joined)
        d = request_row(r, i)
        if s != d:
            for j in range(field.shape[1]):
                field[d, j] = field[s, j]


# --- plan cache ----------------------------------------------------------------------------------------------
@wp.kernel
def cache_lookup(
    q: Queries,
    c: CacheEntries,
    reps: wp.array(dtype=wp.int32),
    rep_key: wp.array(dtype=wp.uint64),
    n_reps: wp.array(dtype=wp.int32),
    epoch: wp.array(dtype=wp.int32),
    hit_slot: wp.array(dtype=wp.int32),
    misses: wp.array(dtype=wp.int32),
    miss_key: wp.array(dtype=wp.uint64),
    miss_level: wp.array(dtype=wp.int32),
    n_miss: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int64),
):
    """Each distinct query's cache entry (``hit_slot``), or else an append to the rows to search, with their keys
    and their levels as they are before the search writes ``level`` (``n_miss`` was zeroed by `start_call`; on
    the CPU the appends keep the order of ``reps``)."""
    i = wp.tid()
    hit_slot[i] = -1
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
        wp.atomic_add(counters, DC_HITS, wp.int64(1))
    else:
        pos = wp.atomic_add(n_miss, 0, 1)
        misses[pos] = row
        miss_key[pos] = h
        miss_level[pos] = int(row_level(q, row))
        wp.atomic_add(counters, DC_MISSES, wp.int64(1))


@wp.kernel
def fetch_results(
    reps: wp.array(dtype=wp.int32),
    hit_slot: wp.array(dtype=wp.int32),
    cache: ResultFields,
    cache_actions: wp.array2d(dtype=Any),
    res: ResultFields,
    actions: wp.array2d(dtype=Any),
):
    """The hit rows' standard fields from the cache, in one pass (``hit_slot`` is -1 for misses)."""
    i = wp.tid()
    s = hit_slot[i]
    if s >= 0:
        copy_result(cache, cache_actions, s, res, actions, reps[i])


@wp.kernel
def store_results(
    misses: wp.array(dtype=wp.int32),
    ins_slot: wp.array(dtype=wp.int32),
    res: ResultFields,
    actions: wp.array2d(dtype=Any),
    cache: ResultFields,
    cache_actions: wp.array2d(dtype=Any),
):
    """The inserted rows' standard fields into the cache, in one pass (``ins_slot`` is -1 where nothing was stored)."""
    i = wp.tid()
    s = ins_slot[i]
    if s >= 0:
        copy_result(res, actions, misses[i], cache, cache_actions, s)


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
        wp.atomic_add(counters, DC_UNCACHEABLE, wp.int64(1))
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
                wp.atomic_add(counters, DC_EVICTED, wp.int64(1))
    if chosen < 0:
        wp.atomic_add(counters, DC_REFUSED, wp.int64(1))
        return
    c.hash[chosen] = h
    c.goal[chosen] = q.goals[row]
    c.token[chosen] = q.token
    c.level[chosen] = wp.int8(miss_level[i])
    c.agent_type[chosen] = row_type(q, row)
    for w in range(q.states.shape[1]):
        c.states[chosen, w] = q.states[row, w]
    for a in range(q.n_actions):
        c.cost_bits[chosen, a] = row_cost_bits(q, row, a)
        c.enabled[chosen, a] = wp.uint8(row_enabled(q, row, a))
    c.used[chosen] = e
    c.state[chosen] = ENTRY_VALID
    ins_slot[i] = chosen
    wp.atomic_add(counters, DC_INSERTED, wp.int64(1))


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
# `goap.planners.dedupe`), so these overloads serve any field dtype; declared here so the module is built once.
#: A 32-byte word (four uint64) for wide rows such as ``actions``: a quarter of the loop steps of uint64 copies.
WIDE_WORD = wp.types.vector(length=4, dtype=wp.uint64)
WORDS = (wp.uint8, wp.uint16, wp.uint32, wp.uint64, WIDE_WORD)
#: The concrete overloads by word type, launched directly (a generic kernel infers its types on every launch).
COPY_ROWS: dict[Any, Any] = {}
COPY_RESULTS: dict[Any, Any] = {}
FETCH_CACHED: dict[Any, Any] = {}
STORE_CACHED: dict[Any, Any] = {}
FETCH_RESULTS: dict[Any, Any] = {}
STORE_RESULTS: dict[Any, Any] = {}
for _t in WORDS:
    _rows = wp.array2d(dtype=_t)
    COPY_ROWS[_t] = wp.overload(copy_rows, {"field": _rows})
    COPY_RESULTS[_t] = wp.overload(copy_results, {"actions": _rows})
    FETCH_CACHED[_t] = wp.overload(fetch_cached, {"cached": _rows, "field": _rows})
    STORE_CACHED[_t] = wp.overload(store_cached, {"field": _rows, "cached": _rows})
    FETCH_RESULTS[_t] = wp.overload(fetch_results, {"cache_actions": _rows, "actions": _rows})
    STORE_RESULTS[_t] = wp.overload(store_results, {"actions": _rows, "cache_actions": _rows})
del _t, _rows

"""A `UtilityModel` exported for inference: the selector as one Warp kernel on the brain's device.

Why: the torch path pays about thirty small torch operations a tick (feature unpacking, three layers, decoding,
the score, the gathers and the scatter), each with its own dispatch cost, for a few dozen rows; at 2,000 village
agents that is more than the tick's 10% budget. Here one kernel does it all: in a brain it tests each agent for
being due this tick (`goap.kernels.tick.scoring_due`, the rule the row scorer's compacted list follows: tested in
place, the list, its scan and its count cost more than the test at 2,000 agents) and passes over the others; given a
list (``rows``, ``count``), it scores the agents listed. On the CPU one thread takes a whole span of agents (a Warp
CPU thread sets up the kernel's arguments, dozens of arrays, before it starts: once a span, not once an agent); on
a GPU, one thread an agent. For each agent scored:

1. the state part of the first layer straight from the packed words (``W_s x + b``: a row of weights per bool or
   int fact, scaled as in `goap.learn.features`, and one per enum fact's value);
2. the goals the agent's type may pick, in blocks of `goal_block` side by side: the goals' columns of the first
   layer, the hidden layers (ReLU) and the three heads, decoded as `UtilityModel.decode` does (a C++ snippet,
   `_FORWARD`, with the width fixed at compile time; with the goals side by side each layer is a broadcast weight
   times a row of goals, which the compiler vectorises, and the exponentials are plain arithmetic, `_FAST_EXP`,
   so they vectorise too);
3. the score as the brain's factor and term (`goap.kernels.tick.decide` compares ``priority * mult + add``):
   ``mult = P ** alpha`` and ``add = beta * value - gamma * cost``, so ``priority * P ** alpha + beta * value -
   gamma * cost`` with the priority of the tick the goal is compared on, not of the tick the agent was last
   scored. A goal the type never picks gets factor 1 and term 0.

The cache (``cache``): the kernel keeps, per agent, the packed state and a stamp (the weights' version and the
agent's type) its rows of the score buffers were written for; an agent due again with the same state and stamp is
passed over, its rows still right. New weights (`FusedScorer.set_params`) bump the version; a write of the buffers
by anything else (another scorer) makes every row stale (``brain._score_writer``).

Weights are copied once into Warp arrays on the brain's device, the hidden width padded with zeros to one of
`WIDTHS` (a padded unit has zero weights and bias, so it is 0 after ReLU and adds nothing); hidden layers are stored
transposed (row k: input unit k's weights to every output unit). One kernel is compiled per width (a few seconds
the first time, then Warp's kernel cache). Scalars that may change (the weights alpha, beta, gamma, the target
standardisation, the version) live in device arrays, so captured graphs read their current values; everything
else is fixed for the selector's life. The kernel reads nothing from the host and allocates nothing, so it runs
inside a captured tick.
"""


import threading
from typing import Any

import numpy as np
import warp as wp

from goap.kernels.agents import Agents
from goap.kernels.semantics import GoalTables
from goap.kernels.tick import Rules, agent_type_of, scoring_due_at
from goap.learn.features import FeatureLayout

#: Hidden widths a kernel is compiled for; a model's widest layer is padded up to the first that fits.
WIDTHS = (16, 32, 64, 128)
#: Listed agents per CPU span: below twice this one launch does it all. Spans on the shared pool cost more than
#: they save on a loaded 2-core machine (10,000 village agents, about 700 listed a tick: the scoring step's median
#: 0.73 ms and mean 0.80 ms in one launch, 0.85 and 1.66 ms in two spans).
SPAN_ROWS = 2048
#: Agents per CPU span when the kernel tests every agent (most return at once): below twice this, one launch.
ALL_ROWS = 16384
#: CPU spans at most (one counter slot each).
MAX_SPANS = 64

_kernels: dict[int, Any] = {}
_lock = threading.Lock()


def goal_block(width: int) -> int:
    """Goals run side by side in the kernel for hidden width ``width`` (two 8-float vectors where a layer is
    small, one where it is wide: the block's activations live on the thread's stack)."""
    return 16 if width <= 32 else 8


def width_for(hidden: tuple[int, ...]) -> int | None:
    """The compiled width that holds every layer of ``hidden``, or None when a layer is wider than `WIDTHS`."""
    return next((w for w in WIDTHS if w >= max(hidden)), None)


def kernel_for(width: int) -> Any:
    """The scoring kernel for hidden width ``width`` (one of `WIDTHS`), compiled on first use."""
    with _lock:
        k = _kernels.get(width)
        if k is None:
            k = _kernels[width] = _make_kernel(width)
        return k


_FORWARD = """
    // Agent i through the model for each goal its type picks (type_priority[ty, g] > 0), decoded as
    // UtilityModel.decode does, into the score buffers: mult = P ** alpha, add = beta * value - gamma * cost; a goal
    // the type never picks gets 1 and 0. Returns whether any goal was run. The goals go through the layers in
    // blocks of GB side by side (a layer is then a broadcast weight times a row of GB goals, which vectorises, and
    // the heads need no horizontal sums); the decoding's exponentials too (goap_fast_exp).
    const int H = @H@;
    const int GB = @GB@;
    float h0[H];
    float A[H][GB];
    float B[H][GB];
    const char* row = (const char*)states.data + (size_t)i * states.strides[0];
    const wp::uint64* st = (const wp::uint64*)row;
    const float* wf = (const float*)w_first.data;
    for (int j = 0; j < H; ++j) h0[j] = ((const float*)b_first.data)[j];
    const int n_scalar = s_word.shape[0];
    for (int f = 0; f < n_scalar; ++f) {
        wp::uint64 v = (st[((const int*)s_word.data)[f]] >> ((const int*)s_shift.data)[f])
                       & ((const wp::uint64*)s_mask.data)[f];
        float x = (float)v * ((const float*)s_scale.data)[f];
        if (x != 0.0f) {
            const float* w = wf + (size_t)((const int*)s_col.data)[f] * H;
            for (int j = 0; j < H; ++j) h0[j] += x * w[j];
        }
    }
    const int n_enum = e_word.shape[0];
    for (int f = 0; f < n_enum; ++f) {
        wp::uint64 v = (st[((const int*)e_word.data)[f]] >> ((const int*)e_shift.data)[f])
                       & ((const wp::uint64*)e_mask.data)[f];
        const float* w = wf + (size_t)(((const int*)e_col.data)[f] + (int)v) * H;
        for (int j = 0; j < H; ++j) h0[j] += w[j];
    }
    const int G = mult.shape[1];
    const int GP = w_goal.shape[1];  // G padded to a multiple of GB (padded goals: zero weights, never written)
    const float* wg = (const float*)w_goal.data;  // [H, GP]: goal g's first-layer column in column g
    const float* tp = (const float*)((const char*)type_priority.data + (size_t)ty * type_priority.strides[0]);
    float* m_out = (float*)((char*)mult.data + (size_t)i * mult.strides[0]);
    float* a_out = (float*)((char*)add.data + (size_t)i * add.strides[0]);
    const float* wh = (const float*)w_hidden.data;
    const float* bh = (const float*)b_hidden.data;
    const float* wo = (const float*)w_head.data;
    const float* bo = (const float*)b_head.data;
    const float* pr = (const float*)params.data;
    const float alpha = pr[0], beta = pr[1], gamma = pr[2];
    bool ran = false;
    for (int g0 = 0; g0 < G; g0 += GB) {
        bool any = false;
        for (int u = 0; u < GB && g0 + u < G; ++u) any = any || tp[g0 + u] > 0.0f;
        if (!any) {
            for (int u = 0; u < GB && g0 + u < G; ++u) { m_out[g0 + u] = 1.0f; a_out[g0 + u] = 0.0f; }
            continue;
        }
        ran = true;
        for (int j = 0; j < H; ++j) {
            const float* w = wg + (size_t)j * GP + g0;
            for (int u = 0; u < GB; ++u) { float t = h0[j] + w[u]; A[j][u] = t > 0.0f ? t : 0.0f; }
        }
        for (int l = 0; l < n_hidden; ++l) {
            const float* W = wh + (size_t)l * H * H;  // row k: input unit k's weights to every output unit
            for (int j = 0; j < H; ++j)
                for (int u = 0; u < GB; ++u) B[j][u] = bh[l * H + j];
            for (int k = 0; k < H; ++k) {
                const float* wk = W + (size_t)k * H;
                for (int j = 0; j < H; ++j) {
                    const float w = wk[j];
                    for (int u = 0; u < GB; ++u) B[j][u] += w * A[k][u];
                }
            }
            for (int j = 0; j < H; ++j)
                for (int u = 0; u < GB; ++u) A[j][u] = B[j][u] > 0.0f ? B[j][u] : 0.0f;
        }
        float z0[GB], z1[GB], z2[GB];
        for (int u = 0; u < GB; ++u) { z0[u] = bo[0]; z1[u] = bo[1]; z2[u] = bo[2]; }
        for (int j = 0; j < H; ++j) {
            const float w0 = wo[j], w1 = wo[H + j], w2 = wo[2 * H + j];
            for (int u = 0; u < GB; ++u) { z0[u] += w0 * A[j][u]; z1[u] += w1 * A[j][u]; z2[u] += w2 * A[j][u]; }
        }
        float p[GB], cost[GB];
        for (int u = 0; u < GB; ++u) {
            p[u] = 1.0f / (1.0f + goap_fast_exp(-z0[u]));
            const float c = goap_fast_exp(z1[u] * pr[4] + pr[3]) - 1.0f;
            cost[u] = c > 0.0f ? c : 0.0f;
        }
        for (int u = 0; u < GB && g0 + u < G; ++u) {
            const int g = g0 + u;
            if (!(tp[g] > 0.0f)) { m_out[g] = 1.0f; a_out[g] = 0.0f; continue; }
            m_out[g] = alpha == 1.0f ? p[u] : (alpha == 0.0f ? 1.0f : wp::pow(p[u], alpha));
            a_out[g] = beta * (z2[u] * pr[6] + pr[5]) - gamma * cost[u];
        }
    }
    return ran;
"""

#: exp(x) in float32 as plain arithmetic, so a loop of them vectorises (a call to expf does not): x = n ln2 + r
#: (Cody-Waite), exp(r) by Cephes' degree-6 polynomial, 2^n by the exponent bits; within 2 ulp of expf over
#: [-87.3, 88.3], clamped outside (the sigmoid and the cost decode never need more).
_FAST_EXP = """
    auto goap_fast_exp = [](float x) -> float {
    x = x < -87.33654f ? -87.33654f : (x > 88.37626f ? 88.37626f : x);
    const float n = floorf(x * 1.44269504088896341f + 0.5f);
    float r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float q = 1.9875691500e-4f;
    q = q * r + 1.3981999507e-3f;
    q = q * r + 8.3334519073e-3f;
    q = q * r + 4.1665795894e-2f;
    q = q * r + 1.6666665459e-1f;
    q = q * r + 5.0000001201e-1f;
    q = q * r * r + r + 1.0f;
    const int e = ((int)n + 127) << 23;
#if defined(__CUDA_ARCH__)
    return q * __int_as_float(e);
#else
    return q * __builtin_bit_cast(float, e);
#endif
    };
"""



@wp.func_native(_FAST_EXP + "    return goap_fast_exp(x);\n")
def fast_exp(x: float) -> float:
    """`_FAST_EXP` as a Warp function (what the kernel's decoding computes; tested against numpy's exp)."""
    ...

def _make_kernel(H: int) -> Any:
    @wp.func_native(_FAST_EXP + _FORWARD.replace("@H@", str(H)).replace("@GB@", str(goal_block(H))))
    def forward_agent(
        i: int, ty: int, states: wp.array2d(dtype=wp.uint64),
        s_word: wp.array(dtype=wp.int32), s_shift: wp.array(dtype=wp.int32), s_mask: wp.array(dtype=wp.uint64),
        s_col: wp.array(dtype=wp.int32), s_scale: wp.array(dtype=wp.float32),
        e_word: wp.array(dtype=wp.int32), e_shift: wp.array(dtype=wp.int32), e_mask: wp.array(dtype=wp.uint64),
        e_col: wp.array(dtype=wp.int32), w_goal: wp.array2d(dtype=wp.float32),
        w_first: wp.array2d(dtype=wp.float32), b_first: wp.array(dtype=wp.float32),
        w_hidden: wp.array3d(dtype=wp.float32), b_hidden: wp.array2d(dtype=wp.float32), n_hidden: int,
        w_head: wp.array2d(dtype=wp.float32), b_head: wp.array(dtype=wp.float32), params: wp.array(dtype=wp.float32),
        type_priority: wp.array2d(dtype=wp.float32), mult: wp.array2d(dtype=wp.float32),
        add: wp.array2d(dtype=wp.float32),
    ) -> bool: ...

    def score_listed(
        agents: Agents, tick: wp.array(dtype=wp.int64), gt: GoalTables, rules: Rules,
        rows: wp.array(dtype=wp.int32), count: wp.array(dtype=wp.int32),
        # features (`goap.learn.features.FeatureLayout`): scalar facts, then enum facts
        s_word: wp.array(dtype=wp.int32), s_shift: wp.array(dtype=wp.int32), s_mask: wp.array(dtype=wp.uint64),
        s_col: wp.array(dtype=wp.int32), s_scale: wp.array(dtype=wp.float32),
        e_word: wp.array(dtype=wp.int32), e_shift: wp.array(dtype=wp.int32), e_mask: wp.array(dtype=wp.uint64),
        e_col: wp.array(dtype=wp.int32), w_goal: wp.array2d(dtype=wp.float32),
        # weights: first layer (one row per input column), hidden layers (transposed), heads; the score's weights
        w_first: wp.array2d(dtype=wp.float32), b_first: wp.array(dtype=wp.float32),
        w_hidden: wp.array3d(dtype=wp.float32), b_hidden: wp.array2d(dtype=wp.float32), n_hidden: int,
        w_head: wp.array2d(dtype=wp.float32), b_head: wp.array(dtype=wp.float32), params: wp.array(dtype=wp.float32),
        # per-agent cache: the state and the stamp (params version, agent type) the buffer rows were written for
        version: wp.array(dtype=wp.int64), seen: wp.array2d(dtype=wp.uint64), stamp: wp.array(dtype=wp.int64),
        use_cache: int, mult: wp.array2d(dtype=wp.float32), add: wp.array2d(dtype=wp.float32),
        predicted: wp.array(dtype=wp.int64), slot: int, listed: int, every: int, first: int, per_thread: int,
        limit: int,
    ):
        # Agents (or list entries) first + tid * per_thread + k, k < per_thread, below limit: on the CPU one thread
        # takes a whole span (the kernel's arguments are set up once a thread, not once an agent); on a GPU one each.
        base = first + wp.tid() * per_thread
        states = agents.states
        alive = agents.alive
        goal = agents.goal
        W = states.shape[1]
        ran = wp.int64(0)
        # Every agent (not listed): agent i's stagger turn is i % every == turn, with i % every kept as a counter.
        every64 = wp.int64(every)
        turn = int((every64 - tick[0] % every64) % every64)
        rem = int(wp.int64(base) % every64)
        for k in range(per_thread):
            t = base + k
            if t >= limit:
                break
            i = t
            if listed != 0:  # the agents rows[:count[0]]
                if t >= count[0]:
                    break
                i = rows[t]
                if i < 0:
                    continue
            else:  # every agent: those due this tick (`goap.kernels.tick.scoring_due`)
                staggered = rem == turn
                rem += 1
                if rem == every:
                    rem = 0
                if not scoring_due_at(alive, goal, states, gt.mask, gt.value, gt.ints, i, staggered):
                    continue
            ty = agent_type_of(agents, rules, i)
            key = (version[0] << wp.int64(16)) | wp.int64(ty)
            same = bool(use_cache != 0) and stamp[i] == key
            for w in range(W):
                if seen[i, w] != states[i, w]:
                    same = False
            if same:  # the buffer rows were written for this state, type and model: still right
                continue
            for w in range(W):
                seen[i, w] = states[i, w]
            stamp[i] = key
            if forward_agent(i, ty, states, s_word, s_shift, s_mask, s_col, s_scale, e_word, e_shift, e_mask, e_col,
                             w_goal, w_first, b_first, w_hidden, b_hidden, n_hidden, w_head, b_head, params,
                             rules.type_priority, mult, add):
                ran += wp.int64(1)
        if ran > wp.int64(0):
            wp.atomic_add(predicted, slot, ran)

    score_listed.__name__ = score_listed.__qualname__ = f"score_listed_{H}"
    return wp.kernel(score_listed, module="unique", enable_backward=False)


class FusedScorer:
    """A `UtilityModel`'s weights on one Warp device, and the launch of the scoring kernel (module docstring).

    Args:
        model: the model (its weights are copied; later changes to it are not seen).
        layout: the domain's feature layout (the model's input columns).
        device: the Warp device of the brains it scores.
    """

    def __init__(self, model: Any, layout: FeatureLayout, device: Any):
        width = width_for(model.hidden)
        if width is None:
            raise ValueError(f"no fused kernel for hidden width {max(model.hidden)} (at most {WIDTHS[-1]})")
        self.width = H = width
        self.device = wp.get_device(device)
        dev = self.device
        sd = {k: v.detach().cpu().numpy().astype(np.float32) for k, v in model.state_dict().items()}
        F = len(layout.names)

        def rows(m: np.ndarray) -> np.ndarray:  # [n, h] -> [n, H], zero-padded
            out = np.zeros((m.shape[0], H), dtype=np.float32)
            out[:, : m.shape[1]] = m
            return out

        def floats(a: np.ndarray) -> Any:
            return wp.array(np.ascontiguousarray(a, dtype=np.float32), dtype=wp.float32, device=dev)

        self.w_first = floats(rows(sd["first.weight"].T.reshape(F, -1)))
        self.b_first = floats(rows(sd["first.bias"][None])[0])
        hidden_w, hidden_b = [], []
        for k in range(len(model.hidden) - 1):
            w = sd[f"trunk.{2 * k + 1}.weight"]  # [out, in]
            block = np.zeros((H, H), dtype=np.float32)
            block[: w.shape[1], : w.shape[0]] = w.T  # row k: input unit k's weights to every output unit
            hidden_w.append(block)
            hidden_b.append(rows(sd[f"trunk.{2 * k + 1}.bias"][None]))
        self.n_hidden = len(hidden_w)
        self.w_hidden = floats(np.stack(hidden_w) if hidden_w else np.zeros((1, H, H), np.float32))
        self.b_hidden = floats(np.concatenate(hidden_b) if hidden_b else np.zeros((1, H), np.float32))
        self.w_head = floats(rows(sd["head.weight"]))
        self.b_head = wp.array(sd["head.bias"], dtype=wp.float32, device=dev)
        L = layout

        def ints(a: np.ndarray) -> Any:
            return wp.array(np.asarray(a, dtype=np.int32).reshape(-1), dtype=wp.int32, device=dev)

        sf, ef = L.scalar_fact, L.enum_fact
        self.features = [
            ints(L.word[sf]), ints(L.shift[sf].astype(np.int64)), wp.array(L.mask[sf], dtype=wp.uint64, device=dev),
            ints(L.scalar_col), wp.array(L.scalar_scale, dtype=wp.float32, device=dev),
            ints(L.word[ef]), ints(L.shift[ef].astype(np.int64)), wp.array(L.mask[ef], dtype=wp.uint64, device=dev),
            ints(L.enum_col), self._goal_columns(sd["first.weight"], L, H),
        ]
        self.params = wp.zeros(8, dtype=wp.float32, device=dev)
        self._version = 0
        self.version = wp.zeros(1, dtype=wp.int64, device=dev)
        self.predicted = wp.zeros(MAX_SPANS, dtype=wp.int64, device=dev)  # per CPU span (no atomics across them)
        self._no_rows = wp.zeros(1, dtype=wp.int32, device=dev)  # the list's place when every agent is tested
        self.kernel = kernel_for(H)
        self.kernel.module.load(self.device)  # compiled or read from Warp's cache now, not in a tick
        self._caches: dict[tuple, dict[str, Any]] = {}  # per brain (a few kept)

    def _goal_columns(self, first: np.ndarray, layout: FeatureLayout, H: int) -> Any:
        """The goals' columns of the first layer as a [H, GP] device array (goal g in column g, zero-padded to a
        multiple of the kernel's goal block), so a block of goals is one contiguous row per hidden unit."""
        G = first.shape[1] - layout.n_state
        gb = goal_block(H)
        out = np.zeros((H, max(gb, -(-G // gb) * gb)), dtype=np.float32)
        out[: first.shape[0], :G] = first[:, layout.n_state:]  # first.weight is [hidden, inputs]
        return wp.array(out, dtype=wp.float32, device=self.device)

    def set_params(self, alpha: float, beta: float, gamma: float, stats: dict[str, float]) -> None:
        """The score's weights and the model's target standardisation (read by the kernel at each launch)."""
        values = np.array([alpha, beta, gamma, stats["cost_mean"], stats["cost_std"], stats["value_mean"],
                           stats["value_std"], 0.0], dtype=np.float32)
        self.params.assign(values)
        self._version += 1  # every cached row was written under the old weights: each is written again when due
        self.version.assign(np.array([self._version], dtype=np.int64))

    def prepare(self, brain: Any, mult: Any, add: Any) -> dict[str, Any]:
        """The per-agent cache for ``brain``'s score buffers ``mult`` and ``add``, allocated on its first call (a
        brain's first tick runs plain, so never inside a capture); the caches of the last few are kept. A cached
        row is one the kernel wrote for the state in ``seen`` under the ``stamp`` (weights version, agent type):
        when anything else wrote the buffers since (``brain._score_writer`` is not this cache), every row is
        stale."""
        N, W, G = brain.n_agents, brain.states.shape[1], brain.arrays.priorities.shape[1]
        key = (id(brain), N, W, G, mult.ptr, add.ptr)
        got = self._caches.get(key)
        if got is not None:
            return got
        if len(self._caches) >= 4:
            self._caches.pop(next(iter(self._caches)))
        dev = self.device
        got = self._caches[key] = {
            "seen": wp.zeros((max(1, N), W), dtype=wp.uint64, device=dev),
            "stamp": wp.full(max(1, N), -1, dtype=wp.int64, device=dev),
        }
        return got

    def launch(self, brain: Any, rows: Any, count: Any, dim: int, mult: Any, add: Any, goals: Any, rules: Any,
               cache: bool, every: int = 1) -> None:
        """Score into the brain's score buffers ``mult`` and ``add``, device work only: with ``rows``, the first
        ``count[0]`` agents listed (``dim`` threads: the count itself where the host may read it, else an upper
        bound); with ``rows=None``, the agents due this tick (`goap.kernels.tick.scoring_due` with ``every``) among
        all ``dim`` (the brain's agents), tested in the kernel, so no list is compacted and nothing is read back."""
        if brain.device != self.device:
            raise ValueError(f"the fused selector's weights are on {self.device}, the brain is on {brain.device}")
        c = self.prepare(brain, mult, add)
        if getattr(brain, "_score_writer", None) is not c:
            c["stamp"].fill_(-1)
            brain._score_writer = c
        listed = rows is not None
        if not listed:
            rows = count = self._no_rows
        inputs = [brain.agents, brain.clock, goals, rules, rows, count, *self.features,
                  self.w_first, self.b_first, self.w_hidden, self.b_hidden, self.n_hidden, self.w_head, self.b_head,
                  self.params, self.version, c["seen"], c["stamp"], int(bool(cache)), mult, add, self.predicted]
        tail = [int(listed), int(every)]
        launcher = brain.launcher
        if not brain.device.is_cpu:  # one thread an agent (or list entry)
            launcher.launch(self.kernel, dim, [*inputs, 0, *tail, 0, 1, dim])
            return
        spans = launcher.threads if not brain.device.is_capturing else 1
        spans = max(1, min(spans, MAX_SPANS, dim // (SPAN_ROWS if listed else ALL_ROWS)))
        size = max(1, -(-dim // spans))  # on the CPU one thread a span: the arguments are set up once a span
        if spans == 1:
            launcher.launch(self.kernel, 1, [*inputs, 0, *tail, 0, size, dim])
            return
        from goap.launch import run_parallel

        jobs = []
        for k in range(spans):
            cmd = launcher.recorded(self.kernel, [*inputs, k, *tail, k * size, size, dim])
            cmd.set_dim(1)
            jobs.append(cmd.launch)
        run_parallel(jobs)

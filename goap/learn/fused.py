"""A `UtilityModel` exported for inference: the selector as one Warp kernel on the brain's device.

Why: the torch path pays about thirty small torch operations a tick (feature unpacking, three layers, decoding,
the score, the gathers and the scatter), each with its own dispatch cost, for a few dozen rows; at 2,000 village
agents that is more than the tick's 10% budget. Here one kernel does it all, one thread per agent: in a brain it
tests each agent for being due this tick (`goap.kernels.tick.scoring_due`, the rule the row scorer's compacted list
follows: tested in place, the list, its scan and its count cost more than the test at 2,000 agents) and returns
at once for the others; given a list (``rows``, ``count``), it scores the agents listed. For each agent scored:

1. the state part of the first layer straight from the packed words (``W_s x + b``: a row of weights per bool or
   int fact, scaled as in `goap.learn.features`, and one per enum fact's value);
2. per goal the agent's type may pick, the goal's column of the first layer, the hidden layers (ReLU) and the
   three heads, decoded as `UtilityModel.decode` does (a C++ snippet, `_FORWARD`, with the width fixed at compile
   time so the compiler vectorises the loops);
3. the score as the brain's factor and term (`goap.kernels.tick.decide` compares ``priority * mult + add``):
   ``mult = P ** alpha`` and ``add = beta * value - gamma * cost``, so ``priority * P ** alpha + beta * value -
   gamma * cost`` with the priority of the tick the goal is compared on, not of the tick the agent was last
   scored. A goal the type never picks gets factor 1 and term 0.

The predictions of each (agent, goal) are kept with the packed state they were made for, so an agent whose state
did not change since is not run through the model again (``cache``), as in the torch path.

Weights are copied once into Warp arrays on the brain's device, the hidden width padded with zeros to one of
`WIDTHS` (a padded unit has zero weights and bias, so it is 0 after ReLU and adds nothing); hidden layers are stored
transposed (row k: input unit k's weights to every output unit), so a layer is a sum of input-scaled rows, and
zero inputs (ReLU) are skipped. One kernel is compiled per width (a few seconds the first time, then Warp's kernel
cache). Scalars that may change (the weights alpha, beta, gamma and the target standardisation) live in a device
array, so captured graphs read their current values; everything else is fixed for the selector's life. The kernel
reads nothing from the host and allocates nothing, so it runs inside a captured tick.
"""


import threading
from typing import Any

import numpy as np
import warp as wp

from goap.kernels.agents import Agents
from goap.kernels.semantics import GoalTables
from goap.kernels.tick import Rules, agent_type_of, scoring_due
from goap.learn.features import FeatureLayout

#: Hidden widths a kernel is compiled for; a model's widest layer is padded up to the first that fits.
WIDTHS = (16, 32, 64, 128)
#: Listed agents per CPU span: below twice this one launch does it all. Spans on the shared pool cost more than
#: they save on a loaded 2-core machine (10,000 village agents, about 700 listed a tick: the scoring step's median
#: 0.73 ms and mean 0.80 ms in one launch, 0.85 and 1.66 ms in two spans).
SPAN_ROWS = 2048
#: Agents per CPU span when the kernel tests every agent (most return at once): below twice this, one launch.
ALL_ROWS = 16384

_kernels: dict[int, Any] = {}
_lock = threading.Lock()


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
    // The model's forward pass for agent i and each goal g with todo[i, g] != 0: raw head outputs into raw[i, g].
    const int H = @H@;
    float h0[H];
    float a[H];
    float b[H];
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
    const int G = todo.shape[1];
    const wp::int8* td = (const wp::int8*)((const char*)todo.data + (size_t)i * todo.strides[0]);
    float* out = (float*)((char*)raw.data + (size_t)i * raw.strides[0]);
    const float* wh = (const float*)w_hidden.data;
    const float* bh = (const float*)b_hidden.data;
    const float* wo = (const float*)w_head.data;
    const float* bo = (const float*)b_head.data;
    for (int g = 0; g < G; ++g) {
        if (td[g] != 2) continue;
        const float* wg = wf + (size_t)(n_state + g) * H;
        for (int j = 0; j < H; ++j) { float t = h0[j] + wg[j]; a[j] = t > 0.0f ? t : 0.0f; }
        for (int l = 0; l < n_hidden; ++l) {
            const float* W = wh + (size_t)l * H * H;
            for (int j = 0; j < H; ++j) b[j] = bh[l * H + j];
            for (int k = 0; k < H; ++k) {
                const float ak = a[k];
                if (ak == 0.0f) continue;
                const float* wk = W + (size_t)k * H;
                for (int j = 0; j < H; ++j) b[j] += ak * wk[j];
            }
            for (int j = 0; j < H; ++j) a[j] = b[j] > 0.0f ? b[j] : 0.0f;
        }
        for (int o = 0; o < 3; ++o) {
            float z = bo[o];
            for (int j = 0; j < H; ++j) z += a[j] * wo[o * H + j];
            out[g * 3 + o] = z;
        }
    }
"""


def _make_kernel(H: int) -> Any:
    @wp.func_native(_FORWARD.replace("@H@", str(H)))
    def forward_goals(
        i: int, states: wp.array2d(dtype=wp.uint64),
        s_word: wp.array(dtype=wp.int32), s_shift: wp.array(dtype=wp.int32), s_mask: wp.array(dtype=wp.uint64),
        s_col: wp.array(dtype=wp.int32), s_scale: wp.array(dtype=wp.float32),
        e_word: wp.array(dtype=wp.int32), e_shift: wp.array(dtype=wp.int32), e_mask: wp.array(dtype=wp.uint64),
        e_col: wp.array(dtype=wp.int32), n_state: int,
        w_first: wp.array2d(dtype=wp.float32), b_first: wp.array(dtype=wp.float32),
        w_hidden: wp.array3d(dtype=wp.float32), b_hidden: wp.array2d(dtype=wp.float32), n_hidden: int,
        w_head: wp.array2d(dtype=wp.float32), b_head: wp.array(dtype=wp.float32),
        todo: wp.array2d(dtype=wp.int8), raw: wp.array3d(dtype=wp.float32),
    ): ...

    def score_listed(
        agents: Agents, tick: wp.array(dtype=wp.int64), gt: GoalTables, rules: Rules,
        rows: wp.array(dtype=wp.int32), count: wp.array(dtype=wp.int32),
        # features (`goap.learn.features.FeatureLayout`): scalar facts, then enum facts
        s_word: wp.array(dtype=wp.int32), s_shift: wp.array(dtype=wp.int32), s_mask: wp.array(dtype=wp.uint64),
        s_col: wp.array(dtype=wp.int32), s_scale: wp.array(dtype=wp.float32),
        e_word: wp.array(dtype=wp.int32), e_shift: wp.array(dtype=wp.int32), e_mask: wp.array(dtype=wp.uint64),
        e_col: wp.array(dtype=wp.int32), n_state: int,
        # weights: first layer (one row per input column), hidden layers (transposed), heads
        w_first: wp.array2d(dtype=wp.float32), b_first: wp.array(dtype=wp.float32),
        w_hidden: wp.array3d(dtype=wp.float32), b_hidden: wp.array2d(dtype=wp.float32), n_hidden: int,
        w_head: wp.array2d(dtype=wp.float32), b_head: wp.array(dtype=wp.float32), params: wp.array(dtype=wp.float32),
        # per-agent cache: the state the predictions were made for, which goals' are known (1) or due now (2)
        seen: wp.array2d(dtype=wp.uint64), known: wp.array2d(dtype=wp.int8), pred: wp.array3d(dtype=wp.float32),
        use_cache: int, mult: wp.array2d(dtype=wp.float32), add: wp.array2d(dtype=wp.float32),
        predicted: wp.array(dtype=wp.int64), listed: int, every: int, first: int,
    ):
        t = wp.tid() + first
        i = t
        if listed != 0:  # the agents rows[:count[0]]
            if t >= count[0]:
                return
            i = rows[t]
            if i < 0:
                return
        elif not scoring_due(agents, tick, gt, every, i):  # every agent: those due this tick
            return
        states = agents.states
        W = states.shape[1]
        same = bool(use_cache != 0)
        for w in range(W):
            if seen[i, w] != states[i, w]:
                same = False
        if not same:
            for w in range(W):
                seen[i, w] = states[i, w]
            for g in range(gt.n_goals):
                known[i, g] = wp.int8(0)
        ty = agent_type_of(agents, rules, i)
        todo = int(0)  # noqa: UP018 (a dynamic variable for Warp: it changes inside the loop)
        for g in range(gt.n_goals):
            if rules.type_priority[ty, g] <= 0.0:  # never picked by this agent's type: not predicted
                known[i, g] = wp.int8(0)
            elif known[i, g] == wp.int8(0):
                known[i, g] = wp.int8(2)
                todo += 1
        if todo > 0:
            forward_goals(i, states, s_word, s_shift, s_mask, s_col, s_scale, e_word, e_shift, e_mask, e_col,
                          n_state, w_first, b_first, w_hidden, b_hidden, n_hidden, w_head, b_head, known, pred)
            wp.atomic_add(predicted, 0, wp.int64(1))
        alpha, beta, gamma = params[0], params[1], params[2]
        for g in range(gt.n_goals):
            if known[i, g] == wp.int8(2):  # just run: decode the raw heads as UtilityModel.decode does
                pred[i, g, 0] = 1.0 / (1.0 + wp.exp(-pred[i, g, 0]))
                pred[i, g, 1] = wp.max(wp.exp(pred[i, g, 1] * params[4] + params[3]) - 1.0, 0.0)
                pred[i, g, 2] = pred[i, g, 2] * params[6] + params[5]
                known[i, g] = wp.int8(1)
            elif known[i, g] == wp.int8(0):  # the type never picks it: the plain priority
                mult[i, g] = 1.0
                add[i, g] = 0.0
                continue
            p = pred[i, g, 0]
            m = float(p)
            if alpha != 1.0:
                m = wp.pow(p, alpha)
            mult[i, g] = m
            add[i, g] = beta * pred[i, g, 2] - gamma * pred[i, g, 1]

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
            ints(L.enum_col), int(L.n_state),
        ]
        self.params = wp.zeros(8, dtype=wp.float32, device=dev)
        self.predicted = wp.zeros(1, dtype=wp.int64, device=dev)
        self._no_rows = wp.zeros(1, dtype=wp.int32, device=dev)  # the list's place when every agent is tested
        self.kernel = kernel_for(H)
        self.kernel.module.load(self.device)  # compiled or read from Warp's cache now, not in a tick
        self._caches: dict[tuple, dict[str, Any]] = {}  # per brain (a few kept)

    def set_params(self, alpha: float, beta: float, gamma: float, stats: dict[str, float]) -> None:
        """The score's weights and the model's target standardisation (read by the kernel at each launch)."""
        values = np.array([alpha, beta, gamma, stats["cost_mean"], stats["cost_std"], stats["value_mean"],
                           stats["value_std"], 0.0], dtype=np.float32)
        self.params.assign(values)

    def prepare(self, brain: Any) -> dict[str, Any]:
        """The per-agent cache for ``brain``, allocated on its first call (a brain's first tick runs plain, so never
        inside a capture); the caches of the last few brains are kept."""
        N, W, G = brain.n_agents, brain.states.shape[1], brain.arrays.priorities.shape[1]
        key = (id(brain), N, W, G)
        got = self._caches.get(key)
        if got is not None:
            return got
        if len(self._caches) >= 4:
            self._caches.pop(next(iter(self._caches)))
        dev = self.device
        got = self._caches[key] = {
            "seen": wp.zeros((max(1, N), W), dtype=wp.uint64, device=dev),
            "known": wp.zeros((max(1, N), max(1, G)), dtype=wp.int8, device=dev),
            "pred": wp.zeros((max(1, N), max(1, G), 3), dtype=wp.float32, device=dev),
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
        c = self.prepare(brain)
        listed = rows is not None
        if not listed:
            rows = count = self._no_rows
        inputs = [brain.agents, brain.clock, goals, rules, rows, count, *self.features,
                  self.w_first, self.b_first, self.w_hidden, self.b_hidden, self.n_hidden, self.w_head, self.b_head,
                  self.params, c["seen"], c["known"], c["pred"], int(bool(cache)), mult, add, self.predicted,
                  int(listed), int(every)]
        launcher = brain.launcher
        spans = launcher.threads if brain.device.is_cpu and not brain.device.is_capturing else 1
        spans = max(1, min(spans, dim // (SPAN_ROWS if listed else ALL_ROWS)))
        if spans == 1:
            launcher.launch(self.kernel, dim, [*inputs, 0])
            return
        from goap.launch import run_parallel

        size = -(-dim // spans)
        jobs = []
        for k in range(spans):
            cmd = launcher.recorded(self.kernel, [*inputs, k * size])
            cmd.set_dim(max(0, min(size, dim - k * size)))
            jobs.append(cmd.launch)
        run_parallel(jobs)

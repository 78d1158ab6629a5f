"""`Brain`: the wiring of the agents' arrays, the planner, the launcher and the world; its concerns are mixins.

=========================  ==================================================================================
mixin                      what it does
=========================  ==================================================================================
`goap.runtime.pipeline`    the tick: its steps, capture and replay, timing, counters, the grouping choice
`goap.runtime.commands`    commands and lifecycle: replan, set_goal / clear_goal, reset_agents, spawn, despawn,
                           on_plan
`goap.runtime.facts`       fact access: fact_slot, read_fact, write_fact
`goap.runtime.snapshots`   get_state, state_hash, snapshot, restore (checked before anything changes)
`goap.runtime.inspection`  events, outcome logging, current_goal_satisfied, agent_plan, summary, input checks
=========================  ==================================================================================
"""

from __future__ import annotations

import dataclasses
from collections import Counter, OrderedDict
from typing import Any

import numpy as np

from goap.codes import COUNTERS
from goap.domain import Domain
from goap.encoding import DomainTables, encode
from goap.metrics import RunningSeries
from goap.planners import PlanBatch, make_planner
from goap.planners.base import DEFAULT_MAX_NODES
from goap.runtime.commands import Commands
from goap.runtime.config import BrainConfig, Setting
from goap.runtime.facts import Facts
from goap.runtime.inspection import BrainError, Events, Inspection
from goap.runtime.pipeline import STAGES, Pipeline, require_capturable
from goap.runtime.snapshots import Snapshots
from goap.state import FIELD_NAMES, AgentArrays
from goap.world import World


class Brain(Pipeline, Commands, Facts, Snapshots, Inspection):
    """The agents' minds: one struct of Warp arrays of N rows (see `goap.state`), and the tick over them.

    Args:
        domain: the planning domain (or its tables).
        n_agents: N, the capacity: rows allocated once.
        world: the `goap.world.World` that senses and acts; None for a brain the game drives by hand.
        config: the settings (`goap.runtime.config.BrainConfig`); default settings when None.
        **settings: settings by name, over ``config`` (``Brain(d, 100, plan_budget=10, capture=True)``).

    The per-agent arrays are ``brain.states``, ``brain.goal``, ... (`goap.state`); ``brain.agents`` is the
    same arrays as one `goap.kernels.agents.Agents` struct for kernels; ``brain.launcher`` launches on the brain's
    device (`goap.launch.Launcher`); ``brain.clock`` is the tick number in an int64 [1] device array (tick k reads
    k), for kernels that need the time without a per-tick scalar.
    """

    plan_budget = Setting()
    cooldown_ticks = Setting()
    goal_hysteresis = Setting()
    goal_scorer = Setting()
    apply_effects = Setting()
    check_inputs = Setting()
    search_nodes_per_tick = Setting()
    stage_timing = Setting()
    capture = Setting()
    seed = Setting()

    def __init__(self, domain: Domain | DomainTables, n_agents: int, world: World | None = None, *,
                 config: BrainConfig | None = None, **settings: Any):
        if not isinstance(n_agents, int | np.integer) or isinstance(n_agents, bool) or n_agents < 0:
            raise ValueError(f"n_agents must be an integer >= 0, got {n_agents!r}")
        names = {f.name for f in dataclasses.fields(BrainConfig)}
        unknown = sorted(set(settings) - names)
        if unknown:
            raise TypeError(f"Brain() got an unknown setting '{unknown[0]}'; settings are {', '.join(sorted(names))}")
        cfg = dataclasses.replace(config or BrainConfig(), **settings)
        cfg.check(int(n_agents))
        self.config = cfg
        if cfg.capture:
            require_capturable(world)
        from goap.kernels import init_warp

        wp = self._wp = init_warp()
        from goap.kernels import semantics, tick
        from goap.kernels.agents import make_agents
        from goap.launch import Launcher

        self._kernels = tick
        self.tables = domain if isinstance(domain, DomainTables) else encode(domain)
        self.domain = self.tables.domain
        _check_when(self.domain)
        try:
            self.device = wp.get_device(cfg.device)
        except (ValueError, RuntimeError) as e:
            raise ValueError(f"unknown or unavailable Warp device {cfg.device!r}: {e}") from None
        self.world = world
        self.n_agents = N = int(n_agents)
        _check_memory(self.tables, N, cfg, self.device)
        self.planner = self._make_planner(cfg)
        self._dedupe_auto = cfg.dedupe == "auto" and hasattr(self.planner, "inner") and hasattr(self.planner,
                                                                                                  "counters")
        self._dedupe_on, self._dedupe_probe_at, self._dedupe_seen = True, 0, (0, 0)
        load = getattr(self.planner, "load", None)
        if callable(load):
            load()  # compile or load the planner's modules here, before its worker threads first launch them
        if cfg.search_nodes_per_tick is None:
            cfg.search_nodes_per_tick = 64 * int(getattr(self.planner, "max_nodes", DEFAULT_MAX_NODES))
        self.outcomes = None
        self._plan_hooks: list[Any] = []
        A, G = self.tables.n_actions, self.tables.goals.n_goals
        L = int(self.planner.max_plan_length)
        self._n_levels = int(getattr(self.planner, "n_levels", 1))

        # Agents start as type 0: its default facts and goal priorities (the domain's when it declares no types).
        self._default_state = self.tables.pack(self.domain.type_state(0))
        alive = np.zeros(N, dtype=bool)
        alive[: N if cfg.n_alive is None else cfg.n_alive] = True
        self.arrays = AgentArrays(
            N, {"W": self.tables.n_words, "G": G, "A": A, "L": L}, self.device,
            fills={
                "states": self._default_state,
                "priorities": np.array(self.domain.types[0].priority, dtype=np.float32).reshape(-1),
                "costs": self.tables.cost.astype(np.float32),
                "alive": alive,
            },
        )
        self.agents = make_agents(self.arrays)
        self.launcher = Launcher(self.device, cfg.cpu_threads)
        self._tables_d = semantics.to_device(self.tables, semantics.DomainTables, self.device)
        dev = self.device
        self._tick = wp.zeros(1, dtype=wp.int64, device=dev)
        self.clock = self._tick
        rows = self.launcher.threads  # one counter row per CPU chunk: no two threads add to one cell
        self._counters = wp.zeros((rows, len(COUNTERS)), dtype=wp.int64, device=dev)
        self._action_counts = wp.zeros((rows, max(1, A)), dtype=wp.int64, device=dev)
        self._first_bad = wp.full(rows, 2**31 - 1, dtype=wp.int32, device=dev)
        self._flag = wp.zeros(max(1, N), dtype=wp.int32, device=dev)
        self._pos = wp.zeros(max(1, N), dtype=wp.int32, device=dev)
        self._event_flag = wp.zeros(max(1, N), dtype=wp.int32, device=dev)  # event lists, outside the tick
        self._event_pos = wp.zeros(max(1, N), dtype=wp.int32, device=dev)
        self._q_key = wp.zeros(max(2, 2 * N), dtype=wp.float32, device=dev)
        self._q_wait = wp.zeros(max(2, 2 * N), dtype=wp.int32, device=dev)
        self._q_ids = wp.zeros(max(2, 2 * N), dtype=wp.int32, device=dev)
        self._q_count = wp.zeros(3, dtype=wp.int32, device=dev)  # requests, planned, order flag
        self._q_planned = self._q_count[1:2]
        self._q_order = self._q_count[2:3]
        self._q_count_view = self._q_count.numpy() if dev.is_cpu else None  # zero-copy on the CPU
        self._ids_views: dict[int, Any] = {}
        # A goal scorer's factor and term per agent and goal: decide compares priority * mult + add.
        self._score_mult = wp.zeros((max(1, N), max(1, G)), dtype=wp.float32, device=dev)
        self._score_add = wp.zeros((max(1, N), max(1, G)), dtype=wp.float32, device=dev)
        self._score_writer: Any = None  # the fused selector's cache that last wrote them (None: anything else)
        self._layout_d = self._layout_arrays()
        self._make_rules()
        self._all_rows = None
        self._lists: dict[str, tuple[Any, Any]] = {}
        self._event_hooks: list[tuple[str, Any]] = []
        self._sensors: list[Any] = []
        self._host_bytes = 0  # read back since the last tick ended (host_bytes_per_tick)
        self._host_bytes_last = 0
        self._batch = PlanBatch(
            status=self.arrays.plan_status, cost=self.arrays.plan_cost, length=self.arrays.plan_length,
            actions=self.arrays.plan, expanded=self.arrays.expanded, level=self.arrays.plan_level,
        )
        self._device_planner = _writes_device_batch(self.planner, self.device)
        self._host_batch = None if self._device_planner else PlanBatch.empty(N, L)
        self._open_row = np.full(N, -1, dtype=np.int64)  # outcome rows (opt-in host logging only)
        self._open_tick = np.zeros(N, dtype=np.int64)
        self._open_contribution = np.zeros(N, dtype=np.float64)
        self.events = Events(self)
        self.tick_count = 0
        self.counters: Counter[str] = Counter()
        self._last_counts = np.zeros(len(COUNTERS), dtype=np.int64)  # the last tick's counters, summed
        self.stage_stats = {s: RunningSeries() for s in (*STAGES, "search", "total")}
        self._search_ms = 0.0
        self.idle_series = RunningSeries()
        self._graph_cache: OrderedDict[tuple, dict[int, Any]] = OrderedDict()
        self.graph_captures = 0
        self._warm = False
        if world is not None:
            world.reset(self, cfg.seed)

    def _make_rules(self) -> None:
        """The device tables of `goap.kernels.tick.Rules` (interruptible actions, each type's goal priorities),
        each type's default state (packed, for spawn and reset), and the small constant rows commands pass."""
        wp, dev, d = self._wp, self.device, self.domain
        A = self.tables.n_actions
        self.type_names = tuple(t.name for t in d.types)
        priority = np.array([t.priority for t in d.types], dtype=np.float32).reshape(len(d.types), -1)
        self._type_default_states = [d.type_state(k) for k in range(len(d.types))]
        from goap.kernels.tick import Rules

        rules = Rules()
        interruptible = np.array([a.interruptible for a in d.actions] or [True], dtype=bool)
        rules.interruptible = wp.array(interruptible, dtype=wp.bool, device=dev)
        if priority.shape[1] == 0:
            priority = np.zeros((priority.shape[0], 1), np.float32)
        rules.type_priority = wp.array(np.ascontiguousarray(priority), dtype=wp.float32, device=dev)
        self._rules = rules
        # The planners read each agent's type only when the domain declares types (type 0 is every agent's else).
        self._plan_types = self.arrays.agent_type if d.declares_types else None
        packed = np.stack([self.tables.pack(s) for s in self._type_default_states])
        self._type_states = wp.array(packed, dtype=wp.uint64, device=dev)
        self._type_zero = wp.zeros(1, dtype=wp.int32, device=dev)
        self._dummy_rows = {"costs": wp.zeros((1, max(1, A)), dtype=wp.float32, device=dev),
                            "enabled": wp.zeros((1, max(1, A)), dtype=wp.bool, device=dev)}

    def _list_buffers(self, name: str) -> tuple[Any, Any]:
        """A device index list of N entries and its count, allocated once per name (events, free rows)."""
        got = self._lists.get(name)
        if got is None:
            wp = self._wp
            got = self._lists[name] = (wp.zeros(max(1, self.n_agents), dtype=wp.int32, device=self.device),
                                       wp.zeros(1, dtype=wp.int32, device=self.device))
        return got

    def _host(self, arr: Any) -> np.ndarray:
        """``arr`` on the host, counted in `host_bytes_per_tick` (what a GPU would copy back)."""
        self._host_bytes += int(arr.size) * int(np.dtype(self._wp.dtype_to_numpy(arr.dtype)).itemsize)
        return arr.numpy()

    def _make_planner(self, cfg: BrainConfig) -> Any:
        options: dict[str, Any] = dict(cfg.planner_options or {})
        if cfg.max_nodes is not None:
            options["max_nodes"] = cfg.max_nodes
        if cfg.max_plan_length is not None:
            options["max_plan_length"] = cfg.max_plan_length
        if cfg.planner != "reference":
            options.setdefault("device", str(self.device))
            first_pool = int(options.get("max_nodes", DEFAULT_MAX_NODES))
            options.setdefault("node_ceiling", 512 * first_pool)
            options.setdefault("dedupe", bool(cfg.dedupe))
            options.setdefault("plan_cache", int(cfg.plan_cache))
        elif cfg.plan_cache:
            raise ValueError("plan_cache needs a Warp planner (the reference planner plans on the host)")
        return make_planner(cfg.planner, self.tables, **options)

    def close(self) -> None:
        """Release the planner's resources and the captured graphs; the arrays stay readable."""
        self.drop_graphs()
        close = getattr(self.planner, "close", None)
        if callable(close):
            close()

    # --- the per-agent arrays ----------------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name in FIELD_NAMES and "arrays" in self.__dict__:
            return getattr(self.__dict__["arrays"], name)
        raise AttributeError(f"'Brain' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in FIELD_NAMES:
            raise AttributeError(f"brain.{name} is allocated once; write into it: brain.assign({name!r}, x) on every "
                                 f"device, or from a kernel (brain.{name}.numpy() is a view only on the CPU)")
        super().__setattr__(name, value)

    @property
    def n_alive(self) -> int:
        """Live agents: a count on the device and a read of 4 bytes."""
        out = self._wp.zeros(1, dtype=self._wp.int32, device=self.device)
        if self.n_agents:
            self.launcher.launch(self._kernels.count_alive, self.n_agents, [self.agents, out], record=False)
        return int(self._host(out)[0])


#: Bytes per agent the brain allocates beside the agents' arrays: the request flags and positions, the queue's
#: keys, waits and ids (two rows each), the outcome-log rows, and a host planner's result batch (without the plan).
_BUFFER_BYTES_PER_AGENT = 4 + 4 + 3 * 2 * 4 + 16 + 32


def _check_memory(tables: DomainTables, n: int, cfg: BrainConfig, device: Any) -> None:
    """Refuse, before allocating anything, a brain whose per-agent arrays do not fit the device's memory, naming
    the bytes it needs (``Brain(domain, 2**40)`` would otherwise end in a bare MemoryError half way through)."""
    from goap.planners.base import DEFAULT_MAX_PLAN_LENGTH
    from goap.state import arrays_nbytes, available_bytes

    L = cfg.max_plan_length or (cfg.planner_options or {}).get("max_plan_length") or DEFAULT_MAX_PLAN_LENGTH
    G = tables.goals.n_goals
    dims = {"W": tables.n_words, "G": G, "A": tables.n_actions, "L": int(L)}
    need = arrays_nbytes(n, dims) + n * (_BUFFER_BYTES_PER_AGENT + 4 * max(1, G) + 4 * int(L))
    have = available_bytes(device)
    if have is not None and need > have:
        raise ValueError(f"a brain of {n} agents needs about {need:,} bytes ({need / 2**30:.1f} GiB) for its "
                         f"per-agent arrays; {have:,} bytes ({have / 2**30:.1f} GiB) are available on {device}")


def _check_when(domain: Domain) -> None:
    """The act stage judges an action's conditional effects in one 64-bit mask (`goap.kernels.tick.finish_actions`):
    refuse, naming the action, a domain (a grounded PDDL task, say) with more in one action."""
    from goap.domain import MAX_WHEN

    for a in domain.actions:
        if len(a.when) > MAX_WHEN:
            raise ValueError(f"action '{a.name}' has {len(a.when)} conditional effects; a brain applies at most "
                             f"{MAX_WHEN} per action")


def _writes_device_batch(planner: Any, device: Any) -> bool:
    """Whether the planner takes device arrays and writes results into them in place (``count`` in its plan)."""
    import inspect

    if getattr(planner, "device", None) != device:
        return False
    try:
        return "count" in inspect.signature(planner.plan).parameters
    except (TypeError, ValueError):
        return False


__all__ = ["Brain", "BrainError"]

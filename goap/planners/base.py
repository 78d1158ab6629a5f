"""What every planner shares: statuses, the batched result, options, input checks and the registry.

The planner contract (the same for the reference planner and every Warp planner)::

    plan(states[N, W] uint64, goals[N] int32, costs[N, A] float32 | None, enabled[N, A] bool | None,
         *, types[N] int32 | None = None, goal_table=None, agents=None, count=None, out=None,
         max_escalated_nodes=None) -> PlanBatch

``goals`` index ``goal_table.goals`` (by default the domain's goals). ``costs`` replace the domain's action
base costs per agent (distances, say) and must be finite and in ``0..MAX_COST``; ``enabled`` switches actions off
per agent (context preconditions). ``types`` gives each row's agent type (`goap.domain.AgentType`, an index into
``Domain.types``; None: type 0 for every row): a type's disallowed actions are off as if disabled, and its cost
multipliers scale the action costs. An action's cost in a state follows `goap.domain.Domain.action_cost`
(``scale * max(0, base + cost terms)``, evaluated in the state it is applied to); the heuristics charge its least
cost over every state, so they stay admissible. ``agents`` plans only those rows (``count``, a one-element array,
plans only ``agents[:count[0]]``); the other rows of ``out`` are left as they were (NOT_PLANNED in a fresh batch).

Costs are summed in float64 (g, f and the heuristic alike), so a plan's reported cost is its true cost and the
cheapest plan wins for every cost the domain loader accepts (``0 <= cost <= MAX_COST``, zero-cost actions
included). Per-agent ``costs`` arrays are float32, as the Brain keeps them; their values are summed exactly.

Node pools that escalate. A search starts with a pool of ``max_nodes`` states (level 0). One that fills its pool
is run again with a pool ``growth`` times larger (level 1, 2, ...) up to ``node_ceiling`` states, in later waves
with fewer agents at once, so the scratch held never exceeds ``max_scratch_bytes``. ``out.level[i]`` is read as
the level agent i's search starts at and written as the level it ended at. Escalated work in one call is bounded
by ``max_escalated_nodes`` (pool states summed over the escalated searches the call runs; None: unbounded; at
least one escalated search per call always runs): an agent that still needs a larger pool when that is spent
comes back as BUDGET with ``level < n_levels``, which means *deferred: call again with this row's level
unchanged* (it resumes with pool ``pools[level]``). BUDGET with ``level == n_levels`` is final: every pool,
the largest included, filled up. A caller planning a new query for a row resets its level to 0.

Plans longer than ``max_plan_length``: TOO_LONG, with ``length`` and ``cost`` of the whole optimal plan and its
first ``max_plan_length`` steps in ``actions`` (a segment: execute it, then plan again from where it leads; the
rest of an optimal plan is optimal from there).
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from goap.codes import Status
from goap.domain import Domain
from goap.encoding import DomainTables, GoalTables
from goap.launch import CaptureError

try:  # the domain loader's limit, once it defines one
    from goap.domain import MAX_COST  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - until goap.domain defines it
    #: The largest action cost accepted. Integer costs up to this sum exactly in float64 over any plan of fewer
    #: than 9,000 steps; other costs keep a relative error below 1e-12.
    MAX_COST = 1e12

DEFAULT_MAX_NODES = 1024
DEFAULT_MAX_PLAN_LENGTH = 64
#: Pool growth per escalation level, and the largest pool a search may reach by default (2**25 states: about a
#: 1.5 GB search with one-word states, more than a plain uniform-cost search in Python holds in that memory).
DEFAULT_GROWTH = 8
DEFAULT_NODE_CEILING = 1 << 25
DEFAULT_MAX_SCRATCH_BYTES = 4 << 30
MAX_LEVELS = 16


def host_view(x: Any) -> np.ndarray:
    """numpy view of a field (zero-copy for numpy and CPU Warp arrays, a copy for GPU arrays)."""
    numpy = getattr(x, "numpy", None)
    if x is None or isinstance(x, np.ndarray) or not callable(numpy):
        return x
    return numpy()


_FIELDS = ("status", "cost", "length", "actions", "expanded", "level", "expanded_before_last_f")


@dataclass
class PlanBatch:
    """Results for N agents. ``actions[i, :length[i]]`` is agent i's plan; unused entries are -1.

    Fields are numpy arrays (host) or Warp arrays on a planner's device (`on_device`), which a Warp planner
    writes in place. ``cost`` (float64) is the plan's cost for OK, SATISFIED (0) and TOO_LONG, NaN otherwise.
    ``expanded`` counts the nodes taken off the open list and expanded (in the last pool the search used).
    ``level`` is the node-pool level the search started at (read) and ended at (written): see the module doc.
    ``expanded_before_last_f`` (optional: None where a batch does not keep it; the Warp and reference planners
    write it where it is an array) counts the expansions made before the search first popped a node at the largest
    f = g + h it popped: Fast Downward's "expanded until last jump", the count that does not depend on how ties in
    the last f-layer break. It is written for OK and TOO_LONG rows, 0 for the others.
    """

    status: Any  # int8[N]
    cost: Any  # float64[N]
    length: Any  # int32[N]
    actions: Any  # int32[N, L]
    expanded: Any  # int32[N]
    level: Any = None  # int8[N]
    expanded_before_last_f: Any = None  # int32[N] or None

    def __post_init__(self) -> None:
        if self.level is None:
            self.level = np.zeros(len(self), dtype=np.int8)

    @classmethod
    def empty(cls, n: int, max_plan_length: int) -> PlanBatch:
        """A host batch of ``n`` NOT_PLANNED rows, every level 0."""
        return cls(
            status=np.full(n, Status.NOT_PLANNED, dtype=np.int8),
            cost=np.full(n, np.nan, dtype=np.float64),
            length=np.zeros(n, dtype=np.int32),
            actions=np.full((n, max_plan_length), -1, dtype=np.int32),
            expanded=np.zeros(n, dtype=np.int32),
            level=np.zeros(n, dtype=np.int8),
            expanded_before_last_f=np.zeros(n, dtype=np.int32),
        )

    @classmethod
    def on_device(cls, n: int, max_plan_length: int, device: Any = None) -> PlanBatch:
        """A batch of Warp arrays on ``device``, allocated once: a Warp planner writes its rows in place."""
        from goap.kernels import init_warp

        wp = init_warp()
        return cls(
            status=wp.full(n, int(Status.NOT_PLANNED), dtype=wp.int8, device=device),
            cost=wp.full(n, float("nan"), dtype=wp.float64, device=device),
            length=wp.zeros(n, dtype=wp.int32, device=device),
            actions=wp.full((n, max_plan_length), -1, dtype=wp.int32, device=device),
            expanded=wp.zeros(n, dtype=wp.int32, device=device),
            level=wp.zeros(n, dtype=wp.int8, device=device),
            expanded_before_last_f=wp.zeros(n, dtype=wp.int32, device=device),
        )

    @property
    def max_plan_length(self) -> int:
        return int(self.actions.shape[1])

    def numpy(self) -> PlanBatch:
        """The batch with host fields (itself when it already is one; zero-copy views on the CPU device)."""
        return PlanBatch(*(host_view(getattr(self, f)) for f in _FIELDS))

    def __len__(self) -> int:
        return int(self.status.shape[0])

    def counts(self) -> dict[str, int]:
        """How many rows ended with each status, by label (``{"ok": 950, "budget": 50}``)."""
        values, counts = np.unique(host_view(self.status), return_counts=True)
        return {Status(int(v)).label: int(c) for v, c in zip(values, counts, strict=True)}

    def plan(self, i: int) -> list[int]:
        """Agent i's plan as action indices (empty unless OK)."""
        if host_view(self.status)[i] != Status.OK:
            return []
        return [int(a) for a in host_view(self.actions)[i, : host_view(self.length)[i]]]

    def segment(self, i: int) -> list[int]:
        """The steps agent i can execute now: the whole plan when OK, its first segment when TOO_LONG."""
        status = host_view(self.status)[i]
        if status == Status.OK:
            return self.plan(i)
        if status == Status.TOO_LONG:
            return [int(a) for a in host_view(self.actions)[i] if a >= 0]
        return []

    def deferred(self, n_levels: int) -> np.ndarray:
        """Mask of the rows whose search waits for a pool of a later call (BUDGET with ``level < n_levels``)."""
        return (host_view(self.status) == Status.BUDGET) & (host_view(self.level) < n_levels)

    def plan_names(self, i: int, domain: Domain) -> list[str]:
        return [domain.actions[a].name for a in self.plan(i)]


class Planner(Protocol):
    name: str
    domain: Domain
    tables: DomainTables
    max_nodes: int
    max_plan_length: int

    def plan(
        self,
        states: Any,
        goals: Any,
        costs: Any = None,
        enabled: Any = None,
        *,
        types: Any = None,
        goal_table: GoalTables | None = None,
        agents: Any = None,
        out: PlanBatch | None = None,
    ) -> PlanBatch: ...


#: Admissible heuristics, node for node the same in every planner (see `goap.planners.reference`): LM-cut, full
#: h_max, h_max truncated after two regression levels (``hmax_depth2``) or one (``hmax_depth1``: the cheapest
#: achiever of each unmet goal condition only), and pattern databases (``pdb``, `goap.planners.pdb`: exact goal
#: distances in projections of the domain, built once per goal table), and the max of LM-cut and the pattern
#: databases (``max_lmcut_pdb``: the tables first, LM-cut only where they leave the state open), saturated cost
#: partitioning over projections (``scp``, `goap.planners.scp`: systematic patterns of one and two facts, the
#: sum of their distances under costs split along an order) and its max with LM-cut (``max_lmcut_scp``, as
#: ``max_lmcut_pdb``). The h_max family, pdb and scp are consistent.
HEURISTICS = ("lmcut", "hmax", "hmax_depth2", "hmax_depth1", "pdb", "max_lmcut_pdb", "scp", "max_lmcut_scp")
#: The heuristics that read the pattern databases (the planners build them for these only).
PDB_HEURISTICS = ("pdb", "max_lmcut_pdb")
#: The heuristics that read the saturated cost partitionings (built for these only).
SCP_HEURISTICS = ("scp", "max_lmcut_scp")
#: The heuristics that add LM-cut to a table lookup.
MAX_LMCUT_HEURISTICS = ("max_lmcut_pdb", "max_lmcut_scp")
#: The planners' default: on game-sized domains hmax_depth2 makes 5-9x the plans per CPU-second of lmcut and 3-4x
#: those of hmax. Pattern databases (``pdb``) do far better on queries at the domain's own costs (2.8x on distinct
#: soldier queries, 31x on deep village ones: benchmarks/plan_throughput.py --sections versus_c), but scale their
#: tables by one factor per agent, so with the worlds' per-agent cost rows and enabled masks they expand more
#: than hmax_depth2 (the village's plan stage 3.4 -> 5.0 ms a tick at 10,000 agents): not the default yet.
DEFAULT_HEURISTIC = "hmax_depth2"
#: The default of the PDDL commands (`goap solve` on a PDDL pair, `goap bench --suite pddl`): on the IPC tasks
#: LM-cut expands far fewer nodes than the h_max family (depot/task03: 13,769 against 944,028 with hmax).
PDDL_HEURISTIC = "lmcut"
#: The PDDL commands' pruning (`goap.planners.stubborn`; every planner's own default is "none").
PDDL_PRUNING = "none"
#: Old heuristic names and their names now. Those in `DEPRECATED_HEURISTICS` are still accepted, with a
#: DeprecationWarning, until the next release; the others (``h2`` / ``h1``, which read as Haslum's h^m) are refused
#: with an error naming the new name.
RENAMED_HEURISTICS = {"hmax2": "hmax_depth2", "hmax1": "hmax_depth1", "h2": "hmax_depth2", "h1": "hmax_depth1"}
DEPRECATED_HEURISTICS = ("hmax2", "hmax1")
#: LM-cut's choice of each action's pcf (its precondition of largest h_max, through which the round's explorations
#: walk) among equal maxima: ``"highest"``, the highest condition id, every round alike; ``"stable"``, the
#: previous round's pcf while it is still a maximum, else the first maximum in the action's precondition order (as
#: Fast Downward's incremental h_max keeps an action's supporter until a precondition is strictly dearer). Both are
#: admissible; which is stronger depends on the task (see `DEFAULT_LMCUT_TIES`). ``"max"`` computes LM-cut with both
#: rules and takes the larger value (admissible, at least either's, at twice the cost per state). ``"auto"`` lets each
#: search choose for itself (`LMCUT_TIES_AUTO`).
LMCUT_TIES = ("highest", "stable", "max", "auto")
#: ``lmcut_ties="auto"``: each search chooses its tie rule as ``lmcut_zone_ties="auto"`` chooses its zone rule. Its
#: first `LMCUT_PROBE` stored states get both rules' values and keep the larger; each votes for the rule whose value
#: was the larger (none on a tie). Every later state gets "highest" unless it lost more votes than it won, then
#: "stable". With both "auto", the probe computes the four values (each rule with and without the zone rule) and
#: each choice gets its own vote: a tie rule's value there is its larger over the zone settings, and a zone
#: setting's its larger over the tie rules. LM-cut only; admissible whatever it picks.
LMCUT_TIES_AUTO = "auto"
#: The planners' default: "highest" on the 46 unit-cost IPC tasks expands 14,496 states on depot/task03 against
#: "stable"'s 40,471; "stable" lifts LM-cut on costed tasks (parcprinter p07 at the initial state: 739,085 -> 1,377,123
#: of an optimal 1,383,121). See docs/measured.md.
DEFAULT_LMCUT_TIES = "highest"


#: The goal-zone tie rule of LM-cut (Fast Downward's ``goal_zone_detection`` and ``border_detection``, on by default
#: there): as the goal zone is marked, a zero-cost achiever's pcf becomes the first of its maximal preconditions, in
#: its precondition order, that no zero-cost action achieves (the zone's border) or that is in the zone already; the
#: goal action's, the first unmet goal condition of largest h_max that no zero-cost action achieves. The choice is
#: kept in later rounds while its value stands. It changes nothing on tasks without zero-cost actions, and is
#: admissible like every pcf choice. On parcprinter p07 it lifts the initial value from 739,085 ("highest") /
#: 1,377,123 ("stable") to the optimal 1,383,121, Fast Downward's value there.
DEFAULT_LMCUT_ZONE_TIES = True
#: ``lmcut_zone_ties="max"``: LM-cut with and without the zone rule, the larger value (admissible, at least either's,
#: at twice the cost per state; with ``lmcut_ties="max"`` four times). The rule is the stronger choice on
#: parcprinter, the weaker on elevators (p05: 84,466 expansions with it, 33,987 without; docs/measured.md).
LMCUT_ZONE_MAX = "max"
#: ``lmcut_zone_ties="auto"``: each search chooses for itself. Its first `LMCUT_PROBE` stored states (the
#: initial one first) get both values and keep the larger, as "max"; each votes for the rule whose value was the
#: larger (none on a tie). Every later state gets the rule unless it lost more votes than it won, then LM-cut
#: without it: one LM-cut per state, as with either rule alone. Admissible whatever it picks; the reference and the
#: kernel count the same states (the stored ones, in storage order) and pick alike. LM-cut only.
LMCUT_ZONE_AUTO = "auto"
#: States a search probes under "auto": few enough to cost nothing on a large search (twice the LM-cut on them),
#: enough to see past the initial state (elevators p03 and p07 favour the rule there and lose with it later).
LMCUT_PROBE = 128
#: The goal-zone rule of the PDDL commands (`goap solve` on a PDDL pair, `goap bench --suite pddl`) with LM-cut:
#: "auto". On the 46 IPC tasks it expands no more states than Fast Downward's ``astar(lmcut())`` on 43 (the rule
#: alone: 41) in the same time; on the seven pddl-more domains with zero-cost actions it solves as many tasks in
#: two thirds of the time, and elevators p05 with 33,987 expansions against 84,466 (docs/measured.md). The
#: hash-distributed planner, which refuses "auto", keeps `DEFAULT_LMCUT_ZONE_TIES`.
PDDL_LMCUT_ZONE_TIES = LMCUT_ZONE_AUTO
#: The zone settings' names on the command line (``--lmcut-zone-ties``).
LMCUT_ZONE_NAMES: dict[str, bool | str] = {"on": True, "off": False, LMCUT_ZONE_MAX: LMCUT_ZONE_MAX,
                                           LMCUT_ZONE_AUTO: LMCUT_ZONE_AUTO}


#: The tie rule of the PDDL commands with LM-cut: "auto". Over the 158 tasks that both solved in one run (the 46 and
#: those of `shared/pddl-more` that either planner solved at 60 s) it expands no more states than Fast Downward's
#: ``astar(lmcut())`` until the last f-layer on 142, "highest" on 141 (tidybot p04 and p10 gained, spider p01 lost),
#: with the same coverage in about 2% more time (docs/measured.md). The hash-distributed planner keeps
#: `DEFAULT_LMCUT_TIES`.
PDDL_LMCUT_TIES = LMCUT_TIES_AUTO


def pddl_lmcut_options(planner: str, heuristic: Any) -> dict[str, Any]:
    """LM-cut's tie settings the PDDL commands give the registered ``planner`` searching with ``heuristic``, for
    those the user did not set: ``lmcut_zone_ties`` `PDDL_LMCUT_ZONE_TIES` and ``lmcut_ties`` `PDDL_LMCUT_TIES` with
    LM-cut; none (the planner's own defaults) with another heuristic and for the hash-distributed planner, whose
    workers would each probe apart."""
    if heuristic != "lmcut" or planner == "warp-hda":
        return {}
    return {"lmcut_zone_ties": PDDL_LMCUT_ZONE_TIES, "lmcut_ties": PDDL_LMCUT_TIES}


def check_lmcut_zone_ties(value: Any) -> bool | str:
    """``value`` as a bool when it is one (numpy's too), ``"max"`` and ``"auto"`` as themselves, else a ValueError
    naming the option."""
    if isinstance(value, str) and value in (LMCUT_ZONE_MAX, LMCUT_ZONE_AUTO):
        return value
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"lmcut_zone_ties must be true, false, \"max\" or \"auto\", got {value!r}")
    return bool(value)


def check_lmcut_zone_heuristic(value: Any, heuristic: str) -> bool | str:
    """`check_lmcut_zone_ties`, and "auto" only with ``heuristic="lmcut"`` (its probe compares LM-cut's values)."""
    checked = check_lmcut_zone_ties(value)
    if checked == LMCUT_ZONE_AUTO and heuristic != "lmcut":
        raise ValueError(f"lmcut_zone_ties=\"auto\" needs heuristic=\"lmcut\", got heuristic={heuristic!r}")
    return checked


def lmcut_zone_code(value: Any) -> int:
    """The kernel's code of a zone setting (`ConditionTables.lm_zone`): 0 off, 1 on, 2 the larger of both,
    3 "auto"."""
    checked = check_lmcut_zone_ties(value)
    if checked == LMCUT_ZONE_AUTO:
        return 3
    return 2 if checked == LMCUT_ZONE_MAX else int(checked)


def lmcut_ties_code(lmcut_ties: str) -> int:
    """The kernel's code of a tie rule (`ConditionTables.lm_stable`): its index in `LMCUT_TIES` (0 "highest",
    1 "stable", 2 the larger of both, 3 "auto")."""
    return LMCUT_TIES.index(check_lmcut_ties(lmcut_ties))


def check_lmcut_ties_heuristic(lmcut_ties: str, heuristic: str) -> str:
    """`check_lmcut_ties`, and "auto" only with ``heuristic="lmcut"`` (its probe compares LM-cut's values)."""
    checked = check_lmcut_ties(lmcut_ties)
    if checked == LMCUT_TIES_AUTO and heuristic != "lmcut":
        raise ValueError(f"lmcut_ties=\"auto\" needs heuristic=\"lmcut\", got heuristic={heuristic!r}")
    return checked


def check_lmcut_ties(lmcut_ties: str) -> str:
    """``lmcut_ties`` if it is one of `LMCUT_TIES`, else a ValueError naming them."""
    if lmcut_ties not in LMCUT_TIES:
        raise ValueError(f"lmcut_ties must be one of {', '.join(LMCUT_TIES)}, got {lmcut_ties!r}")
    return lmcut_ties


def heuristic_name(heuristic: str) -> str:
    """The current name of ``heuristic``: a deprecated alias gives its new name (and a DeprecationWarning naming it),
    a refused old name or an unknown one a ValueError listing the known names."""
    new = RENAMED_HEURISTICS.get(heuristic)
    if new is not None and heuristic in DEPRECATED_HEURISTICS:
        warnings.warn(
            f"heuristic {heuristic!r} is now called {new!r} (h_max truncated after {new[-1]} regression level(s), "
            f"not Haslum's h^{new[-1]}); the old name goes in the next release",
            DeprecationWarning, stacklevel=3,
        )
        return new
    if new is not None:
        raise ValueError(
            f"heuristic {heuristic!r} is now called {new!r} (h_max truncated after {new[-1]} regression level(s); "
            f"Haslum's h^m it never was); known: {', '.join(HEURISTICS)}"
        )
    if heuristic not in HEURISTICS:
        raise ValueError(f"unknown heuristic {heuristic!r} (known: {', '.join(HEURISTICS)})")
    return heuristic


#: A* reopens a closed state reached again more cheaply, which only an inconsistent heuristic (LM-cut) causes; so
#: that a search stays bounded, one with a pool of M states pops (closes) at most POP_FACTOR * (M + 1) states,
#: reopened ones counted again, and ends BUDGET past that (the next pool level allows more). A consistent
#: heuristic never reopens, and then a search closes at most M states: the limit is never reached.
POP_FACTOR = 4
#: Expansions after which a first-pool search whose heuristic does not see relaxed unreachability (the truncated
#: h_max ones and pattern databases over part of a cone: `RELAXED_CHECK_HEURISTICS`; h_max and LM-cut are inf
#: exactly where the goal is relaxed-unreachable)
#: checks it once, so that an unreachable goal is proved so then rather than by exhausting the reachable states.
#: Easy queries end before it and never pay for the check.
RELAXED_CHECK_AFTER = 32
RELAXED_CHECK_HEURISTICS = ("hmax_depth2", "hmax_depth1", "pdb", "scp")


def pop_limit(pool: int) -> int:
    """The most pops (closed states, counting reopened ones again) a search with ``pool`` states may make."""
    return POP_FACTOR * (int(pool) + 1)


def pool_levels(max_nodes: int, growth: int, node_ceiling: int) -> list[int]:
    """Pool sizes of levels 0, 1, ...: ``max_nodes * growth**l``, the last one clamped to ``node_ceiling``."""
    pools = [int(max_nodes)]
    while pools[-1] < node_ceiling and len(pools) < MAX_LEVELS and growth > 1:
        pools.append(int(min(node_ceiling, pools[-1] * growth)))
    return pools


def check_options(
    max_nodes: int,
    max_plan_length: int,
    weight: float = 1.0,
    heuristic: str = DEFAULT_HEURISTIC,
    growth: int = DEFAULT_GROWTH,
    node_ceiling: int | None = None,
) -> None:
    """Refuse options no planner can honour, with the option's name and the accepted range."""
    if not isinstance(max_nodes, int | np.integer) or not 2 <= max_nodes <= 2**28:
        raise ValueError(f"max_nodes must be an integer in 2..2**28, got {max_nodes!r}")
    if not isinstance(max_plan_length, int | np.integer) or not 1 <= max_plan_length <= 4096:
        raise ValueError(f"max_plan_length must be an integer in 1..4096, got {max_plan_length!r}")
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 1.0 <= weight < float("inf"):
        raise ValueError(f"weight must be a finite number >= 1, got {weight!r}")
    if heuristic not in HEURISTICS and heuristic not in DEPRECATED_HEURISTICS:
        heuristic_name(heuristic)  # raises, naming the new name or the known ones
    if isinstance(growth, bool) or not isinstance(growth, int | np.integer) or not 1 <= growth <= 1024:
        raise ValueError(f"growth must be an integer in 1..1024, got {growth!r}")
    if node_ceiling is not None and (
        isinstance(node_ceiling, bool)
        or not isinstance(node_ceiling, int | np.integer)
        or not max_nodes <= node_ceiling <= 2**28
    ):
        raise ValueError(f"node_ceiling must be an integer in max_nodes..2**28, got {node_ceiling!r}")


def check_inputs(
    tables: DomainTables,
    goal_table: GoalTables,
    states: np.ndarray,
    goals: np.ndarray,
    costs: np.ndarray | None,
    enabled: np.ndarray | None,
    agents: np.ndarray | None,
    types: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """Validate shapes, dtypes and ranges of host inputs; returns them as contiguous numpy arrays (``types`` is
    checked too, `check_types`, and converted by it)."""
    states = np.ascontiguousarray(states, dtype=np.uint64)
    W, A = tables.n_words, tables.n_actions
    if states.ndim != 2 or states.shape[1] != W:
        raise ValueError(f"states must have shape [N, {W}], got {states.shape}")
    n = states.shape[0]
    goals = np.ascontiguousarray(goals, dtype=np.int32).reshape(-1)
    if goals.shape != (n,):
        raise ValueError(f"goals must have shape [{n}], got {goals.shape}")
    if costs is not None:
        costs = np.ascontiguousarray(costs, dtype=np.float32)
        if costs.shape != (n, A):
            raise ValueError(f"costs must have shape [{n}, {A}], got {costs.shape}")
        if not np.all(np.isfinite(costs)) or np.any(costs < 0) or np.any(costs > MAX_COST):
            raise ValueError(f"costs must be finite and in 0..{MAX_COST:g}")
    if enabled is not None:
        enabled = np.ascontiguousarray(enabled, dtype=np.bool_)
        if enabled.shape != (n, A):
            raise ValueError(f"enabled must have shape [{n}, {A}], got {enabled.shape}")
    if agents is not None:
        agents = np.asarray(agents)
        if agents.dtype == np.bool_:
            if agents.shape != (n,):
                raise ValueError(f"an agent mask must have shape [{n}], got {agents.shape}")
            agents = np.flatnonzero(agents)
        agents = np.ascontiguousarray(agents, dtype=np.int32).reshape(-1)
        if len(agents) and (agents.min() < 0 or agents.max() >= n):
            raise ValueError(f"agent indices must be in 0..{n - 1}")
    check_types(tables, types, n, agents)
    planned = goals if agents is None else goals[agents]
    if len(planned) and (planned.min() < 0 or planned.max() >= goal_table.n_goals):
        raise ValueError(f"goal indices of the agents planned must be in 0..{goal_table.n_goals - 1}")
    return states, goals, costs, enabled, agents


def check_types(tables: DomainTables, types: Any, n: int, agents: np.ndarray | None = None) -> np.ndarray | None:
    """``types`` as a contiguous int32[n] host array (None stays None), every planned row's type an index of
    ``Domain.types``; a ValueError naming the row and the known types otherwise."""
    if types is None:
        return None
    types = np.ascontiguousarray(types)
    if types.dtype.kind not in "iu":
        raise ValueError(f"types must be an integer array of agent type indices, got dtype {types.dtype}")
    if types.shape != (n,):
        raise ValueError(f"types must have shape [{n}], got {types.shape}")
    planned = types if agents is None else types[np.asarray(agents, dtype=np.int64)]
    T = len(tables.domain.types)
    bad = np.flatnonzero((planned < 0) | (planned >= T))
    if len(bad):
        row = int(bad[0]) if agents is None else int(np.asarray(agents)[bad[0]])
        known = ", ".join(f"{i} ({t.name})" for i, t in enumerate(tables.domain.types))
        raise ValueError(f"row {row}: agent type {int(planned[bad[0]])} is out of range (types: {known})")
    return types.astype(np.int32, copy=False)


def check_capturable(wp: Any, out: PlanBatch | None, **inputs: Any) -> None:
    """Under capture every input and result must live on the device already: a host array would be read (or
    copied) once, at capture, not at every replay."""
    host = [name for name, x in inputs.items() if x is not None and not isinstance(x, wp.array)]
    if out is None:
        host.append("out (pass a PlanBatch.on_device)")
    else:
        host += [f"out.{name}" for name in _FIELDS if getattr(out, name) is not None
                 and not isinstance(getattr(out, name), wp.array)]
    if host:
        raise CaptureError(
            f"plan() under capture needs Warp arrays on the planner's device; host data given for {', '.join(host)}"
        )


# --- registry ----------------------------------------------------------------------------------------------
#: name -> "module:Class"; imported on first use so that listing planners does not load Warp.
PLANNERS: dict[str, str] = {
    "reference": "goap.planners.reference:ReferencePlanner",
    "warp": "goap.planners.warp_astar:WarpAStarPlanner",
    "warp-wastar": "goap.planners.warp_astar:WarpWeightedAStarPlanner",
    "warp-greedy": "goap.planners.warp_astar:WarpGreedyPlanner",
    "warp-hda": "goap.planners.hda:HdaPlanner",
}


def make_planner(name: str, domain: Domain | DomainTables, **options: Any) -> Planner:
    """Create a registered planner for a domain, e.g. ``make_planner("warp", domain, device="cpu")``.

    ``dedupe=True`` and/or ``plan_cache=K`` wrap it in `goap.planners.dedupe.DedupingPlanner`: the equal queries
    of a call are searched once, and a K-entry cache answers queries seen in earlier calls.
    """
    dedupe, plan_cache = options.pop("dedupe", False), options.pop("plan_cache", 0)
    if name not in PLANNERS:
        raise ValueError(f"unknown planner '{name}' (known: {', '.join(sorted(PLANNERS))})")
    module_name, cls_name = PLANNERS[name].split(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    planner = cls(domain, **options)
    if dedupe or plan_cache:
        from goap.planners.dedupe import wrap

        return wrap(planner, dedupe=bool(dedupe), plan_cache=plan_cache)
    return planner


@dataclass(frozen=True)
class ConditionTables:
    """The distinct action preconditions of a domain, for h_max and LM-cut (the Warp mirror has the same names).

    Condition c is ``field(word[c], shift[c], mask[c]) op[c] k[c]`` (encoded values); action a's preconditions
    are ``action_cond[action_start[a]:action_start[a + 1]]``; the actions achieving c (`goap.domain.achieves`)
    are ``achiever_action[achiever_start[c]:achiever_start[c + 1]]``. The same graph read the other way, for
    the generalized Dijkstra of h_max and LM-cut's explorations: the actions with c among their preconditions
    (``pre_of_action[pre_of_start[c]:pre_of_start[c + 1]]``, once per occurrence, ascending) and the conditions
    action a achieves (``effect_cond[effect_start[a]:effect_start[a + 1]]``, ascending).
    """

    word: np.ndarray  # int32[C]
    shift: np.ndarray  # int32[C]
    mask: np.ndarray  # uint64[C]
    op: np.ndarray  # int32[C]
    k: np.ndarray  # uint64[C]
    action_start: np.ndarray  # int32[A + 1]
    action_cond: np.ndarray  # int32[...]
    achiever_start: np.ndarray  # int32[C + 1]
    achiever_action: np.ndarray  # int32[...]
    default_pre_cost: np.ndarray  # float64[P]: cheapest achiever of each action precondition at the domain's least
    # costs (`DomainTables.min_cost`)
    pre_of_start: np.ndarray  # int32[C + 1]
    pre_of_action: np.ndarray  # int32[...]
    effect_start: np.ndarray  # int32[A + 1]
    effect_cond: np.ndarray  # int32[...]
    #: LM-cut's pcf ties (`LMCUT_TIES`): 0 "highest", 1 "stable", 2 "max", 3 "auto"; a planner option, set on the
    #: device copy.
    lm_stable: int = 0
    #: 1: LM-cut's goal-zone tie rule (`DEFAULT_LMCUT_ZONE_TIES`), 0: off; a planner option, set on the device copy.
    lm_zone: int = 1

    @property
    def n_conditions(self) -> int:
        return len(self.word)

    @property
    def n_actions(self) -> int:
        return len(self.action_start) - 1


def condition_tables(tables: DomainTables) -> ConditionTables:
    """Number the distinct preconditions of ``tables``' domain and list each one's achievers."""
    from goap.domain import achieves
    from goap.encoding import OP_CODES

    domain, layout = tables.domain, tables.layout
    ids: dict[Any, int] = {}
    conds, rows = [], []
    for action in domain.actions:
        row = []
        for c in action.pre:
            if c not in ids:
                ids[c] = len(conds)
                conds.append(c)
            row.append(ids[c])
        rows.append(row)
    facts = [domain.fact_index(c.fact) for c in conds]
    ach = [[b for b, action in enumerate(domain.actions) if achieves(action, c)] for c in conds]
    # per distinct condition, not per precondition: a grounded PDDL task repeats a few hundred conditions in tens of
    # thousands of preconditions (spider-opt18-strips/p07 spent 3 minutes here)
    # each achiever at its least cost over every state (`DomainTables.min_cost`: cost terms at their cheaper end)
    cheapest = [min((float(tables.min_cost[b]) for b in row), default=np.inf) for row in ach]

    def starts(lists: list[list[int]]) -> np.ndarray:
        return np.concatenate([[0], np.cumsum([len(r) for r in lists])]).astype(np.int32)

    pre_of: list[list[int]] = [[] for _ in conds]
    for a, row in enumerate(rows):
        for c in row:
            pre_of[c].append(a)
    effects: list[list[int]] = [[] for _ in domain.actions]
    for c, row in enumerate(ach):
        for b in row:
            effects[b].append(c)

    return ConditionTables(
        word=np.array([layout.word[f] for f in facts], dtype=np.int32),
        shift=np.array([layout.shift[f] for f in facts], dtype=np.int32),
        mask=np.array([layout.field_mask(f) for f in facts], dtype=np.uint64),
        op=np.array([OP_CODES[c.op] for c in conds], dtype=np.int32),
        k=np.array([c.value - int(layout.min[f]) for c, f in zip(conds, facts, strict=True)], dtype=np.uint64),
        action_start=starts(rows),
        action_cond=np.array([c for r in rows for c in r], dtype=np.int32),
        achiever_start=starts(ach),
        achiever_action=np.array([b for r in ach for b in r], dtype=np.int32),
        default_pre_cost=np.array([cheapest[c] for r in rows for c in r], dtype=np.float64),
        pre_of_start=starts(pre_of),
        pre_of_action=np.array([a for r in pre_of for a in r], dtype=np.int32),
        effect_start=starts(effects),
        effect_cond=np.array([c for r in effects for c in r], dtype=np.int32),
    )


@dataclass(frozen=True)
class Relevance:
    """Per goal: the preconditions its h_max can depend on, and the actions achieving them or its conditions.

    Goal g's conditions are achieved by some actions; their preconditions by others, and so on: the closure is the
    goal's backward cone. h_max values inside it do not depend on anything outside, so a search computes only
    those (the Warp mirror has the same field names). ``atom_cond[j]`` is the `ConditionTables` id of the goal
    table's atom j when some action has that very condition as a precondition, else -1 (a condition only the goal
    needs): LM-cut treats an atom and an equal precondition as one node of its graph. ``free`` lists the cone's
    actions without preconditions (LM-cut's explorations start from them as from the state's true conditions).
    """

    cond_start: np.ndarray  # int32[G + 1]
    cond: np.ndarray  # int32[...], ids into ConditionTables
    action_start: np.ndarray  # int32[G + 1]
    action: np.ndarray  # int32[...]
    atom_cond: np.ndarray  # int32[total atoms]
    free_start: np.ndarray  # int32[G + 1]
    free: np.ndarray  # int32[...]: the cone's actions without preconditions, ascending


def relevance(conds: ConditionTables, goal_table: GoalTables) -> Relevance:
    """The backward cone of every goal of ``goal_table`` over ``conds`` (sorted ids, for a stable order)."""
    cond_rows, action_rows, free_rows = [], [], []
    at = goal_table.atoms
    for g in range(goal_table.n_goals):
        actions: set[int] = set()
        for j in range(int(at.start[g]), int(at.start[g + 1])):
            lo, hi = int(goal_table.achievers[j]), int(goal_table.achievers[j + 1])
            actions.update(int(a) for a in goal_table.achiever_action[lo:hi])
        seen: set[int] = set()
        frontier = list(actions)
        while frontier:
            a = frontier.pop()
            for c in conds.action_cond[conds.action_start[a]:conds.action_start[a + 1]]:
                c = int(c)
                if c in seen:
                    continue
                seen.add(c)
                for b in conds.achiever_action[conds.achiever_start[c]:conds.achiever_start[c + 1]]:
                    b = int(b)
                    if b not in actions:
                        actions.add(b)
                        frontier.append(b)
        cond_rows.append(sorted(seen))
        action_rows.append(sorted(actions))
        free_rows.append([a for a in action_rows[-1] if conds.action_start[a] == conds.action_start[a + 1]])

    def starts(rows: list[list[int]]) -> np.ndarray:
        return np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int32)

    ids = {
        (int(conds.word[c]), int(conds.shift[c]), int(conds.mask[c]), int(conds.op[c]), int(conds.k[c])): c
        for c in range(conds.n_conditions)
    }
    atom_cond = [
        ids.get((int(at.word[j]), int(at.shift[j]), int(at.mask[j]), int(at.op[j]), int(at.k[j])), -1)
        for j in range(len(at.word))
    ]
    return Relevance(
        cond_start=starts(cond_rows), cond=np.array([c for r in cond_rows for c in r], dtype=np.int32),
        action_start=starts(action_rows), action=np.array([a for r in action_rows for a in r], dtype=np.int32),
        atom_cond=np.array(atom_cond, dtype=np.int32),
        free_start=starts(free_rows), free=np.array([a for r in free_rows for a in r], dtype=np.int32),
    )

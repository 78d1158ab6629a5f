"""Benchmark suites: what problems every planner is given, as `ProblemBatch` groups made from small recipes.

A suite is a list of *recipes* (`PddlRecipe`, `RandomRecipe`, `BatchRecipe`): small picklable objects that
build one `ProblemBatch` when asked. The runner loads each recipe where it runs, so on a Ray cluster a worker
grounds its own PDDL task from the file texts it was sent, and nothing but the recipe crosses the network.

* ``pddl``: the STRIPS tasks of a folder laid out as ``DOMAIN/domain.pddl`` + ``DOMAIN/taskNN.pddl`` (by
  default the IPC set shipped with the package, see `default_tasks_dir`), one task per batch, grounded by
  `goap.pddl` under `goap.pddl.GroundingLimits`. A task's optimum comes from ``optimal.json`` in that folder
  (`read_optima`: the plain form ``{"blocks/task05.pddl": 10}`` or the shipped one, ``{"problems":
  {"blocks/task05.pddl": {"optimal_cost": 10}}}``; null where the optimum is unknown).
* ``random``: `goap.bench.random_domains` domains of ``--facts`` sizes, ``--problems`` problems each.
* ``world:NAME``: (state, goal) problems recorded from a real run of a world (any spec
  `goap.registry.load_world` takes): a `goap.runtime.Brain` of ``--agents`` agents runs ``--ticks`` ticks and
  every search it asks for is kept.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from goap.argtypes import int_list


@dataclass
class ProblemBatch:
    """One group of problems on one domain: what every planner is given, and what judges its answers.

    Attributes:
        suite, group: where it comes from (``"pddl"``, ``"blocks"``).
        ids: one name per problem (``"blocks/task01"``, ``"16f/3"``).
        tables: the encoded domain (`goap.encoding.DomainTables`).
        states: uint64[N, W] packed start states; goals: int32[N] goal indices.
        costs: float32[N, A] per-problem action costs, or None for the domain's; enabled: bool[N, A] or None.
        optimal: the known optimum of each problem (None where unknown).
        info: columns copied to every row (``n_facts``, ``n_actions``, ``ground_seconds``).
        tasks: for PDDL batches, the `goap.pddl.PddlTask` of each problem (external planners read its files;
            the validator replays plans on its lifted task).
    """

    suite: str
    group: str
    ids: list[str]
    tables: Any
    states: np.ndarray
    goals: np.ndarray
    costs: np.ndarray | None = None
    enabled: np.ndarray | None = None
    optimal: list[float | None] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    tasks: list[Any] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def subset(self, rows: np.ndarray) -> ProblemBatch:
        """The problems at ``rows`` (for timing each one alone)."""
        rows = np.asarray(rows, dtype=np.int64)
        pick = [int(i) for i in rows]
        return ProblemBatch(
            suite=self.suite, group=self.group, ids=[self.ids[i] for i in pick], tables=self.tables,
            states=self.states[rows], goals=self.goals[rows],
            costs=None if self.costs is None else self.costs[rows],
            enabled=None if self.enabled is None else self.enabled[rows],
            optimal=None if self.optimal is None else [self.optimal[i] for i in pick], info=dict(self.info),
            tasks=None if self.tasks is None else [self.tasks[i] for i in pick],
        )


class Recipe(Protocol):
    """What a suite is made of: a picklable promise of one batch."""

    suite: str
    group: str
    ids: list[str]

    def load(self) -> ProblemBatch: ...


# --- pddl ----------------------------------------------------------------------------------------------------
@dataclass
class PddlRecipe:
    """One PDDL task, as file texts (so a cluster worker needs no shared file system)."""

    name: str
    domain_file: str
    problem_file: str
    domain_text: str
    problem_text: str
    optimum: float | None = None
    limits: Any = None  # goap.pddl.GroundingLimits
    suite: str = "pddl"

    @property
    def group(self) -> str:
        return self.name.split("/")[0]

    @property
    def ids(self) -> list[str]:
        return [self.name]

    def lifted(self) -> tuple[Any, Any]:
        """The task read but not grounded: what the plan validator needs, even when grounding fails."""
        from goap.pddl.lifted import read_domain, read_problem

        lifted = read_domain(self.domain_text, self.domain_file)
        return lifted, read_problem(self.problem_text, self.problem_file, lifted)

    def load(self, translate: str | None = None) -> ProblemBatch:
        """The task grounded, in the form ``translate`` (`goap.pddl.TRANSLATIONS`; None: the default), encoded."""
        from goap.encoding import encode
        from goap.pddl import DEFAULT_TRANSLATION, parse_task

        task = parse_task(self.domain_text, self.problem_text, self.name, self.domain_file, self.problem_file,
                          self.limits, translate or DEFAULT_TRANSLATION)
        tables = encode(task.domain)
        info = {"n_facts": task.n_facts, "n_actions": task.n_actions, "ground_seconds": task.ground_seconds}
        if task.translation is not None:
            tr = task.translation
            info.update(strips_facts=tr.strips_facts, strips_actions=tr.strips_actions,
                        n_variables=len(tr.variables), translate_seconds=round(tr.seconds, 6))
        return ProblemBatch(
            suite=self.suite, group=self.group, ids=[self.name], tables=tables, states=tables.pack(task.state)[None],
            goals=np.array([task.goal], dtype=np.int32), optimal=[self.optimum], tasks=[task], info=info,
        )


def default_tasks_dir() -> Path:
    """The IPC task set: ``$GOAP_PDDL_DIR``, else the copy shipped in the package, else a checkout's
    ``benchmarks/pddl``."""
    env = os.environ.get("GOAP_PDDL_DIR")
    if env:
        return Path(env)
    packaged = Path(__file__).resolve().parent / "ipc"
    if (packaged / "optimal.json").is_file():
        return packaged
    return Path(__file__).resolve().parents[2] / "benchmarks" / "pddl"


def read_optima(path: str | Path, tasks: list[str]) -> tuple[dict[str, float | None], list[str]]:
    """`goap.pddl.read_optima` (the one reader of ``optimal.json``)."""
    from goap.pddl import read_optima as read

    return read(path, tasks)


def pddl_suite(root: str | Path | None, domains: str | None = None, tasks: str | None = None,
               limits: Any = None) -> list[PddlRecipe]:
    """The recipes of a PDDL folder, filtered by domain names and task patterns (see ``goap bench --help``)."""
    from goap.pddl import pddl_tasks

    root = Path(root) if root else default_tasks_dir()
    if not root.is_dir():
        raise ValueError(f"no PDDL task folder at {root} (pass --tasks-dir DIR or set GOAP_PDDL_DIR)")
    found = pddl_tasks(root)
    optimum, warnings = read_optima(root / "optimal.json", [name for _, _, name in found])
    for w in warnings:
        print(f"goap: warning: {w}", file=sys.stderr)
    known = sorted({name.split("/")[0] for _, _, name in found})
    if domains:
        wanted = [d.strip() for d in str(domains).split(",") if d.strip()]
        for d in wanted:
            if d not in known:
                raise ValueError(f"unknown PDDL domain '{d}' in {root} (known: {', '.join(known)})")
        found = [t for t in found if t[2].split("/")[0] in wanted]
    if tasks:
        pats = [p.strip() for p in str(tasks).split(",") if p.strip()]
        found = [t for t in found if any(_match(t[2], p) for p in pats)]
    if not found:
        raise ValueError(f"no PDDL task matches (domains {domains or 'all'}, tasks {tasks or 'all'}) in {root}")
    texts: dict[Path, str] = {}
    out = []
    for dom, prob, name in found:
        if dom not in texts:
            texts[dom] = _read(dom)
        out.append(PddlRecipe(name, str(dom), str(prob), texts[dom], _read(prob), optimum.get(name), limits))
    return out


def _read(path: Path) -> str:
    from goap.pddl.reader import read_file

    return read_file(str(path))


def _match(name: str, pattern: str) -> bool:
    stem = name.split("/")[-1]
    if not any(c in pattern for c in "*?["):
        return pattern in name
    return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(stem, pattern)


# --- random --------------------------------------------------------------------------------------------------
@dataclass
class RandomRecipe:
    """``problems`` seeded random problems on the random domain of ``size`` facts."""

    size: int
    problems: int
    seed: int
    suite: str = "random"

    @property
    def group(self) -> str:
        return f"{self.size}f"

    @property
    def ids(self) -> list[str]:
        return [f"{self.group}/{i}" for i in range(self.problems)]

    def load(self) -> ProblemBatch:
        from goap.bench.random_domains import random_domain, random_problems
        from goap.encoding import encode

        domain = random_domain(self.seed, n_facts=self.size)
        probs = random_problems(domain, self.problems, seed=self.seed)
        tables = encode(domain)
        return ProblemBatch(
            suite=self.suite, group=self.group, ids=self.ids, tables=tables,
            states=tables.pack_states(probs.values), goals=probs.goals.astype(np.int32),
            info={"n_facts": len(domain.facts), "n_actions": len(domain.actions)},
        )


def random_suite(facts: str, problems: int, seed: int) -> list[RandomRecipe]:
    try:
        sizes = int_list(facts)
    except ValueError:
        raise ValueError(f"--facts: expected comma-separated integers, got {facts!r}") from None
    if not sizes or any(s < 2 for s in sizes):
        raise ValueError(f"--facts: sizes must be integers >= 2, got {facts!r}")
    if any(s > 100_000 for s in sizes):
        raise ValueError(f"--facts: sizes must be at most 100000, got {facts!r}")
    return [RandomRecipe(s, problems, seed) for s in sizes]


# --- world ---------------------------------------------------------------------------------------------------
@dataclass
class BatchRecipe:
    """A batch made already (a world run recorded on the driver), shipped as it is."""

    batch: ProblemBatch

    @property
    def suite(self) -> str:
        return self.batch.suite

    @property
    def group(self) -> str:
        return self.batch.group

    @property
    def ids(self) -> list[str]:
        return self.batch.ids

    def load(self) -> ProblemBatch:
        return self.batch


class PlanRecorder:
    """Records every search a Brain asks for, before it is planned: (tick, agents, states, goals, costs, enabled).

    Attached with the Brain's hook, ``brain.on_plan(recorder.record)``.
    """

    def __init__(self) -> None:
        self.records: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, Any, Any]] = []
        self.tick = 0

    def attach(self, brain: Any) -> None:
        brain.on_plan(self.record)

    def record(self, states: Any, goals: Any, costs: Any = None, enabled: Any = None, agents: Any = None,
               count: Any = None) -> None:
        """Keep the rows planned in this call (numpy or Warp arrays, on any device)."""
        goals = _host(goals)
        rows = np.arange(len(goals)) if agents is None else _host(agents)
        if rows.dtype == np.bool_:
            rows = np.flatnonzero(rows)
        rows = rows.astype(np.int64)
        if count is not None:
            rows = rows[: int(_host(count).reshape(-1)[0])]
        self.records.append((
            self.tick, rows, _host(states)[rows].copy(), goals[rows].copy(),
            None if costs is None else _host(costs)[rows].copy(),
            None if enabled is None else _host(enabled)[rows].copy(),
        ))


def _host(x: Any) -> np.ndarray:
    return x.numpy() if hasattr(x, "numpy") and not isinstance(x, np.ndarray) else np.asarray(x)


def world_suite(world_name: str, agents: int, ticks: int, problems: int, seed: int,
                device: str | None = None) -> list[BatchRecipe]:
    """Run the world once, record its searches, keep an even sample of ``problems`` of them."""
    from goap.registry import load_world
    from goap.runtime import Brain

    world = load_world(world_name)
    brain = Brain(world.domain, agents, world=world, planner="warp", device=device, seed=seed)
    recorder = PlanRecorder()
    recorder.attach(brain)
    for t in range(ticks):
        recorder.tick = t
        brain.tick()
    ids, states, goals, costs, enabled = [], [], [], [], []
    for tick, rows, s, g, c, e in recorder.records:
        ids += [f"{world_name}/t{tick}/a{int(a)}" for a in rows]
        states.append(s)
        goals.append(g)
        costs.append(c if c is not None else np.repeat(brain.tables.cost[None], len(rows), axis=0))
        enabled.append(e if e is not None else np.ones((len(rows), brain.tables.n_actions), dtype=bool))
    if not ids:
        raise ValueError(f"world '{world_name}' asked for no plans in {ticks} ticks")
    keep = np.arange(len(ids))
    if len(ids) > problems:  # an even sample over the whole run
        keep = np.unique(np.linspace(0, len(ids) - 1, problems).round().astype(np.int64))
    batch = ProblemBatch(
        suite=f"world:{world_name}", group=world_name, ids=[ids[i] for i in keep], tables=brain.tables,
        states=np.concatenate(states)[keep], goals=np.concatenate(goals)[keep].astype(np.int32),
        costs=np.concatenate(costs)[keep].astype(np.float32), enabled=np.concatenate(enabled)[keep].astype(bool),
        info={"n_facts": len(brain.domain.facts), "n_actions": len(brain.domain.actions)},
    )
    return [BatchRecipe(batch)]


"""``goap bench``: run planners headless over a suite of problems and compare them.

Suites:

* ``pddl``: the STRIPS tasks of a folder laid out as ``DOMAIN/domain.pddl`` + ``DOMAIN/taskNN.pddl`` (by default
  the IPC set in ``benchmarks/pddl``), each grounded by `goap.pddl` and planned as one agent. A task's
  optimum comes from ``optimal.json`` in that folder, else from the reference planner when it solved the task
  (other planners are judged against it; the reference is never judged against itself).
* ``random``: `goap.bench.random_domains` domains of ``--facts`` sizes, ``--problems`` problems each. The optimum
  is the reference planner's cost.
* ``world:NAME``: (state, goal) problems sampled from a real run of a world (``worlds.make_world``): a
  `goap.runtime.Brain` of ``--agents`` agents runs ``--ticks`` ticks, and every search it asks for is recorded
  (state, goal, per-agent costs and enabled actions) before it is planned; then every planner gets the same
  problems. The optimum is the reference planner's cost.

Timing and limits, honestly:

* ``seconds`` is the planning call only; building the planner (encoding, compiling or loading kernels, and a
  warm-up call on states that already satisfy the goals, which allocates the search scratch) is
  ``setup_seconds``. Planners other than the reference get a suite's problems of one domain in one batched
  call (how the engine is used): each row's ``seconds`` is that call's time divided by its problems
  (``batch`` says how many), and plans/s is problems over call time. The reference planner is serial anyway
  and is called per problem.
* ``--time-limit`` interrupts the reference planner (a Python loop) with a SIGALRM timer: status ``timeout``.
  That needs the main thread of a POSIX process; elsewhere the limit is not enforced (``time_limit_enforced``
  is false in the JSON). A Warp search is one launch that cannot be stopped: it is bounded by ``--max-nodes``,
  and a row that took longer than the limit (its share of a batched call, for a batch) is reported with its
  real status and ``over_time: true``.
  ``solved`` counts only rows solved within the limit.

Rows are ``{"suite", "group", "problem", "planner", "status", "cost", "length", "expanded", "seconds", ...}``;
the summary has one entry per (suite, group, planner) and one per (suite, planner) with group ``"all"``.
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import io
import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from goap.argtypes import positive_float, positive_int
from goap.planners.base import DEFAULT_MAX_NODES, DEFAULT_MAX_PLAN_LENGTH, PLANNERS, Status

PDDL_MAX_NODES = 1_000_000
PDDL_MAX_PLAN_LENGTH = 256
SOLVED = ("ok", "satisfied")
ROW_KEYS = (
    "suite", "group", "problem", "planner", "status", "cost", "length", "expanded", "seconds", "optimal",
    "optimal_source", "over_time", "batch", "setup_seconds", "n_facts", "n_actions",
)


# --- arguments -------------------------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of ``goap bench`` (the CLI adds them to its ``bench`` subcommand)."""
    p = parser
    p.add_argument("--suite", default="pddl", help="pddl, random or world:NAME (world:village, world:soldier)")
    p.add_argument("--planners", default="reference,warp", help="comma-separated planner names (goap planners)")
    p.add_argument("--planner-option", action="append", default=[], metavar="[PLANNER:]KEY=VALUE",
                   help="passed to make_planner (repeatable; VALUE is JSON or a string; PLANNER: limits it to one)")
    p.add_argument("--device", default=None, help="Warp device for Warp planners (cpu, cuda:0); default: Warp's")
    p.add_argument("--max-nodes", type=positive_int, default=None,
                   help=f"states one search may store (default {PDDL_MAX_NODES:,} for pddl, "
                        f"{DEFAULT_MAX_NODES} otherwise)")
    p.add_argument("--max-plan-length", type=positive_int, default=None,
                   help=f"default {PDDL_MAX_PLAN_LENGTH} for pddl, {DEFAULT_MAX_PLAN_LENGTH} otherwise")
    p.add_argument("--time-limit", type=positive_float, default=60.0, metavar="S",
                   help="seconds per problem (default 60): interrupts the reference planner; see the docs for Warp")
    p.add_argument("--pddl-root", default=None, metavar="DIR",
                   help="folder of DOMAIN/domain.pddl + DOMAIN/taskNN.pddl "
                        "(default: $GOAP_PDDL_DIR or benchmarks/pddl)")
    p.add_argument("--domains", default=None, help="pddl: comma-separated domain folders (default: all)")
    p.add_argument("--tasks", default=None,
                   help="pddl: glob on 'domain/taskNN' or 'taskNN', comma-separated; no wildcard: a substring")
    p.add_argument("--facts", default="16,64,256", help="random: comma-separated domain sizes (default 16,64,256)")
    p.add_argument("--problems", type=positive_int, default=100,
                   help="random: problems per size; world: most problems kept (default 100)")
    p.add_argument("--agents", type=positive_int, default=1000, help="world: agents (default 1000)")
    p.add_argument("--ticks", type=positive_int, default=100, help="world: ticks (default 100)")
    p.add_argument("--seed", type=int, default=0, help="random and world: seed (default 0)")
    p.add_argument("--selectors", default=None,
                   help="world: compare goal selectors instead of planners (priority,utility), one run each")
    p.add_argument("--model", metavar="FILE", help="world: the utility selector's model (goap train)")
    p.add_argument("--plan-budget", type=positive_int, default=None,
                   help="world: agents planned per tick (default: a tenth of the agents, at least 256)")
    p.add_argument("--json", metavar="FILE", help="write {results, summary} as one JSON object")
    p.add_argument("--csv", metavar="FILE", help="write the result rows as CSV")
    p.add_argument("--plot", metavar="FILE.png", help="plots: time, cost ratio, scaling with facts (matplotlib)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no table")
    return p


def build_parser() -> argparse.ArgumentParser:
    return add_arguments(argparse.ArgumentParser(prog="goap bench", description=__doc__.split("\n")[0]))


def main(argv: list[str] | None = None) -> int:
    """``python -m goap.bench.suite``: the same as ``goap bench`` (the same options and error handling)."""
    from goap.cli import main as goap_main

    return goap_main(["bench", *(sys.argv[1:] if argv is None else argv)])


# --- the run ---------------------------------------------------------------------------------------------------
@dataclass
class Problems:
    """One group of problems on one domain: what every planner is given."""

    suite: str
    group: str
    ids: list[str]
    tables: Any  # DomainTables
    states: np.ndarray  # uint64[N, W]
    goals: np.ndarray  # int32[N]
    costs: np.ndarray | None = None
    enabled: np.ndarray | None = None
    optimal: list[float | None] | None = None
    extra: dict[str, Any] | None = None


def run(args: argparse.Namespace) -> int:
    """Run ``goap bench``; raises ValueError / DomainError with a clear message for bad input."""
    suite = str(args.suite)
    if getattr(args, "selectors", None):
        return _run_selectors(args, suite)
    planners = _planner_list(args.planners)
    options = _planner_options(args.planner_option, planners)
    is_pddl = suite == "pddl"
    max_nodes = args.max_nodes or (PDDL_MAX_NODES if is_pddl else DEFAULT_MAX_NODES)
    max_plan_length = args.max_plan_length or (PDDL_MAX_PLAN_LENGTH if is_pddl else DEFAULT_MAX_PLAN_LENGTH)
    if args.plot:
        _require_matplotlib()
    if is_pddl:
        groups = _pddl_groups(args)
    elif suite == "random":
        groups = _random_groups(args)
    elif suite.startswith("world:"):
        groups = _world_groups(args, suite.split(":", 1)[1])
    else:
        raise ValueError(f"unknown suite {suite!r} (expected pddl, random or world:NAME)")

    progress = _Progress(enabled=not args.quiet and sys.stderr.isatty())
    rows: list[dict[str, Any]] = []
    interrupted = False
    enforced = _can_alarm()
    source = _Stoppable(groups)
    for problems in source:
        group_rows: list[dict[str, Any]] = []
        try:
            for name in planners:
                progress.show(f"{problems.group} {name}", len(rows) + len(group_rows))
                group_rows += _run_planner(
                    name, problems, options[name], max_nodes, max_plan_length, args.device, args.time_limit
                )
        except KeyboardInterrupt as e:
            interrupted = True
            group_rows += getattr(e, "rows", [])
        _fill_optimal(group_rows, problems)
        rows += group_rows
        if interrupted:
            break
    interrupted = interrupted or source.stopped
    progress.done()
    summary = summarize(rows)
    meta = {
        "suite": suite, "planners": planners, "planner_options": options, "max_nodes": max_nodes,
        "max_plan_length": max_plan_length, "time_limit": args.time_limit, "time_limit_enforced": enforced,
        "device": args.device, "interrupted": interrupted,
    }
    if not args.quiet or interrupted:
        print_summary(summary, file=sys.stdout)
        if interrupted:
            print(f"goap: interrupted: {len(rows)} results finished", file=sys.stderr)
    if args.json:
        _write_atomic(args.json, json.dumps({"results": rows, "summary": summary, "meta": meta}, indent=1) + "\n")
    if args.csv:
        _write_atomic(args.csv, rows_to_csv(rows))
    if args.plot:
        plot_cactus(rows, args.plot)
    return 130 if interrupted else 0


def _run_selectors(args: argparse.Namespace, suite: str) -> int:
    """``--selectors``: the world run once per goal selector, same seed; the last of ``--planners`` plans."""
    from goap.bench.selectors import compare_selectors, print_selectors
    from goap.runtime import Brain

    if not suite.startswith("world:"):
        raise ValueError("--selectors compares goal selectors on a world: use --suite world:NAME")
    from worlds import make_world

    name = suite.split(":", 1)[1]
    make_world(name)  # a clear error for an unknown world before anything runs
    planner = _planner_list(args.planners)[-1]
    budget = args.plan_budget or max(256, args.agents // 10)

    def make_brain(scorer: Any) -> Any:
        world = make_world(name)
        return Brain(world.domain, args.agents, world=world, planner=planner, device=args.device,
                     plan_budget=budget, seed=args.seed, goal_scorer=scorer)

    rows = compare_selectors(make_brain, [s.strip() for s in args.selectors.split(",") if s.strip()], args.ticks,
                             model=args.model, domain=make_world(name).domain)
    for r in rows:
        r.update({"suite": suite, "planner": planner, "seed": args.seed, "plan_budget": budget})
    if not args.quiet:
        print(f"{suite}: {args.agents} agents, {args.ticks} ticks, seed {args.seed}, planner {planner}")
        print_selectors(rows)
    if args.json:
        _write_atomic(args.json, json.dumps({"results": rows, "summary": rows}, indent=1) + "\n")
    if args.csv:
        flat = [{k: v for k, v in r.items() if k != "score"} | {f"score_{k}": v for k, v in r["score"].items()}
                for r in rows]
        _write_atomic(args.csv, rows_to_csv(flat))
    return 0


def _planner_list(text: str) -> list[str]:
    names = [n.strip() for n in str(text).split(",") if n.strip()]
    if not names:
        raise ValueError("--planners: name at least one planner")
    for n in names:
        if n not in PLANNERS:
            raise ValueError(f"unknown planner '{n}' (known: {', '.join(sorted(PLANNERS))})")
    if len(set(names)) != len(names):
        raise ValueError("--planners: a planner is named twice")
    return names


def _planner_options(items: Sequence[str], planners: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {n: {} for n in planners}
    for item in items or ():
        key, sep, raw = str(item).partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--planner-option: expected [PLANNER:]KEY=VALUE, got {item!r}")
        target, colon, key = key.strip().rpartition(":")
        if key in ("max_nodes", "max_plan_length", "device"):
            raise ValueError(f"--planner-option: use --{key.replace('_', '-')} for {key}")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        if colon and target not in out:
            raise ValueError(f"--planner-option {item!r}: planner '{target}' is not in --planners")
        for name in [target] if colon else planners:
            out[name][key] = value
    return out


def _run_planner(
    name: str, problems: Problems, options: dict[str, Any], max_nodes: int, max_plan_length: int,
    device: str | None, time_limit: float | None,
) -> list[dict[str, Any]]:
    from goap.planners import make_planner
    from goap.planners.base import PlanBatch
    from goap.planners.reference import ReferencePlanner

    t0 = time.perf_counter()
    n = len(problems.ids)
    kwargs = dict(options, max_nodes=max_nodes, max_plan_length=max_plan_length)
    if name != "reference":
        kwargs["device"] = device
        if n < 16 and "chunk_size" not in kwargs and _accepts(name, "chunk_size"):
            kwargs["chunk_size"] = 1  # on the CPU: scratch for 1 agent per thread, not 16 (1e6 nodes is ~50 MB each)
    try:
        planner = make_planner(name, problems.tables, **kwargs)
    except TypeError as e:
        raise ValueError(f"planner '{name}' does not take these options {sorted(options)}: {e}") from None
    try:
        serial = isinstance(planner, ReferencePlanner)
        if hasattr(planner, "load"):
            planner.load()  # compile or load the kernels before the clock starts
        warm = None if serial else _satisfied_states(problems)
        if warm is not None:  # allocate the search scratch before the clock starts, on searches that end at once
            planner.plan(warm, problems.goals, problems.costs, problems.enabled)
        setup = time.perf_counter() - t0
        results: list[tuple[int, float, int, PlanBatch | None]] = []  # (row, seconds, batch, result or None)
        stopped = False
        if serial:
            try:
                for i in range(n):
                    batch, seconds = _timed(planner, problems, np.array([i]), time_limit, interruptible=True)
                    results.append((i, seconds, 1, batch))
            except KeyboardInterrupt:
                stopped = True  # keep the problems that finished
        else:
            batch, seconds = _timed(planner, problems, np.arange(n), None, interruptible=False)
            results += [(i, seconds / max(1, n), n, batch) for i in range(n)]
    finally:
        close = getattr(planner, "close", None)
        if callable(close):
            close()

    rows = []
    for i, seconds, batch_n, batch in results:
        row: dict[str, Any] = {
            "suite": problems.suite, "group": problems.group, "problem": problems.ids[i], "planner": name,
        }
        if batch is None:
            row.update(status="timeout", cost=None, length=None, expanded=None)
        else:
            j = 0 if serial else i
            status = Status(int(batch.status[j]))
            cost = float(batch.cost[j])
            row.update(
                status=status.label, cost=None if math.isnan(cost) else cost,
                length=int(batch.length[j]) if status in (Status.OK, Status.SATISFIED, Status.TOO_LONG) else None,
                expanded=int(batch.expanded[j]),
            )
        row["seconds"] = seconds
        row["over_time"] = bool(time_limit is not None and seconds > time_limit)
        row["batch"] = batch_n
        row["setup_seconds"] = setup
        row.update(problems.extra or {})
        rows.append(row)
    if stopped:
        raise _Interrupted(rows)
    return rows


class _Stoppable:
    """Iterate over the groups (loading each may take a while); Ctrl-C while loading ends the iteration."""

    def __init__(self, groups: Iterator[Problems]):
        self.it = iter(groups)
        self.stopped = False

    def __iter__(self) -> Iterator[Problems]:
        while True:
            try:
                item = next(self.it)
            except StopIteration:
                return
            except KeyboardInterrupt:
                self.stopped = True
                return
            yield item


class _Interrupted(KeyboardInterrupt):
    """Ctrl-C during a planner's run, with the rows that finished before it."""

    def __init__(self, rows: list[dict[str, Any]]):
        super().__init__()
        self.rows = rows


def _accepts(name: str, option: str) -> bool:
    """Whether the registered planner's constructor takes ``option``."""
    import importlib
    import inspect

    module, cls = PLANNERS[name].split(":")
    try:
        params = inspect.signature(getattr(importlib.import_module(module), cls)).parameters
    except (ImportError, AttributeError, TypeError, ValueError):
        return False
    return option in params


def _satisfied_states(p: Problems) -> np.ndarray | None:
    """States where each problem's goal already holds (a warm-up that ends at once), or None if one is not found."""
    tables = p.tables
    domain = tables.domain
    goals = tables.goals.goals
    out = {}
    for g in set(int(x) for x in p.goals):
        values = list(domain.default_state())
        for c in goals[g].want:
            f = domain.fact_index(c.fact)
            fact = domain.facts[f]
            pick = {"==": c.value, "<=": c.value, ">=": c.value, "<": c.value - 1, ">": c.value + 1}.get(c.op)
            if pick is None:  # "!="
                pick = fact.min if c.value != fact.min else fact.max
            values[f] = min(max(pick, fact.min), fact.max)
        if not domain.satisfies(tuple(values), goals[g].want):
            return None
        out[g] = tables.pack(tuple(values))
    return np.stack([out[int(g)] for g in p.goals]) if len(p.goals) else None


def _timed(planner: Any, p: Problems, rows: np.ndarray, limit: float | None, interruptible: bool) -> tuple[Any, float]:
    costs = None if p.costs is None else p.costs[rows]
    enabled = None if p.enabled is None else p.enabled[rows]
    t0 = time.perf_counter()
    try:
        with _deadline(limit if interruptible else None):
            batch = planner.plan(p.states[rows], p.goals[rows], costs, enabled)
    except _TimeUp:
        return None, time.perf_counter() - t0
    return batch, time.perf_counter() - t0


class _TimeUp(Exception):
    pass


def _can_alarm() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def _deadline(seconds: float | None) -> Iterator[None]:
    """Raise _TimeUp in this (main) thread after ``seconds``; a no-op where SIGALRM cannot be used."""
    if not seconds or not _can_alarm():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise _TimeUp

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _fill_optimal(rows: list[dict[str, Any]], problems: Problems) -> None:
    """The known optimum of each problem: the suite's own, else the reference planner's cost when it solved it."""
    reference = {r["problem"]: r["cost"] for r in rows if r["planner"] == "reference" and r["status"] in SOLVED}
    known = dict(zip(problems.ids, problems.optimal or [None] * len(problems.ids), strict=True))
    for r in rows:
        opt, source = known.get(r["problem"]), "suite"
        if opt is None and r["problem"] in reference and r["planner"] != "reference":  # not against itself
            opt, source = reference[r["problem"]], "reference"
        r["optimal"] = opt
        r["optimal_source"] = source if opt is not None else None


# --- suites ----------------------------------------------------------------------------------------------------
def default_pddl_root() -> Path:
    env = os.environ.get("GOAP_PDDL_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "benchmarks" / "pddl"


def _pddl_groups(args: argparse.Namespace) -> Iterator[Problems]:
    from goap.encoding import encode
    from goap.pddl import load_pddl, optimal_costs, pddl_tasks

    root = Path(args.pddl_root) if args.pddl_root else default_pddl_root()
    if not root.is_dir():
        raise ValueError(f"no PDDL task folder at {root} (pass --pddl-root DIR or set GOAP_PDDL_DIR)")
    tasks = pddl_tasks(root)
    known = sorted({name.split("/")[0] for _, _, name in tasks})
    if args.domains:
        wanted = [d.strip() for d in str(args.domains).split(",") if d.strip()]
        for d in wanted:
            if d not in known:
                raise ValueError(f"unknown PDDL domain '{d}' in {root} (known: {', '.join(known)})")
        tasks = [t for t in tasks if t[2].split("/")[0] in wanted]
    if args.tasks:
        pats = [p.strip() for p in str(args.tasks).split(",") if p.strip()]
        tasks = [t for t in tasks if any(_match(t[2], p) for p in pats)]
    if not tasks:
        raise ValueError(f"no PDDL task matches (domains {args.domains or 'all'}, tasks {args.tasks or 'all'})")
    optimum = optimal_costs(root)

    def gen() -> Iterator[Problems]:
        for dom, prob, name in tasks:
            task = load_pddl(dom, prob, name=name)
            tables = encode(task.domain)
            yield Problems(
                suite="pddl", group=name.split("/")[0], ids=[name], tables=tables,
                states=tables.pack(task.state)[None], goals=np.array([task.goal], dtype=np.int32),
                optimal=[optimum.get(name)], extra={"n_facts": task.n_facts, "n_actions": task.n_actions},
            )

    return gen()


def _match(name: str, pattern: str) -> bool:
    stem = name.split("/")[-1]
    if not any(c in pattern for c in "*?["):
        return pattern in name
    return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(stem, pattern)


def _random_groups(args: argparse.Namespace) -> Iterator[Problems]:
    from goap.bench.random_domains import random_domain, random_problems
    from goap.encoding import encode

    try:
        sizes = [int(x) for x in str(args.facts).split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--facts: expected comma-separated integers, got {args.facts!r}") from None
    if not sizes or any(s < 2 for s in sizes):
        raise ValueError(f"--facts: sizes must be integers >= 2, got {args.facts!r}")

    def gen() -> Iterator[Problems]:
        for size in sizes:
            domain = random_domain(args.seed, n_facts=size)
            probs = random_problems(domain, args.problems, seed=args.seed)
            tables = encode(domain)
            group = f"{size}f"
            yield Problems(
                suite="random", group=group, ids=[f"{group}/{i}" for i in range(args.problems)], tables=tables,
                states=tables.pack_states(probs.values), goals=probs.goals.astype(np.int32),
                extra={"n_facts": len(domain.facts), "n_actions": len(domain.actions)},
            )

    return gen()


class _Recorder:
    """Stands in for a Brain's planner and records every search it is asked for, before planning it."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.records: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, Any, Any]] = []
        self.tick = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def plan(self, states: Any, goals: Any, costs: Any = None, enabled: Any = None, **kw: Any) -> Any:
        agents = kw.get("agents")
        n = len(goals)
        rows = np.arange(n) if agents is None else np.asarray(agents)
        if rows.dtype == np.bool_:
            rows = np.flatnonzero(rows)
        rows = rows.astype(np.int64)
        self.records.append((
            self.tick, rows, np.asarray(states)[rows].copy(), np.asarray(goals)[rows].copy(),
            None if costs is None else np.asarray(costs)[rows].copy(),
            None if enabled is None else np.asarray(enabled)[rows].copy(),
        ))
        return self.inner.plan(states, goals, costs, enabled, **kw)


def _world_groups(args: argparse.Namespace, world_name: str) -> Iterator[Problems]:
    from goap.runtime import Brain

    try:
        from worlds import make_world
    except ImportError:
        raise ValueError("the example worlds are not installed (run from a checkout: pip install -e .)") from None
    world = make_world(world_name)

    def gen() -> Iterator[Problems]:
        brain = Brain(world.domain, args.agents, world=world, planner="warp", device=args.device, seed=args.seed)
        recorder = _Recorder(brain.planner)
        brain.planner = recorder
        for t in range(args.ticks):
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
            raise ValueError(f"world '{world_name}' asked for no plans in {args.ticks} ticks")
        keep = np.arange(len(ids))
        if len(ids) > args.problems:  # an even sample over the whole run
            keep = np.unique(np.linspace(0, len(ids) - 1, args.problems).round().astype(np.int64))
        yield Problems(
            suite=f"world:{world_name}", group=world_name, ids=[ids[i] for i in keep], tables=brain.tables,
            states=np.concatenate(states)[keep], goals=np.concatenate(goals)[keep].astype(np.int32),
            costs=np.concatenate(costs)[keep].astype(np.float32), enabled=np.concatenate(enabled)[keep].astype(bool),
            extra={"n_facts": len(brain.domain.facts), "n_actions": len(brain.domain.actions)},
        )

    return gen()


# --- summary and output ----------------------------------------------------------------------------------------
def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (suite, group, planner), then one per (suite, planner) with group "all"."""
    keys: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        keys.setdefault((r["suite"], r["group"], r["planner"]), []).append(r)
        keys.setdefault((r["suite"], "all", r["planner"]), []).append(r)
    groups = sorted(k for k in keys if k[1] != "all")
    totals = [k for k in dict.fromkeys((s, "all", p) for s, _, p in groups)]
    return [_summary(k, keys[k]) for k in groups + (totals if len({g for _, g, _ in groups}) > 1 else [])]


def _summary(key: tuple[str, str, str], rows: list[dict[str, Any]]) -> dict[str, Any]:
    suite, group, planner = key
    solved = [r for r in rows if r["status"] in SOLVED and not r["over_time"]]
    known = [r for r in solved if r.get("optimal") is not None]
    optimal = [r for r in known if abs(r["cost"] - r["optimal"]) <= 1e-3 * max(1.0, abs(r["optimal"]))]
    ratios = [r["cost"] / r["optimal"] if r["optimal"] > 0 else 1.0 for r in known]
    seconds = np.array([r["seconds"] for r in rows], dtype=np.float64)
    # Wall time actually spent: a batched call counts once (its rows each hold a share of it).
    wall = float(seconds.sum())
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    return {
        "suite": suite, "group": group, "planner": planner, "problems": len(rows), "solved": len(solved),
        "optimal": len(optimal), "optimum_known": len(known),
        "mean_cost_ratio": float(np.mean(ratios)) if ratios else None,
        "median_s": float(np.median(seconds)) if len(seconds) else None,
        "p95_s": float(np.percentile(seconds, 95)) if len(seconds) else None,
        "total_s": wall, "plans_per_s": len(rows) / wall if wall > 0 else None,
        "statuses": statuses,
    }


def print_summary(summary: list[dict[str, Any]], file: Any = None) -> None:
    header = ["suite", "group", "planner", "problems", "solved", "optimal", "cost ratio", "median ms", "p95 ms",
              "total s", "plans/s", "statuses"]
    table = []
    for s in summary:
        table.append([
            s["suite"], s["group"], s["planner"], str(s["problems"]), str(s["solved"]),
            f"{s['optimal']}/{s['optimum_known']}", _fmt(s["mean_cost_ratio"], ".3f"),
            _fmt(None if s["median_s"] is None else s["median_s"] * 1e3, ".2f"),
            _fmt(None if s["p95_s"] is None else s["p95_s"] * 1e3, ".2f"), _fmt(s["total_s"], ".2f"),
            _fmt(s["plans_per_s"], ".1f"), " ".join(f"{k} {v}" for k, v in sorted(s["statuses"].items())),
        ])
    widths = [max(len(x) for x in col) for col in zip(header, *table, strict=False)]
    out = file or sys.stdout
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip(), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for r in table:
        print("  ".join(x.ljust(w) for x, w in zip(r, widths, strict=True)).rstrip(), file=out)


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def rows_to_csv(rows: list[dict[str, Any]]) -> str:
    keys = list(ROW_KEYS) + sorted({k for r in rows for k in r} - set(ROW_KEYS))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: "" if r.get(k) is None else r.get(k) for k in keys})
    return buf.getvalue()


def _write_atomic(path: str, text: str) -> None:
    """Write the whole file or nothing: a temporary file in the same folder, then a rename."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        tmp.replace(target)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise ValueError(f"cannot write {path}: {e.strerror or e}") from None


def _require_matplotlib() -> Callable[..., Any]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ValueError("--plot needs matplotlib, which is not installed (pip install matplotlib)") from None
    return plt


def plot_cactus(rows: list[dict[str, Any]], path: str) -> None:
    """Three panels, one colour per planner: problems solved against seconds per problem (a cactus plot), the
    mean cost ratio to the optimum per group (what a faster planner gives up), and the median seconds per
    problem against the number of facts (how it scales)."""
    plt = _require_matplotlib()
    fig, (ax_time, ax_cost, ax_scale) = plt.subplots(1, 3, figsize=(16, 4.5))
    planners = sorted({r["planner"] for r in rows})
    colour = {p: f"C{i % 10}" for i, p in enumerate(planners)}
    solved = [r for r in rows if r["status"] in SOLVED and not r["over_time"]]

    for planner in planners:
        secs = sorted(max(r["seconds"], 1e-6) for r in solved if r["planner"] == planner)
        if secs:
            ax_time.step(secs, range(1, len(secs) + 1), where="post", label=planner, color=colour[planner])
    ax_time.set(xscale="log", xlabel="seconds per problem", ylabel="problems solved", title="time")

    groups = sorted({r["group"] for r in rows})
    width = 0.8 / max(1, len(planners))
    for k, planner in enumerate(planners):
        ratios = []
        for g in groups:
            vals = [r["cost"] / r["optimal"] for r in solved
                    if r["planner"] == planner and r["group"] == g and r.get("optimal") and r["cost"] is not None]
            ratios.append(float(np.mean(vals)) if vals else np.nan)
        ax_cost.bar(np.arange(len(groups)) + k * width, ratios, width, label=planner, color=colour[planner])
    ax_cost.set_xticks(np.arange(len(groups)) + 0.4 - width / 2, groups, rotation=30, ha="right")
    ax_cost.axhline(1.0, color="grey", lw=0.8)
    ax_cost.set(ylabel="mean cost / optimal", title="cost")

    for planner in planners:
        by_facts: dict[int, list[float]] = {}
        for r in rows:
            if r["planner"] == planner and r.get("n_facts"):
                by_facts.setdefault(int(r["n_facts"]), []).append(max(r["seconds"], 1e-6))
        if by_facts:
            xs = sorted(by_facts)
            ax_scale.plot(xs, [float(np.median(by_facts[x])) for x in xs], "o-", label=planner, color=colour[planner])
    ax_scale.set(xscale="log", yscale="log", xlabel="facts", ylabel="median seconds per problem", title="scaling")

    for ax in (ax_time, ax_cost, ax_scale):
        ax.grid(True, alpha=0.3)
    if planners:
        ax_time.legend()
    target = Path(path)
    tmp = target.with_name(f".{target.stem}.{os.getpid()}.tmp{target.suffix or '.png'}")
    try:
        fig.savefig(tmp, dpi=110, bbox_inches="tight")
        tmp.replace(target)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise ValueError(f"cannot write {path}: {e.strerror or e}") from None
    finally:
        plt.close(fig)


class _Progress:
    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.t0 = time.perf_counter()

    def show(self, what: str, done: int) -> None:
        if self.enabled:
            elapsed = time.perf_counter() - self.t0
            print(f"\rbench: {done} results, {elapsed:6.1f} s  {what:<40s}", end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.enabled:
            print(file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())

"""The ``goap`` command: validate, describe and solve domains from the shell, and the tools' subcommands.

Errors in the input (a bad domain file, a bad problem line, a bad argument) are reported in one line naming the
file, item and line, with exit status 1 (2 for a bad command line); never a traceback.

The tools (``bench``, ``sweep``, ``train``, ``view``) keep their options and their runs in their own packages;
this module imports a tool only when its subcommand is the one that runs (see `COMMANDS`), so the engine's own
commands, ``goap --help`` included, start without the bench, torch, Ray, matplotlib or pygame.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from goap.argtypes import (
    check_output_file,
    non_negative_int,
    output_path,
    positive_float,
    positive_int,
    random_seed,
)
from goap.domain import BOOL, ENUM, DomainError
from goap.domain_file import load_domain
from goap.launch import CaptureError
from goap.planners.base import (
    DEFAULT_MAX_NODES,
    DEFAULT_MAX_PLAN_LENGTH,
    HEURISTICS,
    LMCUT_TIES,
    LMCUT_ZONE_NAMES,
    PLANNERS,
)


class CliError(Exception):
    """A user-facing error: printed as ``goap: error: ...``, exit status 1."""


class _Parser(argparse.ArgumentParser):
    def _print_message(self, message: str, file: Any = None) -> None:
        """argparse swallows a failed write of the help (``--help > /dev/full`` exits 0): let it be reported."""
        file = file or sys.stderr
        if message and file is not None:  # None: that stream was closed when the command started
            file.write(message)

    def error(self, message: str) -> None:  # argparse exits 2 with usage; keep that, without a traceback
        self.print_usage(sys.stderr)
        self.exit(2, f"goap: error: {message}\n")


#: The exit statuses of every `goap` command (also in the README); tests hold the commands to them.
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_CODES = """\
exit status:
  0    success
  1    bad input (a domain, problem, model or log file; an output that cannot be written) or a failed check
       (validate --strict with warnings); one line on stderr names the file, the item and the line
  2    usage: an unknown command or option, or an option value of the wrong form
  130  interrupted (Ctrl-C)"""


def _validate_arguments(v: argparse.ArgumentParser) -> None:
    v.add_argument("domain", help="a .toml or .json domain file, or a PDDL domain.pddl")
    v.add_argument("problem", nargs="?", help="with a PDDL domain: its problem file (the task is grounded)")
    v.add_argument("--strict", action="store_true", help="treat warnings as errors (exit 1)")
    v.add_argument("--world", default=None, metavar="WORLD",
                   help="a world (name or module:Class) whose sensed facts may take any value in the check")
    v.add_argument("--sensed", default="", metavar="FACT,...", help="facts a world senses (any value in the check)")
    v.add_argument("--time-limit", type=positive_float, default=None, metavar="S",
                   help="PDDL: seconds for parsing, grounding and the checks (an error naming the phase past it)")
    v.add_argument("--translate", default=None, choices=("fdr", "strips"),
                   help="PDDL: the task's form, fdr (finite-domain variables from mutex groups, pruned; the default) "
                        "or strips (one bool fact per atom)")


def _describe_arguments(d: argparse.ArgumentParser) -> None:
    d.add_argument("domain")
    d.add_argument("--max-nodes", type=positive_int, default=DEFAULT_MAX_NODES, help="budget for the memory line")
    d.add_argument("--max-plan-length", type=positive_int, default=DEFAULT_MAX_PLAN_LENGTH)


def _solve_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("domain", help="a .toml or .json domain file, or a PDDL domain.pddl")
    s.add_argument("problem", nargs="?", help="with a PDDL domain: its problem file (one task, planned and checked)")
    s.add_argument("--problems", help="JSON lines: {id, start: {fact: value}, goal: name | {...}} (goap domains)")
    s.add_argument("--plan-file", type=output_path, metavar="FILE", help="PDDL: also write the plan in the IPC form")
    s.add_argument("--planner", default=None, choices=sorted(PLANNERS),
                   help="default: warp for a PDDL pair (LM-cut), reference for a goap domain file")
    s.add_argument("--device", default=None, help="Warp device for Warp planners (cpu, cuda:0); default: Warp's")
    s.add_argument("--max-nodes", type=positive_int, default=DEFAULT_MAX_NODES, help="states one search may store")
    s.add_argument("--max-plan-length", type=positive_int, default=DEFAULT_MAX_PLAN_LENGTH)
    s.add_argument("--threads", type=positive_int, default=None, metavar="K",
                   help="search each task over K threads (hash-distributed A*, the warp planner's; 1: the one-thread "
                        "search)")
    s.add_argument("--stats", action="store_true", help="print planning throughput as JSON, last line on stderr")
    s.add_argument("--time-limit", type=positive_float, default=None, metavar="S",
                   help="seconds per problem; past it a problem's status is timeout (as in goap bench); for a PDDL "
                        "pair the limit holds for parsing, grounding, encoding and search, and the row names the phase")
    s.add_argument("--pruning", default=None, choices=("none", "stubborn"),
                   help="partial-order reduction: none, or strong stubborn sets (optimal costs kept); default: none")
    s.add_argument("--heuristic", default=None, choices=HEURISTICS,
                   help="the search's admissible heuristic (default: lmcut for a PDDL pair, the planner's own "
                        "otherwise); scp / max_lmcut_scp: saturated cost partitioning over projections")
    s.add_argument("--lmcut-zone-ties", default=None, choices=tuple(LMCUT_ZONE_NAMES),
                   help="LM-cut's goal-zone rule for zero-cost actions: on, off, max (the larger value of both) or "
                        "auto (each search probes both on its first 128 states, then keeps the stronger); default: "
                        "auto for a PDDL pair on one thread, otherwise the planner's own (on)")
    s.add_argument("--lmcut-ties", default=None, choices=LMCUT_TIES,
                   help="LM-cut's pcf among equal maxima: highest, stable, max (the larger value of both) or auto "
                        "(each search probes both on its first 128 states, then keeps the stronger); default: auto "
                        "for a PDDL pair on one thread, otherwise the planner's own (highest)")
    s.add_argument("--translate", default=None, choices=("fdr", "strips"),
                   help="PDDL: the task's form, fdr (finite-domain variables from mutex groups, pruned; the default) "
                        "or strips (one bool fact per atom)")


def _run_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--world", required=True,
                   help="a world: village, soldier, a registered name, or package.module:Class")
    r.add_argument("--agents", type=non_negative_int, default=1000)
    r.add_argument("--ticks", type=non_negative_int, default=600)
    r.add_argument("--seed", type=random_seed, default=0)
    r.add_argument("--device", default=None, help="Warp device for the planner (cpu, cuda:0)")
    r.add_argument("--planner", default="warp", choices=sorted(PLANNERS))
    r.add_argument("--plan-budget", type=positive_int, default=None,
                   help="most agents planned per tick (default: the world's replan_rate of the agents, a tenth "
                        "unless it says, at least 256)")
    r.add_argument("--warmup", type=non_negative_int, default=30, help="ticks left out of the timing summary")
    r.add_argument("--plan-cache", type=non_negative_int, default=0, metavar="K",
                   help="a plan cache of K entries across ticks (0: none); hit rates in the summary")
    r.add_argument("--no-dedupe", action="store_true", help="search every agent's query, even when equal")
    r.add_argument("--capture", action="store_true",
                   help="record the tick as graphs and replay them (CUDA graphs on a GPU, Warp's CPU graphs on the "
                        "CPU); the world must be capturable")
    r.add_argument("--json", type=output_path, metavar="FILE", help="write the summary as one JSON object")
    r.add_argument("--selector", choices=["priority", "utility"], default="priority",
                   help="goal choice: the world's priorities, or a learned utility model (--model; needs torch)")
    r.add_argument("--model", metavar="FILE", help="a model made by `goap train`, for --selector utility")
    r.add_argument("--log-outcomes", type=output_path, metavar="FILE",
                   help="record every planning call and what followed (.npz; appended when the file exists)")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.add_argument("--list-idle", type=non_negative_int, default=0, metavar="K",
                   help="at the end, list up to K agents for each idle reason (for goap explain --agent / view "
                        "--select)")


def _explain_arguments(e: argparse.ArgumentParser) -> None:
    e.add_argument("domain", nargs="?", help="a .toml or .json domain file (with --problem or --problems)")
    e.add_argument("--problem", metavar="JSON", help='one problem: \'{"start": {fact: value}, "goal": "name"}\'')
    e.add_argument("--problems", metavar="FILE", help="a problem file (JSON lines, as goap solve reads), with --id")
    e.add_argument("--id", help="the id of the problem of --problems to explain (default: the first)")
    e.add_argument("--max-nodes", type=positive_int, default=DEFAULT_MAX_NODES, help="states one search may store")
    e.add_argument("--max-plan-length", type=positive_int, default=DEFAULT_MAX_PLAN_LENGTH)
    e.add_argument("--world", help="run this world (name or module:Class) and explain one of its agents")
    e.add_argument("--agents", type=non_negative_int, default=1000)
    e.add_argument("--ticks", type=non_negative_int, default=100)
    e.add_argument("--seed", type=random_seed, default=0)
    e.add_argument("--agent", type=non_negative_int, default=0, metavar="I", help="the agent to explain")
    e.add_argument("--planner", default="warp", choices=sorted(PLANNERS))
    e.add_argument("--plan-budget", type=positive_int, default=None,
                   help="most agents planned per tick (default: as goap run, the world's replan_rate of the agents)")
    e.add_argument("--device", default=None, help="Warp device for the planner (cpu, cuda:0)")
    e.add_argument("--json", action="store_true", help="print the explanation as one JSON object")


def _graph_arguments(g: argparse.ArgumentParser) -> None:
    g.add_argument("domain", help="a .toml or .json domain file")
    g.add_argument("--out", required=True, type=output_path, metavar="FILE",
                   help="FILE.dot (Graphviz DOT, always), FILE.svg or FILE.png (needs Graphviz's dot)")
    g.add_argument("--goal", metavar="G", help="draw only what can reach goal G (its cone)")
    g.add_argument("--agent-type", metavar="T", help="only the actions agents of type T may use")


def _bench_arguments(p: argparse.ArgumentParser) -> None:
    from goap.bench.cli import add_arguments

    add_arguments(p)


def _sweep_arguments(p: argparse.ArgumentParser) -> None:
    from goap.bench.sweep import add_arguments

    add_arguments(p)


def _view_arguments(p: argparse.ArgumentParser) -> None:
    try:
        from viewer.app import add_arguments  # argparse only: pygame loads when the viewer runs
    except ImportError as e:
        raise CliError(f"goap view needs the viewer package, which this installation lacks ({e})") from None
    add_arguments(p)


def _train_arguments(p: argparse.ArgumentParser) -> None:
    from goap.learn.options import add_arguments  # torch-free: torch loads when the training runs

    add_arguments(p)


def _no_arguments(p: argparse.ArgumentParser) -> None:
    pass


@dataclass(frozen=True)
class Command:
    """One subcommand: its line in ``goap --help``, the function adding its options, the function running it.

    Both functions import the subcommand's own module (`goap.bench`, `goap.learn`, `viewer`) only when called,
    and only the subcommand that runs is given its options, so ``goap --help`` and ``goap planners`` load no tool
    and no heavy library; ``goap bench --help`` loads the bench, as its options live there.
    """

    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `goap` command line, with the options of ``command`` (a subcommand name, or None for none).

    Every subcommand is listed, so ``goap --help`` shows them all and an unknown name is argparse's usage error;
    the others get their options only when they run (see `Command`).
    """
    p = _Parser(prog="goap", description="Goal-oriented action planning for many agents at once, on Warp.",
                epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, cmd in COMMANDS.items():
        parser = sub.add_parser(name, help=cmd.help)
        if name == command:
            cmd.arguments(parser)
    return p


def _command_name(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names: its first word that is not an option (``goap`` itself takes only -h)."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if sys.stdout is None:  # started with stdout closed (>&-): every command prints, so refuse before any work
        if sys.stderr is not None:
            print("goap: error: cannot write to standard output: it is closed", file=sys.stderr)
        return 1
    try:
        try:
            args = build_parser(_command_name(argv)).parse_args(argv)
        except SystemExit as e:  # --help and usage errors: --help > /dev/full must not exit 0
            if e.code in (0, None):
                sys.stdout.flush()
            raise
        code = COMMANDS[args.command].run(args)
        sys.stdout.flush()  # a full disk shows here when stdout is a file: report it, do not exit 0
        return code
    except (DomainError, CliError, CaptureError) as e:
        print(f"goap: error: {e}", file=sys.stderr)
        return 1
    except ValueError as e:
        print(f"goap: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("goap: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (| head): stop quietly, as other tools do
        _detach_stdout()
        return 0
    except OSError as e:  # a write that failed: stdout on a full disk (> /dev/full), a file vanished mid-run
        _detach_stdout()
        where = f"cannot write {e.filename}" if e.filename else "cannot write to standard output"
        print(f"goap: error: {where}: {e.strerror or e}", file=sys.stderr)
        return 1


def _detach_stdout() -> None:
    """Point the real stdout at /dev/null after a failed write, so the interpreter's last flush cannot fail again
    (it would print "Exception ignored" and exit 120)."""
    import os

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (captured in tests)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


# --- commands ------------------------------------------------------------------------------------------------
def cmd_validate(args: argparse.Namespace) -> int:
    from goap.analysis import check_domain
    from goap.encoding import encode
    from goap.pddl import commands as pddl_commands

    if pddl_commands.is_pddl(args.domain):
        return pddl_commands.validate(args)
    _no_second_file(args)
    domain = load_domain(args.domain)
    tables = encode(domain)
    sensed = [f for f in args.sensed.split(",") if f]
    if args.world:
        from goap.registry import load_world

        sensed += list(getattr(load_world(args.world), "sensed_facts", ()))
    try:
        report = check_domain(domain, sensed=sensed)
    except ValueError as e:
        raise CliError(f"{args.domain}: {e}") from None
    report.lines = _condition_lines(args.domain, domain)
    shape = (f"{len(domain.facts)} facts in {tables.n_words} word(s) ({tables.layout.n_bits} bits), "
             f"{len(domain.actions)} actions, {len(domain.goals)} goals")
    if args.strict and report.warnings:
        print(f"{args.domain}: domain '{domain.name}' fails --strict: {len(report.warnings)} warning(s); {shape}")
    else:
        print(f"{args.domain}: domain '{domain.name}' is valid: {shape}")
    for w in report.warnings:
        print(f"{args.domain}: warning: {w}")
    return 1 if args.strict and report.warnings else 0


def _condition_lines(path: str, domain: Any) -> dict[tuple[str, str, str], int]:
    """The line of every action precondition and goal condition in the domain file, for the warnings; empty
    when the text cannot be read again (the domain itself was read, so this only loses line numbers)."""
    from pathlib import Path

    from goap.domain_file import _Locator, read_text

    fmt = "json" if str(path).lower().endswith(".json") else "toml"
    try:
        locate = _Locator(read_text(Path(path)), fmt)
    except (DomainError, OSError):
        return {}
    out: dict[tuple[str, str, str], int] = {}
    for section, items, key in (("actions", domain.actions, "pre"), ("goals", domain.goals, "want")):
        for item in items:
            for c in getattr(item, key):
                line = locate((section, item.name, key, c.fact))
                if line:
                    out[(section, item.name, c.fact)] = line
    return out


def cmd_describe(args: argparse.Namespace) -> int:
    from goap.encoding import encode
    from goap.planners.base import check_options

    check_options(args.max_nodes, args.max_plan_length)  # the limits solve applies, before any arithmetic
    domain = load_domain(args.domain)
    t = encode(domain)
    L = t.layout
    counts = f"{len(domain.facts)} facts, {len(domain.actions)} actions, {len(domain.goals)} goals"
    print(f"domain '{domain.name}': {counts}")
    print(f"state: {t.n_words} word(s) of 64 bits, {L.n_bits} bits used\n")
    rows = []
    for i, f in enumerate(domain.facts):
        if f.kind == BOOL:
            rng = "false/true"
        elif f.kind == ENUM:
            rng = "|".join(f.labels)
        else:
            rng = f"{f.min}..{f.max}"
        lo = int(L.shift[i])
        bits = f"{lo}" if L.width[i] == 1 else f"{lo}-{lo + int(L.width[i]) - 1}"
        rows.append([f.name, f.kind, rng, f.format(f.default), str(int(L.word[i])), bits])
    _table(["fact", "type", "range", "default", "word", "bits"], rows)
    print()
    rows = []
    for a in domain.actions:
        pre = " ".join(_cond_text(domain, c) for c in a.pre) or "-"
        eff = " ".join(_effect_text(domain, e) for e in a.effects)
        terms = "".join(f"{k:+g}*{domain.facts[f].name}" for f, k in a.cost_terms)
        rows.append([a.name, f"{a.cost:g}{terms}", pre, eff])
    _table(["action", "cost", "pre", "effects"], rows)
    print()
    rows = [[g.name, f"{g.priority:g}", " ".join(_cond_text(domain, c) for c in g.want)] for g in domain.goals]
    _table(["goal", "priority", "want"], rows)
    if domain.declares_types:
        print()
        rows = []
        for t_ in domain.types:
            allowed = [a.name for a, ok in zip(domain.actions, t_.actions, strict=True) if ok]
            scaled = [f"{a.name}*{k:g}" for a, k in zip(domain.actions, t_.cost_scale, strict=True) if k != 1.0]
            rows.append([t_.name, " ".join(allowed) if len(allowed) < len(domain.actions) else "all",
                         " ".join(scaled) or "-", domain.describe_state(domain.type_state(t_.name))
                         if t_.facts else "-"])
        _table(["type", "actions", "cost", "default state"], rows)
    per_agent = t.bytes_per_agent(args.max_nodes, args.max_plan_length)
    print(
        f"\nwarp planner memory: {per_agent:,} bytes per agent at max_nodes={args.max_nodes}, "
        f"max_plan_length={args.max_plan_length} ({per_agent * 100_000 / 2**30:.2f} GiB for 100,000 agents in one "
        f"GPU wave)"
    )
    return 0


def _no_second_file(args: argparse.Namespace) -> None:
    if getattr(args, "problem", None):
        raise CliError(f"{args.problem}: a second file is for a PDDL domain only (DOMAIN.pddl PROBLEM.pddl)")
    if args.command == "solve" and not args.problems:
        raise CliError("solve needs --problems FILE (JSON lines), or a PDDL pair: goap solve DOMAIN.pddl PROBLEM.pddl")


def cmd_solve(args: argparse.Namespace) -> int:
    from goap.encoding import encode
    from goap.pddl import commands as pddl_commands
    from goap.planners import make_planner
    from goap.problems import load_problems, solve_problems

    if pddl_commands.is_pddl(args.domain):
        args.planner = args.planner or "warp"
        return pddl_commands.solve(args)
    from goap.planners.hda import one_task_planner

    threads = getattr(args, "threads", None)
    args.planner = args.planner or ("warp" if threads and threads > 1 else "reference")
    _no_second_file(args)
    name, threaded = one_task_planner(args.planner, threads)
    domain = load_domain(args.domain)
    tables = encode(domain)
    problems = load_problems(args.problems, tables)
    options: dict[str, Any] = {"max_nodes": args.max_nodes, "max_plan_length": args.max_plan_length, **threaded}
    if getattr(args, "heuristic", None) is not None:
        options["heuristic"] = args.heuristic
    if args.pruning is not None:
        if name == "warp-hda" and args.pruning != "none":
            raise ValueError("--pruning stubborn with --threads > 1: the HDA* planner prunes nothing; use one thread")
        if name != "warp-hda":
            options["pruning"] = args.pruning
    if getattr(args, "lmcut_zone_ties", None) is not None:
        options["lmcut_zone_ties"] = LMCUT_ZONE_NAMES[args.lmcut_zone_ties]
    if getattr(args, "lmcut_ties", None) is not None:
        options["lmcut_ties"] = args.lmcut_ties
    if args.planner != "reference":
        options["device"] = args.device
    planner = make_planner(name, tables, **options)
    if hasattr(planner, "load"):
        planner.load()  # compile or load kernels before the clock starts
    t0 = time.perf_counter()
    rows = solve_problems(planner, problems, domain, args.time_limit)
    seconds = time.perf_counter() - t0
    text = "".join(json.dumps(row) + "\n" for row in rows)
    sys.stdout.write(text)
    sys.stdout.flush()
    if args.stats:
        n = len(problems.ids)
        stats = {
            "planner": args.planner,
            "plans": n,
            "plan_seconds": round(seconds, 6),
            "plans_per_second": round(n / seconds, 1) if seconds > 0 else None,
        }
        print(json.dumps(stats), file=sys.stderr)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from goap.registry import load_world
    from goap.run_report import IdleStats, run_metrics
    from goap.runtime import CAUSES, Brain
    from goap.world import default_plan_budget

    world = load_world(args.world)
    _check_run_outputs(args, world.domain)
    budget = args.plan_budget or default_plan_budget(world, args.agents)
    scorer = _utility_selector(args, world.domain) if args.selector == "utility" else None
    brain = Brain(
        world.domain, args.agents, world=world, planner=args.planner, device=args.device,
        plan_budget=budget, seed=args.seed, goal_scorer=scorer, capture=args.capture,
        **({} if args.planner == "reference" else {"dedupe": not args.no_dedupe, "plan_cache": args.plan_cache}),
    )
    log = brain.record_outcomes() if args.log_outcomes else None
    idle_stats = IdleStats(brain)
    counted_from = min(args.warmup, max(0, args.ticks - 1))  # the ticks the idle fraction averages
    progress = not args.quiet and sys.stderr.isatty()
    t0 = time.perf_counter()
    interrupted = False
    try:
        for i in range(args.ticks):
            brain.tick()
            if i >= counted_from:
                idle_stats.update()
            if progress and (i % 10 == 0 or i == args.ticks - 1):
                done = (i + 1) / max(1, args.ticks)
                bar = "=" * int(30 * done)
                ms = brain.stage_stats["total"].last
                line = f"\r{args.world}: tick {i + 1}/{args.ticks} [{bar:<30s}] {ms:6.1f} ms/tick"
                print(line, end="", file=sys.stderr)
    except KeyboardInterrupt:
        interrupted = True
    if progress:
        print(file=sys.stderr)
    wall = time.perf_counter() - t0
    warmup = min(args.warmup, max(0, brain.tick_count - 1))
    summary = brain.summary(warmup=warmup)
    ticks = brain.tick_count
    metrics = run_metrics(brain, summary)
    counters = metrics["counters"]
    result = {
        "world": args.world, "agents": args.agents, "ticks": ticks, "seed": args.seed, "planner": args.planner,
        "plan_budget": budget, "selector": args.selector,
        "device": str(getattr(brain.planner, "device", "cpu")), "interrupted": interrupted,
        "ticks_per_second": ticks / wall if wall > 0 else None,
        "ms_per_tick": summary["ms_per_tick"], "stages": summary["stages"], "counters": counters,
        "idle_fraction": metrics["idle_fraction"], "action_counts": metrics["action_counts"],
        "plans_per_tick": counters.get("plans_made", 0) / max(1, ticks),
        "plan_failure_rate": counters.get("plans_failed", 0) / max(1, counters.get("plans_requested", 0)),
        "replans": {c: counters.get(f"replan_{c}", 0) for c in CAUSES[1:]},
        "score": world.score(), "planner_stats": summary.get("planner", {}), "state_hash": brain.state_hash(),
        **idle_stats.report(),
    }
    if args.list_idle:
        result["idle_agents"] = idle_stats.idle_agents(args.list_idle)
    _print_run(result)
    if args.json:
        _write_json(args.json, result)
    if log is not None:
        try:
            log.save(args.log_outcomes, append=True)
        except OSError as e:
            raise CliError(f"cannot write {args.log_outcomes}: {e}") from None
        print(f"outcomes: {len(log)} planning calls logged to {args.log_outcomes}")
    return 130 if interrupted else 0


def _print_run(r: dict[str, Any]) -> None:
    print(f"{r['world']}: {r['agents']} agents, {r['ticks']} ticks, planner {r['planner']} on {r['device']}"
          + (" (interrupted)" if r["interrupted"] else ""))
    print(f"ticks/s {r['ticks_per_second'] or 0.0:.1f}   ms/tick mean {r['ms_per_tick']['mean']:.2f}  "
          f"p95 {r['ms_per_tick']['p95']:.2f}")
    stages = [[s, f"{v['mean']:.3f}", f"{v['p95']:.3f}"] for s, v in r["stages"].items()]
    _table(["stage", "mean ms", "p95 ms"], stages)
    c = r["counters"]
    from goap.run_report import format_action_counts

    idle = r.get("idle_fraction")
    print(f"idle fraction {'-' if idle is None else f'{idle:.1%}'} (alive agents executing no action, after warm-up)")
    if "idle_ticks_by_reason" in r:
        from goap.run_report import format_idle

        for line in format_idle(r, r.get("plan_budget")):
            print("  " + line)
    done, failed = c.get("actions_done", 0), c.get("actions_failed", 0)
    asked, bad = c.get("plans_requested", 0), c.get("plans_failed", 0)
    print(f"actions done {done}   failed {failed} ({failed / max(1, done):.1%} of done)   "
          f"goals achieved {c.get('goals_achieved', 0)}")
    print(f"plans requested {asked}   made {c.get('plans_made', 0)}   failed {bad} ({bad / max(1, asked):.1%} of "
          f"requested)   per tick {r['plans_per_tick']:.1f}")
    counts = r.get("action_counts") or {}
    if counts:
        print("actions completed:")
        for line in format_action_counts(counts):
            print("  " + line)
    print("replans: " + "  ".join(f"{k} {v}" for k, v in r["replans"].items()))
    for reason, agents in (r.get("idle_agents") or {}).items():
        what = "agents whose action failed" if reason == "action_failed" else f"idle agents ({reason})"
        print(f"{what}, last tick: " + (" ".join(map(str, agents)) or "-"))
    print("score: " + "  ".join(f"{k} {_num(v)}" for k, v in r["score"].items()))
    print(f"state hash {r['state_hash']}")


def _num(v: Any) -> str:
    if isinstance(v, float | np.floating):
        return f"{int(v)}" if float(v).is_integer() else f"{v:.4g}"
    return str(v)


def _check_run_outputs(args: argparse.Namespace, domain: Any) -> None:
    """Refuse, before the first tick, outputs that could not be written after the last one: a folder, a
    missing or read-only folder, or an outcome log of another domain (or a damaged one) to append to."""
    if args.json:
        check_output_file(args.json, "--json")
    if args.log_outcomes:
        from goap.outcomes import OutcomeLog

        check_output_file(args.log_outcomes, "--log-outcomes")
        OutcomeLog.check_appendable(args.log_outcomes, domain)


def _write_json(path: str, obj: Any) -> None:
    """Write strict JSON (NaN and infinities as null) whole or not at all."""
    from goap.files import write_atomic

    try:
        write_atomic(path, json.dumps(_json_safe(obj), indent=1, allow_nan=False) + "\n")
    except OSError as e:
        raise CliError(f"cannot write {path}: {e.strerror or e}") from None


def _json_safe(obj: Any) -> Any:
    """``obj`` with numpy scalars as Python numbers and non-finite floats as None (JSON has no NaN)."""
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_json_safe(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj


def cmd_explain(args: argparse.Namespace) -> int:
    """``goap explain``: one problem of a domain, or one agent of a world after some ticks."""
    from goap.explain import explain_agent, explain_problem

    if args.world:
        if args.domain or args.problem or args.problems:
            raise CliError("explain --world runs a world: give no domain file or problem with it")
        from goap.registry import load_world
        from goap.runtime import Brain
        from goap.world import default_plan_budget

        world = load_world(args.world)
        if args.agent >= args.agents:
            raise CliError(f"--agent {args.agent} is not one of the {args.agents} agents (0..{args.agents - 1})")
        budget = args.plan_budget or default_plan_budget(world, args.agents)
        brain = Brain(world.domain, args.agents, world=world, planner=args.planner, device=args.device,
                      plan_budget=budget, seed=args.seed)
        for _ in range(args.ticks):
            brain.tick()
        e = explain_agent(brain, args.agent)
    else:
        if not args.domain:
            raise CliError("explain needs a domain file with --problem or --problems, or --world W --agent I")
        from goap.encoding import encode
        from goap.problems import load_problems, parse_problems

        domain = load_domain(args.domain)
        tables = encode(domain)
        if bool(args.problem) == bool(args.problems):
            raise CliError("explain DOMAIN needs exactly one of --problem JSON and --problems FILE")
        problems = (parse_problems(args.problem, tables, file="--problem") if args.problem
                    else load_problems(args.problems, tables))
        if not problems.ids:
            raise CliError(f"{args.problems or '--problem'}: no problem in it")
        k = 0
        if args.id is not None:
            matches = [j for j, pid in enumerate(problems.ids) if str(pid) == args.id]
            if not matches:
                raise CliError(f"{args.problems or '--problem'}: no problem with id {args.id!r}")
            k = matches[0]
        start = tuple(int(v) for v in problems.values[k])
        goal = problems.goal_table.goals[int(problems.goals[k])]
        e = explain_problem(domain, start, goal, max_nodes=args.max_nodes, max_plan_length=args.max_plan_length)
    if args.json:
        print(json.dumps(_json_safe(e.to_dict()), allow_nan=False))
    else:
        print(e.text())
    return 0


def cmd_graph(args: argparse.Namespace) -> int:
    """``goap graph``: goals, actions and the conditions linking them, as DOT (or SVG / PNG through Graphviz)."""
    from pathlib import Path

    from goap.explain import type_actions
    from goap.files import write_atomic
    from goap.graph import RenderUnavailable, domain_graph, render, to_dot

    fmt = Path(args.out).suffix.lower().lstrip(".")
    if fmt not in ("dot", "gv", "svg", "png"):
        raise CliError(f"--out {args.out}: the file must end in .dot, .svg or .png")
    check_output_file(args.out, "--out")
    domain = load_domain(args.domain)
    try:
        actions = type_actions(domain, args.agent_type) if args.agent_type else None
        graph = domain_graph(domain, goal=args.goal, actions=actions)
    except (KeyError, ValueError) as e:
        raise CliError(f"{args.domain}: {str(e).strip(chr(39)).strip(chr(34))}") from None
    dot = to_dot(graph, domain.name)
    try:
        if fmt in ("dot", "gv"):
            write_atomic(args.out, dot)
        else:
            try:
                data = render(dot, fmt)
            except RenderUnavailable as e:  # the DOT is written anyway, beside the file asked for
                beside = Path(args.out).with_suffix(".dot")
                write_atomic(beside, dot)
                raise CliError(f"cannot write {args.out}: {e}; the DOT is in {beside}") from None
            write_atomic(args.out, data)
    except OSError as e:
        raise CliError(f"cannot write {args.out}: {e.strerror or e}") from None
    n = {k: len(graph.ids(k)) for k in ("goal", "action", "condition")}
    print(f"{args.out}: {n['goal']} goal(s), {n['action']} action(s), {n['condition']} condition(s), "
          f"{len(graph.edges)} edges")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from goap.learn import LearnUnavailable, require_torch

    try:
        require_torch()
        from goap.learn.train import run
    except LearnUnavailable as e:
        raise CliError(str(e)) from None
    return run(args)


def _utility_selector(args: argparse.Namespace, domain: Any) -> Any:
    from goap.learn import LearnUnavailable, require_torch

    if not args.model:
        raise CliError("--selector utility needs --model FILE (made by `goap train`)")
    try:
        require_torch()
        from goap.learn.selector import UtilitySelector
    except LearnUnavailable as e:
        raise CliError(str(e)) from None
    return UtilitySelector.load(args.model, domain)


def cmd_bench(args: argparse.Namespace) -> int:
    from goap.bench.cli import run

    return run(args)


def cmd_sweep(args: argparse.Namespace) -> int:
    from goap.bench.sweep import run

    return run(args)


def cmd_view(args: argparse.Namespace) -> int:
    from viewer.app import ViewerUnavailable, run

    try:
        return run(args)
    except ViewerUnavailable as e:
        raise CliError(str(e)) from None


def cmd_planners(args: argparse.Namespace) -> int:
    """Every planner ``goap bench --planners`` takes: where it comes from, whether it is installed, its extra."""
    from goap.registry import planner_catalogue

    entries = planner_catalogue()
    rows = [("planner", "kind", "installed", "from", "extra", "what")]
    for e in entries:
        installed = ("yes" + (f" ({e.version})" if e.version else "")) if e.installed else "no"
        rows.append((e.name, e.kind, installed, e.source, e.extra or "-", e.what))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r[:5], widths, strict=True)) + "  " + r[5])
    missing = [e for e in entries if not e.installed]
    for extra in sorted({e.extra for e in missing if e.extra}):
        names = ", ".join(e.name for e in missing if e.extra == extra)
        print(f"\nnot installed: {names}: pip install \"warp-goap[{extra}]\" "
              f"(in a checkout: pip install -e \".[{extra}]\")")
    print("\nexternal planners read PDDL (goap bench --suite pddl); any other one is given as "
          "--external NAME='CMD {domain} {problem} {plan}'")
    return 0


def cmd_worlds(args: argparse.Namespace) -> int:
    from goap.registry import ambiguous_worlds, known_worlds

    for name, target in known_worlds().items():
        print(f"{name:12s} {target}")
    for why in ambiguous_worlds().values():
        print(f"goap: warning: {why}", file=sys.stderr)
    return 0


#: Every subcommand, in the order ``goap --help`` lists them.
COMMANDS: dict[str, Command] = {
    "validate": Command("check a domain file; warn about goals and actions that can never happen",
                        _validate_arguments, cmd_validate),
    "describe": Command("facts with their bit layout, actions and goals, as tables", _describe_arguments,
                        cmd_describe),
    "solve": Command("plan a batch of problems from a JSON-lines file; one result line each", _solve_arguments,
                     cmd_solve),
    "run": Command("run a world headless and print a summary of the agents and the tick", _run_arguments, cmd_run),
    "explain": Command("why a problem has the plan it has (or none), or why an agent of a world does what it does",
                       _explain_arguments, cmd_explain),
    "graph": Command("draw a domain's goals, actions and the conditions linking them (DOT, SVG, PNG)",
                     _graph_arguments, cmd_graph),
    "bench": Command("compare planners on PDDL tasks, random domains or a world", _bench_arguments, cmd_bench),
    "sweep": Command("a grid of world runs (world x agents x plan budget x seed)", _sweep_arguments, cmd_sweep),
    "view": Command("watch a world's agents live in a window; inspect one", _view_arguments, cmd_view),
    "train": Command("train a goal-utility model on logged planning outcomes (torch)", _train_arguments, cmd_train),
    "planners": Command("list the planners goap bench accepts (goap and external), installed or not",
                        _no_arguments, cmd_planners),
    "worlds": Command("list the worlds --world accepts by name (built-in and registered by packages)", _no_arguments,
                      cmd_worlds),
}


# --- formatting ----------------------------------------------------------------------------------------------
def _cond_text(domain, c) -> str:
    fact = domain.fact(c.fact)
    if fact.kind == BOOL:
        return f"{c.fact}={fact.format(c.value)}" if c.op == "==" else f"{c.fact}!={fact.format(c.value)}"
    return f"{c.fact}{'=' if c.op == '==' else c.op}{fact.format(c.value)}"


def _effect_text(domain, e) -> str:
    fact = domain.fact(e.fact)
    return f"{e.fact}={fact.format(e.value)}" if e.op == "=" else f"{e.fact}{e.op}{e.value}"


def _table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=True)).rstrip())


if __name__ == "__main__":
    sys.exit(main())

"""``goap bench``: run planners headless over a suite of problems and compare them as planning researchers do.

The options, the run and the output. Suites are in `goap.bench.suites`, the planner runs (timing, limits,
validation) in `goap.bench.runner` and `goap.bench.external`, the tables, scores, files and plots in
`goap.bench.report`, the cluster in `goap.bench.distributed`. This module imports nothing from `goap.cli`, so the
command line and its subcommands do not import each other (``python -m goap.bench`` goes through `goap.cli`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from goap import files
from goap.argtypes import ascii_int, output_path, positive_float, positive_int
from goap.bench import report
from goap.bench.runner import PlannerConfig, Settings, check_options, run_recipe
from goap.registry import EXTERNAL_PLANNERS

PDDL_MAX_NODES = 1_000_000
PDDL_MAX_PLAN_LENGTH = 256


def _memory(text: str) -> int:
    """``4G``, ``512M``, ``2000000000`` -> bytes."""
    s = str(text).strip().upper().removesuffix("B")
    scale = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}.get(s[-1:], 1)
    try:
        if not s.isascii():  # float() reads other scripts' digits too
            raise ValueError(text)
        value = float(s[:-1] if scale > 1 else s) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size like 4G or 512M, got {text!r}") from None
    if not 2**24 <= value <= 2**50:
        raise argparse.ArgumentTypeError(f"expected a size between 16M and 1P, got {text!r}")
    return int(value)


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of ``goap bench`` (the CLI adds them to its ``bench`` subcommand)."""
    p = parser
    p.add_argument("--suite", default="pddl", help="pddl, random or world:NAME (world:village, world:soldier)")
    p.add_argument("--planners", default="reference,warp",
                   help="comma-separated: goap planners (goap planners), fd-lmcut, pyperplan-lmcut, --external names; "
                        "a goap planner again with options of its own: warp,warp[pruning=stubborn]")
    p.add_argument("--planner-option", action="append", default=[], metavar="[PLANNER:]KEY=VALUE",
                   help="passed to make_planner (repeatable; VALUE is JSON or a string; PLANNER: limits it to one); "
                        "an option that changes the algorithm (weight, heuristic) changes the row's planner label")
    p.add_argument("--external", action="append", default=[], metavar="NAME=COMMAND",
                   help="an external planner: COMMAND with {domain} {problem} {plan}; name it in --planners")
    p.add_argument("--device", default=None, help="Warp device for Warp planners (cpu, cuda:0); default: Warp's")
    p.add_argument("--max-nodes", type=positive_int, default=None,
                   help=f"states one search may store (default {PDDL_MAX_NODES:,} for pddl, 1024 otherwise)")
    p.add_argument("--max-plan-length", type=positive_int, default=None,
                   help=f"default {PDDL_MAX_PLAN_LENGTH} for pddl, the planners' default otherwise")
    p.add_argument("--time-limit", type=positive_float, default=60.0, metavar="S",
                   help="seconds per task (default 60), grounding and search: a result past it is a timeout")
    p.add_argument("--memory-limit", type=_memory, default=None, metavar="SIZE",
                   help="address-space limit of an external planner's process (default 4G)")
    iso = p.add_mutually_exclusive_group()
    iso.add_argument("--isolate", dest="isolate", action="store_true", default=None,
                     help="run goap planners in a worker process killed at the time limit (default for pddl)")
    iso.add_argument("--in-process", dest="isolate", action="store_false",
                     help="run goap planners in this process: a Warp search past the limit runs to its end")
    p.add_argument("--solo", action="store_true",
                   help="time every problem alone (batched planners otherwise report batch time / n, labelled so)")
    p.add_argument("--tasks-dir", "--pddl-root", dest="tasks_dir", default=None, metavar="DIR",
                   help="folder of DOMAIN/domain.pddl + DOMAIN/taskNN.pddl (default: $GOAP_PDDL_DIR or the IPC "
                        "set shipped with goap)")
    p.add_argument("--domains", default=None, help="pddl: comma-separated domain folders (default: all)")
    p.add_argument("--tasks", default=None,
                   help="pddl: glob on 'domain/taskNN' or 'taskNN', comma-separated; no wildcard: a substring")
    p.add_argument("--max-ground-actions", type=positive_int, default=None,
                   help="pddl: most ground actions per task (default 200,000)")
    p.add_argument("--translate", default=None, metavar="FORMS",
                   help="pddl: the task's form for goap planners, fdr (finite-domain variables, pruned) or strips; "
                        "comma-separated for one column each (fdr,strips); default: fdr")
    p.add_argument("--max-ground-facts", type=positive_int, default=None,
                   help="pddl: most reachable atoms per task (default 100,000)")
    p.add_argument("--facts", default="16,64,256", help="random: comma-separated domain sizes (default 16,64,256)")
    p.add_argument("--problems", type=positive_int, default=100,
                   help="random: problems per size; world: most problems kept (default 100)")
    p.add_argument("--agents", type=positive_int, default=1000, help="world: agents (default 1000)")
    p.add_argument("--ticks", type=positive_int, default=100, help="world: ticks (default 100)")
    p.add_argument("--seed", type=_seed, default=0, help="random and world: seed (default 0)")
    p.add_argument("--selectors", default=None,
                   help="world: compare goal selectors instead of planners (priority,utility), one run each")
    p.add_argument("--model", metavar="FILE", help="world: the utility selector's model (goap train)")
    p.add_argument("--plan-budget", type=positive_int, default=None,
                   help="world: agents planned per tick (default: a tenth of the agents, at least 256)")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="spread the tasks over a Ray cluster (ADDRESS as for ray.init; none: a local cluster); "
                        'pip install -e ".[scale]"')
    p.add_argument("--ray-cpus", type=positive_int, default=None,
                   help="with --ray and no address: worker processes of the local cluster (default: all cores)")
    p.add_argument("--json", type=output_path, metavar="FILE",
                   help="write {meta, results (with plans), summary, coverage} as JSON")
    p.add_argument("--csv", type=output_path, metavar="FILE", help="write the result rows as CSV")
    p.add_argument("--plot", type=output_path, metavar="FILE.png",
                   help='cactus plot, per-task scatter of two planners, cost ratio (pip install -e ".[bench]")')
    p.add_argument("--scatter", default=None, metavar="A,B",
                   help="the two planners of the scatter plot (default: the first two)")
    p.add_argument("--quiet", action="store_true", help="no progress and no table")
    p.add_argument("--from-json", nargs="+", default=None, metavar="FILE",
                   help="run nothing: merge the results of earlier --json files (one run split by domain, say) and "
                        "print, write (--json, --csv) and plot (--plot) them as one run's")
    return p


def _seed(text: str) -> int:
    try:
        v = ascii_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"--seed: expected a non-negative integer, got {text!r}") from None
    if not 0 <= v < 2**63:
        raise argparse.ArgumentTypeError(f"--seed: expected a non-negative integer below 2**63, got {text!r}")
    return v


def build_parser() -> argparse.ArgumentParser:
    return add_arguments(argparse.ArgumentParser(prog="goap bench", description=__doc__.split("\n")[0]))


# --- planners ------------------------------------------------------------------------------------------------
def planner_configs(names_text: str, option_items: Sequence[str], externals: Sequence[str] = ()
                    ) -> list[PlannerConfig]:
    """The columns of the comparison, options checked; ValueError naming the bad planner or option."""
    from goap.bench.external import builtin, known_planners, parse_external
    from goap.planners.base import PLANNERS

    entries = planner_entries(names_text)
    if not entries:
        raise ValueError("--planners: name at least one planner")
    if len({text for text, _, _ in entries}) != len(entries):
        raise ValueError("--planners: a planner is named twice")
    names = list(dict.fromkeys(n for _, n, _ in entries))
    user = {}
    for spec in externals or ():
        ext = parse_external(spec)
        if ext.name in PLANNERS or ext.name in known_planners():
            raise ValueError(f"--external: '{ext.name}' is already a planner's name")
        user[ext.name] = ext
    options = planner_options(option_items, names)
    configs = []
    for _, n, inline in entries:
        if n in PLANNERS:
            check_options({**options[n], **inline})
            configs.append(PlannerConfig(n, {**options[n], **inline}))
        elif n in user or n in known_planners():
            if options[n] or inline:
                raise ValueError(f"--planner-option: planner '{n}' is external and takes no options")
            configs.append(PlannerConfig(n, {}, external=user.get(n) or builtin(n)))
        else:
            known = sorted(PLANNERS) + sorted(known_planners()) + sorted(user)
            raise ValueError(f"unknown planner '{n}' (known: {', '.join(known)})")
    labels = [c.label for c in configs]
    if len(set(labels)) != len(labels):
        raise ValueError(f"--planners: two columns would have the same label ({', '.join(labels)})")
    return configs


def with_translations(configs: list[PlannerConfig], forms_text: str, is_pddl: bool = True) -> list[PlannerConfig]:
    """Each goap planner once per PDDL form of ``--translate`` (``fdr,strips``), labelled with it."""
    from dataclasses import replace

    from goap.pddl import TRANSLATIONS

    if not is_pddl:
        raise ValueError("--translate is for the pddl suite")
    forms = [f.strip() for f in str(forms_text).split(",") if f.strip()]
    for f in forms:
        if f not in TRANSLATIONS:
            raise ValueError(f"--translate: unknown form '{f}' (expected {' or '.join(TRANSLATIONS)})")
    if not forms or len(set(forms)) != len(forms):
        raise ValueError(f"--translate: name each form once, got {forms_text!r}")
    out = []
    for c in configs:
        out += [c] if c.external is not None else [replace(c, translate=f) for f in forms]
    return out


def planner_entries(text: str) -> list[tuple[str, str, dict[str, Any]]]:
    """``--planners`` entries as (text, name, options): ``warp,warp[pruning=stubborn],fd-lmcut`` names one planner
    twice, the second with options of its own (KEY=VALUE, comma-separated, as in its row's label)."""
    out = []
    for m in re.finditer(r"\s*([^,\[\]]+?)\s*(?:\[([^\]]*)\])?\s*(?:,|$)", str(text)):
        name, inner = m.group(1), m.group(2)
        if not name:
            continue
        options: dict[str, Any] = {}
        for item in (inner or "").split(","):
            if not item.strip():
                continue
            key, sep, raw = item.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"--planners: expected {name}[KEY=VALUE,...], got {m.group(0).strip(' ,')!r}")
            try:
                options[key.strip()] = json.loads(raw)
            except ValueError:
                options[key.strip()] = raw.strip()
        out.append((m.group(0).strip(" ,"), name, options))
    return out


def planner_options(items: Sequence[str], planners: list[str]) -> dict[str, dict[str, Any]]:
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


# --- the run -------------------------------------------------------------------------------------------------
def recipes(args: argparse.Namespace) -> list[Any]:
    from goap.bench import suites

    suite = str(args.suite)
    if suite == "pddl":
        from goap.pddl import GroundingLimits

        defaults = GroundingLimits()
        limits = GroundingLimits(
            max_actions=args.max_ground_actions or defaults.max_actions,
            max_facts=args.max_ground_facts or defaults.max_facts,
            seconds=args.time_limit,
        )
        return suites.pddl_suite(args.tasks_dir, args.domains, args.tasks, limits)
    if suite == "random":
        return suites.random_suite(args.facts, args.problems, args.seed)
    if suite.startswith("world:"):
        return suites.world_suite(suite.split(":", 1)[1], args.agents, args.ticks, args.problems, args.seed,
                                  args.device)
    raise ValueError(f"unknown suite {suite!r} (expected pddl, random or world:NAME)")


#: The built-in external planners (`goap.bench.external`): refused outside the PDDL suite before they are looked for.
_EXTERNAL_NAMES = frozenset(EXTERNAL_PLANNERS)


def run(args: argparse.Namespace) -> int:
    """Run ``goap bench``; raises ValueError / DomainError with a clear message for bad input."""
    if getattr(args, "selectors", None):
        return _run_selectors(args)
    if getattr(args, "from_json", None):
        return _run_from_json(args)
    for path in (args.json, args.csv, args.plot):
        if path:
            files.check_writable(path)
    is_pddl = str(args.suite) == "pddl"
    if not is_pddl and (args.external or any(p.strip() in _EXTERNAL_NAMES for p in args.planners.split(","))):
        raise ValueError("external planners read PDDL files: use them with --suite pddl")
    configs = planner_configs(args.planners, args.planner_option, args.external)
    if getattr(args, "translate", None):
        configs = with_translations(configs, args.translate, is_pddl)
    scatter = _scatter_pair(args.scatter, configs)
    if args.plot:
        report.require_matplotlib()
    if not is_pddl and any(c.external is not None for c in configs):
        raise ValueError("external planners read PDDL files: use them with --suite pddl")
    settings = Settings(
        max_nodes=args.max_nodes or (PDDL_MAX_NODES if is_pddl else 1024),
        max_plan_length=args.max_plan_length or (PDDL_MAX_PLAN_LENGTH if is_pddl else 64),
        time_limit=args.time_limit, memory_limit=args.memory_limit, device=args.device, solo=args.solo,
        isolate=is_pddl if args.isolate is None else bool(args.isolate),
    )
    if args.ray is not None:
        from goap.bench.distributed import require_ray

        require_ray()
    todo = recipes(args)
    progress = _Progress(enabled=not args.quiet and sys.stderr.isatty(), total=len(todo))
    rows: list[dict[str, Any]] = []
    interrupted = False
    cluster = None
    t0 = time.perf_counter()
    if args.ray is not None:
        from goap.bench.distributed import run_on_ray

        rows, cluster = run_on_ray(todo, configs, settings, args.ray, args.ray_cpus, progress.step)
    else:
        from goap.bench.runner import WORKERS

        try:
            for recipe in todo:
                rows += run_recipe(recipe, configs, settings)
                progress.step(recipe.group)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            WORKERS.close()
    progress.done()
    wall = time.perf_counter() - t0
    report.add_scores(rows, settings.time_limit)
    summary = report.summarize(rows)
    meta = report.run_metadata()
    meta.update({
        "suite": args.suite, "planners": [c.label for c in configs],
        "planner_options": {c.label: c.options for c in configs},
        # what each goap planner ran with, defaults included (the first row's: every row of a label is the same)
        "planner_settings": {c.label: next((r["planner_settings"] for r in rows if r["planner"] == c.label
                                            and r.get("planner_settings")), None)
                             for c in configs if c.external is None},
        "external": {c.label: {"command": list(c.external.command), "version": c.external.version}
                     for c in configs if c.external is not None},
        "max_nodes": settings.max_nodes, "max_plan_length": settings.max_plan_length,
        "time_limit": settings.time_limit, "memory_limit": settings.memory_limit, "solo": settings.solo,
        "isolate": settings.isolate,
        "time_limit_enforced": ("every planner: external ones and (isolated) goap planners are killed at the limit"
                                if settings.isolate else
                                "reference: SIGALRM; external: killed; warp: a result past the limit is a timeout"),
        "device": args.device, "interrupted": interrupted, "wall_seconds": wall, "ray": cluster,
    })
    header, coverage = report.coverage_table(summary)
    expansions = report.expansion_comparison(rows)
    if not args.quiet or interrupted:
        report.print_summary(summary, file=sys.stdout)
        if len({r["group"] for r in rows}) > 1 or any(c.external is not None for c in configs):
            print(file=sys.stdout)
            report.print_coverage(summary, file=sys.stdout)
        if expansions:
            print(file=sys.stdout)
            report.print_expansions(expansions, file=sys.stdout)
        if interrupted:
            print(f"goap: interrupted: {len(rows)} results finished", file=sys.stderr)
    _write_outputs(args, meta, rows, summary, (header, coverage), expansions, scatter, settings.time_limit)
    return 130 if interrupted else 0


def _write_outputs(args: argparse.Namespace, meta: dict[str, Any], rows: list[dict[str, Any]],
                   summary: list[dict[str, Any]], coverage: tuple[list[str], list[list[str]]],
                   expansions: list[dict[str, Any]], scatter: tuple[str, str] | None, time_limit: float | None) -> None:
    """--json (meta, results, summary, coverage, expansions), --csv and --plot, each written whole."""
    header, table = coverage
    if args.json:
        doc = {"meta": meta, "results": rows, "summary": summary,
               "coverage": [dict(zip(header, r, strict=True)) for r in table], "expansions": expansions}
        files.write_output(args.json, json.dumps(doc, indent=1) + "\n")
    if args.csv:
        files.write_output(args.csv, report.rows_to_csv(rows))
    if args.plot:
        report.plot(rows, args.plot, scatter, time_limit)


def _scatter_pair(text: str | None, configs: list[PlannerConfig] | list[str]) -> tuple[str, str] | None:
    if not text:
        return None
    pair = [x.strip() for x in text.split(",") if x.strip()]
    labels = [c if isinstance(c, str) else c.label for c in configs]
    if len(pair) != 2 or any(x not in labels for x in pair):
        raise ValueError(f"--scatter: expected two of the planners' labels ({', '.join(labels)}), got {text!r}")
    return pair[0], pair[1]


def load_results(paths: list[str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The result rows of several ``goap bench --json`` files, in file order, and the merged run's meta: a
    ValueError naming the file for one that is not such a file, for a task a planner ran in two files, or for
    files run with different time limits (their scores would not compare)."""
    docs = []
    for path in paths:
        try:
            doc = json.loads(Path(path).read_text())
        except OSError as e:
            raise ValueError(f"{path}: cannot read: {e.strerror or e}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{path}: not a goap bench JSON file: {e}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("results"), list) or not isinstance(
                doc.get("meta", {}), dict):
            raise ValueError(f"{path}: not a goap bench JSON file (no 'results' list)")
        docs.append((path, doc.get("meta", {}), doc["results"]))
    limits = {path: meta.get("time_limit") for path, meta, _ in docs}
    if len(set(limits.values())) > 1:
        told = ", ".join(f"{p}: {v}" for p, v in limits.items())
        raise ValueError(f"the files were run with different time limits ({told}); their scores do not compare")
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, str, str, str], str] = {}
    keys = ("suite", "group", "problem", "planner", "status")
    numbers = ("cost", "optimal", "expanded", "expanded_before_last_f", "seconds", "total_seconds")
    for path, _, results in docs:
        for k, row in enumerate(results):
            if not isinstance(row, dict) or any(not isinstance(row.get(key), str) for key in keys):
                raise ValueError(f"{path}: result {k}: not a result row (needs {', '.join(keys)})")
            bad = [key for key in numbers if row.get(key) is not None and (
                isinstance(row[key], bool) or not isinstance(row[key], int | float))]
            if bad:
                raise ValueError(f"{path}: result {k}: not a number (or null): {', '.join(bad)}")
            key = (row["suite"], row["group"], row["problem"], row["planner"])
            if key in seen:
                raise ValueError(f"{path}: result {k}: {row['planner']} on {row['problem']} is in {seen[key]} too")
            seen[key] = path
            rows.append(row)
    planners: list[str] = []
    for r in rows:
        if r["planner"] not in planners:
            planners.append(r["planner"])
    merged = {"from_json": list(paths), "time_limit": next(iter(limits.values()), None), "planners": planners,
              "runs": [{k: m.get(k) for k in ("time_utc", "argv", "git", "host", "wall_seconds") if k in m}
                       for _, m, _ in docs]}
    return rows, merged


def _run_from_json(args: argparse.Namespace) -> int:
    """``--from-json``: earlier runs' rows as one run's tables, JSON, CSV and plot."""
    for path in (args.json, args.csv, args.plot):
        if path:
            files.check_writable(path)
    rows, meta = load_results(args.from_json)
    scatter = _scatter_pair(args.scatter, meta["planners"])
    if args.plot:
        report.require_matplotlib()
    report.add_scores(rows, meta["time_limit"])
    summary = report.summarize(rows)
    header, coverage = report.coverage_table(summary)
    expansions = report.expansion_comparison(rows)
    if not args.quiet:
        report.print_summary(summary, file=sys.stdout)
        print(file=sys.stdout)
        report.print_coverage(summary, file=sys.stdout)
        if expansions:
            print(file=sys.stdout)
            report.print_expansions(expansions, file=sys.stdout)
    _write_outputs(args, meta, rows, summary, (header, coverage), expansions, scatter, meta["time_limit"])
    return 0


def _run_selectors(args: argparse.Namespace) -> int:
    """``--selectors``: the world run once per goal selector, same seed; the last of ``--planners`` plans."""
    from goap.bench.selectors import compare_selectors, print_selectors
    from goap.planners.base import PLANNERS
    from goap.runtime import Brain

    suite = str(args.suite)
    if not suite.startswith("world:"):
        raise ValueError("--selectors compares goal selectors on a world: use --suite world:NAME")
    for path in (args.json, args.csv):
        if path:
            files.check_writable(path)
    from goap.registry import load_world
    from goap.world import default_plan_budget

    name = suite.split(":", 1)[1]
    domain = load_world(name).domain  # a clear error for an unknown world before anything runs
    planner = [n.strip() for n in str(args.planners).split(",") if n.strip()][-1]
    if planner not in PLANNERS:
        raise ValueError(f"unknown planner '{planner}' (known: {', '.join(sorted(PLANNERS))})")
    budget = args.plan_budget or default_plan_budget(load_world(name), args.agents)

    def make_brain(scorer: Any) -> Any:
        world = load_world(name)
        return Brain(world.domain, args.agents, world=world, planner=planner, device=args.device,
                     plan_budget=budget, seed=args.seed, goal_scorer=scorer)

    rows = compare_selectors(make_brain, [s.strip() for s in args.selectors.split(",") if s.strip()], args.ticks,
                             model=args.model, domain=domain)
    for r in rows:
        r.update({"suite": suite, "planner": planner, "seed": args.seed, "plan_budget": budget})
    if not args.quiet:
        print(f"{suite}: {args.agents} agents, {args.ticks} ticks, seed {args.seed}, planner {planner}")
        print_selectors(rows)
    if args.json:
        doc = {"meta": report.run_metadata(), "results": rows, "summary": rows}
        files.write_output(args.json, json.dumps(doc, indent=1) + "\n")
    if args.csv:
        flat = [{k: v for k, v in r.items() if k != "score"} | {f"score_{k}": v for k, v in r["score"].items()}
                for r in rows]
        files.write_output(args.csv, report.rows_to_csv(flat))
    return 0


class _Progress:
    def __init__(self, enabled: bool, total: int):
        self.enabled = enabled
        self.total = total
        self.done_n = 0
        self.t0 = time.perf_counter()

    def step(self, what: str) -> None:
        self.done_n += 1
        if self.enabled:
            elapsed = time.perf_counter() - self.t0
            print(f"\rbench: {self.done_n}/{self.total} tasks, {elapsed:6.1f} s  {what:<30s}", end="",
                  file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.enabled:
            print(file=sys.stderr)

"""Milliseconds per tick, split by stage, written as JSON: the engine alone, or a whole world.

    python benchmarks/tick.py                                   # engine-only world, 10,000 and 100,000 agents
    python benchmarks/tick.py --world village --agents 10000    # a world, whole tick
    python benchmarks/tick.py --memory-ticks 10000               # resident memory over a long run
    python benchmarks/tick.py --types --agents 10000            # agent types and cost terms against none

The engine-only world (`goap.world.EngineWorld` on the village domain: every action takes 3 ticks, 1% of the
agents have a fact drift each tick, 2% of actions fail) measures the engine's own stages apart from any game:
``engine_ms`` is the whole tick less the time inside the planner (``search``). Targets on a 2-core CPU:
engine_ms <= 1 ms at 10,000 agents and <= 10 ms at 100,000; resident memory flat over 10,000 ticks.
Steady state: the first --warmup ticks are left out; mean and p95 (and the median of the per-tick engine time).
Plain and captured brains (``--modes plain,captured``) are ticked in turns in the same run, and the JSON says
whether they ended in the same state. The brain's input checks are off unless ``--check-inputs`` (release
settings: the checks split a captured tick and read back to the host).

``--model FILE`` (a model made by ``goap train`` or ``goap train --rounds``) adds the learned goal selector:
modes ``utility`` (the model as one fused Warp kernel, `goap.learn.fused`, the default backend),
``utility-captured`` (the same, ticks captured as graphs), ``utility-torch`` (the torch row scorer), and
``utility-null`` / ``utility-torch-null`` (the same with the score's weights at 0: the scores are the priorities,
so the agents choose exactly as ``plain`` does and the difference of the tick is the selector's own cost), ticked
in turns on the same world and seed; the table gives the median tick against ``plain`` (the selector's budget: +10%)
and the selector's own ms per call (its kernel, or the torch forward pass, timed on the host). On a loaded
machine two identical brains ticked in turns differ by up to 20% in their medians, so the selector's own time is
the steadier measure of its cost. The CPU columns (``cpu.med``: the median tick in process CPU time, every
thread of the pool counted) move less with the load of other processes than the wall-clock ones.

``--types`` ticks, in turns, the engine world on the village domain as it is (``untyped``), the same domain
with two agent types and a cost term on every walking action that leave every plan as it was (``typed``: both
types may do everything at scale 1, and the terms weigh hunger at 0 a unit, evaluated all the same), and one
whose second type may not fish or mine, pays 1.5x for
walking and ranks goals otherwise, with walking dearer when hungry (``typed-different``: other plans, so other
search work). The target (a typed tick at most 10% dearer than an untyped one at 10,000 agents) is read on
``typed``, whose searches expand the same nodes: the difference is the cost of the type and term machinery.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from goap.domain_file import load_domain  # noqa: E402
from goap.runtime import STAGES, Brain  # noqa: E402
from goap.world import EngineWorld  # noqa: E402


def typed_village(different: bool):
    """The village domain with two agent types and a hunger cost term on every walking action: with
    ``different``, a porter type that may not fish or mine and pays 1.5x for walking, and terms of 0.25 a unit of
    hunger; without, two types that may do everything at scale 1 and terms of 0 a unit (evaluated all the same),
    so that every plan and every expansion is the untyped domain's."""
    from goap.domain import domain_from_spec
    from goap.domain_file import domain_to_spec

    spec = domain_to_spec(load_domain(ROOT / "worlds/village/domain.toml"))
    for name, action in spec["actions"].items():
        if name.startswith("go_"):
            action["cost"] = {"base": action["cost"], "per": {"hunger": 0.25 if different else 0.0}}
    names = list(spec["actions"])
    goals = list(spec["goals"])
    porter = {"actions": names, "cost": {a: 1.0 for a in names}}
    if different:
        porter = {"actions": [a for a in names if a not in ("catch_fish", "mine_ore")],
                  "cost": {a: 1.5 for a in names if a.startswith("go_")}, "priority": {goals[0]: 2.0}}
    spec["types"] = {"villager": {}, "porter": porter}
    return domain_from_spec(spec)


def make_world(name: str):
    if name == "engine":
        return EngineWorld(load_domain(ROOT / "worlds/village/domain.toml"), duration=3, drift_p=0.01, fail_p=0.02)
    if name in ("engine-typed", "engine-typed-different"):
        return EngineWorld(typed_village(name.endswith("different")), duration=3, drift_p=0.01, fail_p=0.02)
    from goap.registry import load_world

    return load_world(name)


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def run(args: argparse.Namespace, n: int) -> list[dict]:
    """The plain and the captured brain of the same world and seed, ticked in turns (so a drifting machine load
    falls on both alike); one row each, and whether they ended in the same state."""
    modes = [m for m in args.modes.split(",") if m]
    if args.types:
        modes = ["untyped", "typed", "typed-different"]
    budget = args.plan_budget or max(1, n // 10)
    brains, worlds = {}, {}
    for mode in modes:
        worlds[mode] = make_world(f"engine-{mode}" if mode.startswith("typed") else args.world)
        scorer = None
        if mode.startswith("utility"):
            from goap.learn.selector import UtilitySelector

            scorer = UtilitySelector.load(args.model, worlds[mode].domain,
                                          backend="torch" if mode.startswith("utility-torch") else "warp")
            if mode.endswith("null"):  # weights 0: the scores are the priorities, so the choices are plain's
                scorer.alpha = scorer.beta = scorer.gamma = 0.0
        brains[mode] = Brain(worlds[mode].domain, n, world=worlds[mode], device=args.device, plan_budget=budget,
                             seed=1, capture=mode.endswith("captured"), check_inputs=args.check_inputs,
                             goal_scorer=scorer)
        if mode.startswith("typed"):  # every other agent is a porter
            brains[mode].reset_agents(np.arange(1, n, 2), agent_type="porter")
    engine: dict[str, list[float]] = {m: [] for m in modes}
    ticks: dict[str, list[float]] = {m: [] for m in modes}
    cpu: dict[str, list[float]] = {m: [] for m in modes}  # process CPU seconds a tick (every thread of the pool)
    wall = dict.fromkeys(modes, 0.0)
    for _ in range(args.ticks):
        for mode in modes:
            brain = brains[mode]
            t0, c0 = time.perf_counter(), time.process_time()
            brain.tick()
            ticks[mode].append(time.perf_counter() - t0)
            cpu[mode].append(time.process_time() - c0)
            wall[mode] += ticks[mode][-1]
            engine[mode].append(brain.stage_stats["total"].last - brain.stage_stats["search"].last)
    hashes = {m: b.state_hash() for m, b in brains.items()}
    same = len(set(hashes.values())) == 1
    if args.model:  # the selectors choose otherwise: the same state within a selector (the null ones choose
        # as plain does)
        pairs = [("plain", "captured"), ("utility", "utility-captured"), ("plain", "utility-null"),
                 ("plain", "utility-torch-null")]
        same = all(hashes[a] == hashes[b] for a, b in pairs if a in hashes and b in hashes)
    if args.types:  # the types array differs; the same work is what "typed" must show
        work = {m: (b.counters["plans_made"], b.counters["nodes_expanded"]) for m, b in brains.items()}
        same = work["typed"] == work["untyped"]
    out = []
    for m in modes:
        steady = sorted(ticks[m][args.warmup:]) or [0.0]
        steady_cpu = sorted(cpu[m][args.warmup:]) or [0.0]
        scorer = brains[m].goal_scorer
        extra = {} if scorer is None else {"selector_backend": scorer.backend}
        if scorer is not None and not m.endswith("captured"):  # a captured tick replays it: no call to time
            extra["selector_ms_per_call"] = 1000.0 * scorer.seconds / max(1, scorer.calls)
        out.append(dict(row(args, n, budget, brains[m], worlds[m], engine[m], wall[m]), mode=m, same_state=same,
                        tick_median_ms=1000.0 * steady[len(steady) // 2],
                        cpu_median_ms=1000.0 * steady_cpu[len(steady_cpu) // 2], **extra))
    return out


def row(args, n, budget, brain, world, engine, wall) -> dict:
    s = brain.summary(warmup=args.warmup)
    steady = sorted(engine[args.warmup:])
    return {
        "agents": n, "plan_budget": budget, "ticks": args.ticks, "warmup": args.warmup, "wall_seconds": wall,
        "host_bytes_per_tick": brain.host_bytes_per_tick,
        "ms_per_tick": s["ms_per_tick"], "stages": s["stages"], "search": s["search"],
        "engine_ms": {"mean": s["ms_per_tick"]["mean"] - s["search"]["mean"],
                      "median": steady[len(steady) // 2] if steady else 0.0},
        "idle_fraction": s["idle_fraction"], "counters": s["counters"], "score": world.score(),
    }


def memory_run(args: argparse.Namespace) -> dict:
    world = make_world("engine")
    n = args.memory_agents
    brain = Brain(world.domain, n, world=world, device=args.device, plan_budget=max(1, n // 10), seed=2)
    marks = {}
    for t in range(1, args.memory_ticks + 1):
        brain.tick()
        if t in (1000, args.memory_ticks // 2, args.memory_ticks):
            marks[t] = rss_mib()
    return {"agents": n, "ticks": args.memory_ticks, "rss_mib": marks,
            "growth_mib": marks[args.memory_ticks] - marks[1000], "maxrss_mib":
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", default="engine", help="engine (the engine alone), or a world name or module:Class")
    ap.add_argument("--agents", default="10000,100000")
    ap.add_argument("--ticks", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=60)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--plan-budget", type=int, default=None, help="default: a tenth of the agents per tick")
    ap.add_argument("--memory-ticks", type=int, default=0, help="also run this many ticks and report resident memory")
    ap.add_argument("--memory-agents", type=int, default=1000)
    ap.add_argument("--modes", default="plain,captured", help="plain, captured, or both (ticked in turns)")
    ap.add_argument("--check-inputs", action="store_true", help="keep the brain's input checks on (default off)")
    ap.add_argument("--types", action="store_true", help="compare the engine world with and without agent types "
                    "and cost terms (modes untyped, typed)")
    ap.add_argument("--model", metavar="FILE", help="a utility model of the world's domain: adds the learned "
                    "selector's modes (default modes then plain,utility-null,utility-torch-null,utility,utility-torch)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.model and args.modes == "plain,captured":
        args.modes = "plain,utility-null,utility-torch-null,utility,utility-torch"
    known = {"plain", "captured", "utility", "utility-captured", "utility-torch", "utility-null", "utility-torch-null"}
    bad = [m for m in args.modes.split(",") if m and m not in known]
    if bad:
        ap.error(f"--modes: unknown mode {bad[0]!r} (known: {', '.join(sorted(known))})")
    if any(m.startswith("utility") for m in args.modes.split(",")) and not args.model:
        ap.error("the utility modes need --model FILE")
    if args.memory_ticks and args.memory_ticks < 2000:
        ap.error("--memory-ticks must be 0 or at least 2000")
    if args.types and args.world != "engine":
        ap.error("--types compares the engine world only")
    stem = "types" if args.types else args.world.replace(":", "_")
    out = Path(args.out or ROOT / f"benchmarks/results/tick_{stem}.json")

    rows = []
    print(f"{'agents':>8s} {'mode':>16s} {'ms/tick':>8s} {'median':>8s} {'p95':>8s} {'engine':>8s} {'eng.med':>8s} "
          f"{'search':>8s} " + " ".join(f"{s:>8s}" for s in STAGES) + "  same state  vs plain  cpu.med  vs plain"
          "  selector")
    for n in (int(x) for x in args.agents.split(",")):
        group = run(args, n)
        base = next((r["tick_median_ms"] for r in group if r["mode"] == "plain"), None)
        base_cpu = next((r["cpu_median_ms"] for r in group if r["mode"] == "plain"), None)
        for r in group:
            r["vs_plain"] = r["tick_median_ms"] / base if base else None
            r["cpu_vs_plain"] = r["cpu_median_ms"] / base_cpu if base_cpu else None
            rows.append(r)
            print(f"{n:>8d} {r['mode']:>16s} {r['ms_per_tick']['mean']:>8.2f} {r['tick_median_ms']:>8.2f} "
                  f"{r['ms_per_tick']['p95']:>8.2f} {r['engine_ms']['mean']:>8.2f} {r['engine_ms']['median']:>8.2f} "
                  f"{r['search']['mean']:>8.2f} " + " ".join(f"{r['stages'][st]['mean']:>8.2f}" for st in STAGES)
                  + f"  {str(r['same_state']):>10s}  " + ("" if r["vs_plain"] is None else f"{r['vs_plain']:7.3f}")
                  + f"  {r['cpu_median_ms']:7.2f}  "
                  + ("" if r["cpu_vs_plain"] is None else f"{r['cpu_vs_plain']:7.3f}")
                  + (f"  {r['selector_ms_per_call']:.3f} ms" if "selector_ms_per_call" in r else ""), flush=True)
    if args.types:
        for n in sorted({r["agents"] for r in rows}):
            by = {r["mode"]: r for r in rows if r["agents"] == n}
            ratio = by["typed"]["ms_per_tick"]["mean"] / by["untyped"]["ms_per_tick"]["mean"]
            med = by["typed"]["engine_ms"]["median"] / max(1e-9, by["untyped"]["engine_ms"]["median"])
            search = by["typed"]["search"]["mean"] / max(1e-9, by["untyped"]["search"]["mean"])
            print(f"{n} agents: typed / untyped ms per tick {ratio:.3f} (engine median {med:.3f}, search {search:.3f}; "
                  f"target <= 1.10; same plans and expansions: {by['typed']['same_state']})")
    result = {"benchmark": "tick", "world": args.world, "device": args.device,
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform()}, "rows": rows}
    if args.memory_ticks:
        result["memory"] = memory_run(args)
        m = result["memory"]
        print(f"memory: {m['agents']} agents, {m['ticks']} ticks, RSS {m['rss_mib']} MiB, growth "
              f"{m['growth_mib']:.1f} MiB after tick 1000")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=float) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

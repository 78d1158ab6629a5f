"""Planning throughput: reference vs Warp A* on the two worlds and the random-domain family.

For each (domain, planner, batch) one row: plans/s (median of --repeats timed calls, after a warm-up call),
median and p99 expansions, bytes of scratch per agent, and agreement with the reference (statuses and costs
equal on the problems the reference solved, up to --ref-sample of them). The reference is timed on a sample
only (it would take hours on 100,000 village problems); its plans/s is per problem and does not depend on N.

    python benchmarks/plan_throughput.py                       # full run, writes benchmarks/results/...
    python benchmarks/plan_throughput.py --quick               # 1,000-problem batches only
    python benchmarks/plan_throughput.py --device cuda:0       # on a GPU

Also reports the Warp planner's start-up: the first load of each kernel module in a fresh kernel cache
(compile) and in a warm one (cached), measured in subprocesses.

Further sections (``--sections``, comma separated; all by default):

    heuristics  expansions (mean, per solved plan, against the plan length), plans/s and plans per CPU-second
                of each heuristic (lmcut, hmax, hmax_depth2, hmax_depth1, pdb) on the worlds and random domains,
                and the seconds a pdb planner takes to build its tables
    soldier     20,000 distinct soldier queries: plans per CPU-second of the Warp planner on 1 and 2 threads and
                of a one-thread C bitfield A* (benchmarks/c_baseline/astar.c, built with the system ``cc``;
                skipped with a message when there is none); the ratios
    overhead    the warm per-call cost of ``plan`` on one agent whose goal already holds (numpy and Warp inputs)
    optimal     with default options, every problem of the village and random sets that uniform-cost search
                solves: ok and optimal? (and the memory per agent at the first pool)
    pddl        the IPC tasks of benchmarks/pddl with default options: solved, optimal, seconds each (slow)
    pdb         the pdb heuristic by its size (pdb_states 2**12 .. 2**20) on the soldier and village problem sets:
                seconds to build the tables (one planner), expansions per solved plan against the plan length,
                plans per CPU-second (one thread)
    costs       what cost terms and agent types cost the Warp planner: the soldier domain as it is, with a cost
                term on its moves (wounded soldiers walk slower), with two agent types, and with both; plans per
                CPU-second (one thread, hmax_depth2) on the same distinct queries, and agreement with the
                reference on a sample
    versus_c    the game-speed targets against the C A*: per CPU-second (one thread each, default options) on
                20,000 and 100,000 distinct soldier and random-16 queries, deep village queries (two goals at
                once, optimal cost >= 20) and random-64 queries (--deep-queries each), counting the C
                planner's failures and on the queries it solves; one call of 54 soldier queries (us a plan);
                expansions per found plan against its length (the perfect heuristic's count)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from goap import load_domain  # noqa: E402
from goap.bench.random_domains import random_domain, random_problems  # noqa: E402
from goap.planners.base import HEURISTICS, PDDL_HEURISTIC, PlanBatch, Status  # noqa: E402
from goap.planners.reference import ReferencePlanner  # noqa: E402
from goap.planners.warp_astar import WarpAStarPlanner  # noqa: E402

SECTIONS = ("throughput", "heuristics", "soldier", "overhead", "optimal", "pddl", "costs", "versus_c", "pdb")


def domains(facts: list[int]) -> list[tuple[str, object]]:
    out = [("soldier", load_domain(ROOT / "worlds/soldier/domain.toml")),
           ("village", load_domain(ROOT / "worlds/village/domain.toml"))]
    out += [(f"random-{n}", random_domain(seed=n, n_facts=n)) for n in facts]
    return out


def timed(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def startup(device: str) -> dict:
    """Seconds to create a planner and load its kernel, in a fresh process: cold cache, then warm."""
    village = str(ROOT / "worlds/village/domain.toml")
    code = (
        f"import time,sys; sys.path.insert(0, {str(ROOT)!r}); t=time.perf_counter();"
        "from goap import load_domain; from goap.planners.warp_astar import WarpAStarPlanner;"
        f"p=WarpAStarPlanner(load_domain({village!r}), device={device!r}); p.load(); print(time.perf_counter()-t)"
    )
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, WARP_CACHE_PATH=cache)
        runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True) for _ in range(2)]
    for r in runs:
        if r.returncode != 0:
            raise RuntimeError(r.stderr)
    cold, warm = (float(r.stdout.strip().splitlines()[-1]) for r in runs)
    return {"cold_seconds": round(cold, 3), "cached_seconds": round(warm, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", default="1000,10000,100000")
    ap.add_argument("--facts", default="16,32,64,128,256")
    ap.add_argument("--heuristic-facts", default="32,64",
                    help="random domains (facts, comma separated; '' for none) of section heuristics")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ref-sample", type=int, default=300, help="problems the reference plans per domain")
    ap.add_argument("--max-nodes", type=int, default=1024)
    ap.add_argument("--quick", action="store_true", help="batches of 1,000 only, one repeat")
    ap.add_argument("--no-startup", action="store_true", help="skip the cold/cached start-up measurement")
    slow = ("pddl", "costs", "versus_c", "pdb")
    ap.add_argument("--sections", default=",".join(s for s in SECTIONS if s not in slow),
                    help=f"comma-separated sections to run, of: {', '.join(SECTIONS)}")
    ap.add_argument("--queries", type=int, default=20_000, help="distinct soldier queries (section soldier)")
    ap.add_argument("--versus-heuristic", default=None,
                    help="the Warp planner's heuristic in section versus_c (default: the planners' default)")
    ap.add_argument("--versus-sets", default=None, metavar="NAMES",
                    help="section versus_c: only these sets (comma-separated: soldier, random-16, village, random-64)")
    ap.add_argument("--deep-queries", type=int, default=2000,
                    help="distinct village-deep and random-64 queries (section versus_c)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/plan_throughput.json"))
    args = ap.parse_args()
    sections = [x.strip() for x in args.sections.split(",") if x.strip()]
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        ap.error(f"unknown sections {unknown} (known: {', '.join(SECTIONS)})")
    repeats = 1 if args.quick else args.repeats
    result: dict = {
        "benchmark": "plan_throughput",
        "device": args.device,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "max_nodes": args.max_nodes,
        "repeats": repeats,
    }
    for name in sections:
        print(f"\n== {name} ==")
        result[name if name != "throughput" else "rows"] = SECTION_FUNCS[name](args)
    if not args.no_startup and "throughput" in sections:
        result["startup"] = startup(args.device)
        print(f"\nwarp start-up (create planner + load kernel, fresh process): "
              f"cold cache {result['startup']['cold_seconds']} s, cached {result['startup']['cached_seconds']} s")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


def throughput(args: argparse.Namespace) -> list[dict]:
    """Reference vs Warp plans/s, expansions and agreement, per domain and batch size."""
    batches = [1000] if args.quick else [int(x) for x in args.batches.split(",")]
    repeats = 1 if args.quick else args.repeats
    facts = [int(x) for x in args.facts.split(",")]
    rows = []
    header = f"{'domain':12s} {'planner':9s} {'batch':>7s} {'plans/s':>10s} {'x ref':>7s} {'plans/CPU-s':>11s} " \
             f"{'exp p50':>7s} {'exp p99':>7s} {'B/agent':>8s} {'agree':>7s}  statuses"
    print(header)
    print("-" * len(header))
    for name, domain in domains(facts):
        ref = ReferencePlanner(domain, max_nodes=args.max_nodes)
        fast = WarpAStarPlanner(ref.tables, max_nodes=args.max_nodes, device=args.device)
        fast.load()
        problems = random_problems(domain, max(batches), seed=7, walk=8)
        states_all = ref.tables.pack_states(problems.values)
        k = min(args.ref_sample, len(states_all))
        ref_seconds, ref_batch = timed(lambda r=ref, s=states_all[:k], g=problems.goals[:k]: r.plan(s, g), 1)
        ref_rate = k / ref_seconds
        row = {
            "domain": name, "planner": "reference", "batch": k, "plans_per_second": round(ref_rate, 1),
            "expanded_p50": float(np.median(ref_batch.expanded)),
            "expanded_p99": float(np.percentile(ref_batch.expanded, 99)),
            "bytes_per_agent": None, "agreement": 1.0, "words": ref.tables.n_words,
            "facts": len(domain.facts), "actions": len(domain.actions),
            "statuses": ref_batch.counts(),
        }
        rows.append(row)
        _print(row, ref_rate)
        for n in batches:
            states, goals = states_all[:n], problems.goals[:n]
            fast.plan(states[:64], goals[:64])  # warm-up: scratch allocation, thread pool
            cpu, seconds, batch = cpu_timed(lambda f=fast, s=states, g=goals: f.plan(s, g), repeats)
            same = (batch.status[:k] == ref_batch.status) & (
                (batch.cost[:k] == ref_batch.cost) | (np.isnan(batch.cost[:k]) & np.isnan(ref_batch.cost))
            )
            row = {
                "domain": name, "planner": "warp", "batch": n, "plans_per_second": round(n / seconds, 1),
                "plans_per_cpu_second": round(n / cpu, 1),
                "expanded_p50": float(np.median(batch.expanded)),
                "expanded_p99": float(np.percentile(batch.expanded, 99)),
                "bytes_per_agent": fast.bytes_per_agent(), "agreement": float(same.mean()),
                "words": ref.tables.n_words, "facts": len(domain.facts), "actions": len(domain.actions),
                "statuses": batch.counts(),
            }
            rows.append(row)
            _print(row, ref_rate)
        fast.close()

    return rows


def _print(row: dict, ref_rate: float) -> None:
    ratio = row["plans_per_second"] / ref_rate
    b = "-" if row["bytes_per_agent"] is None else f"{row['bytes_per_agent']:,}"
    cpu = "-" if row.get("plans_per_cpu_second") is None else f"{row['plans_per_cpu_second']:,.0f}"
    statuses = " ".join(f"{k}={v}" for k, v in row["statuses"].items())
    print(f"{row['domain']:12s} {row['planner']:9s} {row['batch']:>7d} {row['plans_per_second']:>10,.0f} "
          f"{ratio:>7.1f} {cpu:>11s} {row['expanded_p50']:>7.0f} {row['expanded_p99']:>7.0f} {b:>8s} "
          f"{row['agreement']:>7.1%}  {statuses}", flush=True)


# --- heuristics ----------------------------------------------------------------------------------------------
def heuristics(args: argparse.Namespace) -> list[dict]:
    """Expansions, plan lengths, plans/s and plans per CPU-second of each heuristic, same problems, same planner
    otherwise; for pdb also the seconds its tables take to build (with the planner)."""
    n = 1000 if args.quick else 5000
    rows = []
    print(f"{'domain':12s} {'heuristic':11s} {'plans/s':>10s} {'plans/CPU-s':>11s} {'exp mean':>9s} {'exp p99':>8s} "
          f"{'exp/plan':>8s} {'length':>6s} {'build s':>7s}  statuses")
    facts = [int(x) for x in args.heuristic_facts.split(",") if x.strip()]
    for name, domain in domains(facts):
        problems = random_problems(domain, n, seed=7, walk=8)
        base = ReferencePlanner(domain)
        states = base.tables.pack_states(problems.values)
        costs = None
        for h in HEURISTICS:
            t0 = time.perf_counter()
            fast = WarpAStarPlanner(base.tables, device=args.device, heuristic=h)
            build = time.perf_counter() - t0
            fast.plan(states[:64], problems.goals[:64])
            cpu, seconds, batch = cpu_timed(lambda f=fast, s=states, g=problems.goals: f.plan(s, g),
                                            1 if args.quick else 3)
            ok = batch.status == Status.OK
            if costs is None:
                costs = batch.cost
            row = {"domain": name, "heuristic": h, "batch": n, "plans_per_second": round(n / seconds, 1),
                   "plans_per_cpu_second": round(n / cpu, 1), "build_seconds": round(build, 3),
                   "expanded_mean": float(batch.expanded.mean()),
                   "expanded_p99": float(np.percentile(batch.expanded, 99)),
                   "expanded_per_plan": float(batch.expanded[ok].mean()) if ok.any() else None,
                   "plan_length_mean": float(batch.length[ok].mean()) if ok.any() else None,
                   "same_costs_as_first": bool(np.array_equal(batch.cost[ok], costs[ok])),
                   "statuses": batch.counts()}
            rows.append(row)
            per_plan = "-" if row["expanded_per_plan"] is None else f"{row['expanded_per_plan']:.2f}"
            length = "-" if row["plan_length_mean"] is None else f"{row['plan_length_mean']:.2f}"
            print(f"{name:12s} {h:11s} {row['plans_per_second']:>10,.0f} {row['plans_per_cpu_second']:>11,.0f} "
                  f"{row['expanded_mean']:>9.1f} {row['expanded_p99']:>8.0f} {per_plan:>8s} {length:>6s} "
                  f"{build:>7.2f}  {' '.join(f'{k}={v}' for k, v in row['statuses'].items())}", flush=True)
            fast.close()
    return rows


# --- soldier: per CPU-second against a one-thread C A* -------------------------------------------------------
def distinct_queries(domain, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` distinct (state, goal) queries: uniformly random fact values, random goals."""
    rng = np.random.default_rng(seed)
    lo = np.array([f.min for f in domain.facts])
    hi = np.array([f.max for f in domain.facts])
    seen: set = set()
    values, goals = [], []
    while len(values) < n:
        v = rng.integers(lo, hi + 1, size=(n, len(lo)))
        g = rng.integers(0, len(domain.goals), size=n)
        for row, goal in zip(v, g, strict=True):
            key = (row.tobytes(), int(goal))
            if key not in seen and len(values) < n:
                seen.add(key)
                values.append(row)
                goals.append(goal)
    return np.array(values, dtype=np.int64), np.array(goals, dtype=np.int32)


COND = np.dtype([("word", "<i4"), ("shift", "<i4"), ("mask", "<u8"), ("op", "<i4"), ("pad", "<i4"), ("k", "<u8")])
STEP = np.dtype([("word", "<i4"), ("shift", "<i4"), ("mask", "<u8"), ("delta", "<i8"), ("hi", "<u8")])


def write_c_input(path: Path, tables, states: np.ndarray, goals: np.ndarray, max_nodes: int, goal_table=None) -> None:
    """The binary input of benchmarks/c_baseline/astar.c: the encoded tables (and goal table: the domain's by
    default), then the queries."""
    def conds(c) -> np.ndarray:
        out = np.zeros(len(c.word), dtype=COND)
        out["word"], out["shift"], out["mask"], out["op"], out["k"] = c.word, c.shift, c.mask, c.op, c.k
        return out

    st = tables.eff_steps
    steps = np.zeros(len(st.word), dtype=STEP)
    for field in ("word", "shift", "mask", "delta", "hi"):
        steps[field] = getattr(st, field)
    gt = tables.goals if goal_table is None else goal_table
    parts = [
        np.array([tables.n_words, tables.n_actions, gt.n_goals, len(states), max_nodes], dtype="<i4"),
        tables.pre_mask, tables.pre_value, tables.eff_set, tables.eff_clear, tables.cost.astype("<f8"),
        tables.pre_ints.start, conds(tables.pre_ints), st.start, steps,
        gt.mask, gt.value, gt.ints.start, conds(gt.ints), gt.atoms.start, conds(gt.atoms), gt.max_achieved,
        states, goals.astype("<i4"),
    ]
    with open(path, "wb") as f:
        for x in parts:
            f.write(np.ascontiguousarray(x).tobytes())


def build_c_baseline() -> Path | None:
    """Compile benchmarks/c_baseline/astar.c with the system cc (None, with a message, when there is none)."""
    import shutil

    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        print("no C compiler (cc) found: the C baseline is skipped")
        return None
    src = ROOT / "benchmarks/c_baseline/astar.c"
    exe = Path(tempfile.gettempdir()) / "goap_c_astar"
    r = subprocess.run([cc, "-O2", "-o", str(exe), str(src), "-lm"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"the C baseline did not build, skipped:\n{r.stderr}")
        return None
    return exe


def cpu_timed(fn, repeats: int) -> tuple[float, float, object]:
    """Median process CPU seconds (all threads) and wall seconds of ``fn``."""
    cpu, wall, result = [], [], None
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        result = fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu), statistics.median(wall), result


def soldier(args: argparse.Namespace) -> dict:
    """Plans per CPU-second on distinct soldier queries: Warp (1 and 2 threads, each heuristic) and C."""
    domain = load_domain(ROOT / "worlds/soldier/domain.toml")
    n = args.queries
    values, goals = distinct_queries(domain, n, seed=11)
    ref = ReferencePlanner(domain)
    states = ref.tables.pack_states(values)
    repeats = 1 if args.quick else args.repeats
    out: dict = {"queries": n, "facts": len(domain.facts), "actions": len(domain.actions), "warp": []}
    print(f"{n:,} distinct queries, {len(domain.facts)} facts, {len(domain.actions)} actions")
    base_costs = None
    for h in HEURISTICS:
        for threads in (1, 2):
            fast = WarpAStarPlanner(ref.tables, device="cpu", threads=threads, heuristic=h)
            fast.plan(states[:256], goals[:256])
            cpu, wall, batch = cpu_timed(lambda f=fast: f.plan(states, goals), repeats)
            if base_costs is None:
                base_costs = batch.cost
            row = {"heuristic": h, "threads": threads, "cpu_seconds": cpu, "wall_seconds": wall,
                   "plans_per_cpu_second": n / cpu, "plans_per_second": n / wall,
                   "expanded_mean": float(batch.expanded.mean()), "statuses": batch.counts(),
                   "same_costs": bool(np.array_equal(batch.cost, base_costs, equal_nan=True))}
            out["warp"].append(row)
            print(f"warp {h:11s} {threads} thread(s): {row['plans_per_cpu_second']:>10,.0f} plans/CPU-s "
                  f"{row['plans_per_second']:>10,.0f} plans/s  expanded {row['expanded_mean']:.1f}  "
                  f"{' '.join(f'{k}={v}' for k, v in row['statuses'].items())}", flush=True)
            fast.close()
    for h in HEURISTICS:
        one = next(r for r in out["warp"] if r["heuristic"] == h and r["threads"] == 1)
        two = next(r for r in out["warp"] if r["heuristic"] == h and r["threads"] == 2)
        out.setdefault("two_thread_speedup", {})[h] = two["plans_per_second"] / one["plans_per_second"]
    print("two threads / one (wall plans/s): "
          + ", ".join(f"{h} {v:.2f}x" for h, v in out["two_thread_speedup"].items()))
    exe = build_c_baseline()
    if exe is not None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "queries.bin"
            write_c_input(path, ref.tables, states, goals, max_nodes=1 << 16)
            runs = []
            for _ in range(repeats):
                r = subprocess.run([str(exe), str(path)], capture_output=True, text=True, check=True)
                runs.append(json.loads(r.stdout))
        c = sorted(runs, key=lambda x: x["cpu_seconds"])[len(runs) // 2]
        c["plans_per_cpu_second"] = n / c["cpu_seconds"]
        solved = np.isfinite(base_costs)
        c["same_cost_sum"] = bool(abs(c["cost_sum"] - float(base_costs[solved].sum())) < 1e-6 * max(1, c["cost_sum"]))
        c["same_solved"] = int(solved.sum()) == c["solved"]
        out["c_baseline"] = c
        print(f"C A* (1 thread): {c['plans_per_cpu_second']:>10,.0f} plans/CPU-s  solved {c['solved']:,}  "
              f"expanded {c['expanded'] / n:.1f}  same costs as warp: {c['same_cost_sum']}")
        out["ratio_vs_c"] = {f"{r['heuristic']}/{r['threads']}t": r["plans_per_cpu_second"] / c["plans_per_cpu_second"]
                             for r in out["warp"]}
        print("warp plans per CPU-second / C: " + ", ".join(f"{k} {v:.2f}x" for k, v in out["ratio_vs_c"].items()))
    return out


# --- pdb by size ----------------------------------------------------------------------------------------------
def pdb_sizes(args: argparse.Namespace) -> list[dict]:
    """Build seconds, expansions per plan and plans per CPU-second of pdb by ``pdb_states``, one thread."""
    n = 1000 if args.quick else 5000
    rows = []
    print(f"{'domain':9s} {'pdb_states':>10s} {'build s':>8s} {'exp/plan':>8s} {'length':>6s} {'plans/CPU-s':>11s}")
    for name, domain in domains([]):
        problems = random_problems(domain, n, seed=7, walk=8)
        tables = ReferencePlanner(domain).tables
        states = tables.pack_states(problems.values)
        for bits in (12, 14, 16, 18, 20):
            t0 = time.perf_counter()
            fast = WarpAStarPlanner(tables, device=args.device, heuristic="pdb", pdb_states=1 << bits, threads=1)
            build = time.perf_counter() - t0
            fast.plan(states[:64], problems.goals[:64])
            cpu, _, batch = cpu_timed(lambda f=fast, s=states, g=problems.goals: f.plan(s, g), 1 if args.quick else 3)
            ok = batch.status == Status.OK
            row = {"domain": name, "pdb_states": 1 << bits, "build_seconds": round(build, 3),
                   "expanded_per_plan": float(batch.expanded[ok].mean()),
                   "plan_length_mean": float(batch.length[ok].mean()), "plans_per_cpu_second": round(n / cpu, 1),
                   "statuses": batch.counts()}
            rows.append(row)
            print(f"{name:9s} {'2**' + str(bits):>10s} {build:>8.2f} {row['expanded_per_plan']:>8.2f} "
                  f"{row['plan_length_mean']:>6.2f} {row['plans_per_cpu_second']:>11,.0f}", flush=True)
            fast.close()
    return rows


# --- versus_c: the game-speed targets, every set against the C A* in one run ---------------------------------
#: Village queries whose optimal plans are long: a conjunction of two of the world's goals from a state a random
#: walk (0-10 steps) away from the default one, kept when the optimal cost is at least this (about a third of
#: them; plans of 8-14 steps, a few thousand expansions each with hmax_depth2).
VILLAGE_DEEP_COST = 20.0
C_MAX_NODES = 1 << 16  # the C planner's node lists (it fails a query that outgrows them)


def village_deep_queries(n: int, seed: int = 5):
    """(tables, goal table, packed states, goal indices) of ``n`` distinct deep village queries."""
    import itertools

    from goap.domain import Goal
    from goap.encoding import encode

    domain = load_domain(ROOT / "worlds/village/domain.toml")
    tables = encode(domain)
    pairs = [Goal("+".join(g.name for g in combo), tuple(c for g in combo for c in g.want))
             for combo in itertools.combinations(domain.goals, 2)]
    goal_table = tables.encode_goals(pairs)
    finder = WarpAStarPlanner(tables, device="cpu")
    rng = np.random.default_rng(seed)
    seen: set = set()
    states, goals = [], []
    rnd = 0
    while len(states) < n and rnd < 50:
        cand = random_problems(domain, 4 * n, seed=seed + 1000 * rnd, walk=10)
        packed = tables.pack_states(cand.values)
        gi = rng.integers(0, len(pairs), size=len(packed)).astype(np.int32)
        keys = [(row.tobytes(), int(g)) for row, g in zip(packed, gi, strict=True)]
        fresh = [i for i, k in enumerate(keys) if k not in seen]
        seen.update(keys[i] for i in fresh)
        b = finder.plan(packed[fresh], gi[fresh], goal_table=goal_table)
        for j in np.flatnonzero((b.status == Status.OK) & (b.cost >= VILLAGE_DEEP_COST)):
            if len(states) < n:
                states.append(packed[fresh[j]])
                goals.append(gi[fresh[j]])
        rnd += 1
    finder.close()
    return tables, goal_table, np.array(states, dtype=np.uint64), np.array(goals, dtype=np.int32)


def versus_c_sets(args: argparse.Namespace) -> list[tuple[str, object, object, np.ndarray, np.ndarray]]:
    """The sets of the game-speed targets: (name, tables, goal table or None, states, goals)."""
    from goap.encoding import encode

    sizes = [2000] if args.quick else [20_000, 100_000]
    out = []
    for name, domain in (("soldier", load_domain(ROOT / "worlds/soldier/domain.toml")),
                         ("random-16", random_domain(seed=16, n_facts=16))):
        tables = encode(domain)
        for n in sizes:
            values, goals = distinct_queries(domain, n, seed=11)
            out.append((f"{name} {n:,}", tables, None, tables.pack_states(values), goals))
    wanted = None if not args.versus_sets else {x.strip() for x in args.versus_sets.split(",") if x.strip()}
    known = {"soldier", "random-16", "village", "random-64"}
    if wanted is not None and not wanted <= known:
        raise SystemExit(f"--versus-sets: unknown set(s) {', '.join(sorted(wanted - known))} (known: "
                         f"{', '.join(sorted(known))})")
    if wanted is None or "village" in wanted:
        tables, gt, states, goals = village_deep_queries(500 if args.quick else args.deep_queries)
        out.append((f"village deep {len(states):,}", tables, gt, states, goals))
    if wanted is None or "random-64" in wanted:
        domain = random_domain(seed=64, n_facts=64)
        tables = encode(domain)
        values, goals = distinct_queries(domain, 2000 if args.quick else args.deep_queries, seed=11)
        out.append((f"random-64 {len(values):,}", tables, None, tables.pack_states(values), goals))
    return [s for s in out if wanted is None or s[0].rsplit(" ", 1)[0].split(" deep")[0] in wanted]


def run_c(exe: Path, tables, goal_table, states: np.ndarray, goals: np.ndarray, repeats: int) -> dict:
    """The C planner's median run (by CPU seconds) on these queries, with its per-query costs (nan: not found)."""
    with tempfile.TemporaryDirectory() as tmp:
        path, costs_path = Path(tmp) / "queries.bin", Path(tmp) / "costs.bin"
        write_c_input(path, tables, states, goals, max_nodes=C_MAX_NODES, goal_table=goal_table)
        runs = []
        for _ in range(repeats):
            r = subprocess.run([str(exe), str(path), str(costs_path)], capture_output=True, text=True, check=True)
            runs.append(json.loads(r.stdout))
        costs = np.fromfile(costs_path, dtype="<f8")
    c = sorted(runs, key=lambda x: x["cpu_seconds"])[len(runs) // 2]
    c["costs"] = np.where(costs < 0, np.nan, costs)
    return c


def versus_c(args: argparse.Namespace) -> dict:
    """Warp (one thread, default options) against the one-thread C A*, per CPU-second, on every set of the
    game-speed targets; the small-batch cost; expansions against plan length."""
    exe = build_c_baseline()
    repeats = 1 if args.quick else args.repeats
    from goap.planners.base import DEFAULT_HEURISTIC

    args.versus_heuristic = args.versus_heuristic or DEFAULT_HEURISTIC
    out: dict = {"c_max_nodes": C_MAX_NODES, "village_deep_cost": VILLAGE_DEEP_COST, "sets": [],
                 "heuristic": args.versus_heuristic}
    print(f"warp heuristic: {args.versus_heuristic}")
    print(f"{'set':22s} {'warp/CPU-s':>11s} {'C/CPU-s':>10s} {'ratio':>6s} {'C fails':>8s} {'ratio on C-solved':>18s} "
          f"{'exp/plan':>9s} {'length':>7s} {'C exp':>8s}")
    for name, tables, gt, states, goals in versus_c_sets(args):
        n = len(states)
        fast = WarpAStarPlanner(tables, device="cpu", threads=1, heuristic=args.versus_heuristic)
        fast.plan(states[:256], goals[:256], goal_table=gt)
        cpu, wall, batch = cpu_timed(lambda f=fast, s=states, g=goals, t=gt: f.plan(s, g, goal_table=t), repeats)
        ok = batch.status == Status.OK
        row = {"set": name, "queries": n, "warp_cpu_seconds": cpu, "warp_plans_per_cpu_second": n / cpu,
               "warp_statuses": batch.counts(), "warp_expanded_mean": float(batch.expanded.mean()),
               "warp_expanded_mean_ok": float(batch.expanded[ok].mean()) if ok.any() else 0.0,
               "plan_length_mean_ok": float(batch.length[ok].mean()) if ok.any() else 0.0}
        if exe is not None:
            c = run_c(exe, tables, gt, states, goals, repeats)
            solved = np.isfinite(c.pop("costs"))
            found = np.isfinite(batch.cost)
            row.update({"c_cpu_seconds": c["cpu_seconds"], "c_plans_per_cpu_second": n / c["cpu_seconds"],
                        "c_solved": int(solved.sum()), "c_failed": int(n - solved.sum()),
                        "c_expanded_mean": c["expanded"] / n,
                        "warp_solves_all_c_solves": bool(found[solved].all())})
            row["ratio"] = row["warp_plans_per_cpu_second"] / row["c_plans_per_cpu_second"]
            if row["c_failed"]:  # both again on the queries C solves
                sub = np.flatnonzero(solved)
                s2, g2 = states[sub], goals[sub]
                cpu2, _, _ = cpu_timed(lambda f=fast, s=s2, g=g2, t=gt: f.plan(s, g, goal_table=t), repeats)
                c2 = run_c(exe, tables, gt, s2, g2, repeats)
                row["ratio_on_c_solved"] = (len(sub) / cpu2) / (len(sub) / c2["cpu_seconds"])
            else:
                row["ratio_on_c_solved"] = row["ratio"]
        fast.close()
        out["sets"].append(row)
        print(f"{name:22s} {row['warp_plans_per_cpu_second']:>11,.0f} {row.get('c_plans_per_cpu_second', 0):>10,.0f} "
              f"{row.get('ratio', 0):>5.2f}x {row.get('c_failed', 0):>8,d} {row.get('ratio_on_c_solved', 0):>17.2f}x "
              f"{row['warp_expanded_mean_ok']:>9.2f} {row['plan_length_mean_ok']:>7.2f} "
              f"{row.get('c_expanded_mean', 0):>8.1f}", flush=True)
    out["small_batch"] = small_batch(args, exe)
    return out


def small_batch(args: argparse.Namespace, exe: Path | None, n: int = 54) -> dict:
    """One call with ``n`` distinct soldier queries: microseconds a plan (median warm call, wall) for Warp on one
    thread and on the default threads, and for C (CPU seconds over the queries repeated, per plan)."""
    from goap.encoding import encode

    domain = load_domain(ROOT / "worlds/soldier/domain.toml")
    tables = encode(domain)
    values, goals = distinct_queries(domain, n, seed=3)
    states = tables.pack_states(values)
    calls = 200 if args.quick else 1000
    res: dict = {"queries": n}
    for threads in (1, None):
        fast = WarpAStarPlanner(tables, device="cpu", threads=threads, heuristic=args.versus_heuristic)
        out = fast.plan(states, goals)
        for _ in range(20):
            fast.plan(states, goals, out=out)
        times = []
        for _ in range(calls):
            t0 = time.perf_counter()
            fast.plan(states, goals, out=out)
            times.append(time.perf_counter() - t0)
        res[f"warp_us_per_plan_{fast.threads}t"] = statistics.median(times) / n * 1e6
        fast.close()
    if exe is not None:
        reps = 2000 if not args.quick else 200
        c = run_c(exe, tables, None, np.tile(states, (reps, 1)), np.tile(goals, reps), 1 if args.quick else 3)
        res["c_us_per_plan"] = c["cpu_seconds"] / (n * reps) * 1e6
    print(f"one call of {n} soldier queries: "
          + ", ".join(f"{k.replace('_us_per_plan', '')} {v:.2f} us a plan" for k, v in res.items() if k != "queries"))
    return res


# --- per-call overhead ---------------------------------------------------------------------------------------
def overhead(args: argparse.Namespace) -> dict:
    """Median seconds of a warm ``plan`` call on one agent whose goal already holds (no search at all)."""
    import warp as wp

    domain = load_domain(ROOT / "worlds/soldier/domain.toml")
    fast = WarpAStarPlanner(domain, device=args.device, threads=1)
    goal = 0
    values = np.array([domain.state({})], dtype=np.int64)
    for c in domain.goals[goal].want:  # make the goal hold: its conditions' == values, else a satisfying value
        f = domain.fact_index(c.fact)
        fact = domain.facts[f]
        values[0, f] = next(v for v in range(fact.min, fact.max + 1) if c.holds(v))
    state = fast.tables.pack_states(values)
    goals = np.array([goal], np.int32)
    out_host = fast.plan(state, goals)
    assert out_host.status[0] == Status.SATISFIED
    calls = 300 if args.quick else 2000

    def median_call(fn) -> float:
        for _ in range(50):
            fn()
        times = []
        for _ in range(calls):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    host = median_call(lambda: fast.plan(state, goals, out=out_host))
    d_state = wp.array(state, dtype=wp.uint64, device=fast.device)
    d_goals = wp.array(goals, dtype=wp.int32, device=fast.device)
    d_out = PlanBatch.on_device(1, fast.max_plan_length, fast.device)
    device = median_call(lambda: fast.plan(d_state, d_goals, out=d_out))
    res = {"numpy_inputs_us": host * 1e6, "warp_inputs_us": device * 1e6}
    print(f"warm plan() on one satisfied agent: numpy inputs {res['numpy_inputs_us']:.1f} us, "
          f"Warp inputs and a device batch {res['warp_inputs_us']:.1f} us")
    fast.close()
    return res


# --- defaults solve what uniform-cost search solves ----------------------------------------------------------
def uniform_cost(domain, start, goal, limit: int = 300_000) -> float | None:
    """Optimal cost by plain uniform-cost search (None past ``limit`` states: it would not fit either)."""
    import heapq

    best = {start: 0.0}
    frontier = [(0.0, start)]
    while frontier:
        g, s = heapq.heappop(frontier)
        if g > best[s]:
            continue
        if domain.satisfies(s, goal.want):
            return g
        if len(best) > limit:
            return None
        for a in domain.actions:
            if domain.is_applicable(s, a):
                c = domain.apply(s, a)
                g2 = g + a.cost
                if g2 < best.get(c, float("inf")):
                    best[c] = g2
                    heapq.heappush(frontier, (g2, c))
    return float("inf")


def optimal(args: argparse.Namespace) -> list[dict]:
    """Default options against uniform-cost search on the village set and random 64-fact domains."""
    sets = [("village", load_domain(ROOT / "worlds/village/domain.toml"), 63, 12),
            ("random-64", random_domain(seed=64, n_facts=64), 20, 8)]
    rows = []
    for name, domain, n, walk in sets:
        problems = random_problems(domain, n, seed=5, walk=walk)
        fast = WarpAStarPlanner(domain, device=args.device)
        states = fast.tables.pack_states(problems.values)
        batch = fast.plan(states, problems.goals)
        solved = optimal_ok = 0
        for i in range(n):
            start = tuple(int(v) for v in problems.values[i])
            best = uniform_cost(domain, start, domain.goals[problems.goals[i]])
            if best is None or best == float("inf"):
                continue
            solved += 1
            optimal_ok += int(batch.status[i] in (Status.OK, Status.SATISFIED) and batch.cost[i] == best)
        t = fast.tables
        old = 8 * t.n_words * 1025 + 29 * 1024 + 4 * 2048 + 4 * t.n_actions + 4 * t.relaxed.n_pre \
            + 8 * len(domain.facts) + 4 * 32 + 13
        row = {"set": name, "problems": n, "ucs_solved": solved, "warp_ok_and_optimal": optimal_ok,
               "levels_used": np.bincount(batch.level, minlength=fast.n_levels + 1).tolist(),
               "bytes_per_agent_first_pool": fast.bytes_per_agent(), "bytes_per_agent_float32_planner": old,
               "statuses": batch.counts()}
        rows.append(row)
        print(f"{name}: uniform-cost search solves {solved}/{n}; warp (defaults) ok and optimal on {optimal_ok}; "
              f"levels {row['levels_used']}; {row['bytes_per_agent_first_pool']:,} B/agent at the first pool "
              f"(float32 planner: {old:,})", flush=True)
        fast.close()
    return rows


# --- the IPC tasks -------------------------------------------------------------------------------------------
def pddl(args: argparse.Namespace) -> dict:
    """Each IPC task of benchmarks/pddl with default options: status, cost against the known optimum, seconds."""
    try:
        from goap.pddl import load_pddl, optimal_costs, pddl_tasks
    except ImportError:  # before the package move
        from goap.bench.pddl import load_pddl, optimal_costs, pddl_tasks  # type: ignore[no-redef]
    root = ROOT / "benchmarks/pddl"
    best = optimal_costs(root)
    rows = []
    for dom, prob, name in pddl_tasks(root):
        task = load_pddl(dom, prob, name)
        fast = WarpAStarPlanner(task.domain, device=args.device, threads=1, chunk_size=1, heuristic=PDDL_HEURISTIC)
        fast.load()
        start = fast.tables.pack(task.start)[None]
        t0 = time.perf_counter()
        batch = fast.plan(start, [task.goal])
        seconds = time.perf_counter() - t0
        status = Status(int(batch.status[0]))
        cost = float(batch.cost[0])
        ok = status in (Status.OK, Status.TOO_LONG) and best.get(name) is not None and cost == best[name]
        rows.append({"task": name, "status": status.label, "cost": None if np.isnan(cost) else cost,
                     "optimal_cost": best.get(name), "optimal": bool(ok), "seconds": seconds,
                     "expanded": int(batch.expanded[0]), "level": int(batch.level[0]),
                     "length": int(batch.length[0])})
        print(f"{name:22s} {status.label:8s} cost {cost:>6g} (optimum {best.get(name)}) {seconds:7.2f} s "
              f"level {int(batch.level[0])} expanded {int(batch.expanded[0]):,}", flush=True)
        fast.close()
    n_opt = sum(r["optimal"] for r in rows)
    within = sum(r["optimal"] and r["seconds"] <= 60 for r in rows)
    print(f"{n_opt}/{len(rows)} optimal, {within} of them within 60 s; slowest {max(r['seconds'] for r in rows):.1f} s")
    return {"tasks": rows, "optimal": n_opt, "optimal_within_60s": within, "total": len(rows)}


def soldier_variants() -> dict[str, tuple[object, bool]]:
    """The soldier domain plain, with cost terms, with agent types, with both (domain, whether rows get types)."""
    from goap.domain import domain_from_spec
    from goap.domain_file import domain_to_spec

    plain = load_domain(ROOT / "worlds/soldier/domain.toml")
    spec = domain_to_spec(plain)
    terms = json.loads(json.dumps(spec))
    for name, action in terms["actions"].items():
        if name.startswith("go_to_"):  # a wounded soldier walks slower: base + 2 at health 0, base at health 4
            action["cost"] = {"base": action["cost"] + 2, "per": {"health": -0.5}}
    kinds = {"rifleman": {}, "medic": {"actions": [a for a in spec["actions"] if a != "throw_grenade"],
                                       "cost": {"shoot": 1.5}, "priority": {g: 1 for g in list(spec["goals"])[:1]}}}
    typed, both = json.loads(json.dumps(spec)), json.loads(json.dumps(terms))
    typed["types"] = both["types"] = kinds
    return {"plain": (plain, False), "terms": (domain_from_spec(terms), False),
            "types": (domain_from_spec(typed), True), "terms+types": (domain_from_spec(both), True)}


def costs(args: argparse.Namespace) -> dict:
    """Plans per CPU-second of the soldier domain with and without cost terms and agent types (same queries)."""
    n = args.queries
    repeats = 1 if args.quick else args.repeats
    out: dict = {"queries": n, "heuristic": "hmax_depth2", "threads": 1, "rows": []}
    base = None
    for name, (domain, typed) in soldier_variants().items():
        values, goals = distinct_queries(domain, n, seed=11)
        ref = ReferencePlanner(domain)
        states = ref.tables.pack_states(values)
        types = (np.arange(n) % 2).astype(np.int32) if typed else None
        fast = WarpAStarPlanner(ref.tables, device="cpu", threads=1)
        fast.plan(states[:256], goals[:256], types=None if types is None else types[:256])
        cpu, wall, batch = cpu_timed(lambda f=fast, s=states, g=goals, t=types: f.plan(s, g, types=t), repeats)
        k = min(n, args.ref_sample)
        r = ref.plan(states[:k], goals[:k], types=None if types is None else types[:k])
        agree = bool(np.array_equal(r.status, batch.status[:k]) and np.array_equal(r.cost, batch.cost[:k],
                                                                                     equal_nan=True))
        row = {"variant": name, "plans_per_cpu_second": n / cpu, "cpu_seconds": cpu, "wall_seconds": wall,
               "expanded_mean": float(batch.expanded.mean()), "statuses": batch.counts(),
               "agrees_with_reference": agree}
        base = base or row["plans_per_cpu_second"]
        row["relative_to_plain"] = row["plans_per_cpu_second"] / base
        out["rows"].append(row)
        print(f"soldier {name:12s} {row['plans_per_cpu_second']:>10,.0f} plans/CPU-s ({row['relative_to_plain']:.2f}x "
              f"plain)  expanded {row['expanded_mean']:.1f}  agrees with the reference: {agree}", flush=True)
    return out


SECTION_FUNCS = {"throughput": throughput, "heuristics": heuristics, "soldier": soldier, "overhead": overhead,
                 "optimal": optimal, "pddl": pddl, "costs": costs, "versus_c": versus_c, "pdb": pdb_sizes}


if __name__ == "__main__":
    main()

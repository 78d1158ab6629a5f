"""The engine's tick on a GPU: the engine-only world at 100,000 and 1,000,000 agents, with and without graph capture,
against the CPU in the same run; ms per tick and the bytes that cross between host and device per tick.

    python benchmarks/gpu_tick.py --device cuda:0 --agents 100000,1000000 --ticks 100

Also checks, on a smaller run, that the GPU brain ends in the same state as the CPU brain (same seed): the
per-agent random numbers and every stage are deterministic, so the state hashes must match.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from goap.domain_file import load_domain  # noqa: E402
from goap.runtime import Brain  # noqa: E402
from goap.world import EngineWorld  # noqa: E402


def brain_for(domain, n, device, capture, seed=1):
    world = EngineWorld(domain, duration=3, drift_p=0.01, fail_p=0.02)
    return Brain(domain, n, world=world, device=device, plan_budget=max(1, n // 10), seed=seed, capture=capture,
                 check_inputs=False)


def timed(brain, ticks, warmup):
    import warp as wp

    for _ in range(warmup):
        brain.tick()
    wp.synchronize_device(brain.device)
    t0 = time.perf_counter()
    for _ in range(ticks):
        brain.tick()
    wp.synchronize_device(brain.device)
    return (time.perf_counter() - t0) * 1000.0 / ticks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--agents", default="100000,1000000")
    ap.add_argument("--ticks", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--cpu-agents", type=int, default=100000, help="CPU reference size (0: skip)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/gpu_tick.json"))
    args = ap.parse_args()
    domain = load_domain(ROOT / "worlds/village/domain.toml")

    brains = [brain_for(domain, 3000, dev, capture, seed=5)
              for dev, capture in (("cpu", False), ("cpu", True), (args.device, False), (args.device, True))]
    for _ in range(30):
        for brain in brains:
            brain.tick()
    hashes = [brain.state_hash() for brain in brains]
    same = len(set(hashes)) == 1
    print(f"cpu plain, cpu captured, {args.device} plain and {args.device} captured agree after 30 ticks: {same} "
          f"({', '.join(hashes)})", flush=True)

    rows = []
    for n in (int(x) for x in args.agents.split(",")):
        for capture in (False, True):
            brain = brain_for(domain, n, args.device, capture)
            ms = timed(brain, args.ticks, args.warmup)
            row = {"agents": n, "device": args.device, "capture": capture, "ms_per_tick": ms,
                   "host_bytes_per_tick": brain.host_bytes_per_tick, "captured": brain.captured,
                   "counters": dict(brain.counters)}
            rows.append(row)
            print(f"{n:>8d} agents on {args.device}, capture={capture}: {ms:8.2f} ms/tick, "
                  f"{brain.host_bytes_per_tick} bytes to the host per tick", flush=True)
    if args.cpu_agents:
        brain = brain_for(domain, args.cpu_agents, "cpu", False)
        ms = timed(brain, max(10, args.ticks // 5), 5)
        rows.append({"agents": args.cpu_agents, "device": "cpu", "capture": False, "ms_per_tick": ms})
        print(f"{args.cpu_agents:>8d} agents on cpu: {ms:8.2f} ms/tick", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"benchmark": "gpu_tick", "cpu_gpu_agree": same, "rows": rows}, indent=1))
    print(f"wrote {args.out}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()

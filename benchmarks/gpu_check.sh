#!/usr/bin/env bash
# Correctness and throughput on a GPU, in one short run (under ten minutes):
#   1. the Warp-vs-reference planner tests and the runtime tests on the GPU (GOAP_TEST_DEVICE)
#   2. the planner's throughput on the GPU against the CPU (100,000 and 1,000,000 soldier, village and random-16
#      queries), with the scratch bytes per agent
#   3. the engine's tick at 100,000 and 1,000,000 agents, plain launches against the captured graph, ms per tick
#      and the bytes that cross to the host per tick; CPU plain, CPU captured, GPU plain and GPU captured brains
#      must end in the same state
# Usage: benchmarks/gpu_check.sh [DEVICE]   (default cuda:0). Results: benchmarks/results/*gpu*.json
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICE="${1:-cuda:0}"
PY="${PY:-python3}"
if [ -x .venv/bin/python ]; then PY=.venv/bin/python; fi
"$PY" -c "import goap" 2>/dev/null || "$PY" -m pip install -q -e ".[dev]"
echo "== correctness on $DEVICE"
GOAP_TEST_DEVICE="$DEVICE" timeout 240 "$PY" -m pytest -q -x tests/test_warp_astar.py tests/test_heuristics.py tests/test_planner_calls.py tests/test_runtime_gpu.py \
    tests/test_planner_capture.py tests/test_world_soldier_capture.py -m "not slow"
echo "== planner throughput on $DEVICE against the CPU (soldier, village, random-16; 100,000 and 1,000,000 queries;"
echo "   the B/agent column is the scratch one search's launch used)"
timeout 150 "$PY" benchmarks/plan_throughput.py --device "$DEVICE" --repeats 3 --ref-sample 200 --facts 16 \
    --batches 100000,1000000 --sections throughput --no-startup \
    --out benchmarks/results/plan_throughput_gpu.json || echo "plan_throughput on $DEVICE failed"
timeout 150 "$PY" benchmarks/plan_throughput.py --device cpu --repeats 1 --ref-sample 50 --facts 16 \
    --batches 100000,1000000 --sections throughput --no-startup \
    --out benchmarks/results/plan_throughput_gpu_host_cpu.json || echo "plan_throughput on the CPU failed"
echo "== tick on $DEVICE"
timeout 180 "$PY" benchmarks/gpu_tick.py --device "$DEVICE" --agents 100000,1000000 --ticks 50

#!/usr/bin/env bash
# Correctness and throughput on a GPU, in one short run (under ten minutes):
#   1. the Warp-vs-reference planner tests and the runtime tests on the GPU (GOAP_TEST_DEVICE)
#   2. the planner's throughput on the GPU against the CPU (batches up to 1,000,000)
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
echo "== planner throughput on $DEVICE"
timeout 180 "$PY" benchmarks/plan_throughput.py --device "$DEVICE" --repeats 3 --ref-sample 200 \
    --out benchmarks/results/plan_throughput_gpu.json || echo "plan_throughput failed"
echo "== tick on $DEVICE"
timeout 180 "$PY" benchmarks/gpu_tick.py --device "$DEVICE" --agents 100000,1000000 --ticks 50

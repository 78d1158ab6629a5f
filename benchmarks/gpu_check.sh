#!/usr/bin/env bash
# Correctness and throughput of the Warp planner on a GPU, in one short run (under five minutes).
#   1. the Warp-vs-reference tests with every planner on cuda:0
#   2. the throughput benchmark on cuda:0 (batches of 1,000 to 100,000)
# Usage: benchmarks/gpu_check.sh [DEVICE]   (default cuda:0). Results: benchmarks/results/plan_throughput_gpu.json
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICE="${1:-cuda:0}"
PY="${PY:-python3}"
if [ -x .venv/bin/python ]; then PY=.venv/bin/python; fi
"$PY" -c "import goap" 2>/dev/null || "$PY" -m pip install -q -e ".[dev]"
echo "== correctness on $DEVICE"
GOAP_TEST_DEVICE="$DEVICE" timeout 180 "$PY" -m pytest -q -x tests/test_warp_astar.py
echo "== throughput on $DEVICE"
timeout 240 "$PY" benchmarks/plan_throughput.py --device "$DEVICE" --repeats 3 --ref-sample 200 \
    --out benchmarks/results/plan_throughput_gpu.json

"""The brain on a CUDA device: the same run as on the CPU, with and without CUDA graph capture.

Marked ``gpu``: skipped where Warp sees no CUDA device (run them with ``benchmarks/gpu_check.sh``).
"""

from __future__ import annotations

import os

import pytest

from goap.domain_file import load_domain
from goap.kernels import init_warp
from goap.runtime import Brain
from goap.world import EngineWorld
from tests.conftest import ROOT

wp = init_warp()
DEVICE = os.environ.get("GOAP_TEST_DEVICE", "cuda:0")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not wp.is_cuda_available(), reason="no CUDA device: these tests need a GPU"),
]


def run(device, capture, n=2000, ticks=25):
    domain = load_domain(ROOT / "worlds/village/domain.toml")
    brain = Brain(domain, n, world=EngineWorld(domain, duration=2, drift_p=0.02, fail_p=0.05), device=device,
                  plan_budget=300, seed=11, capture=capture)
    for _ in range(ticks):
        brain.tick()
    return brain


def test_gpu_brain_matches_cpu_brain():
    assert run(DEVICE, False).state_hash() == run("cpu", False).state_hash()


def test_captured_tick_matches_launched_tick():
    captured = run(DEVICE, True)
    assert captured.captured and captured.graph_captures > 0
    plain = run(DEVICE, False)
    assert captured.state_hash() == plain.state_hash()
    assert captured.counters == plain.counters

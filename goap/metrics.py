"""Per-tick series kept in bounded memory: a run of a million ticks keeps as much as a run of a thousand.

`RunningSeries` keeps the first ``keep`` values exactly (so that a warm-up can be left out exactly), a running
count and sum, and a log-spaced histogram for quantiles (relative error below 1% for values in the histogram's
range). `summary(warmup)` gives the mean (exact) and p95 (to the histogram's resolution) of the values after
the first ``warmup``; a warm-up longer than ``keep`` is refused.
"""

from __future__ import annotations

import math

import numpy as np

_BINS_PER_DECADE = 256
_LO_DECADE = -6  # values below 1e-6 fall in the first bin
_DECADES = 14  # up to 1e8


class RunningSeries:
    """Mean and p95 of a series of non-negative values in O(1) memory."""

    def __init__(self, keep: int = 1024):
        self.keep = int(keep)
        self.head = np.zeros(self.keep, dtype=np.float64)
        self.count = 0
        self.total = 0.0
        self.last = 0.0
        self.hist = np.zeros(_BINS_PER_DECADE * _DECADES + 2, dtype=np.int64)

    def nbytes(self) -> int:
        return self.head.nbytes + self.hist.nbytes

    def add(self, value: float) -> None:
        if self.count < self.keep:
            self.head[self.count] = value
        self.count += 1
        self.total += value
        self.last = value
        self.hist[_bin(value)] += 1

    def summary(self, warmup: int = 0) -> dict[str, float]:
        """``{"mean", "p95"}`` of the values after the first ``warmup`` (0 when there are none)."""
        if warmup > self.keep and warmup < self.count:
            raise ValueError(f"warmup {warmup} is longer than the {self.keep} ticks kept exactly")
        warmup = min(warmup, self.count)
        n = self.count - warmup
        if n <= 0:
            return {"mean": 0.0, "p95": 0.0}
        head = self.head[:warmup]
        total = self.total - float(head.sum())
        hist = self.hist.copy()
        if warmup:
            np.subtract.at(hist, _bins(head), 1)
        if self.count <= self.keep:  # every value is still known exactly
            values = self.head[warmup : self.count]
            return {"mean": total / n, "p95": float(np.percentile(values, 95))}
        rank = math.ceil(0.95 * n)
        b = int(np.searchsorted(np.cumsum(hist), rank))
        return {"mean": total / n, "p95": _centre(b)}


def _bin(v: float) -> int:
    if not v > 10.0**_LO_DECADE:
        return 0
    b = int((math.log10(v) - _LO_DECADE) * _BINS_PER_DECADE) + 1
    return min(b, _BINS_PER_DECADE * _DECADES + 1)


def _bins(v: np.ndarray) -> np.ndarray:
    return np.array([_bin(float(x)) for x in v], dtype=np.int64)


def _centre(b: int) -> float:
    if b <= 0:
        return 0.0
    return float(10.0 ** (_LO_DECADE + (b - 0.5) / _BINS_PER_DECADE))

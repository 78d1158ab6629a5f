"""Fact access of a `goap.runtime.Brain`: where a fact lives, and reading and writing it for chosen agents."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class FactSlot:
    """Where one fact lives in a packed state, for a game's own kernels (`goap.kernels.semantics.read_field`)."""

    index: int
    word: int
    shift: int
    mask: int  # before shifting: the field's all-ones value, above the range unless it holds 2^k values
    min: int
    max: int

    @property
    def top(self) -> int:
        """The largest encoded value (max - min): bound a value written by a kernel with this, not ``mask``."""
        return self.max - self.min


class Facts:
    """A mixin of `goap.runtime.Brain` (its wiring is in `goap.runtime.brain`)."""

    def fact_slot(self, name: str) -> FactSlot:
        """Where fact ``name`` lives in the packed state (word, shift, mask, min, max)."""
        try:
            f = self.domain.fact_index(name)
        except (KeyError, ValueError):
            raise ValueError(f"unknown fact '{name}'") from None
        L, fact = self.tables.layout, self.domain.facts[f]
        return FactSlot(f, int(L.word[f]), int(L.shift[f]), L.field_mask(f), int(fact.min), int(fact.max))

    def read_fact(self, name: str, agents: Any = None, *, out: Any = None) -> Any:
        """The values of fact ``name`` (int64; bools 0/1, enums their label index) as a device array, one per
        agent of ``agents`` (None: every agent; device index lists as in `goap.runtime.commands`). Device-only:
        ``out`` (an int64 device array of at least as many entries) is written instead of a new array."""
        wp, slot = self._wp, self.fact_slot(name)
        rows = self._rows(agents)
        if out is not None:
            if not isinstance(out, wp.array) or out.dtype != wp.int64 or out.ndim != 1 \
                    or out.shape[0] < rows.shape[0] or out.device != self.device:
                raise ValueError(f"out must be an int64 Warp array of at least {rows.shape[0]} entries on "
                                 f"{self.device}")
        else:
            out = wp.zeros(max(1, rows.shape[0]), dtype=wp.int64, device=self.device)
        self.launcher.launch(self._kernels.read_fact_values, rows.shape[0], [
            self.agents, rows, slot.word, slot.shift, wp.uint64(slot.mask), wp.int64(slot.min), out,
        ], record=False)
        return out[: rows.shape[0]] if rows.shape[0] else wp.zeros(0, dtype=wp.int64, device=self.device)

    def write_fact(self, name: str, values: Any, agents: Any = None) -> None:
        """Write fact ``name`` for all (or the given) agents: one value, or one per agent (ints, bools, enum
        labels, or an int64 device array). Values out of the fact's range are refused, naming the first."""
        wp, slot = self._wp, self.fact_slot(name)
        rows = self._rows(agents)
        k = rows.shape[0]
        fact = self.domain.facts[slot.index]
        if isinstance(values, wp.array):
            if values.dtype != wp.int64 or tuple(values.shape) != (k,):
                raise ValueError(f"values for '{name}' must be an int64 Warp array of shape ({k},)")
            vals = values
            if self.check_inputs:
                _check_range(name, fact, self._host(values))
        else:
            host = _as_values(name, fact, values)
            host = np.broadcast_to(host, (k,)) if host.ndim == 0 else host
            if host.shape != (k,):
                raise ValueError(f"{len(host)} values for '{name}' given for {k} agents")
            _check_range(name, fact, host)
            vals = wp.array(np.ascontiguousarray(host), dtype=wp.int64, device=self.device)
        self.launcher.launch(self._kernels.write_fact_values, k, [
            self.agents, rows, slot.word, slot.shift, wp.uint64(slot.mask), wp.int64(slot.min), vals,
        ], record=False)


def _as_values(name: str, fact: Any, values: Any) -> np.ndarray:
    """``values`` as int64, refusing every coercion that would change a value: floats (2.7 would become 2, 0.5
    false), complex numbers, strings of digits; bools only for bool facts and labels only for enum facts (the
    documented forms), integers for every fact (bools 0 / 1, enums a label's index)."""
    from goap.domain import BOOL, ENUM

    try:
        host = np.asarray(values)
    except (ValueError, TypeError) as e:
        raise ValueError(f"values for '{name}' are not a value or a list of values: {e}") from None
    kind = host.dtype.kind
    if kind in "US" or host.dtype == object:
        def one(v: Any) -> int:
            if fact.kind == ENUM and isinstance(v, str):
                return fact.parse_value(v, "value")
            if fact.kind == BOOL and isinstance(v, bool | np.bool_):
                return int(v)
            if _plain_int(v):
                if not -(2**63) <= int(v) < 2**63:
                    raise ValueError(f"value {int(v)} of fact '{name}' is out of range {fact.min}..{fact.max}")
                return int(v)
            want = {ENUM: "a label or a label index", BOOL: "True, False, 0 or 1"}.get(fact.kind, "an integer")
            raise ValueError(f"value {v!r} for {fact.kind} fact '{name}' is not {want}")

        return np.vectorize(one, otypes=[np.int64])(host) if host.size else np.zeros(host.shape, np.int64)
    if kind == "b":
        if fact.kind != BOOL:
            raise ValueError(f"True / False given for {fact.kind} fact '{name}': give integers")
        return host.astype(np.int64)
    if kind not in "iu":
        shown = host.reshape(-1)[0] if host.size else host
        raise ValueError(f"value {shown!r} for {fact.kind} fact '{name}' is not an integer (a {host.dtype} value "
                         f"would be rounded)")
    if kind == "u" and host.size and host.max() > np.iinfo(np.int64).max:
        raise ValueError(f"value {int(host.max())} for fact '{name}' is out of range {fact.min}..{fact.max}")
    return host.astype(np.int64)


def _plain_int(v: Any) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)


def _check_range(name: str, fact: Any, values: np.ndarray) -> None:
    bad = (values < fact.min) | (values > fact.max)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"value {int(values[i])} (item {i}) of fact '{name}' is out of range {fact.min}..{fact.max}")

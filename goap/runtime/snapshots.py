"""Snapshots of a `goap.runtime.Brain`: every array that defines the simulation, saved whole and restored checked.

`Snapshots.restore` reads and checks everything (shapes, dtypes, index ranges, packed states, the world's arrays)
before anything changes: on any problem a `SnapshotError` names the file and the field and the brain and its world
are left as they were. Captured graphs stay valid across a restore (it writes into the same device arrays).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np

from goap.codes import CAUSES, ActionStatus, Status
from goap.encoding import fingerprint
from goap.state import FIELD_NAMES


class SnapshotError(ValueError):
    """A snapshot that cannot be restored: the message names the file and the field; nothing was changed."""


class Snapshots:
    """A mixin of `goap.runtime.Brain` (its wiring is in `goap.runtime.brain`)."""

    def get_state(self) -> dict[str, np.ndarray]:
        """Host copies of every array that defines the simulation (brain fields, counters, the world's)."""
        out = {f"brain/{name}": arr for name, arr in self.arrays.host().items()}
        out["brain/tick_count"] = np.array(self.tick_count, dtype=np.int64)
        out["brain/counters"] = np.array(json.dumps(dict(self.counters), sort_keys=True))
        out["brain/action_counts"] = self._action_counts.numpy().sum(axis=0)
        out["brain/dedupe"] = np.array([int(self._dedupe_on), self._dedupe_probe_at], dtype=np.int64)
        if self.world is not None:
            out.update({f"world/{k}": np.asarray(v) for k, v in self.world.get_state().items()})
        return out

    def state_hash(self) -> str:
        """A hash of every agent and world array: equal hashes mean bit-identical simulations."""
        h = hashlib.sha256()
        for key, value in sorted(self.get_state().items()):
            if key in ("brain/counters", "brain/dedupe"):  # bookkeeping, not the simulation
                continue
            h.update(key.encode())
            arr = np.ascontiguousarray(value)
            h.update(str(arr.dtype).encode() + str(arr.shape).encode())
            h.update(arr.tobytes() if arr.dtype != object else repr(arr.tolist()).encode())
        return h.hexdigest()[:16]

    def snapshot(self, path: str | Path) -> None:
        """Save the brain and its world to a ``.npz`` file, written whole or not at all by `goap.files.write_atomic`
        (a symbolic link's target is replaced, the link stays; a named pipe or a device is written in place)."""
        from goap.files import write_atomic

        path = Path(path)
        buf = io.BytesIO()
        np.savez_compressed(buf, **{"meta/fingerprint": np.array(fingerprint(self.domain))}, **self.get_state())
        try:
            write_atomic(path, buf.getvalue())
        except OSError as e:
            raise OSError(f"{path}: cannot write snapshot: {e.strerror or e}") from None

    def restore(self, path: str | Path) -> None:
        """Load a snapshot saved by `snapshot` from a brain of the same domain and size.

        Everything is read and checked before anything changes (shapes, dtypes, index ranges, packed states, the
        world's arrays); on any problem a `SnapshotError` names the file and the field and the brain and its world
        are left as they were.
        """
        data = _read_snapshot(path)
        where = str(path)
        mark = data.get("meta/fingerprint")
        if not isinstance(mark, np.ndarray) or mark.shape != () or str(mark) != fingerprint(self.domain):
            raise SnapshotError(f"{where}: snapshot is of another domain (or has no 'meta/fingerprint')")
        arrays = {name: data.get(f"brain/{name}") for name in FIELD_NAMES}
        missing = [n for n, v in arrays.items() if v is None]
        if missing:
            raise SnapshotError(f"{where}: field 'brain/{missing[0]}' is missing")
        try:
            self.arrays.check(arrays, where)
        except ValueError as e:
            raise SnapshotError(str(e).replace("field '", "field 'brain/")) from None
        self._check_snapshot_values(arrays, where)
        tick_count = _scalar_int(data, "brain/tick_count", where)
        counters = _counters(data, where)
        action_counts = data.get("brain/action_counts")
        n_counts = self._action_counts.shape[1]
        if (not isinstance(action_counts, np.ndarray) or action_counts.dtype != np.int64
                or action_counts.shape != (n_counts,) or (action_counts < 0).any()):
            raise SnapshotError(f"{where}: field 'brain/action_counts' is not {n_counts} counts >= 0")
        dedupe = data.get("brain/dedupe")
        if not isinstance(dedupe, np.ndarray) or dedupe.shape != (2,) or dedupe.dtype != np.int64:
            raise SnapshotError(f"{where}: field 'brain/dedupe' is not int64 [2]")
        if self.world is not None:
            world_arrays = {k[len("world/"):]: v for k, v in data.items() if k.startswith("world/")}
            try:
                self.world.set_state(world_arrays)  # the world checks everything before it writes anything
            except (ValueError, KeyError, TypeError) as e:
                raise SnapshotError(f"{where}: world state: {e}") from None
        self.arrays.load(arrays)
        rows = np.zeros(tuple(self._action_counts.shape), dtype=np.int64)
        rows[0] = action_counts
        self._wp.copy(self._action_counts, self._wp.array(rows, device=self.device))
        self._tick.fill_(tick_count)
        self.tick_count = tick_count
        self.counters = Counter(counters)
        self._dedupe_on, self._dedupe_probe_at = bool(dedupe[0]), int(dedupe[1])
        if self._dedupe_auto:
            from goap.codes import DEDUPE_COUNTERS

            c = self.planner.counters.numpy()
            self._dedupe_seen = (int(c[DEDUPE_COUNTERS.index("requests")]), int(c[DEDUPE_COUNTERS.index("distinct")]))

    def _check_snapshot_values(self, arrays: dict[str, np.ndarray], where: str) -> None:
        A, G, L = self.tables.n_actions, self.tables.goals.n_goals, self.arrays.plan.shape[1]
        ranges = {
            "goal": (-1, G - 1), "pinned_goal": (-1, G - 1), "plan": (-1, A - 1), "action": (-1, A - 1),
            "plan_length": (0, None), "step": (0, None), "replan_cause": (0, len(CAUSES) - 1),
            "action_status": (int(min(ActionStatus)), int(max(ActionStatus))),
            "plan_status": (0, len(Status) - 1), "last_failure": (-1, len(Status) - 1), "waiting": (0, None),
            "action_ticks": (0, None), "plan_level": (0, self._n_levels),
        }
        for name, (lo, hi) in ranges.items():
            arr = arrays[name]
            bad = (arr < lo) | (arr > hi) if hi is not None else arr < lo
            if bad.any():
                i = np.argwhere(bad)[0]
                raise SnapshotError(f"{where}: field 'brain/{name}' holds {arr[tuple(i)]} at {tuple(int(x) for x in i)}"
                                    f", outside {lo}..{hi if hi is not None else 'any'}")
        if (arrays["step"] > np.maximum(arrays["plan_length"], 0)).any() or (arrays["plan_length"] > L).any():
            raise SnapshotError(f"{where}: field 'brain/step' or 'brain/plan_length' is past the plan")
        bad_rows = self.tables.invalid_states(arrays["states"])
        if len(bad_rows):
            i = int(bad_rows[0])
            problem = self.tables.state_problem(arrays["states"][i])
            raise SnapshotError(f"{where}: field 'brain/states' row {i}: {problem}")



def _read_snapshot(path: str | Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            out = {k: data[k] for k in data.files}
    except FileNotFoundError:
        raise SnapshotError(f"{path}: no such snapshot file") from None
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, KeyError) as e:
        raise SnapshotError(f"{path}: not a readable snapshot ({type(e).__name__}: {e})") from None
    return out


def _scalar_int(data: dict[str, np.ndarray], key: str, where: str) -> int:
    v = data.get(key)
    if not isinstance(v, np.ndarray) or v.shape != () or not np.issubdtype(v.dtype, np.integer) or int(v) < 0:
        raise SnapshotError(f"{where}: field '{key}' is not an integer >= 0")
    return int(v)


def _counters(data: dict[str, np.ndarray], where: str) -> dict[str, int]:
    v = data.get("brain/counters")
    try:
        counters = json.loads(str(v)) if isinstance(v, np.ndarray) and v.shape == () else None
    except (ValueError, RecursionError):
        counters = None
    if not isinstance(counters, dict) or not all(isinstance(k, str) and type(n) is int for k, n in counters.items()):
        raise SnapshotError(f"{where}: field 'brain/counters' is not a JSON object of integer counts")
    return counters



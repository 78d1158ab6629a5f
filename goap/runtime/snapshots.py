"""Snapshots of a `goap.runtime.Brain`: every array that defines the simulation, saved whole and restored checked.

`Snapshots.restore` reads and checks everything (shapes, dtypes, index ranges, packed states, the world's arrays)
before anything changes: on any problem a `SnapshotError` names the file and the field and the brain and its world
are left as they were. Captured graphs stay valid across a restore (it writes into the same device arrays).
"""

from __future__ import annotations

import hashlib
import io
import json
import tokenize
import zipfile
import zlib
from collections import Counter
from pathlib import Path

import numpy as np

from goap.codes import CAUSES, EVENTS, ActionStatus, Status
from goap.encoding import fingerprint
from goap.planners.base import MAX_COST
from goap.state import FIELD_NAMES, FIELDS

#: The largest tick count a snapshot may hold: 2**53 ticks (285 years at a million ticks a second) keeps every tick
#: and every cooldown (a tick plus an int32 of ticks) exact in int64 and float64 arithmetic.
MAX_TICK = 2**53


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
        data = _read_snapshot(path, self._member_limits(), fingerprint(self.domain))
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
        if (not isinstance(dedupe, np.ndarray) or dedupe.shape != (2,) or dedupe.dtype != np.int64
                or dedupe[0] not in (0, 1) or not 0 <= dedupe[1] <= MAX_TICK + 32):
            raise SnapshotError(f"{where}: field 'brain/dedupe' is not int64 [2] (a flag and a tick)")
        world_arrays = {k[len("world/"):]: v for k, v in data.items() if k.startswith("world/")}
        if self.world is None and world_arrays:
            raise SnapshotError(f"{where}: the snapshot holds a world's arrays ({', '.join(sorted(world_arrays))}) "
                                f"and this brain has no world: make the brain with the world it was saved with")
        if self.world is not None:
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

    def _member_limits(self) -> dict[str, int]:
        """The most bytes each member of a snapshot for this brain may declare (its ``.npy`` header included): the
        brain's own arrays have this brain's shapes; the world's may be of another map (another seed), so they may
        be a few times this world's; anything else is not a member at all."""
        limits: dict[str, int] = {"meta/fingerprint": _HEADER + 4 * 256, "brain/counters": _HEADER + 2**20,
                                  "brain/tick_count": _HEADER + 8, "brain/dedupe": _HEADER + 16,
                                  "brain/action_counts": _HEADER + 8 * int(self._action_counts.shape[1])}
        for f in FIELDS:  # from the shapes: no copy of the brain's arrays
            limits[f"brain/{f.name}"] = _HEADER + int(np.prod(self.arrays.shape_of(f))) * np.dtype(f.dtype).itemsize
        if self.world is not None:
            for key, value in self.world.get_state().items():
                limits[f"world/{key}"] = _HEADER + 4 * int(np.asarray(value).nbytes) + 2**20
        return limits

    def _check_snapshot_values(self, arrays: dict[str, np.ndarray], where: str) -> None:
        A, G, L = self.tables.n_actions, self.tables.goals.n_goals, self.arrays.plan.shape[1]
        ranges = {
            "goal": (-1, G - 1), "pinned_goal": (-1, G - 1), "plan": (-1, A - 1), "action": (-1, A - 1),
            "plan_length": (0, None), "step": (0, None), "replan_cause": (0, len(CAUSES) - 1),
            "action_status": (int(min(ActionStatus)), int(max(ActionStatus))),
            "plan_status": (0, len(Status) - 1), "last_failure": (-1, len(Status) - 1), "waiting": (0, None),
            "action_ticks": (0, None), "plan_level": (0, self._n_levels),
            "agent_type": (0, len(self.type_names) - 1), "failed_goal": (-1, G - 1),
            "interrupted_action": (-1, A - 1),
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
        acting = np.flatnonzero(arrays["action"] >= 0)
        steps = arrays["step"][acting]
        if len(acting):
            planned = arrays["plan"][acting, np.minimum(steps, L - 1)]
            wrong = acting[(steps >= arrays["plan_length"][acting]) | (planned != arrays["action"][acting])]
            if len(wrong):
                i = int(wrong[0])
                raise SnapshotError(f"{where}: field 'brain/action' row {i}: action {int(arrays['action'][i])} is not "
                                    f"the plan's step {int(arrays['step'][i])}")
        _check_floats(arrays, where)
        for name in FIELD_NAMES:  # a bool byte other than 0 / 1 reads differently in numpy and in a kernel
            if arrays[name].dtype == np.bool_ and (arrays[name].view(np.uint8) > 1).any():
                raise SnapshotError(f"{where}: field 'brain/{name}' holds a bool byte other than 0 or 1")
        if (arrays["expanded"] < 0).any() or (arrays["cooldown_until"] < 0).any() \
                or (arrays["cooldown_until"] > MAX_TICK + 2**31).any():
            raise SnapshotError(f"{where}: field 'brain/expanded' or 'brain/cooldown_until' is negative or past "
                                f"{MAX_TICK} + 2**31 ticks")
        if (arrays["event_bits"] >= np.uint32(1 << len(EVENTS))).any():
            raise SnapshotError(f"{where}: field 'brain/event_bits' holds a bit of no event")
        bad_rows = self.tables.invalid_states(arrays["states"])
        if len(bad_rows):
            i = int(bad_rows[0])
            problem = self.tables.state_problem(arrays["states"][i])
            raise SnapshotError(f"{where}: field 'brain/states' row {i}: {problem}")



def _check_floats(arrays: dict[str, np.ndarray], where: str) -> None:
    """Costs as the planners take them (finite, 0..MAX_COST), finite priorities, plan costs NaN (no plan) or >= 0."""
    costs, prio, plan_cost = arrays["costs"], arrays["priorities"], arrays["plan_cost"]
    bad = ~np.isfinite(costs) | (costs < 0) | (costs > MAX_COST)
    if bad.any():
        i, a = (int(x) for x in np.argwhere(bad)[0])
        raise SnapshotError(f"{where}: field 'brain/costs' row {i} action {a} holds {costs[i, a]}; costs must be "
                            f"finite and in 0..{MAX_COST:g}")
    if not np.isfinite(prio).all():
        i = int(np.argwhere(~np.isfinite(prio))[0][0])
        raise SnapshotError(f"{where}: field 'brain/priorities' row {i} is not finite")
    if (np.isinf(plan_cost) | (plan_cost < 0)).any():
        raise SnapshotError(f"{where}: field 'brain/plan_cost' holds an infinite or negative cost")


#: Room for a ``.npy`` member's header (numpy writes about 128 bytes; its reader refuses headers over 10,000).
_HEADER = 10_240


def _read_snapshot(path: str | Path, limits: dict[str, int], mark: str) -> dict[str, np.ndarray]:
    """Every member of the snapshot, each checked before it is read: the domain's fingerprint first (a snapshot of
    another domain is named as such), then a known name, a declared size within ``limits``, a header whose shape
    and dtype fit that size; every failure of the file's format is a SnapshotError (a bad zip, a zlib stream, a
    compression it does not support, a header that is not Python)."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            names = [i.filename for i in infos]
            if len(set(names)) != len(names):
                raise SnapshotError(f"{path}: a member is stored twice")
            meta = [i for i in infos if i.filename == "meta/fingerprint.npy"]
            found = _read_member(zf, meta[0], path) if meta and meta[0].file_size <= limits["meta/fingerprint"] \
                else None
            if found is None or found.shape != () or found.dtype.kind != "U" or str(found) != mark:
                raise SnapshotError(f"{path}: snapshot is of another domain (or has no 'meta/fingerprint')")
            for info in infos:
                key = info.filename[:-4] if info.filename.endswith(".npy") else None
                if key not in limits:
                    raise SnapshotError(f"{path}: member '{info.filename}' is not part of a snapshot of this brain")
                if info.file_size > limits[key]:
                    raise SnapshotError(f"{path}: member '{info.filename}' declares {info.file_size} bytes, more than "
                                        f"the {limits[key]} a snapshot of this brain holds there")
            return {info.filename[:-4]: _read_member(zf, info, path) for info in infos}
    except FileNotFoundError:
        raise SnapshotError(f"{path}: no such snapshot file") from None
    except SnapshotError:
        raise
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, KeyError, zlib.error, NotImplementedError,
            RuntimeError, SyntaxError, tokenize.TokenError, MemoryError, OverflowError, TypeError) as e:
        raise SnapshotError(f"{path}: not a readable snapshot ({type(e).__name__}: {e})") from None


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: str | Path) -> np.ndarray:
    fmt = np.lib.format
    with zf.open(info) as f:
        version = fmt.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(f)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = fmt.read_array_header_2_0(f)
        else:
            raise SnapshotError(f"{path}: member '{info.filename}' has .npy version {version}")
        if dtype.hasobject or dtype.itemsize == 0:
            raise SnapshotError(f"{path}: member '{info.filename}' holds objects or empty items (pickles are never "
                                f"read)")
        count = 1
        for d in shape:
            count *= int(d)
        nbytes = count * dtype.itemsize
        if nbytes > info.file_size:
            raise SnapshotError(f"{path}: member '{info.filename}' declares shape {shape} of {dtype}: {nbytes} "
                                f"bytes in a member of {info.file_size}")
        raw = f.read(nbytes)
        if len(raw) != nbytes:
            raise SnapshotError(f"{path}: member '{info.filename}' is cut short")
    arr = np.frombuffer(raw, dtype=dtype, count=count).copy() if count else np.zeros(0, dtype)
    return arr.reshape(shape, order="F" if fortran else "C")


def _scalar_int(data: dict[str, np.ndarray], key: str, where: str) -> int:
    v = data.get(key)
    if not isinstance(v, np.ndarray) or v.shape != () or not np.issubdtype(v.dtype, np.integer) \
            or not 0 <= int(v) <= MAX_TICK:
        raise SnapshotError(f"{where}: field '{key}' is not an integer in 0..{MAX_TICK}")
    return int(v)


def _counters(data: dict[str, np.ndarray], where: str) -> dict[str, int]:
    v = data.get("brain/counters")
    try:
        counters = json.loads(str(v)) if isinstance(v, np.ndarray) and v.shape == () else None
    except (ValueError, RecursionError):
        counters = None
    if not isinstance(counters, dict) or not all(isinstance(k, str) and type(n) is int and 0 <= n < 2**63
                                                 for k, n in counters.items()):
        raise SnapshotError(f"{where}: field 'brain/counters' is not a JSON object of integer counts >= 0")
    return counters



"""Planning outcomes, logged per planning call: what was asked, what the planner said, and what followed.

One row per agent planned: the packed state and goal at planning time, the planner's status, cost, length and
expansions, and then whether the goal was achieved (and how many ticks later) or abandoned. With a world that
reports each agent's contribution to its objective (`goap.world.World.contribution`), ``gain`` is how much the
agent's contribution changed from the plan's start until the goal was reached or abandoned, ``ticks_open`` the
ticks in between: what pursuing that goal from that state was worth to the world. Columns are numpy
arrays, saved as one ``.npz`` with the domain's fingerprint, so logs from several runs can be appended and a
model trained on one domain is never fed another's data.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from goap.domain import Domain
from goap.encoding import fingerprint
from goap.files import write_atomic

COLUMNS: dict[str, Any] = {
    "tick": np.int64,
    "goal": np.int32,
    "status": np.int8,
    "cost": np.float32,
    "length": np.int32,
    "expanded": np.int32,
    "achieved": np.int8,  # 1 achieved, 0 abandoned or failed, -1 still open
    "ticks_to_goal": np.int32,  # -1 unless achieved
    "reward": np.float32,  # the goal's priority when planned
    "gain": np.float32,  # change of the agent's contribution to the world objective until closed; NaN: unknown
    "ticks_open": np.int32,  # ticks from planning until the goal was reached or abandoned; -1 while open
}
#: Columns a log written before they existed lacks: `OutcomeLog.load` fills them with these (unknown) values.
LATER_COLUMNS = {"gain": np.nan, "ticks_open": -1}


#: Largest outcome log `OutcomeLog.load` inflates (the sum of its columns' bytes), checked from the array headers
#: before any column is read.
MAX_LOG_BYTES = 4 * 2**30


class _TooLarge(Exception):
    def __init__(self, size: int):
        self.size = size


def _unpacked_bytes(npz: Any) -> int:
    """The bytes the arrays of an open ``.npz`` take once read, from each member's ``.npy`` header alone."""
    total = 0
    for name in npz.files:
        with npz.zip.open(name + ".npy") as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, _, dtype = np.lib.format.read_array_header_2_0(f)
            else:
                raise ValueError(f"unsupported .npy version {version}")
        total += int(np.prod(shape, dtype=object)) * dtype.itemsize
    return total


class OutcomeLog:
    """Columnar outcome records in growable arrays; rows are added in blocks (one per tick), never one by one."""

    def __init__(self, domain_name: str, fingerprint: str, n_words: int):
        self.domain_name = domain_name
        self.fingerprint = fingerprint
        self.n_words = n_words
        self._n = 0
        self._data: dict[str, np.ndarray] = {"states": np.zeros((0, n_words), np.uint64)}
        self._data.update({k: np.zeros(0, t) for k, t in COLUMNS.items()})

    @classmethod
    def for_domain(cls, domain: Domain, n_words: int) -> OutcomeLog:
        return cls(domain.name, fingerprint(domain), n_words)

    @classmethod
    def from_columns(cls, domain: Domain, states: np.ndarray, **columns: np.ndarray) -> OutcomeLog:
        """A log built from whole columns (for tests and conversions); missing columns get neutral values."""
        states = np.asarray(states, dtype=np.uint64)
        log = cls.for_domain(domain, states.shape[1])
        n = len(states)
        defaults = {"tick": 0, "status": 0, "cost": np.nan, "length": 0, "expanded": 0, "achieved": -1,
                    "ticks_to_goal": -1, "reward": 0.0, **LATER_COLUMNS}
        unknown = set(columns) - set(COLUMNS)
        if unknown:
            raise ValueError(f"unknown column '{sorted(unknown)[0]}'")
        if "goal" not in columns:
            raise ValueError("column 'goal' is required")
        block = {"states": states}
        for name, dtype in COLUMNS.items():
            value = columns.get(name, defaults.get(name))
            block[name] = np.broadcast_to(np.asarray(value, dtype=dtype), (n,)).copy()
        log.add(block)
        return log

    def add(self, block: dict[str, np.ndarray]) -> np.ndarray:
        """Append rows (every column, same length; ``gain`` and ``ticks_open`` may be left out: unknown, open);
        returns their row indices."""
        k = len(block["goal"])
        block = {**{name: np.full(k, fill, COLUMNS[name]) for name, fill in LATER_COLUMNS.items()}, **block}
        need = self._n + k
        if need > len(self._data["goal"]):
            cap = max(need, 2 * len(self._data["goal"]), 1024)
            for name, arr in self._data.items():
                grown = np.zeros((cap, *arr.shape[1:]), arr.dtype)
                grown[: self._n] = arr[: self._n]
                self._data[name] = grown
        for name, arr in self._data.items():
            arr[self._n : need] = block[name]
        rows = np.arange(self._n, need)
        self._n = need
        return rows

    def __len__(self) -> int:
        return self._n

    @property
    def columns(self) -> dict[str, np.ndarray]:
        """All rows as one array per column (``states`` is uint64 [R, W]); views, valid until the next add."""
        return {name: arr[: self._n] for name, arr in self._data.items()}

    def update(self, rows: np.ndarray, **values: np.ndarray) -> None:
        """Set the outcome of earlier rows (achieved, ticks_to_goal)."""
        for name, value in values.items():
            self._data[name][rows] = value

    # --- files ----------------------------------------------------------------------------------------------
    def save(self, path: str | Path, append: bool = False) -> None:
        """Write the log as ``.npz``; with ``append``, after the rows already in ``path`` (same domain only).

        Only a regular file (or a link to one) holds rows to append to: a named pipe or a device is given this log
        alone, written in place (`goap.files.write_atomic`), never read first.
        """
        path = Path(path)
        log = self
        if append and path.is_file():
            old = OutcomeLog.load(path)
            if old.fingerprint != self.fingerprint:
                raise ValueError(f"{path}: holds outcomes of domain '{old.domain_name}', not '{self.domain_name}'")
            log = OutcomeLog.merge([old, self])
        write_atomic(path, log.to_bytes())

    def to_bytes(self) -> bytes:
        """The log as the bytes of its ``.npz`` file (what `save` writes; a Ray worker returns these)."""
        buf = io.BytesIO()
        np.savez_compressed(buf, fingerprint=np.array(self.fingerprint), domain_name=np.array(self.domain_name),
                            **self.columns)
        return buf.getvalue()

    @classmethod
    def merge(cls, logs: list[OutcomeLog], names: list[str] | None = None) -> OutcomeLog:
        """One log of the rows of ``logs``, in order; ValueError naming the first log (``names``: their files) of
        another domain than the first's."""
        if not logs:
            raise ValueError("no outcome logs to merge")
        names = names or [f"log {k + 1}" for k in range(len(logs))]
        first = logs[0]
        out = cls(first.domain_name, first.fingerprint, first.n_words)
        for name, log in zip(names, logs, strict=True):
            if log.fingerprint != first.fingerprint or log.n_words != first.n_words:
                raise ValueError(f"{name}: holds outcomes of domain '{log.domain_name}' (fingerprint "
                                 f"{log.fingerprint}), not of '{first.domain_name}' ({first.fingerprint}) as "
                                 f"{names[0]} does")
            if len(log):
                out.add(log.columns)
        return out

    @classmethod
    def check_appendable(cls, path: str | Path, domain: Domain) -> None:
        """ValueError unless ``save(path, append=True)`` of a log of ``domain`` would succeed on what ``path``
        holds now: nothing, or a readable outcome log of the same domain. Call it before a run, not after."""
        path = Path(path)
        if not path.is_file():  # nothing there, or a pipe or a device (see `save`); a folder is check_output_file's
            return
        old = cls.load(path)
        fp = fingerprint(domain)
        if old.fingerprint != fp:
            raise ValueError(
                f"{path}: holds outcomes of domain '{old.domain_name}' (fingerprint {old.fingerprint}), not of "
                f"domain '{domain.name}' (fingerprint {fp}): give another file"
            )

    @classmethod
    def load(cls, path: str | Path) -> OutcomeLog:
        """Read a log written by `save`; ValueError naming the file and the column for anything else."""
        path = Path(path)
        if path.is_dir():
            raise ValueError(f"{path}: is a directory, not an outcome log")
        try:
            data = np.load(path, allow_pickle=False)
            if not isinstance(data, np.lib.npyio.NpzFile):  # a lone .npy array
                raise ValueError("not an .npz archive")
            with data:
                size = _unpacked_bytes(data)
                if size > MAX_LOG_BYTES:  # a compressed archive can claim any size: check before inflating it
                    raise _TooLarge(size)
                arrays = {k: data[k] for k in data.files}
        except FileNotFoundError:
            raise ValueError(f"{path}: no such file") from None
        except _TooLarge as e:
            raise ValueError(
                f"{path}: too large: its columns hold {e.size:,} bytes (at most {MAX_LOG_BYTES:,})"
            ) from None
        except Exception as e:  # a damaged archive fails in zlib, zipfile, the .npy header parser, numpy...
            raise ValueError(f"{path}: not a readable outcome log ({type(e).__name__})") from None
        for k, fill in LATER_COLUMNS.items():
            if k not in arrays and "states" in arrays:
                arrays[k] = np.full(len(arrays["states"]), fill, dtype=COLUMNS[k])
        missing = [k for k in ("states", "fingerprint", "domain_name", *COLUMNS) if k not in arrays]
        if missing:
            raise ValueError(f"{path}: not an outcome log (no column '{missing[0]}')")
        for key in ("fingerprint", "domain_name"):
            a = arrays[key]
            if a.ndim != 0 or a.dtype.kind != "U":
                raise ValueError(f"{path}: damaged outcome log ('{key}' is not a string)")
        states = arrays["states"]
        if states.ndim != 2 or states.shape[1] < 1 or states.dtype != np.uint64:
            raise ValueError(
                f"{path}: damaged outcome log (column 'states' must be uint64 [rows, words], "
                f"got {states.dtype} {list(states.shape)})"
            )
        rows = states.shape[0]
        for name, dtype in COLUMNS.items():
            a = arrays[name]
            if a.ndim != 1 or len(a) != rows:
                raise ValueError(
                    f"{path}: damaged outcome log (column '{name}' must have one value per row, {rows}, "
                    f"got shape {list(a.shape)})"
                )
            if a.dtype.kind not in "biuf" or (np.dtype(dtype).kind in "iu" and a.dtype.kind == "f"):
                expected = np.dtype(dtype).name
                raise ValueError(f"{path}: damaged outcome log (column '{name}' holds {a.dtype}, expected {expected})")
            if a.dtype.kind in "iu" and len(a):
                info = np.iinfo(dtype)
                if a.min() < info.min or a.max() > info.max:
                    raise ValueError(
                        f"{path}: damaged outcome log (column '{name}' holds values outside {np.dtype(dtype).name})"
                    )
        log = cls(str(arrays["domain_name"]), str(arrays["fingerprint"]), states.shape[1])
        log.add({"states": states, **{k: arrays[k].astype(t) for k, t in COLUMNS.items()}})
        return log

"""One launcher for every Warp launch of the engine: recorded launches, CPU chunks, graph capture and its guard.

The brain, the planners, the grouping planner and the worlds launch through this module, so that each scheme is
written once:

* **Recorded launches** (`Launcher.launch`): packing a launch's arguments (a struct of two dozen arrays, the
  domain's table structs) costs more than running a tick kernel over thousands of agents on the CPU. The engine's
  arrays are allocated once, so a launch is recorded once (``record_cmd=True``) and replayed, keyed by the identity
  of every array and struct and the value of every scalar.
* **Chunks** (`Launcher.launch_rows`): a Warp CPU launch is one serial loop on one core that releases the GIL; a
  per-agent kernel (whose last two parameters are ``first`` and ``chunk``) runs in disjoint spans on the one shared
  worker pool (`cpu_pool`). On a GPU, and on the CPU while a graph is being captured, it is one launch over all
  rows (``first = 0``, ``chunk = 0``): the GPU's path.
* **Capture** (`Launcher.capture`): a function's launches are recorded as a graph (CUDA graphs on a GPU; Warp's
  CPU graphs, which record and do not run, on the CPU) and replayed with `Launcher.replay`. Inside the captured
  region nothing may read from or copy to the host: `host_guard` makes every such call raise `CaptureError`
  naming the stage, instead of reading stale memory (on the CPU a captured launch has not run yet).

`host_sized` tells a launch site whether it may size its launches from counts read on the host (the CPU's cheaper
variant, outside capture) or must take the device path (fixed dimensions, counts read on the device).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

#: Per-agent launches smaller than this many rows per worker run as one launch (the pool's hand-off costs more).
CHUNK_ROWS = 2048


class CaptureError(RuntimeError):
    """Something inside a captured region needed the host (a read, a copy), or a graph cannot be made."""


# --- the shared CPU worker pool --------------------------------------------------------------------------------
_pool: ThreadPoolExecutor | None = None
_pool_workers = 0
_pool_lock = threading.Lock()


def cpu_workers() -> int:
    """Worker threads of the shared pool by default: the machine's cores, 1..8."""
    return max(1, min(os.cpu_count() or 1, 8))


def cpu_pool(workers: int | None = None) -> ThreadPoolExecutor:
    """The one thread pool every CPU launch site shares (grown, never shrunk, when more workers are asked for).

    Jobs submitted to it must not wait on other jobs of the pool (no nesting), which holds for every launch site:
    they are submitted from the thread that runs the tick or the planning call.
    """
    global _pool, _pool_workers
    want = max(1, int(workers or cpu_workers()))
    with _pool_lock:
        if _pool is None or _pool_workers < want:
            old = _pool
            _pool = ThreadPoolExecutor(want, thread_name_prefix="goap-cpu")
            _pool_workers = want
            if old is not None:
                old.shutdown(wait=False)  # running jobs finish; nothing new goes to it
        return _pool


def run_parallel(jobs: list[Callable[[], Any]]) -> None:
    """Run ``jobs`` on the shared pool, the first in this thread, and wait for all (the first error is raised)."""
    if len(jobs) == 1:
        jobs[0]()
        return
    futures = [cpu_pool().submit(job) for job in jobs[1:]]
    try:
        jobs[0]()
    finally:
        for f in futures:
            f.result()


# --- capture state and the host guard ----------------------------------------------------------------------------
def capturing(device: Any) -> bool:
    """Whether a graph is being captured on ``device`` now (CPU or CUDA)."""
    return bool(device.is_capturing)


def host_sized(device: Any) -> bool:
    """Whether launches on ``device`` may be sized from counts read on the host right now: on the CPU outside a
    capture (a free read there), never on a GPU or inside a captured region."""
    return bool(device.is_cpu) and not capturing(device)


_guard = threading.local()


def guarded_stage() -> str | None:
    """The stage whose capture is in progress in this thread, if any."""
    return getattr(_guard, "stage", None)


@contextlib.contextmanager
def host_guard(stage: str) -> Iterator[None]:
    """Inside the block, reading a Warp array to the host, writing one from host data, or making one from host
    data raises `CaptureError` naming ``stage`` (the block is being captured: such a read would see memory the
    recorded launches have not written yet, and a host copy would be baked into the graph as stale data)."""
    import warp as wp

    cls = wp.array
    saved = {name: cls.__dict__[name] for name in ("numpy", "list", "assign", "__array__", "__array_interface__")}
    saved_init = cls.__init__
    saved_copy = wp.copy

    def refuse(what: str) -> Callable[..., Any]:
        def method(*args: Any, **kwargs: Any) -> Any:
            raise CaptureError(
                f"stage '{stage}': {what} inside a captured tick; a captured stage may only launch kernels on "
                f"the device (read results after the tick, or keep the value in a device array)")
        return method

    def init(self: Any, data: Any = None, *args: Any, **kwargs: Any) -> None:
        if data is not None and not isinstance(data, cls):
            refuse("a Warp array made from host data")()
        saved_init(self, data, *args, **kwargs)

    def copy(dest: Any, src: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(dest, "device", None) != getattr(src, "device", None):
            refuse(f"a copy from {src.device} to {dest.device}")()
        return saved_copy(dest, src, *args, **kwargs)

    _guard.stage = stage
    cls.numpy = refuse("a read of a Warp array to the host (.numpy())")
    cls.list = refuse("a read of a Warp array to the host (.list())")
    cls.assign = refuse("a copy of host data into a Warp array (.assign())")
    cls.__array__ = refuse("a read of a Warp array to the host (numpy conversion)")
    cls.__array_interface__ = property(refuse("a read of a Warp array to the host (numpy conversion)"))
    cls.__init__ = init
    wp.copy = copy
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(cls, name, fn)
        cls.__init__ = saved_init
        wp.copy = saved_copy
        _guard.stage = None


# --- the launcher --------------------------------------------------------------------------------------------------
def _arg_key(x: Any) -> Any:
    """A launch argument as part of a cache key: arrays and structs by identity, scalars by type and value. Called
    for every input of every recorded launch, so each type's kind is worked out once (`_kind_of`)."""
    t = type(x)
    kind = _KINDS.get(t)
    if kind is None:
        kind = _KINDS[t] = _kind_of(t)
    if kind == 0:
        return id(x)
    if kind == 1:
        return (t, x)
    return (t, x.value)  # a Warp scalar such as wp.uint64(k)


_KINDS: dict[type, int] = {}
_SCALAR_NAMES = frozenset(("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                           "float16", "float32", "float64"))


def _kind_of(t: type) -> int:
    """How `_arg_key` keys a value of type ``t``: 1 by value (Python bool, int, float and their subclasses), 2 by
    its ``value`` (a Warp scalar class, told apart from structs that merely have a field called ``value`` by being
    exactly one of Warp's scalar classes), 0 by identity (arrays, structs, anything else)."""
    import warp as wp

    if issubclass(t, bool | int | float):
        return 1
    if t.__name__ in _SCALAR_NAMES and getattr(wp, t.__name__, None) is t:
        return 2
    return 0


class Launcher:
    """Launches on one device: recorded and replayed, chunked over the shared CPU pool, captured into graphs.

    Args:
        device: the Warp device.
        threads: CPU chunks per per-agent launch (default: `cpu_workers`); 1 on a GPU.
    """

    def __init__(self, device: Any, threads: int | None = None):
        import warp as wp

        self._wp = wp
        self.device = device
        self.threads = max(1, int(threads or cpu_workers())) if device.is_cpu else 1
        self._records: dict[tuple, list[Any]] = {}  # key -> [launch, inputs it holds, code, dimension set]
        self._lock = threading.Lock()

    # --- launches -------------------------------------------------------------------------------------------------
    def launch(self, kernel: Any, dim: int, inputs: list[Any], *, record: bool = True) -> None:
        """Launch ``kernel`` over ``dim`` threads; ``record`` replays a recorded launch (only for arrays that live
        as long as their owner: a recorded launch keeps its inputs alive while it is cached)."""
        if not dim:
            return
        if not record:
            self._wp.launch(kernel, dim=dim, inputs=inputs, device=self.device)
            return
        entry = self._entry(kernel, inputs)
        if entry[3] != dim:  # set_dim rebuilds the launch bounds: only when the dimension changes
            entry[0].set_dim(dim)
            entry[3] = dim
        entry[0].launch()

    def recorded(self, kernel: Any, inputs: list[Any]) -> Any:
        """The recorded launch of ``kernel`` with these inputs (dimension 1: set it before launching).

        Recorded under a lock (two threads recording launches of one kernel at once crash inside Warp; replaying
        them concurrently is safe). Warp frees a module's code when it reloads the module, so an entry recorded
        against code no longer loaded is recorded again.
        """
        entry = self._entry(kernel, inputs)
        entry[3] = None  # the caller sets the dimension
        return entry[0]

    def _entry(self, kernel: Any, inputs: list[Any]) -> list[Any]:
        key = (id(kernel), *map(_arg_key, inputs))
        entry = self._records.get(key)
        if entry is None or not any(e is entry[2] for e in kernel.module.execs.values()):
            with self._lock:
                if len(self._records) >= 512:
                    self._records.clear()
                cmd = self._wp.launch(kernel, dim=1, inputs=inputs, device=self.device, record_cmd=True)
                ctx = self.device.context
                loaded = next((e for k, e in kernel.module.execs.items() if k[0] == ctx), None)
                entry = self._records[key] = [cmd, list(inputs), loaded, 1]
        return entry

    def launch_rows(self, kernel: Any, dim: int, inputs: list[Any], *, record: bool = True) -> None:
        """Launch a per-row kernel whose last two parameters are ``first`` (its first row) and ``chunk`` (its
        counter row): disjoint spans on the shared pool on the CPU, one launch on a GPU or under capture."""
        if not dim:
            return
        chunks = self.chunks(dim)
        if chunks == 1:
            self.launch(kernel, dim, [*inputs, 0, 0], record=record)
            return
        size = -(-dim // chunks)
        jobs = []
        for k in range(chunks):
            first = k * size
            if first >= dim:
                break
            n = min(size, dim - first)
            if record:
                entry = self._entry(kernel, [*inputs, first, k])
                if entry[3] != n:
                    entry[0].set_dim(n)
                    entry[3] = n
                jobs.append(entry[0].launch)
            else:
                jobs.append(lambda k=k, first=first, n=n: self._wp.launch(
                    kernel, dim=n, inputs=[*inputs, first, k], device=self.device))
        run_parallel(jobs)

    def chunks(self, dim: int) -> int:
        """How many spans a per-row launch of ``dim`` rows takes now (1 on a GPU and under capture)."""
        if self.threads == 1 or not host_sized(self.device) or dim < CHUNK_ROWS * self.threads:
            return 1
        return self.threads

    # --- graphs -------------------------------------------------------------------------------------------------------
    def capture(self, fn: Callable[[], None], stage: str) -> Any:
        """Capture what ``fn`` launches as a graph (nothing runs: replay it with `replay`), with the host guard on.

        Raises `CaptureError` naming ``stage`` when ``fn`` needs the host, and whatever ``fn`` raises otherwise; on
        any error the capture is ended and discarded.
        """
        wp = self._wp
        if capturing(self.device):
            raise CaptureError(f"stage '{stage}': a graph is already being captured on {self.device}")
        wp.capture_begin(device=self.device, force_module_load=False)
        graph = None
        try:
            with host_guard(stage):
                fn()
        finally:
            graph = wp.capture_end(device=self.device)
        return graph

    def replay(self, graph: Any) -> None:
        self._wp.capture_launch(graph)

    def synchronize(self) -> None:
        """Wait for the device (a no-op on the CPU, where launches are synchronous)."""
        if self.device.is_cuda:
            self._wp.synchronize_device(self.device)


__all__ = [
    "CHUNK_ROWS", "CaptureError", "Launcher", "capturing", "cpu_pool", "cpu_workers", "guarded_stage", "host_guard",
    "host_sized", "run_parallel",
]

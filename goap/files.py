"""Writing output files whole or not at all, and refusing an output path before the work that fills it.

One home for the file helpers the engine's commands and the tools share (`goap.domain_file`, `goap.outcomes`,
`goap.pddl.commands`, `goap.bench`, `goap.learn`, `goap.runtime` snapshots, the viewer's screenshots), so that no
engine module has to import a tool to write a file, and no writer can replace a device, a pipe or a link with a
regular file (as root, a rename over ``/dev/full`` replaces the machine's device).
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import tempfile
from pathlib import Path

# ``/dev/stdout``, ``/dev/fd/3``, ``/proc/self/fd/3``: the caller means an open descriptor, whatever it is (a pipe,
# a terminal, a socket, or a file the shell opened for appending), so it is written at its current offset rather
# than opened again by name (which would truncate a redirected file, and fails for a socket).
_STREAMS = {"/dev/stdout": 1, "/dev/stderr": 2}
_FD_PATH = re.compile(r"/(?:dev|proc/self)/fd/(\d+)")


def _descriptor(path: Path) -> int | None:
    """The descriptor number ``path`` names (``/dev/stdout`` is 1), or None for any other path."""
    text = os.path.normpath(os.path.abspath(path))
    if text in _STREAMS:
        return _STREAMS[text]
    m = _FD_PATH.fullmatch(text)
    return int(m.group(1)) if m else None


def output_kind(path: str | Path) -> str:
    """How `write_atomic` would write ``path``: ``"stream"``, ``"device"`` (a character device or a FIFO, written
    in place) or ``"file"`` (a new path or a regular file, a symbolic link's target: replaced by a rename).

    Raises:
        OSError: a folder, a block device or a socket, which no command writes.
    """
    path = Path(path)
    if _descriptor(path) is not None:
        return "stream"
    try:
        mode = os.stat(path).st_mode  # follows symbolic links: the link's target is what gets written
    except (FileNotFoundError, NotADirectoryError):  # a new file (in a folder that may not be there: said later)
        return "file"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "device"
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    raise OSError(errno.EINVAL, "not a regular file, a character device or a pipe", str(path))


def _write_all(fd: int, blob: bytes) -> None:
    """``os.write`` until every byte is out: a short write to a pipe or a device is not a finished write."""
    view = memoryview(blob)
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError(errno.EIO, "the write made no progress")
        view = view[n:]


def write_atomic(path: str | Path, data: bytes | str) -> None:
    """Write a whole file or nothing: into a temporary file beside it, flushed to disk, then renamed over it.

    A reader never sees half a file and a failed write (a full disk) leaves the old file as it was. Only a new path
    or a regular file is replaced: a symbolic link is followed (its resolved target is replaced, the link stays);
    a character device or a named pipe is written in place (``/dev/null``, ``/dev/full`` fails with ENOSPC);
    ``/dev/stdout`` and ``/dev/fd/N`` go to that open descriptor, after what Python buffered for it.

    Raises:
        OSError: the write failed (or ``path`` is a folder, a block device or a socket); nothing was left behind.
    """
    path = Path(path)
    blob = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    kind = output_kind(path)
    if kind == "stream":
        fd = _descriptor(path)
        for stream in (sys.stdout, sys.stderr):
            if stream is not None and not stream.closed and _fileno(stream) == fd:
                stream.flush()
        _write_all(fd, blob)
        return
    if kind == "device":
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
        try:
            _write_all(fd, blob)
        finally:
            os.close(fd)
        return
    target = Path(os.path.realpath(path))
    try:
        mode = target.stat().st_mode & 0o7777  # a rewritten file keeps its permissions
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask  # what open() would have given a new file (mkstemp makes it 0600)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _fileno(stream) -> int | None:
    try:
        return stream.fileno()
    except (OSError, ValueError):
        return None


def write_output(path: str | Path, data: bytes | str) -> None:
    """`write_atomic` for a command's output file: a failure is a ValueError naming ``path``.

    The temporary file's name would otherwise be the one an OSError carries; the commands report a ValueError
    as one line (``goap: error: cannot write out.json: No space left on device``) with exit status 1.
    """
    try:
        write_atomic(path, data)
    except OSError as e:
        raise ValueError(f"cannot write {path}: {e.strerror or e}") from None


def check_writable(path: str | Path) -> None:
    """Refuse an output path before a long run rather than after it: an empty name, a folder, a block device or
    a socket, a folder that is not there or cannot be written."""
    if not str(path):
        raise ValueError("cannot write '': an empty file name")
    try:
        kind = output_kind(path)
    except OSError as e:
        raise ValueError(f"cannot write {path}: {e.strerror or e}") from None
    if kind != "file":
        if kind == "device" and not os.access(path, os.W_OK):
            raise ValueError(f"cannot write {path}: permission denied")
        return
    target = Path(os.path.realpath(path))
    parent = target.parent
    if not parent.is_dir():
        raise ValueError(f"cannot write {path}: no such directory {parent}")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"cannot write {path}: permission denied")

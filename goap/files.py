"""Writing output files whole or not at all, and refusing an output path before the work that fills it.

One home for the file helpers the engine's commands and the tools share (`goap.domain_file`, `goap.outcomes`,
`goap.pddl.commands`, `goap.bench`, `goap.learn`), so that no engine module has to import a tool to write a file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: str | Path, data: bytes | str) -> None:
    """Write a whole file or nothing: into a temporary file beside it, then renamed over it.

    A reader never sees half a file and a failed write (a full disk) leaves the old file as it was. A path that
    is not a regular file (``/dev/stdout``, a named pipe) is written directly, since renaming over it would
    replace the device or the link; a symbolic link to a file is followed, so the link stays.

    Raises:
        OSError: the write failed; nothing was left behind.
    """
    path = Path(path)
    blob = data.encode("utf-8") if isinstance(data, str) else data
    if path.exists() and not path.is_file():
        with open(path, "wb") as f:
            f.write(blob)
        return
    target = path.resolve() if path.is_symlink() else path
    if target.exists():
        mode = target.stat().st_mode & 0o7777  # a rewritten file keeps its permissions
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask  # what open() would have given a new file (mkstemp makes it 0600)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
    """Refuse an output path before a long run rather than after it: a folder, or a folder that is not there."""
    target = Path(path)
    if target.is_dir():
        raise ValueError(f"cannot write {path}: it is a directory")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"cannot write {path}: no such directory {parent}")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"cannot write {path}: permission denied")

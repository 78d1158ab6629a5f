"""argparse value types shared by the `goap` subcommands, and checks of the paths they will write.

A value of the wrong form is a usage error (exit 2, naming the option); an output path that cannot be written is
an input error (exit 1), found before the command does any work, so that nothing is computed only to be lost.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from pathlib import Path

from goap.domain import show

#: Largest seed accepted: a seed must fit a signed 64-bit integer for numpy, torch and Warp alike.
MAX_SEED = 2**63 - 1


def positive_int(text: str) -> int:
    """An integer > 0 (``1_000_000`` allowed)."""
    try:
        value = int(str(text).replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {show(text)}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """An integer >= 0."""
    try:
        value = int(str(text).replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {show(text)}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {show(text)}") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text}")
    return value


def random_seed(text: str) -> int:
    """A random seed: an integer in 0..2**63-1."""
    value = non_negative_int(text)
    if value > MAX_SEED:
        raise argparse.ArgumentTypeError(f"expected an integer in 0..2**63-1, got {show(text)}")
    return value


def finite_float(text: str) -> float:
    """Any finite number (NaN and infinities are refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {show(text)}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text}")
    return value


def fraction(text: str) -> float:
    """A number strictly between 0 and 1."""
    value = finite_float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1 (exclusive), got {text}")
    return value


def check_output_file(path: str | Path, option: str) -> Path:
    """``path`` as a Path when a file can be written there; else ValueError naming ``option`` and the path.

    Called before the work that produces the file. The file itself is not created: a temporary file is made
    and removed in its folder, as the atomic writers (`goap.files.write_atomic`) will do. A path that is
    not a regular file (``/dev/stdout``) must already exist and be writable.
    """
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{option} {path}: is a directory, not a file")
    if p.exists() and not p.is_file():
        if not os.access(p, os.W_OK):
            raise ValueError(f"{option} {path}: cannot write (permission denied)")
        return p
    target = p.resolve() if p.is_symlink() else p
    _probe_folder(target.parent, option, path)
    return p


def check_output_dir(path: str | Path, option: str) -> Path:
    """``path`` as a Path when files can be written in that folder (made later when missing); else ValueError."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ValueError(f"{option} {path}: not a folder")
    folder = p
    while not folder.exists():  # the folders up to the first that exists will be made: that one must be writable
        folder = folder.parent
    if not folder.is_dir():
        raise ValueError(f"{option} {path}: {folder} is not a folder")
    _probe_folder(folder, option, path)
    return p


def _probe_folder(folder: Path, option: str, path: str | Path) -> None:
    if not folder.is_dir():
        why = "is not a folder" if folder.exists() else "does not exist"
        raise ValueError(f"{option} {path}: the folder {folder} {why}")
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".goap-probe-")
    except OSError as e:
        raise ValueError(f"{option} {path}: cannot write in {folder} ({e.strerror or e})") from None
    os.close(fd)
    os.unlink(probe)

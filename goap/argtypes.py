"""argparse value types shared by the `goap` subcommands, and checks of the paths they will write.

A value of the wrong form is a usage error (exit 2, naming the option); an output path that cannot be written is
an input error (exit 1), found before the command does any work, so that nothing is computed only to be lost.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import tempfile
from pathlib import Path

from goap.domain import show
from goap.files import output_kind

#: Largest seed accepted: a seed must fit a signed 64-bit integer for numpy, torch and Warp alike.
MAX_SEED = 2**63 - 1

# ASCII digits only, with ``_`` between digits: Python's int() also reads Arabic-Indic, Devanagari and full-width
# digits and surrounding spaces, so ``--agents ١٢`` would run twelve agents from text a reader cannot check.
_INT = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*", re.ASCII)


def _int(text: str) -> int:
    """``text`` as an integer written in ASCII digits; ValueError otherwise."""
    text = str(text)
    if not _INT.fullmatch(text):
        raise ValueError(text)
    return int(text)


def _float(text: str) -> float:
    """``text`` as a number written in ASCII (``1e-3``, ``inf``); ValueError for other digits or spaces."""
    text = str(text)
    if not text.isascii() or text != text.strip():
        raise ValueError(text)
    return float(text)


def positive_int(text: str) -> int:
    """An integer > 0 (``1_000_000`` allowed)."""
    try:
        value = _int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {show(text)}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """An integer >= 0."""
    try:
        value = _int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {show(text)}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    try:
        value = _float(text)
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
        value = _float(text)
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


def ascii_int(text: str) -> int:
    """Any integer written in ASCII digits (an agent id)."""
    try:
        return _int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {show(text)}") from None


def int_list(text: str) -> list[int]:
    """``"16, 64,256"`` as ``[16, 64, 256]``: ASCII integers separated by commas; ValueError otherwise."""
    return [_int(x.strip()) for x in str(text).split(",") if x.strip()]


def output_path(text: str) -> str:
    """An output file or folder name: not empty (``--json ''`` would otherwise quietly write nothing)."""
    if not text:
        raise argparse.ArgumentTypeError("expected a file name, got ''")
    return text


def check_output_file(path: str | Path, option: str) -> Path:
    """``path`` as a Path when a file can be written there; else ValueError naming ``option`` and the path.

    Called before the work that produces the file. The file itself is not created: a temporary file is made
    and removed in its folder, as the atomic writers (`goap.files.write_atomic`) will do. A character device or a
    pipe must already exist and be writable; ``/dev/stdout`` is taken as it is; a folder, a block device, a socket
    and an empty name are refused.
    """
    if not str(path):
        raise ValueError(f"{option} '': an empty file name")
    p = Path(path)
    try:
        kind = output_kind(p)
    except OSError as e:
        raise ValueError(f"{option} {path}: cannot write there ({e.strerror or e})") from None
    if kind != "file":
        if kind == "device" and not os.access(p, os.W_OK):
            raise ValueError(f"{option} {path}: cannot write (permission denied)")
        return p
    _probe_folder(Path(os.path.realpath(p)).parent, option, path)
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

"""Outputs that are not regular files (issue 19, defect 2), the tracebacks that were left (defect 4), and the CLI's
silently accepted bad data (defect 9).

A device node, a named pipe or a symbolic link given as an output must still be one afterwards: only a regular
file (or a new path) is replaced by a rename. As root a rename over ``/dev/full`` replaces the machine's device,
so these tests never name ``/dev/full`` itself when running as root: they make their own full device with
``mknod`` in a temporary folder (the same major and minor numbers, so it fails with ENOSPC the same way).
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from goap.domain import DomainBuilder
from goap.domain_file import save_domain
from goap.encoding import encode
from goap.files import output_kind, write_atomic, write_output
from goap.outcomes import OutcomeLog

ROOT = Path(__file__).resolve().parent.parent
MICONIC = ROOT / "benchmarks" / "pddl" / "miconic"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def goap(*argv, **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("capture_output", True)
    return subprocess.run([sys.executable, "-m", "goap.cli", *map(str, argv)], text=True, timeout=300, cwd=ROOT,
                          **kwargs)


@pytest.fixture
def full_device(tmp_path) -> Path:
    """A device that refuses every write with ENOSPC, as ``/dev/full`` does."""
    if IS_ROOT:
        path = tmp_path / "full"
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        return path
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    return Path("/dev/full")  # not root: a rename over it fails, so a wrong writer cannot replace it


def is_char_device(path: Path) -> bool:
    return stat.S_ISCHR(os.lstat(path).st_mode)


def one_error_line(err: str, needle: str) -> None:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if not line.startswith("Warp ")]
    assert len(lines) == 1 and lines[0].startswith("goap: error: ") and needle in lines[0], err


class FifoReader:
    """Reads a named pipe in a thread, so that a writer opening it does not block."""

    def __init__(self, path: Path):
        os.mkfifo(path)
        self.data = b""
        self.thread = threading.Thread(target=self._read, args=(path,), daemon=True)
        self.thread.start()

    def _read(self, path: Path) -> None:
        with open(path, "rb") as f:
            self.data = f.read()

    def join(self) -> bytes:
        self.thread.join(timeout=60)
        return self.data


# --- the writer ------------------------------------------------------------------------------------------------
def test_write_atomic_writes_a_fifo_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    reader = FifoReader(fifo)
    blob = bytes(range(256)) * 1000  # more than a pipe holds: every byte must still arrive
    write_atomic(fifo, blob)
    assert reader.join() == blob
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no temporary file left beside it


def test_write_atomic_replaces_a_symlinks_resolved_target(tmp_path):
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "out.json"
    target.write_text("old")
    chain = tmp_path / "second"
    chain.symlink_to(target)
    link = tmp_path / "first"
    link.symlink_to(chain)  # a chain of two links: both stay links, the file at the end is replaced
    write_atomic(link, "new")
    assert link.is_symlink() and chain.is_symlink() and target.read_text() == "new"
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "data" / "made.json")
    write_atomic(dangling, "made")
    assert dangling.is_symlink() and (tmp_path / "data" / "made.json").read_text() == "made"


def test_a_full_device_is_one_error_and_stays_a_device(full_device):
    with pytest.raises(ValueError, match=f"cannot write {full_device}: No space left on device"):
        write_output(full_device, b"x" * 100)
    assert is_char_device(full_device)


def test_folders_and_sockets_are_refused(tmp_path):
    with pytest.raises(IsADirectoryError):
        write_atomic(tmp_path, "x")
    sock_path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(sock_path))
        with pytest.raises(OSError, match="not a regular file"):
            write_atomic(sock_path, "x")
    assert stat.S_ISSOCK(os.lstat(sock_path).st_mode)
    assert output_kind("/dev/stdout") == "stream" and output_kind("/dev/fd/1") == "stream"
    assert output_kind(tmp_path / "new.json") == "file"


# --- every output of the command line --------------------------------------------------------------------------
def test_solve_plan_file_on_a_device_and_a_fifo(tmp_path, full_device):
    r = goap("solve", MICONIC / "domain.pddl", MICONIC / "task01.pddl", "--plan-file", full_device)
    assert r.returncode == 1
    one_error_line(r.stderr, f"cannot write {full_device}: No space left on device")
    assert is_char_device(full_device)
    reader = FifoReader(tmp_path / "plan")
    r = goap("solve", MICONIC / "domain.pddl", MICONIC / "task01.pddl", "--plan-file", tmp_path / "plan")
    assert r.returncode == 0, r.stderr
    assert reader.join().decode().endswith("; cost = 4\n")
    assert stat.S_ISFIFO(os.lstat(tmp_path / "plan").st_mode)


@pytest.mark.parametrize("option", ["--json", "--csv", "--plot"])
def test_bench_outputs_on_a_full_device(full_device, option):
    if option == "--plot":
        pytest.importorskip("matplotlib")
    r = goap("bench", "--suite", "random", "--facts", "16", "--problems", "2", "--planners", "reference",
             "--quiet", option, full_device)
    assert r.returncode == 1, r.stderr
    one_error_line(r.stderr, f"cannot write {full_device}: No space left on device")
    assert is_char_device(full_device)


def test_run_json_to_dev_stdout_redirected_to_a_file(tmp_path):
    """``--json /dev/stdout > out.txt`` appends the JSON after the summary: the shell's file is not replaced."""
    out = tmp_path / "out.txt"
    with open(out, "w") as f:
        r = goap("run", "--world", "soldier", "--agents", "8", "--ticks", "2", "--json", "/dev/stdout",
                 stdout=f, stderr=subprocess.PIPE, capture_output=False)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert text.startswith("soldier: 8 agents, 2 ticks")  # the summary printed before the JSON is still there
    doc = json.loads(text[text.index("\n{") + 1:])
    assert doc["agents"] == 8


def test_run_json_to_dev_stdout_in_a_pipe():
    r = goap("run", "--world", "soldier", "--agents", "8", "--ticks", "2", "--quiet", "--json", "/dev/stdout")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout[r.stdout.index("{"):])["agents"] == 8


def test_run_json_and_outcome_log_on_a_full_device(full_device):
    for option in ("--json", "--log-outcomes"):
        r = goap("run", "--world", "soldier", "--agents", "8", "--ticks", "2", "--quiet", option, full_device)
        assert r.returncode == 1, (option, r.stderr)
        assert "Traceback" not in r.stderr and "No space left on device" in r.stderr
        assert is_char_device(full_device)


def test_snapshot_keeps_a_fifo_and_a_symlink(tmp_path):
    from goap.runtime import Brain

    domain = DomainBuilder("tiny").bool("a").action("set_a", effects={"a": True}).goal("g", want={"a": True}).build()
    brain = Brain(domain, 4, planner="reference", device="cpu")
    brain.tick()
    reader = FifoReader(tmp_path / "pipe")
    brain.snapshot(tmp_path / "pipe")
    blob = reader.join()
    assert stat.S_ISFIFO(os.lstat(tmp_path / "pipe").st_mode) and blob[:2] == b"PK"
    real = tmp_path / "real.npz"
    brain.snapshot(real)
    link = tmp_path / "link.npz"
    link.symlink_to(real)
    brain.tick()
    brain.snapshot(link)
    assert link.is_symlink()
    other = Brain(domain, 4, planner="reference", device="cpu")
    other.restore(real)  # the link's target holds the second snapshot
    assert other.tick_count == brain.tick_count
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.npz", "pipe", "real.npz"]


# --- defect 4: the remaining tracebacks ------------------------------------------------------------------------
def test_planners_with_stdout_closed():
    r = subprocess.run(f"{sys.executable} -m goap.cli planners >&-", shell=True, capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    assert r.returncode == 1
    one_error_line(r.stderr, "cannot write to standard output")


@pytest.mark.parametrize("argv", [["--help"], ["solve", "--help"], ["bench", "--help"]])
def test_help_on_a_full_device_is_an_error(full_device, argv):
    with open(full_device, "w") as full:
        r = subprocess.run([sys.executable, "-m", "goap.cli", *argv], stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 1
    one_error_line(r.stderr, "cannot write to standard output: No space left on device")


def test_view_screenshot_on_a_full_device(full_device):
    pytest.importorskip("pygame")
    r = goap("view", "--world", "soldier", "--agents", "8", "--headless", "--frames", "1", "--size", "320x240",
             "--screenshot", full_device)
    assert r.returncode == 1, r.stderr
    one_error_line(r.stderr, f"cannot write {full_device}: No space left on device")
    assert is_char_device(full_device)


@pytest.mark.parametrize("size", ["100000x100000", "7681x240", "320x4321", "١٢٨٠x800"])
def test_view_size_is_bounded(size):
    r = goap("view", "--world", "soldier", "--headless", "--size", size)
    assert r.returncode == 2 and "--size" in r.stderr and "Traceback" not in r.stderr


# --- train: damaged and bad logs (defects 4 and 9) -------------------------------------------------------------
def tiny_domain():
    return (
        DomainBuilder("tiny")
        .bool("a").int("n", 0, 5)
        .action("set_a", effects={"a": True}).action("inc", pre={"n": "< 5"}, effects={"n": "+= 1"})
        .goal("g0", want={"a": True}, priority=2).goal("g1", want={"n": ">= 3"})
        .build()
    )


def tiny_columns(domain, rows: int = 100) -> dict:
    rng = np.random.default_rng(1)
    values = np.stack([rng.integers(0, 2, rows), rng.integers(0, 6, rows)], axis=1)
    found = values[:, 0] == 1
    return dict(states=encode(domain).pack_states(values), goal=rng.integers(0, 2, rows),
                status=np.where(found, 0, 2), cost=np.where(found, 1.0 + values[:, 1], np.nan),
                achieved=found.astype(np.int8), ticks_to_goal=np.where(found, 3, -1), reward=1.0)


@pytest.fixture
def train_dir(tmp_path):
    pytest.importorskip("torch")
    save_domain(tiny_domain(), tmp_path / "tiny.toml")
    return tmp_path


def train(files: Path, log: Path) -> subprocess.CompletedProcess:
    return goap("train", "--data", log, "--domain", files / "tiny.toml", "--epochs", "1", "--hidden", "4",
                "--quiet", "--out", files / "m.pt")


def test_train_learns_from_a_good_log(train_dir):
    domain = tiny_domain()
    OutcomeLog.from_columns(domain, **tiny_columns(domain)).save(train_dir / "log.npz")
    r = train(train_dir, train_dir / "log.npz")
    assert r.returncode == 0, r.stderr
    assert (train_dir / "m.pt").is_file()


def test_an_outcome_log_with_flipped_bytes_is_one_error(tmp_path):
    domain = tiny_domain()
    OutcomeLog.from_columns(domain, **tiny_columns(domain, rows=400)).save(tmp_path / "log.npz")
    blob = (tmp_path / "log.npz").read_bytes()
    refused = 0
    for at in range(0, len(blob), 7):  # every 7th byte, headers and compressed data alike
        damaged = bytearray(blob)
        damaged[at] ^= 0xFF
        (tmp_path / "bad.npz").write_bytes(bytes(damaged))
        try:
            OutcomeLog.load(tmp_path / "bad.npz")
        except ValueError as e:
            assert "\n" not in str(e) and str(e).startswith(f"{tmp_path / 'bad.npz'}: ")
            refused += 1
    assert refused > len(blob) // 14  # most damage is seen (by the zip's CRC, zlib or the checks)


def test_train_on_a_flipped_byte_is_one_error(train_dir):
    domain = tiny_domain()
    OutcomeLog.from_columns(domain, **tiny_columns(domain)).save(train_dir / "log.npz")
    blob = bytearray((train_dir / "log.npz").read_bytes())
    start = blob.index(b"states.npy") + len("states.npy")  # inside the first column's deflate stream
    blob[start + 40] ^= 0xFF
    (train_dir / "bad.npz").write_bytes(bytes(blob))
    r = train(train_dir, train_dir / "bad.npz")
    assert r.returncode == 1
    one_error_line(r.stderr, "not a readable outcome log")
    assert not (train_dir / "m.pt").exists()


def _bad_state(domain, cols):
    states = cols["states"].copy()
    states[7, 0] = np.uint64(1) << np.uint64(40)  # a bit outside every fact
    return {**cols, "states": states}


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (lambda d, c: {**c, "cost": np.where(c["status"] == 0, np.nan, c["cost"])}, "holds cost nan"),
        (lambda d, c: {**c, "cost": np.where(c["status"] == 0, -1.0, c["cost"])}, "holds cost -1"),
        (lambda d, c: {**c, "reward": np.nan}, "holds reward nan"),
        (lambda d, c: {**c, "goal": np.full(len(c["goal"]), 2**31 - 1)}, "holds goal 2147483647"),
        (lambda d, c: {**c, "status": np.full(len(c["goal"]), 127)}, "holds status 127"),
        (lambda d, c: {**c, "achieved": np.full(len(c["goal"]), 5)}, "holds achieved 5"),
        (_bad_state, "row 7 holds an invalid packed state"),
    ],
)
def test_train_refuses_values_no_brain_logs(train_dir, change, needle):
    domain = tiny_domain()
    OutcomeLog.from_columns(domain, **change(domain, tiny_columns(domain))).save(train_dir / "log.npz")
    r = train(train_dir, train_dir / "log.npz")
    assert r.returncode == 1
    one_error_line(r.stderr, needle)
    assert r.stdout == "" and not (train_dir / "m.pt").exists()


def test_a_model_file_holding_a_pickle_is_one_line(tmp_path):
    torch = pytest.importorskip("torch")

    class Payload:
        def __reduce__(self):
            return (os.getcwd, ())

    torch.save({"format": Payload()}, tmp_path / "evil.pt")
    r = goap("run", "--world", "soldier", "--agents", "8", "--ticks", "1", "--selector", "utility",
             "--model", tmp_path / "evil.pt")
    assert r.returncode == 1
    one_error_line(r.stderr, "a pickle that could run code")


# --- defect 9: option values ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--world", "soldier", "--agents", "١٢"],
        ["run", "--world", "soldier", "--agents", "１２"],  # full-width digits
        ["run", "--world", "soldier", "--agents", " 12"],
        ["run", "--world", "soldier", "--seed", "٣"],
        ["bench", "--suite", "random", "--seed", "٣"],
        ["bench", "--suite", "random", "--time-limit", "١"],
        ["sweep", "--agents", "١٠"],
        ["run", "--world", "soldier", "--json", ""],
        ["run", "--world", "soldier", "--log-outcomes", ""],
        ["bench", "--suite", "random", "--csv", ""],
        ["solve", MICONIC / "domain.pddl", MICONIC / "task01.pddl", "--plan-file", ""],
        ["train", "--data", "log.npz", "--out", ""],
    ],
)
def test_option_values_of_the_wrong_form_are_usage_errors(argv):
    r = goap(*argv)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert r.stderr.splitlines()[-1].startswith("goap: error: argument ")


@pytest.mark.parametrize("command", ["bench", "train"])
def test_comma_separated_numbers_are_ascii_too(command, tmp_path):
    if command == "train":
        pytest.importorskip("torch")
        (tmp_path / "log.npz").write_bytes(b"")
        argv = ["train", "--data", tmp_path / "log.npz", "--out", tmp_path / "m.pt", "--hidden", "٨"]
    else:
        argv = ["bench", "--suite", "random", "--facts", "١٦", "--planners", "reference", "--quiet"]
    r = goap(*argv)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    one_error_line(r.stderr, "comma-separated integers")


def test_ascii_integers_with_underscores_still_work():
    from goap.argtypes import positive_int

    assert positive_int("1_000") == 1000 and positive_int("+7") == 7
    for text in ("1__0", "_1", "1_", "١٢", "12 ", "0x10"):
        with pytest.raises(Exception, match="expected a positive integer"):
            positive_int(text)


# --- defect 11: the trust model is written down ----------------------------------------------------------------
def test_readme_says_a_world_spec_runs_code():
    text = (ROOT / "docs" / "worlds.md").read_text()
    start = text.index("Trust model")
    paragraph = text[start:start + 1500]
    assert "module:callable" in paragraph and "imported" in paragraph and "runs code" in paragraph


@pytest.mark.parametrize("option", ["--domains", "--tasks"])
def test_bench_names_cannot_leave_the_tasks_folder(option):
    r = goap("bench", "--suite", "pddl", option, "../../etc", "--quiet")
    assert r.returncode == 1 and "Traceback" not in r.stderr

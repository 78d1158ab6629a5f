"""The `goap` command under bad options and bad outputs: exit codes, and errors found before any work is done.

"Before" is checked by what is missing: a run that was refused printed no summary, a training that was refused
printed no report and wrote no model.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from goap.cli import EXIT_CODES, build_parser
from goap.domain import DomainBuilder
from goap.domain_file import save_domain, write_atomic
from goap.encoding import encode
from goap.outcomes import OutcomeLog
from tests.conftest import run_cli

INPUTS = Path(__file__).resolve().parent / "inputs"
BASE = INPUTS / "base.toml"
ROOT = Path(__file__).resolve().parent.parent
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


run = run_cli  # the goap command in-process


def goap(*argv, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "goap.cli", *map(str, argv)], capture_output=True, text=True,
                          timeout=300, **kwargs)


# --- exit codes ------------------------------------------------------------------------------------------------
def test_help_documents_the_exit_codes_and_the_readme_agrees():
    text = build_parser().format_help()
    for code, meaning in (("0", "success"), ("1", "bad input"), ("2", "usage"), ("130", "interrupted")):
        assert any(line.split()[:1] == [code] and meaning in line for line in text.splitlines()), (code, text)
    readme = (ROOT / "docs" / "cli.md").read_text()
    for code, meaning in (("0", "success"), ("1", "bad input"), ("2", "usage")):
        assert f"| {code} | {meaning}" in readme
    assert EXIT_CODES in text


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["validate", BASE], 0),
        (["validate", BASE, "--strict"], 1),  # a warning (fact 'n' unused) fails the check
        (["validate", INPUTS / "type_list.toml"], 1),
        (["validate", BASE, "--no-such-option"], 2),
        (["solve", BASE, "--problems", INPUTS / "problems_nan_id.jsonl"], 1),
        (["solve", BASE, "--problems", INPUTS / "problems_nan_id.jsonl", "--max-nodes", "many"], 2),
        (["describe", BASE, "--max-nodes", "99999999999999999999"], 1),
        (["run", "--world", "soldier", "--seed", "-7"], 2),
        (["frobnicate"], 2),
    ],
)
def test_exit_codes_are_kept(capsys, argv, code):
    got, _, err = run(capsys, *argv)
    assert got == code, err
    assert "Traceback" not in err


def test_exit_codes_from_the_installed_command():
    assert goap("validate", BASE).returncode == 0
    r = goap("validate", INPUTS / "type_list.toml")
    assert r.returncode == 1 and r.stderr.startswith("goap: error: ")
    r = goap("train", "--data", "x.npz")
    assert r.returncode == 2 and "--out" in r.stderr


# --- messages (item 16) ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [["run", "--world", "soldier"], ["train", "--data", "d.npz", "--out", "m.pt"],
                                     ["view", "--world", "soldier"]])
def test_a_negative_seed_names_the_option(capsys, command):
    code, out, err = run(capsys, *command, "--seed", "-7")
    assert code == 2 and out == ""
    assert "argument --seed: expected an integer >= 0, got -7" in err


def test_seed_above_int64_is_refused(capsys):
    code, _, err = run(capsys, "run", "--world", "soldier", "--seed", str(2**63))
    assert code == 2 and "argument --seed: expected an integer in 0..2**63-1" in err


def test_describe_refuses_a_budget_solve_refuses(capsys):
    huge = "99999999999999999999"
    _, _, solve_err = run(capsys, "solve", BASE, "--problems", INPUTS / "problems_ok.jsonl", "--max-nodes", huge)
    code, out, err = run(capsys, "describe", BASE, "--max-nodes", huge)
    assert code == 1 and out == ""  # no 22-digit byte count
    assert err == solve_err and "max_nodes must be an integer in 2..2**28" in err


# --- standard output that cannot be written (item 9) -----------------------------------------------------------
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", [["solve", BASE, "--problems", "-"], ["validate", BASE], ["describe", BASE]])
def test_stdout_on_a_full_disk_is_an_error(command):
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "goap.cli", *map(str, command)], stdout=full, stderr=subprocess.PIPE,
                           input=b'{"id": 1, "goal": "g"}\n', timeout=300)
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert err == "goap: error: cannot write to standard output: No space left on device\n"


def test_a_closed_pipe_stops_quietly(tmp_path):
    problems = tmp_path / "p.jsonl"
    problems.write_text('{"goal": "g"}\n' * 20000)
    p = subprocess.Popen([sys.executable, "-m", "goap.cli", "solve", str(BASE), "--problems", str(problems)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.close()  # the reader goes away, as `| head -1` does
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 0 and err == ""


# --- run: outputs checked before the first tick (item 10) --------------------------------------------------------
def other_domain_log(path: Path) -> None:
    d = DomainBuilder("elsewhere").bool("a").action("x", effects={"a": True}).build()
    OutcomeLog.from_columns(d, states=np.zeros((3, 1), np.uint64), goal=np.zeros(3, int)).save(path)


@pytest.mark.parametrize(
    ("option", "target", "needle"),
    [
        ("--json", "DIR", "is a directory"),
        ("--json", "DIR/missing/run.json", "does not exist"),
        ("--json", "FILE/run.json", "is not a folder"),
        ("--log-outcomes", "DIR", "is a directory"),
        ("--log-outcomes", "OTHER", "holds outcomes of domain 'elsewhere'"),
        ("--log-outcomes", "JUNK", "not a readable outcome log"),
    ],
)
def test_run_refuses_outputs_before_the_simulation(capsys, tmp_path, option, target, needle):
    (tmp_path / "file").write_text("x")
    other_domain_log(tmp_path / "other.npz")
    (tmp_path / "junk.npz").write_bytes(b"not an npz")
    path = {"DIR": str(tmp_path), "OTHER": str(tmp_path / "other.npz"), "JUNK": str(tmp_path / "junk.npz")}.get(
        target, target.replace("DIR", str(tmp_path)).replace("FILE", str(tmp_path / "file"))
    )
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    code, out, err = run(capsys, "run", "--world", "soldier", "--agents", "20", "--ticks", "3", "--quiet",
                         "--device", "cpu", option, path)
    assert code == 1 and out == "", err  # no summary: not a single tick was run
    assert err.startswith("goap: error: ") and needle in err and path in err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before  # nothing changed


@pytest.mark.skipif(IS_ROOT, reason="root writes into read-only folders")
def test_run_refuses_a_read_only_folder(capsys, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        code, out, err = run(capsys, "run", "--world", "soldier", "--ticks", "2", "--json", ro / "r.json")
    finally:
        ro.chmod(0o700)
    assert code == 1 and out == "" and "cannot write in" in err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc, a folder even root cannot write in")
@pytest.mark.parametrize(
    ("argv", "option", "target"),
    [
        (["run", "--world", "soldier", "--ticks", "2", "--quiet"], "--json", "/proc/run.json"),
        (["run", "--world", "soldier", "--ticks", "2", "--quiet"], "--log-outcomes", "/proc/log.npz"),
        (["view", "--world", "soldier", "--headless", "--frames", "1"], "--record", "/proc/frames"),
        (["view", "--world", "soldier", "--headless", "--frames", "1"], "--screenshot", "/proc/shot.png"),
    ],
)
def test_an_unwritable_folder_is_refused_up_front(capsys, argv, option, target):
    code, out, err = run(capsys, *argv, option, target)
    assert code == 1 and out == "", err
    assert err.startswith(f"goap: error: {option} {target}: cannot write in /proc")


def test_check_appendable_accepts_a_log_of_the_same_domain(tmp_path):
    d = DomainBuilder("here").bool("a").action("x", effects={"a": True}).build()
    log = OutcomeLog.from_columns(d, states=np.zeros((2, 1), np.uint64), goal=np.zeros(2, int))
    OutcomeLog.check_appendable(tmp_path / "new.npz", d)  # nothing there yet: fine
    log.save(tmp_path / "log.npz")
    OutcomeLog.check_appendable(tmp_path / "log.npz", d)
    other_domain_log(tmp_path / "other.npz")
    with pytest.raises(ValueError, match="holds outcomes of domain 'elsewhere'.*not of domain 'here'"):
        OutcomeLog.check_appendable(tmp_path / "other.npz", d)


# --- damaged outcome logs (item 9) -------------------------------------------------------------------------------
def log_arrays(rows: int = 4, words: int = 1) -> dict[str, np.ndarray]:
    d = DomainBuilder("here").bool("a").action("x", effects={"a": True}).build()
    log = OutcomeLog.from_columns(d, states=np.zeros((rows, words), np.uint64), goal=np.zeros(rows, int))
    return {"fingerprint": np.array(log.fingerprint), "domain_name": np.array(log.domain_name), **log.columns}


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"states": np.zeros(4, np.uint64)}, "column 'states' must be uint64 [rows, words], got uint64 [4]"),
        ({"states": np.zeros((4, 0), np.uint64)}, "column 'states' must be uint64 [rows, words]"),
        ({"states": np.zeros((4, 1), np.float64)}, "column 'states' must be uint64"),
        ({"goal": np.zeros(3, np.int32)}, "column 'goal' must have one value per row, 4"),
        ({"goal": np.zeros((4, 2), np.int32)}, "column 'goal' must have one value per row"),
        ({"goal": np.array(["a", "b", "c", "d"])}, "column 'goal' holds <U1"),
        ({"tick": np.full(4, 0.5)}, "column 'tick' holds float64"),
        ({"status": np.full(4, 1000, np.int64)}, "column 'status' holds values outside int8"),
        ({"fingerprint": np.zeros(2)}, "'fingerprint' is not a string"),
    ],
)
def test_a_damaged_outcome_log_names_the_file_and_the_column(tmp_path, change, needle):
    path = tmp_path / "bad.npz"
    np.savez(path, **{**log_arrays(), **change})
    with pytest.raises(ValueError) as exc:
        OutcomeLog.load(path)
    assert str(exc.value).startswith(f"{path}: damaged outcome log") and needle in str(exc.value)


def test_outcome_log_that_is_not_an_npz(tmp_path):
    np.save(tmp_path / "plain.npy", np.zeros(3))
    for path, needle in ((tmp_path / "plain.npy", "not a readable outcome log"),
                         (tmp_path, "is a directory"), (tmp_path / "none.npz", "no such file")):
        with pytest.raises(ValueError, match=needle):
            OutcomeLog.load(path)


# --- train (items 9 and 11) --------------------------------------------------------------------------------------
torch = pytest.importorskip("torch")
from goap.learn.model import MAX_PARAMETERS, UtilityModel  # noqa: E402
from goap.learn.train import resolve_device, train  # noqa: E402
from goap.learn.train import run as train_run  # noqa: E402


def tiny_domain():
    return (
        DomainBuilder("tiny")
        .bool("a").int("n", 0, 7)
        .action("set_a", effects={"a": True}).action("inc", pre={"n": "< 7"}, effects={"n": "+= 1"})
        .goal("g0", want={"a": True}, priority=2).goal("g1", want={"n": ">= 3"})
        .build()
    )


def tiny_log(domain, rows: int = 200) -> OutcomeLog:
    rng = np.random.default_rng(0)
    values = np.stack([rng.integers(0, 2, rows), rng.integers(0, 8, rows)], axis=1)
    found = values[:, 0] == 1
    return OutcomeLog.from_columns(
        domain, states=encode(domain).pack_states(values), goal=rng.integers(0, 2, rows),
        status=np.where(found, 0, 2), cost=np.where(found, 1.0 + values[:, 1], np.nan),
        achieved=found.astype(np.int8), ticks_to_goal=np.where(found, 3, -1), reward=1.0,
    )


@pytest.fixture
def train_files(tmp_path):
    domain = tiny_domain()
    save_domain(domain, tmp_path / "tiny.toml")
    tiny_log(domain).save(tmp_path / "log.npz")
    return tmp_path


def train_argv(files: Path, *extra) -> list:
    return ["train", "--data", files / "log.npz", "--domain", files / "tiny.toml", "--epochs", "1",
            "--hidden", "8", "--quiet", *extra]


@pytest.mark.parametrize(
    ("device", "needle"),
    [("cuda", "--device cuda: CUDA is not available"), ("bogus", "--device bogus: not a torch device"),
     ("cuda:99", "--device cuda:99")],
)
def test_train_refuses_a_device_it_cannot_use(capsys, train_files, device, needle):
    if device.startswith("cuda") and torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    code, out, err = run(capsys, *train_argv(train_files, "--out", train_files / "m.pt", "--device", device))
    assert code == 1 and out == "" and needle in err and "Traceback" not in err
    assert not (train_files / "m.pt").exists()


@pytest.mark.parametrize(
    ("target", "needle"),
    [("", "is a directory"), ("missing/m.pt", "does not exist"), ("tiny.toml/m.pt", "is not a folder")],
)
def test_train_checks_out_before_training(capsys, train_files, target, needle):
    out_path = train_files / target if target else train_files
    code, out, err = run(capsys, *train_argv(train_files, "--out", out_path))
    assert code == 1, err
    assert out == ""  # no report: training never started
    assert err.startswith(f"goap: error: --out {out_path}: ") and needle in err


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [("--lr", "inf", "expected a finite number > 0"), ("--lr", "nan", "expected a finite number > 0"),
     ("--lr", "0", "expected a finite number > 0"), ("--held-out", "nan", "expected a finite number"),
     ("--held-out", "1", "expected a number between 0 and 1"), ("--epochs", "0", "expected a positive integer"),
     ("--batch-size", "-1", "expected a positive integer")],
)
def test_train_refuses_non_finite_and_out_of_range_options(capsys, train_files, option, value, needle):
    code, out, err = run(capsys, *train_argv(train_files, "--out", train_files / "m.pt", option, value))
    assert code == 2 and out == "" and f"argument {option}: {needle}" in err


@pytest.mark.parametrize("hidden", ["0", "5000", ",".join(["8"] * 17), "8,x"])
def test_train_refuses_bad_hidden_sizes_before_allocating(capsys, train_files, hidden):
    code, out, err = run(capsys, *train_argv(train_files, "--out", train_files / "m.pt")[:-3], "--hidden", hidden,
                         "--quiet", "--out", train_files / "m.pt")
    assert code == 1 and out == "" and "--hidden" in err


def test_train_api_refuses_non_finite_learning_rates():
    domain = tiny_domain()
    for lr in (float("inf"), float("nan"), -1.0, 0.0):
        with pytest.raises(ValueError, match="lr must be a finite number > 0"):
            train(tiny_log(domain), domain=domain, lr=lr)


def test_a_diverging_training_stops_and_writes_nothing(capsys, train_files):
    with pytest.raises(ValueError, match="training diverged: the loss is nan at epoch 1"):
        train(tiny_log(tiny_domain()), domain=tiny_domain(), lr=1e20, epochs=5, hidden=(8,), batch_size=16)
    with pytest.raises(ValueError, match="training diverged at epoch 1, minibatch 1 .*overflow"):
        train(tiny_log(tiny_domain()), domain=tiny_domain(), lr=1e300, epochs=5, hidden=(8,), batch_size=16)
    code, out, err = run(capsys, *train_argv(train_files, "--out", train_files / "m.pt", "--lr", "1e20",
                                             "--epochs", "5", "--batch-size", "16"))
    assert code == 1 and ("training diverged" in err or "not finite" in err), err
    assert not (train_files / "m.pt").exists() and "model written" not in out


def model_dict(**change):
    m = UtilityModel.for_domain(tiny_domain(), hidden=(4,))
    return {**m.to_dict(), **change}


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"summary": 5}, "'summary' must be a dict or null, got 5"),
        ({"hidden": 64}, "'hidden' must be a list or tuple"),
        ({"hidden": [10**9]}, "hidden sizes must be"),
        ({"hidden": [4096] * 16}, "parameters is too large"),
        ({"stats": {"cost_mean": float("nan")}}, "stats: expected finite numbers"),
        ({"n_state": "3"}, "'n_state' must be a int"),
        ({"feature_names": [1, 2]}, "'feature_names' must be strings"),
        ({"state_dict": {"first.weight": [1.0]}}, "'state_dict' must hold tensors only"),
        ({"domain_name": None}, "'domain_name' must be a str"),
    ],
)
def test_a_model_file_with_wrong_fields_is_refused(tmp_path, change, needle):
    path = tmp_path / "m.pt"
    torch.save(model_dict(**change), path)
    with pytest.raises(ValueError) as exc:
        UtilityModel.load(path, tiny_domain())
    assert str(exc.value).startswith(f"{path}: ") and needle in str(exc.value)
    assert MAX_PARAMETERS < 4096 * 4096 * 15


def test_a_model_with_non_finite_weights_is_refused(capsys, tmp_path):
    d = model_dict()
    d["state_dict"]["head.bias"] = torch.tensor([0.0, float("nan"), 0.0])
    torch.save(d, tmp_path / "nan.pt")
    with pytest.raises(ValueError, match="weight 'head.bias' is not finite"):
        UtilityModel.load(tmp_path / "nan.pt", tiny_domain())
    m = UtilityModel.for_domain(tiny_domain(), hidden=(4,))
    with torch.no_grad():
        m.first.weight[0, 0] = float("inf")
    with pytest.raises(ValueError, match="weight 'first.weight' is not finite"):
        m.save(tmp_path / "inf.pt")
    assert not (tmp_path / "inf.pt").exists()


def test_goap_run_refuses_a_nan_model(capsys, tmp_path):
    from worlds import make_world

    domain = make_world("soldier").domain
    m = UtilityModel.for_domain(domain, hidden=(4,))
    d = m.to_dict()
    d["state_dict"]["first.weight"] = torch.full_like(d["state_dict"]["first.weight"], float("nan"))
    torch.save(d, tmp_path / "nan.pt")
    code, out, err = run(capsys, "run", "--world", "soldier", "--ticks", "2", "--selector", "utility",
                         "--model", tmp_path / "nan.pt")
    assert code == 1 and out == "" and "is not finite" in err


def test_resolve_device():
    assert resolve_device("cpu").type == "cpu"
    with pytest.raises(ValueError, match="not a torch device"):
        resolve_device("tpu:zero")


def test_train_run_namespace_checks_out_first(tmp_path):
    # The Python entry point (`goap.learn.train.run`) checks --out before loading the log.
    args = argparse.Namespace(data=str(BASE), out=str(tmp_path), epochs=1, seed=0, domain=None, hidden="8",
                              batch_size=8, lr=1e-3, held_out=0.2, device="cpu", quiet=True)
    with pytest.raises(ValueError, match="is a directory"):
        train_run(args)


# --- view (item 9) ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("option", "target", "needle"),
    [("--screenshot", "DIR", "is a directory"), ("--screenshot", "DIR/missing/shot.png", "does not exist"),
     ("--record", "FILE/frames", "is not a folder"), ("--record", "FILE", "not a folder")],
)
def test_view_checks_its_outputs_before_opening(capsys, tmp_path, option, target, needle):
    pytest.importorskip("pygame")
    capsys.readouterr()  # pygame's banner on first import
    (tmp_path / "file").write_text("x")
    path = target.replace("DIR", str(tmp_path)).replace("FILE", str(tmp_path / "file"))
    code, out, err = run(capsys, "view", "--world", "soldier", "--agents", "10", "--headless", "--frames", "1",
                         option, path)
    assert code == 1 and out == "" and needle in err and path in err


# --- write_atomic ------------------------------------------------------------------------------------------------
def test_write_atomic_replaces_whole_files_and_writes_devices_directly(tmp_path):
    target = tmp_path / "out.json"
    write_atomic(target, "one")
    write_atomic(target, b"two")
    assert target.read_text() == "two" and [p.name for p in tmp_path.iterdir()] == ["out.json"]
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_atomic(link, "three")
    assert link.is_symlink() and target.read_text() == "three"
    assert target.stat().st_mode & 0o777 == 0o666 & ~_umask()  # as open() makes a file, not mkstemp's 0600
    target.chmod(0o640)
    write_atomic(target, "four")
    assert target.stat().st_mode & 0o777 == 0o640  # a rewritten file keeps its permissions
    write_atomic("/dev/null", "gone")  # a device is written, never renamed over
    assert Path("/dev/null").exists() and not Path("/dev/null").is_file()


def test_an_outcome_log_claiming_gigabytes_is_refused_before_inflating(tmp_path, monkeypatch):
    import goap.outcomes as outcomes

    arrays = log_arrays(rows=1000, words=2)
    np.savez_compressed(tmp_path / "log.npz", **arrays)
    total = sum(a.nbytes for a in arrays.values())
    monkeypatch.setattr(outcomes, "MAX_LOG_BYTES", total - 1)
    with pytest.raises(ValueError, match=f"too large: its columns hold {total:,} bytes"):
        OutcomeLog.load(tmp_path / "log.npz")
    monkeypatch.setattr(outcomes, "MAX_LOG_BYTES", total)
    assert len(OutcomeLog.load(tmp_path / "log.npz")) == 1000


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask

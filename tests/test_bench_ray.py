"""``goap bench --ray`` and ``goap sweep --ray`` on a local Ray cluster of two worker processes: the same rows as
a local run (statuses, costs, plans), in the same order."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason='Ray is not installed (pip install -e ".[scale]")')

from goap.bench.cli import build_parser, run  # noqa: E402
from tests.conftest import PDDL_DIR  # noqa: E402

TASKS = ["--suite", "pddl", "--tasks-dir", str(PDDL_DIR), "--domains", "gripper,blocks,miconic", "--tasks",
         "task01,task02", "--planners", "reference,warp", "--device", "cpu", "--quiet"]


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


def _bench(path, *extra):
    assert run(build_parser().parse_args([*TASKS, "--json", str(path), *extra])) == 0
    return json.loads(path.read_text())


def test_ray_gives_the_local_rows(tmp_path, cluster):
    local = _bench(tmp_path / "local.json")
    remote = _bench(tmp_path / "ray.json", "--ray")
    key = ("problem", "planner", "status", "cost", "length", "valid", "plan", "expanded")
    assert [tuple(r[k] for k in key) for r in remote["results"]] == [tuple(r[k] for k in key) for r in local["results"]]
    assert len(local["results"]) == 12 and all(r["valid"] for r in local["results"])
    assert remote["meta"]["ray"]["cpus"] == 2 and local["meta"]["ray"] is None
    strip = ("median_s", "p95_s", "search_s", "agile_score")
    assert [{k: v for k, v in s.items() if k not in strip} for s in remote["summary"]] == \
        [{k: v for k, v in s.items() if k not in strip} for s in local["summary"]]


def test_sweep_on_ray(tmp_path, cluster):
    from goap.bench.sweep import build_parser as sweep_parser
    from goap.bench.sweep import run as sweep_run

    argv = ["--world", "soldier", "--agents", "8,16", "--plan-budget", "8", "--seeds", "0,1", "--ticks", "3",
            "--device", "cpu", "--quiet"]
    assert sweep_run(sweep_parser().parse_args([*argv, "--json", str(tmp_path / "l.json")])) == 0
    assert sweep_run(sweep_parser().parse_args([*argv, "--ray", "--json", str(tmp_path / "r.json")])) == 0
    local = json.loads((tmp_path / "l.json").read_text())["results"]
    remote = json.loads((tmp_path / "r.json").read_text())["results"]
    cells = [(r["world"], r["agents"], r["plan_budget"], r["seed"]) for r in local]
    assert cells == [("soldier", a, 8, s) for a in (8, 16) for s in (0, 1)]
    assert [(r["world"], r["agents"], r["seed"], r["state_hash"]) for r in remote] == \
        [(r["world"], r["agents"], r["seed"], r["state_hash"]) for r in local]


def test_sweep_on_ray_gathers_the_workers_outcome_logs(tmp_path, cluster):
    """``--log-outcomes DIR`` with ``--ray``: the workers send their logs back, the driver writes them; the same
    rows as a local sweep logs."""
    from goap.bench.sweep import build_parser as sweep_parser
    from goap.bench.sweep import run as sweep_run
    from goap.outcomes import OutcomeLog

    argv = ["--world", "soldier", "--agents", "8,16", "--plan-budget", "8", "--seeds", "0,1", "--ticks", "5",
            "--device", "cpu", "--quiet"]
    assert sweep_run(sweep_parser().parse_args([*argv, "--log-outcomes", str(tmp_path / "local")])) == 0
    assert sweep_run(sweep_parser().parse_args([*argv, "--ray", "--log-outcomes", str(tmp_path / "ray")])) == 0
    names = sorted(p.name for p in (tmp_path / "local").iterdir())
    assert len(names) == 4 and names == sorted(p.name for p in (tmp_path / "ray").iterdir())
    for name in names:
        local, remote = OutcomeLog.load(tmp_path / "local" / name), OutcomeLog.load(tmp_path / "ray" / name)
        assert len(local) > 0 and local.fingerprint == remote.fingerprint
        for column, values in local.columns.items():
            np.testing.assert_array_equal(remote.columns[column], values, err_msg=f"{name}: {column}")


# --- token authentication ---------------------------------------------------------------------------------------
#: What Ray 2.60's core logs while a head refuses a client's token (one line a second until it gives up).
REFUSED = ("[2026-12-02 01:38:41,382 W 343 343] gcs_client.cc:210: Failed to get cluster ID from GCS server: "
           "Unauthenticated: RPC error: InvalidAuthToken: Authentication token is missing or incorrect\n")


def test_a_refused_token_is_named_an_authentication_failure():
    from goap.bench.distributed import connect_error

    failure = ConnectionError("Failed to connect to Ray cluster at 192.0.2.2:6379")
    message = connect_error("HEAD:6379", failure, REFUSED * 3, "RAY_AUTH_TOKEN")
    assert message.startswith("--ray HEAD:6379: authentication failed:")
    assert "the token from RAY_AUTH_TOKEN was refused" in message and "ray get-auth-token" in message
    assert "has no token" in connect_error("HEAD:6379", failure, REFUSED, None)
    plain = connect_error("HEAD:6379", failure, "", None)
    assert plain == "--ray HEAD:6379: cannot connect to the Ray cluster: Failed to connect to Ray cluster at " \
                    "192.0.2.2:6379"


def test_token_source_and_token_mode(monkeypatch, tmp_path):
    from goap.bench import distributed

    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE"):
        monkeypatch.delenv(var, raising=False)
    assert distributed.token_source() is None and distributed.enable_token_auth() is None
    assert "RAY_AUTH_MODE" not in __import__("os").environ
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("f" * 32)
    assert distributed.token_source() == str(tmp_path / ".ray" / "auth_token")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # set by the user: left alone
    assert distributed.enable_token_auth() is None
    monkeypatch.setenv("RAY_AUTH_TOKEN", "e" * 32)
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    assert distributed.token_source() == "RAY_AUTH_TOKEN" == distributed.enable_token_auth()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_explicit_address_of_a_token_cluster(tmp_path):
    """A head started where a token exists (as `ray start --head` does after any local ray.init) refuses clients
    without it: the documented recipe works with the token, and a wrong one is an authentication error."""
    import contextlib
    import os
    import shutil
    import signal
    import subprocess
    import sys
    import time

    ray_cli = shutil.which("ray", path=os.path.dirname(sys.executable)) or shutil.which("ray")
    if ray_cli is None:
        pytest.skip("no ray command")
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    token = "0123456789abcdef" * 4
    (home / ".ray" / "auth_token").write_text(token)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")} | {"HOME": str(home)}
    import tempfile

    port = _free_port()
    # its own session folder, never another cluster's; short, since Ray's socket paths must fit in 107 bytes
    temp = Path(tempfile.mkdtemp(prefix="goap-ray-"))
    head = subprocess.Popen([ray_cli, "start", "--head", "--port", str(port), "--num-cpus", "1",
                             "--include-dashboard=false", "--temp-dir", str(temp), "--block"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not list(temp.glob("session_*/logs/gcs_server.out")) and time.monotonic() < deadline:
            assert head.poll() is None, "ray start --head exited"
            time.sleep(0.5)
        time.sleep(3)
        argv = [sys.executable, "-m", "goap", "bench", "--suite", "pddl", "--tasks-dir", str(PDDL_DIR), "--domains",
                "blocks", "--tasks", "task01", "--planners", "reference", "--quiet", "--ray", f"127.0.0.1:{port}",
                "--json", str(tmp_path / "r.json")]
        client_home = tmp_path / "client"
        client_home.mkdir()
        good = subprocess.run(argv, env=env | {"HOME": str(client_home), "RAY_AUTH_TOKEN": token},
                              capture_output=True, text=True, timeout=180)
        assert good.returncode == 0, good.stderr[-2000:]
        rows = json.loads((tmp_path / "r.json").read_text())["results"]
        assert [(r["problem"], r["status"], r["valid"]) for r in rows] == [("blocks/task01", "ok", True)]
        bad = subprocess.run(argv, env=env | {"HOME": str(client_home), "RAY_AUTH_TOKEN": "f" * 64},
                             capture_output=True, text=True, timeout=180)
        assert bad.returncode == 1
        assert "authentication failed" in bad.stderr and "InvalidAuthToken" not in bad.stderr
        assert "Traceback" not in bad.stderr
    finally:  # the head's own process group only (ray start --block keeps its processes in it)
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 30)):
            try:
                os.killpg(head.pid, sig)
            except ProcessLookupError:
                break
            try:
                head.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
        time.sleep(1)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)  # what outlived its parent in the group
        shutil.rmtree(temp, ignore_errors=True)

"""Ray: spread bench tasks, and sweep cells, over a cluster (``pip install -e ".[scale]"``).

``goap bench --ray`` sends every recipe (one PDDL task, one random-domain group, one recorded world batch) to a
Ray task that loads it and runs every planner on it there (`goap.bench.runner.run_recipe`), so a task's
planners share one machine and their times compare. The rows come back in the order of the recipes, and the
report is made on the driver exactly as for a local run: the same table and JSON.

Without an address a local cluster is started for the run (``--ray-cpus`` worker processes) and stopped after
it. For a real cluster, start a head node and workers with the same Python environment (goap installed, and
``.[baselines]`` for external planners) and pass the head's address::

    ray start --head --port 6379                 # on the head node
    ray start --address HEAD_HOST:6379           # on each worker node
    goap bench --suite pddl --planners warp,fd-lmcut --ray HEAD_HOST:6379

Token authentication (Ray 2.52 and later): a head started where a token exists (``~/.ray/auth_token``, which
any local ``ray.init()`` creates, or ``RAY_AUTH_TOKEN`` / ``RAY_AUTH_TOKEN_PATH``) accepts only clients holding
the same token, and Ray enables the token on the client side only for ``--ray auto``, never for an explicit
address. `Cluster` therefore turns token mode on whenever this machine has a token (unless ``RAY_AUTH_MODE`` is
set), and a refused token is an error that says so, instead of Ray's repeated ``InvalidAuthToken`` log lines and
a bare "cannot connect". Give every machine the head's token (``ray get-auth-token`` on the head prints it)::

    export RAY_AUTH_TOKEN=...                    # on each worker node and the machine running goap bench

Each Ray task asks for one CPU; a Warp planner on the CPU uses all the cores Warp finds, so on a shared node
pass ``--ray-cpus`` (or start workers with ``ray start --num-cpus N``) to keep tasks from competing.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

#: What Ray's core prints when the cluster refuses a client's token (``Unauthenticated: ... InvalidAuthToken``).
AUTH_FAILURE_MARKERS = ("InvalidAuthToken", "Unauthenticated")


def require_ray() -> Any:
    """The ray module, or a ValueError naming the install command."""
    try:
        import ray
    except ImportError:
        raise ValueError('--ray needs Ray: pip install -e ".[scale]" (or pip install "ray[default]")') from None
    return ray


class Cluster:
    """A connection to a Ray cluster for one run: a local one started here (and stopped after), or an address."""

    def __init__(self, address: str | None, cpus: int | None = None):
        self.ray = require_ray()
        self.address = None if address in (None, "", "local") else address
        self.started = False
        if self.ray.is_initialized():
            return
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR"}
        if self.address is None:
            if cpus:
                kwargs["num_cpus"] = cpus
            self.ray.init(**kwargs)
        else:
            token = enable_token_auth()
            with _stderr_captured() as log:
                try:
                    self.ray.init(address=self.address, **kwargs)
                    failure = None
                except Exception as e:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, its own errors
                    failure = e
            if failure is not None:
                raise ValueError(connect_error(self.address, failure, log["text"], token)) from None
        self.started = True

    def info(self) -> dict[str, Any]:
        res = self.ray.cluster_resources()
        return {"address": self.address or "local", "nodes": len(self.ray.nodes()), "cpus": res.get("CPU"),
                "ray": self.ray.__version__}

    def map(self, fn: Callable[..., Any], calls: Sequence[tuple], on_done: Callable[[int], None] | None = None
            ) -> list[Any]:
        """``fn(*args)`` for every args tuple, one Ray task each, results in the order of ``calls``."""
        remote = self.ray.remote(num_cpus=1, max_retries=0)(fn)
        refs = [remote.remote(*args) for args in calls]
        index = {ref: i for i, ref in enumerate(refs)}
        out: list[Any] = [None] * len(refs)
        pending = list(refs)
        while pending:
            ready, pending = self.ray.wait(pending, num_returns=1)
            for ref in ready:
                i = index[ref]
                try:
                    out[i] = self.ray.get(ref)
                except self.ray.exceptions.RayTaskError as e:
                    cause = e.cause if getattr(e, "cause", None) is not None else e
                    if isinstance(cause, ValueError):
                        raise ValueError(str(cause)) from None
                    raise
                if on_done is not None:
                    on_done(i)
        return out

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()
            self.started = False


def token_source() -> str | None:
    """Where this machine's Ray token would come from (the variable or the file), or None when it has none."""
    if os.environ.get("RAY_AUTH_TOKEN", "").strip():
        return "RAY_AUTH_TOKEN"
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if path:
        return f"RAY_AUTH_TOKEN_PATH ({path})" if Path(path).is_file() else None
    default = Path.home() / ".ray" / "auth_token"
    return str(default) if default.is_file() else None


def enable_token_auth() -> str | None:
    """Turn Ray's token authentication on for this client when this machine holds a token and ``RAY_AUTH_MODE``
    is not set (Ray does so itself only for ``address="auto"``); returns where the token comes from, or None."""
    source = token_source()
    if source is None or "RAY_AUTH_MODE" in os.environ:
        return source if os.environ.get("RAY_AUTH_MODE", "").lower() == "token" else None
    try:  # Ray's own switch also refreshes its cached configuration
        from ray._private.authentication.authentication_token_setup import _enable_token_auth

        _enable_token_auth()
    except ImportError:  # a Ray without token authentication: nothing to turn on
        return None
    return source


def connect_error(address: str, error: BaseException, log: str, token: str | None) -> str:
    """The one-line error for a failed connection: an authentication failure named as such, with the fix."""
    auth = any(m in log or m in str(error) for m in AUTH_FAILURE_MARKERS) or \
        type(error).__name__ == "AuthenticationError"
    if not auth:
        return f"--ray {address}: cannot connect to the Ray cluster: {error}"
    held = (f"the token from {token} was refused" if token else
            "this machine has no token (no RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token)")
    return (f"--ray {address}: authentication failed: the Ray cluster uses token authentication and {held}; set "
            f"RAY_AUTH_TOKEN to the head node's token (`ray get-auth-token` there prints it), or start the cluster "
            f"with RAY_AUTH_MODE=disabled on a trusted network")


@contextlib.contextmanager
def _stderr_captured() -> Iterator[dict[str, str]]:
    """File descriptor 2 into a temporary file for the block (Ray's core logs there directly, retrying a refused
    connection once a second); after the block, ``captured["text"]`` holds what was written, and what is not
    one of those retry lines is written back to stderr."""
    captured = {"text": ""}
    with tempfile.TemporaryFile(mode="w+", errors="replace") as tmp:
        try:
            saved = os.dup(2)
        except OSError:  # no stderr to redirect
            yield captured
            return
        try:
            os.dup2(tmp.fileno(), 2)
            yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            captured["text"] = tmp.read()
            kept = [ln for ln in captured["text"].splitlines(True) if not any(m in ln for m in AUTH_FAILURE_MARKERS)]
            if kept:
                os.write(2, "".join(kept).encode(errors="replace"))


def run_on_ray(recipes: Sequence[Any], configs: Sequence[Any], settings: Any, address: str | None,
               cpus: int | None = None, progress: Callable[[str], None] | None = None
               ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every recipe as one Ray task; the rows in recipe order, as `goap.bench.cli.run` makes them locally."""
    from goap.bench.runner import run_recipe

    cluster = Cluster(address, cpus)
    try:
        results = cluster.map(run_recipe, [(r, list(configs), settings) for r in recipes],
                              on_done=(lambda i: progress(recipes[i].group)) if progress else None)
        info = cluster.info()
    finally:
        cluster.close()
    rows = [row for rs in results for row in rs]
    return rows, info

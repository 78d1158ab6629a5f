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

Each Ray task asks for one CPU; a Warp planner on the CPU uses all the cores Warp finds, so on a shared node
pass ``--ray-cpus`` (or start workers with ``ray start --num-cpus N``) to keep tasks from competing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


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
            try:
                self.ray.init(address=self.address, **kwargs)
            except (ConnectionError, RuntimeError, ValueError) as e:
                raise ValueError(f"--ray {self.address}: cannot connect to the Ray cluster: {e}") from None
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

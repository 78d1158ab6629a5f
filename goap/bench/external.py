"""External planners as `goap bench` baselines: separate processes with a wall-time and a memory limit.

Each run gets a fresh working folder holding ``domain.pddl`` and ``problem.pddl`` (written from the texts the
recipe carries, so a cluster worker needs no shared files), runs the planner's command there in its own
process group with ``RLIMIT_AS`` (memory) and ``RLIMIT_CPU`` (a backstop) set by `resource.setrlimit`, and
kills the whole group with SIGKILL when the wall-time limit expires: that run is a ``timeout``, whatever it
printed. The plan file is read in the IPC form and handed back as steps; the runner replays it with
`goap.pddl.validate` (a planner's word on its own plan is never taken).

Known planners:

* ``fd-lmcut``: Fast Downward, A* with the LM-cut heuristic (the ``baselines`` extra installs the
  ``up-fast-downward`` wheel, which ships the planner's binaries).
* ``pyperplan-lmcut``: pyperplan's A* with LM-cut (``pyperplan``, in the ``baselines`` extra too).

Their names, providers and extras are one table, `goap.registry.EXTERNAL_PLANNERS` (``goap planners`` lists it).
* any command given as ``--external NAME='CMD {domain} {problem} {plan}'``: the placeholders are replaced by the
  paths of the domain, the problem and the plan file the planner must write. Exit status 0 with a plan file is
  a plan, 0 without one is ``no_plan``; anything else is an ``error`` (``memout`` when it ran out of memory).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from goap.pddl.validate import Step, parse_plan
from goap.registry import EXTERNAL_PLANNERS, install_hint

DEFAULT_MEMORY_LIMIT = 4 << 30  # bytes; Fast Downward's lab uses 3.5-8 GiB


@dataclass(frozen=True)
class ExternalPlanner:
    """A planner run as a command line; ``{domain}``, ``{problem}``, ``{plan}`` are replaced by paths."""

    name: str
    command: tuple[str, ...]
    plan_file: str = "plan.txt"  # relative to the working folder
    version: str | None = None
    exit_status: dict[int, str] = field(default_factory=dict)  # planner-specific exit codes -> our status
    description: str = ""


@dataclass
class ExternalResult:
    """One run of an external planner.

    ``seconds`` is the process's wall time. ``phases`` holds what the planner's own log says of its parts, where
    it says it (Fast Downward: ``translate_seconds``, the translator's wall time; ``search_seconds``, the search
    component's total, reading its input and building the heuristic included; ``search_only_seconds``, its
    "Search time"), so its search can be compared apart from its translator. ``peak_rss_bytes`` is the largest
    resident memory of one process of the planner's process tree (see `_wait`).
    """

    status: str  # ok, no_plan, timeout, memout, error
    plan: list[Step] | None
    seconds: float
    expanded: int | None = None
    error: str | None = None
    returncode: int | None = None
    phases: dict[str, float] = field(default_factory=dict)
    peak_rss_bytes: int | None = None
    #: Fast Downward's "Expanded until last jump" (the expansions before the last f-layer), where the log says it.
    expanded_before_last_f: int | None = None


# Fast Downward's exit codes (driver/returncodes.py).
_FD_EXIT = {
    10: "no_plan", 11: "no_plan", 12: "no_plan", 20: "memout", 21: "timeout", 22: "memout", 23: "timeout",
    24: "memout", 35: "error", 36: "error", 37: "error",
}


def fast_downward_script() -> Path | None:
    """The ``fast-downward.py`` driver of the installed ``up-fast-downward`` wheel, found without importing it."""
    spec = importlib.util.find_spec("up_fast_downward")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        script = Path(loc) / "downward" / "fast-downward.py"
        if script.is_file():
            return script
    return None


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def known_planners() -> dict[str, str]:
    """Names of the built-in external planners (`goap.registry.EXTERNAL_PLANNERS`) and what each is."""
    return {name: what for name, (what, *_) in EXTERNAL_PLANNERS.items()}


def builtin(name: str) -> ExternalPlanner:
    """The built-in external planner ``name``; ValueError saying what to install when it is missing."""
    if name == "fd-lmcut":
        script = fast_downward_script()
        if script is None:
            raise ValueError(f"planner 'fd-lmcut' needs Fast Downward: {install_hint(name)}")
        return ExternalPlanner(
            name, (sys.executable, str(script), "--plan-file", "{plan}", "{domain}", "{problem}",
                   "--search", "astar(lmcut())"),
            version=f"up-fast-downward {_version('up-fast-downward')}", exit_status=_FD_EXIT,
            description="Fast Downward, astar(lmcut())",
        )
    if name == "pyperplan-lmcut":
        if importlib.util.find_spec("pyperplan") is None:
            raise ValueError(f"planner 'pyperplan-lmcut' needs pyperplan: {install_hint(name)}")
        # pyperplan writes PROBLEM.soln beside the problem file.
        return ExternalPlanner(
            name, (sys.executable, "-m", "pyperplan", "-s", "astar", "-H", "lmcut", "{domain}", "{problem}"),
            plan_file="problem.pddl.soln", version=f"pyperplan {_version('pyperplan')}",
            description="pyperplan, astar + lmcut",
        )
    raise KeyError(name)


def parse_external(spec: str) -> ExternalPlanner:
    """``NAME=COMMAND`` from ``--external``; the command must name ``{domain}``, ``{problem}`` and ``{plan}``."""
    name, sep, command = spec.partition("=")
    name = name.strip()
    if not sep or not name or not command.strip():
        raise ValueError(f"--external: expected NAME='COMMAND {{domain}} {{problem}} {{plan}}', got {spec!r}")
    if not re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
        raise ValueError(f"--external: a planner name is letters, digits and _.+- only, got {name!r}")
    try:
        argv = tuple(shlex.split(command))
    except ValueError as e:
        raise ValueError(f"--external {name}: cannot split the command: {e}") from None
    for key in ("{domain}", "{problem}", "{plan}"):
        if not any(key in a for a in argv):
            raise ValueError(f"--external {name}: the command must contain {key}")
    return ExternalPlanner(name, argv, version=None, description=command.strip())


def _limits(memory: int | None, cpu_seconds: float | None) -> Any:
    def apply() -> None:  # runs in the child, between fork and exec
        import resource

        if memory:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        if cpu_seconds:
            cpu = int(cpu_seconds) + 1
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))

    return apply


def run_external(
    planner: ExternalPlanner, domain_text: str, problem_text: str, time_limit: float | None,
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT, keep_dir: str | None = None,
) -> ExternalResult:
    """Run ``planner`` on one task under the limits; never raises for the planner's own failures."""
    work = Path(tempfile.mkdtemp(prefix=f"goap-{planner.name}-"))
    try:
        dom, prob, plan = work / "domain.pddl", work / "problem.pddl", work / planner.plan_file
        dom.write_text(domain_text)
        prob.write_text(problem_text)
        subst = {"{domain}": str(dom), "{problem}": str(prob), "{plan}": str(plan)}
        argv = [_fill(a, subst) for a in planner.command]
        out_path, err_path = work / "stdout.txt", work / "stderr.txt"
        parent_rss = _own_rss()
        t0 = time.perf_counter()
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            try:
                proc = subprocess.Popen(argv, cwd=work, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                        start_new_session=True, preexec_fn=_limits(memory_limit, time_limit))
            except OSError as e:
                return ExternalResult("error", None, 0.0, error=f"cannot start {argv[0]}: {e.strerror or e}")
            rc, timed_out, peak = _wait(proc, time_limit, parent_rss)
            seconds = time.perf_counter() - t0
        stdout = out_path.read_text(errors="replace")
        stderr = err_path.read_text(errors="replace")
        expanded = _expanded(stdout)
        phases = log_phases(stdout)
        if timed_out or (time_limit is not None and seconds > time_limit):
            return ExternalResult("timeout", None, seconds, expanded, returncode=rc, phases=phases,
                                  peak_rss_bytes=peak)
        if rc != 0:
            status = planner.exit_status.get(rc)
            if status is None:
                status = "memout" if _out_of_memory(rc, stderr + stdout) else "error"
            if rc in (-signal.SIGXCPU, -signal.SIGKILL) and status == "error":
                status = "timeout"
            tail = (stderr.strip() or stdout.strip()).splitlines()[-1:] or [""]
            return ExternalResult(status, None, seconds, expanded, error=f"exit status {rc}: {tail[0][:200]}",
                                  returncode=rc, phases=phases, peak_rss_bytes=peak)
        if not plan.is_file():
            return ExternalResult("no_plan", None, seconds, expanded, returncode=rc, phases=phases, peak_rss_bytes=peak)
        try:
            steps = parse_plan(plan.read_text(errors="replace"))
        except ValueError as e:
            return ExternalResult("error", None, seconds, expanded, error=f"unreadable plan file: {e}", returncode=rc,
                                  phases=phases, peak_rss_bytes=peak)
        return ExternalResult("ok", steps, seconds, expanded, returncode=rc, phases=phases, peak_rss_bytes=peak,
                              expanded_before_last_f=_expanded_last_jump(stdout))
    finally:
        if keep_dir:
            shutil.copytree(work, Path(keep_dir) / work.name, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)


def _fill(arg: str, subst: dict[str, str]) -> str:
    for k, v in subst.items():
        arg = arg.replace(k, v)
    return arg


def _wait(proc: subprocess.Popen, time_limit: float | None, parent_rss: int | None
          ) -> tuple[int, bool, int | None]:
    """(exit status as Popen gives it, whether the limit expired, peak resident bytes of the planner).

    The peak: ``wait4``'s ``ru_maxrss`` of the child counts the memory it inherited when it was forked from this
    process (Linux keeps the pre-exec high-water mark), so it is taken only when it exceeds this process's
    resident size at the spawn (then it is some descendant's own peak); otherwise it is the largest VmHWM of the
    child's process tree sampled every `_SAMPLE_S` while it runs (a process that grows in its last moments
    between two samples is under-counted).
    """
    deadline = None if time_limit is None else time.monotonic() + time_limit
    timed_out = False
    sampled = 0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            break
        sampled = max(sampled, _tree_peak_rss(proc.pid))
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0 and not timed_out:
            timed_out = True
            _kill_group(proc)
            continue
        time.sleep(_SAMPLE_S if left is None or timed_out else min(_SAMPLE_S, max(left, 0.0)))
    rc = os.waitstatus_to_exitcode(status)
    proc.returncode = rc  # reaped here: Popen must not wait for it again
    maxrss = int(usage.ru_maxrss) * (1 if sys.platform == "darwin" else 1024)  # KiB on Linux, bytes on macOS
    if parent_rss is not None and maxrss > parent_rss:
        return rc, timed_out, max(maxrss, sampled)
    return rc, timed_out, sampled or None


#: How often a running planner's process tree is sampled for its peak memory (and its exit noticed), seconds.
_SAMPLE_S = 0.005
_VMHWM = re.compile(r"^VmHWM:\s+(\d+) kB", re.MULTILINE)


def _tree_peak_rss(root: int) -> int:
    """The largest VmHWM (peak resident memory since exec) over ``root`` and its descendants; 0 without /proc."""
    best, stack, seen = 0, [root], set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/status") as f:
                m = _VMHWM.search(f.read())
            if m:
                best = max(best, int(m.group(1)) * 1024)
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    stack += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return best


def _own_rss() -> int | None:
    try:
        with open("/proc/self/status") as f:
            m = re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.MULTILINE)
        return int(m.group(1)) * 1024 if m else None
    except OSError:
        return None


#: Fast Downward's log lines for its parts: the translator's last "Done! [... wall-clock]", the search component's
#: "Search time" and "Total time".
_FD_TRANSLATE = re.compile(r"^Done! \[[0-9.]+s CPU, ([0-9.]+)s wall-clock\]", re.MULTILINE)
_FD_SEARCH_ONLY = re.compile(r"\] Search time: ([0-9.]+)s")
_FD_SEARCH_TOTAL = re.compile(r"\] Total time: ([0-9.]+)s")


def log_phases(stdout: str) -> dict[str, float]:
    """The parts of a run a planner's log states (Fast Downward's; empty for a log that states none)."""
    out: dict[str, float] = {}
    for key, pattern in (("translate_seconds", _FD_TRANSLATE), ("search_seconds", _FD_SEARCH_TOTAL),
                         ("search_only_seconds", _FD_SEARCH_ONLY)):
        found = pattern.findall(stdout)
        if found:
            out[key] = float(found[-1])
    return out


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _out_of_memory(rc: int, text: str) -> bool:
    return "MemoryError" in text or "std::bad_alloc" in text or "out of memory" in text.lower()


_EXPANDED = re.compile(r"Expanded (\d+) state")
_EXPANDED_LAST_JUMP = re.compile(r"Expanded until last jump: (\d+) state")


def _expanded(stdout: str) -> int | None:
    found = _EXPANDED.findall(stdout)
    return int(found[-1]) if found else None


def _expanded_last_jump(stdout: str) -> int | None:
    """Fast Downward's "Expanded until last jump": the expansions before the first at the last f-layer."""
    found = _EXPANDED_LAST_JUMP.findall(stdout)
    return int(found[-1]) if found else None

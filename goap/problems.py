"""Problem files: one JSON object per line, ``{"id", "start": {fact: value}, "goal": name or {fact: condition}}``.

Every line is parsed and checked before anything is planned, so a bad line stops the run with its line number
and nothing is half-written.
"""

from __future__ import annotations

import json
import math
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from goap.domain import Domain, DomainError, Goal, show
from goap.domain_file import MAX_FILE_BYTES, MAX_NESTING, decode_text, nesting_error, parse_error, read_text
from goap.encoding import DomainTables, GoalTables


@dataclass(frozen=True)
class ProblemSet:
    """Parsed problems, ready for a planner: packed starts, goal indices into ``goal_table``."""

    ids: list[Any]
    values: np.ndarray  # int64[N, F]
    states: np.ndarray  # uint64[N, W]
    goals: np.ndarray  # int32[N]
    goal_table: GoalTables


#: The name standard input goes by in messages, for ``--problems -``.
STDIN_NAME = "<stdin>"


def load_problems(path: str | Path, tables: DomainTables) -> ProblemSet:
    """Read and check a problem file; ``"-"`` reads standard input (a file named ``-`` is ``./-``).

    A problem file, like a domain file, is at most `MAX_FILE_BYTES`: no more than that is ever read, so that
    ``--problems /dev/zero`` is refused at the limit instead of filling memory.
    """
    if str(path) == "-":
        return parse_problems(read_stdin(), tables, file=STDIN_NAME)
    path = Path(path)
    return parse_problems(read_text(path, MAX_FILE_BYTES), tables, file=str(path))


def read_stdin() -> str:
    """Standard input as UTF-8 text (at most `MAX_FILE_BYTES`), or a DomainError naming it."""
    limit = MAX_FILE_BYTES
    try:
        if hasattr(sys.stdin, "buffer"):
            data = sys.stdin.buffer.read(limit + 1)
        else:
            data = sys.stdin.read(limit + 1).encode("utf-8")
    except (OSError, UnicodeError, ValueError) as e:
        raise DomainError(f"cannot read: {e}", file=STDIN_NAME) from None
    return decode_text(data, STDIN_NAME, limit)


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


class _BadConstant(Exception):
    def __init__(self, name: str):
        self.name = name


def _no_constant(name: str) -> float:
    raise _BadConstant(name)


def parse_problems(text: str, tables: DomainTables, file: str = "<problems>") -> ProblemSet:
    """Parse and check every line of a problem file (JSON lines) against ``tables``' domain.

    Lines are numbered by ``\\n`` alone (a form feed or U+2028 inside a line does not start a new one), each
    line is strict JSON (no NaN or Infinity, no repeated keys, at most `MAX_NESTING` levels deep), and the
    first bad line raises a DomainError with the file, the problem and the line.
    """
    domain = tables.domain
    goals = list(domain.goals)
    ad_hoc: dict[tuple, int] = {}
    ids, values, goal_idx = [], [], []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.endswith("\r"):
            line = line[:-1]
        if not line.strip():
            continue

        def fail(message: str, item: str | None = None, _lineno: int = lineno) -> DomainError:
            return DomainError(message, item=item, file=file, line=_lineno)

        if nesting_error(line, "json") is not None:
            raise fail(f"malformed JSON: nested more than {MAX_NESTING} levels deep")
        try:
            obj = json.loads(line, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
        except json.JSONDecodeError as e:
            raise fail(f"malformed JSON: {e.msg} (column {e.colno})") from None
        except _DuplicateKey as e:
            raise fail(f"malformed JSON: duplicate key {show(e.key)}") from None
        except _BadConstant as e:
            raise fail(f"malformed JSON: {e.name} is not a JSON value") from None
        except (ValueError, RecursionError) as e:
            raise fail(parse_error(line, "json", file, e).message) from None
        if not isinstance(obj, Mapping):
            raise fail("a problem must be a JSON object with start and goal")
        pid = obj.get("id", lineno)
        if isinstance(pid, bool) or not isinstance(pid, str | int | float) or pid in (math.inf, -math.inf):
            raise fail(f"'id' must be a string or a finite number, got {show(pid)}")
        item = f"problem {show(pid)}"
        extra = set(obj) - {"id", "start", "goal"}
        if extra:
            raise fail(f"unknown key {show(sorted(extra)[0])} (expected id, start, goal)", item)
        start = obj.get("start", {})
        if not isinstance(start, Mapping):
            raise fail("'start' must be an object of fact: value", item)
        try:
            state = domain.state(start, strict=True)
        except DomainError as e:
            raise fail(e.message, item) from None
        if "goal" not in obj:
            raise fail("missing 'goal' (a goal name or an object of fact: condition)", item)
        goal = obj["goal"]
        if isinstance(goal, str):
            try:
                g = domain.goal_index(goal)
            except KeyError:
                known = ", ".join(x.name for x in domain.goals) or "none"
                raise fail(f"unknown goal {show(goal)} (known: {show(known, 200)[1:-1]})", item) from None
        elif isinstance(goal, Mapping) and goal:
            try:
                want = domain.conditions(goal, item)
            except DomainError as e:
                raise fail(e.message, item) from None
            key = tuple(sorted((c.fact, c.op, c.value) for c in want))
            if key not in ad_hoc:
                ad_hoc[key] = len(goals)
                goals.append(Goal(name=f"<{pid}>", want=want, priority=0.0))
            g = ad_hoc[key]
        else:
            raise fail("'goal' must be a goal name or a non-empty object of fact: condition", item)
        ids.append(pid)
        values.append(state)
        goal_idx.append(g)
    vals = np.asarray(values, dtype=np.int64).reshape(-1, len(domain.facts))
    table = tables.goals if len(goals) == len(domain.goals) else tables.encode_goals(goals)
    return ProblemSet(
        ids=ids, values=vals, states=tables.pack_states(vals), goals=np.asarray(goal_idx, np.int32), goal_table=table
    )


def result_rows(problems: ProblemSet, batch: Any, domain: Domain) -> list[dict[str, Any]]:
    """One output row per problem, in input order."""
    from goap.planners.base import Status

    rows = []
    for i, pid in enumerate(problems.ids):
        status = Status(int(batch.status[i]))
        cost = float(batch.cost[i])
        rows.append(
            {
                "id": pid,
                "status": status.label,
                "cost": None if np.isnan(cost) else (int(cost) if cost.is_integer() else cost),
                "plan": [domain.actions[a].name for a in batch.segment(i)],  # too_long: the first steps
                "length": int(batch.length[i]),
                "expanded": int(batch.expanded[i]),
            }
        )
    return rows


#: The status of a problem whose planning ran past ``--time-limit`` (as in goap bench's rows).
TIMEOUT = "timeout"


def solve_problems(planner: Any, problems: ProblemSet, domain: Domain, time_limit: float | None = None) -> list[dict]:
    """Plan every problem and give `result_rows`; with ``time_limit`` (seconds), each problem is planned alone and
    one that runs past it is a ``timeout`` row.

    The reference planner is interrupted at the limit (SIGALRM, in the main thread); a Warp search is one launch
    that cannot be stopped, so one that ends after the limit is reported as ``timeout`` all the same, its real
    outcome kept in ``late_status``, as goap bench does.
    """
    if time_limit is None:
        return result_rows(problems, planner.plan(problems.states, problems.goals, goal_table=problems.goal_table),
                           domain)
    rows = []
    for i, pid in enumerate(problems.ids):
        one = ProblemSet(ids=[pid], values=problems.values[i : i + 1], states=problems.states[i : i + 1],
                         goals=problems.goals[i : i + 1], goal_table=problems.goal_table)
        t0 = time.perf_counter()
        try:
            with deadline(time_limit):
                batch = planner.plan(one.states, one.goals, goal_table=one.goal_table)
        except TimeUp:
            rows.append({"id": pid, "status": TIMEOUT, "cost": None, "plan": [], "length": 0, "expanded": None})
            continue
        row = result_rows(one, batch, domain)[0]
        if time.perf_counter() - t0 > time_limit:
            row["late_status"], row["status"] = row["status"], TIMEOUT
        rows.append(row)
    return rows


class TimeUp(Exception):
    """Raised by `deadline` when its time is up."""


def can_interrupt() -> bool:
    """Whether SIGALRM can interrupt a search here (the main thread of a POSIX process)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Raise TimeUp in this thread after ``seconds``; a no-op for no limit, or where SIGALRM cannot be used (off
    the main thread, or without setitimer), where the caller compares the time afterwards instead."""
    if not seconds or not can_interrupt():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise TimeUp

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)

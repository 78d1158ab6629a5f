"""Problem files: one JSON object per line, ``{"id", "start": {fact: value}, "goal": name or {fact: condition}}``.

Every line is parsed and checked before anything is planned, so a bad line stops the run with its line number
and nothing is half-written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from goap.domain import Domain, DomainError, Goal
from goap.domain_file import read_text
from goap.encoding import DomainTables, GoalTables


@dataclass(frozen=True)
class ProblemSet:
    """Parsed problems, ready for a planner: packed starts, goal indices into ``goal_table``."""

    ids: list[Any]
    values: np.ndarray  # int64[N, F]
    states: np.ndarray  # uint64[N, W]
    goals: np.ndarray  # int32[N]
    goal_table: GoalTables


def load_problems(path: str | Path, tables: DomainTables) -> ProblemSet:
    path = Path(path)
    return parse_problems(read_text(path), tables, file=str(path))


def parse_problems(text: str, tables: DomainTables, file: str = "<problems>") -> ProblemSet:
    domain = tables.domain
    goals = list(domain.goals)
    ad_hoc: dict[tuple, int] = {}
    ids, values, goal_idx = [], [], []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue

        def fail(message: str, item: str | None = None, _lineno: int = lineno) -> DomainError:
            return DomainError(message, item=item, file=file, line=_lineno)

        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise fail(f"malformed JSON: {e.msg} (column {e.colno})") from None
        if not isinstance(obj, Mapping):
            raise fail("a problem must be a JSON object with start and goal")
        pid = obj.get("id", lineno)
        item = f"problem {pid!r}"
        extra = set(obj) - {"id", "start", "goal"}
        if extra:
            raise fail(f"unknown key '{sorted(extra)[0]}' (expected id, start, goal)", item)
        start = obj.get("start", {})
        if not isinstance(start, Mapping):
            raise fail("'start' must be an object of fact: value", item)
        try:
            state = domain.state(start)
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
                raise fail(f"unknown goal '{goal}' (known: {known})", item) from None
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
                "plan": batch.plan_names(i, domain),
                "length": int(batch.length[i]),
                "expanded": int(batch.expanded[i]),
            }
        )
    return rows

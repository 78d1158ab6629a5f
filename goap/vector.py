"""Conditions and effects evaluated for many agents at once over numpy arrays of packed states.

These are the runtime's per-tick checks (is the goal reached? does the next action still apply?) and its
symbolic execution of finished actions. They loop over conditions, never over agents.
"""

from __future__ import annotations

import numpy as np

from goap.encoding import CondList, DomainTables, GoalTables, StepList

_U64 = np.uint64


def _holds(v: np.ndarray, op: np.ndarray, k: np.ndarray) -> np.ndarray:
    return np.select(
        [op == 0, op == 1, op == 2, op == 3, op == 4],
        [v == k, v != k, v < k, v <= k, v > k],
        default=v >= k,
    )


def _rows_hold(
    states: np.ndarray, rows: np.ndarray, mask: np.ndarray, value: np.ndarray, conds: CondList
) -> np.ndarray:
    """For each agent i, whether row ``rows[i]`` of (mask, value, conds) holds in ``states[i]``."""
    ok = ((states & mask[rows]) == value[rows]).all(axis=1)
    start, end = conds.start[rows], conds.start[rows + 1]
    width = int((end - start).max(initial=0))
    agents = np.arange(len(rows))
    for j in range(width):
        has = start + j < end
        if not has.any():
            continue
        c = np.where(has, start + j, 0)
        v = (states[agents, conds.word[c]] >> conds.shift[c].astype(_U64)) & conds.mask[c]
        ok &= ~has | _holds(v, conds.op[c], conds.k[c])
    return ok


def goals_satisfied(goals: GoalTables, states: np.ndarray) -> np.ndarray:
    """bool[N, G]: whether each goal of the table holds in each agent's state."""
    out = np.empty((states.shape[0], goals.n_goals), dtype=bool)
    c = goals.ints
    for g in range(goals.n_goals):
        ok = ((states & goals.mask[g]) == goals.value[g]).all(axis=1)
        for k in range(c.start[g], c.start[g + 1]):
            v = (states[:, c.word[k]] >> c.shift[k].astype(_U64)) & c.mask[k]
            ok &= _holds(v, c.op[k], c.k[k])
        out[:, g] = ok
    return out


def goal_satisfied(goals: GoalTables, states: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """bool[N]: whether agent i's goal ``goal[i]`` holds (False where goal[i] < 0)."""
    safe = np.maximum(goal, 0)
    return _rows_hold(states, safe, goals.mask, goals.value, goals.ints) & (goal >= 0)


def actions_applicable(tables: DomainTables, states: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """bool[N]: whether agent i's action ``actions[i]`` is applicable in its state (False where < 0)."""
    safe = np.maximum(actions, 0)
    return _rows_hold(states, safe, tables.pre_mask, tables.pre_value, tables.pre_ints) & (actions >= 0)


def apply_actions(tables: DomainTables, states: np.ndarray, actions: np.ndarray) -> None:
    """Apply each agent's action's effects to its state in place; agents with action < 0 are left alone."""
    idx = np.flatnonzero(actions >= 0)
    if not len(idx):
        return
    a = actions[idx]
    s = (states[idx] & ~tables.eff_clear[a]) | tables.eff_set[a]
    steps: StepList = tables.eff_steps
    start, end = steps.start[a], steps.start[a + 1]
    rows = np.arange(len(idx))
    for j in range(int((end - start).max(initial=0))):
        has = start + j < end
        if not has.any():
            continue
        c = np.where(has, start + j, 0)
        w, sh, fm = steps.word[c], steps.shift[c].astype(_U64), steps.mask[c]
        word = s[rows, w]
        v = ((word >> sh) & fm).astype(np.int64) + steps.delta[c]
        v = np.clip(v, 0, steps.hi[c].astype(np.int64)).astype(_U64)
        s[rows, w] = np.where(has, (word & ~(fm << sh)) | (v << sh), word)
    states[idx] = s

"""The built-in worlds keep their agents busy: the plan budget follows the world's replan rate, every FAILED action
carries the world's reason (and `goap.explain` names it), and at 2,000 agents both worlds stay under 5% idle and
2% failed actions (the bar of the README's table)."""

from __future__ import annotations

import numpy as np
import pytest

from goap.codes import event_bit
from goap.explain import explain_agent
from goap.registry import load_world
from goap.run_report import IdleStats
from goap.runtime import Brain
from goap.world import DEFAULT_REPLAN_RATE, FAIL_REASONS, default_plan_budget


class _World:
    name = "w"


def test_default_plan_budget_follows_the_worlds_replan_rate():
    plain = _World()
    assert default_plan_budget(plain, 100) == 256
    assert default_plan_budget(plain, 10_000) == int(np.ceil(DEFAULT_REPLAN_RATE * 10_000))
    fast = _World()
    fast.replan_rate = 0.3
    assert default_plan_budget(fast, 10_000) == 3000
    for bad in (0, 1.5, "often", True):
        fast.replan_rate = bad
        with pytest.raises(ValueError, match="replan_rate"):
            default_plan_budget(fast, 10)
    soldier = load_world("soldier")
    assert default_plan_budget(soldier, 2000) > 2000 // 10


def failures_with_reasons(brain: Brain, ticks: int) -> list[tuple[int, int]]:
    """(agent, fail_reason) of every action that FAILED over ``ticks`` ticks; checks explain's account of each and
    that `IdleStats` counts them all, by action and reason."""
    seen = []
    bit = np.uint32(event_bit("action_failed"))
    stats = IdleStats(brain)
    failed_before = brain.counters["actions_failed"]
    for _ in range(ticks):
        brain.tick()
        stats.update()
        failed = np.flatnonzero(brain.event_bits.numpy() & bit)
        reasons = brain.fail_reason.numpy()
        for i in failed[:5]:
            e = explain_agent(brain, int(i), queue=False)
            assert e.has("action_failed") and e.world_failure == FAIL_REASONS[reasons[i]], (i, e.causes)
        seen += [(int(i), int(reasons[i])) for i in failed]
    by_reason = stats.report()["failed_actions_by_reason"]
    assert sum(sum(row.values()) for row in by_reason.values()) == brain.counters["actions_failed"] - failed_before
    counted: dict[str, int] = {}
    for row in by_reason.values():
        for reason, n in row.items():
            counted[reason] = counted.get(reason, 0) + n
    expected: dict[str, int] = {}
    for _, r in seen:
        expected[FAIL_REASONS[r]] = expected.get(FAIL_REASONS[r], 0) + 1
    assert counted == expected
    return seen


def test_soldier_failures_carry_a_reason():
    w = load_world("soldier")
    brain = Brain(w.domain, 300, world=w, plan_budget=256, seed=7)
    seen = failures_with_reasons(brain, 120)
    assert seen and all(0 < r < len(FAIL_REASONS) for _, r in seen)


def test_village_failures_carry_a_reason():
    from worlds.village.world import VillageWorld

    w = VillageWorld(agents_per_village=300, village_size=16)  # one tiny crowded village: sites run out
    brain = Brain(w.domain, 300, world=w, plan_budget=256, seed=3)
    seen = failures_with_reasons(brain, 100)
    assert seen and {FAIL_REASONS[r] for _, r in seen} <= {"site_taken", "no_free_site"}


@pytest.mark.slow
@pytest.mark.parametrize("world", ["soldier", "village"])
def test_idle_and_failed_actions_stay_under_the_bar(world):
    w = load_world(world)
    n = 2000
    brain = Brain(w.domain, n, world=w, plan_budget=default_plan_budget(w, n), seed=7)
    stats = IdleStats(brain)
    for t in range(400):
        brain.tick()
        if t >= 30:
            stats.update()
    r = stats.report()
    idle = sum(r["idle_ticks_by_reason"].values()) / r["alive_agent_ticks"]
    assert idle <= 0.05, r["idle_ticks_by_reason"]
    c = brain.counters
    assert c["actions_failed"] <= 0.02 * c["actions_done"], r["failed_actions_by_reason"]

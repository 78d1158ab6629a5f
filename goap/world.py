"""The World protocol: what a game implements so that a `goap.runtime.Brain` can drive its agents.

A world owns everything that is not the agents' symbolic state: positions, resources, timers. The brain calls
it at two points of each tick, and the protocol says what it may touch at each:

========  ===========================================================  ==============================
call      the world may write                                          it may read
========  ===========================================================  ==============================
reset     its own arrays; ``states`` (starting facts), ``priorities``,  everything
          ``costs``, ``enabled``; ``alive`` through spawn/despawn
sense     ``states`` (the facts it names in ``sensed_facts``),          everything
          ``costs``, ``enabled``, ``priorities``
act       ``action_status`` of agents with ``action >= 0`` (RUNNING,    ``action``, ``action_ticks``,
          DONE or FAILED; the brain set RUNNING before the call), its  ``step``, ``plan``, ``goal``,
          own arrays, facts of ``states`` it owns                      ``states``, ...
========  ===========================================================  ==============================

A world does its per-agent work in Warp kernels on ``brain.device`` (host code loops over action kinds or site
kinds, never over agents). Its kernels take the agents as one struct, ``agents: Agents``
(`goap.kernels.agents`), passed as ``brain.agents``, and launch through ``brain.launcher``
(`goap.launch.Launcher`: ``launch`` records a launch once and replays it; ``launch_rows`` splits a per-row kernel
whose last two parameters are ``first, chunk`` over the CPU's workers)::

    @wp.kernel
    def sense_hunger(agents: Agents, hunger_word: int, hunger_shift: int, hunger_mask: wp.uint64,
                     first: int, chunk: int):
        i = wp.tid() + first
        if agents.alive[i]:
            ...  # write facts with goap.kernels.semantics.write_field(agents.states, i, ...)

    def sense(self, brain):
        brain.launcher.launch_rows(sense_hunger, brain.n_agents, [brain.agents, w, s, m])

A world resets an agent's mind inside a kernel only through the engine's `goap.kernels.agents.clear_mind`,
`set_alive` and `forget_plan`, never by writing the brain's bookkeeping arrays itself. When an action is DONE the
brain applies its symbolic effects to ``states`` after ``act``; the next ``sense`` may overwrite any fact the
world knows better (a position, an inventory the world keeps itself).

**Why an action failed.** A world that reports FAILED may say why in ``fail_reason`` (int32, one per agent): a
code of `FAIL_REASONS` (0 is "none"), written with the FAILED status (`goap.explain` reads it the tick the action
failed; a stale code is never shown). A world with reasons of its own sets ``FAIL_REASONS`` on its class to
its own table (code = index, 0 "none"); the built-in worlds use the shared one:

=====================  ==================================================================================
reason                 what the world saw
=====================  ==================================================================================
``target_lost``        the target died, left sight or was never there
``target_in_cover``    the target holds cover against this agent
``out_of_ammo``        a consumable ran out (ammo, magazines, grenades, a medkit, a site's stock)
``out_of_range``       the target is too far (or too near) for the action
``site_taken``         the site (a cover slot, a work place) went to another agent
``no_free_site``       no free site within reach
``timed_out``          the move or the work took longer than the world allows
``not_at_site``        the agent is not where the action must happen
``not_ready``          the agent's own state forbids it (weapon drawn or not, too hurt)
``dead``               the agent died during the action
=====================  ==================================================================================

**How often its agents replan.** ``replan_rate`` (optional, a fraction in (0, 1]; default
`DEFAULT_REPLAN_RATE`) says what share of its agents a world expects to ask for a plan in a tick. ``goap run``,
``goap explain --world`` and ``goap view`` size their default plan budget to it (`default_plan_budget`): a
budget below the rate leaves agents waiting for plans, idle, however cheap the searches are.

``sensed_facts`` names the facts the world writes in ``sense``: ``goap validate --world NAME`` treats them as
free (any value) when it asks which actions and goals can ever happen. Facts a sensor registered with
`goap.runtime.Brain.add_sensor` writes are added to ``brain.sensed_facts``.

**Objective.** A world may say what its agents are for as a whole: ``score()["objective"]``, one scalar it tries
to raise, per agent-minute (a village's goods less its hunger, a battle's control and kills less deaths), and
``contribution(brain)``, a float32 [N] device array of each agent's running contribution to it (what its own
actions earned, and lost). The objective's change over a run is the sum of the contributions' changes; outcome
logging records, for every goal pursued, how much the agent's contribution changed until the goal was reached
or abandoned (`goap.outcomes`), which is what a learned goal selector is trained to raise.

**Capture.** ``capturable = True`` says that ``sense`` and ``act`` only launch device work (kernels, scans,
sorts, memsets): no host reads, no copies from host data, and no per-tick value passed as a Python scalar (a
scalar launch argument is baked into a captured graph: read the tick from ``brain.clock``, a device array). A
brain made with ``capture=True`` records them into its graphs and refuses a world that does not declare it.
``graph_key()`` returns every parameter the world's launches bake in (rates, speeds); the brain re-captures when
it changes (without it, the world's public scalar attributes are the key).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from goap.codes import ActionStatus
from goap.domain import Domain

if TYPE_CHECKING:
    from goap.runtime import Brain

RUNNING, DONE, FAILED = (int(s) for s in ActionStatus)

#: Why an action FAILED (``fail_reason``; code = index, 0: none): the shared table, see the module docstring.
FAIL_REASONS: tuple[str, ...] = (
    "none", "target_lost", "target_in_cover", "out_of_ammo", "out_of_range", "site_taken", "no_free_site",
    "timed_out", "not_at_site", "not_ready", "dead",
)


#: The share of its agents a world that does not say (``replan_rate``) is expected to replan per tick.
DEFAULT_REPLAN_RATE = 0.1


def default_plan_budget(world: Any, n_agents: int) -> int:
    """The plan budget the commands use when none is given: ``replan_rate`` of the agents (at least 256)."""
    rate = getattr(world, "replan_rate", DEFAULT_REPLAN_RATE)
    if isinstance(rate, bool) or not isinstance(rate, int | float | np.integer | np.floating) or not 0 < rate <= 1:
        raise ValueError(f"world '{getattr(world, 'name', world)}': replan_rate must be a number in (0, 1], got "
                         f"{rate!r}")
    return max(256, int(np.ceil(rate * int(n_agents))))


def fail_reason_code(name: str, reasons: tuple[str, ...] = FAIL_REASONS) -> int:
    """The code of failure reason ``name`` (ValueError naming the reasons otherwise)."""
    if name not in reasons:
        raise ValueError(f"unknown failure reason '{name}'; reasons are {', '.join(reasons[1:])}")
    return reasons.index(name)


@runtime_checkable
class World(Protocol):
    name: str
    domain: Domain
    sensed_facts: tuple[str, ...]

    def reset(self, brain: Brain, seed: int) -> None:
        """Lay out the world for ``brain.n_agents`` agents and write their starting facts."""

    def sense(self, brain: Brain) -> None:
        """Write facts (and optionally costs, enabled masks, priorities) for every agent."""

    def act(self, brain: Brain, dt: float) -> None:
        """Advance every agent's ``brain.action`` (-1: idle) and set ``brain.action_status``."""

    def score(self) -> dict[str, float]:
        """The world's own measures of how well the agents do, for summaries (``"objective"``: see above)."""

    def get_state(self) -> dict[str, np.ndarray]:
        """Host copies of every array that defines the world now (RNG state included), for snapshots and hashes."""

    def set_state(self, arrays: dict[str, Any]) -> None:
        """Restore what `get_state` returned: check every array first (raise ValueError naming it), then write."""


class EngineWorld:
    """A world of a few kernel lines, to measure and test the engine apart from any game.

    Every action takes ``duration`` ticks and then fails with probability ``fail_p`` (else it is DONE); each tick
    each agent's facts drift with probability ``drift_p`` (one fact, chosen at random, takes a random value), so
    plans go stale and agents replan. Random numbers come from per-agent counters (seed, tick, agent), so a run
    does not depend on thread count.
    """

    name = "engine"
    capturable = True

    def __init__(self, domain: Domain, duration: int = 3, drift_p: float = 0.01, fail_p: float = 0.0):
        if duration < 1:
            raise ValueError(f"duration must be >= 1, got {duration}")
        if not 0 <= drift_p <= 1 or not 0 <= fail_p <= 1:
            raise ValueError("drift_p and fail_p must be probabilities in [0, 1]")
        self.domain = domain
        self.duration = int(duration)
        self.drift_p = float(drift_p)
        self.fail_p = float(fail_p)
        self.sensed_facts: tuple[str, ...] = ()
        self.seed = 0
        self._tick = None
        self._layout = None

    def reset(self, brain: Brain, seed: int) -> None:
        import warp as wp

        self.seed = int(seed) & 0x7FFFFFFF
        self._tick = wp.zeros(1, dtype=wp.int64, device=brain.device)
        L = brain.tables.layout
        hi = np.array([f.max - f.min for f in self.domain.facts], dtype=np.uint64)
        self._layout = tuple(
            wp.array(x if len(x) else np.zeros(1, x.dtype), device=brain.device)
            for x in (L.word.astype(np.int32), L.shift.astype(np.int32), L.mask, hi)
        )
        self._n_facts = len(self.domain.facts)

    def sense(self, brain: Brain) -> None:
        from goap.kernels.engine_world import drift_facts

        if brain.n_agents and self._n_facts and self.drift_p > 0:
            brain.launcher.launch(drift_facts, brain.n_agents, [
                self.seed, self._tick, self.drift_p, brain.agents, *self._layout, self._n_facts,
            ])

    def act(self, brain: Brain, dt: float) -> None:
        from goap.kernels.engine_world import advance_actions, count_tick

        if brain.n_agents:
            brain.launcher.launch(advance_actions, brain.n_agents, [
                self.seed, self._tick, self.duration, self.fail_p, brain.agents,
            ])
        brain.launcher.launch(count_tick, 1, [self._tick])

    def graph_key(self) -> tuple:
        """The parameters its launches bake in (a captured brain re-captures when one changes)."""
        return (self.seed, self.duration, self.drift_p, self.fail_p)

    def score(self) -> dict[str, float]:
        return {}

    def get_state(self) -> dict[str, np.ndarray]:
        return {"tick": self._tick.numpy().copy()}

    def set_state(self, arrays: dict[str, Any]) -> None:
        tick = arrays.get("tick")
        if not isinstance(tick, np.ndarray) or tick.shape != (1,) or tick.dtype != np.int64:
            raise ValueError("field 'tick' must be int64 [1]")
        self._tick.assign(tick)

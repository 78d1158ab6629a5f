"""Brain: every agent's state, goal and plan in Warp arrays on one device, advanced one tick at a time.

The per-agent arrays are `goap.state.AgentArrays` (the table of every array, its shape, dtype and writer is in
`goap.state`); ``brain.states``, ``brain.goal``, ... are those arrays on ``brain.device``, and ``brain.agents`` is
all of them as one `goap.kernels.agents.Agents` struct for kernels. On the CPU device ``brain.states.numpy()`` is
a zero-copy numpy view; ``wp.to_torch(brain.goal)`` a zero-copy torch view.

One tick (`Brain.tick`) runs its stages in a fixed order, each Warp work on the device (`goap.kernels.tick`);
only the tick's counters (a few dozen integers) come back to the host:

1. **sense**: the world writes facts into ``states`` (and may write ``costs``, ``enabled``, ``priorities``).
2. **decide** (one pass over the agents): *select*: each agent takes its highest-scoring goal that is not
   satisfied, not cooling down and of priority > 0 (ties go to the lower goal index; the goal being pursued gets
   ``goal_hysteresis`` extra), or the goal pinned with `set_goal`; reaching the current goal counts as an
   achievement. *validate*: an agent needs a plan when its goal changed, its plan finished without reaching the
   goal, its last action failed, or its current action's preconditions no longer hold (or it was disabled).
3. **plan**: the requests are compacted on the device (a scan) and, when more agents ask than ``plan_budget``
   allows, ordered longest waiting first, then by goal priority, then by index (two stable radix sorts, under a
   device-side condition). The planner reads the brain's arrays and writes plans straight into them. A failed
   search puts that goal on cooldown for ``cooldown_ticks`` ticks; a search that outgrew its node pool is deferred
   to a later tick with a larger pool (no cooldown); a plan longer than the plan buffer arrives in segments.
4. **act**: each agent's current action (``action``, always ``plan[step]``) starts or continues; the world
   advances it and reports RUNNING, DONE or FAILED in ``action_status``; a DONE action's symbolic effects are
   applied and the next step becomes the current action.
5. **metrics**: the tick's counters are read once; stage times go into bounded running statistics.

With ``capture=True`` the tick is recorded as graphs and replayed, on the CPU and on CUDA alike
(`goap.runtime.pipeline`). Settings are one dataclass, `BrainConfig`.

Without a world the game drives the actions: after `tick`, ``brain.action`` holds what each agent should be
doing; the game sets ``brain.action_status`` to DONE or FAILED when it is (RUNNING until then, for as many ticks
as the action takes), and the next `tick` takes it from there.

Events: ``brain.events`` gives the last tick's per-agent masks (``brain.events.action_finished`` is a bool array
on the device; ``brain.events.agents("goal_achieved")`` the host indices).
"""

from goap.codes import CAUSES, EVENTS
from goap.launch import CaptureError
from goap.runtime.brain import Brain
from goap.runtime.config import BrainConfig
from goap.runtime.facts import FactSlot
from goap.runtime.inspection import BrainError, Events
from goap.runtime.pipeline import STAGES, TickStats
from goap.runtime.snapshots import SnapshotError
from goap.state import FIELDS

__all__ = [
    "Brain", "BrainConfig", "BrainError", "CAUSES", "CaptureError", "EVENTS", "Events", "FactSlot", "FIELDS",
    "SnapshotError", "STAGES", "TickStats",
]

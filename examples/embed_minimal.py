"""Embedding the Brain in your own game loop, with a tiny world written right here as Warp kernels.

Villagers get hungry; food grows in a field some distance from home. The world's kernels make them hungrier,
walk them, report when actions finish and tell the planner how far the field is (a per-agent action cost).
The game loop reads one fact by name, reacts to events, and interrupts a few agents, as a game would. The world's
kernels take the agents as one struct (``agents: Agents``) and launch through ``brain.launcher``; nothing in them
reads the host, so ``--capture`` records the whole tick as graphs (on the CPU as on a GPU) and replays them.

    python examples/embed_minimal.py --agents 2000 --ticks 120 --device cpu [--capture]
"""

from __future__ import annotations

import argparse

import numpy as np
import warp as wp

from goap import DomainBuilder
from goap.kernels.agents import Agents
from goap.kernels.semantics import read_field, write_field
from goap.runtime import Brain
from goap.world import DONE

DOMAIN = (
    DomainBuilder("hungry")
    .int("hunger", 0, 3, default=3)
    .int("food", 0, 2)
    .enum("at", ["home", "field"])
    .action("walk_to_field", cost=1, pre={"at": "home"}, effects={"at": "field"})
    .action("walk_home", cost=1, pre={"at": "field"}, effects={"at": "home"})
    .action("harvest", cost=1, pre={"at": "field", "food": "< 2"}, effects={"food": "+= 1"})
    .action("eat", cost=1, pre={"at": "home", "food": "> 0"}, effects={"food": "-= 1", "hunger": "-= 2"})
    .goal("fed", want={"hunger": "<= 1"}, priority=10)
    .goal("stocked", want={"food": 2, "at": "home"}, priority=1)
    .build()
)
WALK_TO, WALK_HOME, FED = 0, 1, 0  # indices in DOMAIN


@wp.kernel
def sense(agents: Agents, clock: wp.array(dtype=wp.int64), word: int, shift: int, mask: wp.uint64,
          distance: wp.array(dtype=wp.float32)):
    i = wp.tid()
    if not agents.alive[i]:
        return
    hunger = read_field(agents.states, i, word, shift, mask)  # encoded: hunger - 0
    if clock[0] % wp.int64(20) == wp.int64(19) and hunger < wp.uint64(3):  # hungrier every 20 ticks
        hunger = hunger + wp.uint64(1)
        write_field(agents.states, i, word, shift, mask, hunger)
    agents.costs[i, WALK_TO] = distance[i]  # far fields make walking expensive
    agents.costs[i, WALK_HOME] = distance[i]
    agents.priorities[i, FED] = 4.0 * float(hunger)


@wp.kernel
def act(agents: Agents, distance: wp.array(dtype=wp.float32)):
    i = wp.tid()
    a = agents.action[i]
    if a < 0:
        return
    if a == WALK_TO or a == WALK_HOME:
        if float(agents.action_ticks[i] + 1) >= distance[i]:
            agents.action_status[i] = wp.int8(DONE)  # arrived
    else:
        agents.action_status[i] = wp.int8(DONE)  # harvesting and eating take one tick


class HungryWorld:
    """Two kernels over ``brain.agents`` (every per-agent array as one struct) and one array of its own. It reads
    the tick from ``brain.clock`` (a device array), so its launches can be captured into the brain's graphs."""

    name = "hungry"
    domain = DOMAIN
    sensed_facts = ("hunger",)
    capturable = True  # sense and act only launch kernels

    def reset(self, brain: Brain, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.distance = wp.array(rng.uniform(2, 10, brain.n_agents).astype(np.float32), device=brain.device)
        self.hunger = brain.fact_slot("hunger")

    def sense(self, brain: Brain) -> None:
        s = self.hunger
        brain.launcher.launch(sense, brain.n_agents, [brain.agents, brain.clock, s.word, s.shift,
                                                      wp.uint64(s.mask), self.distance])

    def act(self, brain: Brain, dt: float) -> None:
        brain.launcher.launch(act, brain.n_agents, [brain.agents, self.distance])

    def score(self) -> dict[str, float]:
        return {}

    def get_state(self) -> dict[str, np.ndarray]:
        return {"distance": self.distance.numpy().copy()}

    def set_state(self, arrays: dict) -> None:
        d = arrays.get("distance")
        if not isinstance(d, np.ndarray) or d.shape != tuple(self.distance.shape) or d.dtype != np.float32:
            raise ValueError("field 'distance' must be float32 of the brain's size")
        if not np.isfinite(d).all() or (d <= 0).any():
            raise ValueError("field 'distance' must hold finite distances > 0")
        self.distance.assign(d)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=2000)
    ap.add_argument("--ticks", type=int, default=120)
    ap.add_argument("--device", default=None)
    ap.add_argument("--capture", action="store_true", help="record the tick as graphs and replay them")
    args = ap.parse_args()

    brain = Brain(DOMAIN, args.agents, world=HungryWorld(), device=args.device, plan_budget=1000,
                  capture=args.capture)
    meals = 0
    for t in range(args.ticks):  # your game loop: one brain.tick() per frame or per AI step
        brain.tick(dt=1.0)
        meals += brain.events.count("goal_achieved")  # events: no diffing of arrays
        if t == 60:
            brain.set_goal([0, 1, 2], "stocked")  # a command: these three stock up, whatever their hunger
            brain.replan(np.arange(3, 10), cause="commanded")  # an interrupt: drop plans, plan again next tick
    hunger = brain.read_fact("hunger").numpy()  # one fact by name, as a device array
    s = brain.summary(warmup=10)
    print(f"{args.ticks} ticks, {s['ms_per_tick']['mean']:.2f} ms/tick, {meals} goals reached, "
          f"mean hunger {hunger.mean():.2f}, idle {s['idle_fraction']:.0%}, "
          f"{brain.host_bytes_per_tick} bytes read from the device a tick")
    goal = int(brain.goal.numpy()[0])
    print(f"agent 0 pursues '{DOMAIN.goals[goal].name if goal >= 0 else '-'}', plan {brain.agent_plan(0)}, "
          f"doing {DOMAIN.actions[a].name if (a := int(brain.action.numpy()[0])) >= 0 else 'nothing'}, "
          f"state {brain.tables.describe(brain.states.numpy()[0])}")


if __name__ == "__main__":
    main()

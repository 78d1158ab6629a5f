"""Embedding the Brain in your own game loop, with a tiny world written right here as Warp kernels.

Villagers get hungry; food grows in a field some distance from home. The world's kernels make them hungrier,
walk them, report when actions finish and tell the planner how far the field is (a per-agent action cost).
The game loop reads one fact by name, reacts to events, and interrupts a few agents, as a game would.

    python examples/embed_minimal.py --agents 2000 --ticks 120 --device cpu
"""

from __future__ import annotations

import argparse

import numpy as np
import warp as wp

from goap import DomainBuilder
from goap.kernels.semantics import read_field, write_field
from goap.runtime import Brain

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
def sense(states: wp.array2d(dtype=wp.uint64), tick: int, word: int, shift: int, mask: wp.uint64,
          distance: wp.array(dtype=wp.float32), costs: wp.array2d(dtype=wp.float32),
          priorities: wp.array2d(dtype=wp.float32)):
    i = wp.tid()
    hunger = read_field(states, i, word, shift, mask)  # encoded: hunger - 0
    if tick % 20 == 0 and hunger < wp.uint64(3):  # everyone gets hungrier every 20 ticks
        hunger = hunger + wp.uint64(1)
        write_field(states, i, word, shift, mask, hunger)
    costs[i, WALK_TO] = distance[i]  # far fields make walking expensive
    costs[i, WALK_HOME] = distance[i]
    priorities[i, FED] = 4.0 * float(hunger)


@wp.kernel
def act(action: wp.array(dtype=wp.int32), action_ticks: wp.array(dtype=wp.int32),
        distance: wp.array(dtype=wp.float32), status: wp.array(dtype=wp.int8)):
    i = wp.tid()
    a = action[i]
    if a < 0:
        return
    if a == WALK_TO or a == WALK_HOME:
        if float(action_ticks[i] + 1) >= distance[i]:
            status[i] = wp.int8(1)  # DONE: arrived
    else:
        status[i] = wp.int8(1)  # harvesting and eating take one tick


class HungryWorld:
    name = "hungry"
    domain = DOMAIN
    sensed_facts = ("hunger",)
    capturable = False  # sense passes the tick number as an argument

    def reset(self, brain: Brain, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.distance = wp.array(rng.uniform(2, 10, brain.n_agents).astype(np.float32), device=brain.device)
        self.hunger = brain.fact_slot("hunger")
        self.ticks = 0

    def sense(self, brain: Brain) -> None:
        self.ticks += 1
        s = self.hunger
        wp.launch(sense, brain.n_agents, [brain.states, self.ticks, s.word, s.shift, wp.uint64(s.mask),
                                          self.distance, brain.costs, brain.priorities], device=brain.device)

    def act(self, brain: Brain, dt: float) -> None:
        wp.launch(act, brain.n_agents, [brain.action, brain.action_ticks, self.distance, brain.action_status],
                  device=brain.device)

    def score(self) -> dict[str, float]:
        return {"ticks": self.ticks}

    def get_state(self) -> dict[str, np.ndarray]:
        return {"distance": self.distance.numpy().copy(), "ticks": np.array(self.ticks)}

    def set_state(self, arrays: dict) -> None:
        if arrays["distance"].shape != tuple(self.distance.shape):
            raise ValueError("field 'distance' has the wrong shape")
        self.distance.assign(arrays["distance"])
        self.ticks = int(arrays["ticks"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=2000)
    ap.add_argument("--ticks", type=int, default=120)
    ap.add_argument("--device", default=None)
    args = ap.parse_args()

    brain = Brain(DOMAIN, args.agents, world=HungryWorld(), device=args.device, plan_budget=1000)
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
          f"mean hunger {hunger.mean():.2f}, idle {s['idle_fraction']:.0%}")
    goal = int(brain.goal.numpy()[0])
    print(f"agent 0 pursues '{DOMAIN.goals[goal].name if goal >= 0 else '-'}', plan {brain.agent_plan(0)}, "
          f"doing {DOMAIN.actions[a].name if (a := int(brain.action.numpy()[0])) >= 0 else 'nothing'}, "
          f"state {brain.tables.describe(brain.states.numpy()[0])}")


if __name__ == "__main__":
    main()

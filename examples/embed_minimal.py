"""Embedding the Brain in your own game loop, with a tiny world written right here.

Villagers get hungry; food grows in a field some distance from home. The world moves them, reports when
actions finish, and tells the planner how far the field is (a per-agent action cost). Everything per agent is
numpy over arrays: no Python loop over agents.

    python examples/embed_minimal.py --agents 2000 --ticks 120 --device cpu
"""

from __future__ import annotations

import argparse

import numpy as np

from goap import DomainBuilder
from goap.runtime import Brain
from goap.world import DONE, RUNNING

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


class HungryWorld:
    name = "hungry"
    domain = DOMAIN

    def reset(self, brain: Brain, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.distance = rng.uniform(2, 10, brain.n_agents).astype(np.float32)  # home to field, in ticks of walking
        self.progress = np.zeros(brain.n_agents, np.float32)
        self.ticks = 0

    def sense(self, brain: Brain) -> None:
        self.ticks += 1
        values = brain.tables.unpack_states(brain.states)
        hunger = brain.domain.fact_index("hunger")
        if self.ticks % 20 == 0:  # everyone gets hungrier every 20 ticks
            values[:, hunger] = np.minimum(values[:, hunger] + 1, 3)
            brain.states[:] = brain.tables.pack_states(values)
        walks = [brain.domain.action_index("walk_to_field"), brain.domain.action_index("walk_home")]
        brain.costs[:, walks] = self.distance[:, None]  # far fields make walking expensive
        brain.priorities[:, brain.domain.goal_index("fed")] = 4.0 * values[:, hunger]

    def act(self, brain: Brain, dt: float) -> None:
        walking = np.isin(brain.action, [brain.domain.action_index(a) for a in ("walk_to_field", "walk_home")])
        self.progress = np.where(walking, self.progress + dt, 0.0).astype(np.float32)
        arrived = walking & (self.progress >= self.distance)
        brain.action_status[:] = RUNNING
        brain.action_status[(brain.action >= 0) & ~walking] = DONE  # harvesting and eating take one tick
        brain.action_status[arrived] = DONE

    def score(self) -> dict[str, float]:
        return {"ticks": self.ticks}

    def get_state(self) -> dict[str, np.ndarray]:
        return {"distance": self.distance, "progress": self.progress, "ticks": np.array(self.ticks)}

    def set_state(self, arrays: dict) -> None:
        self.distance[...], self.progress[...] = arrays["distance"], arrays["progress"]
        self.ticks = int(arrays["ticks"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=2000)
    ap.add_argument("--ticks", type=int, default=120)
    ap.add_argument("--device", default=None)
    args = ap.parse_args()

    brain = Brain(DOMAIN, args.agents, world=HungryWorld(), device=args.device, plan_budget=1000)
    for _ in range(args.ticks):  # your game loop: one brain.tick() per frame or per AI step
        brain.tick(dt=1.0)
    s = brain.summary(warmup=10)
    print(f"{args.ticks} ticks, {s['ms_per_tick']['mean']:.2f} ms/tick; counters: {s['counters']}")
    print(f"agent 0 wants '{brain.domain.goals[brain.goal[0]].name if brain.goal[0] >= 0 else '-'}', "
          f"plan {brain.agent_plan(0)}, state {brain.tables.describe(brain.states[0])}")


if __name__ == "__main__":
    main()

"""Two kinds of agent in one brain: guards and medics of a camp (examples/camp.toml).

The domain file declares both types (which actions and goals each may use, a cost multiplier, priorities and
default facts), a non-interruptible action (``rest``, ``heal``: once started they run to their end) and walking
that costs more the more tired the walker is (``cost = { base = 1, per = { fatigue = 0.5 } }``, evaluated in the
state the planner expands). The game spawns both types, grows hunger and fatigue with a sensor that visits each
agent every 10 ticks (staggered), sounds an alarm that sends the guards of one zone to their posts, and listens to
interruptions with ``brain.on``: once per tick, with the agents as a device list, never once per agent. Nothing
in the loop reads an array of all agents back: the script prints the bytes a tick read from the device.

    python examples/embed_types.py --agents 10000 --ticks 300 --device cpu [--capture]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import warp as wp

from goap import load_domain
from goap.kernels.agents import Agents
from goap.kernels.semantics import read_field, write_field
from goap.runtime import Brain
from goap.world import DONE

DOMAIN = load_domain(Path(__file__).with_name("camp.toml"))
A = {a.name: i for i, a in enumerate(DOMAIN.actions)}
#: Ticks each action takes in the world.
DURATION = {"walk_post": 3, "walk_camp": 3, "walk_infirmary": 3, "eat": 1, "rest": 6, "take_kit": 1, "heal": 4}


@wp.func
def noise(seed: int, tick: wp.int64, i: int) -> float:
    """A uniform number in [0, 1) from (seed, tick, agent): the same whatever the thread order."""
    state = wp.rand_init(seed, int(tick) * 1_000_003 + i)
    return wp.randf(state)


@wp.kernel
def wounded(agents: Agents, clock: wp.array(dtype=wp.int64), seed: int, medic: int, p: float, word: int,
            shift: int, mask: wp.uint64):
    """A medic now and then hears of a wounded soldier close by (the fact the world senses)."""
    i = wp.tid()
    if not agents.alive[i] or agents.agent_type[i] != medic:
        return
    if noise(seed, clock[0], i) < p:
        write_field(agents.states, i, word, shift, mask, wp.uint64(1))


@wp.kernel
def grow_needs(agents: Agents, rows: wp.array(dtype=wp.int32), word_h: int, shift_h: int, mask_h: wp.uint64,
               top_h: wp.uint64, word_f: int, shift_f: int, mask_f: wp.uint64, top_f: wp.uint64):
    """The sensor: the agents due this tick get hungrier and more tired (bounded by each fact's top)."""
    i = rows[wp.tid()]
    if i < 0 or not agents.alive[i]:
        return
    h = read_field(agents.states, i, word_h, shift_h, mask_h)
    if h < top_h:
        write_field(agents.states, i, word_h, shift_h, mask_h, h + wp.uint64(1))
    f = read_field(agents.states, i, word_f, shift_f, mask_f)
    if f < top_f:
        write_field(agents.states, i, word_f, shift_f, mask_f, f + wp.uint64(1))


@wp.kernel
def act(agents: Agents, duration: wp.array(dtype=wp.int32)):
    """Each action takes its duration in ticks, then is DONE (the brain applies its effects)."""
    i = wp.tid()
    a = agents.action[i]
    if a < 0 or not agents.alive[i]:
        return
    if agents.action_ticks[i] + 1 >= duration[a]:
        agents.action_status[i] = wp.int8(DONE)


class CampWorld:
    """Sense: wounded soldiers appear near medics. Act: actions last their duration. Needs grow by a sensor."""

    name = "camp"
    domain = DOMAIN
    sensed_facts = ("wounded_near",)
    capturable = True

    def reset(self, brain: Brain, seed: int) -> None:
        self.seed = int(seed)
        self.duration = wp.array(np.array([DURATION[a.name] for a in DOMAIN.actions], np.int32), device=brain.device)
        self.medic = brain.type_index("medic")
        self.slot = brain.fact_slot("wounded_near")
        h, f = brain.fact_slot("hunger"), brain.fact_slot("fatigue")
        needs = [h.word, h.shift, wp.uint64(h.mask), wp.uint64(h.top), f.word, f.shift, wp.uint64(f.mask),
                 wp.uint64(f.top)]
        brain.add_sensor(lambda b, rows: b.launcher.launch(grow_needs, rows.shape[0], [b.agents, rows, *needs]),
                         every=10, facts=("hunger", "fatigue"), name="needs")

    def sense(self, brain: Brain) -> None:
        s = self.slot
        brain.launcher.launch(wounded, brain.n_agents, [brain.agents, brain.clock, self.seed, self.medic, 0.01,
                                                        s.word, s.shift, wp.uint64(s.mask)])

    def act(self, brain: Brain, dt: float) -> None:
        brain.launcher.launch(act, brain.n_agents, [brain.agents, self.duration])

    def graph_key(self) -> tuple:
        return (self.seed, self.medic)

    def score(self) -> dict[str, float]:
        return {}

    def get_state(self) -> dict[str, np.ndarray]:
        return {}

    def set_state(self, arrays: dict) -> None:
        if arrays:
            raise ValueError(f"the camp world keeps no arrays; got {', '.join(sorted(arrays))}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=10000)
    ap.add_argument("--ticks", type=int, default=300)
    ap.add_argument("--medics", type=float, default=0.3, help="fraction of the agents that are medics")
    ap.add_argument("--device", default=None)
    ap.add_argument("--capture", action="store_true", help="record the tick as graphs and replay them")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    brain = Brain(DOMAIN, args.agents, world=CampWorld(), device=args.device, n_alive=0, capture=args.capture,
                  seed=args.seed, plan_budget=max(256, args.agents // 4))
    n_medics = int(args.agents * args.medics)
    brain.spawn(args.agents - n_medics, agent_type="guard")
    brain.spawn(n_medics, agent_type="medic")  # starts at the infirmary: the type's default fact
    zone = wp.array(np.arange(0, args.agents, 4, dtype=np.int32), device=brain.device)  # one guard zone in four
    interrupted = {"ticks": 0, "agents": 0}

    def on_interrupted(b: Brain, agents) -> None:  # once per tick, with a device list of the agents
        interrupted["ticks"] += 1
        interrupted["agents"] += agents.shape[0]

    brain.on("action_interrupted", on_interrupted)
    bytes_read = []
    for t in range(args.ticks):
        brain.tick()
        bytes_read.append(brain.host_bytes_per_tick)
        if t % 50 == 25:  # the alarm: the zone's agents drop what they do (unless resting or healing)
            brain.replan(zone)
    s = brain.summary(warmup=10)
    c = brain.counters
    done = brain.action_counts
    print(f"{args.agents} agents ({args.agents - n_medics} guards, {n_medics} medics), {args.ticks} ticks: "
          f"{s['ms_per_tick']['mean']:.2f} ms/tick, {int(np.median(bytes_read))} bytes read from the "
          f"device a tick, idle {s['idle_fraction']:.0%}")
    print(f"goals reached {c['goals_achieved']}, plans {c['plans_made']}, interrupted actions "
          f"{c['actions_interrupted']} ({interrupted['agents']} reported in {interrupted['ticks']} callbacks), "
          f"commanded replans {c['replan_commanded']}")
    print("actions done: " + ", ".join(f"{k} {v}" for k, v in done.items()))


if __name__ == "__main__":
    main()

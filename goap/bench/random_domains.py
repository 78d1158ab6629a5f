"""A seeded family of random domains and problems, for testing planners against each other and benchmarking.

Actions are made along random walks, so they chain: each new action's preconditions hold in a state some
earlier walk reached, and its effects lead somewhere new. Goals are conditions that hold ``depth`` steps down
such a walk and not at the start, so they are reachable with plans of about ``depth`` steps. Problems start
from short random walks off the default state.

Options that add the domain format's newer parts, drawn from their own random stream so that the domains without
them stay exactly what they were: ``cost_terms`` (the share of actions whose cost depends on the state, one or two
terms over int or bool facts with coefficients in {-1, -0.5, 0.5, 1, 2}: negative ones exercise the clamp at 0)
and ``n_types`` (agent types, each allowing most actions, scaling some costs by 0.5..2, overriding a priority and
a default fact).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from goap.domain import Domain, DomainBuilder, State


@dataclass(frozen=True)
class RandomProblems:
    """``n`` problems for a domain: start values int64[n, F] and a goal index per problem."""

    domain: Domain
    values: np.ndarray
    goals: np.ndarray


def random_domain(
    seed: int,
    n_facts: int = 16,
    n_actions: int | None = None,
    int_fraction: float = 0.3,
    n_goals: int = 6,
    depth: int = 6,
    max_int: int = 7,
    n_context: int = 1,
    side_effects: float = 0.3,
    chain: int = 3,
    cost_terms: float = 0.0,
    n_types: int = 0,
) -> Domain:
    """A random domain of ``n_facts`` facts (a share of them ints in 0..max_int) and ``n_actions`` actions.

    ``cost_terms``: the share of actions with state-dependent cost terms; ``n_types``: agent types to declare
    (see the module docstring). The same arguments always give the same domain.
    """
    if n_facts < 2:
        raise ValueError("a random domain needs at least 2 facts")
    rng = random.Random(seed)
    extra = random.Random(f"{seed}-extra")  # the optional parts' own stream: the rest stays as it was
    n_actions = n_actions or n_facts
    b = DomainBuilder(f"random-{n_facts}f-{n_actions}a-s{seed}")
    kinds = []
    for i in range(n_facts):
        if rng.random() < int_fraction:
            hi = rng.randint(2, max_int)
            b.int(f"n{i}", 0, hi, default=rng.randint(0, hi))
            kinds.append(hi)
        else:
            b.bool(f"b{i}", default=rng.random() < 0.3)
            kinds.append(0)
    names = [f"n{i}" if hi else f"b{i}" for i, hi in enumerate(kinds)]
    spec = b.spec()["facts"]
    start = tuple(spec[n]["default"] if hi else int(spec[n]) for n, hi in zip(names, kinds, strict=True))

    def condition(i: int, v: int) -> object:
        if not kinds[i]:
            return bool(v)
        op = rng.choice(["==", ">=", "<=", "!=", ">", "<"])
        if op == "!=":
            other = [x for x in range(kinds[i] + 1) if x != v]
            return f"!= {rng.choice(other)}"
        if op == ">" and v > 0:
            return f"> {rng.randint(0, v - 1)}"
        if op == "<" and v < kinds[i]:
            return f"< {rng.randint(v + 1, kinds[i])}"
        if op == ">=":
            return f">= {rng.randint(0, v)}"
        if op == "<=":
            return f"<= {rng.randint(v, kinds[i])}"
        return v

    def effect(i: int, v: int) -> tuple[object, int]:
        if not kinds[i]:
            return (not v), 1 - v
        r = rng.random()
        if r < 0.4 and v < kinds[i]:
            k = rng.randint(1, min(2, kinds[i] - v))
            return f"+= {k}", v + k
        if r < 0.8 and v > 0:
            k = rng.randint(1, min(2, v))
            return f"-= {k}", v - k
        target = rng.choice([x for x in range(kinds[i] + 1) if x != v])
        return target, target

    # Actions come in chains of ``chain`` links, and chains form a tree (three roots, three children each): a
    # chain's first link needs what its parent chain made, so from any state only a few chains can start
    # (the branching stays game-like, whatever the size of the domain) and a
    # chain two levels down is about ``2 * chain`` steps away. Each link also needs ``n_context`` conditions
    # that held at that point of the walk, and some links use up or undo another fact on the way.
    chains: list[tuple[tuple[int, int], State, int]] = []  # (end product, state after it, level)
    n_roots, fan_out = 3, 3
    order = list(range(n_facts))
    rng.shuffle(order)
    mains = iter(order * (n_actions // n_facts + 1))  # each fact is the main product of as few actions as possible
    a = 0
    while a < n_actions:
        parent = (len(chains) - n_roots) // fan_out if len(chains) >= n_roots else None
        state = start if parent is None else chains[parent][1]
        prev = None if parent is None else chains[parent][0]
        for _ in range(min(chain, n_actions - a)):
            main = next(mains)
            context = [i for i in range(n_facts) if i != main and (prev is None or i != prev[0])]
            pre = {names[i]: condition(i, state[i]) for i in rng.sample(context, k=min(len(context), n_context))}
            if prev is not None:
                i, v = prev
                pre[names[i]] = bool(v) if not kinds[i] else v
            effects, nxt = {}, list(state)
            effects[names[main]], nxt[main] = effect(main, state[main])
            if rng.random() < side_effects:
                other = rng.choice([i for i in range(n_facts) if i != main])
                effects[names[other]], nxt[other] = effect(other, state[other])
            b.action(f"a{a}", cost=rng.choice([1, 1, 2, 3, 5]), pre=pre, effects=effects,
                     cost_per=_terms(extra, names, cost_terms))
            a += 1
            state = tuple(nxt)
            prev = (main, state[main])
        chains.append((prev, state, 1 if parent is None else chains[parent][2] + 1))

    # A goal asks for the end of a chain about ``depth`` steps down the tree, sometimes with a second one.
    levels = max(1, round(depth / chain))
    deep = [c for c in chains if c[2] == levels] or [max(chains, key=lambda c: c[2])]
    for g in range(n_goals):
        picks = [rng.choice(deep)] + ([rng.choice(chains)] if rng.random() < 0.3 else [])
        want: dict[str, object] = {}
        for (i, v), _, _ in picks:
            want[names[i]] = bool(v) if not kinds[i] else (f">= {v}" if v > start[i] and rng.random() < 0.5 else v)
        b.goal(f"g{g}", want=want, priority=rng.randint(1, 10))
    for t in range(n_types):
        actions = [f"a{i}" for i in range(n_actions) if extra.random() < 0.8]
        scaled = {f"a{i}": extra.choice([0.5, 1.5, 2]) for i in range(n_actions) if extra.random() < 0.3}
        fact = extra.randrange(n_facts)
        default = extra.randint(0, kinds[fact]) if kinds[fact] else extra.random() < 0.5
        b.agent_type(f"t{t}", actions=actions, cost=scaled, priority={f"g{extra.randrange(n_goals)}": 20},
                     facts={names[fact]: default})
    return b.build()


def _terms(rng: random.Random, names: list[str], share: float) -> dict[str, float] | None:
    """Cost terms for one action (None for most when ``share`` is small, always None when it is 0)."""
    if share <= 0 or rng.random() >= share:
        return None
    picks = rng.sample(range(len(names)), k=min(len(names), rng.choice([1, 1, 2])))
    return {names[i]: rng.choice([-1, -0.5, 0.5, 1, 2]) for i in picks}


def random_problems(domain: Domain, n: int, seed: int, walk: int = 3) -> RandomProblems:
    """``n`` problems: starts from random walks of 0..walk steps off the default state, random goals."""
    rng = random.Random(seed)
    start = domain.default_state()
    pool = [_walk(domain, start, rng.randint(0, walk), rng) for _ in range(min(n, 256))]
    np_rng = np.random.default_rng(seed)
    pick = np_rng.integers(0, len(pool), size=n)
    values = np.asarray(pool, dtype=np.int64).reshape(-1, len(domain.facts))[pick] if n else np.zeros((0, len(start)))
    goals = np_rng.integers(0, len(domain.goals), size=n).astype(np.int32)
    return RandomProblems(domain=domain, values=values.astype(np.int64), goals=goals)


def _walk(domain: Domain, state: State, steps: int, rng: random.Random) -> State:
    for _ in range(steps):
        options = [a for a in domain.actions if domain.is_applicable(state, a)]
        if not options:
            break
        state = domain.apply(state, rng.choice(options))
    return state

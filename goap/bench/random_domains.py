"""A seeded family of random domains and problems, for testing planners against each other and benchmarking.

Actions are made along random walks, so they chain: each new action's preconditions hold in a state some
earlier walk reached, and its effects lead somewhere new. Goals are conditions that hold ``depth`` steps down
such a walk and not at the start, so they are reachable with plans of about ``depth`` steps. Problems start
from short random walks off the default state.
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
) -> Domain:
    """A random domain of ``n_facts`` facts (a share of them ints in 0..max_int) and ``n_actions`` actions.

    The same arguments always give the same domain.
    """
    if n_facts < 2:
        raise ValueError("a random domain needs at least 2 facts")
    rng = random.Random(seed)
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

    # Actions come in chains of ``depth``: each link needs what the previous link made (plus a few
    # conditions that held at that point of the walk) and makes the next fact; side effects can undo
    # other chains' progress, which is what makes the search non-trivial.
    chain_ends: list[tuple[int, int]] = []
    a = 0
    while a < n_actions:
        state = start
        prev: tuple[int, int] | None = None
        for _ in range(min(depth, n_actions - a)):
            pre_facts = rng.sample(range(n_facts), k=min(n_facts, rng.randint(2, 4)))
            pre = {names[i]: condition(i, state[i]) for i in pre_facts}
            if prev is not None:
                i, v = prev
                pre[names[i]] = bool(v) if not kinds[i] else v
            main = rng.choice([i for i in range(n_facts) if prev is None or i != prev[0]])
            side = rng.sample(range(n_facts), k=min(n_facts, rng.randint(0, 2)))
            effects, nxt = {}, list(state)
            for i in [main, *[x for x in side if x != main]]:
                effects[names[i]], nxt[i] = effect(i, state[i])
            b.action(f"a{a}", cost=rng.choice([1, 1, 2, 3, 5]), pre=pre, effects=effects)
            a += 1
            state = tuple(nxt)
            prev = (main, state[main])
        chain_ends.append((prev, state))

    for g in range(n_goals):
        (i, v), far = chain_ends[g % len(chain_ends)]
        want = {names[i]: bool(v) if not kinds[i] else v}
        extra = [j for j in range(n_facts) if far[j] != start[j] and j != i]
        for j in rng.sample(extra, k=min(len(extra), rng.randint(0, 2))):
            if kinds[j] and rng.random() < 0.5:
                want[names[j]] = f">= {far[j]}" if far[j] > start[j] else f"<= {far[j]}"
            else:
                want[names[j]] = bool(far[j]) if not kinds[j] else far[j]
        b.goal(f"g{g}", want=want, priority=rng.randint(1, 10))
    return b.build()


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

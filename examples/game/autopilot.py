"""A simple wolf that plays itself: it runs at the nearest villager outside the shelters, away from the guards
that chase it, and howls now and then.

It plays through `Game.press` like a player, so a run with ``--autopilot --record FILE`` writes a script that
replays the same game (``examples/game/demo.json`` was recorded so). It reads the agents' positions back each
frame (8 bytes an agent): a demo and test tool, not something a game would do every frame.
"""

from __future__ import annotations

import numpy as np

from examples.game import world as W
from examples.game.game import HOWL_RADIUS

HOWL_EVERY = 150  # frames at least between two howls
HOWL_CROWD = 25  # villagers outside the shelters within half the howl's radius worth a howl
DEAD_ZONE = 0.3  # of the wanted direction's length: below it on an axis, the wolf does not move along it
WARY = 25.0  # world units: chasing guards closer than this push the wolf away


class Autopilot:
    """Chooses the keys held down for each frame of ``game``."""

    def __init__(self, game):
        self.game = game
        self.role = np.asarray(game.world.role_host)
        self.shelters = game.world.map["shelters"]
        self.last_howl = -HOWL_EVERY

    def keys(self, frame: int) -> set[str]:
        g = self.game
        pos = g.positions()
        alive = g.brain.alive.numpy()
        safe = np.linalg.norm(pos[:, None, :] - self.shelters[None], axis=2).min(axis=1) < W.SHELTER_RADIUS + 4
        prey = (self.role == W.VILLAGER) & alive & ~safe
        want: set[str] = set()
        direction = np.zeros(2)
        if prey.any():
            d = np.where(prey, np.linalg.norm(pos - g.wolf, axis=1), np.inf)
            to = pos[int(d.argmin())] - g.wolf
            direction += to / max(float(np.linalg.norm(to)), 1e-6)
        chasing = (self.role == W.GUARD) & alive & (g.brain.action.numpy() == W.CHASE)
        away = g.wolf - pos[chasing]
        dist = np.linalg.norm(away, axis=1)
        close = dist < WARY
        if close.any():  # each close chaser pushes harder the closer it is
            push = (WARY - dist[close]) / WARY / np.maximum(dist[close], 1e-6)
            direction += 2.0 * (away[close] * push[:, None]).sum(axis=0)
        n = float(np.linalg.norm(direction))
        if n > 1e-6:
            dx, dy = direction / n
            if dx > DEAD_ZONE:
                want.add("right")
            elif dx < -DEAD_ZONE:
                want.add("left")
            if dy > DEAD_ZONE:
                want.add("down")
            elif dy < -DEAD_ZONE:
                want.add("up")
        crowd = int((prey & (np.linalg.norm(pos - g.wolf, axis=1) < HOWL_RADIUS / 2)).sum())
        if frame - self.last_howl >= HOWL_EVERY and crowd >= HOWL_CROWD:
            want.add("howl")
            self.last_howl = frame
        return want

    def play(self, frame: int) -> None:
        """Press and release keys so that the held ones are `keys` for this frame."""
        g = self.game
        want = self.keys(frame)
        for k in sorted(g.held - want):
            g.press(k, False)
        for k in sorted(want - g.held):
            g.press(k, True)

"""The view hooks a world gives the viewer: what its map looks like and what is copied per frame.

Pure numpy, no pygame, so a world package can import it without the viewer installed. A world opts in by
defining ``make_view(self) -> WorldView`` (usually a subclass of `WorldView` in its own ``view.py``); a world
without one gets `WorldView`, which only needs ``positions`` [N, 2].

A view turns a world's public attributes into things the renderer draws: the world's extent, a background
image (terrain) or floor colour, wall rectangles, site groups with a shape and a colour, and per-agent arrays
(team, alive) that are snapshotted with the positions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class SiteGroup:
    """Static points drawn as one kind of icon (``shape``: square, circle, diamond, ring, triangle, house)."""

    label: str
    points: np.ndarray  # float32 [K, 2], world units
    colour: tuple[int, int, int]
    shape: str
    size: float = 0.7  # in world units (cells); the renderer clamps it to a few pixels
    letter: str = ""  # drawn on the icon when it is large enough


class WorldView:
    """Any world with ``positions`` [N, 2]: a plain floor sized to the agents' extent; subclass to draw more."""

    floor = (40, 44, 52)
    team_shapes = False

    def __init__(self, world: Any):
        self.world = world

    @property
    def name(self) -> str:
        return str(getattr(self.world, "name", "world"))

    def size(self) -> tuple[float, float]:
        """The world's extent (width, height) in its own units; the map shows [0, w] x [0, h]."""
        w, h = getattr(self.world, "width", None), getattr(self.world, "height", None)
        if w is not None and h is not None:
            return float(w), float(h)
        pos = self.positions()
        if pos is None or not len(pos):
            return 1.0, 1.0
        return float(np.nanmax(pos[:, 0])) + 1.0, float(np.nanmax(pos[:, 1])) + 1.0

    def positions(self) -> np.ndarray:
        return np.asarray(self.world.positions)

    def background(self) -> np.ndarray | None:
        """uint8 [H, W, 3] image covering the world (one pixel per cell), or None for a plain floor."""
        return None

    def walls(self) -> np.ndarray:
        """float32 [K, 4] rectangles (x0, y0, x1, y1) in world units."""
        return np.zeros((0, 4), np.float32)

    def sites(self) -> list[SiteGroup]:
        return []

    def agent_arrays(self) -> dict[str, np.ndarray]:
        """Per-agent arrays the renderer needs each frame besides positions (copied under the snapshot lock)."""
        out = {}
        for key in ("team", "alive"):
            arr = getattr(self.world, key, None)
            if arr is not None:
                out[key] = np.array(arr, copy=True)
        return out

    def target_of(self, i: int) -> tuple[float, float] | None:
        """Where agent i is heading (``world.targets[i]``), or None."""
        targets = getattr(self.world, "targets", None)
        if targets is None or not 0 <= i < len(targets):
            return None
        t = targets[i]
        return (float(t[0]), float(t[1])) if np.all(np.isfinite(t)) else None


TEAM_COLOURS = ((90, 160, 255), (255, 110, 90))


def make_view(world: Any) -> WorldView:
    """The world's own view (``world.make_view()``) or a plain `WorldView`."""
    factory = getattr(world, "make_view", None)
    return factory() if callable(factory) else WorldView(world)

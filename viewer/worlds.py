"""Per-world drawing adapters: what the map looks like and what is copied per frame; pure numpy, no pygame.

An adapter turns a world's public attributes into things the renderer draws: the world's extent, a background
image (terrain) or floor colour, wall rectangles, site groups with a shape and a colour, and per-agent arrays
(team, alive) that are snapshotted with the positions. Unknown worlds get `GenericView`, which only needs
``positions``.
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


class GenericView:
    """Any world with ``positions`` [N, 2]: a plain floor sized to the agents' extent."""

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


# --- village -------------------------------------------------------------------------------------------------
TERRAIN_COLOURS = np.array(
    [
        (92, 128, 72),  # grass
        (44, 88, 150),  # water
        (38, 78, 46),  # forest
        (112, 106, 100),  # rock
        (152, 136, 84),  # field
    ],
    dtype=np.int16,
)

VILLAGE_SITES = {
    # kind: (label, colour, shape, size, letter)
    "house": ("house", (196, 110, 60), "house", 0.9, ""),
    "tree": ("tree", (24, 120, 40), "circle", 0.8, ""),
    "bush": ("berry bush", (190, 60, 150), "circle", 0.6, ""),
    "rock": ("ore rock", (170, 170, 185), "diamond", 0.8, ""),
    "plot": ("field plot", (226, 196, 96), "square", 0.7, ""),
    "spot": ("fishing spot", (150, 220, 255), "ring", 0.8, ""),
    "stockpile": ("stockpile", (240, 150, 30), "square", 1.6, "S"),
    "anvil": ("smithy anvil", (50, 50, 70), "triangle", 1.2, "A"),
    "stall": ("market stall", (230, 50, 50), "square", 1.3, "M"),
}


class VillageView(GenericView):
    """The village: its terrain grid as the background, resource sites as small icons per kind."""

    def size(self) -> tuple[float, float]:
        h, w = self.world.terrain.shape
        return float(w), float(h)

    def background(self) -> np.ndarray:
        t = np.asarray(self.world.terrain)
        rgb = TERRAIN_COLOURS[np.minimum(t, len(TERRAIN_COLOURS) - 1)]
        # a little fixed per-cell noise and darker shores, so the map reads as ground rather than flat blocks
        noise = np.random.default_rng(12345).integers(-7, 8, size=t.shape)[..., None]
        water = t == 1
        shore = ~water & (np.roll(water, 1, 0) | np.roll(water, -1, 0) | np.roll(water, 1, 1) | np.roll(water, -1, 1))
        rgb = rgb + noise - 18 * shore[..., None]
        return np.clip(rgb, 0, 255).astype(np.uint8)

    def sites(self) -> list[SiteGroup]:
        out = []
        for kind, points in self.world.sites.items():
            label, colour, shape, size, letter = VILLAGE_SITES.get(kind, (kind, (200, 200, 200), "square", 0.7, ""))
            out.append(SiteGroup(label, np.asarray(points, np.float32), colour, shape, size, letter))
        return out


# --- soldier -------------------------------------------------------------------------------------------------
TEAM_COLOURS = ((90, 160, 255), (255, 110, 90))


class SoldierView(GenericView):
    """The arena: floor, walls, cover points, each team's base, armory and medbay; teams by agent shape."""

    floor = (58, 60, 54)
    team_shapes = True

    def size(self) -> tuple[float, float]:
        return float(self.world.width), float(self.world.height)

    def walls(self) -> np.ndarray:
        return np.asarray(self.world.obstacles, np.float32).reshape(-1, 4)

    def sites(self) -> list[SiteGroup]:
        s = self.world.sites
        out = [SiteGroup("cover", np.asarray(s["cover"], np.float32), (150, 200, 120), "ring", 1.4)]
        for key, letter, shape in (("base", "B", "square"), ("armory", "A", "square"), ("medbay", "+", "square")):
            pts = np.asarray(s[key], np.float32)
            for t in range(min(2, len(pts))):
                out.append(SiteGroup(f"{key} (team {t})", pts[t : t + 1], TEAM_COLOURS[t], shape, 4.0, letter))
        return out

    def target_of(self, i: int) -> tuple[float, float] | None:
        """The enemy the soldier tracks (``world.target``), if any."""
        tgt = getattr(self.world, "target", None)
        if tgt is None or not 0 <= i < len(tgt) or tgt[i] < 0:
            return None
        p = self.world.positions[int(tgt[i])]
        return float(p[0]), float(p[1])


VIEWS: dict[str, type[GenericView]] = {"village": VillageView, "soldier": SoldierView}


def make_view(world: Any) -> GenericView:
    """The adapter for ``world`` by its name; `GenericView` for any other world."""
    return VIEWS.get(str(getattr(world, "name", "")), GenericView)(world)

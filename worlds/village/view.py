"""How the viewer draws the village: its terrain grid as the background, resource sites as icons per kind."""

from __future__ import annotations

import numpy as np

from goap.worldview import SiteGroup, WorldView

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


class VillageView(WorldView):
    """The village: its terrain grid as the background, resource sites as small icons per kind."""

    #: Actions by kind for the legend and the agents' colours (one hue per kind; see goap.worldview).
    legend = {
        "travel": ["go_*"],
        "gather": ["chop_wood", "gather_berries", "mine_ore", "catch_fish", "fill_bucket"],
        "farm": ["plant_seeds", "water_crops", "harvest"],
        "craft": ["smelt_ore", "forge_*", "saw_planks", "carve_rod", "repair_house"],
        "trade": ["buy_*", "sell_*", "pay_tax"],
        "store": ["deposit_*"],
        "home": ["light_fire", "cook_fish", "eat", "sleep"],
    }

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

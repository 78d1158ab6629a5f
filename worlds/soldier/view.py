"""How the viewer draws the soldier arena: floor, walls, cover points, each team's sites; teams by shape."""

from __future__ import annotations

import numpy as np

from goap.worldview import TEAM_COLOURS, SiteGroup, WorldView


class SoldierView(WorldView):
    """The arena: floor, walls, cover points, each team's base, armory and medbay; teams by agent shape."""

    floor = (58, 60, 54)
    team_shapes = True
    #: Actions by kind for the legend and the agents' colours (one hue per kind; see goap.worldview).
    legend = {
        "attack": ["shoot", "suppressive_fire", "throw_grenade", "melee"],
        "weapon": ["draw_weapon", "holster_weapon", "reload"],
        "move": ["approach_enemy", "flank", "advance", "search_for_enemy", "stand_guard", "flee"],
        "cover": ["go_to_cover", "take_cover", "leave_cover"],
        "supply": ["go_to_armory", "pick_up_ammo", "pick_up_grenades"],
        "heal": ["go_to_medbay", "grab_medkit", "heal"],
    }

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

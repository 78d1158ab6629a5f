"""How the viewer draws the soldier field: walls, cover slots, control points, each team's rooms; teams by shape."""

from __future__ import annotations

import numpy as np

from goap.worldview import TEAM_COLOURS, SiteGroup, WorldView, to_host, to_host_row


class SoldierView(WorldView):
    """The field: walls, cover slots, control points, each team's medbays and armories; teams by agent shape."""

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
        out = [
            SiteGroup("cover slot", np.asarray(s["cover"], np.float32).reshape(-1, 2), (150, 200, 120), "ring", 0.8),
            SiteGroup("control point", np.asarray(s["objective"], np.float32).reshape(-1, 2), (235, 220, 120),
                      "diamond", 3.0, "C"),
        ]
        for key, letter in (("medbay", "+"), ("armory", "A")):
            pts = np.asarray(s[key], np.float32)
            for t in range(min(2, len(pts))):
                out.append(SiteGroup(f"{key} (team {t})", pts[t].reshape(-1, 2), TEAM_COLOURS[t], "square", 4.0,
                                     letter))
        return out

    def agent_arrays(self) -> dict[str, np.ndarray]:
        return {"team": to_host(self.world.team, copy=True), "alive": to_host(self.world.alive, copy=True)}

    def target_of(self, i: int) -> tuple[float, float] | None:
        """The enemy soldier i tracks, if any (two rows cross from a CUDA device, not the whole army)."""
        troops = self.world.troops
        if not 0 <= i < self.world.n:
            return None
        tgt = int(to_host_row(troops.target, i))
        if tgt < 0:
            return None
        p = to_host_row(troops.pos, tgt)
        return float(p[0]), float(p[1])

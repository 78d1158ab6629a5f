"""Drawing the wolf game with pygame: a cached map, every agent in bulk, the wolf and a HUD.

The map (grass, fields, houses, shelters, posts, the den) is drawn once into a surface and blitted each frame.
Agents are stamped into the frame through ``surfarray.pixels2d`` (as `viewer.render` does): their pixel positions
and colours are numpy arrays, and each pixel of a small stamp (a dark ring, then a core in the colour of what the
agent does) is one fancy-indexed assignment for all agents at once, so drawing 2,000 or 50,000 agents is a few
numpy operations, never a Python call per agent.
"""

from __future__ import annotations

import numpy as np
import pygame

from examples.game import world as W

GRASS = (74, 112, 64)
FIELD = (176, 158, 84)
HOUSE, ROOF = (150, 104, 70), (112, 60, 44)
STONE, STONE_EDGE = (150, 150, 158), (92, 92, 100)
POST = (60, 64, 90)
DEN = (48, 40, 36)
OUTLINE = (22, 24, 26)
WOLF, WOLF_EDGE = (70, 70, 78), (245, 245, 245)
PANEL = (20, 22, 26, 190)
TEXT, DIM, WARN = (235, 236, 240), (170, 175, 185), (255, 150, 110)

#: What an agent is doing, by role and action, as a colour (the HUD's legend uses the same table).
VILLAGER_COLOURS = {"walk_field": (250, 196, 120), "gather": (250, 236, 40), "walk_home": (214, 124, 64),
                    "store": (150, 74, 36), "walk_shelter": (240, 40, 40), "hide": (200, 170, 230)}
GUARD_COLOURS = {"patrol": (80, 150, 255), "chase": (60, 240, 255)}
IDLE_VILLAGER, IDLE_GUARD = (250, 250, 250), (40, 80, 170)


def _ring(r: int) -> tuple[np.ndarray, np.ndarray]:
    """(core, ring) pixel offsets of a square stamp with a core of half-width r."""
    d = np.arange(-r - 1, r + 2)
    dx, dy = (a.ravel() for a in np.meshgrid(d, d, indexing="ij"))
    m = np.maximum(np.abs(dx), np.abs(dy))
    return np.stack([dx[m <= r], dy[m <= r]], 1), np.stack([dx[m == r + 1], dy[m == r + 1]], 1)


class Renderer:
    """Draws frames of a `examples.game.game.Game` into a surface of ``size`` pixels (the map scaled to fit)."""

    def __init__(self, game, size: tuple[int, int] = (1280, 720)):
        self.game = game
        self.size = (max(320, int(size[0])), max(200, int(size[1])))
        self.scale = min(self.size[0] / W.WIDTH, self.size[1] / W.HEIGHT)
        self.surface = pygame.Surface(self.size, 0, 32)
        self.font = pygame.font.Font(None, 22)
        self.small = pygame.font.Font(None, 18)
        self.background = self._background()
        names = [a.name for a in W.DOMAIN.actions]
        A = len(names)
        # Colour index = role * (A + 1) + action + 1 (0: idle).
        table = [IDLE_VILLAGER] + [VILLAGER_COLOURS.get(a, IDLE_VILLAGER) for a in names]
        table += [IDLE_GUARD] + [GUARD_COLOURS.get(a, IDLE_GUARD) for a in names]
        self.palette = np.array([self.surface.map_rgb(c) for c in table], np.int64)
        self.n_actions = A
        self.core, self.ring = _ring(1 if self.scale < 1.5 else 2)
        self.role = np.asarray(game.world.role_host, np.int64)
        self.legend = self._legend()

    def _px(self, p) -> tuple[int, int]:
        return int(p[0] * self.scale), int(p[1] * self.scale)

    def _background(self) -> pygame.Surface:
        s, k = pygame.Surface(self.size, 0, 32), self.scale
        rng = np.random.default_rng(7)
        w, h = self.size
        shade = rng.normal(0, 5, (w // 8 + 1, h // 8 + 1)).repeat(8, 0).repeat(8, 1)[:w, :h]
        rgb = np.clip(np.array(GRASS, np.float64)[None, None] + shade[..., None], 0, 255).astype(np.uint8)
        pygame.surfarray.blit_array(s, rgb)
        m = self.game.world.map
        for f in m["fields"]:
            pygame.draw.circle(s, FIELD, self._px(f), int((W.FIELD_RADIUS + 6) * k))
            for j in range(-3, 4):  # furrows
                y = int((f[1] + j * 11) * k)
                half = int(np.sqrt(max(0.0, (W.FIELD_RADIUS + 2) ** 2 - (j * 11) ** 2)) * k)
                x = int(f[0] * k)
                pygame.draw.line(s, (156, 138, 70), (x - half, y), (x + half, y), 1)
        for hx, hy in m["houses"]:
            x, y = self._px((hx, hy))
            r = max(3, int(6 * k))
            pygame.draw.rect(s, HOUSE, (x - r, y - r, 2 * r, 2 * r))
            pygame.draw.polygon(s, ROOF, [(x - r - 1, y - r), (x + r + 1, y - r), (x, y - 2 * r)])
        for c in m["shelters"]:
            pygame.draw.circle(s, STONE, self._px(c), int(W.SHELTER_RADIUS * k))
            pygame.draw.circle(s, STONE_EDGE, self._px(c), int(W.SHELTER_RADIUS * k), 3)
        for p in m["posts"]:
            x, y = self._px(p)
            pygame.draw.rect(s, POST, (x - 5, y - 5, 10, 10))
            pygame.draw.rect(s, (120, 126, 170), (x - 5, y - 5, 10, 10), 1)
        pygame.draw.circle(s, DEN, self._px(W.DEN), int(26 * k))
        return s

    def _legend(self) -> pygame.Surface:
        rows = [("villager: to the field", VILLAGER_COLOURS["walk_field"]),
                ("gathering", VILLAGER_COLOURS["gather"]), ("carrying home", VILLAGER_COLOURS["walk_home"]),
                ("storing", VILLAGER_COLOURS["store"]), ("fleeing", VILLAGER_COLOURS["walk_shelter"]),
                ("hiding", VILLAGER_COLOURS["hide"]), ("idle", IDLE_VILLAGER),
                ("guard: patrol", GUARD_COLOURS["patrol"]), ("guard: chase", GUARD_COLOURS["chase"])]
        line = self.small.get_linesize()
        s = pygame.Surface((190, 10 + line * len(rows)), pygame.SRCALPHA)
        s.fill(PANEL)
        for j, (label, colour) in enumerate(rows):
            y = 5 + j * line
            pygame.draw.rect(s, colour, (8, y + 3, 8, 8))
            s.blit(self.small.render(label, True, TEXT), (22, y))
        return s

    def draw(self, hud: dict[str, str] | None = None) -> pygame.Surface:
        """The frame: map, agents, wolf, HUD lines (``label -> value``) and legend."""
        g, surf = self.game, self.surface
        surf.blit(self.background, (0, 0))
        self._draw_agents(surf)
        wx, wy = self._px(g.wolf)
        pygame.draw.circle(surf, (255, 230, 200), (wx, wy), int(g.fear_radius * self.scale), 1)
        pygame.draw.circle(surf, WOLF_EDGE, (wx, wy), max(6, int(8 * self.scale)))
        pygame.draw.circle(surf, WOLF, (wx, wy), max(5, int(7 * self.scale)))
        if hud:
            self._draw_hud(surf, hud)
        surf.blit(self.legend, (8, self.size[1] - self.legend.get_height() - 8))
        return surf

    def _draw_agents(self, surf: pygame.Surface) -> None:
        g = self.game
        b = g.brain
        alive = b.alive.numpy()
        xy = g.positions() * np.float32(self.scale)
        x, y = xy[:, 0].astype(np.int64), xy[:, 1].astype(np.int64)
        w, h = surf.get_size()
        pad = 4
        idx = np.flatnonzero(alive & (x >= pad) & (x < w - pad) & (y >= pad) & (y < h - pad))
        if not len(idx):
            return
        action = b.action.numpy()[idx].astype(np.int64)
        colour = self.palette[self.role[idx] * (self.n_actions + 1) + action + 1]
        pix = pygame.surfarray.pixels2d(surf)
        try:
            flat = pix.T.reshape(-1) if pix.T.flags.c_contiguous else None
            base = y[idx] * w + x[idx]
            for offs, values in ((self.ring, self.palette.dtype.type(surf.map_rgb(OUTLINE))), (self.core, colour)):
                if flat is not None:  # one assignment for every agent and stamp pixel
                    v = values if np.ndim(values) == 0 else np.asarray(values)[:, None]
                    flat[base[:, None] + (offs[:, 1] * w + offs[:, 0])[None, :]] = v
                else:
                    for dx, dy in offs:
                        pix[x[idx] + dx, y[idx] + dy] = values
        finally:
            del pix

    def _draw_hud(self, surf: pygame.Surface, hud: dict[str, str]) -> None:
        line = self.font.get_linesize()
        labels = [self.font.render(k, True, DIM) for k in hud]
        values = [self.font.render(v, True, WARN if k in ("caught", "bitten") else TEXT) for k, v in hud.items()]
        lw = max(s.get_width() for s in labels)
        vw = max(s.get_width() for s in values)
        panel = pygame.Surface((lw + vw + 30, line * len(hud) + 12), pygame.SRCALPHA)
        panel.fill(PANEL)
        for j, (a, v) in enumerate(zip(labels, values, strict=True)):
            panel.blit(a, (10, 6 + j * line))
            panel.blit(v, (lw + 20, 6 + j * line))
        surf.blit(panel, (8, 8))

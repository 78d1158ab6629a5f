"""Drawing with pygame: the map (background, sites, agents in bulk), the legend, the HUD and the inspector.

Imported only once pygame is known to be there (`viewer.app` checks first). Agents are drawn without a
Python call per agent: their screen positions are computed with numpy and small stamps (an outline ring,
then a core in the action's colour) are written into the map surface through ``surfarray.pixels2d``, one
fancy-indexed assignment per stamp pixel for all agents at once. The background (terrain, walls, sites) is
cached per camera position and only rebuilt when the view moves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pygame

from goap.runtime import STAGES
from goap.worldview import TEAM_COLOURS, LegendGroup, SiteGroup, WorldView, check_legend
from viewer.palette import DEAD, IDLE, OUTLINE, action_colours, group_colours
from viewer.sim import Snapshot

BG = (24, 26, 30)
PANEL = (32, 35, 41)
PANEL_EDGE = (62, 66, 76)
TEXT = (225, 228, 235)
STYLE_COLOURS = {
    "title": (255, 255, 255),
    "header": (140, 200, 255),
    "text": (215, 218, 225),
    "fact": (190, 196, 205),
    "goal": (215, 218, 225),
    "goal_current": (255, 225, 90),
    "dim": (120, 125, 135),
    "step_done": (110, 150, 110),
    "step_current": (255, 225, 90),
    "step_todo": (215, 218, 225),
    "warn": (255, 140, 110),
}
#: Shorter names for long score keys in the HUD (others: underscores become spaces).
SCORE_LABELS = {"goals_achieved_per_agent_minute": "goals/agent/min"}
SELECT = (255, 255, 255)
TARGET = (255, 230, 80)

HELP = (
    ("Space", "pause / resume"),
    ("Right", "one tick (while paused)"),
    ("+ / -", "sim speed"),
    ("Wheel", "zoom at the mouse"),
    ("Drag", "pan the map"),
    ("Click", "select the nearest agent"),
    ("Click legend", "highlight one kind of action (again: all)"),
    ("Tab", "next agent (Shift: previous)"),
    ("W", "why: the selected agent's explanation"),
    ("G", "the selected agent's goal graph, its plan lit"),
    ("Click idle cell", "next agent idle for that reason"),
    ("Wheel on panel", "scroll the inspector"),
    ("F", "follow the selected agent"),
    ("Home / 0", "fit the map to the window"),
    ("H", "this help"),
    ("Esc", "quit"),
)


class Camera:
    """Maps world units to map-surface pixels: ``pixel = (world - origin) * scale``."""

    def __init__(self, world_size: tuple[float, float], view_size: tuple[int, int]):
        self.ww, self.wh = max(world_size[0], 1e-6), max(world_size[1], 1e-6)
        self.vw, self.vh = max(1, view_size[0]), max(1, view_size[1])
        self.scale, self.ox, self.oy = 1.0, 0.0, 0.0
        self.fit()

    def fit(self) -> None:
        """Show the whole world, centred."""
        self.scale = 0.98 * min(self.vw / self.ww, self.vh / self.wh)
        self.center_on(self.ww / 2, self.wh / 2)

    def resize(self, view_size: tuple[int, int]) -> None:
        """Keep the world point at the centre where it was when the window changes size."""
        cx, cy = self.to_world(self.vw / 2, self.vh / 2)
        fit = self.scale <= 0.99 * min(self.vw / self.ww, self.vh / self.wh)
        self.vw, self.vh = max(1, view_size[0]), max(1, view_size[1])
        if fit:
            self.fit()
        else:
            self.center_on(cx, cy)

    def center_on(self, x: float, y: float) -> None:
        self.ox = x - self.vw / 2 / self.scale
        self.oy = y - self.vh / 2 / self.scale

    def zoom_at(self, factor: float, px: float, py: float) -> None:
        """Zoom by ``factor`` keeping the world point under pixel (px, py) in place."""
        wx, wy = self.to_world(px, py)
        lo = 0.3 * min(self.vw / self.ww, self.vh / self.wh)
        self.scale = float(np.clip(self.scale * factor, lo, 80.0))
        self.ox, self.oy = wx - px / self.scale, wy - py / self.scale

    def pan(self, dx: float, dy: float) -> None:
        self.ox -= dx / self.scale
        self.oy -= dy / self.scale

    def to_screen(self, points: np.ndarray) -> np.ndarray:
        """float [N, 2] map-surface pixels of world points [N, 2]."""
        return (np.asarray(points, np.float32) - np.array([self.ox, self.oy], np.float32)) * np.float32(self.scale)

    def to_world(self, px: float, py: float) -> tuple[float, float]:
        return self.ox + px / self.scale, self.oy + py / self.scale

    def key(self) -> tuple[float, int, int, int, int]:
        return (round(self.scale, 5), round(self.ox * self.scale), round(self.oy * self.scale), self.vw, self.vh)


def _offsets(shape: str, r: int) -> tuple[np.ndarray, np.ndarray]:
    """(core, outline) pixel offsets [K, 2] of an agent stamp of radius r."""
    d = np.arange(-r - 1, r + 2)
    dx, dy = (a.ravel() for a in np.meshgrid(d, d, indexing="ij"))
    if shape == "diamond":
        m = np.abs(dx) + np.abs(dy)
        core, ring = m <= r, m == r + 1
    else:
        m = np.maximum(np.abs(dx), np.abs(dy))
        core, ring = m <= r - 1, m == r
    return np.stack([dx[core], dy[core]], 1), np.stack([dx[ring], dy[ring]], 1)


@dataclass
class Layout:
    """Where things go in the window: the legend (left), the map (middle), the HUD and inspector (right)."""

    legend: pygame.Rect
    map: pygame.Rect
    panel: pygame.Rect

    @staticmethod
    def for_size(w: int, h: int) -> Layout:
        legend_w = int(np.clip(w * 0.14, 170, 210)) if w >= 900 else 0
        panel_w = int(np.clip(w * 0.29, 300, 400)) if w >= 600 else 0
        map_w = max(1, w - legend_w - panel_w)
        return Layout(pygame.Rect(0, 0, legend_w, h), pygame.Rect(legend_w, 0, map_w, h),
                      pygame.Rect(legend_w + map_w, 0, panel_w, h))


@dataclass
class UiState:
    """What the controller tells the renderer besides the snapshot."""

    paused: bool = False
    follow: bool = False
    show_help: bool = False
    frame_ms: float = 0.0
    target_tps: float = 20.0
    threaded: bool = True  # the sim runs on its own thread (else: one tick per frame)
    agents: int = 0
    show_why: bool = False  # the panel shows the selected agent's explanation instead of its mind
    show_graph: bool = False  # the map shows the selected agent's goal graph
    scroll: int = 0  # inspector rows scrolled past (the title stays)
    extra: dict[str, Any] = field(default_factory=dict)


#: The HUD's idle-by-reason cells, in `goap.explain.IDLE_REASONS` order: label shown, reason.
IDLE_CELLS = (("idle no goal", "no_goal"), ("waiting", "waiting"), ("search failed", "failed"),
              ("goal held", "satisfied"))


def _font(size: int, mono: bool) -> pygame.font.Font:
    """DejaVu when the system has it (clear at small sizes), pygame's bundled font otherwise."""
    names = ("dejavusansmono", "liberationmono", "menlo", "consolas") if mono else ("dejavusans", "liberationsans",
                                                                                      "arial", "helvetica")
    for name in names:
        path = pygame.font.match_font(name)
        if path:
            return pygame.font.Font(path, size)
    return pygame.font.Font(None, size + 4)


class Renderer:
    """Draws one frame from a `Snapshot`; holds the caches (background, stamps, text) between frames."""

    def __init__(self, view: WorldView, action_names: list[str], size: tuple[int, int]):
        self.view = view
        self.action_names = list(action_names)
        # Actions grouped by kind (the view's legend_groups hook): one hue per group, shades per action.
        self.groups: list[LegendGroup] = check_legend(view.legend_groups(self.action_names), self.action_names)
        self.group_colours = group_colours(self.groups)
        self.colours = action_colours(self.action_names, self.groups)  # [A + 1, 3], last row idle
        self._mapped: tuple[Any, np.ndarray] | None = None  # drawn colours as the map surface's pixel values
        self.highlight: str | None = None  # a legend group's label (or "idle"): only its agents in full colour
        self.legend_hits: list[tuple[pygame.Rect, str]] = []  # legend rows that can be clicked, last frame
        self.font = _font(13, mono=True)
        self.font_tight = _font(11, mono=True)  # the inspector falls back to it when a long plan would not fit
        self.small = _font(12, mono=False)
        self.bold = _font(15, mono=False)
        self.bold.set_bold(True)
        self.line = self.font.get_linesize() + 1
        self.layout = Layout.for_size(*size)
        self.layout_size = tuple(size)
        self.map_surf = pygame.Surface(self.layout.map.size, 0, 32)
        self._bg: pygame.Surface | None = None
        self._bg_key: tuple | None = None
        self._text: dict[tuple[str, int, tuple[int, int, int]], pygame.Surface] = {}
        self._fits: dict[tuple[str, int, int], str] = {}
        self._cell_cols = 1
        self._legend: tuple[Any, pygame.Surface, list[int]] | None = None  # (key, surface without counts, row ys)
        self._stamps: dict[tuple[int, int], pygame.Surface] = {}
        bg = view.background()
        self.terrain = pygame.surfarray.make_surface(np.ascontiguousarray(bg.transpose(1, 0, 2))) if bg is not None \
            else None
        self.sites = view.sites()
        seen: set[tuple[str, tuple[int, ...], str]] = set()
        self.legend_sites: list[SiteGroup] = []  # one per kind: a world may give a kind as several groups
        for group in self.sites:
            key = (group.label, tuple(group.colour), group.shape)
            if key not in seen:
                seen.add(key)
                self.legend_sites.append(group)
        self.walls = view.walls()
        self.last_radius = 2
        self.idle_hits: list[tuple[pygame.Rect, str]] = []  # the HUD's idle-by-reason cells, last frame
        self.inspector_hidden = (0, 0)  # (rows, facts) the last frame's inspector could not show below its end
        self.inspector_drawn: list[str] = []  # the lines and facts the last frame's inspector drew, in order
        self.inspector_scroll = 0  # the scroll the last frame used (clamped)
        self._graph_surf: pygame.Surface | None = None  # the goal graph overlay, drawn once per graph
        self._graph_of: Any = None
        self._graph_key: tuple | None = None

    # --- geometry ---------------------------------------------------------------------------------------------
    def resize(self, size: tuple[int, int]) -> None:
        self.layout = Layout.for_size(*size)
        self.layout_size = tuple(size)
        self.map_surf = pygame.Surface(self.layout.map.size, 0, 32)
        self._bg_key = None

    def agent_radius(self, camera: Camera) -> int:
        """Agents grow with zoom, from 5x5 pixels (a 3x3 core) up to 13x13."""
        return int(np.clip(round(camera.scale * 0.3), 2, 6))

    def action_colour(self, action: int) -> tuple[int, int, int]:
        """Action ``action``'s own colour (-1: idle), as the legend shows it."""
        return tuple(int(c) for c in self.colours[action])  # type: ignore[return-value]

    def agent_colour(self, action: int) -> tuple[int, int, int]:
        """The colour an agent doing ``action`` (-1: idle) is drawn in (dimmed outside the highlighted group)."""
        return tuple(int(c) for c in self.drawn_colours()[action])  # type: ignore[return-value]

    def set_highlight(self, label: str | None) -> None:
        """Draw only the agents of legend group ``label`` (or "idle") in full colour; None: everyone."""
        if label is not None and label not in {g.label for g in self.groups} | {"idle"}:
            raise ValueError(f"no legend group '{label}' (groups: {', '.join(g.label for g in self.groups)}, idle)")
        self.highlight = label
        self._mapped = None

    def drawn_colours(self) -> np.ndarray:
        """uint8 [A + 1, 3]: `colours` with every row outside the highlighted group dimmed."""
        if self.highlight is None:
            return self.colours
        keep = np.zeros(len(self.colours), dtype=bool)
        if self.highlight == "idle":
            keep[-1] = True
        else:
            for g in self.groups:
                if g.label == self.highlight:
                    keep[list(g.actions)] = True
        dim = (self.colours.astype(np.float32) * 0.3 + 20).astype(np.uint8)
        return np.where(keep[:, None], self.colours, dim)

    def idle_reason_at(self, px: int, py: int) -> str | None:
        """The idle reason (`goap.explain.IDLE_REASONS`) whose HUD cell is at window pixel (px, py), or None."""
        for rect, reason in self.idle_hits:
            if rect.collidepoint(px, py):
                return reason
        return None

    def legend_at(self, px: int, py: int) -> str | None:
        """The legend group (or "idle") whose row is at window pixel (px, py) in the last frame, or None."""
        for rect, label in self.legend_hits:
            if rect.collidepoint(px, py):
                return label
        return None

    # --- text -------------------------------------------------------------------------------------------------
    def text(self, s: str, colour: tuple[int, int, int] = TEXT, font: pygame.font.Font | None = None) -> pygame.Surface:
        font = font or self.font
        key = (s, id(font), colour)
        surf = self._text.get(key)
        if surf is None:
            if len(self._text) > 4000:
                self._text.clear()
            surf = self._text[key] = font.render(s, True, colour)
        return surf

    # --- the frame --------------------------------------------------------------------------------------------
    def draw(self, screen: pygame.Surface, snap: Snapshot, camera: Camera, ui: UiState) -> None:
        screen.fill(BG)
        self._draw_map(snap, camera, ui)
        screen.blit(self.map_surf, self.layout.map.topleft)
        if self.layout.legend.width:
            self._draw_legend(screen, snap)
        if self.layout.panel.width:
            self._draw_panel(screen, snap, ui)
        if ui.show_graph:
            self._draw_graph(screen, snap)
        if ui.show_help:
            self._draw_help(screen)

    def _draw_map(self, snap: Snapshot, camera: Camera, ui: UiState) -> None:
        key = camera.key()
        if self._bg is None or self._bg_key != key or self._bg.get_size() != self.map_surf.get_size():
            self._bg = self._build_background(camera)
            self._bg_key = key
        surf = self.map_surf
        surf.blit(self._bg, (0, 0))
        self._draw_agents(surf, snap, camera)
        if snap.selected >= 0 and snap.selected < len(snap.positions):
            self._draw_selection(surf, snap, camera)
        hint = "PAUSED  (Space: resume, Right: step)" if ui.paused else "H: help"
        t = self.text(hint, (255, 225, 90) if ui.paused else (200, 200, 200), self.small)
        box = pygame.Rect(6, surf.get_height() - t.get_height() - 10, t.get_width() + 10, t.get_height() + 6)
        pygame.draw.rect(surf, (0, 0, 0), box, border_radius=3)
        surf.blit(t, (box.x + 5, box.y + 3))

    def _build_background(self, camera: Camera) -> pygame.Surface:
        surf = pygame.Surface(self.map_surf.get_size(), 0, 32)
        surf.fill(BG)
        s = camera.scale
        ww, wh = camera.ww, camera.wh
        if self.terrain is not None:
            tw, th = self.terrain.get_size()
            x0, y0 = max(0, math.floor(camera.ox)), max(0, math.floor(camera.oy))
            x1 = min(tw, math.ceil(camera.ox + camera.vw / s))
            y1 = min(th, math.ceil(camera.oy + camera.vh / s))
            if x1 > x0 and y1 > y0:
                px0, py0 = round((x0 - camera.ox) * s), round((y0 - camera.oy) * s)
                px1, py1 = round((x1 - camera.ox) * s), round((y1 - camera.oy) * s)
                sub = self.terrain.subsurface((x0, y0, x1 - x0, y1 - y0))
                surf.blit(pygame.transform.scale(sub, (max(1, px1 - px0), max(1, py1 - py0))), (px0, py0))
        else:
            (ax, ay), (bx, by) = camera.to_screen(np.array([[0.0, 0.0], [ww, wh]]))
            pygame.draw.rect(surf, self.view.floor, pygame.Rect(round(ax), round(ay), round(bx - ax), round(by - ay)))
            # a faint grid every 10 world units helps judge distances in an empty arena
            step = 10.0
            for gx in np.arange(step, ww, step):
                x = round((gx - camera.ox) * s)
                pygame.draw.line(surf, tuple(c + 8 for c in self.view.floor), (x, round(ay)), (x, round(by)))
            for gy in np.arange(step, wh, step):
                y = round((gy - camera.oy) * s)
                pygame.draw.line(surf, tuple(c + 8 for c in self.view.floor), (round(ax), y), (round(bx), y))
        if len(self.walls):
            a = camera.to_screen(self.walls[:, :2])
            b = camera.to_screen(self.walls[:, 2:])
            for (x0, y0), (x1, y1) in zip(a.tolist(), b.tolist(), strict=True):
                r = pygame.Rect(round(x0), round(y0), max(1, round(x1 - x0)), max(1, round(y1 - y0)))
                pygame.draw.rect(surf, (128, 124, 116), r)
                pygame.draw.rect(surf, (200, 196, 186), r, 1)
        for group in self.sites:
            self._blit_sites(surf, group, camera)
        return surf

    def _site_px(self, group: SiteGroup, camera: Camera) -> int:
        return int(np.clip(round(group.size * camera.scale), 3, 40))

    def stamp(self, group: SiteGroup, px: int) -> pygame.Surface:
        """The icon of a site group at ``px`` pixels (cached)."""
        key = (id(group), px)
        surf = self._stamps.get(key)
        if surf is not None:
            return surf
        surf = pygame.Surface((px, px), pygame.SRCALPHA)
        c = group.colour
        dark = tuple(max(0, int(v * 0.45)) for v in c)
        edge = px >= 6
        r = pygame.Rect(0, 0, px, px)
        if group.shape == "circle":
            pygame.draw.circle(surf, c, (px / 2, px / 2), px / 2)
            if edge:
                pygame.draw.circle(surf, dark, (px / 2, px / 2), px / 2, 1)
        elif group.shape == "ring":
            pygame.draw.circle(surf, c, (px / 2, px / 2), px / 2, max(1, px // 4))
        elif group.shape == "diamond":
            pts = [(px / 2, 0), (px - 1, px / 2), (px / 2, px - 1), (0, px / 2)]
            pygame.draw.polygon(surf, c, pts)
            if edge:
                pygame.draw.polygon(surf, dark, pts, 1)
        elif group.shape == "triangle":
            pts = [(px / 2, 0), (px - 1, px - 1), (0, px - 1)]
            pygame.draw.polygon(surf, c, pts)
            if edge:
                pygame.draw.polygon(surf, (230, 230, 240), pts, 1)
        elif group.shape == "house":
            roof = max(1, px // 3)
            pygame.draw.rect(surf, c, pygame.Rect(1 if edge else 0, roof, px - (2 if edge else 0), px - roof))
            pygame.draw.polygon(surf, (150, 40, 40), [(px / 2, 0), (px - 1, roof), (0, roof)])
        else:
            pygame.draw.rect(surf, c, r)
            if edge:
                pygame.draw.rect(surf, dark, r, 1)
        if group.letter and px >= 12:
            t = self.small.render(group.letter, True, (255, 255, 255))
            surf.blit(t, t.get_rect(center=(px / 2, px / 2 + (2 if group.shape == "triangle" else 0))))
        self._stamps[key] = surf
        return surf

    def _blit_sites(self, surf: pygame.Surface, group: SiteGroup, camera: Camera) -> None:
        if not len(group.points):
            return
        px = self._site_px(group, camera)
        stamp = self.stamp(group, px)
        xy = np.floor(camera.to_screen(group.points) - px / 2).astype(np.int32)
        w, h = surf.get_size()
        vis = (xy[:, 0] > -px) & (xy[:, 0] < w) & (xy[:, 1] > -px) & (xy[:, 1] < h)
        surf.fblits([(stamp, p) for p in xy[vis].tolist()])

    def _pixel_values(self, surf: pygame.Surface) -> np.ndarray:
        """The action colours (and idle, last) as ``surf``'s pixel values, cached per pixel format."""
        key = (surf.get_bitsize(), surf.get_masks(), self.highlight)
        if self._mapped is None or self._mapped[0] != key:
            values = np.array([surf.map_rgb(tuple(int(v) for v in c)) for c in self.drawn_colours()], np.int64)
            self._mapped = (key, values)
        return self._mapped[1]

    def _draw_agents(self, surf: pygame.Surface, snap: Snapshot, camera: Camera) -> None:
        n = len(snap.positions)
        if not n:
            return
        r = self.last_radius = self.agent_radius(camera)
        xy = camera.to_screen(snap.positions)
        ok = np.isfinite(xy).all(axis=1)
        xy = np.where(ok[:, None], xy, -1e6)
        x, y = np.floor(xy[:, 0]).astype(np.int64), np.floor(xy[:, 1]).astype(np.int64)
        w, h = surf.get_size()
        pad = r + 2
        inside = ok & (x >= pad) & (x < w - pad) & (y >= pad) & (y < h - pad)
        mapped = self._pixel_values(surf)
        col = mapped[np.clip(snap.action, -1, len(self.colours) - 2)]
        outline = np.full(n, surf.map_rgb(OUTLINE), dtype=np.int64)
        alive = snap.arrays.get("alive")
        team = snap.arrays.get("team")
        if alive is not None and len(alive) == n:
            col = np.where(alive, col, surf.map_rgb(DEAD))
        shape = np.zeros(n, dtype=np.int8)  # 0 square, 1 diamond
        if self.view.team_shapes and team is not None and len(team) == n:
            shape = (team % 2).astype(np.int8)
            team_out = np.array([surf.map_rgb(tuple(int(v * 0.8) for v in c)) for c in TEAM_COLOURS], np.int64)
            outline = team_out[team % 2]
            if alive is not None and len(alive) == n:
                outline = np.where(alive, outline, surf.map_rgb(OUTLINE))
        pix = pygame.surfarray.pixels2d(surf)  # [w, h] view of the surface's rows
        try:
            rows = pix.T  # [h, w]; C-contiguous unless the surface pads its rows
            flat = rows.reshape(-1) if rows.flags.c_contiguous else None
            stamps = [_offsets("diamond" if s else "square", r) for s in (0, 1)]
            groups = [np.flatnonzero(inside & (shape == s)) for s in (0, 1)]
            for part in (1, 0):  # every outline first, then every core, so neighbours' rings never cover a core
                for core_ring, idx in zip(stamps, groups, strict=True):
                    if not len(idx):
                        continue
                    offs = core_ring[part]
                    values = (outline if part else col)[idx].astype(pix.dtype)
                    if flat is not None:  # one fancy assignment for all agents and stamp pixels
                        base = y[idx] * w + x[idx]
                        flat[base[:, None] + (offs[:, 1] * w + offs[:, 0])[None, :]] = values[:, None]
                    else:
                        xs, ys = x[idx], y[idx]
                        for dx, dy in offs:
                            pix[xs + dx, ys + dy] = values
        finally:
            del pix

    def _draw_selection(self, surf: pygame.Surface, snap: Snapshot, camera: Camera) -> None:
        i = snap.selected
        p = camera.to_screen(snap.positions[i : i + 1])[0]
        if not np.isfinite(p).all():
            return
        px, py = float(p[0]), float(p[1])
        if snap.target is not None:
            t = camera.to_screen(np.array([snap.target]))[0]
            tx, ty = float(t[0]), float(t[1])
            pygame.draw.line(surf, (0, 0, 0), (px + 1, py + 1), (tx + 1, ty + 1), 3)
            pygame.draw.line(surf, TARGET, (px, py), (tx, ty), 2)
            pygame.draw.circle(surf, TARGET, (tx, ty), 5, 2)
        rad = self.last_radius + 6
        pygame.draw.circle(surf, (0, 0, 0), (px, py), rad + 1, 3)
        pygame.draw.circle(surf, SELECT, (px, py), rad, 2)

    # --- panels -----------------------------------------------------------------------------------------------
    def legend_rows(self, counts: np.ndarray, room: int) -> list[tuple[str, tuple[int, int, int], int, int]]:
        """The legend's action rows ``(label, colour, count, indent)`` for at most ``room`` rows.

        ``counts`` [A + 1]: living agents per action, idle first (``counts[0]``). Every group gets a row (its
        hue, the sum of its actions); the actions of a group follow it, indented in their own shade, for as
        many groups (in order) as there is room for; then idle. A group of one action whose label is that
        action's name is one row.
        """
        head = []
        for grp, colour in zip(self.groups, self.group_colours, strict=True):
            total = int(sum(int(counts[k + 1]) for k in grp.actions))
            single = len(grp.actions) == 1 and grp.label == self.action_names[grp.actions[0]]
            colour = self.action_colour(grp.actions[0]) if single else colour
            children = [] if single else [
                (self.action_names[k], self.action_colour(k), int(counts[k + 1]), 1) for k in grp.actions
            ]
            head.append(((grp.label, colour, total, 0), children))
        budget = room - len(head) - 1  # the group rows and idle always show
        rows: list[tuple[str, tuple[int, int, int], int, int]] = []
        for row, children in head:
            rows.append(row)
            if children and len(children) <= budget:
                rows.extend(children)
                budget -= len(children)
            elif children:
                budget = -1  # stop expanding at the first group that does not fit, so groups keep their order
        rows.append(("idle", IDLE, int(counts[0]), 0))
        return rows

    def _draw_legend(self, screen: pygame.Surface, snap: Snapshot) -> None:
        """The legend: its rows, swatches, labels and sites are cached as one surface (they change only when the
        rows that show, the zero counts or the highlight change); the counts are drawn on it each frame."""
        rect = self.layout.legend
        alive = snap.arrays.get("alive")
        if alive is None or len(alive) != len(snap.action):
            alive = np.ones(len(snap.action), dtype=bool)
        dead = int((~alive).sum())
        # Count the living only: an agent can die holding an action, and is drawn (and counted) as dead.
        acting = np.clip(snap.action[alive], -1, len(self.colours) - 2) + 1
        counts = np.bincount(acting, minlength=len(self.colours))
        lh = self.small.get_linesize()
        top = 8 + self.bold.get_linesize() + 4 + self.small.get_linesize() + 2
        team_rows = 3 if self.view.team_shapes else 0
        site_rows = (len(self.legend_sites) + 2) if self.legend_sites else 0
        reserve = (team_rows + site_rows + 1 + (1 if dead else 0)) * lh + 12
        room = max(len(self.groups) + 1, (rect.bottom - top - reserve) // lh)
        rows = self.legend_rows(counts, room)
        if dead:
            rows.append(("dead", DEAD, dead, 0))
        # redrawn when a count changes its number of digits (the label beside it gets the room that is left)
        key = (rect.size, tuple((name, indent, count == 0, len(str(count))) for name, _, count, indent in rows),
               self.highlight)
        if self._legend is None or self._legend[0] != key:
            self._legend = (key, *self._render_legend(rect, rows, top, lh))
        _, surf, ys = self._legend
        screen.blit(surf, rect.topleft)
        for (_, _, count, _), y in zip(rows, ys, strict=False):
            c = self.text(str(count), STYLE_COLOURS["dim"] if count == 0 else (170, 175, 185), self.small)
            screen.blit(c, (rect.right - 10 - c.get_width(), rect.y + y))

    def _render_legend(self, rect: pygame.Rect, rows: list[tuple[str, tuple[int, int, int], int, int]], y: int,
                       lh: int) -> tuple[pygame.Surface, list[int]]:
        """The legend without its counts, and the y of each action row drawn (rows past the bottom are not)."""
        screen = pygame.Surface(rect.size, 0, 32)
        screen.fill(PANEL)
        right = rect.width
        pygame.draw.line(screen, PANEL_EDGE, (right - 1, 0), (right - 1, rect.height))
        x = 10
        screen.blit(self.text(self._fit(self.view.name, self.bold, right - 20), (255, 255, 255), self.bold), (x, 8))
        screen.blit(self.text("Actions (agents)", STYLE_COLOURS["header"], self.small),
                    (x, 8 + self.bold.get_linesize() + 4))
        self.legend_hits = []
        ys: list[int] = []
        for name, colour, count, indent in rows:
            if y + lh > rect.height:
                break
            if indent == 0 and name != "dead":
                row = pygame.Rect(2, y, right - 4, lh)
                self.legend_hits.append((row.move(rect.x, rect.y), name))
                if name == self.highlight:
                    pygame.draw.rect(screen, (70, 64, 36), row, border_radius=2)
            sx = x + 10 * indent
            size = 9 if not indent else 7
            sw = pygame.Rect(sx, y + lh // 2 - size // 2, size, size)
            pygame.draw.rect(screen, colour, sw)
            pygame.draw.rect(screen, OUTLINE, sw, 1)
            label_w = right - 10 - self.small.size(str(count))[0] - 6 - (sx + 15)
            colour_text = STYLE_COLOURS["dim"] if count == 0 else (TEXT if not indent else (200, 204, 212))
            screen.blit(self.text(self._fit(name, self.small, label_w), colour_text, self.small), (sx + 15, y))
            ys.append(y)
            y += lh
        y += 6
        if self.view.team_shapes and y + 2 * lh <= rect.height:
            screen.blit(self.text("Teams", STYLE_COLOURS["header"], self.small), (x, y))
            y += lh + 2
            for t, shape in ((0, "square"), (1, "diamond")):
                core, ring = _offsets(shape, 3)
                edge = tuple(int(v * 0.8) for v in TEAM_COLOURS[t])
                for offsets, colour in ((ring, edge), (core, IDLE)):
                    for dx, dy in offsets:
                        screen.set_at((x + 5 + int(dx), y + lh // 2 + int(dy)), colour)
                label = self._fit(f"team {t}: {shape}s", self.small, right - 10 - (x + 15))
                screen.blit(self.text(label, TEXT, self.small), (x + 15, y))
                y += lh
            y += 6
        if self.legend_sites and y + 2 * lh <= rect.height:
            screen.blit(self.text("Sites", STYLE_COLOURS["header"], self.small), (x, y))
            y += lh + 2
            for group in self.legend_sites:
                if y + lh > rect.height:
                    break
                icon = self.stamp(group, 13 if group.letter else 11)
                screen.blit(icon, (x - 1, y + (lh - icon.get_height()) // 2))
                label = self._fit(group.label, self.small, right - 10 - (x + 15))
                screen.blit(self.text(label, TEXT, self.small), (x + 15, y))
                y += lh
        return screen, ys

    def _fit(self, s: str, font: pygame.font.Font, width: int) -> str:
        """``s``, or as much of it as fits in ``width`` pixels followed by an ellipsis (cached per string)."""
        key = (s, id(font), width)
        out = self._fits.get(key)
        if out is None:
            if font.size(s)[0] <= width:
                out = s
            else:
                lo, hi = 0, len(s)
                while lo < hi:  # the longest prefix that fits with the ellipsis
                    mid = (lo + hi + 1) // 2
                    if font.size(s[:mid].rstrip() + "\u2026")[0] <= width:
                        lo = mid
                    else:
                        hi = mid - 1
                out = s[:lo].rstrip() + "\u2026"
            if len(self._fits) > 4000:
                self._fits.clear()
            self._fits[key] = out
        return out

    def hud_lines(self, snap: Snapshot, ui: UiState) -> list[list[tuple[str, str]]]:
        """The HUD as rows of ``(label, value)`` cells; the panel lays out as many cells per row as fit whole."""
        rows: list[list[tuple[str, str]]] = [
            [("tick", f"{snap.tick}"), ("ticks/s", f"{snap.ticks_per_second:.1f}")],
            [("frame ms", f"{ui.frame_ms:.1f}"), ("tick ms", f"{snap.tick_ms:.1f}")],
        ]
        st = snap.stats
        if st is not None:
            ms = st.ms
            rows.append([(s, f"{ms.get(s, 0.0):.1f}") for s in STAGES if s in ms] or [("stages", "-")])
            ev = st.events
            rows.append([("plans made", f"{ev.get('plans_made', 0)}"), ("failed", f"{ev.get('plans_failed', 0)}")])
            if "actions_done" in ev or "actions_failed" in ev:
                rows.append([("actions done", f"{ev.get('actions_done', 0)}"),
                             ("failed", f"{ev.get('actions_failed', 0)}")])
        alive = snap.arrays.get("alive")
        living = int(alive.sum()) if alive is not None and len(alive) == len(snap.action) else len(snap.action)
        idle = int(((snap.action < 0) & alive).sum()) if alive is not None and len(alive) == len(snap.action) \
            else int((snap.action < 0).sum())
        budget = "all" if snap.plan_budget is None else f"{snap.plan_budget}/tick"
        rows.append([("idle", f"{idle / max(1, living):.0%}"),
                     ("waiting for a plan", f"{snap.waiting} (budget {budget})")])
        reasons = snap.idle_reasons
        counts = np.bincount(reasons[reasons >= 0].astype(np.int64), minlength=len(IDLE_CELLS)) \
            if reasons is not None and len(reasons) else np.zeros(len(IDLE_CELLS), np.int64)
        rows.append([(label, f"{int(counts[k])}") for k, (label, _) in enumerate(IDLE_CELLS)])
        if snap.score:
            cells = []
            for name, v in snap.score.items():
                v = float(v)
                val = f"{v:.0f}" if v.is_integer() and abs(v) < 1e9 else f"{v:.3g}"
                cells.append((SCORE_LABELS.get(name, name.replace("_", " ")), val))
            rows.append(cells)
        return rows

    def cell_rows(self, cells: list[tuple[str, str]], width: int) -> list[list[tuple[str, str]]]:
        """``cells`` packed into rows of 1 to 3 equal columns, every cell whole: a cell too wide for a column
        gets a row of its own (at full width); the column count that needs the fewest rows wins (ties: fewer)."""
        font, gap = self.font, 14
        widths = [font.size(f"{label} {value}")[0] for label, value in cells]
        best: tuple[int, int, list[list[tuple[str, str]]]] | None = None
        for cols in (1, 2, 3):
            col_w = (width - gap * (cols - 1)) // cols
            rows: list[list[tuple[str, str]]] = []
            row: list[tuple[str, str]] = []
            for cell, w in zip(cells, widths, strict=True):
                if w > col_w:  # a wide cell: its own row
                    if row:
                        rows.append(row)
                        row = []
                    rows.append([cell])
                    continue
                row.append(cell)
                if len(row) == cols:
                    rows.append(row)
                    row = []
            if row:
                rows.append(row)
            if best is None or len(rows) < best[0]:
                best = (len(rows), cols, rows)
        assert best is not None
        self._cell_cols = best[1]
        return best[2]

    def _draw_cells(self, screen: pygame.Surface, cells: list[tuple[str, str]], x: int, y: int, width: int,
                    colour: tuple[int, int, int]) -> int:
        """Cells ``label value`` laid out by `cell_rows` (values right-aligned in their column); returns y after."""
        font, lh, gap = self.font, self.line, 14
        rows = self.cell_rows(cells, width)
        cols = self._cell_cols
        col_w = (width - gap * (cols - 1)) // cols
        self._cell_hits: list[tuple[pygame.Rect, str]] = []
        for row in rows:
            wide = len(row) == 1 and font.size(f"{row[0][0]} {row[0][1]}")[0] > col_w
            w = width if wide else col_w
            for k, (label, value) in enumerate(row):
                cx = x + k * (col_w + gap)
                v = self.text(value, (255, 255, 255))
                room = w - v.get_width() - font.size(" ")[0]
                screen.blit(self.text(self._fit(label, font, room), colour), (cx, y))
                screen.blit(v, (cx + w - v.get_width() if cols > 1 or wide else cx + font.size(label + " ")[0], y))
            self._cell_hits.append((pygame.Rect(cx, y, w, lh), label))
            y += lh
        return y

    def _draw_panel(self, screen: pygame.Surface, snap: Snapshot, ui: UiState) -> None:
        rect = self.layout.panel
        pygame.draw.rect(screen, PANEL, rect)
        pygame.draw.line(screen, PANEL_EDGE, rect.topleft, rect.bottomleft)
        x, y = rect.x + 12, 8
        lh = self.line
        if ui.paused:
            state = "PAUSED"
        elif not ui.threaded:
            state = "1 tick per frame"
        else:
            state = "max speed" if ui.target_tps <= 0 else f"target {ui.target_tps:g}/s"
        title = self._fit(f"{ui.agents} agents   {state}", self.bold, rect.width - 24)
        screen.blit(self.text(title, (255, 255, 255), self.bold), (x, y))
        y += self.bold.get_linesize() + 4
        rows = self.hud_lines(snap, ui)
        labels = {label: reason for label, reason in IDLE_CELLS}
        self.idle_hits = []
        for k, cells in enumerate(rows):
            colour = (170, 175, 185) if snap.score and k == len(rows) - 1 else TEXT
            idle_row = [c[0] for c in cells] == list(labels)
            y = self._draw_cells(screen, cells, x, y, rect.width - 24, (255, 200, 150) if idle_row else colour)
            if idle_row:
                self.idle_hits = [(r, labels[label]) for r, label in self._cell_hits]
        y += 4
        pygame.draw.line(screen, PANEL_EDGE, (rect.x + 6, y), (rect.right - 6, y))
        y += 6
        if snap.selected < 0:
            for s in ("No agent selected.", "", "Click an agent on the map,", "or press Tab for the next one."):
                screen.blit(self.text(s, STYLE_COLOURS["dim"]), (x, y))
                y += lh
            return
        lines = snap.why if ui.show_why and snap.why else snap.inspector
        self._draw_inspector(screen, lines, x, y, rect, ui.scroll, wrap=ui.show_why)

    @staticmethod
    def fit_inspector(lines: list[tuple[str, str]], room: int) -> list[tuple[str, str]]:
        """The inspector's lines for ``room`` rows: when they would not fit (facts take two columns), goals that
        are met or of priority 0 (the "dim" goal lines) fold into one line, so the plan and facts stay in view."""
        n_facts = sum(1 for _, style in lines if style == "fact")
        if len(lines) - n_facts + -(-n_facts // 2) <= room:
            return lines
        out: list[tuple[str, str]] = []
        folded = 0
        in_goals = False
        for text, style in lines:
            if style == "header":
                if in_goals and folded:
                    out.append((f"  + {folded} more goal{'s' if folded > 1 else ''} (met or priority 0)", "dim"))
                    folded = 0
                in_goals = text.startswith("Goal:")
            elif in_goals and style == "dim":
                folded += 1
                continue
            out.append((text, style))
        return out

    def inspector_rows(self, lines: list[tuple[str, str]], font: pygame.font.Font, width: int,
                       wrap: bool = False) -> list[tuple[str, Any]]:
        """The panel's lines as screen rows: ``("line", (text, style))`` or ``("facts", [left, right])`` (facts
        flow in two columns: row j holds fact j and fact j + rows); ``wrap`` breaks long lines at spaces."""
        out: list[tuple[str, Any]] = []
        k = 0
        while k < len(lines):
            text, style = lines[k]
            if style == "fact":
                facts = []
                while k < len(lines) and lines[k][1] == "fact":
                    facts.append(lines[k][0])
                    k += 1
                rows = -(-len(facts) // 2)
                out.extend(("facts", [facts[j], *facts[j + rows: j + rows + 1]]) for j in range(rows))
                continue
            if wrap and font.size(text)[0] > width:
                indent = " " * (len(text) - len(text.lstrip()) + 2)
                words, cur = text.split(" "), ""
                for w in words:
                    nxt = f"{cur} {w}" if cur else w
                    if cur and font.size(nxt)[0] > width:
                        out.append(("line", (cur, style)))
                        cur = indent + w
                    else:
                        cur = nxt
                out.append(("line", (cur, style)))
            else:
                out.append(("line", (text, style)))
            k += 1
        return out

    def _draw_inspector(self, screen: pygame.Surface, lines: list[tuple[str, str]], x: int, y: int,
                        rect: pygame.Rect, scroll: int = 0, wrap: bool = False) -> None:
        """The lines from ``scroll`` rows down (the title stays); what does not fit below is never cut silently:
        the last row says how many rows and facts are left (``inspector_hidden``) and that the wheel scrolls."""
        font, lh = self.font, self.line
        lines = self.fit_inspector(lines, (rect.bottom - y - 12) // lh)
        width = rect.width - 24
        rows = self.inspector_rows(lines, font, width, wrap)
        if y + len(rows) * lh + 12 > rect.bottom:
            font = self.font_tight
            lh = font.get_linesize() + 1
            rows = self.inspector_rows(lines, font, width, wrap)
        title, body = rows[:1], rows[1:]
        headers = sum(1 for kind, item in body if kind == "line" and item[1] == "header")
        room = max(1, (rect.bottom - y - 6 - (self.bold.get_linesize() + 1 + 3) - 3 * headers) // lh)
        scroll = int(min(max(0, scroll), max(0, len(body) - room + 1)))
        self.inspector_scroll = scroll
        shown = body[scroll:]
        above = [("line", (f"\u25b2 {scroll} rows above (wheel scrolls)", "dim"))] if scroll else []
        avail = room - len(above)
        hidden = shown[avail - 1:] if len(shown) > avail else []
        if hidden:
            shown = shown[: avail - 1]
        col_w = width // 2
        self.inspector_drawn = []
        for kind, item in title + above + shown:
            if kind == "facts":
                colour = STYLE_COLOURS["fact"]
                self.inspector_drawn.extend(item)
                for j, f in enumerate(item):
                    name, _, value = f.partition("=")
                    t1 = self.text(name, colour, font)
                    fx = x + j * col_w
                    screen.blit(t1, (fx, y))
                    screen.blit(self.text("=" + value, (255, 255, 255), font), (fx + t1.get_width(), y))
                y += lh
                continue
            text, style = item
            self.inspector_drawn.append(text)
            colour = STYLE_COLOURS.get(style, TEXT)
            if style in ("header", "title"):
                y += 3
            if style in ("step_current", "goal_current"):
                bar = pygame.Rect(rect.x + 6, y - 1, rect.width - 12, lh)
                pygame.draw.rect(screen, (70, 64, 36), bar, border_radius=2)
            screen.blit(self.text(self._fit(text, self.bold if style == "title" else font, width), colour,
                                  self.bold if style == "title" else font), (x, y))
            y += (self.bold.get_linesize() + 1) if style == "title" else lh
        n_facts = sum(len(item) for kind, item in hidden if kind == "facts")
        self.inspector_hidden = (len(hidden), n_facts)
        if hidden:
            what = f"{n_facts} more facts" if n_facts else f"{len(hidden)} more rows"
            if n_facts and len(hidden) > sum(1 for kind, _ in hidden if kind == "facts"):
                what = f"{len(hidden)} more rows ({n_facts} facts)"
            screen.blit(self.text(f"\u25bc {what}: wheel over the panel scrolls", STYLE_COLOURS["warn"], font),
                        (x, y))

    def _draw_graph(self, screen: pygame.Surface, snap: Snapshot) -> None:
        """The selected agent's goal graph over the map: the goal on the right, the actions that achieve its
        conditions left of it, their preconditions' achievers further left (`goap.graph.layered`); the plan's
        actions lit. Drawn once per graph and map size, then blitted."""
        m = self.layout.map
        graph = snap.graph[0] if snap.graph is not None else None
        key = (m.size, snap.selected >= 0)
        if self._graph_surf is None or self._graph_of is not graph or self._graph_key != key:
            self._graph_surf = self._render_graph(m.size, snap)
            self._graph_of, self._graph_key = graph, key
        screen.blit(self._graph_surf, m.topleft)

    def _render_graph(self, size: tuple[int, int], snap: Snapshot) -> pygame.Surface:
        w, h = size
        surf = pygame.Surface(size, pygame.SRCALPHA)
        surf.fill((10, 12, 16, 215))
        if snap.graph is None:
            msg = "No goal: no graph (G hides it)" if snap.selected >= 0 else "Select an agent to see its goal graph"
            surf.blit(self.text(msg, (255, 225, 90)), (16, 16))
            return surf
        graph, cells = snap.graph
        font = self.font_tight
        n_cols = max(c for c, _ in cells.values()) + 1
        per_col: dict[int, int] = {}
        for c, _ in cells.values():
            per_col[c] = per_col.get(c, 0) + 1
        col_w = max(1, (w - 24) // max(1, n_cols))
        top = 34
        centres: dict[str, tuple[int, int]] = {}
        for node in graph.nodes:
            c, r = cells[node.id]
            dy = max(10, (h - top - 10) // max(1, per_col[c]))
            centres[node.id] = (w - 12 - col_w // 2 - c * col_w, top + r * dy + dy // 2)
        for a, b in graph.edges:
            lit = a in graph.highlight and (b in graph.highlight or b.startswith("goal:"))
            pygame.draw.line(surf, (255, 160, 60) if lit else (80, 86, 100), centres[a], centres[b], 2 if lit else 1)
        colours = {"goal": (255, 225, 90), "action": (140, 200, 255), "condition": (190, 196, 205)}
        for node in graph.nodes:
            label = self._fit(node.label.split("\n")[0], font, col_w - 10)
            t = self.text(label, colours[node.kind], font)
            box = pygame.Rect(0, 0, t.get_width() + 8, t.get_height() + 4)
            box.center = centres[node.id]
            pygame.draw.rect(surf, (30, 33, 40), box, border_radius=3)
            lit = node.id in graph.highlight
            pygame.draw.rect(surf, (255, 160, 60) if lit else (70, 74, 86), box, 2 if lit else 1, border_radius=3)
            surf.blit(t, (box.x + 4, box.y + 2))
        goal = next((n.label.split("\n")[0] for n in graph.nodes if n.kind == "goal"), "?")
        head = f"Goal graph: {goal} ({len(graph.ids('action'))} actions; plan lit)   G: hide"
        surf.blit(self.text(head, (255, 255, 255), self.bold), (12, 8))
        return surf

    def _draw_help(self, screen: pygame.Surface) -> None:
        m = self.layout.map
        lh = self.line + 3
        w, h = 420, lh * (len(HELP) + 2) + 16
        box = pygame.Rect(0, 0, w, h)
        box.center = m.center
        overlay = pygame.Surface(box.size, pygame.SRCALPHA)
        overlay.fill((10, 12, 16, 225))
        screen.blit(overlay, box.topleft)
        pygame.draw.rect(screen, PANEL_EDGE, box, 1, border_radius=4)
        y = box.y + 10
        screen.blit(self.text("Keys", (255, 255, 255), self.bold), (box.x + 16, y))
        y += lh + 4
        for key, what in HELP:
            screen.blit(self.text(key, (255, 225, 90)), (box.x + 16, y))
            screen.blit(self.text(what), (box.x + 130, y))
            y += lh

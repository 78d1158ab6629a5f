"""Colours: one hue per kind of action (a legend group), shades of it per action, grey for idle; pure numpy.

A map of thousands of dots can show about a dozen hues that the eye tells apart, not 40. So each legend group
(see `goap.worldview.LegendGroup`) gets one well-separated hue, and the actions inside it get shades of that
hue, from lighter to darker: the map reads as "who is travelling, who is gathering", and the legend (or the
inspector) says which action exactly.
"""

from __future__ import annotations

import colorsys
from collections.abc import Sequence

import numpy as np

from goap.worldview import LegendGroup

IDLE = (150, 150, 150)
DEAD = (55, 55, 60)
OUTLINE = (15, 15, 20)

# Hand-picked, well separated colours first (so small domains get the clearest ones), then generated hues.
_BASE = (
    (255, 80, 80),    # red
    (80, 200, 255),   # sky
    (255, 210, 40),   # yellow
    (120, 255, 120),  # light green
    (255, 120, 230),  # pink
    (255, 150, 40),   # orange
    (160, 120, 255),  # violet
    (40, 255, 210),   # aqua
    (255, 255, 160),  # cream
    (200, 40, 120),   # crimson
    (40, 120, 255),   # blue
    (190, 255, 40),   # lime
    (255, 190, 170),  # salmon
    (140, 60, 210),   # purple
    (0, 180, 120),    # teal
    (230, 170, 255),  # lavender
)


def distinct_colours(n: int) -> list[tuple[int, int, int]]:
    """``n`` distinct saturated colours, never the idle grey: the hand-picked ones, then a golden-ratio walk."""
    cols = list(_BASE[:n])
    k = 0
    while len(cols) < n:
        # golden-ratio hue walk; alternate brightness and saturation so neighbours differ in two ways
        h = (0.07 + k * 0.618034) % 1.0
        s, v = ((0.95, 1.0), (0.55, 1.0), (0.9, 0.75))[k % 3]
        rgb = tuple(int(round(255 * x)) for x in colorsys.hsv_to_rgb(h, s, v))
        k += 1
        if rgb not in cols and rgb != IDLE:
            cols.append(rgb)  # type: ignore[arg-type]
    return cols  # type: ignore[return-value]


def shades(base: tuple[int, int, int], n: int) -> list[tuple[int, int, int]]:
    """``n`` shades of ``base``'s hue, lightest first; ``shades(c, 1) == [c]``.

    Lightness runs over a band around the base colour (in HLS), wide enough that neighbours differ by at least
    about 20 levels per channel, narrow enough to stay recognisably the same hue.
    """
    if n <= 1:
        return [tuple(int(v) for v in base)]  # type: ignore[list-item]
    h, light, s = colorsys.rgb_to_hls(*(v / 255.0 for v in base))
    span = min(0.5, 0.08 * (n - 1) + 0.16)
    lo = min(max(light - span / 2, 0.22), 0.86 - span)
    out: list[tuple[int, int, int]] = []
    for j in range(n):
        lj = lo + span * (1.0 - j / (n - 1))
        rgb = tuple(int(round(255 * x)) for x in colorsys.hls_to_rgb(h, lj, max(s, 0.55)))
        while rgb in out or rgb == IDLE:  # rounding can collide for huge groups: nudge, never repeat
            rgb = (rgb[0], rgb[1], (rgb[2] + 3) % 256)
        out.append(rgb)  # type: ignore[arg-type]
    return out


def action_colours(names: Sequence[str], groups: Sequence[LegendGroup] | None = None) -> np.ndarray:
    """uint8 [A + 1, 3]: row a is action a's colour; the last row is the idle grey, so ``table[action]`` with
    action -1 gives idle without a branch.

    Without ``groups`` every action gets its own hue (fine for small domains); with them, every group one hue
    and its actions shades of it (`shades`), in the group's order.
    """
    if groups is None:
        cols = distinct_colours(len(names))
    else:
        cols = [IDLE] * len(names)
        for base, grp in zip(distinct_colours(len(groups)), groups, strict=True):
            for k, c in zip(grp.actions, shades(base, len(grp.actions)), strict=True):
                cols[k] = c
    return np.array(list(cols) + [IDLE], dtype=np.uint8).reshape(-1, 3)


def group_colours(groups: Sequence[LegendGroup]) -> list[tuple[int, int, int]]:
    """The hue of each group (its swatch in the legend)."""
    return distinct_colours(len(groups))

"""Colours: one per action (distinct, saturated, never grey), grey for idle agents; pure numpy."""

from __future__ import annotations

import colorsys
from collections.abc import Sequence

import numpy as np

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


def action_colours(names: Sequence[str]) -> np.ndarray:
    """uint8 [A + 1, 3]: row a is action a's colour; the last row is the idle grey, so ``table[action]`` with
    action -1 gives idle without a branch."""
    cols = [c for c in _BASE[: len(names)]]
    k = 0
    while len(cols) < len(names):
        # golden-ratio hue walk; alternate brightness and saturation so neighbours differ in two ways
        h = (0.07 + k * 0.618034) % 1.0
        s, v = ((0.95, 1.0), (0.55, 1.0), (0.9, 0.75))[k % 3]
        rgb = tuple(int(round(255 * x)) for x in colorsys.hsv_to_rgb(h, s, v))
        k += 1
        if rgb not in cols and rgb != IDLE:
            cols.append(rgb)
    out = np.array(cols + [IDLE], dtype=np.uint8).reshape(-1, 3)
    return out

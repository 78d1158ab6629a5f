"""A pygame viewer for `goap.runtime.Brain` worlds: thousands of agents live, one agent's mind in detail.

The viewer reads only the Brain's public arrays and the world's public attributes; the engine never imports
pygame. Start it with ``goap view --world village`` (or ``python -m viewer --world village``); pygame comes
with ``pip install -e ".[viewer]"`` from a checkout.

Modules: `viewer.app` (command-line entry, the App controller), `viewer.render` (pygame drawing),
`viewer.sim` (the simulation thread and its snapshots), `viewer.inspector` (the selected agent's panel as
plain text), `viewer.worlds` (per-world drawing adapters), `viewer.palette` (colours). Only `viewer.render`
and the App import pygame, and only when a window is made.
"""

from viewer.inspector import inspector_lines

__all__ = ["inspector_lines"]

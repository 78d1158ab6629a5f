"""The view hooks a world gives the viewer: what its map looks like, what is copied per frame, the legend.

Pure numpy, no pygame and no Warp import, so a world package can import it without the viewer installed. A
world opts in by defining ``make_view(self) -> WorldView`` (usually a subclass of `WorldView` in its own
``view.py``); a world without one gets `WorldView` itself, which only needs ``positions`` [N, 2].

The hooks, each with a default, all called by the viewer (``viewer/``), never by the engine:

==========================  ====================  =======================================================
hook                        called                what it returns
==========================  ====================  =======================================================
``name`` (property)         once                  the title in the legend (``world.name``)
``size()``                  once                  (width, height) of the map in world units
``background()``            once                  uint8 [H, W, 3] image over the map (terrain), or None
``floor`` (attribute)       once                  the floor colour when there is no background
``walls()``                 once                  float32 [K, 4] rectangles (x0, y0, x1, y1)
``sites()``                 once                  a list of `SiteGroup` (static icons: trees, a medbay)
``legend_groups(actions)``  once                  a list of `LegendGroup`: actions grouped by kind
``legend`` (attribute)      by legend_groups      {group label: action names or fnmatch patterns}
``team_shapes`` (attr.)     each frame            draw team 0 as squares and team 1 as diamonds
``positions()``             each frame            float32 [N, 2] agent positions (world units)
``agent_arrays()``          each frame            per-agent arrays for drawing (``team``, ``alive``)
``target_of(i)``            each frame, selected  where agent i is heading, or None
==========================  ====================  =======================================================

Per-frame hooks run on the simulation's thread between ticks (the viewer copies what they return into a
snapshot), so they may read the world's arrays without locking. They should return only what a frame draws:
on a CUDA device every array read is a device-to-host copy. `to_host` turns a Warp array (or anything
array-like) into numpy: zero-copy for a CPU array, one copy for a CUDA one. `check_view` calls every hook
and checks what it returns, for a world's own tests.

Legend groups exist because a domain of 30+ actions has no 30 hues that can be told apart on a map: the
viewer gives each group one hue, and the actions of a group shades of it, so a glance shows what kind of work
agents do, and the legend still counts every action under its group. A world names its groups in ``legend``
(first matching group wins; an action that matches none goes to "other"; a name that matches no action is a
`LegendWarning`, so a renamed action never stops the viewer); without one, actions are grouped by the word
before their first underscore (``go_home``, ``go_forest`` -> "go").
"""

from __future__ import annotations

import fnmatch
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


def to_host(a: Any, copy: bool = False) -> np.ndarray:
    """A numpy array of ``a``: a Warp array's ``.numpy()`` (a zero-copy view on the CPU, a copy from CUDA),
    or ``np.asarray`` of anything else. ``copy=True`` guarantees memory the caller owns (a snapshot that the
    next tick must not change)."""
    if a is None:
        raise TypeError("to_host(None): the world or brain has no such array")
    if not isinstance(a, np.ndarray) and callable(getattr(a, "numpy", None)) and hasattr(a, "device"):
        out = a.numpy()
        on_cpu = str(getattr(a, "device", "cpu")) == "cpu"
        return np.array(out, copy=True) if copy and on_cpu else out
    return np.array(a, copy=True) if copy else np.asarray(a)


def to_host_row(a: Any, i: int) -> np.ndarray:
    """Row ``i`` of a per-agent array as numpy; from CUDA only that row crosses to the host."""
    if not isinstance(a, np.ndarray) and callable(getattr(a, "numpy", None)) and hasattr(a, "device"):
        if str(a.device) == "cpu":  # a zero-copy view costs less than a sliced array object
            return np.array(a.numpy()[i], copy=True)
        return np.array(a[i : i + 1].numpy()[0], copy=True)
    return np.array(np.asarray(a)[i], copy=True)


@dataclass
class SiteGroup:
    """Static points drawn as one kind of icon (``shape``: square, circle, diamond, ring, triangle, house)."""

    label: str
    points: np.ndarray  # float32 [K, 2], world units
    colour: tuple[int, int, int]
    shape: str
    size: float = 0.7  # in world units (cells); the renderer clamps it to a few pixels
    letter: str = ""  # drawn on the icon when it is large enough

    def __post_init__(self) -> None:
        pts = to_host(self.points).astype(np.float32, copy=False)
        if pts.size and pts.shape[-1] != 2:
            raise ValueError(f"site group '{self.label}': points must be [K, 2] (x, y), got shape {pts.shape}")
        self.points = pts.reshape(-1, 2)  # [K, 1, 2] and the like, as a world's tables often come, flattened


@dataclass(frozen=True)
class LegendGroup:
    """One kind of action in the legend: a label and the indices (into the domain's actions) it holds."""

    label: str
    actions: tuple[int, ...]


#: The label of the group that collects actions no named group matched.
OTHER = "other"


def group_by_prefix(actions: Sequence[str], max_groups: int = 10) -> list[LegendGroup]:
    """Actions grouped by the word before their first ``_`` (``go_home`` and ``go_mine`` -> "go").

    A word that only one action starts with keeps that action's own name as its label while there are at most
    ``max_groups`` groups; beyond that, such single actions share one "other" group, so that a big domain with
    a few shared prefixes still gets a short legend, unless that would put more than half of the actions in
    "other" (one hue for most of the map says less than one hue each). Groups keep the order of their first
    action.
    """
    order: list[str] = []
    members: dict[str, list[int]] = {}
    for k, name in enumerate(actions):
        word = name.split("_", 1)[0] or name
        if word not in members:
            order.append(word)
            members[word] = []
        members[word].append(k)
    shared = [w for w in order if len(members[w]) > 1]
    single = [w for w in order if len(members[w]) == 1]
    if len(shared) + len(single) <= max_groups or 2 * len(single) > len(actions):
        return [LegendGroup(w if len(members[w]) > 1 else actions[members[w][0]], tuple(members[w])) for w in order]
    out = [LegendGroup(w, tuple(members[w])) for w in shared]
    rest = tuple(sorted(members[w][0] for w in single))
    return out + ([LegendGroup(OTHER, rest)] if rest else [])


class LegendWarning(UserWarning):
    """A world's ``legend`` names an action the domain does not have (a typo, or an action renamed since)."""


def group_by_mapping(actions: Sequence[str], mapping: Mapping[str, Sequence[str] | str],
                     strict: bool = False) -> list[LegendGroup]:
    """Actions grouped as ``mapping`` says: ``{label: [name or fnmatch pattern, ...]}``.

    An action goes to the first group (in the mapping's order) with a pattern that matches it; actions no
    pattern matches go to a last "other" group. Groups that end up empty are dropped.

    A pattern that matches no action is a `LegendWarning` (the viewer still opens, the stray actions show under
    "other"), or a ValueError with ``strict`` (for a world's own tests).

    Raises:
        ValueError: with ``strict``, a pattern that matches no action, naming the group and the pattern; always,
            an "other" label given explicitly alongside unmatched actions.
    """
    taken = [-1] * len(actions)
    for g, (label, patterns) in enumerate(mapping.items()):
        pats = (patterns,) if isinstance(patterns, str) else tuple(patterns)
        for pat in pats:
            hits = [k for k, name in enumerate(actions) if fnmatch.fnmatchcase(name, pat)]
            if not hits:
                msg = f"legend group '{label}': '{pat}' matches no action of the domain"
                if strict:
                    raise ValueError(msg)
                warnings.warn(msg, LegendWarning, stacklevel=2)
            for k in hits:
                if taken[k] < 0:
                    taken[k] = g
    labels = list(mapping)
    out = [LegendGroup(str(label), tuple(k for k in range(len(actions)) if taken[k] == g))
           for g, label in enumerate(labels)]
    out = [grp for grp in out if grp.actions]
    rest = tuple(k for k in range(len(actions)) if taken[k] < 0)
    if rest:
        if OTHER in labels:
            raise ValueError(f"legend group '{OTHER}' is given, and these actions match no group: "
                             + ", ".join(actions[k] for k in rest))
        out.append(LegendGroup(OTHER, rest))
    return out


class WorldView:
    """Any world with ``positions`` [N, 2]: a plain floor sized to the agents' extent; subclass to draw more."""

    floor = (40, 44, 52)
    team_shapes = False
    #: {group label: action names or fnmatch patterns}; None: group by name prefix (see `group_by_prefix`).
    legend: Mapping[str, Sequence[str] | str] | None = None

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
        if pos is None or not len(pos) or not np.isfinite(pos).any():
            return 1.0, 1.0
        return float(np.nanmax(pos[:, 0])) + 1.0, float(np.nanmax(pos[:, 1])) + 1.0

    def positions(self) -> np.ndarray:
        """float [N, 2] positions in world units (NaN: not on the map)."""
        return to_host(self.world.positions)

    def background(self) -> np.ndarray | None:
        """uint8 [H, W, 3] image covering the world (one pixel per cell), or None for a plain floor."""
        return None

    def walls(self) -> np.ndarray:
        """float32 [K, 4] rectangles (x0, y0, x1, y1) in world units."""
        return np.zeros((0, 4), np.float32)

    def sites(self) -> list[SiteGroup]:
        return []

    def legend_groups(self, actions: Sequence[str]) -> list[LegendGroup]:
        """The domain's actions (names, in domain order) grouped by kind for the legend and the colours.

        Every action is in exactly one group. The default uses ``legend`` when the view sets it, else the
        names' prefixes; override to group by anything else (a world's own table of roles, say).
        """
        if self.legend is not None:
            return group_by_mapping(actions, self.legend)
        return group_by_prefix(actions)

    def agent_arrays(self) -> dict[str, np.ndarray]:
        """Per-agent arrays the renderer needs each frame besides positions (copied under the snapshot lock)."""
        out = {}
        for key in ("team", "alive"):
            arr = getattr(self.world, key, None)
            if arr is not None:
                out[key] = to_host(arr, copy=True)
        return out

    def target_of(self, i: int) -> tuple[float, float] | None:
        """Where agent i is heading (``world.targets[i]``), or None."""
        targets = getattr(self.world, "targets", None)
        if targets is None or not 0 <= i < len(targets):
            return None
        t = to_host_row(targets, i)
        return (float(t[0]), float(t[1])) if np.all(np.isfinite(t)) else None


TEAM_COLOURS = ((90, 160, 255), (255, 110, 90))


def make_view(world: Any) -> WorldView:
    """The world's own view (``world.make_view()``) or a plain `WorldView`."""
    factory = getattr(world, "make_view", None)
    return factory() if callable(factory) else WorldView(world)


def check_legend(groups: Sequence[LegendGroup], actions: Sequence[str]) -> list[LegendGroup]:
    """``groups`` if every action index appears in exactly one group; ValueError naming the first that does not.

    The viewer calls it on what ``legend_groups`` returned, so an override's mistake is reported, not drawn.
    """
    seen: dict[int, str] = {}
    for grp in groups:
        for k in grp.actions:
            if not 0 <= k < len(actions):
                raise ValueError(
                    f"legend group '{grp.label}': action index {k} is not an action (0..{len(actions) - 1})"
                )
            if k in seen:
                raise ValueError(f"action '{actions[k]}' is in legend groups '{seen[k]}' and '{grp.label}'")
            seen[k] = grp.label
    missing = [actions[k] for k in range(len(actions)) if k not in seen]
    if missing:
        raise ValueError("actions in no legend group: " + ", ".join(missing))
    return list(groups)


def check_view(world: Any, n_agents: int | None = None) -> WorldView:
    """The world's view, after checking every hook returns what the viewer draws; ValueError naming each problem.

    For a world's own tests (after ``reset``): positions [N, 2] finite or NaN, a background of [H, W, 3] uint8,
    walls [K, 4], sites with [K, 2] points, per-agent arrays of length N, a legend that names only actions the
    domain has and puts every action in one group. ``n_agents`` is N (default: the length of ``positions``).
    """
    view = make_view(world)
    problems: list[str] = []
    pos = np.asarray(view.positions())
    n = len(pos) if n_agents is None else int(n_agents)
    if pos.ndim != 2 or pos.shape != (n, 2):
        problems.append(f"positions() has shape {pos.shape}, expected ({n}, 2)")
    elif np.isinf(pos).any():
        problems.append("positions() has infinite values (use NaN for an agent not on the map)")
    w, h = view.size()
    if not (np.isfinite(w) and np.isfinite(h) and w > 0 and h > 0):
        problems.append(f"size() is ({w}, {h}), expected positive finite numbers")
    bg = view.background()
    if bg is not None:
        bg = np.asarray(bg)
        if bg.ndim != 3 or bg.shape[2] != 3 or bg.dtype != np.uint8:
            problems.append(f"background() is {bg.dtype} {bg.shape}, expected uint8 [H, W, 3]")
    walls = np.asarray(view.walls())
    if walls.ndim != 2 or walls.shape[1:] != (4,):
        problems.append(f"walls() has shape {walls.shape}, expected [K, 4]")
    try:
        view.sites()
    except ValueError as e:
        problems.append(str(e))
    for key, arr in view.agent_arrays().items():
        if len(arr) != n:
            problems.append(f"agent_arrays()['{key}'] has {len(arr)} rows, expected {n}")
    names = [a.name for a in world.domain.actions]
    try:
        if view.legend is not None:
            group_by_mapping(names, view.legend, strict=True)
        check_legend(view.legend_groups(names), names)
    except ValueError as e:
        problems.append(str(e))
    if problems:
        raise ValueError(f"view of world '{getattr(world, 'name', world)}': " + "; ".join(problems))
    return view


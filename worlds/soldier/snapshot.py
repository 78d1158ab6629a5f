"""Snapshots of the soldier world: every array that defines it, as host copies, and their restore with checks.

`get_state` saves the troop arrays (`TROOP_ARRAYS`, scratch excepted), the field's arrays (`FIELD_ARRAYS`: the map
and what changes during a run), the clock, the counters, the seed and the field's size. `set_state` checks all of
it (present, dtype, shape, indices in range, positions finite and inside the map, every
counted or flagged value in its range) before it writes anything, so a bad snapshot leaves the world as it
was; the map comes from the snapshot, whatever seed the world was laid out with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import warp as wp

from worlds.soldier.layout import (
    DOMAIN,
    F_AT,
    FIELD_ARRAYS,
    FIELD_FIXED,
    MAX_AMMO,
    MAX_GREN,
    MAX_HEALTH,
    MAX_MAGS,
    STATS,
    TROOP_ARRAYS,
    with_rules,
)
from worlds.soldier.objective import MERIT

if TYPE_CHECKING:
    from worlds.soldier.world import SoldierWorld

_WHERE = "soldier world state"


def get_state(world: SoldierWorld) -> dict[str, np.ndarray]:
    """Host copies of every array that defines ``world`` now."""
    out: dict[str, np.ndarray] = {}
    for name in TROOP_ARRAYS:
        out[f"troops/{name}"] = getattr(world.troops, name).numpy().copy()
    for name in FIELD_ARRAYS:
        out[f"field/{name}"] = getattr(world.field, name).numpy().copy()
    out["clock"] = world.clock.numpy().copy()
    out["stats"] = world.stats.numpy().copy()
    out["contribution"] = world._contribution.numpy().copy()
    out["merit"] = world.merit.numpy().copy()
    out["seed"] = np.array([world.seed], np.int64)
    out["size"] = np.array([world.width, world.height], np.float64)
    return out


def _get(arrays: dict[str, Any], key: str, npt: Any, tail: tuple[int, ...], rows: int | None) -> np.ndarray:
    """``arrays[key]``, checked: a numpy array of dtype ``npt``, rows of shape ``tail`` (``rows`` of them, if set)."""
    if key not in arrays:
        raise ValueError(f"{_WHERE}: field '{key}' is missing")
    v = arrays[key]
    if not isinstance(v, np.ndarray):
        raise ValueError(f"{_WHERE}: field '{key}' is not an array")
    if v.dtype != np.dtype(npt):
        raise ValueError(f"{_WHERE}: field '{key}' has dtype {v.dtype}, expected {np.dtype(npt)}")
    if v.ndim != 1 + len(tail) or tuple(v.shape[1:]) != tail or (rows is not None and v.shape[0] != rows):
        want = ((rows if rows is not None else "K"), *tail)
        raise ValueError(f"{_WHERE}: field '{key}' has shape {v.shape}, this world has {want}")
    return v


def check_state(world: SoldierWorld, arrays: dict[str, Any]) -> dict[str, np.ndarray]:
    """Every array of a snapshot for ``world``, checked; raises ValueError naming the first bad one."""
    got: dict[str, np.ndarray] = {}
    for name, (_dtype, npt, tail) in TROOP_ARRAYS.items():
        got[f"troops/{name}"] = _get(arrays, f"troops/{name}", npt, tail, max(1, world.n))
    for name, (_dtype, npt, tail) in FIELD_ARRAYS.items():
        rows = getattr(world.field, name).shape[0] if name in FIELD_FIXED else None
        got[f"field/{name}"] = _get(arrays, f"field/{name}", npt, tail, rows)
    got["clock"] = _get(arrays, "clock", np.int32, (), 1)
    got["stats"] = _get(arrays, "stats", np.int64, (), len(STATS))
    got["contribution"] = _get(arrays, "contribution", np.float64, (), max(1, world.n))
    got["merit"] = _get(arrays, "merit", np.int64, (), len(MERIT))
    got["seed"] = _get(arrays, "seed", np.int64, (), 1)
    got["size"] = _get(arrays, "size", np.float64, (), 2)
    if tuple(got["size"]) != (world.width, world.height):
        raise ValueError(f"{_WHERE}: field 'size' is {tuple(got['size'])}, this world is {world.width} x "
                         f"{world.height} m")
    k, n_slots = len(got["field/walls"]), len(got["field/slot_pos"])
    for name, rows in (("wall_slots", k + 1), ("wall_free", k), ("slot_normal", n_slots),
                       ("slot_wall", n_slots), ("slot_owner", n_slots)):
        if len(got[f"field/{name}"]) != rows:
            raise ValueError(f"{_WHERE}: field 'field/{name}' has {len(got[f'field/{name}'])} rows, the "
                             f"snapshot's walls and slots need {rows}")
    for name, hi in (("tile_wall", k), ("slot_wall", k), ("slot_owner", world.n), ("troops/target", world.n),
                     ("troops/slot", n_slots), ("troops/tslot", n_slots)):
        v = got[name if "/" in name else f"field/{name}"]
        if len(v) and (v.min() < -1 or v.max() >= max(1, hi)):
            raise ValueError(f"{_WHERE}: field '{name}' holds an index outside -1..{max(1, hi) - 1}")
    _check_values(world, got, n_slots)
    return got


def _check_values(world: SoldierWorld, got: dict[str, np.ndarray], n_slots: int) -> None:
    """The values the kernels index with or compare against fixed ranges: a position outside the map or a team 9
    would send a grid key or a tile lookup past its array (a crash after an accepted restore)."""
    for name in ("troops/pos", "troops/tpos", "field/slot_pos"):
        v = got[name]
        if not np.isfinite(v).all() or (v < 0).any() or (v[..., 0] > world.width).any() \
                or (v[..., 1] > world.height).any():
            raise ValueError(f"{_WHERE}: field '{name}' holds a position that is not finite or is outside the "
                             f"{world.width} x {world.height} m map")
    for name in ("troops/tdist", "field/walls", "field/slot_normal", "contribution"):
        if not np.isfinite(got[name]).all():
            raise ValueError(f"{_WHERE}: field '{name}' is not finite")
    n_obj = len(got["field/obj_owner"])
    ranges = {
        "troops/team": (0, 1), "troops/health": (0, int(MAX_HEALTH)), "troops/ammo": (0, int(MAX_AMMO)),
        "troops/magazines": (0, int(MAX_MAGS)), "troops/grenades": (0, int(MAX_GREN)), "troops/slide": (0, 4),
        "troops/at": (0, len(DOMAIN.facts[F_AT].labels) - 1), "troops/aimed_at": (0, world.n),
        "troops/aiming": (0, world.n), "field/obj_owner": (-1, 1), "field/squad_obj": (0, max(0, n_obj - 1)),
        "field/wall_slots": (0, n_slots), "field/wall_free": (0, n_slots), "clock": (0, 2**31 - 1),
        "stats": (0, 2**62), "merit": (0, 2**62),
    }
    ranges.update({f"troops/{b}": (0, 1) for b in ("alive", "medkit", "drawn", "in_cover", "visible", "in_sight",
                                                  "pinned", "covered", "under_fire")})
    for name, (lo, hi) in ranges.items():
        v = got[name]
        if v.size and (v.min() < lo or v.max() > hi):
            raise ValueError(f"{_WHERE}: field '{name}' holds values outside {lo}..{hi}")
    if (np.diff(got["field/wall_slots"]) < 0).any():
        raise ValueError(f"{_WHERE}: field 'field/wall_slots' is not a sorted list of slot ranges")


def set_state(world: SoldierWorld, arrays: dict[str, Any]) -> None:
    """Restore a snapshot into ``world`` (checked whole first). The arrays whose length comes with the snapshot's
    walls are new, so the world gets a new `Field` value (and a new `SoldierWorld.graph_key`)."""
    got = check_state(world, arrays)
    dev = world.device
    for name in TROOP_ARRAYS:
        getattr(world.troops, name).assign(np.ascontiguousarray(got[f"troops/{name}"]))
    fresh: dict[str, Any] = {}
    for name, (dtype, _npt, _tail) in FIELD_ARRAYS.items():
        v = np.ascontiguousarray(got[f"field/{name}"])
        if name in FIELD_FIXED:
            getattr(world.field, name).assign(v)
        else:
            fresh[name] = wp.array(v, dtype=dtype, device=dev)
    fresh["slot_claim"] = wp.full(len(got["field/slot_pos"]), 2**31 - 1, dtype=wp.int32, device=dev)
    world.clock.assign(got["clock"])
    world.stats.assign(got["stats"])
    world._contribution.assign(got["contribution"])
    world.merit.assign(got["merit"])
    world.seed = int(got["seed"][0])
    world.field = with_rules(world.field, world.rules, seed=world.seed, **fresh)
    world.troops.damage.zero_()
    world.troops.flushed.zero_()
    world.troops.cand.fill_(-1)
    world._relaid()

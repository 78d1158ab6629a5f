"""The village's snapshots: `get_state` (host copies of every array that defines the world) and `set_state`.

`set_state` checks every field's presence, dtype, shape and range before it writes anything, so a bad snapshot
raises ValueError naming the field and leaves the world as it was. A snapshot carries its map: restoring it into a
world laid out for another seed (another number of sites) gives the snapshot's map.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from worlds.village.layout import MAX_STOCK, N_KINDS, RES, TERRAIN_NAMES, TRADES

if TYPE_CHECKING:
    from worlds.village.world import VillageWorld

#: Per-agent arrays (their shapes are fixed by the brain) and the map's arrays (sized by the snapshot's map), by
#: the world's attribute names; a snapshot names them without the leading underscore.
AGENT_STATE = (
    "home", "_positions", "trade", "phase", "base_priority", "cur_action", "target", "claim", "progress", "waited",
    "searched", "_contribution",
)
MAP_STATE = ("site_pos", "site_kind", "site_max", "site_stock", "site_owner", "bucket", "field", "nearest")
STATE = (*MAP_STATE, *AGENT_STATE, "tallies", "starved")


def get_state(world: VillageWorld) -> dict[str, np.ndarray]:
    """Host copies of the world's arrays, its terrain, its tick (int64, shape ()) and its seed."""
    out = {name.lstrip("_"): getattr(world, name).numpy().copy() for name in STATE}
    out["terrain"] = world.terrain.copy()
    out["tick"] = np.array(world.tick, dtype=np.int64)
    out["seed"] = np.array(world.seed, dtype=np.int64)
    return out


def check_state(world: VillageWorld, arrays: dict[str, Any]) -> dict[str, np.ndarray]:
    """The snapshot's fields as numpy arrays, each checked (presence, dtype, shape, range); ValueError names the
    first bad one."""
    got: dict[str, np.ndarray] = {}

    def field(name: str, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
        if name not in arrays:
            raise ValueError(f"world state: missing field '{name}'")
        x = np.asarray(arrays[name])
        if x.dtype != np.dtype(dtype) or x.shape != shape:
            raise ValueError(f"world state: field '{name}' is {x.dtype}{list(x.shape)}, expected "
                             f"{np.dtype(dtype)}{list(shape)}")
        got[name] = x
        return x

    terrain = np.asarray(arrays.get("terrain", np.zeros((0,), np.uint8)))
    if terrain.ndim != 2 or terrain.dtype != np.uint8 or terrain.shape[0] % RES or terrain.shape[1] % RES \
            or terrain.size == 0 or terrain.max(initial=0) >= len(TERRAIN_NAMES):
        raise ValueError(f"world state: field 'terrain' is {terrain.dtype}{list(terrain.shape)}, expected a "
                         f"uint8 grid of terrain codes 0..{len(TERRAIN_NAMES) - 1} with sides multiple of {RES}")
    got["terrain"] = terrain
    height, width = terrain.shape
    n_cells = (width // RES) * (height // RES)
    pos = np.asarray(arrays.get("site_pos", np.zeros((0,), np.float32)))
    S = len(pos) if pos.ndim == 2 else -1
    field("site_pos", np.float32, (max(S, 0), 2))
    for name in ("site_kind", "site_max", "site_stock", "site_owner"):
        field(name, np.int32, (S,))
    field("bucket", np.int32, (N_KINDS * n_cells + 1,))
    field("field", np.int32, (N_KINDS, n_cells))
    field("nearest", np.int32, (N_KINDS, n_cells))
    for name in AGENT_STATE + ("tallies", "starved"):
        mine = getattr(world, name).numpy()
        field(name.lstrip("_"), mine.dtype, mine.shape)
    field("tick", np.int64, ())
    field("seed", np.int64, ())
    N = len(got["home"])
    checks = {
        "site_kind": (0, N_KINDS - 1), "site_owner": (-1, N - 1), "home": (0, S - 1), "field": (-1, S - 1),
        "nearest": (-1, S - 1), "target": (-1, S - 1), "claim": (-1, S - 1), "bucket": (0, S),
        "cur_action": (-1, len(world.action_names) - 1), "site_stock": (0, max(MAX_STOCK.values())),
        "site_max": (0, max(MAX_STOCK.values())), "trade": (0, len(TRADES) - 1), "tick": (0, 2**62),
        "seed": (0, 0x3FFFFFFF),
    }
    for name, (lo, hi) in checks.items():
        x = got[name]
        if x.size and (x.min() < lo or x.max() > hi):
            raise ValueError(f"world state: field '{name}' holds values outside {lo}..{hi}")
    if (np.diff(got["site_kind"]) < 0).any() or (np.diff(got["bucket"]) < 0).any() or \
            (len(got["bucket"]) and got["bucket"][-1] != S):
        raise ValueError("world state: fields 'site_kind' and 'bucket' are not sorted site buckets")
    if (got["site_stock"] > got["site_max"]).any():
        raise ValueError("world state: field 'site_stock' holds more than 'site_max' allows")
    for name in ("site_pos", "positions"):
        x = got[name]
        if not np.isfinite(x).all() or (x < 0).any() or (x[..., 0] > width).any() or (x[..., 1] > height).any():
            raise ValueError(f"world state: field '{name}' holds a position that is not finite or is outside the "
                             f"{width} x {height} map")
    if not np.isfinite(got["base_priority"]).all():  # copied into the brain's priorities every sense
        raise ValueError("world state: field 'base_priority' is not finite")
    if not np.isfinite(got["contribution"]).all():
        raise ValueError("world state: field 'contribution' is not finite")
    for name in ("progress", "waited", "searched", "tallies", "starved"):
        if got[name].size and got[name].min() < 0:
            raise ValueError(f"world state: field '{name}' holds a negative count")
    return got


def set_state(world: VillageWorld, arrays: dict[str, Any]) -> None:
    """Check everything (`check_state`), then write: the map's arrays are new arrays (the map may differ in size),
    the per-agent arrays, tallies and clock are written in place."""
    got = check_state(world, arrays)
    world._load_map(got["terrain"], {name: got[name] for name in MAP_STATE})
    for name in AGENT_STATE + ("tallies", "starved"):
        getattr(world, name).assign(got[name.lstrip("_")])
    world._clock.assign(got["tick"].reshape(1))
    world.seed = int(got["seed"])

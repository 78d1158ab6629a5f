"""Example worlds: each folder holds a domain file, a problem set and a README.

The engine and its tools never import this package: they find the worlds through the ``warp_goap.worlds`` entry
points that ``pyproject.toml`` declares (`goap.registry`), as they find a game's. `WORLDS` and `make_world` are
here for scripts run from a checkout; `WORLDS` names the same classes as those entry points (a test holds them
to it).
"""

import importlib
import pathlib
from typing import Any

WORLDS_DIR = pathlib.Path(__file__).parent


def domain_path(name: str) -> pathlib.Path:
    """The domain file of the world ``name`` (``worlds/<name>/domain.toml``); ValueError for an unknown world."""
    known = sorted(p.name for p in WORLDS_DIR.iterdir() if (p / "domain.toml").is_file())
    if name not in known:
        raise ValueError(f"unknown world {name!r} (known: {', '.join(known) or 'none'})")
    return WORLDS_DIR / name / "domain.toml"


#: world name -> "module:Class" of its simulation (a `goap.world.World`); pyproject.toml's entry points, again.
WORLDS = {
    "village": "worlds.village.world:VillageWorld",
    "soldier": "worlds.soldier.world:SoldierWorld",
}


def make_world(name: str, **options: Any) -> Any:
    """A new simulation of the world ``name``; ValueError naming the known worlds for any other name."""
    if name not in WORLDS:
        raise ValueError(f"unknown world {name!r} (known: {', '.join(sorted(WORLDS))})")
    module, cls = WORLDS[name].split(":")
    return getattr(importlib.import_module(module), cls)(**options)

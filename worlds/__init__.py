"""Example worlds: each folder holds a domain file, a problem set and a README."""

import pathlib

WORLDS_DIR = pathlib.Path(__file__).parent


def domain_path(name: str) -> pathlib.Path:
    """The domain file of the world ``name`` (``worlds/<name>/domain.toml``); ValueError for an unknown world."""
    known = sorted(p.name for p in WORLDS_DIR.iterdir() if (p / "domain.toml").is_file())
    if name not in known:
        raise ValueError(f"unknown world {name!r} (known: {', '.join(known) or 'none'})")
    return WORLDS_DIR / name / "domain.toml"

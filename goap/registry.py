"""Which world a command runs (names registered by installed packages, ``package.module:Class``, run-time names),
and which planners ``goap bench`` accepts (`planner_catalogue`, what ``goap planners`` lists).

Every command that takes ``--world`` (``goap run``, ``goap view``, ``goap bench --suite world:...``) resolves it
with `load_world`, so a game's own world gets the same tools as the example worlds. A spec is one of:

* a name registered by an installed package under the entry point group ``warp_goap.worlds``; the example
  worlds ``village`` and ``soldier`` (the ``worlds`` package of a checkout) are registered there by warp-goap's
  own ``pyproject.toml``, exactly as a game registers its world, so the engine never imports them by name;
* a name registered at run time with `register_world` (tests, notebooks);
* ``package.module:Attr``, where ``Attr`` is a World class or a function returning a World (``Attr`` may be a
  dotted path inside the module, ``pkg.mod:Factory.create``). The module is imported from ``sys.path`` with
  the working directory appended, so ``goap run --world mygame.world:MyWorld`` works from a game's checkout.

A package registers its world in its ``pyproject.toml``::

    [project.entry-points."warp_goap.worlds"]
    harbour = "harbour_game.goap_world:HarbourWorld"

after which ``goap run --world harbour`` works once the package is installed (``pip install -e .``). Entry
points live in the installed metadata, so a checkout whose ``pyproject.toml`` gained a world needs that command
again; asking for an example world that the metadata lacks says so. A name that is registered twice (a package
shadowing an example world, two packages claiming one name) is an error that names both targets when it is
asked for, never a silent choice; other names keep working.

A world is checked against the `goap.world.World` protocol as it is made, so a class missing ``act`` or
``domain`` fails here with the members it lacks, not later with an AttributeError in the middle of a tick.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from goap.domain import Domain

#: The entry point group a package uses to register its worlds.
ENTRY_POINT_GROUP = "warp_goap.worlds"

#: Members every world has (the `goap.world.World` protocol): attributes, then methods.
WORLD_ATTRIBUTES = ("name", "domain")
WORLD_METHODS = ("reset", "sense", "act", "score", "get_state", "set_state")

#: The distribution whose entry points register the example worlds, and their names (its pyproject.toml).
DISTRIBUTION = "warp-goap"
EXAMPLE_WORLDS = ("soldier", "village")

#: Worlds registered at run time with `register_world` (name -> "module:Attr" or a callable).
_RUNTIME: dict[str, str | Callable[..., Any]] = {}


class WorldSpecError(ValueError):
    """A ``--world`` spec that names no world, or names something that is not a World.

    A ValueError, so every command reports it in one line (``goap: error: ...``) with exit status 1.
    """


def _installed_version() -> str | None:
    """The installed version of warp-goap, or None when its metadata is nowhere on ``sys.path``."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def _not_installed(name: str) -> str:
    """Why the example world ``name`` does not resolve, and the command that fixes it."""
    version = _installed_version()
    why = (
        "which is not installed: run `pip install -e .` in the checkout"
        if version is None
        else f"and the installed warp-goap {version} has no such entry point (it was installed before pyproject.toml "
        "declared it): run `pip install -e .` again in the checkout"
    )
    return (
        f"world '{name}' is an example world, found through the '{ENTRY_POINT_GROUP}' entry points of the "
        f"{DISTRIBUTION} package, {why} (or name its class: 'package.module:Class')"
    )


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    return list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def _origin(ep: importlib.metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    name = getattr(dist, "name", None) or (dist.metadata["Name"] if dist is not None else None)
    return f"entry point '{ep.name}' of {name}" if name else f"entry point '{ep.name}'"


def _ep_target(ep: importlib.metadata.EntryPoint) -> str:
    """``module:attr`` of an entry point, without the ``[extras]`` an entry point value may carry."""
    value = ep.value.split("[", 1)[0].strip()
    return value if ":" in value else f"{value}:"


def _collect() -> tuple[dict[str, str], dict[str, str]]:
    """(name -> target, name -> why it is ambiguous) over entry points and run-time names."""
    out: dict[str, str] = {}
    source: dict[str, str] = {}
    clashes: dict[str, str] = {}
    for ep in _entry_points():
        target = _ep_target(ep)
        if ep.name in out and out[ep.name] != target:
            clashes[ep.name] = (
                f"world name '{ep.name}' is registered twice: {source[ep.name]} ({out[ep.name]}) and "
                f"{_origin(ep)} ({target}); rename one of them"
            )
            continue
        out[ep.name], source[ep.name] = target, _origin(ep)
    for name, target in _RUNTIME.items():
        out[name] = target if isinstance(target, str) else _qualname(target)  # register_world refused clashes
    for name in clashes:
        out.pop(name, None)
    return dict(sorted(out.items())), clashes


def known_worlds() -> dict[str, str]:
    """Every world name that resolves, with where it comes from (``module:Attr``), sorted by name.

    A name two sources claim is left out (see `ambiguous_worlds`); asking for it is an error naming both.
    """
    return _collect()[0]


def ambiguous_worlds() -> dict[str, str]:
    """Names claimed by two sources (a package shadowing an example world, two packages), each with the error."""
    return _collect()[1]


def register_world(name: str, target: str | Callable[..., Any], *, replace: bool = False) -> None:
    """Make ``name`` resolve to ``target`` (``module:Attr`` or a World class / factory) in this process.

    Args:
        name: the name commands accept; letters, digits, ``_`` and ``-`` (no ``:``).
        target: what `load_world` makes for that name.
        replace: allow replacing a name registered earlier with `register_world` (never an entry point's name,
            the example worlds' included).

    Raises:
        WorldSpecError: a bad name, a target that is neither, or a name taken.
    """
    if not name or not all(c.isalnum() or c in "_-" for c in name):
        raise WorldSpecError(f"world name {name!r} must be letters, digits, '_' or '-'")
    if not (callable(target) or (isinstance(target, str) and ":" in target)):
        raise WorldSpecError(f"world '{name}': target must be 'package.module:Class' or a callable, got {target!r}")
    known, clashes = _collect()
    static = {n: t for n, t in known.items() if n not in _RUNTIME}
    if name in static or name in clashes:
        raise WorldSpecError(f"world name '{name}' is taken ({static.get(name) or clashes[name]})")
    if name in _RUNTIME and not replace:
        raise WorldSpecError(f"world name '{name}' is already registered; pass replace=True to change it")
    _RUNTIME[name] = target


def unregister_world(name: str) -> None:
    """Forget a name registered with `register_world` (KeyError if it was not)."""
    del _RUNTIME[name]


def resolve_world(spec: str) -> tuple[str, Callable[..., Any]]:
    """The World class or factory a spec names, without making a world: ``(label, factory)``.

    ``label`` is what outputs call the world: the name for a registered world, the spec otherwise.

    Raises:
        WorldSpecError: an unknown name (listing the known ones), a module that cannot be imported, a missing
            attribute, or an attribute that cannot make a world.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise WorldSpecError(f"a world is a name or 'package.module:Class', got {spec!r}")
    spec = spec.strip()
    if ":" not in spec:
        runtime = _RUNTIME.get(spec)
        if runtime is not None and not isinstance(runtime, str):
            return spec, runtime
        known, clashes = _collect()
        if spec in clashes:
            raise WorldSpecError(clashes[spec])
        if spec not in known and spec in EXAMPLE_WORLDS:
            raise WorldSpecError(_not_installed(spec))
        if spec not in known:
            names = ", ".join(known) or "none"
            hint = " (did you mean 'module:Class'?)" if "." in spec else ""
            raise WorldSpecError(
                f"unknown world '{spec}'{hint}; known worlds: {names}; or give a class as 'package.module:Class' "
                f"(packages register more under the '{ENTRY_POINT_GROUP}' entry point group)"
            )
        return spec, _import_target(known[spec], f"world '{spec}' ({known[spec]})")
    return spec, _import_target(spec, f"world '{spec}'")


def _import_target(target: str, what: str) -> Callable[..., Any]:
    module_name, _, attr_path = target.partition(":")
    if not module_name or not attr_path or ":" in attr_path:
        raise WorldSpecError(f"{what}: expected 'package.module:Class', got '{target}'")
    _cwd_on_path()
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name is not None and (module_name == e.name or module_name.startswith(e.name + ".")):
            raise WorldSpecError(
                f"{what}: no module named '{e.name}' (is the package installed, or the directory on PYTHONPATH?)"
            ) from None
        raise WorldSpecError(f"{what}: importing '{module_name}' failed: {type(e).__name__}: {e}") from None
    except Exception as e:  # a module that raises on import: say so, with its own message
        raise WorldSpecError(f"{what}: importing '{module_name}' failed: {type(e).__name__}: {e}") from None
    obj: Any = module
    for part in attr_path.split("."):
        if not hasattr(obj, part):
            where = module_name if obj is module else f"{module_name}:{attr_path.rsplit('.', 1)[0]}"
            have = _world_like_names(module) if obj is module else []
            hint = f" (world classes there: {', '.join(have)})" if have else ""
            raise WorldSpecError(f"{what}: '{where}' has no attribute '{part}'{hint}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise WorldSpecError(f"{what}: '{target}' is a {type(obj).__name__}, not a World class or factory")
    return obj


def _cwd_on_path() -> None:
    """Let ``mygame.world:MyWorld`` import from the current directory, as ``python -m`` would.

    The ``goap`` console script does not put the working directory on ``sys.path``; a game's world usually lives
    there. It is appended, so it never shadows an installed package.
    """
    cwd = os.getcwd()
    if "" not in sys.path and cwd not in sys.path:
        sys.path.append(cwd)


def _world_like_names(module: Any) -> list[str]:
    """Classes defined in ``module`` that look like worlds, for an error's hint."""
    return sorted(
        n for n, v in vars(module).items()
        if inspect.isclass(v) and getattr(v, "__module__", None) == module.__name__ and not missing_members(v)
    )


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', repr(obj))}"


def missing_members(obj: Any) -> list[str]:
    """The `goap.world.World` members ``obj`` (a world or its class) lacks; empty for a complete world."""
    out = [a for a in WORLD_ATTRIBUTES if not hasattr(obj, a)]
    out += [f"{m}()" for m in WORLD_METHODS if not callable(getattr(obj, m, None))]
    return out


def check_world(world: Any, what: str = "world") -> Any:
    """``world`` itself if it has every World member and a `goap.domain.Domain`; WorldSpecError otherwise."""
    missing = missing_members(world)
    if missing:
        raise WorldSpecError(
            f"{what}: {type(world).__name__} is not a World: it lacks {', '.join(missing)} (see goap.world.World)"
        )
    if not isinstance(world.domain, Domain):
        raise WorldSpecError(
            f"{what}: {type(world).__name__}.domain is a {type(world.domain).__name__}, not a goap.domain.Domain "
            f"(load one with goap.domain_file.load_domain or build it with goap.DomainBuilder)"
        )
    return world


def load_world(spec: str, **options: Any) -> Any:
    """A new world from a spec (see the module docstring), made with ``options`` as keyword arguments.

    Args:
        spec: ``village``, a registered name, or ``package.module:Class``.
        **options: passed to the class or factory (the CLI passes none).

    Returns:
        The world, checked against the `goap.world.World` protocol.

    Raises:
        WorldSpecError: the spec names no world, making it failed, or what it made is not a World.
    """
    label, factory = resolve_world(spec)
    try:
        world = factory(**options)
    except WorldSpecError:
        raise
    except Exception as e:  # a constructor's own error, named with the world it came from
        raise WorldSpecError(f"world '{label}': creating it failed: {type(e).__name__}: {e}") from None
    return check_world(world, f"world '{label}'")


def world_domain(spec: str) -> Domain:
    """The domain of the world a spec names, without a run: what a tool matches logs and models against.

    The class's (or factory's) own ``domain`` when it holds a `goap.domain.Domain` there, as a world whose
    instances share one domain may; otherwise that of a world made with no options (checked as `load_world`
    checks it).
    """
    _, factory = resolve_world(spec)
    domain = getattr(factory, "domain", None)
    return domain if isinstance(domain, Domain) else load_world(spec).domain


def world_label(spec: str, world: Any) -> str:
    """What summaries call a world: its ``name`` attribute, else the spec."""
    name = getattr(world, "name", None)
    return str(name) if isinstance(name, str) and name else spec


# --- planners: what `goap bench --planners` accepts, for `goap planners` ----------------------------------------
@dataclass(frozen=True)
class PlannerEntry:
    """One planner `goap bench` accepts, as `goap planners` lists it.

    Attributes:
        name: the name ``--planners`` takes.
        kind: ``goap`` (a planner of this package, `goap.planners.base.PLANNERS`) or ``external`` (a separate
            process reading the PDDL files, `goap.bench.external`).
        what: what it computes.
        source: ``module:Class`` for a goap planner; the distribution that provides an external one.
        installed: whether it can run here (an external planner's module is found on ``sys.path``).
        version: the providing distribution's installed version, for an external planner.
        extra: the warp-goap extra that installs it (``pip install "warp-goap[EXTRA]"``); None when always there.
    """

    name: str
    kind: str
    what: str
    source: str
    installed: bool
    version: str | None = None
    extra: str | None = None


#: What each goap planner computes (the names and classes are `goap.planners.base.PLANNERS`).
GOAP_PLANNER_NOTES = {
    "reference": "A* in plain Python, the oracle the Warp planners are tested against; cost-optimal",
    "warp": "batched A* in Warp kernels (GPU or every CPU core); cost-optimal",
    "warp-wastar": "weighted A* (--planner-option weight=W): plans within W x the optimal cost",
    "warp-greedy": "greedy best-first search: fast, no bound on cost",
}

#: The built-in external planners: name -> (what, distribution, module found when installed, extra). The one
#: table: `goap.bench.external` builds their command lines and its error messages from it.
EXTERNAL_PLANNERS: dict[str, tuple[str, str, str, str]] = {
    "fd-lmcut": ("Fast Downward, A* with LM-cut (astar(lmcut()))", "up-fast-downward", "up_fast_downward",
                 "baselines"),
    "pyperplan-lmcut": ("pyperplan, A* with LM-cut", "pyperplan", "pyperplan", "baselines"),
}


def install_hint(name: str) -> str:
    """How to install external planner ``name``: the extra, and the distribution alone."""
    _, dist, _, extra = EXTERNAL_PLANNERS[name]
    return f'pip install "warp-goap[{extra}]" (or pip install -e ".[{extra}]" in a checkout, or pip install {dist})'


def planner_catalogue() -> list[PlannerEntry]:
    """Every planner `goap bench` accepts by name, goap ones first, with where each comes from and whether it is
    installed. Imports neither Warp nor the external planners (their modules are only looked for)."""
    import importlib.util

    from goap.planners.base import PLANNERS

    out = [PlannerEntry(n, "goap", GOAP_PLANNER_NOTES.get(n, ""), target, True) for n, target in PLANNERS.items()]
    for name, (what, dist, module, extra) in EXTERNAL_PLANNERS.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        try:
            version = importlib.metadata.version(dist) if found else None
        except importlib.metadata.PackageNotFoundError:
            version = None
        out.append(PlannerEntry(name, "external", what, dist, found, version, extra))
    return out

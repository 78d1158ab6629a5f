"""World specs (`goap.registry`): built-in names, ``module:Class``, entry points, clear errors; ``goap run`` with a
custom world and the keys of its report."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from goap import registry
from goap.cli import main
from goap.registry import (
    ENTRY_POINT_GROUP,
    WorldSpecError,
    known_worlds,
    load_world,
    register_world,
    resolve_world,
    unregister_world,
)
from goap.runtime import Brain
from tests.custom_world import LampWorld

ROOT = Path(__file__).resolve().parent.parent


# --- resolving specs ------------------------------------------------------------------------------------------
def test_builtin_names_make_their_worlds():
    from worlds.soldier.world import SoldierWorld
    from worlds.village.world import VillageWorld

    assert type(load_world("village")) is VillageWorld
    assert type(load_world("soldier")) is SoldierWorld
    known = known_worlds()
    assert {"village", "soldier"} <= set(known)
    assert known["village"] == "worlds.village.world:VillageWorld"


def test_module_class_and_factory_specs():
    w = load_world("tests.custom_world:LampWorld")
    assert type(w) is LampWorld and w.out_every == 40
    assert load_world("tests.custom_world:LampWorld", out_every=7).out_every == 7  # options reach the class
    assert load_world("tests.custom_world:make_small_world").out_every == 20  # a factory function
    assert load_world(" tests.custom_world:LampWorld ").name == "lamplighters"
    label, factory = resolve_world("tests.custom_world:LampWorld")
    assert label == "tests.custom_world:LampWorld" and factory is LampWorld


def test_unknown_name_lists_the_known_worlds():
    with pytest.raises(WorldSpecError) as e:
        load_world("vilage")
    msg = str(e.value)
    assert "unknown world 'vilage'" in msg
    known = msg.split("known worlds: ")[1].split(";")[0].split(", ")
    assert {"soldier", "village"} <= set(known) and known == sorted(known)
    assert "package.module:Class" in msg and ENTRY_POINT_GROUP in msg
    with pytest.raises(WorldSpecError, match="did you mean 'module:Class'"):
        load_world("tests.custom_world.LampWorld")  # a dot where the colon belongs
    for bad in ("", "   ", None):
        with pytest.raises(WorldSpecError, match="a world is a name or"):
            load_world(bad)  # type: ignore[arg-type]


def test_module_not_importable():
    with pytest.raises(WorldSpecError, match=r"no module named 'no_such_pkg'.*PYTHONPATH"):
        load_world("no_such_pkg.world:W")
    with pytest.raises(WorldSpecError, match="no module named 'tests.no_such_module'"):
        load_world("tests.no_such_module:W")
    with pytest.raises(WorldSpecError, match="expected 'package.module:Class'"):
        load_world("tests.custom_world:")
    with pytest.raises(WorldSpecError, match="expected 'package.module:Class'"):
        load_world(":LampWorld")


def test_a_module_that_fails_on_import_says_why(tmp_path, monkeypatch):
    (tmp_path / "exploding_world.py").write_text("import no_such_dependency_xyz\n")
    (tmp_path / "raising_world.py").write_text("raise RuntimeError('config missing')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    # a missing dependency inside the module is not reported as the module itself missing
    with pytest.raises(WorldSpecError, match=r"importing 'exploding_world' failed: ModuleNotFoundError.*xyz"):
        load_world("exploding_world:W")
    with pytest.raises(WorldSpecError, match=r"importing 'raising_world' failed: RuntimeError: config missing"):
        load_world("raising_world:W")


def test_missing_attribute_names_the_world_classes_there():
    with pytest.raises(WorldSpecError) as e:
        load_world("tests.custom_world:LampWrld")
    msg = str(e.value)
    assert "'tests.custom_world' has no attribute 'LampWrld'" in msg
    assert "LampWorld" in msg.split("world classes there:")[1]
    assert "NotAWorld" not in msg  # only classes that are complete worlds are suggested
    with pytest.raises(WorldSpecError, match="'tests.custom_world:LampWorld' has no attribute 'nope'"):
        load_world("tests.custom_world:LampWorld.nope")


def test_not_a_world():
    with pytest.raises(WorldSpecError, match=r"NotAWorld is not a World: it lacks sense\(\), act\(\), score\(\)"):
        load_world("tests.custom_world:NotAWorld")
    with pytest.raises(WorldSpecError, match="is a int, not a World class or factory"):
        load_world("tests.custom_world:NOT_CALLABLE")
    with pytest.raises(WorldSpecError, match=r"domain is a dict, not a goap.domain.Domain.*DomainBuilder"):
        load_world("tests.custom_world:WrongDomain")
    with pytest.raises(WorldSpecError, match=r"creating it failed: ValueError: out_every must be >= 1"):
        load_world("tests.custom_world:LampWorld", out_every=0)
    with pytest.raises(WorldSpecError, match="creating it failed: TypeError"):
        load_world("tests.custom_world:LampWorld", colour="red")


# --- registration ---------------------------------------------------------------------------------------------
def test_register_world_at_run_time():
    register_world("lamps-test", "tests.custom_world:LampWorld")
    try:
        assert type(load_world("lamps-test")) is LampWorld
        assert known_worlds()["lamps-test"] == "tests.custom_world:LampWorld"
        with pytest.raises(WorldSpecError, match="already registered"):
            register_world("lamps-test", LampWorld)
        register_world("lamps-test", lambda: LampWorld(out_every=3), replace=True)
        assert load_world("lamps-test").out_every == 3
    finally:
        unregister_world("lamps-test")
    assert "lamps-test" not in known_worlds()
    with pytest.raises(WorldSpecError, match="is taken"):
        register_world("village", LampWorld)
    with pytest.raises(WorldSpecError, match="must be letters"):
        register_world("a:b", LampWorld)
    with pytest.raises(WorldSpecError, match="target must be"):
        register_world("x", "no colon here")


class _FakeDist:
    def __init__(self, name: str):
        self.name = name


def _entry_point(name: str, value: str, dist: str) -> importlib.metadata.EntryPoint:
    ep = importlib.metadata.EntryPoint(name=name, value=value, group=ENTRY_POINT_GROUP)
    return ep._for(_FakeDist(dist)) if hasattr(ep, "_for") else ep


def test_entry_points_register_worlds(monkeypatch):
    eps = [_entry_point("lamps", "tests.custom_world:LampWorld", "lamp-game"),
           _entry_point("lamps-extra", "tests.custom_world:make_small_world [viewer]", "lamp-game")]
    monkeypatch.setattr(registry, "_entry_points", lambda: eps)
    assert known_worlds()["lamps"] == "tests.custom_world:LampWorld"
    assert type(load_world("lamps")) is LampWorld
    assert load_world("lamps-extra").out_every == 20  # an entry point's [extras] are not part of the target
    with pytest.raises(WorldSpecError, match=r"unknown world 'lamp'.*lamps"):
        load_world("lamp")
    # a broken entry point is reported with its name and target
    eps.append(_entry_point("ghost", "ghost_pkg.world:Ghost", "ghost-game"))
    with pytest.raises(WorldSpecError, match=r"world 'ghost' \(ghost_pkg.world:Ghost\): no module named 'ghost_pkg'"):
        load_world("ghost")


def test_two_sources_for_one_name_is_an_error(monkeypatch):
    installed = registry._entry_points()  # the example worlds' entry points come first, as on sys.path
    eps = [*installed, _entry_point("village", "other_game.world:Village", "other-game")]
    monkeypatch.setattr(registry, "_entry_points", lambda: eps)
    with pytest.raises(WorldSpecError, match=r"'village' is registered twice: entry point 'village' of warp.goap "
                                             r"\(worlds.village.world:VillageWorld\) and entry point 'village' of "
                                             r"other-game \(other_game.world:Village\)"):
        load_world("village")
    assert "village" not in known_worlds() and "village" in registry.ambiguous_worlds()
    assert load_world("soldier").name == "soldier"  # other names keep working


def test_example_worlds_are_this_package_s_entry_points():
    """pyproject.toml registers the example worlds like any game's, the registry finds them there (the installed
    metadata agrees with the checkout), and `worlds.WORLDS`, kept for scripts, names the same classes."""
    import tomllib

    import worlds

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][ENTRY_POINT_GROUP]
    assert sorted(declared) == sorted(registry.EXAMPLE_WORLDS)
    assert declared == worlds.WORLDS
    installed = {ep.name: ep.value for ep in registry._entry_points() if ep.name in registry.EXAMPLE_WORLDS}
    assert installed == declared, "the installed metadata is stale: run pip install -e ."
    dists = {ep.dist.name.replace("_", "-") for ep in registry._entry_points() if ep.name in declared}
    assert dists == {registry.DISTRIBUTION}


def test_an_example_world_missing_from_the_metadata_says_to_install(monkeypatch):
    monkeypatch.setattr(registry, "_entry_points", lambda: [])
    with pytest.raises(WorldSpecError) as e:
        load_world("village")
    msg = str(e.value)
    assert "world 'village' is an example world" in msg and ENTRY_POINT_GROUP in msg
    assert "has no such entry point" in msg and "run `pip install -e .` again" in msg  # warp-goap is installed
    monkeypatch.setattr(registry, "_installed_version", lambda: None)
    with pytest.raises(WorldSpecError, match=r"warp-goap package, which is not installed: run `pip install -e .`"):
        load_world("soldier")
    with pytest.raises(WorldSpecError, match="unknown world 'vilage'"):  # other names are simply unknown
        load_world("vilage")
    assert type(load_world("tests.custom_world:LampWorld")) is LampWorld  # specs need no metadata


def test_world_domain_reads_the_class_or_makes_a_world():
    assert registry.world_domain("tests.custom_world:LampWorld") is LampWorld.domain  # a class attribute
    assert registry.world_domain("soldier") == load_world("soldier").domain  # set in __init__
    with pytest.raises(WorldSpecError, match="unknown world"):
        registry.world_domain("nowhere")


def test_entry_point_group_is_read_from_installed_metadata(tmp_path, monkeypatch):
    """A real distribution on sys.path (a .dist-info with entry_points.txt), found by importlib.metadata."""
    dist = tmp_path / "lamp_game-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: lamp-game\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nlamps = tests.custom_world:LampWorld\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert known_worlds()["lamps"] == "tests.custom_world:LampWorld"
    assert type(load_world("lamps")) is LampWorld


# --- goap run with a custom world -----------------------------------------------------------------------------
def _run_json(tmp_path: Path, *argv: str) -> dict:
    out = tmp_path / "run.json"
    assert main(["run", *argv, "--json", str(out), "--quiet"]) == 0
    return json.loads(out.read_text())


def test_goap_run_custom_world_reports_consistent_keys(tmp_path, capsys):
    r = _run_json(tmp_path, "--world", "tests.custom_world:LampWorld", "--agents", "120", "--ticks", "90",
                  "--warmup", "10", "--planner", "reference")
    text = capsys.readouterr().out
    c = r["counters"]
    for key in ("actions_done", "actions_failed", "plans_requested", "plans_failed"):
        assert isinstance(c[key], int) and c[key] >= 0
    assert 0.0 <= r["idle_fraction"] <= 1.0
    names = [a.name for a in LampWorld.domain.actions]
    assert list(r["action_counts"]) == names
    assert sum(r["action_counts"].values()) == c["actions_done"] > 0
    # the world's own measure agrees with the brain's count of one action
    assert r["score"]["lamps_lit"] == r["action_counts"]["light_lamp"] > 0
    assert r["score"]["clock"] == 90
    # the table prints the same numbers
    assert f"actions done {c['actions_done']}" in text
    assert f"idle fraction {r['idle_fraction']:.1%}" in text
    for name, n in r["action_counts"].items():
        assert re.search(rf"\b{name}\s+{n}\s", text), name


class _CountingLamps(LampWorld):
    """Records, as act runs, the fraction of agents executing no action (all lamplighters stay alive)."""

    def reset(self, brain, seed):
        super().reset(brain, seed)
        self.idle = []

    def act(self, brain, dt):
        self.idle.append(float((brain.action.numpy() < 0).mean()))
        super().act(brain, dt)


def test_idle_fraction_measures_agents_with_no_action(tmp_path):
    """The run's idle fraction against the fraction counted inside act, tick by tick, of the same run."""
    register_world("counting-lamps", _CountingLamps)
    try:
        world = _CountingLamps()
        brain = Brain(world.domain, 60, world=world, planner="reference", seed=3)
        for _ in range(50):
            brain.tick()
        r = _run_json(tmp_path, "--world", "counting-lamps", "--agents", "60", "--ticks", "50",
                      "--seed", "3", "--warmup", "5", "--planner", "reference")
    finally:
        unregister_world("counting-lamps")
    assert r["idle_fraction"] == pytest.approx(np.mean(world.idle[5:]), abs=1e-9)
    assert 0.0 < r["idle_fraction"] < 1.0  # lamplighters rest between lamps going out, and work in between
    assert r["state_hash"] == brain.state_hash()  # the same run


def test_goap_run_builtin_world_keys(tmp_path):
    r = _run_json(tmp_path, "--world", "soldier", "--agents", "100", "--ticks", "20", "--warmup", "5")
    assert 0.0 <= r["idle_fraction"] <= 1.0
    assert sum(r["action_counts"].values()) == r["counters"]["actions_done"]
    assert set(r["action_counts"]) == {a.name for a in load_world("soldier").domain.actions}
    assert r["world"] == "soldier" and isinstance(r["score"], dict) and r["score"]


def test_goap_run_bad_world_is_one_line(capsys):
    assert main(["run", "--world", "tests.custom_world:NotAWorld", "--ticks", "1"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("goap: error: world 'tests.custom_world:NotAWorld': NotAWorld is not a World")
    assert len(err.splitlines()) == 1
    assert main(["run", "--world", "nowhere", "--ticks", "1"]) == 1
    assert "unknown world 'nowhere'" in capsys.readouterr().err


def test_goap_command_imports_custom_worlds_from_the_working_directory(tmp_path):
    """The console script does not put the working directory on sys.path; the registry does, as uvicorn does."""
    (tmp_path / "my_game_world.py").write_text(textwrap.dedent("""
        from tests.custom_world import LampWorld as MyWorld
    """))
    code = (
        "import sys; sys.path = [p for p in sys.path if p not in ('', '.')]\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from goap.cli import main\n"
        "sys.exit(main(['run', '--world', 'my_game_world:MyWorld', '--agents', '10', '--ticks', '3', '--quiet',"
        " '--planner', 'reference']))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "lamps_lit" in res.stdout


def test_goap_bench_world_suite_takes_a_custom_world(capsys):
    rc = main(["bench", "--suite", "world:tests.custom_world:LampWorld", "--planners", "reference",
               "--agents", "40", "--ticks", "15"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "world:tests.custom_world:LampWorld" in out
    assert main(["bench", "--suite", "world:tests.custom_world:NotAWorld", "--planners", "reference"]) == 1
    assert "NotAWorld is not a World" in capsys.readouterr().err


def test_goap_view_bad_world_is_the_same_error_as_run(capsys):
    pytest.importorskip("pygame")
    assert main(["view", "--world", "tests.custom_world:NotAWorld", "--headless", "--frames", "1"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("goap: error: world 'tests.custom_world:NotAWorld': NotAWorld is not a World")
    assert len(err.splitlines()) == 1


def test_goap_worlds_lists_every_name(monkeypatch, capsys):
    eps = [*registry._entry_points(), _entry_point("lamps", "tests.custom_world:LampWorld", "lamp-game")]
    monkeypatch.setattr(registry, "_entry_points", lambda: eps)
    assert main(["worlds"]) == 0
    rows = dict(line.split() for line in capsys.readouterr().out.strip().splitlines())
    assert rows["village"] == "worlds.village.world:VillageWorld"
    assert rows["soldier"] == "worlds.soldier.world:SoldierWorld"
    assert rows["lamps"] == "tests.custom_world:LampWorld"
    assert list(rows) == sorted(rows)
    eps.append(_entry_point("village", "other_game.world:Village", "other-game"))
    assert main(["worlds"]) == 0
    out, err = capsys.readouterr()
    assert "village" not in out.split() and "lamps" in out.split()
    assert "warning: world name 'village' is registered twice" in err



# --- goap planners ------------------------------------------------------------------------------------------------
def _planner_rows(out: str) -> dict[str, list[str]]:
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["planner", "kind", "installed", "from", "extra"]
    rows = {}
    for line in lines[1:]:
        if not line.strip():
            break
        rows[line.split()[0]] = line.split()
    return rows


def test_goap_planners_names_the_goap_planners_and_the_baselines(capsys):
    import importlib.util

    from goap.planners.base import PLANNERS

    assert main(["planners"]) == 0
    out = capsys.readouterr().out
    rows = _planner_rows(out)
    assert set(rows) == set(PLANNERS) | {"fd-lmcut", "pyperplan-lmcut"}
    for name in PLANNERS:
        assert rows[name][1:3] == ["goap", "yes"] and PLANNERS[name] in rows[name]
    for name, dist, module in (("fd-lmcut", "up-fast-downward", "up_fast_downward"),
                               ("pyperplan-lmcut", "pyperplan", "pyperplan")):
        assert rows[name][1] == "external" and dist in rows[name] and "baselines" in rows[name]
        assert rows[name][2] == ("yes" if importlib.util.find_spec(module) else "no")
    assert "--external NAME=" in out


def test_goap_planners_says_how_to_install_a_missing_baseline(monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("up_fast_downward", "pyperplan") else real(name, *a))
    assert main(["planners"]) == 0
    out = capsys.readouterr().out
    rows = _planner_rows(out)
    assert rows["fd-lmcut"][2] == rows["pyperplan-lmcut"][2] == "no"
    assert 'not installed: fd-lmcut, pyperplan-lmcut: pip install "warp-goap[baselines]"' in out


def test_every_listed_planner_is_one_goap_bench_accepts(monkeypatch):
    """The list and goap bench read one table: each name parses as a --planners column, or (an external planner
    not installed here) fails with the same install line the list gives."""
    from goap.bench.cli import planner_configs

    for entry in registry.planner_catalogue():
        if entry.installed:
            (config,) = planner_configs(entry.name, [], [])
            assert config.name == entry.name and (config.external is not None) == (entry.kind == "external")
        else:
            with pytest.raises(ValueError, match=re.escape(registry.install_hint(entry.name))):
                planner_configs(entry.name, [], [])

"""What the wheel ships: the IPC task set (``goap/bench/ipc``, a link to ``benchmarks/pddl`` in the checkout), the
example worlds' domain and problem files, and the entry points that register those worlds. The wheel is built
from a copy of the checkout's package files, so the test leaves no build folder behind; `.ci/wheel_check`
installs a wheel and runs it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.conftest import PDDL_DIR, ROOT

pytest.importorskip("build")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("goap", "worlds", "viewer"):
        shutil.copytree(ROOT / name, src / name, symlinks=True, ignore=ignore)
    shutil.copytree(PDDL_DIR, src / "benchmarks" / "pddl", ignore=ignore)
    assert (src / "goap" / "bench" / "ipc").is_symlink()  # the checkout's link, resolved by the build
    out = tmp_path_factory.mktemp("dist")
    # No isolation: the build backend (setuptools) is in the test environment already; isolation would fetch it.
    proc = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--skip-dependency-check",
                           "--outdir", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (path,) = out.glob("*.whl")
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        entry_points = next(zf.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    return names, entry_points


def test_wheel_ships_every_ipc_task(wheel):
    names, _ = wheel
    expected = {f"goap/bench/ipc/{p.relative_to(PDDL_DIR).as_posix()}" for p in PDDL_DIR.rglob("*.pddl")}
    assert len(expected) == 54  # 46 tasks and 8 domain files
    assert expected <= names, sorted(expected - names)[:5]
    assert {"goap/bench/ipc/optimal.json", "goap/bench/ipc/SOURCE.md"} <= names


def test_wheel_ships_the_worlds_data_and_their_entry_points(wheel):
    names, entry_points = wheel
    for world in ("village", "soldier"):
        assert {f"worlds/{world}/domain.toml", f"worlds/{world}/problems.jsonl", f"worlds/{world}/world.py"} <= names
        assert f"{world} = worlds.{world}.world:" in entry_points
    assert "goap = goap.cli:main" in entry_points
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)

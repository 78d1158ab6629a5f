"""The layering rule: the engine imports none of its tools, worlds or viewer; no module of goap loads the viewer.

The engine is every module of ``goap`` except the tools (``goap.cli``, ``goap.__main__``, ``goap.bench``,
``goap.learn``). It may not import ``worlds``, ``viewer``, ``goap.bench`` or ``goap.learn``, at module level or
inside a function: the example worlds reach it through `goap.registry`'s entry points, as a game's world does,
and the tools sit on top of it. The check reads the source (`ast`), so an import in a branch no test runs is
caught too; a fresh interpreter then shows what importing the engine really loads.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOAP = ROOT / "goap"

#: What the engine may not import, and the modules of goap that are tools rather than engine.
FORBIDDEN = ("worlds", "viewer", "goap.bench", "goap.learn")
TOOLS = ("goap.cli", "goap.__main__", "goap.bench", "goap.learn")
#: Calls that import the module named by their first (string) argument.
IMPORT_CALLS = {("importlib", "import_module"), (None, "__import__"), (None, "import_module")}


@dataclass(frozen=True)
class Import:
    """One module an import statement (or an ``importlib.import_module("...")`` call) loads."""

    module: str
    line: int
    top_level: bool  # runs when the importing module is imported (not inside a function)


def within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(source: str, module: str, is_package: bool = False) -> list[Import]:
    """Every module ``source`` (the text of ``module``) imports, relative imports resolved, with its line.

    ``from a import b`` loads ``a`` and, when ``b`` is a submodule, ``a.b``: both are listed, so ``from goap
    import bench`` counts as importing ``goap.bench``.
    """
    package = module if is_package else module.rpartition(".")[0]
    out: list[Import] = []

    def absolute(name: str | None, level: int) -> str:
        if level == 0:
            return name or ""
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - (level - 1)])
        return f"{base}.{name}" if name else base

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                out.extend(Import(a.name, child.lineno, top) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = absolute(child.module, child.level)
                out.append(Import(base, child.lineno, top))
                out.extend(Import(f"{base}.{a.name}", child.lineno, top) for a in child.names if a.name != "*")
            elif isinstance(child, ast.Call) and child.args and isinstance(child.args[0], ast.Constant):
                func = child.func
                key = (
                    (func.value.id if isinstance(func.value, ast.Name) else None, func.attr)
                    if isinstance(func, ast.Attribute)
                    else (None, func.id if isinstance(func, ast.Name) else None)
                )
                if key in IMPORT_CALLS and isinstance(child.args[0].value, str):
                    out.append(Import(child.args[0].value, child.lineno, top))
            body_runs_now = not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            visit(child, top and body_runs_now)

    visit(ast.parse(source), True)
    return out


def goap_modules() -> list[tuple[Path, str]]:
    return [(p, module_name(p)) for p in sorted(GOAP.rglob("*.py"))]


def violations(path: Path, module: str, forbidden: tuple[str, ...] = FORBIDDEN, *, top_level_only: bool = False,
               root: Path = ROOT) -> list[str]:
    """``file:line: module imports name`` for each statement of ``path`` that imports one of ``forbidden``."""
    first: dict[int, str] = {}
    for i in imports_of(path.read_text(), module, path.name == "__init__.py"):
        if within(i.module, forbidden) and (i.top_level or not top_level_only):
            if i.line not in first or len(i.module) < len(first[i.line]):
                first[i.line] = i.module  # `from worlds import x` is reported as worlds, not worlds.x
    rel = path.relative_to(root)
    where = " at module level" if top_level_only else ""
    return [f"{rel}:{line}: {module} imports {name}{where}" for line, name in sorted(first.items())]


# --- the checker itself ---------------------------------------------------------------------------------------
def test_the_checker_sees_every_form_of_import():
    source = textwrap.dedent("""
        import numpy as np
        import worlds.village.world
        from goap.bench.report import rows_to_csv
        from goap import learn, domain
        from ..bench import runner
        from . import sibling
        import worldsmith, goap.benchmarks

        def later():
            import viewer.app
            importlib.import_module("goap.learn.train")

        class Eager:
            from viewer import app
    """)
    found = imports_of(source, "goap.pddl.commands")
    bad = {(i.module, i.line, i.top_level) for i in found if within(i.module, FORBIDDEN)}
    assert bad == {
        ("worlds.village.world", 3, True),
        ("goap.bench.report", 4, True),
        ("goap.bench.report.rows_to_csv", 4, True),  # a name or a submodule: the source cannot tell
        ("goap.learn", 5, True),
        ("goap.bench", 6, True),
        ("goap.bench.runner", 6, True),
        ("viewer.app", 11, False),
        ("goap.learn.train", 12, False),
        ("viewer", 15, True),
        ("viewer.app", 15, True),
    }
    assert {"goap.pddl.sibling", "numpy", "goap.domain", "worldsmith", "goap.benchmarks"} <= {i.module for i in found}
    # a package's own relative imports resolve inside it
    assert {i.module for i in imports_of("from .report import x\n", "goap.bench", is_package=True)} == {
        "goap.bench.report", "goap.bench.report.x"}


def test_the_checker_names_the_file_the_module_and_the_line(tmp_path):
    bad = tmp_path / "goap" / "leaky.py"
    bad.parent.mkdir()
    bad.write_text("import json\nfrom goap import domain\n\n\ndef f():\n    from worlds import make_world\n")
    assert violations(bad, "goap.leaky", root=tmp_path) == ["goap/leaky.py:6: goap.leaky imports worlds"]
    assert violations(bad, "goap.leaky", root=tmp_path, top_level_only=True) == []


# --- the rule on this checkout --------------------------------------------------------------------------------
def test_the_walk_covers_the_engine_and_the_tools():
    names = {m for _, m in goap_modules()}
    assert {"goap", "goap.runtime", "goap.registry", "goap.pddl.commands", "goap.kernels.tick"} <= names
    assert {"goap.cli", "goap.bench.cli", "goap.learn.train"} <= names


def test_the_engine_imports_no_tool_world_or_viewer():
    found = [v for path, m in goap_modules() if not within(m, TOOLS) for v in violations(path, m)]
    assert not found, "the engine imports a tool, a world or the viewer:\n" + "\n".join(found)


def test_no_module_of_goap_imports_the_viewer_at_module_level():
    found = [v for path, m in goap_modules() for v in violations(path, m, ("viewer",), top_level_only=True)]
    assert not found, "\n".join(found)


def test_no_module_of_goap_names_the_worlds_package():
    """The tools, too, reach worlds through `goap.registry` (the CLI, bench and learn alike)."""
    found = [v for path, m in goap_modules() for v in violations(path, m, ("worlds",))]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("module", ["goap.runtime", "goap.registry", "goap.pddl.commands"])
def test_importing_the_engine_loads_no_tool(module):
    code = textwrap.dedent(f"""
        import json, sys
        import {module}
        watched = {list(FORBIDDEN) + ["torch"]!r}
        print(json.dumps(sorted(m for m in sys.modules if any(m == w or m.startswith(w + ".") for w in watched))))
    """)
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [], f"import {module} loaded them"

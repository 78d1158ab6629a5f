"""The docs tell the truth about the code: the Layout page names every module of the engine, and no other."""

from __future__ import annotations

import re

from tests.conftest import ROOT


def layout_block() -> list[str]:
    text = (ROOT / "docs" / "layout.md").read_text()
    section = text.split("\n## Layout\n", 1)[1]
    return section.split("```", 2)[1].splitlines()


def layout_modules() -> set[str]:
    """Paths under goap/ that the Layout block lists: one name a line, two spaces of indent a level."""
    listed, stack = set(), []
    for line in layout_block():
        m = re.match(r"^( *)(\S+)", line)
        if not m:
            continue
        depth, name = len(m.group(1)) // 2, m.group(2)
        stack[depth:] = [name]
        if stack[0] != "goap/":
            continue
        path = "".join(stack)
        if name.endswith(".py") or name.endswith("/"):
            listed.add(path)
    return listed


def engine_modules() -> set[str]:
    out = {"goap/"}
    for p in (ROOT / "goap").rglob("*"):
        rel = p.relative_to(ROOT).as_posix()
        if "__pycache__" in rel or p.is_symlink() or any(part.is_symlink() for part in p.parents):
            continue
        if p.is_dir() and (p / "__init__.py").exists():
            out.add(rel + "/")
        elif p.suffix == ".py":
            out.add(rel)
    return out


def test_the_layout_page_names_every_module_under_goap():
    listed, present = layout_modules(), engine_modules()
    assert present - listed == set(), f"modules missing from docs/layout.md: {sorted(present - listed)}"
    assert listed - present == set(), f"docs/layout.md lists modules that do not exist: " \
                                      f"{sorted(listed - present)}"


def test_layout_parser_reads_nesting():
    """The parser itself: a nested module is read with its package's path (a check that the check can fail)."""
    assert "goap/runtime/pipeline.py" in layout_modules()
    assert "goap/pipeline.py" not in layout_modules() and "goap/brain.py" not in layout_modules()

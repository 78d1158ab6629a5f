"""goap.pddl.reader: S-expressions with their lines, and errors that name the file and line."""

from __future__ import annotations

import pytest

from goap.pddl.reader import Expr, PddlError, Reader, Sym, parse_sexpr, read_file


def test_lines_and_case():
    top = parse_sexpr("(define\n  (Domain X) ; a comment (with parentheses\n  (:Predicates (On ?x)))")
    (d,) = top
    assert isinstance(d, Expr) and d.line == 1
    assert d == ["define", ["domain", "x"], [":predicates", ["on", "?x"]]]
    assert d[1].line == 2 and d[2].line == 3 and isinstance(d[2][1][0], Sym) and d[2][1][0].line == 3


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [("(a (b)\n\n", 1, "'(' is never closed"), ("(a)\n(b))", 2, "unexpected ')'"), ("(a\n (b\n", 2, "never closed")],
)
def test_unbalanced(text, line, message):
    with pytest.raises(PddlError) as e:
        parse_sexpr(text, file="x.pddl")
    assert e.value.file == "x.pddl" and e.value.line == line and message in str(e.value)
    assert str(e.value).startswith(f"x.pddl:{line}: ")


def test_typed_list():
    r = Reader("t.pddl")
    (items,) = parse_sexpr("(a b - t c - (either u v) d)")
    assert [(str(n), t) for n, t in r.typed_list(list(items), items, "objects")] == [
        ("a", ("t",)), ("b", ("t",)), ("c", ("u", "v")), ("d", ("object",))
    ]
    (bad,) = parse_sexpr("(a -)")
    with pytest.raises(PddlError, match="'-' without a type in the objects"):
        r.typed_list(list(bad), bad, "objects")


def test_missing_file(tmp_path):
    with pytest.raises(PddlError) as e:
        read_file(str(tmp_path / "nope.pddl"))
    assert e.value.file == str(tmp_path / "nope.pddl") and "cannot read" in str(e.value)

"""The S-expression reader of the PDDL importer: tokens with their line numbers, and helpers that fail at a line.

Every later stage (`goap.pddl.lifted`, `goap.pddl.grounder`) reports errors through `PddlError`, which carries
the file, the line and the item, so a bad file is named precisely wherever it goes wrong.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from goap.domain import DomainError


class PddlError(DomainError):
    """A PDDL file that cannot be read or is outside the supported STRIPS fragment."""


class Sym(str):
    """A lower-cased symbol with the line it was read from."""

    line: int

    def __new__(cls, text: str, line: int) -> Sym:
        obj = super().__new__(cls, text)
        obj.line = line
        return obj


class Expr(list):
    """A parenthesised list with the line of its opening parenthesis."""

    def __init__(self, line: int):
        super().__init__()
        self.line = line


#: A PDDL name (lower-cased as read): a letter, then letters, digits, '-' and '_' (PDDL 3.1's <name>).
_NAME = re.compile(r"[a-z][a-z0-9_-]*\Z")

_TOKEN = re.compile(r"\s+|;[^\n]*|\(|\)|[^\s();]+")


def parse_sexpr(text: str, file: str | None = None) -> list[Expr | Sym]:
    """Every top-level expression of a PDDL text; PddlError with the line on unbalanced parentheses."""
    line = 1
    stack: list[Expr] = []
    top: list[Expr | Sym] = []
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok[0].isspace() or tok[0] == ";":
            line += tok.count("\n")
            continue
        if tok == "(":
            e = Expr(line)
            (stack[-1] if stack else top).append(e)
            stack.append(e)
        elif tok == ")":
            if not stack:
                raise PddlError("syntax error: unexpected ')'", file=file, line=line)
            stack.pop()
        else:
            (stack[-1] if stack else top).append(Sym(tok.lower(), line))
    if stack:
        raise PddlError("syntax error: '(' is never closed", file=file, line=stack[-1].line)
    return top


#: Largest PDDL file read, as for domain files: the read itself is bounded, so a device or FIFO cannot fill memory.
MAX_PDDL_BYTES = 64 * 2**20


def read_file(path: str, limit: int = MAX_PDDL_BYTES) -> str:
    """A PDDL file's text (undecodable bytes replaced), reading at most ``limit + 1`` bytes."""
    try:
        if Path(path).is_dir():
            raise PddlError("cannot read the file: is a directory", file=path)
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise PddlError(f"cannot read the file: {e.strerror or e}", file=path) from None
    if len(data) > limit:
        raise PddlError(f"too large: more than {limit:,} bytes (the limit)", file=path)
    return data.decode("utf-8", errors="replace")



# --- helpers that fail at the right line ----------------------------------------------------------------------------
class Reader:
    """Helpers that raise PddlError at the right line of one file."""

    def __init__(self, file: str):
        self.file = file

    def fail(self, message: str, where: Any = None, item: str | None = None) -> PddlError:
        return PddlError(message, item=item, file=self.file, line=getattr(where, "line", None))

    def expect_list(self, x: Any, what: str, where: Any) -> Expr:
        if not isinstance(x, Expr):
            raise self.fail(f"syntax error: expected {what} in parentheses, got {x!r}", getattr(x, "line", where))
        return x

    def expect_name(self, x: Any, what: str, where: Any) -> Sym:
        if not isinstance(x, Sym) or x.startswith(("?", ":")):
            raise self.fail(f"syntax error: expected {what}, got {show(x)}", x if isinstance(x, Sym) else where)
        return self.check_name(x, what)

    def check_name(self, x: Sym, what: str) -> Sym:
        """``x`` if it is a PDDL name (or ``?`` and one, for a variable); PddlError at its line otherwise.

        Ground names join a symbol and its arguments with commas (``stack(a,b)``), so a character outside
        PDDL's names, such as a comma, could make two different ground atoms or actions one name.
        """
        if not _NAME.match(x[1:] if x.startswith("?") else x):
            raise self.fail(
                f"not a PDDL name: {show(x)} in {what} (a name is a letter followed by letters, digits, '-' or '_')", x
            )
        return x

    def define(self, top: list[Expr | Sym], kind: str) -> tuple[Sym, list[Any], Expr]:
        if len(top) != 1 or not isinstance(top[0], Expr):
            where = top[1] if len(top) > 1 else (top[0] if top else None)
            raise self.fail(f"syntax error: expected exactly one (define ({kind} NAME) ...)", where)
        d = top[0]
        if len(d) < 2 or d[0] != "define" or not isinstance(d[1], Expr) or len(d[1]) != 2 or d[1][0] != kind:
            raise self.fail(f"syntax error: expected (define ({kind} NAME) ...)", d)
        return self.expect_name(d[1][1], f"a {kind} name", d[1]), list(d[2:]), d

    def typed_list(self, items: list[Any], where: Any, what: str) -> list[tuple[Sym, tuple[str, ...]]]:
        """``a b - t c - (either u v) d`` -> [(a, (t,)), (b, (t,)), (c, (u, v)), (d, ("object",))]."""
        out: list[tuple[Sym, tuple[str, ...]]] = []
        pending: list[Sym] = []
        i = 0
        while i < len(items):
            x = items[i]
            if x == "-":
                if i + 1 >= len(items):
                    raise self.fail(f"syntax error: '-' without a type in the {what}", x)
                t = items[i + 1]
                if isinstance(t, Expr):
                    if len(t) < 2 or t[0] != "either":
                        raise self.fail("syntax error: a type is a name or (either TYPE ...)", t)
                    types = tuple(self.expect_name(u, "a type name", t) for u in t[1:])
                else:
                    types = (self.expect_name(t, "a type name", x),)
                if not pending:
                    raise self.fail(f"syntax error: a type with nothing before it in the {what}", x)
                out.extend((p, types) for p in pending)
                pending = []
                i += 2
                continue
            if not isinstance(x, Sym):
                at = x if hasattr(x, "line") else where
                raise self.fail(f"syntax error: unexpected {show(x)} in the {what}", at)
            pending.append(self.check_name(x, f"the {what}"))
            i += 1
        out.extend((p, ("object",)) for p in pending)
        return out


def show(x: Any) -> str:
    if isinstance(x, Expr):
        return "(" + " ".join(show(y) for y in x) + ")"
    return repr(str(x))

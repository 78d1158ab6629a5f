"""Domain files: TOML or JSON with the same structure, read into a validated `Domain` and written back.

Loading parses data only (``tomllib`` / ``json``), never code. Errors are `DomainError`s that name the file,
the item and, where it can be found in the text, the line.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from goap.domain import BOOL, ENUM, AgentType, Domain, DomainError, domain_from_spec, show
from goap.files import write_atomic

FORMATS = {".toml": "toml", ".json": "json"}


def load_domain(path: str | Path) -> Domain:
    """Read a ``.toml`` or ``.json`` domain file."""
    path = Path(path)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise DomainError(f"unknown domain file type '{path.suffix}' (expected .toml or .json)", file=str(path))
    return loads_domain(read_text(path, MAX_FILE_BYTES), fmt=fmt, file=str(path))


#: Largest domain file read (a domain of a million actions fits): checked before reading, so that memory stays
#: bounded by the limit and not by whatever file was named.
MAX_FILE_BYTES = 64 * 2**20


def read_text(path: Path, limit: int | None = MAX_FILE_BYTES) -> str:
    """A UTF-8 text file of at most ``limit`` bytes (None: any size), or a DomainError naming it.

    At most ``limit + 1`` bytes are ever read, whatever the file is: a size from ``stat`` says nothing about a
    device (``/dev/zero``), a FIFO or a link to one, so the read itself is what is bounded.
    """
    try:
        if path.is_dir():
            raise DomainError("is a directory, not a file", file=str(path))
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size if stat.S_ISREG(os.fstat(f.fileno()).st_mode) else None
            if limit is not None and size is not None and size > limit:
                raise DomainError(f"too large: {size:,} bytes (at most {limit:,})", file=str(path))
            data = f.read(-1 if limit is None else limit + 1)
    except FileNotFoundError:
        raise DomainError("no such file", file=str(path)) from None
    except OSError as e:
        raise DomainError(f"cannot read: {e.strerror or e}", file=str(path)) from None
    return decode_text(data, str(path), limit)


def decode_text(data: bytes, file: str, limit: int | None = MAX_FILE_BYTES) -> str:
    """``data`` (read with `read_text`'s cap) as UTF-8, or a DomainError naming ``file`` and the line."""
    if limit is not None and len(data) > limit:
        raise DomainError(f"too large: more than {limit:,} bytes (the limit)", file=file)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise DomainError(f"not UTF-8 text (byte {data[e.start]:#04x})", file=file, line=line) from None


def loads_domain(text: str, fmt: str = "toml", file: str = "<string>") -> Domain:
    """Parse a domain from text in ``fmt`` ("toml" or "json")."""
    spec = _parse(text, fmt, file)
    return domain_from_spec(spec, file=file, locate=_Locator(text, fmt))


def domain_to_spec(domain: Domain) -> dict[str, Any]:
    """The file structure of a domain: loading it back gives an equal domain."""
    facts: dict[str, Any] = {}
    for f in domain.facts:
        if f.kind == BOOL:
            facts[f.name] = bool(f.default)
        elif f.kind == ENUM:
            facts[f.name] = {"type": ENUM, "values": list(f.labels), "default": f.labels[f.default]}
        else:
            facts[f.name] = {"type": "int", "min": f.min, "max": f.max, "default": f.default}

    def cond(c) -> Any:
        fact = domain.fact(c.fact)
        if fact.kind == BOOL:
            return bool(c.value) if c.op == "==" else (not c.value)
        if fact.kind == ENUM:
            return fact.labels[c.value] if c.op == "==" else f"!= {fact.labels[c.value]}"
        return c.value if c.op == "==" else f"{c.op} {c.value}"

    def eff(e) -> Any:
        fact = domain.fact(e.fact)
        if e.op != "=":
            return f"{e.op} {e.value}"
        if fact.kind == BOOL:
            return bool(e.value)
        return fact.labels[e.value] if fact.kind == ENUM else e.value

    def num(x: float) -> Any:
        return int(x) if float(x).is_integer() and abs(x) < 2**53 else x

    def cost(a) -> Any:
        if not a.cost_terms:
            return num(a.cost)
        return {"base": num(a.cost), "per": {domain.facts[f].name: num(k) for f, k in a.cost_terms}}

    actions = {
        a.name: {
            "cost": cost(a),
            "pre": {c.fact: cond(c) for c in a.pre},
            "effects": {e.fact: eff(e) for e in a.effects},
            **({} if a.interruptible else {"interruptible": False}),
            **({"when": [{"if": {c.fact: cond(c) for c in w.cond}, "then": {e.fact: eff(e) for e in w.effects}}
                         for w in a.when]} if a.when else {}),
        }
        for a in domain.actions
    }
    goals = {
        g.name: {
            "priority": int(g.priority) if float(g.priority).is_integer() else g.priority,
            "want": {c.fact: cond(c) for c in g.want},
        }
        for g in domain.goals
    }
    out = {"name": domain.name, "facts": facts, "actions": actions, "goals": goals}
    if domain.declares_types:
        out["types"] = {t.name: _type_spec(domain, t) for t in domain.types}
    return out


def _type_spec(domain: Domain, t: AgentType) -> dict[str, Any]:
    """An agent type's table, with only what differs from the defaults (all actions, scale 1, the goals' own
    priorities); a goal the type never selects is written as left out of ``goals``."""
    spec: dict[str, Any] = {}
    if not all(t.actions):
        spec["actions"] = [a.name for a, ok in zip(domain.actions, t.actions, strict=True) if ok]
    scaled = {a.name: k for a, k in zip(domain.actions, t.cost_scale, strict=True) if k != 1.0}
    if scaled:
        spec["cost"] = {name: int(k) if float(k).is_integer() else k for name, k in scaled.items()}
    dropped = [g for g, p in zip(domain.goals, t.priority, strict=True) if p == 0.0 and g.priority != 0.0]
    if dropped:
        spec["goals"] = [g.name for g, p in zip(domain.goals, t.priority, strict=True) if g not in dropped]
    over = {g.name: p for g, p in zip(domain.goals, t.priority, strict=True) if p != g.priority and g not in dropped}
    if over:
        spec["priority"] = {name: int(p) if float(p).is_integer() else p for name, p in over.items()}
    if t.facts:
        spec["facts"] = {}
        for f, v in t.facts:
            fact = domain.facts[f]
            spec["facts"][fact.name] = bool(v) if fact.kind == BOOL else (fact.labels[v] if fact.kind == ENUM else v)
    return spec


def save_domain(domain: Domain, path: str | Path) -> None:
    """Write a domain as TOML or JSON (by suffix); written to a temporary file first, never half-written."""
    path = Path(path)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ValueError(f"{path}: unknown domain file type '{path.suffix}' (expected .toml or .json)")
    spec = domain_to_spec(domain)
    text = json.dumps(spec, indent=2) + "\n" if fmt == "json" else dumps_toml(spec)
    write_atomic(path, text)


def dumps_toml(spec: Mapping[str, Any]) -> str:
    """TOML text for a domain spec, one table per action and goal, inline tables for conditions."""
    lines = [f"name = {_toml_value(spec['name'])}", "", "[facts]"]
    for name, value in spec["facts"].items():
        lines.append(f"{_toml_key(name)} = {_toml_value(value)}")
    for section in ("actions", "goals", "types"):
        for name, body in spec.get(section, {}).items():
            lines += ["", f"[{section}.{_toml_key(name)}]"]
            for key, value in body.items():
                lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _toml_string(key)


_TOML_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def _toml_string(text: str) -> str:
    """A TOML basic string. Characters outside the Basic Multilingual Plane are written as themselves (UTF-8):
    JSON's surrogate-pair escapes (``\\ud83d\\ude00``) are not Unicode scalar values and TOML refuses them."""
    out = []
    for ch in text:
        if ch in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[ch])
        elif ch < " " or ch == "\x7f":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("nan" if math.isnan(value) else "inf")
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {value!r} as TOML")


# --- parsing with line numbers ---------------------------------------------------------------------------------
#: Deepest nesting of arrays and tables (objects) accepted in a domain file or a problem line; a domain needs 4.
#: Checked before parsing, because the parsers recurse once per level and fail with a RecursionError.
MAX_NESTING = 32

# The characters a nesting scan stops at: brackets, and the openers of strings and comments (whose brackets do
# not count). A character class has no backtracking, so the scan's memory is constant whatever the text holds.
_TOML_STOPS = re.compile(r"[\[\]{}\"'#]")
_JSON_STOPS = re.compile(r'[\[\]{}"]')
_LONG_INT = re.compile(r"0[xX][0-9a-fA-F_]{4300,}|[0-9][0-9_]{4300,}")


def nesting_error(text: str, fmt: str, limit: int = MAX_NESTING) -> int | None:
    """The 1-based line where ``text`` (TOML or JSON) first nests deeper than ``limit`` levels; None if never.

    A linear scan that jumps over strings and comments with ``str.find``; unterminated strings run to the end
    of the line (or text), and the parser reports them itself.
    """
    if text.count("[") + text.count("{") <= limit:
        return None
    stops = _TOML_STOPS if fmt == "toml" else _JSON_STOPS
    depth, pos, n = 0, 0, len(text)
    while pos < n:
        m = stops.search(text, pos)
        if m is None:
            return None
        i = m.start()
        ch = text[i]
        if ch == "[" or ch == "{":
            depth += 1
            if depth > limit:
                return text.count("\n", 0, i) + 1
            pos = i + 1
        elif ch == "]" or ch == "}":
            depth = max(0, depth - 1)
            pos = i + 1
        elif ch == "#":
            end = text.find("\n", i)
            pos = n if end < 0 else end + 1
        elif fmt == "json":
            pos = _string_end(text, i + 1, '"', escapes=True, multiline=True)
        elif text.startswith(ch * 3, i):
            pos = _string_end(text, i + 3, ch * 3, escapes=ch == '"', multiline=True)
        else:
            pos = _string_end(text, i + 1, ch, escapes=ch == '"', multiline=False)
    return None


def _string_end(text: str, pos: int, quote: str, escapes: bool, multiline: bool) -> int:
    """The index just past the string starting at ``pos`` (after its opening quote) and closed by ``quote``."""
    n = len(text)
    limit = n
    if not multiline:
        newline = text.find("\n", pos)
        limit = n if newline < 0 else newline
    while True:
        j = text.find(quote, pos, limit)
        if j < 0:
            return limit
        k = j
        while escapes and k > pos and text[k - 1] == "\\":
            k -= 1
        if (j - k) % 2 == 0:  # an even run of backslashes before the quote escapes nothing
            return j + len(quote)
        pos = j + 1


def _long_int_line(text: str) -> int | None:
    """The line of the first integer literal longer than Python converts (4300 digits), if any."""
    m = _LONG_INT.search(text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def parse_error(text: str, fmt: str, file: str, e: Exception) -> DomainError:
    """A parser's ValueError or RecursionError (not a syntax error) as a DomainError with a line where one fits."""
    kind = fmt.upper()
    if isinstance(e, RecursionError):
        return DomainError(f"malformed {kind}: nested too deeply", file=file, line=nesting_error(text, fmt))
    if "digits" in str(e):  # int() refuses literals of more than sys.get_int_max_str_digits() digits
        line = _long_int_line(text)
        return DomainError(f"malformed {kind}: an integer with more than 4300 digits", file=file, line=line)
    return DomainError(f"malformed {kind}: {e}", file=file)


def _parse(text: str, fmt: str, file: str) -> Any:
    if fmt in ("toml", "json"):
        line = nesting_error(text, fmt)
        if line is not None:
            raise DomainError(
                f"malformed {fmt.upper()}: nested more than {MAX_NESTING} levels deep", file=file, line=line
            )
    if fmt == "toml":
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            m = re.search(r"\(at line (\d+), column \d+\)", str(e))
            line = int(m.group(1)) if m else None
            message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e)) or "invalid TOML"
            raise DomainError(f"malformed TOML: {message}", file=file, line=line) from None
        except (ValueError, RecursionError) as e:
            raise parse_error(text, fmt, file, e) from None
    if fmt == "json":
        try:
            return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
        except json.JSONDecodeError as e:
            raise DomainError(f"malformed JSON: {e.msg}", file=file, line=e.lineno) from None
        except _DuplicateKey as e:
            raise DomainError(
                f"duplicate key {show(e.key)}", file=file, line=_Locator(text, "json").last_key(e.key)
            ) from None
        except (ValueError, RecursionError) as e:
            raise parse_error(text, fmt, file, e) from None
    raise DomainError(f"unknown format {fmt!r}", file=file)


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def _reject_constant(name: str) -> float:
    # JSON has no NaN or Infinity; Python's json accepts them unless told not to. Treat them as numbers here
    # so that the cost check reports them with the item's name ("cost must be a finite number").
    return float(name.replace("Infinity", "inf"))


class _Locator:
    """Finds the line of a key path in domain text by scanning for each key in turn.

    Both formats write a key path in order (``[actions.reload]`` then ``cost = 2``; ``"actions": {"reload":
    {"cost": 2``), so searching for each component from the line of the previous one finds the item.
    """

    def __init__(self, text: str, fmt: str):
        # Lines end at "\n" only, as both parsers count them: splitlines() would also split at a form feed or
        # U+2028 inside a string and shift every line number after it.
        self.lines = text.split("\n")
        self.fmt = fmt

    def _pattern(self, key: str) -> re.Pattern[str]:
        # A key is written as itself or, when it holds characters a string must escape, with JSON's escapes
        # (which TOML shares): "go\n", "go\u202e".
        forms = {key, json.dumps(key)[1:-1], json.dumps(key, ensure_ascii=False)[1:-1]}
        k = "|".join(re.escape(f) for f in sorted(forms))
        if self.fmt == "json":
            return re.compile(rf'"(?:{k})"\s*:')
        return re.compile(rf'(^|[\s.{{,\[])("(?:{k})"|\'(?:{k})\'|(?:{k}))\s*([=\].])')

    def __call__(self, path: tuple[str, ...]) -> int | None:
        line, found = 0, None
        for key in path:
            pattern = self._pattern(str(key))
            for i in range(line, len(self.lines)):
                if pattern.search(self._code(self.lines[i])):
                    line, found = i, i + 1
                    break
            else:
                return found
        return found

    def last_key(self, key: str) -> int | None:
        """The line of the first JSON key ``key`` that repeats a key of the same object."""
        text = "\n".join(self.lines)
        objects: list[set[str] | None] = []  # the keys seen in each open object; None for an array
        for m in _JSON_TOKEN.finditer(text):
            token = m.group()
            if token in ("{", "["):
                objects.append(set() if token == "{" else None)
            elif token in ("}", "]"):
                if objects:
                    objects.pop()
            elif objects and objects[-1] is not None and _JSON_COLON.match(text, m.end()):
                name = json.loads(token)
                if name == key and name in objects[-1]:
                    return text.count("\n", 0, m.start()) + 1
                objects[-1].add(name)
        return None

    def _code(self, text: str) -> str:
        """The line without its TOML comment, so that a key named in a comment is not taken for the key."""
        if self.fmt != "toml" or "#" not in text:
            return text
        quote = None
        for i, ch in enumerate(text):
            if quote:
                if ch == quote:
                    quote = None
            elif ch in "\"'":
                quote = ch
            elif ch == "#":
                return text[:i]
        return text


_JSON_TOKEN = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"|[{}\[\]]')
_JSON_COLON = re.compile(r"\s*:")

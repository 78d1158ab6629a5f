"""Bad domain and problem files (the reproducers of the hardening issue, kept as files under tests/inputs/).

Each one must give `goap: error: FILE:LINE: ...` on stderr, exit status 1, nothing on stdout and no traceback.
Expected lines are found in the input's own text (the line holding a marker), never copied from the output.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from goap.domain import MAX_COST, MAX_PRIORITY, DomainBuilder, DomainError
from goap.domain_file import load_domain, loads_domain, save_domain
from tests.conftest import run_cli

INPUTS = Path(__file__).resolve().parent / "inputs"
BASE = INPUTS / "base.toml"


run = run_cli  # the goap command in-process


def line_with(path: Path, marker: str) -> int:
    """The 1-based line (counting "\\n" only) of the one line of ``path`` holding ``marker``."""
    hits = [i + 1 for i, line in enumerate(path.read_text(encoding="utf-8").split("\n")) if marker in line]
    assert len(hits) == 1, (path, marker, hits)
    return hits[0]


# (input file, marker on the line the error must name, text the message must hold)
BAD_DOMAINS = [
    ("type_list.toml", 'type = ["int"]', "unknown fact type ['int']"),
    ("type_table.toml", "type = {}", "unknown fact type {}"),
    ("cost_400_digits.toml", "cost = 999", "cost must be a finite number in 0..1e12, got an integer of 400 digits"),
    ("priority_400_digits.toml", "priority = 999", "priority must be a finite number in -1e30..1e30, got an integer"),
    ("cost_float32_overflow.toml", "cost = 3.5e38", "cost must be a finite number in 0..1e12, got 3.5e+38"),
    ("priority_float32_overflow.toml", "priority = 1e300", "priority must be a finite number in -1e30..1e30"),
    ("min_2_70.toml", "min = 1180591620717411303424", "min 1180591620717411303424 does not fit the 64-bit encoding"),
    ("max_2_63.toml", "max = 9223372036854775808", "max 9223372036854775808 does not fit the 64-bit encoding"),
    ("nested_1000.toml", "want = { a = [[[", "malformed TOML: nested more than 32 levels deep"),
    ("nested_1000.json", '"priority": [[[', "malformed JSON: nested more than 32 levels deep"),
    ("int_5000_digits.toml", "max = 777", "malformed TOML: an integer with more than 4300 digits"),
    ("int_5000_digits.json", '"max": 777', "malformed JSON: an integer with more than 4300 digits"),
    ("action_newline.toml", '[actions."go\\n"]', "action 'go\\n': names may not contain control characters"),
    ("fact_newline.toml", '"a\\n" = false', "fact 'a\\n': names may not contain control characters"),
    ("enum_label_newline.toml", '"x\\n"', "enum value 'x\\n': names may not contain control characters"),
    ("control_character.toml", '[goals."g\\u0007"]', "goal 'g\\x07': names may not contain control characters"),
    ("domain_name_newline.toml", 'name = "t\\nx y"', "'name' may not contain control characters (found '\\n')"),
    ("name_bidi_override.json", '"go\\u202e"', "action 'go\\u202e': names may not contain control characters"),
]


@pytest.mark.parametrize(("name", "marker", "message"), BAD_DOMAINS, ids=[b[0] for b in BAD_DOMAINS])
def test_bad_domain_file_is_one_error_line(capsys, name, marker, message):
    path = INPUTS / name
    code, out, err = run(capsys, "validate", path)
    assert code == 1 and out == ""
    assert err.startswith(f"goap: error: {path}:{line_with(path, marker)}: ")
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err  # one line, whatever the file held
    assert len(err) < 300


def test_reproducers_in_a_subprocess_never_print_a_traceback():
    # The same files through the installed entry point, as a user runs it.
    for name, _, message in BAD_DOMAINS[:4] + BAD_DOMAINS[8:12]:
        r = subprocess.run([sys.executable, "-m", "goap.cli", "validate", str(INPUTS / name)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 1 and message in r.stderr and "Traceback" not in r.stderr, (name, r.stderr)


def test_max_2_63_is_refused_before_solve_can_crash_in_pack_states(capsys):
    path = INPUTS / "max_2_63.toml"
    code, out, err = run(capsys, "solve", path, "--problems", INPUTS / "problems_duplicate_key.jsonl")
    assert code == 1 and out == "" and "does not fit the 64-bit encoding" in err


EXTREMES = """\
name = "extremes"

[facts]
lo = { type = "int", min = -9223372036854775808, max = -9223372036854775803 }
hi = { type = "int", min = 9223372036854775802, max = 9223372036854775807 }

[actions.up]
cost = 1
effects = { lo = "+= 1" }

[actions.down]
cost = 2
pre = { hi = "> 9223372036854775802" }
effects = { hi = "-= 2" }

[goals.g]
want = { lo = -9223372036854775805, hi = "<= 9223372036854775803" }
"""


@pytest.mark.parametrize("planner", ["reference", "warp"])
def test_int_ranges_at_both_ends_of_int64_plan_exactly(capsys, tmp_path, planner):
    # The widest accepted bounds: every value fits the encoding, and both planners read them back exactly.
    domain = tmp_path / "extremes.toml"
    domain.write_text(EXTREMES)
    problems = tmp_path / "p.jsonl"
    problems.write_text(
        '{"id": 1, "start": {"hi": 9223372036854775807}, "goal": "g"}\n'
        '{"id": 2, "start": {"lo": -9223372036854775804}, "goal": {"lo": "== -9223372036854775803"}}\n'
    )
    code, out, err = run(capsys, "solve", domain, "--problems", problems, "--planner", planner, "--device", "cpu")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    # lo: -2**63 -> -2**63 + 3 is three ups; hi: 2**63-1 -> <= 2**63-5 is two downs (clamped at the min).
    assert [r["cost"] for r in rows] == [3 * 1 + 2 * 2, 1]
    assert sorted(rows[0]["plan"]) == ["down", "down", "up", "up", "up"]


def test_int_bounds_are_checked_by_the_builder_too():
    with pytest.raises(DomainError, match="does not fit the 64-bit encoding"):
        DomainBuilder("d").int("n", -(2**63) - 1, 0).action("a", effects={"n": 0}).build()
    d = DomainBuilder("d").int("n", -(2**63), -(2**63) + 2**62 - 1).action("a", effects={"n": "+= 1"}).build()
    assert d.fact("n").max - d.fact("n").min == 2**62 - 1
    with pytest.raises(DomainError, match="too wide"):
        DomainBuilder("d").int("n", -(2**63), -(2**63) + 2**62).action("a", effects={"n": "+= 1"}).build()


def test_cost_and_priority_limits():
    def build(cost, priority):
        return DomainBuilder("d").bool("a").action("x", cost=cost, effects={"a": True}) \
            .goal("g", want={"a": True}, priority=priority).build()

    assert build(0, 0).actions[0].cost == 0.0
    assert build(MAX_COST, -MAX_PRIORITY).goals[0].priority == -MAX_PRIORITY
    for cost in (-1e-9, MAX_COST * (1 + 1e-15), 2**1100, float("inf"), float("nan"), True, "1"):
        with pytest.raises(DomainError, match="cost must be a finite number in 0..1e12"):
            build(cost, 1)
    for priority in (MAX_PRIORITY * 1.0000001, -(2**1100), float("-inf"), float("nan"), False):
        with pytest.raises(DomainError, match="priority must be a finite number"):
            build(1, priority)


# --- names ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name",
    ["go\n", "go\r", "a\tb", "a\x00", "\x7f", "g\x1b[31m", "x\u202ey", "x\u2066", "\ud800", "trail\u2028"],
)
def test_names_with_control_characters_are_refused_everywhere(name):
    ok = {"fact": "a", "action": "go", "goal": "g", "label": "x"}
    for kind in ok:
        names = {**ok, kind: name}
        b = DomainBuilder("d").bool(names["fact"]).enum("e", [names["label"], "y"])
        b.action(names["action"], effects={names["fact"]: True}).goal(names["goal"], want={names["fact"]: True})
        with pytest.raises(DomainError) as exc:
            b.build()
        assert "names may not" in exc.value.message, (kind, exc.value)
        assert "\n" not in str(exc.value) and "\r" not in str(exc.value)


def test_name_pattern_is_a_full_match():
    # `$` matched before a trailing newline; the old pattern took "go\n" for "go".
    with pytest.raises(DomainError, match="names may not"):
        loads_domain('name = "t"\n[facts]\na = false\n[actions."go\\n"]\neffects = { a = true }\ncost = 1\n')
    with pytest.raises(DomainError, match="'name' may not contain control characters"):
        DomainBuilder("t\nx y").bool("a").action("go", effects={"a": True}).build()
    # Spaces stay allowed in a domain's name, and printable non-ASCII in every name.
    d = DomainBuilder("my domain").bool("café").action("aller→", effects={"café": True}).build()
    assert d.name == "my domain" and d.facts[0].name == "café"


# --- save_domain outside the Basic Multilingual Plane --------------------------------------------------------
@pytest.mark.parametrize("fmt", ["toml", "json"])
def test_save_domain_with_astral_characters_loads_back(tmp_path, fmt):
    d = (
        DomainBuilder('emoji 🎯 "quoted" \\')
        .bool("has_🍎")
        .enum("mood", ["😀", "😡"])
        .action("eat_🍎", cost=1, pre={"mood": "!= 😡"}, effects={"has_🍎": False, "mood": "😀"})
        .goal("𝔤𝔬𝔞𝔩", want={"has_🍎": False})
        .build()
    )
    path = tmp_path / f"emoji.{fmt}"
    save_domain(d, path)
    assert load_domain(path) == d
    if fmt == "toml":
        assert "\\ud83c" not in path.read_text(encoding="utf-8")  # no surrogate-pair escapes


# --- problem files ---------------------------------------------------------------------------------------------
BAD_PROBLEMS = [
    ("problems_nan_id.jsonl", '"id": NaN', "malformed JSON: NaN is not a JSON value"),
    ("problems_inf_id.jsonl", '"id": 1e400', "'id' must be a string or a finite number, got inf"),
    ("problems_duplicate_key.jsonl", '"n": 1, "n": 2', "malformed JSON: duplicate key 'n'"),
    ("problems_nested_1000.jsonl", '"id": [[[', "malformed JSON: nested more than 32 levels deep"),
    ("problems_int_5000_digits.jsonl", '"n": 111', "malformed JSON: an integer with more than 4300 digits"),
    # a U+2028 inside a string is not a line break: the bad problem is on line 2 (splitlines() said 3)
    ("problems_u2028.jsonl", '"id": "b"', "problem 'b': value 9 for fact 'n' is out of range 0..6"),
    # a raw form feed is not JSON whitespace: line 1 is bad (splitlines() made it two lines and blamed line 3)
    ("problems_form_feed.jsonl", '"id": "a\\f"', "malformed JSON: Extra data"),
]


@pytest.mark.parametrize(("name", "marker", "message"), BAD_PROBLEMS, ids=[b[0] for b in BAD_PROBLEMS])
def test_bad_problem_file_names_file_and_line(capsys, name, marker, message):
    path = INPUTS / name
    code, out, err = run(capsys, "solve", BASE, "--problems", path)
    assert code == 1 and out == ""
    assert err.startswith(f"goap: error: {path}:{line_with(path, marker)}: ") and message in err, err
    assert "Traceback" not in err


def test_problems_from_stdin(capsys, monkeypatch):
    lines = '{"id": "s1", "start": {}, "goal": "g"}\n{"id": "s2", "start": {"a": true}, "goal": "g"}\n'
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(lines.encode())))
    code, out, err = run(capsys, "solve", BASE, "--problems", "-")
    assert code == 0, err
    assert [(r["id"], r["status"]) for r in map(json.loads, out.splitlines())] == [("s1", "ok"), ("s2", "satisfied")]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"id": 1, "goal": "nope"}\n')))
    code, out, err = run(capsys, "solve", BASE, "--problems", "-")
    assert code == 1 and out == "" and err.startswith("goap: error: <stdin>:1: problem 1: unknown goal 'nope'")


def test_problems_from_stdin_in_a_subprocess():
    r = subprocess.run([sys.executable, "-m", "goap.cli", "solve", str(BASE), "--problems", "-"],
                       input='{"id": 7, "goal": "g"}\n', capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["id"] == 7


def test_problem_output_is_always_valid_json(capsys, tmp_path):
    # Ids echo back unchanged and strict JSON parses every output line (no NaN or Infinity can get through).
    path = tmp_path / "p.jsonl"
    path.write_text(
        '{"id": 1.5, "goal": "g"}\n{"id": "\\u2028", "goal": "g"}\n{"id": 12345678901234567890123, "goal": "g"}\n'
    )
    code, out, err = run(capsys, "solve", BASE, "--problems", path)
    assert code == 0, err

    def strict(name):
        raise AssertionError(f"{name} in the output")

    assert [json.loads(line, parse_constant=strict)["id"] for line in out.splitlines()] == [
        1.5, "\u2028", 12345678901234567890123
    ]


# --- sizes checked before allocating ---------------------------------------------------------------------------
def test_a_domain_whose_tables_would_take_gigabytes_is_refused_before_encoding():
    from goap.domain import MAX_TABLE_BYTES, domain_from_spec

    facts = {f"f{i}": False for i in range(20_000)}  # 313 state words
    actions = {f"a{i}": {"cost": 1, "effects": {"f0": True}} for i in range(110_000)}
    with pytest.raises(DomainError, match=r"too large to encode: 110,000 actions over 20,000 facts \(313 state words"):
        domain_from_spec({"name": "big", "facts": facts, "actions": actions})
    assert 8 * 313 * 4 * 110_000 > MAX_TABLE_BYTES > 8 * 313 * 4 * 100_000


def test_a_domain_file_over_the_size_limit_is_refused_unread(tmp_path, monkeypatch):
    import goap.domain_file as domain_file

    path = tmp_path / "big.toml"
    path.write_text(BASE.read_text() + "# " + "x" * 5000 + "\n")
    monkeypatch.setattr(domain_file, "MAX_FILE_BYTES", 4096)
    with pytest.raises(DomainError) as exc:
        load_domain(path)
    assert str(exc.value) == f"{path}: too large: {path.stat().st_size:,} bytes (at most 4,096)"
    assert load_domain(BASE).name == "t"  # a file under the limit loads


def test_a_file_that_is_not_utf8_names_the_line(capsys, tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(BASE.read_bytes().replace(b'name = "t"', b'name = "caf\xe9"'))
    code, _, err = run(capsys, "validate", path)
    assert code == 1 and err == f"goap: error: {path}:1: not UTF-8 text (byte 0xe9)\n"
    problems = tmp_path / "p.jsonl"
    problems.write_bytes(b'{"goal": "g"}\n{"id": "\xff", "goal": "g"}\n')
    code, out, err = run(capsys, "solve", BASE, "--problems", problems)
    assert code == 1 and out == "" and err == f"goap: error: {problems}:2: not UTF-8 text (byte 0xff)\n"


def test_crlf_files_load_and_report_the_right_lines(tmp_path):
    path = tmp_path / "crlf.toml"
    path.write_bytes(BASE.read_bytes().replace(b"\n", b"\r\n").replace(b"cost = 1", b"cost = -1"))
    with pytest.raises(DomainError) as exc:
        load_domain(path)
    assert exc.value.line == line_with(BASE, "cost = 1") and "cost must be" in exc.value.message
    path.write_bytes(BASE.read_bytes().replace(b"\n", b"\r\n"))
    assert load_domain(path) == load_domain(BASE)

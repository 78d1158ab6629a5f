"""Loading, validating and saving domains: `goap.domain_file` and the domain model in `goap.domain`.

Every bad-input test checks the whole error: the offending item, the file and the line. Expected lines are
found in the test's own text (the one line holding a marker string), never copied from what the code prints.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from goap.domain import (
    CONDITION_OPS,
    EFFECT_OPS,
    Action,
    Condition,
    Domain,
    DomainBuilder,
    DomainError,
    Effect,
    Fact,
    achieves,
)
from goap.domain_file import load_domain, loads_domain, save_domain

FORMATS = ["toml", "json"]


# --- helpers -----------------------------------------------------------------------------------------------------
def line_of(text: str, marker: str, occurrence: int = 0) -> int:
    """The 1-based line of the text holding ``marker``; it must be on exactly one line unless ``occurrence``."""
    hits = [i + 1 for i, line in enumerate(text.splitlines()) if marker in line]
    if occurrence == 0:
        assert len(hits) == 1, f"marker {marker!r} must be on exactly one line of the test text, found {hits}"
    return hits[occurrence]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load_error(path: Path) -> DomainError:
    with pytest.raises(DomainError) as exc:
        load_domain(path)
    return exc.value


def assert_error(err: DomainError, *, item: str | None, path: Path, line: int | None, message: str) -> None:
    """The error names the item, the file and the line, carries ``message``, and prints as file:line: item: msg."""
    assert err.item == item
    assert err.file == str(path)
    assert err.line == line
    assert message in err.message
    where = f"{path}:{line}: " if line else f"{path}: "
    what = f"{item}: " if item else ""
    assert str(err) == f"{where}{what}{err.message}"
    if item:
        assert item in str(err)


# --- the base domain that every bad-input case edits -------------------------------------------------------------
BASE_TOML = """\
# A small soldier domain; each bad-input case below edits one spot of it.
name = "soldier"

[facts]
armed = false
ammo = { type = "int", min = 0, max = 6, default = 2 }
heat = { type = "int", min = -5, max = 5 }
stance = { type = "enum", values = ["stand", "crouch", "prone"], default = "stand" }

[actions.draw]
cost = 1
pre = { armed = false }
effects = { armed = true }

[actions.reload]
cost = 2
pre = { armed = true, ammo = "< 6" }
effects = { ammo = 6 }

[actions.fire]
cost = 1.5
effects = { ammo = "-= 1", heat = "+= 2" }

[actions.fire.pre]
ammo = "> 0"
stance = "!= prone"

[goals.ready]
priority = 5
want = { ammo = ">= 3", stance = "crouch" }
"""


def to_json(toml_text: str) -> str:
    """The same domain as JSON, one key per line (NaN and Infinity as Python's json writes them)."""
    return json.dumps(tomllib.loads(toml_text), indent=2) + "\n"


def test_base_domain_loads_in_both_formats(tmp_path):
    # The bad cases below must fail because of their edit, not because the base is broken.
    for fmt, text in (("toml", BASE_TOML), ("json", to_json(BASE_TOML))):
        d = load_domain(write(tmp_path, f"base.{fmt}", text))
        assert d.name == "soldier"
        assert [f.name for f in d.facts] == ["armed", "ammo", "heat", "stance"]
        assert d.fact("ammo") == Fact("ammo", "int", 0, 6, 2)
        assert d.fact("heat") == Fact("heat", "int", -5, 5, -5)
        assert d.fact("stance").labels == ("stand", "crouch", "prone")
        assert d.action_names == ["draw", "reload", "fire"]
        fire = d.actions[d.action_index("fire")]
        assert fire.cost == 1.5
        assert fire.pre == (Condition("ammo", ">", 0), Condition("stance", "!=", 2))
        assert fire.effects == (Effect("ammo", "-=", 1), Effect("heat", "+=", 2))
        assert d.goals[0].want == (Condition("ammo", ">=", 3), Condition("stance", "==", 1))
        assert d.goals[0].priority == 5.0


# --- bad input, same structure in TOML and JSON ------------------------------------------------------------------
@dataclass(frozen=True)
class Bad:
    """One edit of BASE_TOML and what the error must say about it.

    ``marker`` picks the line the error must point at; a pair gives (TOML marker, JSON marker).
    """

    old: str
    new: str
    item: str | None
    message: str
    marker: str | tuple[str, str]

    def text(self, fmt: str) -> str:
        assert BASE_TOML.count(self.old) == 1, f"{self.old!r} must occur once in BASE_TOML"
        toml_text = BASE_TOML.replace(self.old, self.new)
        return toml_text if fmt == "toml" else to_json(toml_text)

    def line(self, fmt: str, text: str) -> int:
        marker = self.marker if isinstance(self.marker, str) else self.marker[FORMATS.index(fmt)]
        return line_of(text, marker)


COST_MESSAGE = "cost must be a finite number in 0..1e12"
PRIORITY_MESSAGE = "priority must be a finite number in -1e30..1e30"
RELOAD, FIRE, DRAW, READY = "action 'reload'", "action 'fire'", "action 'draw'", "goal 'ready'"
RELOAD_LINE = ("[actions.reload]", '"reload": {')

BAD_CASES = [
    # unknown facts
    pytest.param(Bad('ammo = "< 6"', 'ammu = "< 6"', RELOAD, "unknown fact 'ammu'", "ammu"), id="unknown-fact-in-pre"),
    pytest.param(
        Bad('stance = "!= prone"', 'stanse = "!= prone"', FIRE, "unknown fact 'stanse'", "stanse"),
        id="unknown-fact-in-pre-subtable",
    ),
    pytest.param(
        Bad('heat = "+= 2"', 'heet = "+= 2"', FIRE, "unknown fact 'heet'", "heet"), id="unknown-fact-in-effects"
    ),
    pytest.param(
        Bad('stance = "crouch"', 'stanse = "crouch"', READY, "unknown fact 'stanse'", "stanse"),
        id="unknown-fact-in-want",
    ),
    # values of the wrong type
    pytest.param(
        Bad("pre = { armed = false }", 'pre = { armed = "no" }', DRAW, "must be true or false", '"no"'),
        id="string-for-bool-in-pre",
    ),
    pytest.param(
        Bad("effects = { armed = true }", 'effects = { armed = "yes" }', DRAW, "must be true or false", '"yes"'),
        id="string-for-bool-in-effect",
    ),
    pytest.param(
        Bad(
            "\narmed = false\n",
            '\narmed = { type = "bool", default = "maybe" }\n',
            "fact 'armed'",
            "must be true or false",
            ("armed = { type", '"armed": {'),
        ),
        id="string-for-bool-default",
    ),
    pytest.param(
        Bad(
            "effects = { ammo = 6 }",
            "effects = { ammo = true }",
            RELOAD,
            "must be an integer",
            ("ammo = true", '"ammo": true'),
        ),
        id="bool-for-int-in-effect",
    ),
    pytest.param(
        Bad('ammo = ">= 3"', "ammo = false", READY, "must be an integer", ("ammo = false", '"ammo": false')),
        id="bool-for-int-in-want",
    ),
    pytest.param(
        Bad('stance = "crouch"', "stance = 1", READY, "must be a label", ("stance = 1", '"stance": 1')),
        id="number-for-enum-in-want",
    ),
    pytest.param(
        Bad('stance = "!= prone"', "stance = 2", FIRE, "must be a label", ("stance = 2", '"stance": 2')),
        id="number-for-enum-in-pre",
    ),
    pytest.param(
        Bad('default = "stand"', "default = 0", "fact 'stance'", "must be one of", ("stance = { type", '"stance": {')),
        id="number-for-enum-default",
    ),
    pytest.param(
        Bad('stance = "!= prone"', 'stance = "< prone"', FIRE, "only takes == and !=", '"< prone"'),
        id="order-op-on-enum",
    ),
    # values out of range
    pytest.param(
        Bad('"< 6"', '"< 7"', RELOAD, "7 for fact 'ammo' is out of range 0..6", '"< 7"'), id="out-of-range-condition"
    ),
    pytest.param(
        Bad('ammo = "> 0"', 'ammo = "> -1"', FIRE, "-1 for fact 'ammo' is out of range 0..6", '"> -1"'),
        id="out-of-range-negative-condition",
    ),
    pytest.param(
        Bad("effects = { ammo = 6 }", "effects = { ammo = 7 }", RELOAD, "out of range 0..6", ("ammo = 7", '"ammo": 7')),
        id="out-of-range-effect",
    ),
    pytest.param(
        Bad('"+= 2"', '"+= 11"', FIRE, "the step must be in 1..10", '"+= 11"'),
        id="out-of-range-effect-step",
    ),
    pytest.param(Bad('"-= 1"', '"-= 0"', FIRE, "the step must be in 1..6", '"-= 0"'), id="zero-effect-step"),
    pytest.param(
        Bad(
            "default = 2",
            "default = 9",
            "fact 'ammo'",
            "9 for fact 'ammo' is out of range 0..6",
            ("ammo = { type", '"ammo": {'),
        ),
        id="out-of-range-default",
    ),
    # costs
    pytest.param(
        Bad("cost = 2", "cost = -2", RELOAD, COST_MESSAGE, ("cost = -2", '"cost": -2')),
        id="cost-negative",
    ),
    pytest.param(
        Bad("cost = 2", "cost = nan", RELOAD, COST_MESSAGE, ("cost = nan", '"cost": NaN')),
        id="cost-nan",
    ),
    pytest.param(
        Bad("cost = 2", "cost = inf", RELOAD, COST_MESSAGE, ("cost = inf", '"cost": Infinity')),
        id="cost-inf",
    ),
    pytest.param(Bad("cost = 2\n", "", RELOAD, "missing 'cost'", RELOAD_LINE), id="cost-missing"),
    # finite in float64, infinite in float32 (3.4e38): refused at load, not turned into inf by the planners
    pytest.param(Bad("cost = 2", "cost = 1e39", RELOAD, COST_MESSAGE, ("cost = 1e39", '"cost": 1e+39')),
                 id="cost-beyond-float32"),
    pytest.param(Bad("cost = 2", "cost = 1000000000001", RELOAD, COST_MESSAGE + ", got 1000000000001",
                     ("cost = 1000000000001", '"cost": 1000000000001')), id="cost-above-max"),
    pytest.param(Bad("cost = 2", "cost = " + "9" * 400, RELOAD, COST_MESSAGE + ", got an integer of 400 digits",
                     ("cost = 999", '"cost": 999')), id="cost-400-digits"),
    pytest.param(Bad("priority = 5", "priority = 1e31", READY, PRIORITY_MESSAGE,
                     ("priority = 1e31", '"priority": 1e+31')), id="priority-above-max"),
    pytest.param(Bad("priority = 5", "priority = -3e38", READY, PRIORITY_MESSAGE,
                     ("priority = -3e38", '"priority": -3e+38')), id="priority-below-min"),
    pytest.param(Bad("priority = 5", "priority = -" + "9" * 400, READY, PRIORITY_MESSAGE,
                     ("priority = -999", '"priority": -999')), id="priority-400-digits"),
    pytest.param(Bad("priority = 5", "priority = nan", READY, PRIORITY_MESSAGE,
                     ("priority = nan", '"priority": NaN')), id="priority-nan"),
    pytest.param(
        Bad("cost = 2", 'cost = "2"', RELOAD, COST_MESSAGE, ('cost = "2"', '"cost": "2"')),
        id="cost-string",
    ),
    pytest.param(
        Bad("cost = 2", "cost = true", RELOAD, COST_MESSAGE, ("cost = true", '"cost": true')),
        id="cost-bool",
    ),
    # unparsable conditions and effects
    pytest.param(Bad('"< 6"', '"~ 3"', RELOAD, "cannot parse condition '~ 3'", '"~ 3"'), id="condition-tilde"),
    pytest.param(
        Bad('"< 6"', '"< three"', RELOAD, "cannot parse condition '< three'", '"< three"'), id="condition-word"
    ),
    pytest.param(Bad('"-= 1"', '"*= 2"', FIRE, "cannot parse effect '*= 2'", '"*= 2"'), id="effect-times"),
    # goals
    pytest.param(
        Bad(
            'want = { ammo = ">= 3", stance = "crouch" }',
            "want = {}",
            READY,
            "'want' is empty",
            ("[goals.ready]", '"ready": {'),
        ),
        id="empty-want",
    ),
    pytest.param(Bad("priority = 5", "prio = 5", READY, "unknown key 'prio'", "prio"), id="unknown-goal-key"),
    # unknown keys
    pytest.param(
        Bad(
            'name = "soldier"\n', 'name = "soldier"\nauthor = "me"\n', None, "unknown top-level key 'author'", "author"
        ),
        id="unknown-top-level-key",
    ),
    pytest.param(
        Bad(
            "pre = { armed = true,",
            "precondition = { armed = true,",
            RELOAD,
            "unknown key 'precondition'",
            "precondition",
        ),
        id="unknown-action-key",
    ),
    # fact declarations
    pytest.param(
        Bad(
            '["stand", "crouch", "prone"]',
            '["stand", "crouch", "stand"]',
            "fact 'stance'",
            "enum values must be distinct",
            ("stance = { type", '"stance": {'),
        ),
        id="enum-duplicate-values",
    ),
    pytest.param(
        Bad(
            "min = -5, max = 5",
            "min = 5, max = 5",
            "fact 'heat'",
            "min (5) must be less than max (5)",
            ("heat = {", '"heat": {'),
        ),
        id="int-min-equals-max",
    ),
    pytest.param(
        Bad(
            "min = -5, max = 5",
            "min = 3, max = -3",
            "fact 'heat'",
            "min (3) must be less than max (-3)",
            ("heat = {", '"heat": {'),
        ),
        id="int-min-above-max",
    ),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_domain_names_item_file_and_line(tmp_path, case: Bad, fmt):
    text = case.text(fmt)
    path = write(tmp_path, f"soldier.{fmt}", text)
    err = load_error(path)
    assert_error(err, item=case.item, path=path, line=case.line(fmt, text), message=case.message)


def test_loads_domain_names_the_given_file():
    text = BASE_TOML.replace("cost = 2", "cost = -1")
    with pytest.raises(DomainError) as exc:
        loads_domain(text, fmt="toml", file="inline.toml")
    assert str(exc.value).startswith(f"inline.toml:{line_of(text, 'cost = -1')}: {RELOAD}: ")


def test_comment_naming_a_key_does_not_move_the_line(tmp_path):
    # The comment names the action and the key before the real ones: the error must skip it.
    text = BASE_TOML.replace("cost = 2", "cost = -1").replace(
        "[actions.draw]", "# [actions.reload] comes later, with cost = -1\n[actions.draw]"
    )
    path = write(tmp_path, "soldier.toml", text)
    real = text.splitlines().index("cost = -1") + 1
    assert real > line_of(text, "# [actions.reload]")
    assert_error(load_error(path), item=RELOAD, path=path, line=real, message="cost must be")


# --- malformed files: these depend on the format -----------------------------------------------------------------
def test_toml_duplicate_table_is_malformed_with_line(tmp_path):
    text = BASE_TOML + "\n[actions.reload]\ncost = 3\neffects = { ammo = 1 }\n"
    path = write(tmp_path, "soldier.toml", text)
    err = load_error(path)
    assert_error(
        err, item=None, path=path, line=line_of(text, "[actions.reload]", occurrence=1), message="malformed TOML"
    )
    assert "('actions', 'reload')" in err.message
    assert "twice" in err.message
    assert "at line" not in err.message  # the position moved into .line


def test_toml_duplicate_key_is_malformed_with_line(tmp_path):
    # tomllib does not name the key here ("Cannot overwrite a value"): the line is what points at it.
    text = BASE_TOML.replace("cost = 2\n", "cost = 2\ncost = 3\n")
    path = write(tmp_path, "soldier.toml", text)
    assert_error(load_error(path), item=None, path=path, line=line_of(text, "cost = 3"), message="malformed TOML")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param("cost = 2", "cost = ", id="missing-value"),
        pytest.param('ammo = "< 6" }', 'ammo = "< 6 }', id="unterminated-string"),
        pytest.param("[actions.fire]", "[actions.fire", id="unclosed-header"),
    ],
)
def test_toml_syntax_error_has_line(tmp_path, old, new):
    text = BASE_TOML.replace(old, new)
    path = write(tmp_path, "soldier.toml", text)
    broken = next(line for line in BASE_TOML.splitlines() if old in line).replace(old, new)
    expected = text.splitlines().index(broken) + 1  # the one edited line
    assert_error(load_error(path), item=None, path=path, line=expected, message="malformed TOML")


JSON_DUPLICATE_ACTION = """\
{
  "name": "soldier",
  "facts": {"armed": false, "ammo": {"type": "int", "min": 0, "max": 6}},
  "actions": {
    "reload": {"cost": 2, "effects": {"ammo": 6}},
    "draw": {"cost": 1, "effects": {"armed": true}},
    "reload": {"cost": 3, "effects": {"ammo": 1}}
  }
}
"""

# "ammo" is a key on three lines before the duplicate: the error must point at the duplicate itself.
JSON_DUPLICATE_EFFECT = """\
{
  "name": "soldier",
  "facts": {"armed": false, "ammo": {"type": "int", "min": 0, "max": 6}},
  "actions": {
    "reload": {"cost": 2, "pre": {"ammo": "< 6"}, "effects": {"ammo": 6}},
    "fire": {
      "cost": 1,
      "effects": {
        "ammo": "-= 1",
        "ammo": "-= 2"
      }
    }
  }
}
"""


# The first "ammo" is a string value, not a key; the duplicate fact follows a nested object.
JSON_DUPLICATE_FACT = """\
{
  "name": "ammo",
  "facts": {
    "ammo": {"type": "int", "min": 0, "max": 6, "default": 1},
    "armed": false,
    "ammo": true
  },
  "actions": {"draw": {"cost": 1, "effects": {"armed": true}}}
}
"""


@pytest.mark.parametrize(
    ("text", "key", "marker"),
    [
        pytest.param(JSON_DUPLICATE_ACTION, "reload", '"reload": {"cost": 3', id="duplicate-action"),
        pytest.param(JSON_DUPLICATE_EFFECT, "ammo", '"-= 2"', id="duplicate-effect-key"),
        pytest.param(JSON_DUPLICATE_FACT, "ammo", '"ammo": true', id="duplicate-fact"),
    ],
)
def test_json_duplicate_key_names_key_and_line(tmp_path, text, key, marker):
    path = write(tmp_path, "soldier.json", text)
    err = load_error(path)
    assert_error(err, item=None, path=path, line=line_of(text, marker), message=f"duplicate key '{key}'")


@pytest.mark.parametrize(
    ("old", "new", "offset", "message"),
    [
        # The parser stops at the next key, on the line after the edit.
        pytest.param('"cost": 2,', '"cost": 2', 1, "Expecting ',' delimiter", id="missing-comma"),
        # ... or at the closing brace after a trailing comma.
        pytest.param('"ammo": 6\n', '"ammo": 6,\n', 1, "Expecting property name", id="trailing-comma"),
        pytest.param('"cost": 2,', '"cost": ,', 0, "Expecting value", id="missing-value"),
    ],
)
def test_json_syntax_error_has_line(tmp_path, old, new, offset, message):
    base = to_json(BASE_TOML)
    assert base.count(old) == 1
    text = base.replace(old, new)
    path = write(tmp_path, "soldier.json", text)
    expected = line_of(text, new.rstrip("\n")) + offset
    assert_error(load_error(path), item=None, path=path, line=expected, message=f"malformed JSON: {message}")


def test_json_top_level_must_be_an_object(tmp_path):
    path = write(tmp_path, "soldier.json", "[1, 2]\n")
    assert_error(load_error(path), item=None, path=path, line=None, message="table/object at the top level")


# --- files that cannot be read -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["soldier.yaml", "soldier", "soldier.toml.bak"])
def test_unknown_suffix(tmp_path, name):
    path = write(tmp_path, name, BASE_TOML)  # the content is fine: the suffix alone is refused
    err = load_error(path)
    assert_error(err, item=None, path=path, line=None, message="unknown domain file type")
    assert f"'{path.suffix}'" in err.message


def test_suffix_is_case_insensitive(tmp_path):
    assert load_domain(write(tmp_path, "soldier.TOML", BASE_TOML)).name == "soldier"


@pytest.mark.parametrize("fmt", FORMATS)
def test_missing_file(tmp_path, fmt):
    path = tmp_path / f"nowhere.{fmt}"
    err = load_error(path)
    assert_error(err, item=None, path=path, line=None, message="no such file")
    assert str(err) == f"{path}: no such file"


def test_save_unknown_suffix_is_refused(tmp_path):
    domain = load_domain(write(tmp_path, "soldier.toml", BASE_TOML))
    with pytest.raises(ValueError, match="unknown domain file type"):
        save_domain(domain, tmp_path / "soldier.yaml")
    assert not (tmp_path / "soldier.yaml").exists()


# --- round trip ---------------------------------------------------------------------------------------------------
def full_domain() -> Domain:
    """Every fact kind, a negative int range, every condition op and every effect op."""
    return (
        DomainBuilder("round-trip")
        .bool("armed")
        .bool("alive", default=True)
        .int("ammo", 0, 6, default=3)
        .int("temp", -10, 10, default=-3)
        .enum("stance", ["stand", "crouch", "prone"], default="crouch")
        .action("draw", cost=1, pre={"armed": False, "alive": True}, effects={"armed": True})
        .action("reload", cost=2.5, pre={"ammo": "< 6", "armed": "true"}, effects={"ammo": 6})
        .action("fire", cost=1, pre={"ammo": ">= 1", "stance": "!= prone"}, effects={"ammo": "-= 1", "temp": "+= 4"})
        .action("cool", cost=0.25, pre={"temp": "> -10"}, effects={"temp": "-= 3"})
        .action("freeze", cost=3, pre={"temp": "!= -10", "ammo": "<= 5"}, effects={"temp": -10, "stance": "prone"})
        .action("stand", cost=1, pre={"stance": "prone", "temp": "== -2"}, effects={"stance": "stand", "armed": False})
        .goal("ready", want={"ammo": ">= 3", "stance": "crouch"}, priority=5)
        .goal("warm", want={"temp": "> -3", "alive": True}, priority=0.5)
        .goal("idle", want={"armed": False, "temp": 2})
        .build()
    )


def test_full_domain_covers_every_op():
    d = full_domain()
    assert {c.op for a in d.actions for c in a.pre} | {c.op for g in d.goals for c in g.want} == set(CONDITION_OPS)
    assert {e.op for a in d.actions for e in a.effects} == set(EFFECT_OPS)
    assert {f.kind for f in d.facts} == {"bool", "int", "enum"}
    assert d.fact("temp").min == -10
    assert d.actions[d.action_index("freeze")].effects == (Effect("temp", "=", -10), Effect("stance", "=", 2))
    assert d.actions[d.action_index("stand")].pre == (Condition("stance", "==", 2), Condition("temp", "==", -2))


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip(tmp_path, fmt):
    original = full_domain()
    path = tmp_path / f"round-trip.{fmt}"
    save_domain(original, path)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left behind
    loaded = load_domain(path)
    assert loaded.name == original.name
    assert loaded.facts == original.facts
    assert loaded.actions == original.actions
    assert loaded.goals == original.goals
    assert loaded == original
    # Saving what was loaded writes the same text again.
    again = tmp_path / f"again.{fmt}"
    save_domain(loaded, again)
    assert again.read_text() == path.read_text()


def test_round_trip_of_the_base_file_between_formats(tmp_path):
    from_toml = load_domain(write(tmp_path, "soldier.toml", BASE_TOML))
    save_domain(from_toml, tmp_path / "soldier.json")
    assert load_domain(tmp_path / "soldier.json") == from_toml


# --- semantics ------------------------------------------------------------------------------------------------------
SEM = (
    DomainBuilder("semantics")
    .bool("armed")
    .int("ammo", 0, 6, default=2)
    .int("temp", -10, 10)
    .enum("stance", ["stand", "crouch", "prone"], default="crouch")
    .action("load4", effects={"ammo": "+= 4"})
    .action("spend4", effects={"ammo": "-= 4"})
    .action("chill", effects={"temp": "-= 5"})
    .action("heat", effects={"temp": "+= 7"})
    .action("set", effects={"ammo": 1, "stance": "prone", "armed": True})
    .build()
)


def act(name: str) -> Action:
    return SEM.actions[SEM.action_index(name)]


@pytest.mark.parametrize(
    ("action", "start", "expected"),
    [
        pytest.param("load4", {"ammo": 1}, {"ammo": 5}, id="add-inside-range"),
        pytest.param("load4", {"ammo": 4}, {"ammo": 6}, id="add-clamped-to-max"),
        pytest.param("load4", {"ammo": 6}, {"ammo": 6}, id="add-at-max"),
        pytest.param("spend4", {"ammo": 5}, {"ammo": 1}, id="sub-inside-range"),
        pytest.param("spend4", {"ammo": 2}, {"ammo": 0}, id="sub-clamped-to-min"),
        pytest.param("chill", {"temp": -8}, {"temp": -10}, id="sub-clamped-to-negative-min"),
        pytest.param("chill", {"temp": 3}, {"temp": -2}, id="sub-into-negatives"),
        pytest.param("heat", {"temp": 5}, {"temp": 10}, id="add-clamped-from-positive"),
        pytest.param("heat", {"temp": -10}, {"temp": -3}, id="add-from-negative-min"),
        pytest.param("set", {"ammo": 6}, {"ammo": 1, "stance": "prone", "armed": True}, id="assign"),
    ],
)
def test_apply_clamps_steps_to_the_int_range(action, start, expected):
    before = SEM.state(start)
    after = SEM.apply(before, act(action))
    assert after == SEM.state({**start, **expected})


def test_apply_leaves_other_facts_alone():
    before = SEM.state({"armed": True, "temp": -4, "stance": "stand"})
    after = SEM.apply(before, act("load4"))
    assert after == SEM.state({"armed": True, "temp": -4, "stance": "stand", "ammo": 6})


# (condition as written, ammo value, holds?) with ammo in 0..6
SATISFIES = [
    ("3", 3, True), ("3", 4, False),
    ("== 3", 3, True), ("== 3", 2, False),
    ("!= 3", 3, False), ("!= 3", 0, True),
    ("< 3", 2, True), ("< 3", 3, False), ("< 3", 4, False),
    ("<= 3", 2, True), ("<= 3", 3, True), ("<= 3", 4, False),
    ("> 3", 4, True), ("> 3", 3, False), ("> 3", 0, False),
    (">= 3", 4, True), (">= 3", 3, True), (">= 3", 2, False),
    (">=0", 0, True), ("<6", 6, False), ("  <=  6  ", 6, True),
]  # fmt: skip


@pytest.mark.parametrize(("literal", "ammo", "holds"), [pytest.param(*c, id=f"{c[0]!r}@{c[1]}") for c in SATISFIES])
def test_satisfies_int_condition(literal, ammo, holds):
    conditions = SEM.conditions({"ammo": literal})
    assert SEM.satisfies(SEM.state({"ammo": ammo}), conditions) is holds


@pytest.mark.parametrize(
    ("want", "state", "holds"),
    [
        pytest.param({"temp": "< -3"}, {"temp": -4}, True, id="negative-lt-true"),
        pytest.param({"temp": "< -3"}, {"temp": -3}, False, id="negative-lt-false"),
        pytest.param({"temp": -3}, {"temp": -3}, True, id="negative-eq"),
        pytest.param({"armed": True}, {"armed": True}, True, id="bool-true"),
        pytest.param({"armed": True}, {"armed": False}, False, id="bool-true-unmet"),
        pytest.param({"armed": False}, {"armed": False}, True, id="bool-false"),
        pytest.param({"stance": "prone"}, {"stance": "prone"}, True, id="enum-eq"),
        pytest.param({"stance": "prone"}, {"stance": "stand"}, False, id="enum-eq-unmet"),
        pytest.param({"stance": "!= prone"}, {"stance": "stand"}, True, id="enum-ne"),
        pytest.param({"stance": "!= prone"}, {"stance": "prone"}, False, id="enum-ne-unmet"),
        pytest.param({"ammo": "> 1", "armed": True}, {"ammo": 2, "armed": True}, True, id="all-hold"),
        pytest.param({"ammo": "> 1", "armed": True}, {"ammo": 2, "armed": False}, False, id="one-fails"),
        pytest.param({}, {}, True, id="no-conditions"),
    ],
)
def test_satisfies_other_conditions(want, state, holds):
    assert SEM.satisfies(SEM.state(state), SEM.conditions(want)) is holds


@pytest.mark.parametrize(
    ("op", "value", "actual", "holds"),
    [
        ("==", 2, 2, True), ("==", 2, 1, False),
        ("!=", 2, 1, True), ("!=", 2, 2, False),
        ("<", 2, 1, True), ("<", 2, 2, False),
        ("<=", 2, 2, True), ("<=", 2, 3, False),
        (">", 2, 3, True), (">", 2, 2, False),
        (">=", 2, 2, True), (">=", 2, 1, False),
    ],
)  # fmt: skip
def test_condition_holds(op, value, actual, holds):
    assert Condition("ammo", op, value).holds(actual) is holds


def test_state_fills_defaults():
    assert SEM.default_state() == (0, 2, -10, 1)
    assert SEM.state() == (0, 2, -10, 1)
    assert SEM.state({"ammo": 5}) == (0, 5, -10, 1)
    assert SEM.state({"armed": True, "stance": "prone", "temp": -7}) == (1, 2, -7, 2)


def test_state_rejects_unknown_fact():
    with pytest.raises(DomainError) as exc:
        SEM.state({"ammo": 1, "amo": 2})
    assert exc.value.item == "start"
    assert exc.value.message == "unknown fact 'amo'"
    assert str(exc.value) == "start: unknown fact 'amo'"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param({"ammo": 7}, "out of range 0..6", id="int-out-of-range"),
        pytest.param({"ammo": True}, "must be an integer", id="bool-for-int"),
        pytest.param({"armed": "yes"}, "must be true or false", id="string-for-bool"),
        pytest.param({"stance": "kneel"}, "must be one of", id="unknown-label"),
    ],
)
def test_state_rejects_bad_values(values, message):
    with pytest.raises(DomainError) as exc:
        SEM.state(values)
    assert exc.value.item == "start"
    assert message in exc.value.message


# --- achieves -------------------------------------------------------------------------------------------------------
def effect_on_ammo(op: str, value: int) -> Action:
    return Action("a", 1.0, effects=(Effect("temp", "=", 0), Effect("ammo", op, value)))


# effect "ammo = 3" against each op: can the assigned value 3 satisfy the condition?
ASSIGN_3 = [
    ("==", 3, True), ("==", 4, False),
    ("!=", 3, False), ("!=", 4, True),
    ("<", 4, True), ("<", 3, False),
    ("<=", 3, True), ("<=", 2, False),
    (">", 2, True), (">", 3, False),
    (">=", 3, True), (">=", 4, False),
]  # fmt: skip


@pytest.mark.parametrize(("op", "value", "expected"), ASSIGN_3)
def test_achieves_assignment(op, value, expected):
    assert achieves(effect_on_ammo("=", 3), Condition("ammo", op, value)) is expected


# A step up can make == (from below), != (from on it), > and >= true, never < or <=; a step down the mirror image.
@pytest.mark.parametrize(
    ("effect_op", "condition_op", "expected"),
    [
        ("+=", "==", True), ("+=", "!=", True), ("+=", "<", False),
        ("+=", "<=", False), ("+=", ">", True), ("+=", ">=", True),
        ("-=", "==", True), ("-=", "!=", True), ("-=", "<", True),
        ("-=", "<=", True), ("-=", ">", False), ("-=", ">=", False),
    ],
)  # fmt: skip
def test_achieves_step(effect_op, condition_op, expected):
    assert achieves(effect_on_ammo(effect_op, 2), Condition("ammo", condition_op, 3)) is expected


def test_achieves_ignores_other_facts():
    action = Action("a", 1.0, effects=(Effect("temp", "+=", 1),))
    for op in CONDITION_OPS:
        assert achieves(action, Condition("ammo", op, 3)) is False
    assert achieves(Action("none", 1.0), Condition("ammo", "==", 3)) is False


def test_achieves_over_approximates_every_real_change():
    # Exhaustive on ammo 0..6: whenever applying the effect turns a false condition true, achieves says so.
    fact = Fact("ammo", "int", 0, 6)
    for effect_op in EFFECT_OPS:
        for k in range(0 if effect_op == "=" else 1, 7):
            action = Action("a", 1.0, effects=(Effect("ammo", effect_op, k),))
            for op in CONDITION_OPS:
                for v in range(7):
                    c = Condition("ammo", op, v)
                    real = any(not c.holds(x) and c.holds(action.effects[0].apply(x, fact)) for x in range(7))
                    if real:
                        assert achieves(action, c), (effect_op, k, op, v)
                    if effect_op == "=":  # an assignment is judged exactly
                        assert achieves(action, c) is c.holds(k), (k, op, v)


# --- builder -------------------------------------------------------------------------------------------------------
def test_builder_rejects_duplicate_names():
    with pytest.raises(DomainError) as exc:
        DomainBuilder("d").bool("armed").int("armed", 0, 3)
    assert exc.value.item == "fact 'armed'"
    assert "duplicate" in exc.value.message
    with pytest.raises(DomainError) as exc:
        DomainBuilder("d").bool("a").action("x", effects={"a": True}).action("x", effects={"a": False})
    assert exc.value.item == "action 'x'"


def test_builder_validates_like_a_file():
    with pytest.raises(DomainError) as exc:
        DomainBuilder("d").int("ammo", 0, 6).action("reload", cost=-0.5, effects={"ammo": 6}).build()
    assert exc.value.item == "action 'reload'"
    assert exc.value.file is None and exc.value.line is None
    assert str(exc.value) == "action 'reload': cost must be a finite number in 0..1e12, got -0.5"


@pytest.mark.parametrize("fmt", FORMATS)
def test_zero_and_max_costs_and_priorities_are_accepted(tmp_path, fmt):
    # Zero-cost actions are allowed (PDDL sokoban has them); the limits themselves are inside the range.
    text = BASE_TOML.replace("cost = 2", "cost = 0").replace("cost = 1.5", "cost = 1e12")
    text = text.replace("priority = 5", "priority = -1e30")
    d = load_domain(write(tmp_path, f"soldier.{fmt}", text if fmt == "toml" else to_json(text)))
    assert [a.cost for a in d.actions] == [1.0, 0.0, 1e12]
    assert d.goals[0].priority == -1e30

"""``goap validate`` warnings that name the fix: the precondition or condition that never holds, its line, and the
condition at the bottom of it; ``--strict`` with warnings never says "valid"."""

from __future__ import annotations

from goap.analysis import check_domain
from goap.domain_file import loads_domain
from tests.conftest import run_cli

FARM = """name = "farm"

[facts]
ripe = false
fed = false
seeds = { type = "int", min = 0, max = 3, default = 0 }
sown = false
rested = false

[actions.harvest]
cost = 1
pre = { ripe = true }
effects = { fed = true }

[actions.sow]
cost = 1
pre = { seeds = "> 0" }
effects = { sown = true, seeds = "-= 1" }

[actions.sleep]
cost = 1
effects = { rested = true }

[goals.fed]
priority = 4
want = { fed = true }

[goals.rested]
priority = 1
want = { rested = true }
"""


def line_of(text: str, needle: str) -> int:
    return next(k + 1 for k, line in enumerate(text.split("\n")) if needle in line)


def test_never_applicable_action_names_its_precondition_and_line(tmp_path, capsys):
    path = tmp_path / "farm.toml"
    path.write_text(FARM)
    code, out, _ = run_cli(capsys, "validate", path)
    assert code == 0 and "is valid" in out
    harvest = next(w for w in out.splitlines() if "action 'harvest'" in w)
    assert "'ripe == true'" in harvest and f"(line {line_of(FARM, 'pre = { ripe = true }')})" in harvest
    sow = next(w for w in out.splitlines() if "action 'sow'" in w)
    assert "'seeds > 0'" in sow and f"(line {line_of(FARM, 'pre = { seeds')})" in sow
    fed = next(w for w in out.splitlines() if "goal 'fed'" in w)
    assert "'fed == true'" in fed and f"(line {line_of(FARM, 'want = { fed = true }')})" in fed
    assert "needs 'ripe == true' (action 'harvest'" in fed
    assert not any("goal 'rested'" in w for w in out.splitlines())


def test_strict_with_warnings_does_not_say_valid(tmp_path, capsys):
    path = tmp_path / "farm.toml"
    path.write_text(FARM)
    code, out, _ = run_cli(capsys, "validate", path, "--strict")
    assert code == 1 and "is valid" not in out and "fails --strict" in out
    clean = FARM.replace('pre = { ripe = true }', 'pre = { }').replace('pre = { seeds = "> 0" }', 'pre = { }')
    clean += '\n[actions.plant]\ncost = 1\npre = { seeds = 0, ripe = false, sown = false }\neffects = { ripe = true }\n'
    path.write_text(clean)
    code, out, _ = run_cli(capsys, "validate", path, "--strict")
    assert code == 0 and "is valid" in out and ": warning:" not in out


def test_sensed_fact_is_free():
    d = loads_domain(FARM)
    assert "harvest" in check_domain(d).never_applicable
    report = check_domain(d, sensed=["ripe"])
    assert "harvest" not in report.never_applicable and "fed" not in report.unreachable_goals
    # the root of sow's failure does not depend on ripe
    assert [(c.fact, r.fact) for c, r in report.blocked["sow"]] == [("seeds", "seeds")]


def test_lines_in_a_json_domain(tmp_path, capsys):
    import json

    from goap.domain_file import domain_to_spec

    text = json.dumps(domain_to_spec(loads_domain(FARM)), indent=2)
    path = tmp_path / "farm.json"
    path.write_text(text)
    code, out, _ = run_cli(capsys, "validate", path)
    lines = text.split("\n")
    harvest = next(k for k, line in enumerate(lines) if '"harvest"' in line)
    ripe = next(k + 1 for k in range(harvest, len(lines)) if '"ripe": true' in lines[k])
    assert code == 0 and f"'ripe == true' (line {ripe})" in out

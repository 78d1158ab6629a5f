"""goap.learn.rounds: ``goap train --rounds K`` (collect, train, redeploy, compare), training on several logs, and
the outcome logs ``goap sweep --log-outcomes`` writes."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from goap.cli import main  # noqa: E402
from goap.learn.model import UtilityModel  # noqa: E402
from goap.learn.rounds import load_logs, round_model_path  # noqa: E402
from goap.outcomes import OutcomeLog  # noqa: E402
from goap.registry import load_world  # noqa: E402
from tests.test_learn import synth_domain, synth_log  # noqa: E402


def goap(argv: list[str]) -> int:
    """``goap ARGV`` in this process: its exit code (2 for a usage error, which argparse raises as SystemExit)."""
    try:
        return main(argv)
    except SystemExit as e:
        return int(e.code)


TINY = ["--world", "soldier", "--agents", "24", "--ticks", "40", "--epochs", "1", "--quiet"]


def test_rounds_report_what_each_round_ran_and_wrote(tmp_path, capsys):
    out, report = tmp_path / "m.pt", tmp_path / "rounds.json"
    assert goap(["train", "--rounds", "2", *TINY, "--compare-seeds", "1", "--out", str(out), "--json",
                 str(report)]) == 0
    printed = capsys.readouterr().out
    assert "objective utility / priority per seed" in printed and "model written to" in printed
    (result,) = json.loads(report.read_text())["worlds"]
    rounds = result["rounds"]
    assert [r["round"] for r in rounds] == [0, 1, 2]
    assert [r["selector"] for r in rounds] == ["priority", "utility", "utility"]
    assert len({r["seed"] for r in rounds}) == 3  # a fresh seed each round
    assert rounds[0]["model"] is None and rounds[0]["predicted"] == 0
    domain = load_world("soldier").domain
    rows = 0
    for r in rounds:
        rows += r["rows_added"]
        assert r["rows"] == rows and r["rows_added"] > 0  # each round appended its own outcomes
        if r["round"]:
            assert r["model"] == str(round_model_path(out, r["round"]))
            model = UtilityModel.load(r["model"], domain)  # the file the round ran
            assert model.summary["round"] == r["round"] and r["predicted"] > 0  # and the selector used it
    final = UtilityModel.load(out, domain)
    assert final.summary["rows"] == rows  # trained on every round's rows
    assert len(result["ratios"]) == 1 and [len(result["runs"][s]) for s in ("priority", "utility")] == [1, 1]
    for s in ("priority", "utility"):
        m = result["summary"][s]["objective"]
        assert m["min"] <= m["mean"] <= m["max"]
    p, u = result["runs"]["priority"][0], result["runs"]["utility"][0]
    assert p["seed"] == u["seed"] and p["seed"] not in {r["seed"] for r in rounds}  # compared on an unseen map


@pytest.mark.parametrize("argv, code, needle", [
    (["train", "--rounds", "2", "--out", "m.pt"], 1, "--rounds needs --world"),
    (["train", "--rounds", "0", "--world", "soldier", "--out", "m.pt"], 2, "--rounds"),
    (["train", "--rounds", "1", "--world", "moon", "--out", "m.pt"], 1, "unknown world"),
    (["train", "--rounds", "1", "--world", "soldier", "--beta", "-1", "--out", "m.pt"], 1, "--beta"),
    (["train", "--rounds", "1", "--world", "soldier", "--beta", "lots", "--out", "m.pt"], 1, "--beta"),
    (["train", "--rounds", "1", "--world", "soldier", "--hidden", "8,x", "--out", "m.pt"], 1, "--hidden"),
    (["train", "--rounds", "1", "--world", "soldier", "--compare-seeds", "-1", "--out", "m.pt"], 2,
     "--compare-seeds"),
    (["train", "--world", "soldier", "--data", "x.npz", "--out", "m.pt"], 1, "--world is for --rounds"),
    (["train", "--out", "m.pt"], 1, "needs --data"),
])
def test_bad_round_arguments_are_clear_errors(tmp_path, capsys, monkeypatch, argv, code, needle):
    monkeypatch.chdir(tmp_path)
    assert goap(argv) == code
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert not (tmp_path / "m.pt").exists()


def test_rounds_refuse_logs_of_another_domain(tmp_path, capsys):
    synth_log(synth_domain(), rows=50).save(tmp_path / "other.npz")
    assert goap(["train", "--rounds", "1", *TINY, "--data", str(tmp_path / "other.npz"), "--out",
                 str(tmp_path / "m.pt")]) == 1
    assert "not world 'soldier''s domain" in capsys.readouterr().err


def test_train_takes_several_logs_and_folders_of_them(tmp_path, capsys):
    domain = synth_domain()
    from goap import save_domain

    save_domain(domain, tmp_path / "synth.toml")
    logs = tmp_path / "logs"
    logs.mkdir()
    for k in range(3):
        synth_log(domain, rows=100 + k, seed=k).save(logs / f"run{k}.npz")
    merged = load_logs([str(logs)])
    assert len(merged) == 100 + 101 + 102
    np.testing.assert_array_equal(merged.columns["states"][:100], OutcomeLog.load(logs / "run0.npz").columns["states"])
    assert len(load_logs([str(logs / "run0.npz"), str(logs / "run2.npz")])) == 202
    base = ["train", "--domain", str(tmp_path / "synth.toml"), "--epochs", "1", "--hidden", "8", "--quiet"]
    assert goap([*base, "--data", str(logs), "--out", str(tmp_path / "m.pt")]) == 0
    assert f"{303} rows" in capsys.readouterr().out
    other = tmp_path / "other.npz"
    synth_log(synth_domain("elsewhere"), rows=10).save(other)
    assert goap([*base, "--data", str(logs / "run0.npz"), str(other), "--out", str(tmp_path / "n.pt")]) == 1
    err = capsys.readouterr().err
    assert f"{other}: holds outcomes of domain 'elsewhere'" in err
    (tmp_path / "empty").mkdir()
    assert goap([*base, "--data", str(tmp_path / "empty"), "--out", str(tmp_path / "n.pt")]) == 1
    assert "no outcome logs (*.npz) in this folder" in capsys.readouterr().err
    assert not (tmp_path / "n.pt").exists()


def test_sweep_logs_each_runs_outcomes_and_train_reads_them(tmp_path, capsys):
    from goap.bench.sweep import build_parser as sweep_parser
    from goap.bench.sweep import log_name
    from goap.bench.sweep import run as sweep_run

    logs = tmp_path / "logs"
    argv = ["--world", "soldier", "--agents", "8,12", "--plan-budget", "8", "--seeds", "0,1", "--ticks", "6",
            "--device", "cpu", "--quiet", "--log-outcomes", str(logs), "--json", str(tmp_path / "s.json")]
    assert sweep_run(sweep_parser().parse_args(argv)) == 0
    rows = json.loads((tmp_path / "s.json").read_text())["results"]
    assert len(rows) == 4 and all("outcomes" not in r for r in rows)  # the bytes went to files, not to the JSON
    domain = load_world("soldier").domain
    for r in rows:
        path = logs / log_name("soldier", r["agents"], 8, r["seed"])
        assert r["outcome_log"] == str(path)
        log = OutcomeLog.load(path)
        assert len(log) == r["outcome_rows"] > 0 and log.domain_name == domain.name
        assert (log.columns["tick"] < 6).all()
    assert sorted(p.name for p in logs.iterdir()) == sorted(log_name("soldier", a, 8, s) for a in (8, 12)
                                                           for s in (0, 1))
    assert goap(["train", "--data", str(logs), "--epochs", "1", "--hidden", "8", "--quiet", "--out",
                 str(tmp_path / "m.pt")]) == 0
    assert f"{sum(r['outcome_rows'] for r in rows)} rows" in capsys.readouterr().out
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="--log-outcomes .*not a folder"):
        sweep_run(sweep_parser().parse_args([*argv[:-4], "--log-outcomes", str(tmp_path / "file")]))

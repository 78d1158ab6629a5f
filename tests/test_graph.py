"""``goap graph``: the DOT it writes parses (with the small parser below, independent of the writer), and a goal's
graph holds every action of its cone and no other; without Graphviz, SVG and PNG are refused with what to
install."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from goap.domain_file import load_domain
from tests.conftest import run_cli
from tests.test_explain import CAMP_TOML

ROOT = Path(__file__).resolve().parent.parent
_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)"|(->)|([A-Za-z_][A-Za-z0-9_.]*|[0-9.]+)|([{}\[\];=,])|(\s+)|(.)', re.S)


def parse_dot(text: str) -> tuple[str, dict[str, dict[str, str]], list[tuple[str, str]]]:
    """(graph name, nodes {id: attributes}, edges) of a ``digraph``; AssertionError on anything else."""
    tokens = []
    for m in _TOKEN.finditer(text):
        quoted, arrow, word, punct, space, bad = m.groups()
        assert bad is None, f"unexpected character {bad!r} at {m.start()}"
        if space is None:
            tokens.append(("str", quoted.replace('\\"', '"')) if quoted is not None else ("op", arrow or punct)
                          if (arrow or punct) else ("str", word))
    pos = 0

    def take(kind=None, value=None):
        nonlocal pos
        assert pos < len(tokens), "unexpected end of DOT"
        k, v = tokens[pos]
        assert (kind is None or k == kind) and (value is None or v == value), (tokens[pos], kind, value)
        pos += 1
        return v

    def attrs():
        out = {}
        if pos < len(tokens) and tokens[pos] == ("op", "["):
            take("op", "[")
            while tokens[pos] != ("op", "]"):
                key = take("str")
                take("op", "=")
                out[key] = take("str")
                if tokens[pos] == ("op", ","):
                    take("op", ",")
            take("op", "]")
        return out

    assert take("str") == "digraph"
    name = take("str")
    take("op", "{")
    nodes: dict[str, dict[str, str]] = {}
    edges = []
    while tokens[pos] != ("op", "}"):
        first = take("str")
        if tokens[pos] == ("op", "="):  # graph attribute: rankdir=LR
            take("op", "=")
            take("str")
        elif tokens[pos] == ("op", "->"):
            take("op", "->")
            second = take("str")
            attrs()
            edges.append((first, second))
        else:
            a = attrs()
            if first not in ("node", "edge", "graph"):
                nodes[first] = a
        take("op", ";")
    take("op", "}")
    assert pos == len(tokens), "text after the graph"
    for s, t in edges:
        assert s in nodes and t in nodes, (s, t)
    return name, nodes, edges


def actions_of(nodes):
    return {n.split(":", 1)[1] for n in nodes if n.startswith("action:")}


def graph(capsys, tmp_path, domain, *extra) -> tuple[dict, list]:
    out = tmp_path / "g.dot"
    code, _, err = run_cli(capsys, "graph", domain, "--out", out, *extra)
    assert code == 0, err
    _, nodes, edges = parse_dot(out.read_text())
    return nodes, edges


def test_goal_cone_of_a_crafted_domain(tmp_path, capsys):
    path = tmp_path / "camp.toml"
    path.write_text(CAMP_TOML)
    nodes, edges = graph(capsys, tmp_path, path, "--goal", "warm")
    assert actions_of(nodes) == {"chop", "light", "sit"}
    assert {n for n in nodes if n.startswith("goal:")} == {"goal:warm"}
    assert ("action:light", "cond:fire == true") in edges and ("cond:fire == true", "action:sit") in edges
    assert nodes["action:light"]["label"] == "light\\ncost 2"
    nodes, _ = graph(capsys, tmp_path, path, "--goal", "fed")
    assert actions_of(nodes) == {"harvest"}
    nodes, _ = graph(capsys, tmp_path, path)
    assert actions_of(nodes) == {"chop", "light", "sit", "harvest"}


@pytest.mark.parametrize("world", ["soldier", "village"])
def test_goal_graph_is_the_actions_with_a_path_to_the_goal(tmp_path, capsys, world):
    """Each goal's graph holds exactly the actions from which the whole domain's graph has a path to that goal."""
    domain_path = ROOT / "worlds" / world / "domain.toml"
    domain = load_domain(domain_path)
    full_nodes, full_edges = graph(capsys, tmp_path, domain_path)
    assert actions_of(full_nodes) == set(domain.action_names)
    preds: dict[str, set[str]] = {}
    for s, t in full_edges:
        preds.setdefault(t, set()).add(s)
    for g in domain.goals:
        reach, stack = set(), [f"goal:{g.name}"]
        while stack:
            n = stack.pop()
            for p in preds.get(n, ()):
                if p not in reach:
                    reach.add(p)
                    stack.append(p)
        nodes, _ = graph(capsys, tmp_path, domain_path, "--goal", g.name)
        assert actions_of(nodes) == actions_of(reach), g.name


def test_svg_without_graphviz_names_what_to_install(tmp_path, capsys, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setitem(sys.modules, "graphviz", None)
    path = tmp_path / "camp.toml"
    path.write_text(CAMP_TOML)
    code, _, err = run_cli(capsys, "graph", path, "--out", tmp_path / "g.svg")
    assert code == 1 and "Graphviz" in err and "install" in err and "Traceback" not in err
    assert not (tmp_path / "g.svg").exists()
    parse_dot((tmp_path / "g.dot").read_text())  # the DOT is written anyway, beside it
    assert "g.dot" in err
    code, _, err = run_cli(capsys, "graph", path, "--out", tmp_path / "g.txt")
    assert code == 1 and ".dot, .svg or .png" in err


def test_bad_goal_and_agent_type_are_one_line_errors(tmp_path, capsys):
    path = tmp_path / "camp.toml"
    path.write_text(CAMP_TOML)
    code, _, err = run_cli(capsys, "graph", path, "--out", tmp_path / "g.dot", "--goal", "nope")
    assert code == 1 and "unknown goal 'nope'" in err
    code, _, err = run_cli(capsys, "graph", path, "--out", tmp_path / "g.dot", "--agent-type", "farmer")
    assert code == 1 and "no agent types" in err


def test_agent_type_narrows_the_actions(tmp_path, capsys):
    from goap.domain_file import loads_domain
    from goap.graph import domain_graph

    typed = CAMP_TOML + '\n[types.stoker]\nactions = ["sit", "light"]\n\n[types.anyone]\n'
    d = loads_domain(typed)
    from goap.explain import type_actions

    allowed = type_actions(d, "stoker")
    assert allowed == ["light", "sit"]
    assert type_actions(d, "anyone") == d.action_names
    path = tmp_path / "typed.toml"
    path.write_text(typed)
    code, _, err = run_cli(capsys, "graph", path, "--out", tmp_path / "g.dot", "--agent-type", "farmer")
    assert code == 1 and "unknown agent type 'farmer'" in err
    g = domain_graph(d, goal="warm", actions=allowed)
    assert g.ids("action") == ["action:light", "action:sit"]
    with pytest.raises(ValueError, match="unknown agent type 'cook'"):
        type_actions(d, "cook")
    with pytest.raises(ValueError, match="declares no agent types"):
        type_actions(loads_domain(CAMP_TOML), "stoker")

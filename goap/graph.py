"""The domain as a graph: goals, actions and the conditions that link them, for ``goap graph`` and the viewer.

Three kinds of node: a *goal* (with its priority), an *action* (with its cost) and a *condition* (``fact op
value``, as a precondition or a goal condition reads it). Edges: a condition feeds the actions that need it and
the goals that want it; an action feeds every condition its effects can make true (`goap.domain.achieves`, the
relation the planners' heuristics use). So a path from an action to a goal is a way the action helps that goal.

``goal=G`` keeps only G's *cone*: its conditions, the actions that can achieve them, those actions'
preconditions, their achievers, and so on (backward, each node once): every action that can appear in a plan for
G, whatever the start state. ``actions`` narrows the graph to the actions an agent (or an agent type) may use.

`to_dot` writes Graphviz DOT; `render` turns it into SVG or PNG through the ``dot`` program or the ``graphviz``
Python package when either is present. `layered` places the nodes in columns for drawing without Graphviz (the
viewer's overlay).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field

from goap.analysis import condition_text
from goap.domain import Condition, Domain, achieves


@dataclass(frozen=True)
class Node:
    id: str
    kind: str  # "goal", "action" or "condition"
    label: str


@dataclass
class Graph:
    """Nodes (in a stable order: goals, actions, conditions as the domain lists them) and edges (source, target)."""

    nodes: list[Node]
    edges: list[tuple[str, str]]
    highlight: set[str] = field(default_factory=set)  #: node ids to draw highlighted (a plan's actions)

    def ids(self, kind: str) -> list[str]:
        return [n.id for n in self.nodes if n.kind == kind]

    def node(self, node_id: str) -> Node:
        return next(n for n in self.nodes if n.id == node_id)


def goal_id(name: str) -> str:
    return f"goal:{name}"


def action_id(name: str) -> str:
    return f"action:{name}"


def condition_id(domain: Domain, c: Condition) -> str:
    return f"cond:{condition_text(domain, c)}"


def goal_cone(domain: Domain, goal: str, actions: Iterable[str] | None = None) -> list[str]:
    """The actions that can appear in some plan for ``goal``: achievers of its conditions, then achievers of those
    actions' preconditions, transitively (among ``actions`` when given), in domain order."""
    allowed = None if actions is None else set(actions)
    g = domain.goals[domain.goal_index(goal)]
    seen_c: set[Condition] = set()
    seen_a: set[str] = set()
    stack = list(g.want)
    while stack:
        c = stack.pop()
        if c in seen_c:
            continue
        seen_c.add(c)
        for a in domain.actions:
            if a.name in seen_a or (allowed is not None and a.name not in allowed) or not achieves(a, c):
                continue
            seen_a.add(a.name)
            stack.extend(a.pre)
    return [a.name for a in domain.actions if a.name in seen_a]


def domain_graph(domain: Domain, goal: str | None = None, actions: Iterable[str] | None = None,
                 plan: Iterable[str] = ()) -> Graph:
    """The graph of ``domain`` (only ``goal``'s cone when given; only the ``actions`` allowed when given), with
    the actions of ``plan`` highlighted."""
    if goal is not None:
        domain.goal_index(goal)  # KeyError naming it when unknown
    allowed = None if actions is None else set(actions)
    if allowed is not None:
        unknown = sorted(allowed - set(domain.action_names))
        if unknown:
            raise KeyError(f"unknown action '{unknown[0]}' in domain '{domain.name}'")
    keep_actions = goal_cone(domain, goal, allowed) if goal is not None else [
        a.name for a in domain.actions if allowed is None or a.name in allowed]
    kept = set(keep_actions)
    goals = [g for g in domain.goals if goal is None or g.name == goal]
    acts = [a for a in domain.actions if a.name in kept]
    nodes: list[Node] = [Node(goal_id(g.name), "goal", f"{g.name}\npriority {g.priority:g}") for g in goals]
    nodes += [Node(action_id(a.name), "action", f"{a.name}\ncost {a.cost:g}") for a in acts]
    conditions: dict[str, Condition] = {}
    for g in goals:
        for c in g.want:
            conditions.setdefault(condition_id(domain, c), c)
    for a in acts:
        for c in a.pre:
            conditions.setdefault(condition_id(domain, c), c)
    nodes += [Node(cid, "condition", condition_text(domain, c)) for cid, c in conditions.items()]
    edges: list[tuple[str, str]] = []
    for g in goals:
        edges += [(condition_id(domain, c), goal_id(g.name)) for c in g.want]
    for a in acts:
        edges += [(condition_id(domain, c), action_id(a.name)) for c in a.pre]
        edges += [(action_id(a.name), cid) for cid, c in conditions.items() if achieves(a, c)]
    return Graph(nodes, list(dict.fromkeys(edges)), {action_id(p) for p in plan if p in kept})


_SHAPES = {"goal": "box, style=\"rounded,filled\", fillcolor=\"#ffe9a8\"",
           "action": "ellipse, style=filled, fillcolor=\"#cfe3ff\"",
           "condition": "note, style=filled, fillcolor=\"#f2f2f2\", fontsize=10"}


def quote(text: str) -> str:
    """A DOT double-quoted string (backslashes and quotes escaped; a newline as DOT's centred line break)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(graph: Graph, name: str = "domain") -> str:
    """Graphviz DOT text of ``graph``: conditions flow left to right into actions and goals."""
    out = [f"digraph {quote(name)} {{", "  rankdir=LR;", '  node [fontname="Helvetica"];']
    for n in graph.nodes:
        extra = ", penwidth=3, color=\"#d04000\"" if n.id in graph.highlight else ""
        out.append(f"  {quote(n.id)} [label={quote(n.label)}, shape={_SHAPES[n.kind]}{extra}];")
    for s, t in graph.edges:
        hot = s in graph.highlight or t in graph.highlight
        out.append(f"  {quote(s)} -> {quote(t)}" + (' [color="#d04000"];' if hot else ";"))
    out.append("}")
    return "\n".join(out) + "\n"


class RenderUnavailable(RuntimeError):
    """Neither Graphviz's ``dot`` program nor the ``graphviz`` Python package is here to draw SVG or PNG."""


def render(dot: str, fmt: str) -> bytes:
    """``dot`` drawn as ``fmt`` ("svg" or "png") by Graphviz: the ``dot`` program, else the ``graphviz`` package
    (which needs the program too); RenderUnavailable naming what to install when neither works."""
    exe = shutil.which("dot")
    if exe:
        done = subprocess.run([exe, f"-T{fmt}"], input=dot.encode(), capture_output=True, timeout=120, check=False)
        if done.returncode == 0:
            return done.stdout
        raise RenderUnavailable(f"Graphviz's dot failed: {done.stderr.decode(errors='replace').strip()[:300]}")
    try:
        import graphviz  # type: ignore[import-not-found]

        return graphviz.Source(dot).pipe(format=fmt)
    except ImportError:
        pass
    except Exception as e:  # the package is here but cannot run dot
        raise RenderUnavailable(f"the graphviz package could not draw it ({e}); install Graphviz's dot program "
                                "(apt install graphviz, brew install graphviz, or graphviz.org/download)") from None
    raise RenderUnavailable("drawing SVG or PNG needs Graphviz's dot program (apt install graphviz, brew install "
                            "graphviz, or graphviz.org/download)")


def action_graph(graph: Graph) -> Graph:
    """``graph`` without its condition nodes: an edge from action a to action or goal b wherever a can make true a
    condition b needs (the compact view the viewer draws; the conditions are in the DOT and the why panel)."""
    into: dict[str, list[str]] = {}
    for s, t in graph.edges:
        into.setdefault(s, []).append(t)
    keep = [n for n in graph.nodes if n.kind != "condition"]
    edges = []
    for n in keep:
        for c in into.get(n.id, []):
            if c.startswith("cond:"):
                edges += [(n.id, t) for t in into.get(c, [])]
    return Graph(keep, list(dict.fromkeys(edges)), set(graph.highlight))


def layered(graph: Graph) -> dict[str, tuple[int, int]]:
    """Columns for drawing without Graphviz: each node's column is its distance back from the nearest goal along
    the edges (goals in column 0, their conditions in 1, the actions achieving those in 2, ...; a breadth-first
    walk, so cycles between actions and conditions cost nothing), and its row within the column. Nodes from
    which no goal is reached go in the column after the last."""
    preds: dict[str, list[str]] = {n.id: [] for n in graph.nodes}
    for s, t in graph.edges:
        preds[t].append(s)
    depth: dict[str, int] = {}
    frontier = [n.id for n in graph.nodes if n.kind == "goal"]
    for n in frontier:
        depth[n] = 0
    while frontier:
        nxt = []
        for t in frontier:
            for s in preds[t]:
                if s not in depth:
                    depth[s] = depth[t] + 1
                    nxt.append(s)
        frontier = nxt
    last = max(depth.values(), default=-1) + 1
    rows: dict[int, int] = {}
    out = {}
    for n in graph.nodes:
        col = depth.get(n.id, last)
        out[n.id] = (col, rows.get(col, 0))
        rows[col] = rows.get(col, 0) + 1
    return out

"""Fuzzing the `goap` command with mutated domain, problem and PDDL files.

Hypothesis (seeded, a bounded number of examples) mutates seed files, both as text (tokens inserted, spans cut or
replaced, lines doubled or dropped) and as structure (a JSON value swapped for another: huge or negative numbers,
NaN, nested lists, strange strings), and every batch runs in one child process that caps its own address space
(`resource.setrlimit(RLIMIT_AS)`) and gives each command an alarm. Every command must exit 0 or 1; on 1 its last
stderr line is `goap: error: ...` naming one of its files; nothing prints a traceback, hits the memory cap or
outlives the alarm. A mutated domain both planners accept is planned by the reference and by warp: the same
statuses and costs, and on small domains the cost of a brute-force search over the domain's own semantics.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

resource = pytest.importorskip("resource")  # POSIX only

ROOT = Path(__file__).resolve().parent.parent
INPUTS = ROOT / "tests" / "inputs"
PDDL = ROOT / "benchmarks" / "pddl"

MEMORY_LIMIT = 1536 * 2**20  # bytes of address space for the child (the CLI alone needs about 160 MB)
PER_COMMAND_S = 20  # the alarm for one command
BATCH = 10  # files per example (one child process each)
EXAMPLES = int(os.environ.get("GOAP_FUZZ_EXAMPLES", "5"))  # per test; raise it for a longer campaign

# The child: caps its memory, then runs each argv through goap.cli.main with an alarm, and reports as JSON.
CHILD = r"""
import contextlib, io, json, resource, signal, sys, time, traceback
limit, per_command = int(sys.argv[1]), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from goap.cli import main

class Hang(BaseException):
    pass

def alarm(*_):
    raise Hang()

signal.signal(signal.SIGALRM, alarm)
results = []
for argv in json.load(sys.stdin):
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    signal.alarm(per_command)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:
                code = e.code
    except Hang:
        code = "hang"
    except BaseException:  # what would reach the user as a traceback (MemoryError under the cap included)
        code = "traceback"
        err.write(traceback.format_exc())
    finally:
        signal.alarm(0)
    text = err.getvalue()
    lines = text.strip().splitlines() or [""]
    results.append({"argv": argv, "code": code, "stderr": text[:3000], "last_line": lines[-1][:1000],
                    "traceback": "Traceback" in text, "seconds": time.perf_counter() - t0,
                    "stdout": out.getvalue()[:200000]})
json.dump(results, sys.__stdout__)
"""


def run_batch(commands: list[list[str]]) -> list[dict]:
    r = subprocess.run(
        [sys.executable, "-c", CHILD, str(MEMORY_LIMIT), str(PER_COMMAND_S)], input=json.dumps(commands),
        capture_output=True, text=True, timeout=PER_COMMAND_S * len(commands) + 60, cwd=ROOT,
    )
    assert r.returncode == 0, f"the child died (memory cap or crash): {r.returncode}\n{r.stderr[-3000:]}"
    return json.loads(r.stdout)


def check(results: list[dict], files_of: list[list[str]]) -> None:
    for res, files in zip(results, files_of, strict=True):
        argv, code, err = res["argv"], res["code"], res["stderr"]
        where = f"goap {' '.join(argv)}: {err}"
        assert code in (0, 1), where
        assert not res["traceback"], where
        if code == 1:
            last = res["last_line"]
            assert last.startswith("goap: error: "), where
            assert any(f in last for f in files), f"the error names none of {files}: {where}"
        assert res["seconds"] < PER_COMMAND_S, where


# --- mutations -----------------------------------------------------------------------------------------------
TOKENS = [
    "[", "]", "{", "}", "(", ")", '"', "'", "=", ",", ":", "\n", "#", "\\", "nan", "inf", "-inf", "NaN", "Infinity",
    "1e400", "-1", "0", "2", "0.5", "1e39", "9223372036854775808", "-9223372036854775809", "1" * 30, "7" * 4400,
    "true", "false", "null", '"int"', '["int"]', "{}", '"enum"', '"bool"', "type", "min", "max", "default",
    "values", "cost", "pre", "effects", "want", "priority", "name", "[facts]", "[actions.x]", "[goals.y]", "[[z]]",
    "= { }", "= [ ]",
    "[" * 40, "{ a = " * 40, "[" * 1200, "\u2028", "\x00", "\x0c", "\x1b", "\ud7ff", "😀", "'''", '"""', "+= 1",
    "-= 99", ">= 3", "< -5", "!= x", "== 2", '"\\u0000"', '"\\ud800"', "0x7fffffffffffffff", "1_000", "-0",
    # PDDL
    ":action", ":parameters", ":precondition", ":effect", ":requirements", ":typing", ":action-costs", "?x",
    "- object", "(and", "(not", "(increase (total-cost) 5)", "(= (total-cost) 0)", "(:init", "(:goal", "(" * 60,
    "(" * 1200, "(forall (?v) (p ?v))", ":objects", "(:types a b - object)", "(increase (total-cost) nan)",
]

token = st.sampled_from(TOKENS) | st.text(max_size=6)
text_edit = st.tuples(st.sampled_from(["insert", "delete", "replace", "dup_line", "drop_line", "truncate"]),
                      st.floats(0, 1), st.integers(1, 40), token)


def mutate_text(text: str, edits: list[tuple[str, float, int, str]]) -> str:
    for op, where, span, tok in edits:
        i = int(where * len(text))
        if op == "insert":
            text = text[:i] + tok + text[i:]
        elif op == "delete":
            text = text[:i] + text[i + span:]
        elif op == "replace":
            text = text[:i] + tok + text[i + span:]
        elif op == "truncate":
            text = text[:i]
        else:
            lines = text.split("\n")
            k = min(int(where * len(lines)), len(lines) - 1)
            lines = lines[:k] + ([lines[k]] * 2 if op == "dup_line" else []) + lines[k + 1:]
            text = "\n".join(lines)
    return text


json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(-(2**70), 2**70) | st.sampled_from(
        [2**63, -(2**63) - 1, 2**62, 10**400, -(10**400), 0, -1]
    ) | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8) | st.sampled_from(
        ["int", "enum", "bool", "+= 1", "-= 0", "< 9", "!= stand", "prone", "a\nb", "", " ", "x" * 300]
    ) | st.sampled_from([["int"], {}, [[]], {"type": "int"}, ["stand", "stand"], {"min": 2**70}]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)
tree_edit = st.tuples(st.integers(0, 10**6), st.booleans(), json_value)


def nodes(obj, path=()):
    """Every key path in ``obj`` (dicts and lists), the root included, in document order."""
    out = [path]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += nodes(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += nodes(v, (*path, i))
    return out


def mutate_tree(obj, pick: int, rename: bool, value):
    """Replace one node, chosen uniformly among all of them, by ``value`` (or rename its key to ``value``)."""
    paths = nodes(obj)
    path = paths[pick % len(paths)]
    if not path:
        return value

    def edit(node, rest):
        k = rest[0]
        if len(rest) == 1:
            if isinstance(node, dict):
                if rename:
                    new_key = value if isinstance(value, str) else json.dumps(value)
                    return {(new_key if key == k else key): v for key, v in node.items()}
                return {**node, k: value}
            return [value if i == k else v for i, v in enumerate(node)]
        if isinstance(node, dict):
            return {**node, k: edit(node[k], rest[1:])}
        return [edit(v, rest[1:]) if i == k else v for i, v in enumerate(node)]

    return edit(obj, path)


def domain_json_seed() -> dict:
    import tomllib

    return tomllib.loads((INPUTS / "fuzz_seed.toml").read_text())


# No shrinking: each example is a child process, and a failing batch is reported as it was drawn.
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@seed(14)
@FUZZ
@given(st.lists(st.tuples(st.booleans(), st.lists(text_edit, min_size=1, max_size=4)), min_size=BATCH,
                max_size=BATCH))
def test_fuzz_domain_text(tmp_path_factory, batch):
    tmp = tmp_path_factory.mktemp("fuzz-domain-text")
    seed_toml = (INPUTS / "fuzz_seed.toml").read_text()
    seed_json = json.dumps(domain_json_seed(), indent=1)
    problems = str(INPUTS / "fuzz_seed_problems.jsonl")
    commands, files = [], []
    for i, (as_json, edits) in enumerate(batch):
        path = tmp / f"d{i}.{'json' if as_json else 'toml'}"
        path.write_text(mutate_text(seed_json if as_json else seed_toml, edits), encoding="utf-8",
                        errors="surrogatepass")
        commands += [["validate", str(path)], ["solve", str(path), "--problems", problems, "--max-nodes", "5000"]]
        files += [[str(path)], [str(path), problems]]
    check(run_batch(commands), files)


@seed(14)
@FUZZ
@given(st.lists(st.lists(tree_edit, min_size=1, max_size=3), min_size=BATCH, max_size=BATCH))
def test_fuzz_domain_structure(tmp_path_factory, batch):
    tmp = tmp_path_factory.mktemp("fuzz-domain-tree")
    problems = str(INPUTS / "fuzz_seed_problems.jsonl")
    commands, files = [], []
    for i, edits in enumerate(batch):
        spec = domain_json_seed()
        for path_, rename, value in edits:
            spec = mutate_tree(spec, path_, rename, value)
        path = tmp / f"d{i}.json"
        path.write_text(json.dumps(spec), encoding="utf-8", errors="surrogatepass")
        commands += [["validate", str(path)], ["describe", str(path)],
                     ["solve", str(path), "--problems", problems, "--max-nodes", "5000"],
                     ["solve", str(path), "--problems", problems, "--max-nodes", "5000", "--planner", "warp",
                      "--device", "cpu"]]
        files += [[str(path)], [str(path)], [str(path), problems], [str(path), problems]]
    results = run_batch(commands)
    check(results, files)
    for ref, warp in zip(results[2::4], results[3::4], strict=True):
        assert_accepted_mutant_agrees(ref, warp, problems)


def assert_accepted_mutant_agrees(ref: dict, warp: dict, problems: str) -> None:
    """A mutant both planners accepted: the same status and cost on every problem, and where the domain is
    small, the optimal cost of a brute-force search over the domain's own semantics."""
    from goap.domain_file import load_domain
    from goap.encoding import encode
    from goap.problems import load_problems
    from tests.conftest import brute_force_cost

    assert ref["code"] == warp["code"], f"reference {ref['code']}, warp {warp['code']}: {ref['argv']}"
    if ref["code"] != 0:
        return
    rows_r = [json.loads(line) for line in ref["stdout"].splitlines()]
    rows_w = [json.loads(line) for line in warp["stdout"].splitlines()]
    assert [r["status"] for r in rows_r] == [w["status"] for w in rows_w], ref["argv"]
    for r, w in zip(rows_r, rows_w, strict=True):
        assert (r["cost"] is None) == (w["cost"] is None) and (r["cost"] is None or math.isclose(
            r["cost"], w["cost"], rel_tol=1e-9, abs_tol=1e-9)), f"{ref['argv']}: {r} vs {w}"
    domain = load_domain(ref["argv"][1])
    if len(domain.facts) > 12:
        return
    ps = load_problems(problems, encode(domain))
    for i, r in enumerate(rows_r):
        if r["status"] not in ("ok", "satisfied", "no_plan"):
            continue
        start = tuple(int(v) for v in ps.values[i])
        try:
            best = brute_force_cost(domain, start, ps.goal_table.goals[int(ps.goals[i])], limit=50_000)
        except RuntimeError:  # a mutant with too many states for the oracle
            continue
        if best == math.inf and r["status"] != "no_plan" or best != math.inf and r["status"] == "no_plan":
            raise AssertionError(f"{ref['argv']}: problem {r['id']}: {r['status']} but brute force says {best}")
        if r["cost"] is not None:
            assert math.isclose(r["cost"], best, rel_tol=1e-9, abs_tol=1e-9), f"{ref['argv']}: {r} vs {best}"


@seed(14)
@FUZZ
@given(st.lists(st.tuples(st.lists(text_edit, max_size=3), st.lists(tree_edit, max_size=2), st.integers(0, 3)),
                min_size=BATCH, max_size=BATCH))
def test_fuzz_problem_files(tmp_path_factory, batch):
    tmp = tmp_path_factory.mktemp("fuzz-problems")
    domain = str(INPUTS / "fuzz_seed.toml")
    lines = (INPUTS / "fuzz_seed_problems.jsonl").read_text().splitlines()
    commands, files = [], []
    for i, (edits, tree_edits, line) in enumerate(batch):
        objs = [json.loads(x) for x in lines]
        for path_, rename, value in tree_edits:
            objs[line] = mutate_tree(objs[line], path_, rename, value)
        text = mutate_text("\n".join(json.dumps(o) for o in objs) + "\n", edits)
        path = tmp / f"p{i}.jsonl"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        commands.append(["solve", domain, "--problems", str(path), "--max-nodes", "5000"])
        files.append([str(path)])
    check(run_batch(commands), files)


PDDL_SEEDS = [("gripper", "task01"), ("blocks", "task01"), ("miconic", "task01")]


@pytest.mark.skipif(not PDDL.is_dir(), reason="the IPC task set is not in this checkout")
@seed(14)
@FUZZ
@given(st.lists(st.tuples(st.sampled_from(PDDL_SEEDS), st.booleans(), st.lists(text_edit, min_size=1, max_size=3)),
                min_size=BATCH, max_size=BATCH))
def test_fuzz_pddl(tmp_path_factory, batch):
    tmp = tmp_path_factory.mktemp("fuzz-pddl")
    commands, files = [], []
    for i, ((dom, task), mutate_problem, edits) in enumerate(batch):
        d_text = (PDDL / dom / "domain.pddl").read_text()
        p_text = (PDDL / dom / f"{task}.pddl").read_text()
        if mutate_problem:
            p_text = mutate_text(p_text, edits)
        else:
            d_text = mutate_text(d_text, edits)
        d_path, p_path = tmp / f"domain{i}.pddl", tmp / f"task{i}.pddl"
        d_path.write_text(d_text, encoding="utf-8", errors="surrogatepass")
        p_path.write_text(p_text, encoding="utf-8", errors="surrogatepass")
        commands += [["validate", str(d_path), str(p_path)],
                     ["solve", str(d_path), str(p_path), "--max-nodes", "5000"]]
        files += [[str(d_path), str(p_path)]] * 2
    check(run_batch(commands), files)


def test_the_harness_catches_what_it_must():
    # A command that crashes, and one that hangs, are reported as such (so the fuzz tests can fail).
    results = run_batch([["validate", str(INPUTS / "base.toml")], ["validate", "/dev/stdin"]])
    assert results[0]["code"] == 0
    assert results[1]["code"] == 1  # a path without a .toml or .json suffix: an error, not a hang on stdin
    bad = {"argv": ["x"], "code": "traceback", "stderr": "Traceback (most recent call last):\n", "last_line": "",
           "traceback": True, "seconds": 0.1}
    with pytest.raises(AssertionError):
        check([bad], [["x"]])
    unnamed = {**bad, "code": 1, "traceback": False, "last_line": "goap: error: something"}
    with pytest.raises(AssertionError):
        check([unnamed], [["some/file.toml"]])
    check([{**unnamed, "last_line": "goap: error: some/file.toml:3: bad"}], [["some/file.toml"]])


# --- planners on small random tasks: warp == reference == brute force ---------------------------------------------
# Tasks of 2 to 6 bool, enum and int facts with every comparison, effects that set, add and subtract, actions with
# no precondition, zero, fractional and 1e12 costs, per-agent cost rows and enabled masks: the shapes the planners'
# bookkeeping must survive (LM-cut's goal zone walked one condition short on such a task, and expanded more nodes
# than the reference with the same plan). Small enough that uniform-cost search over every state is the oracle.
DIFF_SEEDS = int(os.environ.get("GOAP_FUZZ_TASKS", "60"))  # per heuristic; raise it for a longer campaign
COST_POOLS = [[0, 1, 2], [1, 1, 2, 3, 5], [0, 0.5, 1.5], [0.1, 0.2, 0.3, 0.7], [1, 1e12, 3], [0, 1]]


def small_task(seed: int, n_problems: int = 30):
    """A random domain, start values int64[n, F], goal indices and the pool its cost rows are drawn from."""
    import random

    from goap import DomainBuilder

    rng = random.Random(seed)
    b = DomainBuilder(f"small-{seed}")
    kinds = []
    for i in range(rng.randint(2, 6)):
        kind = rng.choice(["bool", "enum", "int"])
        hi = 1 if kind == "bool" else rng.randint(2, 4) - 1 if kind == "enum" else rng.randint(1, 6)
        if kind == "bool":
            b.bool(f"f{i}")
        elif kind == "enum":
            b.enum(f"f{i}", [f"v{j}" for j in range(hi + 1)])
        else:
            b.int(f"f{i}", 0, hi)
        kinds.append((kind, hi))

    def condition(i: int) -> object:
        kind, hi = kinds[i]
        v = rng.randint(0, hi)
        if kind == "bool":
            return bool(v)
        if kind == "enum":
            return f"v{v}" if rng.random() < 0.7 else f"!= v{v}"
        op = rng.choice(["==", "!=", ">=", "<=", ">", "<"])
        if op == ">":
            v = min(v, hi - 1)
        elif op == "<":
            v = max(v, 1)
        return v if op == "==" else f"{op} {v}"

    def effect(i: int) -> object:
        kind, hi = kinds[i]
        if kind == "bool":
            return rng.random() < 0.6
        if kind == "enum":
            return f"v{rng.randint(0, hi)}"
        r = rng.random()
        if r < 0.6:
            return f"{'+=' if r < 0.35 else '-='} {rng.randint(1, min(2, hi))}"
        return rng.randint(0, hi)

    pool = rng.choice(COST_POOLS)
    facts = range(len(kinds))
    for a in range(rng.randint(2, 10)):
        pre = {f"f{i}": condition(i) for i in rng.sample(facts, rng.randint(0, min(3, len(kinds))))}
        effects = {f"f{i}": effect(i) for i in rng.sample(facts, rng.randint(1, 2))}
        b.action(f"a{a}", cost=rng.choice(pool), pre=pre, effects=effects)
    for g in range(3):
        b.goal(f"g{g}", want={f"f{i}": condition(i) for i in rng.sample(facts, rng.randint(1, min(3, len(kinds))))})
    domain = b.build()
    values = np.array([[rng.randint(0, hi) for _, hi in kinds] for _ in range(n_problems)], dtype=np.int64)
    goals = np.array([rng.randrange(3) for _ in range(n_problems)], dtype=np.int32)
    return domain, values, goals, pool


@pytest.mark.parametrize("heuristic", ["lmcut", "hmax", "hmax_depth2", "hmax_depth1"])
def test_fuzz_planners_agree_on_small_tasks(heuristic):
    from goap import Status
    from goap.planners.reference import ReferencePlanner
    from goap.planners.warp_astar import WarpAStarPlanner
    from tests.test_heuristics import uniform_cost
    from tests.test_warp_astar import DEVICE, assert_same

    seen = {s: 0 for s in (Status.OK, Status.NO_PLAN, Status.SATISFIED)}
    for task_seed in range(DIFF_SEEDS):
        domain, values, goals, pool = small_task(task_seed)
        ref = ReferencePlanner(domain, max_nodes=4096, heuristic=heuristic)
        fast = WarpAStarPlanner(ref.tables, max_nodes=4096, heuristic=heuristic, device=DEVICE)
        states = ref.tables.pack_states(values)
        rng = np.random.default_rng(task_seed)
        costs = rng.choice(pool, size=(len(states), len(domain.actions))).astype(np.float32)
        enabled = rng.random(costs.shape) < 0.85
        for c, e in ((None, None), (costs, enabled)):
            r, f = ref.plan(states, goals, c, e), fast.plan(states, goals, c, e)
            # Node for node: status, cost, length, plan and expansions (and every plan valid, costed exactly).
            assert_same(r, f, domain, values, goals, ref.tables.goals, c, e)
            for i, status in enumerate(r.status):
                if status == Status.BUDGET:
                    continue  # (a pool of 4096 states: only a larger campaign's tasks can fill it)
                row_costs = [float(x) for x in (ref.tables.cost if c is None else c[i])]
                row_enabled = [True] * len(row_costs) if e is None else [bool(x) for x in e[i]]
                start = tuple(int(v) for v in values[i])
                best = uniform_cost(domain, start, domain.goals[goals[i]], row_costs, row_enabled)
                if best is None:
                    continue  # more states than the oracle's limit
                where = f"task {task_seed}, row {i}, costs {c is not None}: {Status(status).name}, {r.cost[i]}"
                if status == Status.NO_PLAN:
                    assert best == math.inf, where
                else:
                    assert status in (Status.OK, Status.SATISFIED), where
                    assert math.isclose(r.cost[i], best, rel_tol=1e-12, abs_tol=1e-12), f"{where} != {best}"
                seen[Status(status)] += 1
    assert min(seen.values()) >= DIFF_SEEDS // 4, seen  # every outcome met often enough to mean something


def test_the_mutant_comparison_catches_a_disagreement(tmp_path):
    """On the unmutated seed both planners agree with each other and with brute force; a changed cost or status
    in one planner's rows is caught."""
    path = tmp_path / "d.json"
    path.write_text(json.dumps(domain_json_seed()))
    problems = str(INPUTS / "fuzz_seed_problems.jsonl")
    base = ["solve", str(path), "--problems", problems, "--max-nodes", "5000"]
    ref, warp = run_batch([base, [*base, "--planner", "warp", "--device", "cpu"]])
    assert ref["code"] == warp["code"] == 0 and ref["stdout"].strip()
    assert_accepted_mutant_agrees(ref, warp, problems)
    rows = [json.loads(line) for line in warp["stdout"].splitlines()]
    solved = next(i for i, r in enumerate(rows) if r["cost"] is not None and r["cost"] > 0)
    for change in ({"cost": rows[solved]["cost"] + 1}, {"status": "budget"}):
        bad = [dict(r, **change) if i == solved else r for i, r in enumerate(rows)]
        with pytest.raises(AssertionError):
            assert_accepted_mutant_agrees(ref, dict(warp, stdout="\n".join(json.dumps(r) for r in bad)), problems)
    wrong = [dict(r, cost=r["cost"] + 1) if i == solved else r for i, r in enumerate(rows)]
    text = "\n".join(json.dumps(r) for r in wrong)
    with pytest.raises(AssertionError):  # both planners agree, brute force does not
        assert_accepted_mutant_agrees(dict(ref, stdout=text), dict(warp, stdout=text), problems)

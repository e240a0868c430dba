"""validate reports reference cycles at the {ref:} that closes them (generated graphs)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.api.kinds import KINDS
from cesync.core.references import names, names_in
from cesync.errors import Problem
from cesync.repo.repo import load_repo
from tests.helpers import cesync, make_repo

APP = "projects/p/locations/us/apps/a"


def tool(name: str, targets: list[str], literal: bool = False) -> str:
    """A search tool whose contextUrls reference other tools, one per line."""
    lines = [f"googleSearchTool:\n  name: {name}\n  contextUrls:\n"]
    for t in targets:
        lines.append(f"    - {APP}/tools/{t}\n" if literal else f"    - {{ref: tools/{t}}}\n")
    return "".join(lines) if targets else f"googleSearchTool: {{name: {name}}}\n"


def cycle_problems(tmp_path: Path, graph: dict[str, list[str]], literal: bool = False) -> list[Problem]:
    files = {f"tools/{n}.yaml": tool(n, ts, literal) for n, ts in graph.items()}
    repo = load_repo(make_repo(tmp_path, files))
    return [p for p in repo.validate() if "reference cycle" in p.message]


CASES = [
    # (graph, literal names?, expected (file:line:col, cycle) of each problem)
    ({"a": ["b"], "b": ["a"]}, False, [("tools/b.yaml:4:13", "tool/a -> tool/b -> tool/a")]),
    ({"a": ["b"], "b": ["c"], "c": ["a"]}, False, [("tools/c.yaml:4:13", "tool/a -> tool/b -> tool/c -> tool/a")]),
    ({"a": ["b"], "b": ["a"]}, True, [("tools/b.yaml:4:7", "tool/a -> tool/b -> tool/a")]),  # full names, no {ref:}
    ({"a": ["a"]}, False, []),  # naming itself orders nothing
    ({"a": ["b", "c"], "b": ["c"], "c": []}, False, []),  # a diamond is fine
    (
        {"a": ["b"], "b": ["c", "a"], "c": ["b"]},
        False,
        [("tools/b.yaml:5:13", "tool/a -> tool/b -> tool/a"), ("tools/c.yaml:4:13", "tool/b -> tool/c -> tool/b")],
    ),
]


@pytest.mark.parametrize(("graph", "literal", "expected"), CASES)
def test_cycles_are_positioned(
    tmp_path: Path, graph: dict[str, list[str]], literal: bool, expected: list[tuple[str, str]]
) -> None:
    problems = cycle_problems(tmp_path, graph, literal)
    got = sorted((f"{p.file}:{p.line}:{p.col}", p.message.split("reference cycle: ")[1].split(";")[0]) for p in problems)
    assert got == sorted(expected)


def test_validate_command_exits_1_with_the_position(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, {"tools/a.yaml": tool("a", ["b"]), "tools/b.yaml": tool("b", ["a"])})
    result = cesync("validate", "--dir", str(repo))
    assert result.returncode == 1 and "tools/b.yaml:4:13: reference cycle: tool/a -> tool/b -> tool/a" in result.stderr


def _has_cycle(graph: dict[str, list[str]]) -> bool:
    """Kahn's algorithm, independent of the DFS under test: a cycle leaves nodes behind."""
    edges = {n: {t for t in ts if t != n} for n, ts in graph.items()}
    while True:
        sinks = [n for n, ts in edges.items() if not ts]
        if not sinks:
            return bool(edges)
        for n in sinks:
            del edges[n]
        for ts in edges.values():
            ts.difference_update(sinks)


NAMES = ["t0", "t1", "t2", "t3", "t4", "t5"]
graphs = st.sets(st.sampled_from(NAMES), min_size=1).flatmap(
    lambda nodes: st.fixed_dictionaries({n: st.lists(st.sampled_from(sorted(nodes)), max_size=3, unique=True) for n in nodes})
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(graph=graphs)
def test_generated_graphs(tmp_path_factory: pytest.TempPathFactory, graph: dict[str, list[str]]) -> None:
    problems = cycle_problems(tmp_path_factory.mktemp("g"), graph)
    assert bool(problems) == _has_cycle(graph)
    for p in problems:  # each names a real cycle and stands on a {ref:} line of its last hop's file
        hops = p.message.split("reference cycle: ")[1].split(";")[0].split(" -> ")
        ids = [h.removeprefix("tool/") for h in hops]
        assert ids[0] == ids[-1] and all(b in graph[a] for a, b in itertools.pairwise(ids))
        assert p.file == f"tools/{ids[-2]}.yaml"
        line = tool(ids[-2], graph[ids[-2]]).splitlines()[p.line - 1]
        assert line.strip() == f"- {{ref: tools/{ids[-1]}}}" and p.col == line.index("tools/") + 1


WRONG_KIND = [
    # (file, text, position of the ref's value, what the field takes)
    ("agents/x.yaml", "displayName: X\nllmAgent: {}\nguardrails: [{ref: tools/t}]\n", "3:20", "guardrails/<id>"),
    ("agents/x.yaml", "displayName: X\nllmAgent: {}\nchildAgents:\n  - {ref: guardrails/g}\n", "4:11", "agents/<id>"),
    ("agents/x.yaml", "displayName: X\nllmAgent: {}\ntools: [{ref: agents/y}]\n", "3:15", "tools/<id>"),
    ("app.yaml", "displayName: A\nrootAgent: {ref: tools/t}\n", "2:18", "agents/<id>"),
    ("examples/e.yaml", "displayName: E\nentryAgent: {ref: guardrails/g}\n", "2:19", "agents/<id>"),
    (
        "guardrails/h.yaml",
        "displayName: H\nllmPromptSecurity: {defaultSettings: {}}\naction: {transferAgent: {agent: {ref: tools/t}}}\n",
        "3:39",
        "agents/<id>",
    ),
]


@pytest.mark.parametrize(("rel", "text", "at", "belongs"), WRONG_KIND)
def test_a_ref_to_the_wrong_kind_is_refused_where_it_stands(tmp_path: Path, rel: str, text: str, at: str, belongs: str) -> None:
    files = {
        "tools/t.yaml": tool("t", []),
        "agents/y.yaml": "displayName: Y\nllmAgent: {}\n",
        "guardrails/g.yaml": "displayName: G\nllmPromptSecurity: {defaultSettings: {}}\n",
        rel: text,
    }
    problems = load_repo(make_repo(tmp_path, files)).validate()
    assert [(f"{p.file}:{p.line}:{p.col}", belongs in p.message) for p in problems] == [(f"{rel}:{at}", True)], problems


NAMED = st.sampled_from([f"{APP}/tools/t", f"{APP}/toolsets/s", f"see {APP}/agents/a-1 there", f"{APP}/apps/x", "text"])
bodies = st.recursive(
    NAMED | st.integers() | st.none(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2),
    max_leaves=8,
)


@given(bodies)
def test_names_are_what_names_in_finds_without_paths(body: object) -> None:
    """The plan's reading (names) and validate's (names_in, with positions) are one rule."""
    found = {f"{APP}/{KINDS[kind].collection}/{rid}" for _, (kind, rid) in names_in(body, APP)}
    assert names(body, APP) == found

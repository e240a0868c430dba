"""cesync.render.graph: Mermaid read back by Mermaid's own parser, DOT by Graphviz, for any ids.

A live app's ids are a server's text: every generated id, hostile ones included, must come
back from the real parser as the label cesync meant, with no node, edge or diagram added.
Mermaid's parser is the npm package (tests/render/mermaid, installed by .ci/run); Graphviz
is Debian's. Without them these tests skip, except in CI (CI=true), where they must run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET

from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.core.graph import Graph, Key, Link
from cesync.core.plan import Plan
from cesync.render.graph import MARKS, cut, label, to_dot, to_json, to_mermaid
from cesync.render.markdown import render_markdown
from tests.helpers import mermaid_parse, need_tool

# Text that closes a Mermaid label, link text, fence or diagram, opens HTML, or moves a terminal.
HOSTILE = [
    'a"]\n  evil["x',
    "x|>y",
    "```\n**No changes.**",
    "<img src=https://e.example/b>",
    "end\nflowchart TD",
    "%%{init: {'securityLevel': 'loose'}}%%",
    "click n0 call alert()",
    "#quot;#35;",
    "\x1b[2J\x1b]8;;https://e.example\x07",
    "::add-mask::x",
    "a\\lb\\N",
    "\u202e\u0000\ud7ff",
    "@org/team",
]


def dot_drawn(text: str) -> tuple[dict[str, str], set[tuple[str, str]]]:
    """Graphviz's SVG of text: node title -> the label drawn, and the edges drawn (by titles)."""
    need_tool(shutil.which("dot") is not None, "Graphviz (apt-get install graphviz)")
    svg = subprocess.run(["dot", "-Tsvg"], input=text.encode(), capture_output=True, timeout=60, check=True).stdout
    ns = {"s": "http://www.w3.org/2000/svg"}
    root = ET.fromstring(svg)
    nodes, edges = {}, set()
    for g in root.iter("{http://www.w3.org/2000/svg}g"):
        title = g.findtext("s:title", namespaces=ns) or ""
        if g.get("class") == "node":
            nodes[title] = "".join("".join(t.itertext()) for t in g.findall("s:text", ns))
        elif g.get("class") == "edge":
            source, _, target = title.partition("->")
            edges.add((source, target))
    return nodes, edges


ids = st.one_of(
    st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True), st.sampled_from(HOSTILE), st.text(min_size=1, max_size=12)
)
kinds = st.sampled_from(["tool", "agent", "toolset", "guardrail", "app", "deployment", "evaluation", "version", "example"])


@st.composite
def graphs(draw: st.DrawFn) -> tuple[Graph, dict[Key, str]]:
    nodes = draw(st.lists(st.tuples(kinds, ids), min_size=1, max_size=8, unique=True))
    links = draw(
        st.lists(
            st.tuples(
                st.sampled_from(nodes), st.sampled_from(nodes), st.sampled_from(["tools", "golden.a.toolCall.tool", 'x"|]'])
            ).filter(lambda t: t[0] != t[1]),
            max_size=10,
            unique_by=lambda t: (t[0], t[1]),
        )
    )
    marks = draw(st.dictionaries(st.sampled_from(nodes), st.sampled_from(MARKS)))
    return Graph(tuple(nodes), tuple(Link(a, b, f) for a, b, f in links)), marks


@settings(max_examples=150, deadline=None)
@given(st.lists(graphs(), min_size=1, max_size=3))
def test_mermaid_parses_to_the_nodes_edges_and_labels_meant(cases: list[tuple[Graph, dict[Key, str]]]) -> None:
    texts = [to_mermaid(g, marks=m) for g, m in cases]
    for (graph, marks), text, parsed in zip(cases, texts, mermaid_parse(texts), strict=True):
        assert parsed["ok"], (text, parsed)
        assert parsed["type"] == "flowchart-v2"
        assert sorted(n["text"] for n in parsed["nodes"]) == sorted(label(k) for k in graph.nodes)
        assert len(parsed["edges"]) == len({(link.source, link.target) for link in graph.links})
        by_id = {n["id"]: n for n in parsed["nodes"]}
        for i, key in enumerate(graph.nodes):
            assert by_id[f"n{i}"]["classes"] == ([marks[key]] if key in marks else [])
        assert "```" not in text and "<" not in text  # cannot close the Markdown fence or open HTML


@settings(max_examples=30, deadline=None)
@given(graphs())
def test_dot_draws_the_nodes_edges_and_labels_meant(case: tuple[Graph, dict[Key, str]]) -> None:
    graph, marks = case
    nodes, edges = dot_drawn(to_dot(graph, marks=marks))
    ids = {k: f"n{i}" for i, k in enumerate(graph.nodes)}
    # SVG keeps a run of spaces as no-break spaces: the same text on the page
    assert {n: text.replace("\xa0", " ") for n, text in nodes.items()} == {ids[k]: label(k) for k in graph.nodes}
    assert edges == {(ids[link.source], ids[link.target]) for link in graph.links}


def test_a_large_graph_is_cut_marked_nodes_first_and_says_how_many_more() -> None:
    nodes = tuple(("tool", f"t{i:03}") for i in range(120))
    links = tuple(Link(nodes[i], nodes[i + 1], "tools") for i in range(119))
    marks = {nodes[100]: "update", nodes[110]: "delete"}
    shown = cut(Graph(nodes, links), 10, marks)
    assert len(shown.graph.nodes) == 10 and shown.left_out == 110
    assert {nodes[100], nodes[110]} <= set(shown.graph.nodes)
    text = to_mermaid(Graph(nodes, links), marks=marks, limit=10)
    assert 'more["and 110 more resources"]' in text
    [parsed] = mermaid_parse([text])
    assert parsed["ok"] and len(parsed["nodes"]) == 11


def test_an_unfocused_cut_keeps_the_most_linked_resources() -> None:
    loose = tuple(("tool", f"a{i}") for i in range(10))  # first by kind and name, linked to nothing
    hub = ("agent", "z")
    used = tuple(("tool", f"u{i}") for i in range(3))
    graph = Graph((*loose, *used, hub), tuple(Link(hub, u, "tools") for u in used))
    assert set(cut(graph, 4).graph.nodes) == {hub, *used}


def test_json_is_the_whole_graph() -> None:
    graph = Graph((("tool", "a"), ("agent", "b")), (Link(("agent", "b"), ("tool", "a"), "tools"),))
    assert json.loads(to_json(graph, marks={("tool", "a"): "update"})) == {
        "nodes": [{"kind": "tool", "id": "a", "mark": "update"}, {"kind": "agent", "id": "b"}],
        "links": [{"source": "agent/b", "target": "tool/a", "field": "tools"}],
    }


def plan_with(graph: Graph, marks: dict[Key, str], changes: int = 1) -> Plan:
    from cesync.api.kinds import KINDS
    from cesync.core.plan import Change

    impact = {
        "nodes": [{"kind": k, "id": i, "mark": marks.get((k, i), "affected")} for k, i in graph.nodes],
        "links": [{"source": "/".join(x.source), "target": "/".join(x.target), "field": x.field} for x in graph.links],
    }
    change = Change(KINDS["tool"], "t", "update", "projects/p/locations/us/apps/a/tools/t")
    return Plan("dev", "projects/p/locations/us/apps/a", "0" * 64, changes=(change,) * changes, impact=impact)


def fences(markdown: str) -> list[str]:
    from markdown_it import MarkdownIt

    return [t.content for t in MarkdownIt("commonmark").parse(markdown) if t.type == "fence" and t.info == "mermaid"]


@settings(max_examples=60, deadline=None)
@given(graphs())
def test_the_plan_comment_s_picture_is_one_fence_that_parses_to_what_was_meant(case: tuple[Graph, dict[Key, str]]) -> None:
    graph, marks = case
    text = render_markdown(plan_with(graph, {k: m for k, m in marks.items() if m != "focus"}))
    [picture] = fences(text)
    [parsed] = mermaid_parse([picture])
    assert parsed["ok"], parsed
    assert sorted(n["text"] for n in parsed["nodes"]) == sorted(label(k) for k in graph.nodes)
    assert "<img" not in text.lower() and "::add-mask::" not in text.split("```mermaid")[0]


def test_a_large_picture_is_folded_and_cut() -> None:
    nodes = tuple(("tool", f"t{i:02}") for i in range(50))
    small = render_markdown(plan_with(Graph(nodes[:12], ()), {nodes[0]: "update"}))
    large = render_markdown(plan_with(Graph(nodes, ()), {nodes[0]: "update"}))
    assert "<details open><summary>What this plan touches" in small
    assert "<details><summary>What this plan touches" in large
    [picture] = fences(large)
    assert 'more["and 10 more resources"]' in picture
    assert not fences(render_markdown(plan_with(Graph((), ()), {}, changes=0)))

"""cesync.core.graph: links from the registry's reference fields, what a change reaches, and the
walks of any graph (rounds, levels, the cycle search)."""

from __future__ import annotations

import graphlib
from collections.abc import Callable
from itertools import islice, pairwise
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cesync.api.kinds import APP, KINDS, THE_APP
from cesync.api.resource import Resource
from cesync.core.graph import (
    CycleSearch,
    Graph,
    Key,
    Link,
    build_graph,
    graph_of,
    has_cycle,
    impact,
    levels,
    rounds,
    values_at,
)

PARENT = "projects/p/locations/us/apps/a"

# Reference fields an agent, a tool, the app, an evaluation and a guardrail write, and what each names.
FIELDS: dict[str, list[tuple[str, str]]] = {
    "agent": [("tools", "tool"), ("childAgents", "agent"), ("guardrails", "guardrail"), ("toolsets.toolset", "toolset")],
    "tool": [("agentTool.agent", "agent"), ("widgetTool.dataMapping.sourceToolName", "tool")],
    "app": [("rootAgent", "agent"), ("guardrails", "guardrail")],
    "guardrail": [("action.transferAgent.agent", "agent")],
    "evaluation": [("golden.turns.steps.expectation.toolCall.tool", "tool")],
}
REPEATED = {"tools", "childAgents", "guardrails", "toolsets.toolset", "golden.turns.steps.expectation.toolCall.tool"}


def full(key: Key) -> str:
    return PARENT if key[0] == APP else f"{PARENT}/{KINDS[key[0]].collection}/{key[1]}"


def body_with(refs: list[tuple[str, Key]]) -> dict[str, Any]:
    """A body holding each (dotted field, target) reference where the API writes it (lists on the way)."""
    body: dict[str, Any] = {}
    for dotted, target in refs:
        if dotted == "toolsets.toolset":
            body.setdefault("toolsets", []).append({"toolset": full(target), "toolIds": ["x"]})
        elif dotted.startswith("golden."):
            steps = body.setdefault("golden", {"turns": [{"steps": []}]})["turns"][0]["steps"]
            steps.append({"expectation": {"toolCall": {"tool": full(target), "args": {}}}})
        elif dotted in REPEATED:
            body.setdefault(dotted, []).append(full(target))
        else:
            node = body
            *heads, last = dotted.split(".")
            for head in heads:
                node = node.setdefault(head, {})
            node[last] = full(target)
    return body


@st.composite
def apps(draw: st.DrawFn) -> tuple[list[Resource], set[Link]]:
    """Resources of every kind that references, with random references among them, and the links meant."""
    ids = st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,6}", fullmatch=True), min_size=1, max_size=4, unique=True)
    keys: dict[str, list[Key]] = {k: [(k, i) for i in draw(ids)] for k in ("tool", "agent", "guardrail", "toolset", "evaluation")}
    keys["app"] = [(APP, APP)]
    resources: list[Resource] = []
    meant: set[Link] = set()
    for kind, own in keys.items():
        for key in own:
            refs: list[tuple[str, Key]] = []
            for dotted, target_kind in FIELDS.get(kind, []):
                for target in draw(st.lists(st.sampled_from(keys[target_kind]), max_size=3, unique=True)):
                    if dotted not in REPEATED and any(d == dotted for d, _ in refs):
                        continue  # a singular field names one resource
                    refs.append((dotted, target))
                    if target != key:
                        meant.add(Link(key, target, dotted))
            resources.append(Resource(KINDS[kind] if kind != APP else THE_APP, key[1], body_with(refs)))
    return resources, meant


@given(apps())
def test_links_are_exactly_the_references_written(app: tuple[list[Resource], set[Link]]) -> None:
    resources, meant = app
    graph = build_graph(resources, PARENT)
    assert set(graph.links) == meant
    assert {r.key for r in resources} <= set(graph.nodes)
    assert all(link.source in graph.nodes and link.target in graph.nodes for link in graph.links)


def reach(graph: Graph, start: set[Key], upward: bool) -> set[Key]:
    """Reachability by fixpoint, the definition dependents/dependencies must agree with."""
    found = set(start)
    while True:
        more = {
            (link.source if upward else link.target) for link in graph.links if (link.target if upward else link.source) in found
        }
        if more <= found:
            return found
        found |= more


@given(apps(), st.data())
def test_dependents_and_dependencies_are_reachability(app: tuple[list[Resource], set[Link]], data: st.DataObject) -> None:
    graph = build_graph(app[0], PARENT)
    start = set(data.draw(st.lists(st.sampled_from(graph.nodes), min_size=1, max_size=3)))
    assert set(graph.dependents(start)) == reach(graph, start, upward=True)
    assert set(graph.dependencies(start)) == reach(graph, start, upward=False)
    one = graph.dependents(start, depth=1)
    assert set(one) == start | {link.source for link in graph.links if link.target in start}
    around = graph.around(start)
    assert set(around.nodes) == reach(graph, start, True) | reach(graph, start, False)


def test_a_tool_change_reaches_agents_their_parents_the_app_draft_deployments_and_evaluations() -> None:
    tool = Resource(KINDS["tool"], "refund", {"pythonFunction": {"name": "refund"}})
    child = Resource(KINDS["agent"], "billing", {"tools": [full(("tool", "refund"))]})
    root = Resource(KINDS["agent"], "support", {"childAgents": [full(("agent", "billing"))]})
    other = Resource(KINDS["agent"], "other", {})
    app = Resource(THE_APP, APP, {"rootAgent": full(("agent", "support"))})
    draft = Resource(KINDS["deployment"], "web", {"appVersion": f"{PARENT}/versions/-"})
    unset = Resource(KINDS["deployment"], "chat", {})
    pinned = Resource(KINDS["deployment"], "kiosk", {"appVersion": f"{PARENT}/versions/v3"})
    canary = Resource(
        KINDS["deployment"],
        "canary",
        {
            "appVersion": f"{PARENT}/versions/v3",
            "experimentConfig": {
                "versionRelease": {"trafficAllocations": [{"appVersion": f"{PARENT}/versions/-", "trafficPercentage": 10}]}
            },
        },
    )
    golden = Resource(KINDS["evaluation"], "e", body_with([("golden.turns.steps.expectation.toolCall.tool", ("tool", "refund"))]))
    graph = build_graph([tool, child, root, other, app, draft, unset, pinned, canary, golden], PARENT)
    reached = graph.dependents([("tool", "refund")])
    assert reached == {
        ("tool", "refund"): 0,
        ("agent", "billing"): 1,
        ("evaluation", "e"): 1,
        ("agent", "support"): 2,
        (APP, APP): 3,
        ("deployment", "web"): 4,
        ("deployment", "chat"): 4,
        ("deployment", "canary"): 4,  # a tenth of its traffic goes to the draft
    }
    assert ("version", "v3") in graph.nodes  # the pinned deployment serves a version, not the draft
    assert graph.uses(("deployment", "kiosk")) == [("version", "v3")]


def test_names_of_another_app_and_unknown_collections_are_no_links() -> None:
    agent = Resource(
        KINDS["agent"],
        "a",
        {"tools": ["projects/p/locations/us/apps/other/tools/t", f"{PARENT}/nothings/t", "t", f"{PARENT}/tools/ok"]},
    )
    assert build_graph([agent], PARENT).links == (Link(("agent", "a"), ("tool", "ok"), "tools"),)


def test_values_at_goes_through_lists_and_skips_what_is_not_text() -> None:
    body = {"a": [{"b": "x"}, {"b": ["y", 3]}, {"c": "z"}, "w"], "b": "q"}
    assert list(values_at(body, ["a", "b"])) == ["x", "y"]
    assert list(values_at(body, ["b"])) == ["q"]
    assert list(values_at(body, ["missing"])) == []


def test_impact_marks_changes_and_what_uses_them_with_the_app_s_links_for_what_goes() -> None:
    tool = Resource(KINDS["tool"], "old", {})
    kept = Resource(KINDS["tool"], "kept", {})
    agent_before = Resource(KINDS["agent"], "a", {"tools": [full(("tool", "old")), full(("tool", "kept"))]})
    agent_after = Resource(KINDS["agent"], "a", {"tools": [full(("tool", "kept"))]})
    app = Resource(THE_APP, APP, {"rootAgent": full(("agent", "a"))})
    unrelated = Resource(KINDS["agent"], "z", {})
    data = impact(
        {("tool", "old"): "delete", ("agent", "a"): "update"},
        desired=[kept, agent_after, app, unrelated],
        remote=[tool, kept, agent_before, app, unrelated],
        parent=PARENT,
    )
    marks = {(n["kind"], n["id"]): n["mark"] for n in data["nodes"]}
    assert marks == {("tool", "old"): "delete", ("agent", "a"): "update", (APP, APP): "affected"}
    # the repo's agent no longer names the deleted tool: no arrow says it still does
    assert data["links"] == [{"source": "app/app", "target": "agent/a", "field": "rootAgent"}]
    graph, back = graph_of(data)
    assert back == marks and set(graph.nodes) == set(marks)


def test_no_change_touches_nothing() -> None:
    assert impact({}, [Resource(KINDS["tool"], "t", {})], [], PARENT) == {"nodes": [], "links": []}


# --- the walks of any graph ---------------------------------------------------------------


def test_rounds_levels_and_cycles() -> None:
    graph = {"a": ["b", "c"], "b": ["c"], "c": [], "d": []}
    assert rounds(graph, key=str) == [["c", "d"], ["b"], ["a"]]
    assert levels(graph) == {"c": 0, "d": 0, "b": 1, "a": 2}
    assert not has_cycle(graph)
    assert has_cycle({**graph, "c": ["a"]})
    with pytest.raises(graphlib.CycleError):
        rounds({**graph, "c": ["a"]}, key=str)


def _restarted(graph: dict[int, set[int]], breaks: list[int]) -> list[list[int]]:
    """The loops a search finds that starts over after each break, keeping what it explored: the
    plain form the resumed search must agree with. The i-th loop is broken at its edge
    breaks[i] (counted from the closing edge back); with no break left, the search stops."""
    found: list[list[int]] = []
    done: set[int] = set()
    for first in sorted(graph):
        while first not in done:
            trail, pending, loop = [first], [iter(sorted(graph[first]))], None
            while pending and loop is None:
                target = next(pending[-1], None)
                if target is None:
                    done.add(trail.pop())
                    pending.pop()
                elif target in trail:
                    loop = [*trail[trail.index(target) :], target]
                elif target not in done:
                    trail.append(target)
                    pending.append(iter(sorted(graph[target])))
            if loop is None:
                break
            found.append(loop)
            if len(found) > len(breaks):
                return found
            source, target = _edge(loop, breaks[len(found) - 1])
            graph[source].discard(target)
    return found


def _edge(loop: list[int], back: int) -> tuple[int, int]:
    pairs = list(pairwise(loop))
    return pairs[-1 - back % len(pairs)]


small_graphs = st.integers(1, 8).flatmap(
    lambda n: st.fixed_dictionaries({i: st.sets(st.integers(0, n - 1), max_size=3) for i in range(n)})
)


@given(small_graphs, st.lists(st.integers(0, 5), max_size=30))
def test_the_resumed_search_finds_the_loops_a_restarted_one_does(graph: dict[int, set[int]], breaks: list[int]) -> None:
    graph = {n: ts - {n} for n, ts in graph.items()}
    expected = _restarted({n: set(ts) for n, ts in graph.items()}, breaks)
    search = CycleSearch(graph, key=int)
    found: list[list[int]] = []
    while (loop := search.next()) is not None:
        nodes = loop.nodes()
        assert list(loop.edges()) == list(reversed(list(pairwise(nodes))))
        found.append(nodes)
        if len(found) > len(breaks):
            break
        source, target = _edge(nodes, breaks[len(found) - 1])
        graph[source].discard(target)
        search.cut(source)
    assert found == expected
    if len(found) <= len(breaks):
        assert not has_cycle(graph)  # every loop found was broken, and no other is left


@given(small_graphs)
def test_a_search_that_cuts_nothing_takes_each_edge_once(graph: dict[int, set[int]]) -> None:
    search = CycleSearch(graph, key=int)
    closing = []
    while (loop := search.next()) is not None:
        closing.append(loop.nodes()[-2:])
    assert search.steps == sum(map(len, graph.values()))
    assert bool(closing) == has_cycle({n: ts - {n} for n, ts in graph.items()}) or any(n in ts for n, ts in graph.items())


def _chain(n: int) -> dict[int, set[int]]:
    """0 -> 1 -> ... -> n-1, and every node after 0 back to 0: n-1 loops, the longest n nodes long."""
    return {i: ({0} if i else set()) | ({i + 1} if i + 1 < n else set()) for i in range(n)}


def _pairs(n: int) -> dict[int, set[int]]:
    """n pairs naming each other: n loops of two."""
    return {i: {i ^ 1} for i in range(2 * n)}


@pytest.mark.parametrize(
    "shape,back",
    [(_chain, 0), (_pairs, 0), (_pairs, 1)],  # each loop broken at its closing edge, or at the one before
    ids=["a chain, each loop broken where it closes", "pairs, likewise", "pairs, broken below the end of the trail"],
)
def test_breaking_every_loop_takes_each_edge_a_bounded_number_of_times(
    shape: Callable[[int], dict[int, set[int]]], back: int
) -> None:
    """Work linear in the edges however many loops: a search that began again after each break
    walked the chain again (n loops of up to n nodes)."""
    for n in (1_000, 4_000):
        graph = shape(n)
        edges = sum(map(len, graph.values()))
        search = CycleSearch(graph, key=int)
        loops = 0
        while (loop := search.next()) is not None:
            loops += 1
            source, target = next(islice(loop.edges(), back, None))
            graph[source].discard(target)
            search.cut(source)
        assert loops == (n - 1 if shape is _chain else n) and not has_cycle(graph)
        assert search.steps <= 2 * edges, (n, search.steps, edges)

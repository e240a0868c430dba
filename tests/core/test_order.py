"""The cross-kind order: waits only for what the same apply creates; cycles broken by create-then-patch."""

from __future__ import annotations

import graphlib
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.core import order as order_module
from cesync.core.graph import CycleSearch
from cesync.core.order import Node, order
from cesync.errors import ConfigError

APP = "apps/a"
AGENT_FIELDS = frozenset({"childAgents", "transferRules", "tools", "toolsets", "guardrails"})


def agent(name: str, created: bool = True, **refs: set[str]) -> Node:
    return Node(name, created, {k: frozenset(v) for k, v in refs.items()}, AGENT_FIELDS)


def tool(name: str, created: bool = True, **refs: set[str]) -> Node:
    return Node(name, created, {k: frozenset(v) for k, v in refs.items()})


def app(created: bool = True, **refs: set[str]) -> Node:
    return Node(APP, created, {k: frozenset(v) for k, v in refs.items()}, frozenset({"rootAgent", "guardrails"}))


CASES = {
    "a chain waits for what it names": (
        [agent("x", childAgents={"y"}), agent("y", tools={"t"}), tool("t")],
        "",
        {"x": (("y",), 2, ()), "y": (("t",), 1, ()), "t": ((), 0, ())},
    ),
    "an existing target needs no wait": (
        [agent("x", childAgents={"y"}), agent("y", created=False)],
        "",
        {"x": ((), 0, ()), "y": ((), 0, ())},
    ),
    "two new agents naming each other: one is patched": (
        [agent("x", childAgents={"y"}), agent("y", transferRules={"x"})],
        "",
        {"x": (("y",), 1, ()), "y": ((), 0, ("transferRules",))},
    ),
    "a new app with a new root agent: created first, rootAgent patched in": (
        [app(rootAgent={"r"}), agent("r", tools={"t"}), tool("t")],
        APP,
        {APP: ((), 0, ("rootAgent",)), "r": ((APP, "t"), 2, ()), "t": ((APP,), 1, ())},
    ),
    "an existing app waits for its new root agent": (
        [app(created=False, rootAgent={"r"}), agent("r")],
        "",
        {APP: (("r",), 1, ()), "r": ((), 0, ())},
    ),
}


@pytest.mark.parametrize("nodes,app_name,expected", CASES.values(), ids=list(CASES))
def test_order(nodes: list[Node], app_name: str, expected: dict[str, tuple[tuple[str, ...], int, tuple[str, ...]]]) -> None:
    placed = order(nodes, app_name)
    got = {n: (p.depends_on, p.level, p.deferred) for n, p in placed.items()}
    assert got == expected


def test_patch_waits_for_every_created_name_of_the_deferred_field() -> None:
    placed = order([agent("x", childAgents={"y", "z"}), agent("y", childAgents={"x", "z"}), agent("z")])
    deferred = {n: (p.deferred, p.patch_after) for n, p in placed.items() if p.deferred}
    assert deferred == {"y": (("childAgents",), ("x", "z"))}  # the closing reference's whole field waits
    assert placed["x"].depends_on == ("y", "z") and placed["y"].depends_on == ()


def test_a_cycle_through_required_fields_is_refused() -> None:
    with pytest.raises(ConfigError, match="reference cycle"):
        order([tool("a", widgetTool={"b"}), tool("b", agentTool={"a"})])


# --- generated graphs ---------------------------------------------------------------------

FIELDS = ("f0", "f1", "f2", "")  # "" stands for no field name at all (the implicit wait for a new app)


@st.composite
def graphs(draw: st.DrawFn) -> tuple[list[Node], str]:
    """Up to 9 resources, each created or existing, naming each other through a few fields,
    some of which their kind lets go for a create-then-patch; maybe a new app."""
    names = [f"n{i}" for i in range(draw(st.integers(1, 9)))]
    nodes = []
    for name in names:
        refs = draw(st.dictionaries(st.sampled_from(FIELDS[:3]), st.frozensets(st.sampled_from(names), max_size=3), max_size=3))
        deferrable = draw(st.frozensets(st.sampled_from(FIELDS[:3])))
        nodes.append(Node(name, draw(st.booleans()), refs, deferrable))
    app_name = draw(st.sampled_from(["", *names]))
    return nodes, app_name


def _edges(nodes: list[Node], app_name: str) -> dict[tuple[str, str], set[str]]:
    """(source, target) -> the fields of source that make it wait for target (created by the apply)."""
    created = {n.name for n in nodes if n.created}
    edges: dict[tuple[str, str], set[str]] = {}
    for n in nodes:
        for fname, targets in n.refs.items():
            for t in targets:
                if t in created and t != n.name:
                    edges.setdefault((n.name, t), set()).add(fname)
        if app_name and app_name in created and n.name != app_name:
            edges.setdefault((n.name, app_name), set()).add("")
    return edges


def _has_cycle(nodes: list[Node], edges: set[tuple[str, str]]) -> bool:
    sorter: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter({n.name: set() for n in nodes})
    for source, target in edges:
        sorter.add(source, target)
    try:
        sorter.prepare()
    except graphlib.CycleError:
        return True
    return False


@settings(max_examples=200, deadline=None)
@given(graphs())
def test_order_is_a_valid_apply_or_a_true_refusal(graph: tuple[list[Node], str]) -> None:
    """Refused exactly when a cycle runs only through references no create may leave out;
    otherwise, written level by level, every create finds what it names already there."""
    nodes, app_name = graph
    by_name = {n.name: n for n in nodes}
    edges = _edges(nodes, app_name)
    unbreakable = {e for e, fields in edges.items() if not fields <= by_name[e[0]].deferrable}
    try:
        placed = order(nodes, app_name)
    except ConfigError as exc:
        assert _has_cycle(nodes, unbreakable), exc
        return
    assert not _has_cycle(nodes, unbreakable)
    assert set(placed) == set(by_name)
    for (source, target), fields in edges.items():
        p, q = placed[source], placed[target]
        if fields <= set(p.deferred):  # left out of the create: patched in once the target exists
            assert target in p.patch_after or "" in fields
        else:
            assert target in p.depends_on and q.level < p.level, (source, target, p, q)
    for n in nodes:
        p = placed[n.name]
        assert set(p.deferred) <= n.deferrable  # only what the kind lets go
        assert set(p.depends_on) <= {t for (s, t) in edges if s == n.name}  # waits for nothing it does not name
        assert p.level == 1 + max((placed[t].level for t in p.depends_on), default=-1)


@settings(max_examples=80, deadline=None)
@given(graphs(), st.randoms(use_true_random=False))
def test_order_does_not_depend_on_the_order_of_the_input(graph: tuple[list[Node], str], rnd: random.Random) -> None:
    nodes, app_name = graph
    shuffled = list(nodes)
    rnd.shuffle(shuffled)
    try:
        expected = order(nodes, app_name)
    except ConfigError as exc:
        with pytest.raises(ConfigError) as again:
            order(shuffled, app_name)
        assert str(again.value) == str(exc)
        return
    assert order(shuffled, app_name) == expected


@settings(max_examples=200, deadline=None)
@given(graphs())
def test_nodes_that_neither_wait_nor_are_waited_for_leave_the_placement_unchanged(graph: tuple[list[Node], str]) -> None:
    """order searches only the creates and what names them; the search over every node places
    (or refuses) each the same way, the others at Placed()."""
    nodes, app_name = graph
    created = {n.name for n in nodes if n.created}
    try:
        expected = order_module._order(nodes, app_name, created)
    except ConfigError as exc:
        with pytest.raises(ConfigError) as again:
            order(nodes, app_name)
        assert str(again.value) == str(exc)
        return
    placed = order(nodes, app_name)
    assert placed == expected and list(placed) == list(expected)


def _pairs(n: int, cyclic: bool) -> list[Node]:
    """n pairs of new agents: x_i names y_i, and y_i names x_i back when cyclic."""
    nodes = []
    for i in range(n):
        nodes.append(agent(f"x{i:05}", childAgents={f"y{i:05}"}))
        nodes.append(agent(f"y{i:05}", **({"transferRules": {f"x{i:05}"}} if cyclic else {})))
    return nodes


def _chain(n: int, cyclic: bool) -> list[Node]:
    """n new agents, each the child of the one before, and each transferring back to the root when cyclic."""
    names = [f"a{i:05}" for i in range(n)]
    nodes = [agent(names[0], childAgents={names[1]})]
    for i in range(1, n):
        refs = {"childAgents": {names[i + 1]}} if i + 1 < n else {}
        nodes.append(agent(names[i], **refs, **({"transferRules": {names[0]}} if cyclic else {})))
    return nodes


def _tools(n: int, cyclic: bool) -> list[Node]:
    """n pairs of a new agent and a new tool it lists, the tool naming the agent back in a field
    no create may leave out when cyclic: each loop is broken below the end of the search's trail."""
    nodes = []
    for i in range(n):
        nodes.append(agent(f"a{i:05}", tools={f"t{i:05}"}))
        nodes.append(tool(f"t{i:05}", **({"agentTool": {f"a{i:05}"}} if cyclic else {})))
    return nodes


@pytest.mark.parametrize("shape", [_pairs, _chain, _tools])
def test_ordering_n_resources_with_n_cycles_takes_each_reference_a_bounded_number_of_times(
    shape: Callable[[int, bool], list[Node]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every cycle is found in one depth-first search that goes on after each break
    (core/graph.py CycleSearch): the references it takes grow with the resources, not with
    resources times cycles, as a search begun again after each break does along a long chain."""
    searches: list[CycleSearch[str]] = []

    class Counted(CycleSearch[str]):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            searches.append(self)

    monkeypatch.setattr(order_module, "CycleSearch", Counted)
    for n in (1_000, 4_000):
        nodes = shape(n, True)
        references = sum(len(targets) for node in nodes for targets in node.refs.values())
        placed = order(nodes)
        assert sum(1 for p in placed.values() if p.deferred) >= n - 1  # about one patch per cycle
        assert searches[-1].steps <= 2 * references, (n, searches[-1].steps, references)

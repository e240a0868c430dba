"""The cross-kind order: waits only for what the same apply creates; cycles broken by create-then-patch."""

from __future__ import annotations

import pytest

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

"""The order pass: creates and updates by level then kind rank, deletes last, each delete after
everything that names it."""

from __future__ import annotations

from hypothesis import given as hypothesis_given
from hypothesis import settings
from hypothesis import strategies as st

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.core.passes.compare import compare
from cesync.core.passes.order import order
from cesync.core.passes.ownership import ownership

from .data import P, empty, given, remote_tool, tool


def _agent(rid: str, tools: list[str]) -> Resource:
    return Resource(
        KINDS["agent"],
        rid,
        {"name": f"{P}/agents/{rid}", "etag": "e", "displayName": rid, "tools": [f"{P}/tools/{t}" for t in tools]},
    )


@settings(max_examples=40, deadline=None)
@hypothesis_given(uses=st.dictionaries(st.sampled_from(["x", "y", "z"]), st.lists(st.sampled_from(["a", "b", "c"]), max_size=3)))
def test_a_delete_waits_for_every_delete_of_what_names_it(uses: dict[str, list[str]]) -> None:
    remote = [remote_tool(t) for t in "abc"] + [_agent(a, ts) for a, ts in uses.items()]
    g = given([], remote, prune=True)
    plan = order(ownership(compare(empty(g), g), g), g)
    position = {c.name: i for i, c in enumerate(plan.changes)}
    for a, ts in uses.items():
        for t in ts:
            assert position[f"{P}/agents/{a}"] < position[f"{P}/tools/{t}"]
            assert f"{P}/agents/{a}" in next(c for c in plan.changes if c.id == t).depends_on


def test_writes_come_before_deletes_and_a_new_tool_before_the_agent_naming_it() -> None:
    g = given([_agent("x", ["n"]), tool("n")], [remote_tool("gone")], prune=True)
    plan = order(ownership(compare(empty(g), g), g), g)
    assert [(c.id, c.action) for c in plan.changes] == [("n", "create"), ("x", "create"), ("gone", "delete")]

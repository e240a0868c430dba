"""The impact pass marks each change and what uses it, and the policies after it can read it."""

from __future__ import annotations

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.core.passes.compare import compare
from cesync.core.passes.impact import impact
from cesync.core.passes.ownership import ownership
from cesync.core.planbuild import PASSES

from .data import P, empty, given, remote_tool, tool


def agent(rid: str, *tools: str) -> Resource:
    return Resource(KINDS["agent"], rid, {"displayName": rid, "tools": [f"{P}/tools/{t}" for t in tools]})


def test_a_changed_tool_marks_the_agents_that_use_it_and_no_other() -> None:
    g = given(
        [tool("a", fn="new"), tool("b"), agent("uses-a", "a"), agent("uses-b", "b")],
        [remote_tool("a"), remote_tool("b"), agent("uses-a", "a"), agent("uses-b", "b")],
    )
    plan = impact(ownership(compare(empty(g), g), g), g)
    marks = {(n["kind"], n["id"]): n["mark"] for n in plan.impact["nodes"]}
    assert marks == {("tool", "a"): "update", ("agent", "uses-a"): "affected"}
    assert plan.impact["links"] == [{"source": "agent/uses-a", "target": "tool/a", "field": "tools"}]


def test_it_runs_before_the_policies_that_read_it() -> None:
    names = [p.__name__ for p in PASSES]
    assert names.index("impact") < names.index("policy")

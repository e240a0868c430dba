"""The renames pass notes a create and a delete of the same content as a rename, on both."""

from __future__ import annotations

from typing import Any

import pytest

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.core.passes.compare import compare
from cesync.core.passes.order import order
from cesync.core.passes.ownership import ownership
from cesync.core.passes.renames import renames

from .data import P, empty, given, remote_tool, tool


def test_same_content_under_a_new_id_is_a_rename() -> None:
    g = given([tool("new", "f"), tool("other", "g")], [remote_tool("old", "f")], prune=True)
    plan = renames(ownership(compare(empty(g), g), g), g)
    notes = {c.id: c.note for c in plan.changes}
    assert notes == {"new": "rename of old (created before the old one is deleted)", "other": "", "old": "renamed to new"}


def test_different_content_is_no_rename() -> None:
    g = given([tool("new", "g")], [remote_tool("old", "f")], prune=True)
    plan = renames(ownership(compare(empty(g), g), g), g)
    assert all(c.note == "" for c in plan.changes)


def _guardrail(rid: str, remote: bool = False) -> Resource:
    body: dict[str, Any] = {"displayName": "G", "contentFilter": {"bannedContents": ["x"], "matchType": "REGEXP_MATCH"}}
    return Resource(KINDS["guardrail"], rid, {**body, **({"name": f"{P}/guardrails/{rid}", "etag": "e"} if remote else {})})


def _agent(rid: str, guardrail: str, remote: bool = False) -> Resource:
    body: dict[str, Any] = {"displayName": rid, "llmAgent": {}, "guardrails": [f"{P}/guardrails/{guardrail}"]}
    return Resource(KINDS["agent"], rid, {**body, **({"name": f"{P}/agents/{rid}", "etag": "e"} if remote else {})})


@pytest.mark.parametrize("referrer", ["none", "in the repo", "made by hand"])
def test_a_rename_of_a_unique_name_deletes_first(referrer: str) -> None:
    """A guardrail's display name is unique in the app: the old one is deleted first, the new one's
    create waits for it, and the delete is forced only when the repo rewrites whatever names it."""
    desired = [_guardrail("new"), *([_agent("front", "new")] if referrer == "in the repo" else [])]
    remote = [_guardrail("old", True), *([_agent("front", "old", True)] if referrer != "none" else [])]
    g = given(desired, remote, prune=True, prune_unmanaged=True)
    plan = order(renames(ownership(compare(empty(g), g), g), g), g)
    old = next(c for c in plan.changes if c.id == "old")
    new = next(c for c in plan.changes if c.id == "new")
    assert old.first and old.depends_on == () and f"{P}/guardrails/old" in new.depends_on
    assert old.force == (referrer != "made by hand")
    assert ("not in the repo, still names it" in old.note) == (referrer == "made by hand")


def test_a_rename_of_a_tool_keeps_create_then_delete() -> None:
    g = given([tool("new", "f")], [remote_tool("old", "f")], prune=True)
    plan = order(renames(ownership(compare(empty(g), g), g), g), g)
    assert not any(c.first for c in plan.changes)

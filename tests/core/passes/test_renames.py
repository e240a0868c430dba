"""The renames pass notes a create and a delete of the same content as a rename, on both."""

from __future__ import annotations

from cesync.core.passes.compare import compare
from cesync.core.passes.ownership import ownership
from cesync.core.passes.renames import renames

from .data import empty, given, remote_tool, tool


def test_same_content_under_a_new_id_is_a_rename() -> None:
    g = given([tool("new", "f"), tool("other", "g")], [remote_tool("old", "f")], prune=True)
    plan = renames(ownership(compare(empty(g), g), g), g)
    notes = {c.id: c.note for c in plan.changes}
    assert notes == {"new": "rename of old (created before the old one is deleted)", "other": "", "old": "renamed to new"}


def test_different_content_is_no_rename() -> None:
    g = given([tool("new", "g")], [remote_tool("old", "f")], prune=True)
    plan = renames(ownership(compare(empty(g), g), g), g)
    assert all(c.note == "" for c in plan.changes)

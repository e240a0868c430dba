"""The lock pass says how a locked app meets the plan (core/applock.py words it)."""

from __future__ import annotations

from cesync.api.kinds import APP, THE_APP
from cesync.api.resource import Resource
from cesync.core.passes.compare import compare
from cesync.core.passes.lock import lock

from .data import P, empty, given, remote_tool, tool


def _app(locked: bool) -> Resource:
    return Resource(THE_APP, APP, {"name": P, "displayName": "a", "locked": locked})


def test_a_locked_app_with_changes_stops_apply() -> None:
    g = given([tool("t", "new")], [_app(True), remote_tool("t")])
    assert "apply will stop before its first write" in lock(compare(empty(g), g), g).app_lock


def test_an_unlocked_app_says_nothing() -> None:
    g = given([tool("t", "new")], [_app(False), remote_tool("t")])
    assert lock(compare(empty(g), g), g).app_lock == ""

"""The carry pass: an update that rewrites a field holding the app's unknown (newer) fields sends
them along, and says so; one that cannot tell where they belong is refused, naming them."""

from __future__ import annotations

from typing import Any

import pytest

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.core.passes.carry import carry
from cesync.core.passes.compare import compare
from cesync.errors import CesyncError

from .data import P, empty, given

FUTURE = {"future": {"mode": "STRICT"}}


def _entry(ts: str, *tools: str, **extra: Any) -> dict[str, Any]:
    return {"toolset": f"{P}/toolsets/{ts}", **({"toolIds": list(tools)} if tools else {}), **extra}


def _agent(toolsets: list[dict[str, Any]], remote: bool = False) -> Resource:
    body = {"displayName": "Root", "instruction": "Help.", "toolsets": toolsets}
    return Resource(KINDS["agent"], "root", {**body, "name": f"{P}/agents/root", "etag": "e"} if remote else body)


def test_an_item_changed_in_place_keeps_the_apps_newer_field() -> None:
    g = given([_agent([_entry("a", "x")])], [_agent([_entry("a", **FUTURE)], remote=True)])
    compared = compare(empty(g), g)
    assert compared.unknown_fields  # the compare pass saw the field it does not know
    [c] = carry(compared, g).changes
    assert c.body is not None and c.body["toolsets"] == [_entry("a", "x", **FUTURE)]
    assert c.note.startswith("keeps the app's fields cesync does not know: ")


def test_items_added_and_removed_at_once_are_refused() -> None:
    g = given([_agent([_entry("b"), _entry("c")])], [_agent([_entry("a", **FUTURE)], remote=True)])
    with pytest.raises(CesyncError, match="would drop"):
        carry(compare(empty(g), g), g)


def test_without_unknown_fields_nothing_changes() -> None:
    g = given([_agent([_entry("a", "x")])], [_agent([_entry("a")], remote=True)])
    compared = compare(empty(g), g)
    assert carry(compared, g) is compared

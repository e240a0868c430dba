"""Fields a newer CES has and this cesync does not know, inside lists and messages: they survive an update.

The emulator learns such a field from ``/admin/inject`` (as a newer server would have it), stores
and returns it wherever it sits, and takes it back in a request; plan carries it into the body of
an update whose mask names the field around it (core/carry.py), or refuses the change by name.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.client import CesClient, RetryPolicy
from cesync.core.plan import Plan
from cesync.core.planbuild import build_plan
from cesync.emulator import EmbeddedTransport
from cesync.errors import CesyncError
from cesync.pipeline.apply import apply_plan
from cesync.sync.remote import read_remote

APP = "projects/p/locations/us/apps/a"
FAST = RetryPolicy(attempts=3, initial=0.001, maximum=0.01)
MCP = {"mcpToolset": {"serverAddress": "https://mcp.example/sse"}}


def entry(ts: str, *tools: str) -> dict[str, Any]:
    return {"toolset": f"{APP}/toolsets/{ts}", **({"toolIds": list(tools)} if tools else {})}


def agent(*toolsets: dict[str, Any], **fields: Any) -> Resource:
    return Resource(KINDS["agent"], "root", {"displayName": "Root", "instruction": "Help.", "toolsets": list(toolsets), **fields})


TOOLSETS = [Resource(KINDS["toolset"], t, MCP) for t in ("a", "b", "c")]


async def _plan(c: CesClient, desired: list[Resource]) -> Plan:
    remote = [r for r in await read_remote(c, APP) if r.kind.name in ("toolset", "agent")]
    return build_plan("e", APP, [*TOOLSETS, *desired], remote)


async def _inject(transport: httpx.AsyncBaseTransport, fields: dict[str, Any]) -> None:
    async with httpx.AsyncClient(transport=transport, base_url="http://emu") as h:
        r = await h.post("/admin/inject", json={"name": f"{APP}/agents/root", "fields": fields})
        assert r.status_code == 200, r.text


def run(first: list[Resource], injected: dict[str, Any], then: list[Resource]) -> tuple[Plan, dict[str, Any], Plan]:
    transport = EmbeddedTransport(apps=[APP])

    async def go() -> tuple[Plan, dict[str, Any], Plan]:
        async with CesClient("http://emu", transport=transport, retry=FAST) as c:
            assert (await apply_plan(c, await _plan(c, first))).ok
            await _inject(transport, injected)
            update = await _plan(c, then)
            result = await apply_plan(c, update)
            assert result.ok, result.outcomes
            return update, await c.get(f"{APP}/agents/root"), await _plan(c, then)

    return asyncio.run(go())


FUTURE = {"future": {"mode": "STRICT"}}

CASES = {
    # (repo before, the app's toolsets with a newer field, repo after, the toolsets the app ends with)
    "item changed in place": (
        [entry("a")],
        [{**entry("a"), **FUTURE}],
        [entry("a", "x")],
        [{**entry("a", "x"), **FUTURE}],
    ),
    "item unchanged, one added before it": (
        [entry("a")],
        [{**entry("a"), **FUTURE}],
        [entry("b"), entry("a")],
        [entry("b"), {**entry("a"), **FUTURE}],
    ),
    "item unchanged, another removed": (
        [entry("a"), entry("b")],
        [entry("a"), {**entry("b"), **FUTURE}],
        [entry("b")],
        [{**entry("b"), **FUTURE}],
    ),
    "item removed": (
        [entry("a"), entry("b")],
        [{**entry("a"), **FUTURE}, entry("b")],
        [entry("b")],
        [entry("b")],
    ),
}


@pytest.mark.parametrize(("before", "app", "after", "expected"), CASES.values(), ids=CASES.keys())
def test_a_newer_field_in_a_list_item_survives_an_update_of_the_list(
    before: list[dict[str, Any]], app: list[dict[str, Any]], after: list[dict[str, Any]], expected: list[dict[str, Any]]
) -> None:
    update, remote, again = run([agent(*before)], {"toolsets": app}, [agent(*after)])
    assert update.unknown_fields[f"{APP}/agents/root"] == ["toolsets.future"]
    [change] = [c for c in update.changes if c.kind.name == "agent"]
    assert change.update_mask == ("toolsets",)
    carried = any("future" in t for t in expected)
    assert ("keeps the app's fields cesync does not know" in change.note) == carried
    assert remote["toolsets"] == expected
    assert not again.has_changes, [c.key for c in again.changes]


def test_a_newer_field_in_a_message_survives_an_update_beside_it() -> None:
    """modelSettings holds only a newer field: the mask reaches past it (modelSettings.model)."""
    update, remote, again = run(
        [agent(entry("a"))], {"modelSettings": {"later": 2}}, [agent(entry("a"), modelSettings={"model": "m"})]
    )
    [change] = [c for c in update.changes if c.kind.name == "agent"]
    assert remote["modelSettings"] == {"model": "m", "later": 2} and not again.has_changes
    assert change.update_mask == ("modelSettings.model",) and not change.note


def test_an_update_that_cannot_place_a_newer_field_is_refused_by_name() -> None:
    transport = EmbeddedTransport(apps=[APP])

    async def go() -> None:
        async with CesClient("http://emu", transport=transport, retry=FAST) as c:
            assert (await apply_plan(c, await _plan(c, [agent(entry("a"), entry("b"))]))).ok
            await _inject(transport, {"toolsets": [{**entry("a"), **FUTURE}, entry("b")]})
            with pytest.raises(CesyncError, match=r"agent root: the update would drop toolsets\[0\]\.future,"):
                await _plan(c, [agent(entry("a", "x"), entry("b"), entry("c"))])

    asyncio.run(go())


def test_the_emulator_stores_returns_and_takes_back_a_nested_newer_field() -> None:
    async def go() -> None:
        async with httpx.AsyncClient(transport=EmbeddedTransport(apps=[APP]), base_url="http://emu") as h:
            assert (await h.post(f"/v1/{APP}/toolsets", params={"toolsetId": "a"}, json=MCP)).status_code == 200
            body = {"displayName": "Root", "toolsets": [entry("a")]}
            assert (await h.post(f"/v1/{APP}/agents", params={"agentId": "root"}, json=body)).status_code == 200
            bogus = {"toolsets": [{**entry("a"), **FUTURE}]}
            refused = await h.patch(f"/v1/{APP}/agents/root", params={"updateMask": "toolsets"}, json=bogus)
            assert refused.status_code == 400 and "toolsets[0].future" in refused.json()["error"]["message"]  # not taught yet
            r = await h.post("/admin/inject", json={"name": f"{APP}/agents/root", "fields": bogus})
            assert r.status_code == 200, r.text
            for alt in ({}, {"$alt": "json;enum-encoding=int"}):
                got = (await h.get(f"/v1/{APP}/agents/root", params=alt)).json()
                assert got["toolsets"] == bogus["toolsets"]
            other = (
                await h.patch(f"/v1/{APP}/agents/root", params={"updateMask": "instruction"}, json={"instruction": "x"})
            ).json()
            assert other["toolsets"] == bogus["toolsets"]  # outside the mask: kept
            sent = {"toolsets": [{**entry("a", "t"), "future": {"mode": "LAX"}}]}
            taken = await h.patch(f"/v1/{APP}/agents/root", params={"updateMask": "toolsets"}, json=sent)
            assert taken.status_code == 200 and taken.json()["toolsets"] == sent["toolsets"]
            dropped = await h.patch(f"/v1/{APP}/agents/root", params={"updateMask": "toolsets"}, json={"toolsets": [entry("a")]})
            assert dropped.json()["toolsets"] == [entry("a")]  # the mask names the list: the request's list is it

    asyncio.run(go())

"""Server semantics of the emulator, driven over httpx exactly as cesync drives it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from cesync.emulator import EmbeddedTransport, FaultConfig
from cesync.emulator.app import create_app
from cesync.emulator.server import BackgroundServer
from cesync.emulator.store import Store

APP = "projects/p/locations/us/apps/a"
FN = {"pythonFunction": {"pythonCode": 'def f(x):\n    """Doc line."""\n    return x\n'}}


def client(**kw: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=EmbeddedTransport(**{"auto_create_apps": True, **kw}), base_url="http://emu")


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _create(c: httpx.AsyncClient, tid: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    r = await c.post(f"/v1/{APP}/tools", params={"toolId": tid}, json=body or FN)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def test_server_set_fields_and_proto3_json() -> None:
    async def go() -> None:
        async with client() as c:
            t = await _create(
                c, "t1", {**FN, "timeout": "1.5s", "executionType": "SYNCHRONOUS", "toolFakeConfig": {"enableFakeMode": False}}
            )
            assert t["name"] == f"{APP}/tools/t1" and t["etag"] and t["createTime"].endswith("Z")
            assert t["pythonFunction"]["name"] == "f" and t["pythonFunction"]["description"] == "Doc line."
            assert t["displayName"] == "f" and t["timeout"] == "1.500s"
            assert t["toolFakeConfig"] == {}  # a set message stays present; its false default is omitted
            r = await c.get(f"/v1/{APP}/tools/t1", params={"$alt": "json;enum-encoding=int"})
            assert r.json()["executionType"] == 1
            s = await _create(c, "s", {"clientFunction": {"name": "c", "parameters": {"type": "ARRAY", "maxItems": 3}}})
            assert s["clientFunction"]["parameters"]["maxItems"] == "3"  # int64 as a string

    run(go())


def test_list_pagination_filter_order() -> None:
    async def go() -> None:
        async with client() as c:
            for i in range(7):
                await _create(c, f"t{6 - i}")
            seen, token = [], None
            while True:
                params = {"pageSize": 3, **({"pageToken": token} if token else {})}
                page = (await c.get(f"/v1/{APP}/tools", params=params)).json()
                seen += [t["name"].rsplit("/", 1)[1] for t in page["tools"]]
                token = page.get("nextPageToken")
                if not token:
                    break
            assert seen == [f"t{i}" for i in range(7)]
            by_time = (await c.get(f"/v1/{APP}/tools", params={"orderBy": "create_time"})).json()["tools"]
            assert [t["name"][-2:] for t in by_time] == [f"t{6 - i}" for i in range(7)]
            system = (await c.get(f"/v1/{APP}/tools", params={"filter": "include_system_tools=true"})).json()["tools"]
            assert len(system) == 10 and sum("systemTool" in t for t in system) == 3
            bad = await c.get(f"/v1/{APP}/tools", params={"pageToken": "garbage"})
            assert bad.status_code == 400 and bad.json()["error"]["status"] == "INVALID_ARGUMENT"
            assert (await c.get(f"/v1/{APP}/tools", params={"orderBy": "color"})).status_code == 400
            assert (await c.get(f"/v1/{APP}/tools", params={"pageSize": 5000})).status_code == 200

    run(go())


@pytest.mark.parametrize(
    ("method", "path", "params", "body", "status"),
    [
        ("POST", "tools", {"toolId": "m"}, {"mcpTool": {"name": "m", "serverAddress": "https://x"}}, "INVALID_ARGUMENT"),
        (
            "POST",
            "tools",
            {"toolId": "x"},
            {"clientFunction": {"name": "a"}, "googleSearchTool": {"name": "b"}},
            "INVALID_ARGUMENT",
        ),
        ("POST", "tools", {"toolId": "x"}, {"clientFunction": {"name": "a"}, "bogus": 1}, "INVALID_ARGUMENT"),
        ("POST", "tools", {"toolId": "t1"}, FN, "ALREADY_EXISTS"),
        ("GET", "tools/nope", {}, None, "NOT_FOUND"),
        ("PATCH", "tools/t1", {"updateMask": "noSuchField"}, {}, "INVALID_ARGUMENT"),
        ("PATCH", "tools/t1", {"updateMask": "timeout"}, {"timeout": "2s", "etag": "stale"}, "ABORTED"),
        ("DELETE", "tools/t1", {"etag": "stale"}, None, "ABORTED"),
        ("DELETE", "tools/end_session", {}, None, "FAILED_PRECONDITION"),
        ("POST", ":executeTool", {}, {}, "INVALID_ARGUMENT"),
        ("POST", ":retrieveToolSchema", {}, {}, "INVALID_ARGUMENT"),
        ("POST", ":retrieveToolSchema", {}, {"tool": f"{APP}/tools/nope"}, "NOT_FOUND"),
        ("POST", "agents", {"agentId": "a"}, {"displayName": "A", "tools": [f"{APP}/tools/nope"]}, "INVALID_ARGUMENT"),
        ("POST", "agents", {"agentId": "a"}, {"instruction": "no display name"}, "INVALID_ARGUMENT"),
        ("PATCH", "versions/v", {}, {}, "NOT_FOUND"),
    ],
    ids=[
        "mcp-direct",
        "two-types",
        "unknown-field",
        "duplicate",
        "missing",
        "bad-mask",
        "etag-patch",
        "etag-delete",
        "system-delete",
        "execute-no-target",
        "tool-schema",
        "tool-schema-missing",
        "agent-dangling-reference",
        "agent-no-display-name",
        "versions-are-not-updated",
    ],
)
def test_errors(method: str, path: str, params: dict[str, str], body: Any, status: str) -> None:
    async def go() -> None:
        async with client() as c:
            await _create(c, "t1")
            url = f"/v1/{APP}{path}" if path.startswith(":") else f"/v1/{APP}/{path}"
            r = await c.request(method, url, params=params, json=body)
            error = r.json()["error"]
            assert error["status"] == status, r.text
            assert error["code"] == r.status_code

    run(go())


def test_patch_mask_semantics() -> None:
    async def go() -> None:
        async with client() as c:
            t = await _create(c, "t1", {**FN, "timeout": "5s"})
            r = await c.patch(f"/v1/{APP}/tools/t1", params={"updateMask": "timeout"}, json={"timeout": "7s", "etag": t["etag"]})
            assert r.json()["timeout"] == "7s" and r.json()["etag"] != t["etag"]
            r = await c.patch(
                f"/v1/{APP}/tools/t1",
                params={"updateMask": "pythonFunction,clientFunction"},
                json={"clientFunction": {"name": "c"}},
            )
            assert "clientFunction" in r.json() and "pythonFunction" not in r.json()  # type change masks both
            r = await c.patch(f"/v1/{APP}/tools/t1", json={"googleSearchTool": {"name": "g"}})
            assert "timeout" not in r.json()  # no mask: everything replaced

    run(go())


def test_agents_block_delete_unless_forced() -> None:
    async def go() -> None:
        async with client() as c:
            await _create(c, "t1")
            await c.post("/admin/agents", json={"app": APP, "agentId": "root", "tools": [f"{APP}/tools/t1"]})
            r = await c.delete(f"/v1/{APP}/tools/t1")
            assert r.json()["error"]["status"] == "FAILED_PRECONDITION" and "root" in r.json()["error"]["message"]
            assert (await c.delete(f"/v1/{APP}/tools/t1", params={"force": "true"})).status_code == 200
            state = (await c.get("/admin/state")).json()
            assert "tools" not in state["apps"][APP]["agents"]["root"]  # proto3 JSON omits the emptied list

    run(go())


def test_an_example_whose_tool_is_force_deleted_becomes_invalid() -> None:
    """Example.invalid: "The example may become invalid if referencing resources are deleted." """

    async def go() -> None:
        async with client() as c:
            await _create(c, "t1")
            call = {"toolCall": {"tool": f"{APP}/tools/t1", "args": {}}}
            example = {"displayName": "E", "messages": [{"role": "agent", "chunks": [{"text": "Looking."}, call]}]}
            made = await c.post(f"/v1/{APP}/examples", params={"exampleId": "e"}, json=example)
            assert made.status_code == 200 and "invalid" not in made.json(), made.text
            assert (await c.delete(f"/v1/{APP}/tools/t1", params={"force": "true"})).status_code == 200
            after = (await c.get(f"/v1/{APP}/examples/e")).json()
            assert after["invalid"] is True and f"{APP}/tools/t1" not in str(after)

    run(go())


@pytest.mark.parametrize("collection", ["deployments", "examples", "versions"])
def test_force_cannot_be_bound_where_the_delete_has_none(collection: str) -> None:
    """DeleteDeploymentRequest, DeleteExampleRequest and DeleteAppVersionRequest have no ``force``."""

    async def go() -> None:
        async with client() as c:
            r = await c.delete(f"/v1/{APP}/{collection}/x", params={"force": "true"})
            assert r.status_code == 400 and "Cannot bind query parameter" in r.json()["error"]["message"]
            assert r.json()["error"]["details"][0]["fieldViolations"][0]["field"] == "force"
            assert (await c.delete(f"/v1/{APP}/{collection}/x")).json()["error"]["status"] == "NOT_FOUND"

    run(go())


def test_toolsets_and_retrieve_tools() -> None:
    async def go() -> None:
        async with client() as c:
            schema = "openapi: 3.0.0\npaths:\n  /a: {get: {operationId: getA}}\n  /b: {post: {operationId: postB}}\n"
            r = await c.post(
                f"/v1/{APP}/toolsets", params={"toolsetId": "ts"}, json={"openApiToolset": {"openApiSchema": schema}}
            )
            assert r.status_code == 200 and r.json()["displayName"] == "ts"
            r = await c.post(f"/v1/{APP}/toolsets/ts:retrieveTools", json={"toolIds": ["postB"]})
            assert [t["name"] for t in r.json()["tools"]] == [f"{APP}/toolsets/ts/tools/postB"]
            dup = await c.post(
                f"/v1/{APP}/toolsets",
                params={"toolsetId": "ts2"},
                json={"displayName": "ts", "openApiToolset": {"openApiSchema": schema}},
            )
            assert dup.json()["error"]["status"] == "ALREADY_EXISTS"

    run(go())


def test_persistence_across_restarts(tmp_path: Path) -> None:
    state = tmp_path / "state.json"

    async def write() -> str:
        async with client(state=state) as c:
            return (await _create(c, "kept"))["etag"]  # type: ignore[no-any-return]

    async def read() -> dict[str, Any]:
        async with client(state=state) as c:
            return (await c.get(f"/v1/{APP}/tools/kept")).json()  # type: ignore[no-any-return]

    etag = run(write())
    assert run(read())["etag"] == etag
    assert Store(state).snapshot()["apps"][APP]["tools"]["kept"]["etag"] == etag  # on disk, readable by another store


def test_faults_are_seeded_and_carry_retry_info() -> None:
    async def statuses(seed: int) -> list[int]:
        transport = EmbeddedTransport(faults=FaultConfig(rate_429=0.3, rate_503=0.2, seed=seed), auto_create_apps=True)
        async with httpx.AsyncClient(transport=transport, base_url="http://emu") as c:
            out = []
            for _ in range(40):
                r = await c.get(f"/v1/{APP}/tools")
                out.append(r.status_code)
                if r.status_code == 429:
                    assert r.json()["error"]["details"][0]["@type"].endswith("RetryInfo")
            return out

    first, again, other = run(statuses(7)), run(statuses(7)), run(statuses(8))
    assert first == again and first != other
    assert {429, 503, 200} <= set(first)


def test_commit_then_drop() -> None:
    async def go() -> None:
        transport = EmbeddedTransport(faults=FaultConfig(drop_rate=1.0), auto_create_apps=True)
        async with httpx.AsyncClient(transport=transport, base_url="http://emu") as c:
            with pytest.raises(httpx.RemoteProtocolError):
                await c.post(f"/v1/{APP}/tools", params={"toolId": "d"}, json=FN)
            assert (await c.get(f"/v1/{APP}/tools/d")).status_code == 200  # the write landed

    run(go())


def test_load_16_clients_no_lost_writes(tmp_path: Path) -> None:
    """16 concurrent clients x 500 mixed operations on a shared state file."""
    state = tmp_path / "state.json"
    app = create_app(Store(state, auto_create_apps=True))

    async def worker(n: int, c: httpx.AsyncClient) -> dict[str, str]:
        expected: dict[str, str] = {}
        for i in range(500):
            tid = f"w{n}-{i % 25}"
            if tid not in expected:
                r = await c.post(f"/v1/{APP}/tools", params={"toolId": tid}, json={"clientFunction": {"name": tid}})
                assert r.status_code == 200, r.text
                expected[tid] = "created"
            elif i % 3 == 0:
                assert (await c.delete(f"/v1/{APP}/tools/{tid}")).status_code == 200
                del expected[tid]
            elif i % 3 == 1:
                r = await c.patch(
                    f"/v1/{APP}/tools/{tid}",
                    params={"updateMask": "clientFunction.description"},
                    json={"clientFunction": {"description": f"v{i}"}},
                )
                assert r.status_code == 200, r.text
                expected[tid] = f"v{i}"
            else:
                assert (await c.get(f"/v1/{APP}/tools/{tid}")).status_code == 200
        return expected

    async def go() -> list[dict[str, str]]:
        async with httpx.AsyncClient(transport=EmbeddedTransport(app), base_url="http://emu") as c:
            return await asyncio.gather(*(worker(n, c) for n in range(16)))

    results = run(go())
    on_disk = Store(state).snapshot()["apps"][APP]["tools"]  # a fresh store reads what is on disk
    for expected in results:
        for tid, value in expected.items():
            assert tid in on_disk
            if value != "created":
                assert on_disk[tid]["clientFunction"]["description"] == value
    assert len([t for t in on_disk.values() if "systemTool" not in t]) == sum(len(e) for e in results)


@pytest.mark.parametrize(
    ("setting", "ok"),
    [
        ({"fail_status": None}, False),
        ({"fail_status": 5}, False),
        ({"latency_ms": None}, False),
        ({"latency_ms": "slow"}, False),
        ({"drop_rate": True}, False),
        ({"latency_ms": 5}, True),
        ({"fail_status": ""}, True),
    ],
)
def test_admin_faults_reject_values_of_the_wrong_type(setting: dict[str, object], ok: bool) -> None:
    with BackgroundServer(auto_create_apps=True) as server:
        r = httpx.post(f"{server.url}/admin/faults", json=setting)
        if ok:
            assert r.status_code == 200, r.text
        else:
            assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT"
            assert "must be a" in r.json()["error"]["message"]
        assert httpx.get(f"{server.url}/admin/faults").json()["fail_status"] == ""  # never the text "None"


def test_admin_stats_time_the_writes_and_only_the_writes() -> None:
    """/admin/stats (the benchmark's time to first write): reads leave it alone; each write,
    answered with an error or not, is counted, from the first's arrival to the last's answer."""
    import time

    with BackgroundServer(auto_create_apps=True) as server, httpx.Client(base_url=server.url) as h:
        assert h.get("/admin/stats").json() == {
            "writes": 0,
            "firstWriteAt": 0.0,
            "lastWriteDoneAt": 0.0,
            "quotaRefused": {"writes": 0, "reads": 0},
        }
        h.get(f"/v1/{APP}/tools").raise_for_status()
        assert h.get("/admin/stats").json()["writes"] == 0
        before = time.time()
        h.post(f"/v1/{APP}/tools", params={"toolId": "a"}, json=FN).raise_for_status()
        assert h.post(f"/v1/{APP}/tools", params={"toolId": "a"}, json=FN).status_code == 409
        stats = h.get("/admin/stats").json()
    assert stats["writes"] == 2
    assert before <= stats["firstWriteAt"] <= stats["lastWriteDoneAt"] <= time.time()


# Terraform mmv1/products/ces/Tool.yaml marks these five output only ("cannot be created, updated,
# or managed directly"); the emulator refuses them in CreateTool and UpdateTool as CES does.
SERVER_MADE = {
    "openApiTool": {"name": "o", "openApiSchema": "openapi: 3.0.0\npaths:\n  /a: {get: {operationId: getA}}\n"},
    "connectorTool": {"connection": "projects/p/locations/l/connections/c", "action": {"connectionActionId": "a"}},
    "mcpTool": {"name": "m", "serverAddress": "https://x"},
    "systemTool": {"name": "end_session2"},
    "remoteAgentTool": {"name": "r", "agentCard": {"name": "R"}},
}


@pytest.mark.parametrize("member", sorted(SERVER_MADE))
def test_tool_types_only_ces_makes_are_refused(member: str) -> None:
    async def go() -> None:
        async with client() as c:
            r = await c.post(f"/v1/{APP}/tools", params={"toolId": "x"}, json={member: SERVER_MADE[member]})
            assert r.json()["error"]["status"] == "INVALID_ARGUMENT" and member in r.json()["error"]["message"]
            assert (await c.get(f"/v1/{APP}/tools/x")).status_code == 404
            assert (await c.post(f"/v1/{APP}/tools", params={"toolId": "t1"}, json=FN)).status_code == 200
            whole = await c.patch(f"/v1/{APP}/tools/t1", json={member: SERVER_MADE[member]})
            masked = await c.patch(f"/v1/{APP}/tools/t1", params={"updateMask": member}, json={member: SERVER_MADE[member]})
            for answer in (whole, masked):
                assert answer.json()["error"]["status"] == "INVALID_ARGUMENT", answer.text
            assert "pythonFunction" in (await c.get(f"/v1/{APP}/tools/t1")).json()  # FN, unchanged

    run(go())


def test_a_toolset_serves_its_tools_through_retrieve_tools_only() -> None:
    """The tools a toolset makes are named under it and come from retrieveTools (google-cloud-ces
    Tool.name: "dynamic and output-only"); ListTools lists the app's own tools (cxas-scrapi's
    get_tools_map lists tools and toolsets, then asks each toolset for its tools)."""

    async def go() -> None:
        async with client() as c:
            schema = "openapi: 3.0.0\npaths:\n  /a: {get: {operationId: getA}}\n"
            conn = {"connection": "projects/p/locations/l/connections/c", "connectorActions": [{"connectionActionId": "Send"}]}
            for rid, body in (("api", {"openApiToolset": {"openApiSchema": schema}}), ("conn", {"connectorToolset": conn})):
                assert (await c.post(f"/v1/{APP}/toolsets", params={"toolsetId": rid}, json=body)).status_code == 200
            listed = (await c.get(f"/v1/{APP}/tools", params={"filter": "include_system_tools=true"})).json()["tools"]
            assert not [t for t in listed if "/toolsets/" in t["name"]]
            api = (await c.post(f"/v1/{APP}/toolsets/api:retrieveTools", json={})).json()["tools"]
            assert [(t["name"], "openApiTool" in t) for t in api] == [(f"{APP}/toolsets/api/tools/getA", True)]
            made = (await c.post(f"/v1/{APP}/toolsets/conn:retrieveTools", json={})).json()["tools"]
            assert [t["name"] for t in made] == [f"{APP}/toolsets/conn/tools/Send"] and "connectorTool" in made[0]

    run(go())

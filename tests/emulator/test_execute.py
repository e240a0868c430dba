"""executeTool in the emulator: the Python sandbox, mocks, OpenAPI on loopback, and the official client."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import ces_v1
from google.protobuf import struct_pb2

from cesync.emulator import EmbeddedTransport
from cesync.emulator.server import BackgroundServer
from tests.helpers import json_api

APP = "projects/p/locations/us/apps/a"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _call(
    tools: dict[str, dict[str, Any]], request: dict[str, Any], toolsets: dict[str, dict[str, Any]] | None = None
) -> httpx.Response:
    async with httpx.AsyncClient(transport=EmbeddedTransport(auto_create_apps=True), base_url="http://emu") as c:
        for collection, items in (("tools", tools), ("toolsets", toolsets or {})):
            for rid, body in items.items():
                r = await c.post(f"/v1/{APP}/{collection}", params={f"{collection[:-1]}Id": rid}, json=body)
                assert r.status_code == 200, r.text
        return await c.post(f"/v1/{APP}:executeTool", json=request)


def _openapi_call(schema: str, args: dict[str, Any]) -> httpx.Response:
    """getOrder of an OpenAPI toolset (CES makes OpenAPI tools only from toolsets)."""
    request = {"toolsetTool": {"toolset": f"{APP}/toolsets/o", "toolId": "getOrder"}, "args": args}
    return run(_call({}, request, {"o": {"openApiToolset": {"openApiSchema": schema}}}))


def python_tool(code: str, timeout: str = "3s") -> dict[str, Any]:
    return {"pythonFunction": {"pythonCode": code}, "timeout": timeout}


@pytest.mark.parametrize(
    ("code", "args", "expected"),
    [
        ("def f(a, b):\n    return {'sum': a + b}\n", {"a": 2, "b": 3}, {"result": {"sum": 5}}),
        ("def f():\n    return [1, 'two']\n", {}, {"result": [1, "two"]}),
        ("def f():\n    raise ValueError('bad order')\n", {}, {"error": "ValueError: bad order (line 2)"}),
        ("def f():\n    return {1, 2}\n", {}, {"error": "the function returned set, which is not JSON"}),
        ("def f():\n    return float('nan')\n", {}, {"error": "the function returned float, which is not JSON"}),
        ("def f():\n    while True:\n        pass\n", {}, {"error": "the tool did not finish within 1s and was stopped"}),
        ("import socket\ndef f():\n    socket.create_connection(('127.0.0.1', 9))\n", {}, {"error": "PermissionError: network"}),
        ("import urllib.request\ndef f():\n    urllib.request.urlopen('http://127.0.0.1:9')\n", {}, {"error": "network"}),
        ("def f():\n    return bytearray(3 * 1024**3)\n", {}, {"error": "MemoryError"}),
        ("import os\ndef f():\n    os._exit(7)\n", {}, {"error": "exited with status 7 without an answer"}),
        ("def f(x):\n    print('noise on stdout')\n    return {'x': x}\n", {"x": 1}, {"result": {"x": 1}}),
        ("import os\ndef f():\n    return {'env': sorted(os.environ)}\n", {}, {"result": {"env": ["LANG", "PATH"]}}),
        ("def f(:\n", {}, {"error": "SyntaxError"}),
    ],
    ids=["ok", "list", "raises", "set", "nan", "timeout", "socket", "urllib", "memory", "exit", "print", "env", "syntax"],
)
def test_python_tools_never_break_the_emulator(code: str, args: dict[str, Any], expected: dict[str, Any]) -> None:
    r = run(_call({"t": python_tool(code, "1s")}, {"tool": f"{APP}/tools/t", "args": args}))
    assert r.status_code == 200, r.text
    response = r.json()["response"]
    assert set(response) == set(expected)
    for key, value in expected.items():
        if isinstance(value, str):
            assert value in response[key], response
        else:
            assert response[key] == value


@pytest.mark.parametrize("path", ["@orders.invalid/orders/{id}", ".orders.invalid/orders/{id}", ":1@orders.invalid/{id}"])
def test_an_openapi_path_cannot_move_the_call_off_loopback(orders_api: str, path: str) -> None:
    # The server is loopback, but a path of the (pull request's) schema is appended to it as text:
    # http://127.0.0.1:PORT@host/... would reach any host (a cloud metadata server, say).
    schema = SCHEMA.replace("/orders/{id}:", f"'{path}':") % orders_api
    response = _openapi_call(schema, {"id": "A1"}).json()["response"]
    assert "loopback only" in str(response.get("error")), response


def test_variables_and_context_reach_the_code_and_come_back() -> None:
    code = (
        "def f():\n"
        "    context.variables['seen'] = context.variables.get('n', 0) + 1\n"
        "    return {'call': context.function_call_id}\n"
    )
    tools = {"t": python_tool(code)}
    r = run(_call(tools, {"tool": f"{APP}/tools/t", "variables": {"n": 41}})).json()
    assert r["variables"] == {"n": 41, "seen": 42}
    r = run(_call(tools, {"tool": f"{APP}/tools/t", "context": {"function_call_id": "c-7", "state": {"n": 1}}})).json()
    assert r["response"] == {"result": {"call": "c-7"}} and r["variables"]["seen"] == 2


CALLER = "def caller(order_id):\n    return tools.lookup_order({'orderId': order_id})\n"
LOOKUP = "def lookup_order(orderId):\n    return {'status': 'real ' + orderId}\n"


@pytest.mark.parametrize(
    ("mock", "expected"),
    [
        (None, {"result": {"result": {"status": "real A1"}}}),  # no mockConfig: the real tool runs
        (
            {
                "mockedToolCalls": [
                    {"toolId": f"{APP}/tools/lookup", "expectedArgsPattern": {"orderId": "A\\d"}, "mockResponse": {"s": 1}}
                ],
                "unmatchedToolCallBehavior": "FAIL",
            },
            {"result": {"s": 1}},
        ),
        (
            {
                "mockedToolCalls": [
                    {"toolId": f"{APP}/tools/lookup", "expectedArgsPattern": {"orderId": "B\\d"}, "mockResponse": {"s": 1}}
                ],
                "unmatchedToolCallBehavior": "FAIL",
            },
            {"error": "no mocked call matches"},
        ),
        (
            {"mockedToolCalls": [], "unmatchedToolCallBehavior": "PASS_THROUGH"},
            {"result": {"result": {"status": "real A1"}}},
        ),
    ],
    ids=["no-mocks", "matched", "unmatched-fail", "pass-through"],
)
def test_mock_config_answers_nested_calls(mock: dict[str, Any] | None, expected: dict[str, Any]) -> None:
    tools = {"caller": python_tool(CALLER), "lookup": python_tool(LOOKUP)}
    request: dict[str, Any] = {"tool": f"{APP}/tools/caller", "args": {"order_id": "A1"}}
    if mock is not None:
        request["mockConfig"] = mock
    response = run(_call(tools, request)).json()["response"]
    if "error" in expected:
        assert expected["error"] in response["error"]
    else:
        assert response == expected


@pytest.mark.parametrize(
    ("tools", "request_", "status", "message"),
    [
        ({}, {"tool": f"{APP}/tools/nope"}, 404, "not found"),
        ({}, {"args": {}}, 400, "exactly one of tool or toolsetTool"),
        ({"c": {"clientFunction": {"name": "c"}}}, {"tool": f"{APP}/tools/c"}, 400, "runs in the client"),
        ({"g": {"googleSearchTool": {"name": "g"}}}, {"tool": f"{APP}/tools/g"}, 501, "cannot run googleSearchTool"),
        ({"t": python_tool(LOOKUP)}, {"tool": f"{APP}/tools/t", "variables": {}, "context": {}}, 400, "variables or context"),
        (
            {"t": python_tool(LOOKUP)},
            {"tool": f"{APP}/tools/t", "mockConfig": {"mockedToolCalls": []}},
            400,
            "unmatchedToolCallBehavior",
        ),
    ],
    ids=["unknown", "no-target", "client-function", "google-search", "both-contexts", "bad-mock"],
)
def test_call_errors_follow_the_api(tools: dict[str, Any], request_: dict[str, Any], status: int, message: str) -> None:
    r = run(_call(tools, request_))
    assert r.status_code == status and message in r.json()["error"]["message"], r.text


@pytest.fixture
def orders_api() -> Iterator[str]:
    def answer(path: str, headers: Mapping[str, str]) -> tuple[int, Any]:
        return 200 if "missing" not in path else 404, {"path": path, "key": headers.get("X-Key")}

    with json_api(answer) as url:
        yield url


SCHEMA = """
openapi: 3.0.3
info: {title: O, version: "1"}
servers: [{url: %s}]
paths:
  /orders/{id}:
    get:
      operationId: getOrder
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
        - {name: verbose, in: query, schema: {type: boolean}}
        - {name: X-Key, in: header, schema: {type: string}}
      responses: {"200": {description: ok}}
"""


@pytest.mark.parametrize(
    ("server", "args", "expected"),
    [
        (None, {"id": "A 1", "verbose": True, "X-Key": "k"}, {"path": "/orders/A%201?verbose=true", "key": "k"}),
        (None, {"id": "missing"}, {"error": {"code": 404}}),
        ("https://orders.example.com", {"id": "A1"}, {"error": "loopback only"}),
        ("http://127.0.0.1:9", {"id": "A1"}, {"error": "cannot reach http://127.0.0.1:9/orders/A1"}),
        ("'http://127.0.0.1:9@orders.invalid'", {"id": "A1"}, {"error": "loopback only"}),
    ],
    ids=["call", "http-error", "not-loopback", "unreachable", "userinfo"],
)
def test_openapi_tools_call_loopback_servers_only(
    orders_api: str, server: str | None, args: dict[str, Any], expected: dict[str, Any]
) -> None:
    response = _openapi_call(SCHEMA % (server or orders_api), args).json()["response"]
    for key, value in expected.items():
        if isinstance(value, str):
            assert value in str(response[key])
        elif isinstance(value, dict):
            assert value.items() <= response[key].items()
        else:
            assert response[key] == value


def test_fake_mode_runs_the_fake_code() -> None:
    tool = python_tool(LOOKUP) | {
        "toolFakeConfig": {
            "enableFakeMode": True,
            "codeBlock": {"pythonCode": "def fake(orderId):\n    return {'fake': orderId}\n"},
        }
    }
    response = run(_call({"t": tool}, {"tool": f"{APP}/tools/t", "args": {"orderId": "A1"}})).json()["response"]
    assert response == {"result": {"fake": "A1"}}


def test_official_client_execute_tool(emulator: BackgroundServer) -> None:
    options = ClientOptions(api_endpoint=emulator.url)
    agents = ces_v1.AgentServiceClient(credentials=AnonymousCredentials(), transport="rest", client_options=options)
    agents.create_tool(
        parent=APP,
        tool=ces_v1.Tool(python_function=ces_v1.PythonFunction(python_code="def double(x):\n    return {'y': 2 * x}\n")),
        tool_id="double",
    )
    tools = ces_v1.ToolServiceClient(credentials=AnonymousCredentials(), transport="rest", client_options=options)
    args = struct_pb2.Struct()
    args.update({"x": 21})
    answer = tools.execute_tool(request={"parent": APP, "tool": f"{APP}/tools/double", "args": args})
    assert answer.tool == f"{APP}/tools/double"
    assert dict(answer.response)["result"]["y"] == 42

"""A hostile server's replies: every one is a clear cesync error, never a hang, a traceback
or a request built from what it said (a name the server returns is not trusted).

Each test runs cesync's real client against tests/hostile.py, a real HTTP server on
loopback that answers what the test chooses.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.client import CesClient, api
from cesync.client.api import RetryPolicy
from cesync.client.apps import create_app, get_app, list_versions
from cesync.errors import ApiError, BadReply, CesyncError, TransportError
from cesync.sync.remote import read_remote
from tests.helpers import cesync
from tests.hostile import APP, HostileServer

APP_BODY = json.dumps({"name": APP, "displayName": "a", "etag": "e0"}).encode()


def _client(server: HostileServer) -> CesClient:
    return CesClient(server.url, retry=RetryPolicy(attempts=1))


def _read(server: HostileServer) -> Any:
    async def run() -> Any:
        async with _client(server) as c:
            return await read_remote(c, APP)

    return asyncio.run(run())


def _app_with(tools: Any) -> Any:
    """An app whose tools list answers tools(query) (a page); every other list is empty."""

    def answer(method: str, path: str, query: dict[str, str]) -> tuple[int, bytes]:
        if path == APP:
            return 200, APP_BODY
        if path == f"{APP}/tools":
            return 200, json.dumps(tools(query)).encode()
        return 200, b"{}"

    return answer


# --- finding 8: pagination that never ends ---------------------------------------------------------


def test_a_repeated_page_token_stops_the_list() -> None:
    # bounded for the test: after 3,000 pages the server ends the list (before the fix plan read all of them)
    count = iter(range(10**6))
    with HostileServer(_app_with(lambda q: {"nextPageToken": "same"} if next(count) < 3000 else {})) as server:
        with pytest.raises(BadReply, match="page token 'same' a second time") as info:
            _read(server)
        assert "list tools" in str(info.value)
        assert sum(1 for r in server.requests if r[1] == f"{APP}/tools") == 2


def test_ever_new_page_tokens_stop_at_the_page_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "MAX_PAGES", 40)
    count = iter(range(10**6))
    with HostileServer(_app_with(lambda q: {"nextPageToken": f"t{n}"} if (n := next(count)) < 3000 else {})) as server:
        with pytest.raises(BadReply, match="did not end after 40 pages"):
            _read(server)
        assert sum(1 for r in server.requests if r[1] == f"{APP}/tools") == 40


def test_app_versions_pages_are_bounded_too() -> None:
    def answer(method: str, path: str, query: dict[str, str]) -> tuple[int, bytes]:
        return 200, json.dumps({"appVersions": [{"name": f"{APP}/versions/v"}], "nextPageToken": "again"}).encode()

    async def run(server: HostileServer) -> Any:
        async with _client(server) as c:
            return await list_versions(c, APP)

    with HostileServer(answer) as server, pytest.raises(BadReply, match="a second time"):
        asyncio.run(run(server))


# --- finding 9: names from the server -----------------------------------------------------------

OUTSIDE = [
    "projects/other/locations/us/apps/a/tools/x",
    f"{APP}/tools/../../../../etc",
    f"{APP}/tools/a%2Fb",
    f"{APP}/tools/x?force=true",
    f"{APP}/tools/x#frag",
    f"{APP}/tools/",
    f"{APP}/tools/x/y",
    f"{APP}/toolsets/x",
    f"{APP}/toolsets/../tools/x",
    f"{APP}/tools/x\n",
    "x",
    7,
    None,
]


@pytest.mark.parametrize("name", OUTSIDE)
def test_a_listed_name_outside_the_app_is_an_error_naming_it(name: Any) -> None:
    body = {"clientFunction": {"name": "f"}, "etag": "e1", **({"name": name} if name is not None else {})}
    with HostileServer(_app_with(lambda q: {"tools": [body]})) as server:
        with pytest.raises(BadReply, match="is not a tool of " + APP) as info:
            _read(server)
        assert repr(name) in str(info.value)


def test_names_inside_the_app_are_read() -> None:
    tools = [
        {"name": f"{APP}/tools/plain-id_1", "clientFunction": {"name": "f"}},
        {"name": f"{APP}/toolsets/ts/tools/op", "openApiTool": {"name": "op"}},  # a toolset's: not managed
    ]
    with HostileServer(_app_with(lambda q: {"tools": tools})) as server:
        assert [r.key for r in _read(server)] == [("app", "app"), ("tool", "plain-id_1")]


def test_apply_prune_never_deletes_a_name_the_server_made_up(tmp_path: Path) -> None:
    """End to end: before, apply --prune sent DELETE .../tools/x?force=true (a listed 'tool' of this app)."""
    root = tmp_path / "repo"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "minimal", root)
    config = root / "cesync.yaml"
    config.write_text("version: 1\nenvironments:\n  dev:\n    project: p\n    location: us\n    app: a\n")
    for rel in [p for p in root.rglob("*.yaml") if p != config]:
        rel.unlink()
    listed = {"tools": [{"name": f"{APP}/tools/x?force=true", "clientFunction": {"name": "f"}, "etag": "e"}]}
    with HostileServer(_app_with(lambda q: listed)) as server:
        result = cesync("apply", "--dir", str(root), "--env", "dev", "--endpoint", server.url, "--prune", "--auto-approve")
        assert result.returncode == 1, result.stdout + result.stderr
        assert "'projects/p/locations/us/apps/a/tools/x?force=true', which is not a tool of" in result.stderr
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr
        assert [r for r in server.requests if r[0] != "GET"] == []


# --- finding 10: wrong types and absurd nesting ----------------------------------------------------


@pytest.mark.parametrize(
    "status, body, expected",
    [
        (400, {"error": "str"}, "str"),
        (400, {"error": ["x"]}, "Bad Request"),
        (403, {"error": {"status": 5, "message": ["m"], "details": "d"}}, "Forbidden"),
        (429, {"error": {"status": "RESOURCE_EXHAUSTED", "details": [1, "x", {"@type": 3, "retryDelay": []}]}}, "429"),
        (500, {"error": {"message": {"nested": True}}}, "Internal Server Error"),
        (403, [], "Forbidden"),
    ],
)
def test_an_error_reply_of_the_wrong_shape_is_a_clear_error(status: int, body: Any, expected: str) -> None:
    with HostileServer(lambda m, p, q: (status, json.dumps(body).encode())) as server:
        with pytest.raises(ApiError, match=expected) as info:
            _read(server)
        assert not isinstance(info.value, (AttributeError, TypeError))


@pytest.mark.parametrize("body", [b"[" * 100_000, b'{"a":' * 100_000, json.dumps(json.loads("[" * 500 + "]" * 500)).encode()])
@pytest.mark.parametrize("status", [200, 400])
def test_absurd_nesting_is_a_clear_error(body: bytes, status: int) -> None:
    with HostileServer(lambda m, p, q: (status, body)) as server, pytest.raises(ApiError) as info:
        _read(server)
    if status == 200:
        assert isinstance(info.value, TransportError) and "nested deeper than 200 levels" in str(info.value)


def test_a_reply_that_is_not_an_object_is_a_clear_error() -> None:
    with HostileServer(lambda m, p, q: (200, b'["a"]')) as server, pytest.raises(BadReply, match="a JSON list, not an object"):
        _read(server)


def test_an_operation_with_a_made_up_name_is_not_polled() -> None:
    def answer(method: str, path: str, query: dict[str, str]) -> tuple[int, bytes]:
        return 200, json.dumps({"name": "projects/p/locations/us/operations/../../../apps/a/tools/x?force=true"}).encode()

    async def run(server: HostileServer) -> Any:
        async with _client(server) as c:
            return (await create_app(c, APP, {"displayName": "a"})).unwrap()

    with HostileServer(answer) as server:
        with pytest.raises(BadReply, match="operation named"):
            asyncio.run(run(server))
        assert [r[0] for r in server.requests] == ["POST"]


# --- generated garbage to every reply parser -------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)
_field = st.sampled_from(["name", "etag", "error", "status", "message", "details", "nextPageToken", "tools", "done", "response"])
_shaped = st.recursive(
    _json, lambda inner: st.dictionaries(_field, inner, max_size=4) | st.lists(inner, max_size=3), max_leaves=16
)
_bodies = st.one_of(
    _shaped.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=40),
    st.integers(150, 3000).map(lambda n: b"[" * n + b"]" * n),
    st.integers(150, 3000).map(lambda n: b'{"a":' * n + b"1" + b"}" * n),
)


@pytest.fixture(scope="module")
def garbage_server() -> Any:
    with HostileServer(lambda m, p, q: (200, b"{}")) as server:
        yield server


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(status=st.sampled_from([200, 200, 200, 400, 403, 404, 409, 429, 500, 503]), body=_bodies, which=st.integers(0, 3))
def test_generated_replies_are_results_or_cesync_errors(
    garbage_server: HostileServer, status: int, body: bytes, which: int
) -> None:
    """The app, a list, a read, an operation: whatever the body, a result or a CesyncError."""
    garbage_server.answer = lambda m, p, q: (status, body)

    async def run() -> Any:
        async with _client(garbage_server) as c:
            if which == 0:
                return await read_remote(c, APP)
            if which == 1:
                return await get_app(c, APP)
            if which == 2:
                return await c.read(f"{APP}/tools/t")
            return (await create_app(c, APP, {"displayName": "a"})).unwrap()

    with contextlib.suppress(CesyncError):
        asyncio.run(run())


@pytest.mark.parametrize("expression", ["-" * 100_000 + "1", "not " * 100_000 + "1"])
def test_a_tool_s_code_too_complex_to_parse_is_no_internal_error(tmp_path: Path, expression: str) -> None:
    """A tool whose pythonCode Python's parser gives up on (MemoryError, not SyntaxError), sent
    without the function name CES fills in: cesync names the tool after its first function when
    it reads it, and that parse ended plan with 'internal error: MemoryError'."""
    from tests.helpers import make_repo

    code = f"def f(x: int) -> int:\n    return {expression}\n"
    tool = {"name": f"{APP}/tools/t", "pythonFunction": {"pythonCode": code}}

    def answer(method: str, path: str, query: dict[str, str]) -> tuple[int, bytes]:
        if path == APP:
            return 200, APP_BODY
        if path == f"{APP}/tools":
            return 200, json.dumps({"tools": [tool]}).encode()
        return 200, b"{}"

    repo = make_repo(tmp_path, {})
    with HostileServer(answer) as server:
        r = cesync("plan", "--dir", str(repo), "--endpoint", server.url)
    assert "internal error" not in r.stderr and r.returncode == 0, r.stderr

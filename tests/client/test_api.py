"""The client's typed surface: reads come back as Resource records, errors as the typed tree."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.client import CesClient
from cesync.emulator import EmbeddedTransport
from cesync.errors import AlreadyExists, ApiError, NotFound, RetryableError, TransportError

APP = "projects/p/locations/us/apps/a"


def test_reads_are_resource_records_and_errors_are_typed() -> None:
    async def run() -> None:
        async with CesClient("http://emu", transport=EmbeddedTransport(auto_create_apps=True)) as c:
            made = await c.create(APP, "tools", "t", {"clientFunction": {"name": "t"}})
            assert made.error is None and made.etag
            await c.create(APP, "toolsets", "s", {"displayName": "S", "openApiToolset": {"openApiSchema": SCHEMA}})
            tools = [r for r in await c.resources(APP, KINDS["tool"]) if r.id == "t"]
            assert tools == [Resource(KINDS["tool"], "t", tools[0].body)]
            assert tools[0].name == f"{APP}/tools/t" and tools[0].etag == made.etag
            toolset = await c.read(f"{APP}/toolsets/s")
            assert (toolset.kind.name, toolset.id, toolset.name) == ("toolset", "s", f"{APP}/toolsets/s")
            with pytest.raises(NotFound):
                await c.read(f"{APP}/tools/absent")
            again = await c.create(APP, "tools", "t", {"clientFunction": {"name": "t"}})
            assert isinstance(again.error, AlreadyExists) and again.etag == ""

    asyncio.run(run())


SCHEMA = """openapi: 3.0.0
info: {title: s, version: '1'}
servers: [{url: 'https://example.com'}]
paths:
  /x:
    get:
      operationId: x
      responses: {'200': {description: ok}}
"""


def test_a_cookie_the_server_sets_is_never_sent_back() -> None:
    """CES sets no cookies; if a server did, the client would not keep it (no state between calls)."""
    seen: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("cookie"))
        return httpx.Response(200, headers={"set-cookie": "session=abc; Path=/"}, json={"name": "x"})

    async def run() -> None:
        async with CesClient("http://emu", transport=httpx.MockTransport(answer)) as c:
            await c.get(f"{APP}/tools/a")
            await c.get(f"{APP}/tools/b")
            assert not c.http.cookies

    asyncio.run(run())
    assert seen == [None, None]


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_is_an_error_not_a_success(code: int) -> None:
    """An endpoint answering with a redirect (a wrong URL, a proxy's login page) carried out nothing:
    reads and writes fail with a message naming it, the redirect is not followed, a write is not retried."""
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url.host))
        return httpx.Response(code, headers={"location": "https://elsewhere.example/"})

    async def run() -> None:
        async with CesClient("http://emu", transport=httpx.MockTransport(answer)) as c:
            with pytest.raises(ApiError, match=rf"redirect \(HTTP {code} to https://elsewhere.example/\)"):
                await c.get(f"{APP}/tools/a")
            with pytest.raises(ApiError, match="redirect"):
                await c.list_all(APP, "tools")
            written = await c.create(APP, "tools", "t", {"clientFunction": {"name": "t"}})
            assert isinstance(written.error, ApiError) and "redirect" in str(written.error) and not written.retried

    asyncio.run(run())
    assert seen == ["emu"] * 3


def test_a_permission_denied_names_the_method_s_own_permission() -> None:
    """Each hint is the permission Google's REST reference gives the method (cesync.api.permissions)."""
    from cesync.client.apps import create_version, restore_version
    from cesync.emulator import FaultConfig

    async def run() -> list[str]:
        transport = EmbeddedTransport(auto_create_apps=True, faults=FaultConfig(fail_status="PERMISSION_DENIED"))
        seen: list[str] = []
        async with CesClient("http://emu", transport=transport, retry=None) as c:
            calls = [
                lambda: create_version(c, APP, {}),
                lambda: restore_version(c, f"{APP}/versions/v1"),
                lambda: c.read(f"{APP}/versions/v1"),
                lambda: c.get(f"{APP}/agents/root"),
                c.patch(f"{APP}/agents/root", {}, ["instruction"]),
                c.execute(APP, {"tool": f"{APP}/tools/t"}),
            ]
            for call in calls:
                try:
                    outcome = await (call() if callable(call) else call)
                    error = getattr(outcome, "error", None)
                except ApiError as exc:
                    error = exc
                assert error is not None
                seen.append(str(error))
        return seen

    seen = asyncio.run(run())
    expected = [
        "ces.appVersions.create on",
        "ces.appVersions.restore on",
        "ces.appVersions.get on",
        "ces.agents.get on",
        "ces.agents.update on",
        "ces.tools.execute on",
    ]
    for line, permission in zip(seen, expected, strict=True):
        assert f"needs permission {permission}" in line, line


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("GET", "projects/p/locations/l/operations/op", "ces.operations.get"),  # polling an operation
        ("POST", f"{APP}/versions", "ces.appVersions.create"),
        ("POST", f"{APP}/versions/v:restore", "ces.appVersions.restore"),
        ("POST", f"{APP}:exportApp", "ces.apps.export"),
        ("POST", "projects/p/locations/l/apps", "ces.apps.create"),
        ("GET", f"{APP}/toolsets", "ces.toolsets.list"),
        ("DELETE", f"{APP}/guardrails/g", "ces.guardrails.delete"),
        ("POST", "projects/p/locations/l/apps:importApp", ""),  # the reference pages we have are silent
        ("POST", f"{APP}/toolsets/t:retrieveTools", ""),
        ("GET", f"{APP}/toolsets/t/tools/x", ""),
    ],
)
def test_permission_of_each_method(method: str, path: str, expected: str) -> None:
    from cesync.api.permissions import permission

    assert permission(method, path) == expected


def test_a_refused_connection_is_retried_only_once_the_server_has_answered() -> None:
    """Before any answer, a refusal is final (nothing listens there); after one, a restart or a blip: retried, announced."""
    from cesync.client.api import RetryPolicy
    from cesync.emulator.server import BackgroundServer, free_port
    from cesync.errors import TransportError

    async def run(url: str, server: BackgroundServer | None) -> tuple[TransportError, list[str]]:
        lines: list[str] = []
        async with CesClient(url, retry=RetryPolicy(attempts=3, initial=0.01, maximum=0.02), notify=lines.append) as client:
            if server is not None:
                with pytest.raises(NotFound):
                    await client.get("projects/p/locations/us/apps/a")  # an answer: the server is there
                server.__exit__(None, None, None)
            with pytest.raises(TransportError) as exc:
                await client.list_all("projects/p/locations/us/apps/a", "tools")
        return exc.value, lines

    never, quiet = asyncio.run(run(f"http://127.0.0.1:{free_port()}", None))
    assert never.final and quiet == [] and "is the emulator running" in str(never)
    server = BackgroundServer()
    server.__enter__()
    gone, said = asyncio.run(run(server.url, server))
    assert not gone.final and len(said) == 2 and all(x.startswith("retry ") for x in said), said


@pytest.mark.parametrize(
    ("failures", "attempts", "calls", "announced", "raised"),
    [
        ([], 5, 1, 0, None),  # the first attempt succeeds
        (["retry", "retry"], 5, 3, 2, None),  # each retry announced once
        (["retry"] * 5, 3, 3, 2, RetryableError),  # the budget spent: the last error
        (["final"], 5, 1, 0, TransportError),  # nobody listens: not tried again
        (["retry", "final"], 5, 2, 1, TransportError),  # ... on a later attempt either
        (["retry"], 1, 1, 0, RetryableError),  # one attempt: no retry at all
    ],
)
def test_every_attempt_runs_in_the_retry_loop(
    failures: list[str], attempts: int, calls: int, announced: int, raised: type[Exception] | None
) -> None:
    """client/api.py _retrying: the first attempt is the retry loop's own, so one policy decides every attempt."""
    import asyncio

    from cesync.client import CesClient, RetryPolicy

    made: list[int] = []
    told: list[str] = []

    async def call() -> dict[str, str]:
        made.append(1)
        if len(made) <= len(failures):
            kind = failures[len(made) - 1]
            raise RetryableError("busy") if kind == "retry" else TransportError("refused", final=True)
        return {"ok": "yes"}

    async def run() -> dict[str, str]:
        async with CesClient("http://emu", retry=RetryPolicy(attempts=attempts, initial=0.0001, maximum=0.0002)) as c:
            c.notify = told.append
            return await c._retrying(call)

    if raised is None:
        assert asyncio.run(run()) == {"ok": "yes"}
    else:
        with pytest.raises(raised):
            asyncio.run(run())
    assert (len(made), len(told)) == (calls, announced)

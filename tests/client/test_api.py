"""The client's typed surface: reads come back as Resource records, errors as the typed tree."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.api.resource import Resource
from cesync.client import CesClient
from cesync.emulator import EmbeddedTransport
from cesync.errors import AlreadyExists, ApiError, NotFound

APP = "projects/p/locations/us/apps/a"


def test_reads_are_resource_records_and_errors_are_typed() -> None:
    async def run() -> None:
        async with CesClient("http://emu", transport=EmbeddedTransport(auto_create_apps=True)) as c:
            made = await c.create(APP, "tools", "t", {"clientFunction": {"name": "t"}})
            assert made.error is None and made.etag
            await c.create(APP, "toolsets", "s", {"displayName": "S", "openApiToolset": {"openApiSchema": SCHEMA}})
            tools = [r for r in await c.resources(APP, "tool") if r.id == "t"]
            assert tools == [Resource("tool", "t", tools[0].body)]
            assert tools[0].name == f"{APP}/tools/t" and tools[0].etag == made.etag
            toolset = await c.read(f"{APP}/toolsets/s")
            assert (toolset.kind, toolset.id, toolset.name) == ("toolset", "s", f"{APP}/toolsets/s")
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


_URL_TEXT = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=12) | st.text(
    alphabet="aZ09_.~:@!$&'()*+,;=-", max_size=12
)


@settings(max_examples=300, deadline=None)
@given(
    base=st.sampled_from(
        ["http://127.0.0.1:8080", "https://ces.us.rep.googleapis.com", "https://h.example/pre/fix", "http://embedded"]
    ),
    segments=st.lists(_URL_TEXT, min_size=1, max_size=5),
    params=st.dictionaries(_URL_TEXT, _URL_TEXT | st.integers(), max_size=4),
)
def test_request_url_is_the_one_httpx_makes(base: str, segments: list[str], params: dict[str, object]) -> None:
    """CesClient.url parses once what httpx makes of a relative path and params on the base URL."""
    client = CesClient(base)
    path = "/".join(segments)
    merged = {**params, "$alt": "json;enum-encoding=int"}
    try:
        expected = client.http.build_request("GET", f"/v1/{path}", params=merged).url
    except httpx.InvalidURL:
        with pytest.raises(httpx.InvalidURL):
            client.url(path, merged)
        return
    assert str(client.url(path, merged)) == str(expected)
    assert client.url(path, merged) == expected


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    method=st.sampled_from(["GET", "POST", "PATCH", "DELETE"]),
    segments=st.lists(_URL_TEXT.filter(bool), min_size=1, max_size=4),
    params=st.dictionaries(_URL_TEXT, _URL_TEXT | st.integers(), max_size=3),
    body=st.none() | st.dictionaries(st.text(max_size=8), _JSON, max_size=4),
    resource=st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
    timeout=st.none() | st.floats(min_value=0.5, max_value=400),
)
def test_request_is_the_one_build_request_makes(
    method: str,
    segments: list[str],
    params: dict[str, object],
    body: dict[str, object] | None,
    resource: str,
    timeout: float | None,
) -> None:
    """CesClient.request builds directly what httpx's build_request made of the same call (before it was direct)."""
    client = CesClient("https://ces.us.rep.googleapis.com")
    path = "/".join(segments)
    try:
        expected = client.http.build_request(
            method,
            client.url(path, {**params, "$alt": "json;enum-encoding=int"}),
            json=body,
            headers={"x-goog-request-params": f"parent={resource}"},
            timeout=httpx.Timeout(timeout) if timeout else httpx.USE_CLIENT_DEFAULT,
        )
    except httpx.InvalidURL:
        return
    made = client.request(method, path, resource, params=params, body=body, timeout=timeout)
    assert (made.method, made.url, made.headers.raw, made.content, made.extensions) == (
        expected.method,
        expected.url,
        expected.headers.raw,
        expected.content,
        expected.extensions,
    )


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

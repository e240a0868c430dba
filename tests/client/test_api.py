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
from cesync.errors import AlreadyExists, NotFound

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

"""The client's typed surface: reads come back as Resource records, errors as the typed tree."""

from __future__ import annotations

import asyncio

import pytest

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

"""read_app: the app and its records, read at once; an app made between the two reads (by an
apply beside this one) has its records read again rather than fail the run."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from cesync.client import CesClient
from cesync.emulator.server import BackgroundServer
from cesync.errors import NotFound
from cesync.pipeline.readahead import read_app
from cesync.sync import record as record_module
from tests.sync.test_recordcache import target


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=True) as s:
        yield s


def test_the_records_of_an_app_made_between_the_two_reads_are_read_again(
    server: BackgroundServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The versions list said NOT_FOUND (no app yet), the resources' list found the app: the
    records are read again (two applies of a new app at once met this)."""
    env = target("made-between")
    real = record_module.read_records
    calls: list[int] = []

    async def first_before_the_app(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise NotFound(f"app {env.parent} not found")
        return await real(*args, **kwargs)

    monkeypatch.setattr(record_module, "read_records", first_before_the_app)

    async def go() -> None:
        async with CesClient(server.url) as client:
            await client.create(env.parent, "tools", "t1", {"clientFunction": {"name": "f"}})  # makes the app
            remote, view = await read_app(client, env)
            assert any(r.kind.singleton for r in remote)
            assert view.record is None

    asyncio.run(go())
    assert len(calls) == 2

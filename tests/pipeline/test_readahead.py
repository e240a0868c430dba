"""read_app: the app and its records, read at once; an app made between the two reads (by an
apply beside this one) has its records read again rather than fail the run. ReadAhead's client:
waited for (bounded) before the files load."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cesync import client as client_module
from cesync.client import CesClient
from cesync.core.scrubber import Scrubber
from cesync.emulator.server import BackgroundServer
from cesync.errors import NotFound
from cesync.pipeline.readahead import ReadAhead, read_app
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


def test_the_read_s_client_is_waited_for_once_made(server: BackgroundServer, tmp_path: Path) -> None:
    ahead = ReadAhead(target("waited"), tmp_path, server.url, scrubber=Scrubber())
    ahead.start()
    assert ahead.wait_connected(30)
    remote, _ = asyncio.run(ahead.result())
    assert [r.kind.singleton for r in remote] == [True]  # the app the emulator makes on first use, and no error


def test_a_client_that_cannot_be_made_ends_the_wait_and_says_why(
    server: BackgroundServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no client here")

    monkeypatch.setattr(client_module, "connect", refused)
    ahead = ReadAhead(target("refused"), tmp_path, server.url, scrubber=Scrubber())
    ahead.start()
    assert ahead.wait_connected(30)
    with pytest.raises(RuntimeError, match="no client here"):
        asyncio.run(ahead.result())


def test_a_client_slow_to_make_holds_the_files_no_longer_than_the_bound(
    server: BackgroundServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = client_module.connect
    release = threading.Event()

    def slow(*args: Any, **kwargs: Any) -> Any:
        release.wait(30)  # credentials found through a metadata server that takes its time
        return made(*args, **kwargs)

    monkeypatch.setattr(client_module, "connect", slow)
    ahead = ReadAhead(target("slow"), tmp_path, server.url, scrubber=Scrubber())
    ahead.start()
    try:
        assert not ahead.wait_connected(0.05)  # the files load meanwhile
    finally:
        release.set()
    assert ahead.wait_connected(30)
    asyncio.run(ahead.result())

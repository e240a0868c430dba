"""open_context reads the app ahead: as the render starts (after any fork), or, when a run of this
code left the repo's parse cache, as soon as cesync.yaml is read, before the files load."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cesync.core.scrubber import Scrubber
from cesync.emulator.server import BackgroundServer
from cesync.pipeline import context, readahead
from cesync.repo import cache, wholeload
from cesync.repo.repo import Repo
from tests.helpers import cesync

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from generate import generate

KEY = {"CESYNC_CACHE_KEY": "test-key-of-this-machine"}


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=True) as s:
        yield s


def _events(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What open_context does, in order: "files" (the whole-load cache asked), "render", "read"."""
    events: list[str] = []
    start, render, find = readahead.ReadAhead.start, Repo.render, wholeload.find

    def started(self: readahead.ReadAhead) -> None:
        events.append("read")
        start(self)

    def rendered(self: Repo, *args: object, **kwargs: object) -> object:
        events.append("render")
        return render(self, *args, **kwargs)  # type: ignore[arg-type]

    def found(*args: object) -> object:
        events.append("files")
        return find(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(readahead.ReadAhead, "start", started)
    monkeypatch.setattr(Repo, "render", rendered)
    monkeypatch.setattr(wholeload, "find", found)
    return events


def _open(root: Path, server: BackgroundServer) -> None:
    ctx = context.open_context(root, "dev", server.url, read_ahead=True, scrubber=Scrubber())
    assert ctx.read_ahead is not None
    ctx.read_ahead.cancel()


def test_the_app_is_read_before_the_files_load_once_a_run_left_its_cache(
    tmp_path: Path, server: BackgroundServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "MIN_ENTRIES", 0)
    monkeypatch.setenv("CESYNC_CACHE_KEY", KEY["CESYNC_CACHE_KEY"])
    root = generate(tmp_path / "repo", 12, agents=True)
    events = _events(monkeypatch)
    orders = []
    for _ in range(2):  # the first run leaves the cache, the second reads the app before its files
        events.clear()
        _open(root, server)
        orders.append(list(events))
    assert orders == [["files", "render", "read"], ["read", "files", "render"]]
    (root / "tools" / "t00000.yaml").write_text((root / "tools" / "t00000.yaml").read_text() + "# changed\n")
    events.clear()
    _open(root, server)  # a file changed: the read still starts first (the files then load in this process)
    assert events == ["read", "files", "render"]
    done = cesync("plan", "--dir", str(root), "--env", "dev", "--endpoint", server.url, env=KEY)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("left", ["none", "another code's", "off"])
def test_without_this_code_s_cache_the_app_is_read_as_the_render_starts(
    tmp_path: Path, server: BackgroundServer, monkeypatch: pytest.MonkeyPatch, left: str
) -> None:
    monkeypatch.setattr(cache, "MIN_ENTRIES", 0)
    monkeypatch.setenv("CESYNC_CACHE_KEY", KEY["CESYNC_CACHE_KEY"])
    root = generate(tmp_path / "repo", 12, agents=True)
    _open(root, server)  # leaves the cache
    if left == "none":
        (root / cache.CACHE_FILE).unlink()
    elif left == "another code's":  # an upgrade: every file is parsed again, on two cores from THRESHOLD files
        data = (root / cache.CACHE_FILE).read_bytes()
        (root / cache.CACHE_FILE).write_bytes(data.replace(b"cesync-parse-cache 2 ", b"cesync-parse-cache 1 ", 1))
    else:
        monkeypatch.setenv("CESYNC_CACHE", "off")
    events = _events(monkeypatch)
    _open(root, server)
    assert events[-2:] == ["render", "read"]


def test_the_read_s_thread_has_ended_once_its_answer_is_taken(
    tmp_path: Path, server: BackgroundServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan's diffs fork for a large app (repo/parallel.py), never while another thread runs:
    the read's thread, its name lookups' included, is gone when plan has the app."""
    import asyncio
    import threading
    import time

    made = asyncio.new_event_loop

    def slow_to_close() -> asyncio.AbstractEventLoop:
        """A loop whose close takes a while after the answer is given: the window a fork would fall in."""
        loop = made()
        close = loop.close

        def closing() -> None:
            time.sleep(0.3)
            close()

        loop.close = closing  # type: ignore[method-assign]
        return loop

    monkeypatch.setattr(readahead.asyncio, "new_event_loop", slow_to_close)
    root = generate(tmp_path / "repo", 12, agents=True)
    before = threading.active_count()
    ctx = context.open_context(root, "dev", server.url, read_ahead=True, scrubber=Scrubber())
    assert ctx.read_ahead is not None
    mine = made()
    try:
        remote, _ = mine.run_until_complete(ctx.read_ahead.result())
    finally:
        mine.close()
    assert threading.active_count() == before
    assert remote  # the app as read (auto-created)

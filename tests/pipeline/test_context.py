"""open_context reads the app ahead: as the render starts, or as soon as the files are known to
be the run before's (nothing is left to parse, nor to fork for)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cesync.core.scrubber import Scrubber
from cesync.emulator.server import BackgroundServer
from cesync.pipeline import context, readahead
from cesync.repo import cache
from cesync.repo.repo import Repo
from tests.helpers import cesync

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from generate import generate

KEY = {"CESYNC_CACHE_KEY": "test-key-of-this-machine"}


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=True) as s:
        yield s


def test_the_app_is_read_from_when_the_files_are_the_run_before_s(
    tmp_path: Path, server: BackgroundServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "MIN_ENTRIES", 0)
    monkeypatch.setenv("CESYNC_CACHE_KEY", KEY["CESYNC_CACHE_KEY"])
    root = generate(tmp_path / "repo", 12, agents=True)
    events: list[str] = []
    start, render = readahead.ReadAhead.start, Repo.render

    def started(self: readahead.ReadAhead) -> None:
        events.append("read")
        start(self)

    def rendered(self: Repo, *args: object, **kwargs: object) -> object:
        events.append("render")
        return render(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(readahead.ReadAhead, "start", started)
    monkeypatch.setattr(Repo, "render", rendered)
    orders = []
    for _ in range(2):  # the first run keeps the files, the second finds them
        events.clear()
        ctx = context.open_context(root, "dev", server.url, read_ahead=True, scrubber=Scrubber())
        assert ctx.read_ahead is not None
        ctx.read_ahead.cancel()
        orders.append(list(events))
    assert orders == [["render", "read"], ["read", "render"]]
    done = cesync("plan", "--dir", str(root), "--env", "dev", "--endpoint", server.url, env=KEY)
    assert done.returncode == 0, done.stdout + done.stderr

"""Reading the app in a thread of its own while the repo renders (the read waits on the network,
rendering on the CPU), and read_app: the app's resources and cesync's last applied record."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ..api.resource import Resource
from ..core.scrubber import Scrubber
from ..errors import NotFound
from ..repo.repo import EnvTarget
from ..sync.remote import read_remote

if TYPE_CHECKING:  # the HTTP client loads when a command first uses it (see client/__init__.py)
    from ..client.api import CesClient
    from ..sync.record import RecordView
    from ..sync.recordcache import RecordCache

log = logging.getLogger(__name__)

JOIN_SECONDS = 10
# The longest this process waits for the read to have its client (wait_connected): its imports
# take 0.1-0.2 s; a client slower to make (credentials found through a metadata server) is left
# to make itself beside the files' load.
CONNECT_WAIT_SECONDS = 0.5


class ReadAhead:
    """read_remote in a thread with its own event loop and client, started once rendering is.

    What it finds is given to the plan after rendering: its retry notices are held until
    then, its error is raised then (a repo problem is reported first, and alone), and a
    failed render cancels it.
    """

    def __init__(self, env: EnvTarget, root: Path, endpoint: str | None, owner: str = "", *, scrubber: Scrubber) -> None:
        self._env, self._root, self._endpoint, self._owner = env, root, endpoint, owner
        self._scrubber = scrubber  # the run's: its notices are printed through it
        self._notices: list[str] = []
        self._done: concurrent.futures.Future[AppRead] = concurrent.futures.Future()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[AppRead] | None = None
        self._begun = threading.Event()
        self._connected = threading.Event()  # its client made, or failed to be
        self._thread = threading.Thread(target=self._run, name="cesync-read-ahead", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wait_connected(self, timeout: float = CONNECT_WAIT_SECONDS) -> bool:
        """Wait (at most timeout) until the read has made its client: whether it has.

        A plan whose files load from the cache waits on the read and nothing else: the read is
        its longest path, and before its first request it imports the HTTP client (0.2 s of
        CPU). Beside the files' load those imports share the interpreter's lock and take twice
        as long; done first, the files load while the read waits on the network (a warm plan of
        10,000 resources ends 0.07 s sooner)."""
        return self._connected.wait(timeout)

    def _run(self) -> None:
        self._done.set_running_or_notify_cancel()
        loop: asyncio.AbstractEventLoop | None = None
        try:
            loop = asyncio.new_event_loop()
            self._loop, self._task = loop, loop.create_task(self._read())
            self._begun.set()
            self._done.set_result(loop.run_until_complete(self._task))
        except BaseException as exc:
            self._done.set_exception(exc)
        finally:
            self._connected.set()
            self._begun.set()  # cancel() waits for this: set whatever happened
            if loop is not None:
                with contextlib.suppress(Exception):  # its threads (name lookups) end with it, as asyncio.run's do
                    loop.run_until_complete(loop.shutdown_default_executor())
                loop.close()

    async def _read(self) -> AppRead:
        from ..client import connect
        from ..sync.recordcache import open_record_cache

        try:
            client = connect(self._env, self._root, override=self._endpoint, scrubber=self._scrubber)
        finally:
            self._connected.set()
        client.notify = self._notices.append
        async with client:
            return await read_app(client, self._env, self._owner, open_record_cache(self._root))

    async def result(self) -> AppRead:
        """The app as read; awaited, not joined: a Ctrl-C (asyncio.run cancels the awaiting task)
        cancels the read and ends plan at once, as when plan read the app itself."""
        from ..client.api import stderr_line

        read = asyncio.wrap_future(self._done)
        if not read.done():
            log.debug("the repo is rendered; waiting for the app's read")
        try:
            await asyncio.wait([read])  # not `await read`: the notices come before its error
        except asyncio.CancelledError:
            read.cancel()
            self.cancel()
            raise
        self._thread.join(JOIN_SECONDS)  # it ends as it closes its loop: a process with no thread may fork (repo/parallel.py)
        for line in self._notices:
            stderr_line(line, self._scrubber)
        return read.result()

    def cancel(self) -> None:
        if not self._thread.is_alive():
            return
        self._begun.wait()
        if self._loop is not None and self._task is not None:
            with contextlib.suppress(RuntimeError):  # the loop has finished and closed meanwhile
                self._loop.call_soon_threadsafe(self._task.cancel)
        self._thread.join(timeout=10)


AppRead = tuple[list[Resource], "RecordView"]


async def read_app(client: CesClient, env: EnvTarget, owner: str = "", cache: RecordCache | None = None) -> AppRead:
    """The app's resources and what its records say (sync.record.read_records; none without an app).

    cache: the repo's record cache (sync.recordcache), which may stand the app in for the
    record's snapshot; None: the record's version is read whole."""
    from ..repo.keys import record_secret
    from ..sync.record import RecordView, read_records, settle_base

    # Both at once: the records are two more round trips (the versions' heads, one version whole)
    # that need not wait for the lists. Without an app the versions list fails too, and says nothing.
    remote, view = await asyncio.gather(
        read_remote(client, env.parent), read_records(client, env, owner, cache), return_exceptions=True
    )
    if isinstance(remote, BaseException):
        raise remote
    if not any(r.kind.singleton for r in remote):
        return remote, RecordView(key_from=record_secret()[0])  # no app: no versions either
    if isinstance(view, NotFound):  # the app was made between the two reads (an apply beside this one): read again
        view = await read_records(client, env, owner, cache)
    if isinstance(view, BaseException):
        raise view
    return remote, await settle_base(client, env, owner, view, remote, cache) if cache is not None else view

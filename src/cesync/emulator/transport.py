"""Running the emulator in process behind an httpx transport (the embedded backend)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import httpx
from starlette.applications import Starlette

from .app import create_app
from .faults import ConnectionDropped, FaultConfig
from .quota import QuotaConfig
from .store import Store

__all__ = ["EmbeddedTransport"]


class EmbeddedTransport(httpx.AsyncBaseTransport):
    """httpx talks to the emulator app directly; a dropped connection looks like one."""

    def __init__(
        self,
        app: Starlette | None = None,
        *,
        state: Path | None = None,
        faults: FaultConfig | None = None,
        apps: Iterable[str] = (),
        auto_create_apps: bool = False,
        quota: QuotaConfig | None = None,
        close_with_client: bool = False,
    ) -> None:
        """apps: created at start (as ``cesync emulator --app``); any other app exists once created
        (auto_create_apps: on first use, for tests about something else). close_with_client: the
        state closes with the one client this transport serves (a command's), not when the
        garbage collector reaches it, which could be in the middle of a later command."""
        store = Store(state, auto_create_apps=auto_create_apps)
        for name in apps:
            store.app(name, create=True)
        self.app = app or create_app(store, faults, quota=quota)
        self._inner = httpx.ASGITransport(app=self.app)
        self._store = store if close_with_client else None

    async def aclose(self) -> None:
        await self._inner.aclose()
        if self._store is not None:
            self._store.close()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return await self._inner.handle_async_request(request)
        except ConnectionDropped as exc:
            raise httpx.RemoteProtocolError(str(exc), request=request) from None

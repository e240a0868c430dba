"""Running the emulator in process behind an httpx transport (the embedded backend)."""

from __future__ import annotations

from pathlib import Path

import httpx
from starlette.applications import Starlette

from .app import create_app
from .faults import ConnectionDropped, FaultConfig
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
        auto_create_apps: bool = True,
    ) -> None:
        self.app = app or create_app(Store(state, auto_create_apps=auto_create_apps), faults)
        self._inner = httpx.ASGITransport(app=self.app)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return await self._inner.handle_async_request(request)
        except ConnectionDropped as exc:
            raise httpx.RemoteProtocolError(str(exc), request=request) from None

"""The HTTP transport: httpx's, with a network backend that keeps each socket at hand.

httpcore's pool asks every idle connection whether its socket became readable (the
server closed it) each time a request is queued or a response closed. Through anyio
that question rebuilds the stream's attribute table and calls getpeername, about a
tenth of the client's CPU per request at 16 parallel writes. The streams here answer it
from the socket kept when the connection opened; everything else is anyio's, unchanged.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx
from httpcore._utils import is_socket_readable

__all__ = ["http_transport"]


class _Stream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._socket: socket.socket | None = inner.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        return _Stream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return is_socket_readable(self._socket)
        if info == "socket":
            return self._socket
        return self._inner.get_extra_info(info)


class _Backend(httpcore.AsyncNetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._inner.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def http_transport(limits: httpx.Limits, *, tls: bool = True) -> httpx.AsyncHTTPTransport:
    """httpx's default transport with the backend above (kept as is if httpcore's pool changes shape).

    tls=False, for a plain-http endpoint (an emulator): loading the CA bundle into an SSL
    context costs tens of milliseconds per command, so the context given instead loads
    none; it still requires a verified certificate, so it could open no TLS connection.
    """
    verify: ssl.SSLContext | bool = True if tls else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    transport = httpx.AsyncHTTPTransport(limits=limits, verify=verify)
    pool = getattr(transport, "_pool", None)  # httpx exposes no network_backend option
    if isinstance(pool, httpcore.AsyncConnectionPool) and hasattr(pool, "_network_backend"):
        pool._network_backend = _Backend()
    return transport

"""The HTTP transport: httpx's, with a network backend that keeps each socket at hand.

httpcore's pool asks every idle connection whether its socket became readable (the
server closed it) each time a request is queued or a response closed. Through anyio
that question rebuilds the stream's attribute table and calls getpeername, about a
tenth of the client's CPU per request at 16 parallel writes. The streams here answer it
from the socket kept when the connection opened; everything else is anyio's, unchanged.

The same bookkeeping also counted the pool's connections once per idle connection
(quadratic: about 500 calls of is_idle per request at 16 in flight); _Pool takes the
count directly and decides exactly as httpcore 1.0 does.
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


class _Pool(httpcore.AsyncConnectionPool):
    def _assign_requests_to_connections(self) -> list[httpcore.AsyncConnectionInterface]:
        """httpcore 1.0.x's own, but for the count (``len([c.is_idle() for c in conns])``
        there, which is the number of connections, built anew for each idle one)."""
        closing_connections = []
        for connection in list(self._connections):
            if connection.is_closed():
                self._connections.remove(connection)
            elif connection.has_expired() or (connection.is_idle() and len(self._connections) > self._max_keepalive_connections):
                self._connections.remove(connection)
                closing_connections.append(connection)

        queued_requests = [request for request in self._requests if request.is_queued()]
        for pool_request in queued_requests:
            origin = pool_request.request.url.origin
            available_connections = [
                connection
                for connection in self._connections
                if connection.can_handle_request(origin) and connection.is_available()
            ]
            if available_connections:
                pool_request.assign_to_connection(available_connections[0])
            elif len(self._connections) < self._max_connections:
                connection = self.create_connection(origin)
                self._connections.append(connection)
                pool_request.assign_to_connection(connection)
            else:
                idle_connections = [connection for connection in self._connections if connection.is_idle()]
                if idle_connections:
                    connection = idle_connections[0]
                    self._connections.remove(connection)
                    closing_connections.append(connection)
                    connection = self.create_connection(origin)
                    self._connections.append(connection)
                    pool_request.assign_to_connection(connection)
        return closing_connections


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
        if type(pool) is httpcore.AsyncConnectionPool and httpcore.__version__.startswith("1.0."):
            pool.__class__ = _Pool  # the method above is 1.0's; a later httpcore keeps its own
    return transport

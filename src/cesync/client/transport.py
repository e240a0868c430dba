"""The HTTP transport: httpx's and httpcore's, with a cheaper pool and stream around them.

httpcore 1.0's pool re-examined every connection each time a request was queued and
each time a response closed (closed? expired? idle? socket readable?): at 16 requests in
flight about 90 checks and 60 poll calls per request. _Pool hands out connections in
O(1) and checks only the one it hands out, with httpcore's own checks and limits.

The streams keep their socket for that readability check (anyio rebuilt its attribute
table and called getpeername each time), and send a request in one piece: httpcore
writes a request's head and body apart, two system calls here and two wake-ups of the
server. Reading, TLS, timeouts and errors are anyio's and httpcore's, unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections import deque
from collections.abc import AsyncIterator, Iterable
from typing import Any, cast

import anyio
import httpcore
import httpx
from httpcore._utils import is_socket_readable

__all__ = ["http_transport"]

HOLD_LIMIT = 256 * 1024  # a larger request body is sent as it comes


class _Stream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._socket: socket.socket | None = inner.get_extra_info("socket")
        self._held = b""  # written, not yet sent: see write
        self._held_timeout: float | None = None

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._held:
            # as httpcore does when sending a request fails: the server may have answered already
            with contextlib.suppress(httpcore.WriteError):
                await self._send_held()
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Held until the next read: httpcore writes a request's head and body apart, and
        sent apart they cost two system calls here and two wake-ups of the server; held,
        the request leaves in one piece, before its answer is read. The write timeout
        applies to that send."""
        self._held += buffer
        self._held_timeout = timeout
        if len(self._held) >= HOLD_LIMIT:
            await self._send_held()

    async def _send_held(self) -> None:
        buffer, self._held = self._held, b""
        await self._inner.write(buffer, self._held_timeout)

    async def aclose(self) -> None:
        self._held = b""  # a request not followed by a read was abandoned: the connection closes with it
        await self._inner.aclose()

    async def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        if self._held:
            await self._send_held()
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
    """httpcore's pool, configured by httpx as usual, handing out connections in O(1).

    httpcore 1.0's pool re-examines every connection (closed? expired? idle? is its
    socket readable?) each time a request is queued and each time a response is
    closed: at 16 in flight that is about 90 checks and 60 poll calls per request, a
    third of the client's CPU. Here a request takes the most recently used idle
    connection to its origin (checked as httpcore checks it: closed, keep-alive
    expired, socket readable) or opens one through httpcore's own ``create_connection``
    (same SSL context, backend, retries, keep-alive expiry), and a closed response
    gives it back. The limits are httpcore's: at most ``max_connections`` open, at most
    ``max_keepalive_connections`` idle, a request waits at most the pool timeout
    (``httpcore.PoolTimeout``). Requests and responses themselves are httpcore's
    connections', untouched. asyncio only (cesync runs on asyncio).
    """

    def _setup(self) -> None:
        self._idle: list[httpcore.AsyncConnectionInterface] = []
        self._busy: set[httpcore.AsyncConnectionInterface] = set()
        # requests waiting for a connection, first come first served: each is handed one, or None to look again
        self._waiters: deque[tuple[httpcore.Origin, asyncio.Future[httpcore.AsyncConnectionInterface | None]]] = deque()

    @property
    def connections(self) -> list[httpcore.AsyncConnectionInterface]:
        return [*self._idle, *self._busy]

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        scheme = request.url.scheme.decode()
        if scheme == "":
            raise httpcore.UnsupportedProtocol("Request URL is missing an 'http://' or 'https://' protocol.")
        if scheme not in ("http", "https", "ws", "wss"):
            raise httpcore.UnsupportedProtocol(f"Request URL has an unsupported protocol '{scheme}://'.")
        timeout = request.extensions.get("timeout", {}).get("pool", None)
        while True:
            connection = await self._checkout(request.url.origin, timeout)
            try:
                response = await connection.handle_async_request(request)
            except httpcore.ConnectionNotAvailable:
                await _close(self._release(connection))  # as httpcore does: try another connection
                continue
            except BaseException:
                await _close(self._release(connection))
                raise
            return httpcore.Response(
                status=response.status,
                headers=response.headers,
                content=_Returning(response.stream, self, connection),
                extensions=response.extensions,
            )

    async def _checkout(self, origin: httpcore.Origin, timeout: float | None) -> httpcore.AsyncConnectionInterface:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        woken = False
        while True:
            closing: list[httpcore.AsyncConnectionInterface] = []
            found = None
            if woken or not self._waiters:  # else those who came first are served first
                found = self._take_idle(origin, closing)
                if found is None and len(self._idle) + len(self._busy) >= self._max_connections and self._idle:
                    closing.append(self._idle.pop(0))  # an idle connection to another origin makes room
                if found is None and len(self._idle) + len(self._busy) < self._max_connections:
                    found = self.create_connection(origin)
            if found is not None:
                self._busy.add(found)
            await _close(closing)
            if found is not None:
                return found
            waiter: asyncio.Future[httpcore.AsyncConnectionInterface | None] = loop.create_future()
            if woken:
                self._waiters.appendleft((origin, waiter))  # keeps its turn
            else:
                self._waiters.append((origin, waiter))
            try:
                if deadline is None:
                    handed = await waiter
                else:
                    handed = await asyncio.wait_for(waiter, max(0.0, deadline - loop.time()))
            except BaseException as exc:
                if waiter.done() and not waiter.cancelled():  # handed something, but leaving: pass it on
                    await _close(self._release(waiter.result()) if waiter.result() is not None else self._wake(None))
                elif (origin, waiter) in self._waiters:
                    self._waiters.remove((origin, waiter))
                if isinstance(exc, asyncio.TimeoutError):
                    raise httpcore.PoolTimeout() from None
                raise
            if handed is not None:
                return handed
            woken = True

    def _take_idle(
        self, origin: httpcore.Origin, closing: list[httpcore.AsyncConnectionInterface]
    ) -> httpcore.AsyncConnectionInterface | None:
        """The most recently used idle connection to origin that is still good (checked as httpcore checks)."""
        for i in range(len(self._idle) - 1, -1, -1):
            connection = self._idle[i]
            if not connection.can_handle_request(origin):
                continue
            del self._idle[i]
            if connection.is_closed():
                continue
            if connection.has_expired() or not connection.is_available():
                closing.append(connection)
                continue
            return connection
        return None

    def _release(self, connection: httpcore.AsyncConnectionInterface | None) -> list[httpcore.AsyncConnectionInterface]:
        """A connection is done with (None: a place freed): hand it to the first waiter, keep it idle, or close it."""
        self._busy.discard(connection)
        closing: list[httpcore.AsyncConnectionInterface] = []
        if connection is not None and not connection.is_closed():
            if connection.is_idle() and (self._waiters or len(self._idle) < self._max_keepalive_connections):
                return self._wake(connection)
            closing.append(connection)
        return closing + self._wake(None)

    def _wake(self, connection: httpcore.AsyncConnectionInterface | None) -> list[httpcore.AsyncConnectionInterface]:
        while self._waiters:
            origin, waiter = self._waiters.popleft()
            if waiter.done():
                continue
            if connection is not None and connection.can_handle_request(origin):
                self._busy.add(connection)
                waiter.set_result(connection)
                return []
            waiter.set_result(None)  # a place is free: it looks again
            break
        if connection is not None:
            self._idle.append(connection)
        return []

    async def aclose(self) -> None:
        closing = [*self._idle, *self._busy]
        self._idle, self._busy = [], set()
        await _close(closing)


async def _close(connections: list[httpcore.AsyncConnectionInterface]) -> None:
    if connections:
        with anyio.CancelScope(shield=True):
            for connection in connections:
                await connection.aclose()


class _Returning:
    """A response body that gives its connection back to the pool once closed (httpcore's PoolByteStream)."""

    def __init__(self, stream: Any, pool: _Pool, connection: httpcore.AsyncConnectionInterface) -> None:
        self._stream = stream
        self._pool = pool
        self._connection = connection
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for part in self._stream:
                yield part
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            with anyio.CancelScope(shield=True):
                if hasattr(self._stream, "aclose"):
                    await self._stream.aclose()
            await _close(self._pool._release(self._connection))


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
            pool.__class__ = _Pool  # written against 1.0's internals; a later httpcore keeps its own pool
            cast(_Pool, pool)._setup()
    return transport

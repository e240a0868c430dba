"""The HTTP transport: HTTP/1.1 on asyncio protocols and h11, with a keep-alive pool.

Why not httpx's default transport (httpcore)? Per request it converts the request
and response between httpx's and httpcore's models, enters a dozen anyio cancel
scopes, locks and trace contexts, and reads through anyio streams: about two thirds
of the client's CPU per call, on a machine where client and server share two cores
(``benchmarks/client_cpu.py``). This transport speaks the same protocol with the
same parser and serializer (h11, which httpcore uses too, so the bytes on the wire
are the same: tests/client/test_transport.py compares them), over an asyncio
``Protocol`` that hands received bytes straight to h11.

What it keeps of httpcore's behaviour: the timeouts of ``httpx.Timeout`` (connect,
read, write, pool) and httpx's exception types (ConnectError/ConnectTimeout before
anything was sent, ReadError/ReadTimeout/WriteError/WriteTimeout/RemoteProtocolError
after); ``httpx.Limits`` (at most ``max_connections`` open, at most
``max_keepalive_connections`` idle, kept ``keepalive_expiry`` seconds; a request
waits for a connection at most the pool timeout, first come first served); an idle
connection the server closed (or sent anything to) is never reused; TLS with the
context httpx would make (ALPN http/1.1, as httpcore sets it). HTTP/2 and proxies
are not spoken here: cesync asks for no HTTP/2, and a proxy from the environment is
reached through httpx's own transport (``proxy_mounts``).
"""

from __future__ import annotations

import asyncio
import select
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import h11
import httpx

from ..errors import CesyncError

__all__ = ["Http11Transport", "http_transport", "proxy_mounts"]

HOLD_LIMIT = 256 * 1024  # a request is written in one piece up to this size, then as it comes

Origin = tuple[str, str, int]


def http_transport(limits: httpx.Limits, *, tls: bool = True) -> Http11Transport:
    """The transport for a CesClient.

    tls=False, for a plain-http endpoint (an emulator): loading the CA bundle into an SSL
    context costs tens of milliseconds per command, so the context given instead loads
    none; it still requires a verified certificate, so it could open no TLS connection.
    """
    context = httpx.create_ssl_context() if tls else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return Http11Transport(context, limits)


def proxy_mounts(limits: httpx.Limits) -> dict[str, httpx.AsyncBaseTransport | None]:
    """The proxies of the environment (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY) mounted as
    httpx mounts them, for the client to pass as ``mounts``: httpx reads them only when it makes
    its own transport, not when given one. A proxied origin goes through httpx's own transport
    with that proxy; a NO_PROXY one maps to None, the client's transport (this one)."""
    from httpx._utils import get_environment_proxies  # httpx's reading of the variables (internal, there since 0.18)

    mounts: dict[str, httpx.AsyncBaseTransport | None] = {}
    for pattern, url in get_environment_proxies().items():
        try:
            mounts[pattern] = None if url is None else httpx.AsyncHTTPTransport(proxy=url, limits=limits)
        except (ImportError, ValueError) as exc:  # socks5:// without socksio, a scheme httpx has no transport for
            raise CesyncError(
                f"cannot use the proxy set for {pattern} in the environment (HTTP_PROXY, HTTPS_PROXY or ALL_PROXY): "
                f"{exc}; fix or unset the variable"
            ) from None
    return mounts


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: h11's state machine fed by the event loop as bytes arrive."""

    def __init__(self, origin: Origin) -> None:
        self.origin = origin
        self.h11 = h11.Connection(h11.CLIENT)
        self.transport: asyncio.Transport | None = None
        self.closed = False  # by either side: never reused
        self.error: BaseException | None = None
        self.idle_since = 0.0
        self._waiter: asyncio.Future[None] | None = None  # a read or a drain waiting for the loop
        self._paused = False

    # --- asyncio.Protocol: called by the event loop ---------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.h11.receive_data(data)
        self._wake()

    def eof_received(self) -> bool:
        self.closed = True
        self.h11.receive_data(b"")
        self._wake()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed:
            self.closed = True
            self.error = exc
            if exc is None:  # a clean close: h11 decides whether the answer was complete
                self.h11.receive_data(b"")
        self._wake()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    # --- used by the transport --------------------------------------------------------

    async def _wait(self, timeout: float | None, on_timeout: type[httpx.TimeoutException]) -> None:
        """Until the loop wakes us (bytes, end of data, writable again), at most timeout seconds.

        A timer on the loop, not asyncio.wait_for: no task per wait, and a timeout is
        the error httpx names for it."""
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = None
        if timeout is not None:
            timer = loop.call_later(timeout, _expire, waiter, on_timeout)
        try:
            await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()

    async def write(self, data: bytes, timeout: float | None) -> None:
        if self.closed or self.transport is None or self.transport.is_closing():
            raise httpx.WriteError(_why(self.error, "the connection is closed"))
        self.transport.write(data)
        while self._paused and not self.closed:  # the kernel's buffer is full: wait for the server to read
            await self._wait(timeout, httpx.WriteTimeout)

    async def next_event(self, timeout: float | None) -> Any:
        """The next h11 event from the server, waiting at most timeout seconds for bytes."""
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise httpx.RemoteProtocolError(str(exc)) from None
            if event is not h11.NEED_DATA:
                return event
            if self.closed:  # a clean end reaches h11 (above); a broken connection ends here
                raise httpx.ReadError(_why(self.error, "the connection was lost"))
            await self._wait(timeout, httpx.ReadTimeout)

    def reusable(self, expiry: float | None = None, *, probe: bool = True) -> bool:
        """As httpcore checks an idle connection before reuse: open, idle, not expired, nothing unread."""
        if self.closed or self.transport is None or self.h11.our_state is not h11.IDLE:
            return False
        if self.h11.their_state is not h11.IDLE or self.h11.trailing_data != (b"", False):
            return False
        if expiry is not None and time.monotonic() - self.idle_since > expiry:
            return False
        if not probe:
            return True
        sock = self.transport.get_extra_info("socket")
        # readable while idle: the server closed it (or broke the protocol), and the loop has not run yet
        return sock is None or not _readable(sock)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


def _readable(sock: Any) -> bool:
    """Has the socket something to read (or an end)? poll where there is one: select cannot
    take a descriptor above 1023 (as httpcore checks it)."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([sock], [], [], 0)[0])


def _expire(waiter: asyncio.Future[None], error: type[httpx.TimeoutException]) -> None:
    if not waiter.done():
        waiter.set_exception(error("timed out"))


def _why(exc: BaseException | None, default: str) -> str:
    return f"{type(exc).__name__}: {exc}" if exc is not None else default


class Http11Transport(httpx.AsyncBaseTransport):
    """HTTP/1.1 requests over a pool of keep-alive connections (see the module docstring).

    asyncio only (cesync runs on asyncio), like the event-loop protocol it rests on.
    """

    def __init__(self, ssl_context: ssl.SSLContext, limits: httpx.Limits) -> None:
        ssl_context.set_alpn_protocols(["http/1.1"])
        self.ssl_context = ssl_context
        self.max_connections = limits.max_connections or 1 << 30
        self.max_keepalive = limits.max_keepalive_connections or 0
        self.keepalive_expiry = limits.keepalive_expiry
        self._idle: list[_Connection] = []  # most recently used last
        self._open = 0  # connections open or being opened, idle or not
        self._closed = False
        # requests waiting for a connection, first come first served: each is handed a
        # connection to its origin, or None: a place is free, open one
        self._waiters: deque[tuple[Origin, asyncio.Future[_Connection | None]]] = deque()

    @property
    def connections(self) -> int:
        """How many connections are open (or being opened) now."""
        return self._open

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout", {})
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"Request URL has an unsupported protocol '{url.scheme}://'.")
        origin = (url.scheme, url.raw_host.decode("ascii"), url.port or (443 if url.scheme == "https" else 80))
        connection = await self._checkout(origin, timeouts.get("pool"))
        try:
            if connection is None:
                connection = await self._connect(origin, timeouts.get("connect"), request)
            return await self._exchange(connection, request, timeouts)
        except BaseException:
            self._release(connection, reuse=False)
            raise

    async def _exchange(self, connection: _Connection, request: httpx.Request, timeouts: dict[str, Any]) -> httpx.Response:
        """Send the request (head and body in one write when small) and read the answer's head."""
        write_timeout, read_timeout = timeouts.get("write"), timeouts.get("read")
        try:
            head = h11.Request(method=request.method, target=request.url.raw_path, headers=request.headers.raw)
            data = connection.h11.send(head) or b""
            async for chunk in request.stream:  # type: ignore[union-attr]
                data += connection.h11.send(h11.Data(data=chunk)) or b""
                if len(data) >= HOLD_LIMIT:
                    await connection.write(data, write_timeout)
                    data = b""
            data += connection.h11.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError as exc:
            raise httpx.LocalProtocolError(str(exc)) from None
        await connection.write(data, write_timeout)
        while True:
            event = await connection.next_event(read_timeout)
            if isinstance(event, h11.Response):
                break
            if isinstance(event, h11.ConnectionClosed):
                raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
            # an InformationalResponse (100 Continue): the answer follows
        return httpx.Response(
            status_code=event.status_code,
            headers=event.headers.raw_items(),
            stream=_Body(self, connection, read_timeout),
            extensions={"http_version": b"HTTP/" + event.http_version, "reason_phrase": event.reason},
        )

    async def _connect(self, origin: Origin, timeout: float | None, request: httpx.Request) -> _Connection:
        scheme, host, port = origin
        loop = asyncio.get_running_loop()
        connection = _Connection(origin)
        tls = scheme == "https"
        sni = request.extensions.get("sni_hostname", host) if tls else None
        try:
            await asyncio.wait_for(
                loop.create_connection(
                    lambda: connection,
                    host,
                    port,
                    ssl=self.ssl_context if tls else None,
                    server_hostname=sni,
                    happy_eyeballs_delay=0.25,  # IPv6 and IPv4 addresses tried side by side, as anyio did
                ),
                timeout,
            )
        except asyncio.TimeoutError:
            raise httpx.ConnectTimeout(f"could not connect within {timeout}s") from None
        except OSError as exc:  # refused, unreachable, name not resolved, certificate not verified
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from None
        return connection

    # --- the pool -------------------------------------------------------------------------

    async def _checkout(self, origin: Origin, timeout: float | None) -> _Connection | None:
        """A reusable idle connection to origin, or None: a place is reserved, open a connection."""
        if not self._waiters:  # else those who came first are served first
            for i in range(len(self._idle) - 1, -1, -1):
                connection = self._idle[i]
                if connection.origin != origin:
                    continue
                del self._idle[i]
                if connection.reusable(self.keepalive_expiry):
                    return connection
                self._drop(connection)
            if self._open >= self.max_connections and self._idle:
                self._drop(self._idle.pop(0))  # an idle connection to another origin makes room
            if self._open < self.max_connections:
                self._open += 1
                return None
        waiter: asyncio.Future[_Connection | None] = asyncio.get_running_loop().create_future()
        self._waiters.append((origin, waiter))
        try:
            return await asyncio.wait_for(waiter, timeout)
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self._release(waiter.result(), reuse=True)  # handed one while leaving: pass it on
            elif (origin, waiter) in self._waiters:
                self._waiters.remove((origin, waiter))
            if isinstance(exc, asyncio.TimeoutError):
                raise httpx.PoolTimeout(f"no connection free within {timeout}s") from None
            raise

    def _release(self, connection: _Connection | None, *, reuse: bool) -> None:
        """Done with a connection (None: with a reserved place): to the first waiter, idle, or closed."""
        if connection is None:
            self._open -= 1  # a place reserved and not used (the connection could not be opened)
        elif self._closed or not (reuse and connection.reusable(probe=False)):
            self._drop(connection)
            connection = None
        while self._waiters:
            origin, waiter = self._waiters.popleft()
            if waiter.done():
                continue
            if connection is not None and connection.origin != origin:
                self._drop(connection)
                connection = None
            if connection is None:
                self._open += 1  # the freed place is the waiter's
            waiter.set_result(connection)
            return
        if connection is not None:
            if len(self._idle) < self.max_keepalive:
                connection.idle_since = time.monotonic()
                self._idle.append(connection)
            else:
                self._drop(connection)

    def _drop(self, connection: _Connection) -> None:
        connection.close()
        self._open -= 1

    async def aclose(self) -> None:
        self._closed = True  # connections still answering close when they are done
        idle, self._idle = self._idle, []
        for connection in idle:
            self._drop(connection)


class _Body(httpx.AsyncByteStream):
    """An answer's body as it arrives; closed, it gives the connection back (or closes it if unfinished)."""

    def __init__(self, transport: Http11Transport, connection: _Connection, timeout: float | None) -> None:
        self._transport = transport
        self._connection: _Connection | None = connection
        self._timeout = timeout
        self._complete = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self._connection
        if connection is None:
            raise httpx.StreamClosed()
        try:
            while True:
                event = await connection.next_event(self._timeout)
                if isinstance(event, h11.Data):
                    yield bytes(event.data)
                elif isinstance(event, h11.EndOfMessage):
                    self._complete = True
                    return
                else:  # ConnectionClosed: h11 raises itself if the framing says more was due
                    raise httpx.RemoteProtocolError("Server disconnected before the answer was complete.")
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        reuse = False
        if self._complete and connection.h11.our_state is h11.DONE and connection.h11.their_state is h11.DONE:
            connection.h11.start_next_cycle()
            reuse = True
        self._transport._release(connection, reuse=reuse)

"""client/transport.py: httpx's transport with cesync's backend and pool, over a real socket."""

from __future__ import annotations

import asyncio
import ssl

import httpcore
import httpx
import pytest

from cesync.client import CesClient
from cesync.client import transport as transport_module
from cesync.client.transport import http_transport
from cesync.emulator.server import BackgroundServer

PARENT = "projects/p/locations/us/apps/transport"
CODE = "def f(x):\n    return x\n"


def test_many_requests_over_few_connections(emulator: BackgroundServer) -> None:
    """More calls in flight than connections: every call is answered, and the pool never grows past its limit."""
    seen: list[int] = []

    async def run() -> None:
        async with CesClient(emulator.url, max_connections=3) as client:
            pool = client.http._transport._pool  # type: ignore[attr-defined]

            async def one(i: int) -> None:
                written = await client.create(PARENT, "tools", f"t{i}", {"pythonFunction": {"pythonCode": CODE}})
                assert written.error is None, written.error
                seen.append(len(pool.connections))

            await asyncio.gather(*(one(i) for i in range(40)))
            listed = await client.list_all(PARENT, "tools")
            assert {t["name"].rsplit("/", 1)[-1] for t in listed} >= {f"t{i}" for i in range(40)}

    asyncio.run(run())
    assert len(seen) == 40 and max(seen) <= 3


def test_plain_http_loads_no_ca_bundle_and_trusts_nothing() -> None:
    """An http:// endpoint's transport: no certificates loaded, and a TLS connection could not be verified."""
    limits = httpx.Limits(max_connections=2)
    pool = http_transport(limits, tls=False)._pool
    context = pool._ssl_context
    assert isinstance(pool, httpcore.AsyncConnectionPool)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0
    assert http_transport(limits)._pool._ssl_context.cert_store_stats()["x509_ca"] > 0


class _Server:
    """A raw HTTP/1.1 server on 127.0.0.1: counts connections, may close after each answer or answer slowly."""

    def __init__(self, *, close_after: bool = False, delay: float = 0.0) -> None:
        self.close_after = close_after
        self.delay = delay
        self.connections = 0
        self.requests: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")), 0)
                self.requests.append(head + await reader.readexactly(length))
                await asyncio.sleep(self.delay)
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}")
                await writer.drain()
                if self.close_after:  # without saying so: the client must notice before reusing the connection
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()


def _client(url: str, max_connections: int, **kw: object) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    return httpx.AsyncClient(base_url=url, transport=http_transport(limits, tls=False), **kw)  # type: ignore[arg-type]


def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    """The server closes after answering (no Connection: close): the next request opens a new connection and succeeds."""

    async def run() -> int:
        server = _Server(close_after=True)
        async with server as url, _client(url, 4) as client:
            for _ in range(3):
                assert (await client.post("/x", json={"a": 1})).status_code == 200
                await asyncio.sleep(0.05)  # the server's close reaches the client
        return server.connections

    assert asyncio.run(run()) == 3


def test_pool_timeout_and_limit() -> None:
    """One connection, a slow server: the second request waits at most the pool timeout (httpx.PoolTimeout);
    a request cancelled while waiting or while sent gives its place back."""

    async def run() -> None:
        server = _Server(delay=0.3)
        async with server as url, _client(url, 1, timeout=httpx.Timeout(5.0, pool=0.05)) as client:
            first = asyncio.create_task(client.get("/a"))
            await asyncio.sleep(0.05)
            with pytest.raises(httpx.PoolTimeout):
                await client.get("/b")
            waiting = asyncio.create_task(client.get("/c"))
            await asyncio.sleep(0.01)
            waiting.cancel()
            assert (await first).status_code == 200
            sent = asyncio.create_task(client.get("/d"))
            await asyncio.sleep(0.05)
            sent.cancel()
            with pytest.raises(asyncio.CancelledError):
                await sent
            server.delay = 0.0
            assert (await client.get("/e")).status_code == 200
            assert len(client._transport._pool.connections) == 1  # type: ignore[attr-defined]
        assert [r.split(b" ")[1] for r in server.requests] == [b"/a", b"/d", b"/e"]

    asyncio.run(run())


def test_many_waiting_requests_over_one_connection_all_answered_in_order() -> None:
    async def run() -> list[bytes]:
        server = _Server()
        async with server as url, _client(url, 1) as client:
            answers = await asyncio.gather(*(client.post(f"/{i}", content=b"x" * i) for i in range(30)))
            assert all(a.status_code == 200 for a in answers)
        assert server.connections == 1
        return [r.split(b" ")[1] for r in server.requests]

    assert asyncio.run(run()) == [f"/{i}".encode() for i in range(30)]


class _Recording(httpcore.AsyncNetworkStream):
    def __init__(self, fail_write: bool = False) -> None:
        self.sent: list[bytes] = []
        self.fail_write = fail_write

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return b"answer"

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if self.fail_write:
            raise httpcore.WriteError("broken pipe")
        self.sent.append(buffer)

    async def aclose(self) -> None:
        pass

    def get_extra_info(self, info: str) -> object:
        return None


def test_a_request_leaves_in_one_write_before_its_answer_is_read() -> None:
    """Head and body written apart are sent together, before the first read; a failed send is
    suppressed for the read (the server may have answered), as httpcore does for a request."""

    async def run() -> None:
        inner = _Recording()
        stream = transport_module._Stream(inner)
        await stream.write(b"POST / HTTP/1.1\r\n\r\n")
        await stream.write(b"body")
        assert inner.sent == []
        assert await stream.read(10) == b"answer"
        assert inner.sent == [b"POST / HTTP/1.1\r\n\r\nbody"]
        await stream.write(b"x" * transport_module.HOLD_LIMIT)
        assert len(inner.sent) == 2  # a large body is not held
        failing = transport_module._Stream(_Recording(fail_write=True))
        await failing.write(b"GET / HTTP/1.1\r\n\r\n")
        assert await failing.read(10) == b"answer"

    asyncio.run(run())

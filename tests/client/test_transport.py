"""client/transport.py: cesync's HTTP/1.1 transport and pool, over real sockets, against httpx's own."""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.client import CesClient, RetryPolicy
from cesync.client.transport import Http11Transport, http_transport
from cesync.emulator.server import BackgroundServer
from cesync.errors import CesyncError, TransportError
from tests.google_fake import self_signed

PARENT = "projects/p/locations/us/apps/transport"
CODE = "def f(x):\n    return x\n"


def test_many_requests_over_few_connections(emulator: BackgroundServer) -> None:
    """More calls in flight than connections: every call is answered, and the pool never grows past its limit."""
    seen: list[int] = []

    async def run() -> None:
        async with CesClient(emulator.url, max_connections=3) as client:
            transport = client.http._transport
            assert isinstance(transport, Http11Transport)

            async def one(i: int) -> None:
                written = await client.create(PARENT, "tools", f"t{i}", {"pythonFunction": {"pythonCode": CODE}})
                assert written.error is None, written.error
                seen.append(transport.connections)

            await asyncio.gather(*(one(i) for i in range(40)))
            listed = await client.list_all(PARENT, "tools")
            assert {t["name"].rsplit("/", 1)[-1] for t in listed} >= {f"t{i}" for i in range(40)}

    asyncio.run(run())
    assert len(seen) == 40 and max(seen) <= 3


def test_plain_http_loads_no_ca_bundle_and_trusts_nothing() -> None:
    """An http:// endpoint's transport: no certificates loaded, and a TLS connection could not be verified."""
    limits = httpx.Limits(max_connections=2)
    context = http_transport(limits, tls=False).ssl_context
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0
    assert http_transport(limits).ssl_context.cert_store_stats()["x509_ca"] > 0


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
            assert client._transport.connections == 1  # type: ignore[attr-defined]
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


_TOKEN = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC-0123456789", min_size=1, max_size=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    method=st.sampled_from(["GET", "POST", "PATCH", "DELETE"]),
    path=st.lists(_TOKEN, min_size=1, max_size=4).map("/".join),
    params=st.dictionaries(_TOKEN, st.text(max_size=12), max_size=3),
    headers=st.dictionaries(_TOKEN.map(lambda k: f"x-{k}"), _TOKEN, max_size=3),
    body=st.none() | st.dictionaries(_TOKEN, st.text(max_size=20) | st.integers(), max_size=4),
)
def test_the_bytes_on_the_wire_are_httpcores(
    method: str, path: str, params: dict[str, str], headers: dict[str, str], body: dict[str, object] | None
) -> None:
    """The same httpx request sent through httpx's default transport (httpcore) and through ours:
    the server receives the same bytes, and the client the same answer."""

    async def send(client: httpx.AsyncClient) -> tuple[int, list[tuple[bytes, bytes]], bytes, str]:
        response = await client.request(method, f"/{path}", params=params, headers=headers, json=body)
        return response.status_code, response.headers.raw, response.content, response.reason_phrase

    async def run() -> None:
        limits = httpx.Limits(max_connections=2)
        server = _Server()
        async with server as url:
            async with httpx.AsyncClient(base_url=url, transport=httpx.AsyncHTTPTransport(limits=limits)) as client:
                theirs = await send(client)
            async with _client(url, 2) as client:
                ours = await send(client)
        assert ours == theirs
        assert server.requests[0] == server.requests[1]

    asyncio.run(run())


async def _raw_server(
    handle: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
) -> tuple[asyncio.Server, str]:
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def _silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    await asyncio.sleep(2)
    writer.close()


async def _closes_before_answering(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.close()


async def _half_an_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n{}")
    await writer.drain()
    writer.close()


async def _resets(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with RST
    writer.transport.abort()


async def _garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"NOT HTTP AT ALL\r\n\r\n")
    await writer.drain()
    await asyncio.sleep(0.5)
    writer.close()


@pytest.mark.parametrize(
    ("handle", "error"),
    [
        (_silent, httpx.ReadTimeout),
        (_closes_before_answering, httpx.RemoteProtocolError),
        (_half_an_answer, httpx.RemoteProtocolError),
        (_resets, httpx.ReadError),
        (_garbage, httpx.RemoteProtocolError),
    ],
)
def test_errors_after_sending_are_httpx_types(
    handle: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]], error: type[httpx.TransportError]
) -> None:
    """What a server does after the request left, as the exception httpx would name (the client
    treats all of them as 'sent'); the connection is not kept, and the next request opens another."""

    async def run() -> None:
        server, url = await _raw_server(handle)
        async with _client(url, 2, timeout=httpx.Timeout(5.0, read=0.2)) as client:
            with pytest.raises(error):
                await client.post("/x", json={"a": 1})
            assert client._transport.connections == 0  # type: ignore[attr-defined]
        server.close()

    asyncio.run(run())


def test_connect_errors_and_timeouts() -> None:
    """Nothing listening: ConnectError; connecting too long: ConnectTimeout; neither keeps a place in the pool."""

    async def run() -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # bound, not listening: refused
            async with _client(f"http://127.0.0.1:{port}", 1) as client:
                for _ in range(2):  # the place is given back, or the second would wait for the pool
                    with pytest.raises(httpx.ConnectError):
                        await client.get("/")
        with socket.socket() as full:
            full.bind(("127.0.0.1", 0))
            full.listen(0)
            address = full.getsockname()
            waiting = [socket.create_connection(address, timeout=1)]  # never accepted: the queue (of one) is full
            try:
                async with _client(f"http://127.0.0.1:{address[1]}", 1, timeout=httpx.Timeout(5.0, connect=0.1)) as client:
                    with pytest.raises(httpx.ConnectTimeout):
                        await client.get("/")
                    assert client._transport.connections == 0  # type: ignore[attr-defined]
            finally:
                for s in waiting:
                    s.close()

    asyncio.run(run())


def test_write_timeout_when_the_server_reads_nothing() -> None:
    """A body larger than the socket buffers to a server that never reads: httpx.WriteTimeout."""

    async def run() -> None:
        server, url = await _raw_server(_silent)
        async with _client(url, 1, timeout=httpx.Timeout(5.0, write=0.2)) as client:
            with pytest.raises(httpx.WriteTimeout):
                await client.post("/x", content=b"x" * (64 * 1024 * 1024))
        server.close()

    asyncio.run(run())


def test_proxies_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP_PROXY is honoured as httpx honours it (the request goes to the proxy, in absolute form),
    and NO_PROXY too (the request goes straight to its closed port: cannot reach)."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"

    async def run() -> list[bytes]:
        proxy = _Server()
        async with proxy as proxy_url:
            monkeypatch.setenv("HTTP_PROXY", proxy_url)
            async with CesClient(closed, retry=RetryPolicy(attempts=1)) as client:
                assert await client.get(f"{PARENT}/tools/t") == {}
            monkeypatch.setenv("NO_PROXY", "127.0.0.1")
            async with CesClient(closed, retry=RetryPolicy(attempts=1)) as client:
                with pytest.raises(TransportError, match="cannot reach"):
                    await client.get(f"{PARENT}/tools/t")
        return proxy.requests

    requests = asyncio.run(run())
    assert len(requests) == 1 and requests[0].startswith(f"GET {closed}/v1/{PARENT}/tools/t?".encode())


def test_tls_is_verified_against_the_trusted_certificates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """https to the emulator serving TLS: with its certificate trusted (SSL_CERT_FILE, read by httpx's
    context) calls go through, over connections that are reused; without, nothing connects (cannot reach)."""
    cert, key = self_signed(tmp_path)

    async def run(url: str) -> None:
        async with CesClient(url, retry=RetryPolicy(attempts=1)) as client:
            for i in range(3):
                written = await client.create(PARENT, "tools", f"tls{i}", {"pythonFunction": {"pythonCode": CODE}})
                written.unwrap()
            assert client.http._transport.connections == 1  # type: ignore[attr-defined]

    with BackgroundServer(tls=(cert, key), auto_create_apps=True) as server:
        url = f"https://{server.host}"
        with pytest.raises(TransportError, match=r"cannot reach .*CERTIFICATE_VERIFY_FAILED"):
            asyncio.run(run(url))
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        asyncio.run(run(url))


@pytest.mark.parametrize("variable", ["ALL_PROXY=socks5://u:secret@127.0.0.1:1", "HTTP_PROXY=ftp://u:secret@127.0.0.1:1"])
def test_a_proxy_httpx_cannot_use_is_a_clear_error(variable: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A SOCKS proxy without socksio, or a scheme httpx has no transport for: a cesync error naming the
    proxy variables and what to do (not an internal error), without the proxy's password."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    name, value = variable.split("=", 1)
    monkeypatch.setenv(name, value)
    with pytest.raises(CesyncError, match=r"cannot use the proxy .*ALL_PROXY.*fix or unset the variable") as caught:
        CesClient("http://127.0.0.1:1")
    assert "secret" not in str(caught.value)

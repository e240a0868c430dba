"""The client over real sockets, on httpx's own transport: pool, HTTP/2, TLS, proxies, broken answers."""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from cesync.client import CesClient, RetryPolicy
from cesync.emulator.server import BackgroundServer
from cesync.errors import CesyncError, TransportError
from tests.google_fake import self_signed

PARENT = "projects/p/locations/us/apps/transport"
CODE = "def f(x):\n    return x\n"


def test_many_requests_over_few_connections() -> None:
    """More calls in flight than connections: every call is answered, over at most max_connections."""

    async def run() -> int:
        server = _Server()
        async with server as url, CesClient(url, max_connections=3) as client:
            written = await asyncio.gather(
                *(client.create(PARENT, "tools", f"t{i}", {"pythonFunction": {"pythonCode": CODE}}) for i in range(40))
            )
            assert [w.error for w in written] == [None] * 40 and len(server.requests) == 40
        return server.connections

    assert 1 <= asyncio.run(run()) <= 3


async def _h2_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """An HTTP/2 server of one connection (the h2 library's state machine): every request answered ``{}``,
    the protocol it came over recorded by the test."""
    import h2.config
    import h2.connection
    import h2.events

    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    conn.initiate_connection()
    writer.write(conn.data_to_send())
    while data := await reader.read(65536):
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.RequestReceived):
                H2_SEEN.append(dict(event.headers)[b":path"].decode())
                body = b"{}"
                headers = [(":status", "200"), ("content-type", "application/json"), ("content-length", "2")]
                conn.send_headers(event.stream_id, headers)
                conn.send_data(event.stream_id, body, end_stream=True)
        writer.write(conn.data_to_send())
        await writer.drain()
    writer.close()


H2_SEEN: list[str] = []


def test_http2_where_the_server_offers_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A TLS server offering h2 by ALPN (as Google's endpoints do) is spoken to in HTTP/2, several calls
    over one connection: httpx's own transport with http2 on (pyproject: httpx[http2])."""
    cert, key = self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    H2_SEEN.clear()

    async def run() -> None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        context.set_alpn_protocols(["h2"])
        server = await asyncio.start_server(_h2_answer, "127.0.0.1", 0, ssl=context)
        url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        async with CesClient(url, retry=RetryPolicy(attempts=1)) as client:
            assert await asyncio.gather(*(client.get(f"{PARENT}/tools/t{i}") for i in range(3))) == [{}, {}, {}]
        server.close()

    asyncio.run(run())
    assert sorted(p.split("?")[0] for p in H2_SEEN) == [f"/v1/{PARENT}/tools/t{i}" for i in range(3)]


def test_no_module_of_the_client_reaches_into_httpx_or_httpcore() -> None:
    import pathlib
    import re

    import cesync.client

    for path in pathlib.Path(cesync.client.__file__).parent.glob("*.py"):
        assert not re.search(r"(httpx|httpcore)\._", path.read_text()), path


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


@pytest.mark.parametrize("handle", [_silent, _closes_before_answering, _half_an_answer, _resets, _garbage])
def test_a_server_that_breaks_after_the_request_left_is_a_lost_reply(
    handle: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
) -> None:
    """Silence past the read timeout, a close, half an answer, a reset, garbage: a TransportError marked sent
    (the request may have been carried out), never a success or a traceback."""

    async def run() -> None:
        server, url = await _raw_server(handle)
        async with CesClient(url, retry=RetryPolicy(attempts=1), timeout=0.3) as client:
            with pytest.raises(TransportError, match="broke before the answer came") as caught:
                await client.get(f"{PARENT}/tools/t")
            assert caught.value.sent
        server.close()

    asyncio.run(run())


def test_nothing_listening_is_cannot_reach() -> None:
    async def run() -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # bound, not listening: refused
            async with CesClient(f"http://127.0.0.1:{port}", retry=RetryPolicy(attempts=1)) as client:
                with pytest.raises(TransportError, match="cannot reach") as caught:
                    await client.get(f"{PARENT}/tools/t")
                assert not caught.value.sent

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
    context) calls go through; without, nothing connects (cannot reach)."""
    cert, key = self_signed(tmp_path)

    async def run(url: str) -> None:
        async with CesClient(url, retry=RetryPolicy(attempts=1)) as client:
            for i in range(3):
                written = await client.create(PARENT, "tools", f"tls{i}", {"pythonFunction": {"pythonCode": CODE}})
                written.unwrap()

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

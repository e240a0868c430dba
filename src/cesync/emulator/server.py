"""Serving the emulator on a socket (``cesync emulator``) and in a background thread (tests)."""

from __future__ import annotations

import ipaddress
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import uvicorn

from .app import create_app
from .faults import FaultConfig, WriteHooks
from .operations import DEFAULT_DELAY as DEFAULT_OPERATION_DELAY
from .quota import QuotaConfig
from .store import Store

__all__ = ["KEEP_ALIVE_SECONDS", "BackgroundServer", "LocalOnly", "free_port", "listening_socket", "serve"]

# How long an idle connection stays open. Google's front ends keep a client's idle HTTP connection
# 610 s (the "HTTP keepalive timeout" of Google Cloud's global external Application Load Balancer,
# the GFE: https://cloud.google.com/load-balancing/docs/https#http-keepalive-timeout), and clients
# pool connections on that: googleapiclient (httplib2) reuses one after any idle and its POST fails
# with a broken pipe when the server closed it meanwhile, as uvicorn's default of 5 s did.
KEEP_ALIVE_SECONDS = 610


def seeded_store(state: Path | None, apps: Iterable[str] = (), *, auto_create_apps: bool = False) -> Store:
    """A store with the given apps created (``--app``), creating others on first use or not."""
    store = Store(state, auto_create_apps=auto_create_apps)
    for name in apps:
        store.app(name, create=True)
    return store


class RequestLog:
    """ASGI middleware: one line per request (method, path and query, status, milliseconds) to
    the ``cesync.emulator`` logger. The bodies are never logged: they may hold what a repo
    keeps in sensitive variables."""

    def __init__(self, app: Any, logger: logging.Logger) -> None:
        self.app, self.log = app, logger

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.monotonic(), [0]

        async def sending(message: Any) -> None:
            if message.get("type") == "http.response.start":
                status[0] = int(message.get("status", 0))
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            query = scope.get("query_string", b"").decode("latin-1")
            path = _inert(scope.get("path", "") + (f"?{query}" if query else ""))
            self.log.info(
                "%s %s -> %s in %.0f ms", scope.get("method"), path, status[0] or "-", (time.monotonic() - started) * 1000
            )


# CI runners' commands that need no line of their own: GitHub's legacy ``##[name]``, Azure's
# ``##vso[``, GitLab's section markers (cesync.escape holds cesync's own; the emulator shares none).
_CI_MARK = re.compile(r"##(?=\[|vso\[)|section_(?=start:|end:)")


def _inert(text: str) -> str:
    """A request's path as the log shows it: what does not print (escape sequences, line breaks,
    bidi controls) as \\uXXXX, and no CI runner command. Any web page can send a request (the
    refused ones are logged too) with any path, which the server percent-decodes."""
    shown = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)
    return _CI_MARK.sub(lambda m: "\\u0023#" if m.group().startswith("#") else "section\\u005f", shown)


# What a web page can make a browser send without asking the server first (a CORS "simple"
# request: no preflight): these bodies are refused, whatever the Origin header says.
# https://fetch.spec.whatwg.org/#cors-safelisted-request-header
_SIMPLE_BODIES = ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data")
_WILDCARD = ("0.0.0.0", "::", "")


class LocalOnly:
    """ASGI middleware: the emulator serves the clients of its own machine, not a web page.

    Google's sources are silent here (CES's front end checks credentials, which the emulator
    does not): these are the emulator's own rules, for what it trusts, which is any program
    of its machine that reaches its port, and nothing a browser sends for a page:

    - ``Host`` must name the address it was bound to (``localhost`` and the loopback addresses
      for a loopback bind, any address literal for a wildcard one) with its port: a page whose
      DNS name is rebound to 127.0.0.1 sends its own name and is refused;
    - an ``Origin`` other than the emulator's own (on a wildcard bind: the loopback addresses,
      not any address, which a page on the attacker's server at the same port would have), or
      ``Sec-Fetch-Site`` other than same-origin or none, is refused (a browser sends them with
      every cross-site request);
    - a body typed text/plain, form or multipart, or not typed at all, is refused: the API reads
      JSON, and those are the bodies a page may POST without a preflight;
    - ``/admin`` (state, faults, injected fields) answers only when started with ``admin``.
    """

    def __init__(self, app: Any, host: str, port: int, *, admin: bool) -> None:
        self.app, self.port, self.admin = app, port, admin
        self.host = host.strip("[]").lower()

    def _our_host(self, value: str, *, page: bool = False) -> bool:
        """value (host[:port]) names this emulator; page: as a page's Origin, where a wildcard bind's
        "any address" does not hold (an address of the attacker's is a page's, not the emulator's)."""
        host, _, port = value.rpartition(":") if not value.endswith("]") else (value, "", "")
        if not host:
            host, port = value, ""
        if (port or "80") != str(self.port):
            return False
        host = host.strip("[]").lower()
        if (host == self.host and not (page and host in _WILDCARD)) or host == "localhost":
            return True
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False  # a DNS name other than the bound one: a rebinding page
        if self.host in _WILDCARD:
            return address.is_loopback or not page
        return address.is_loopback and _is_loopback(self.host)

    def refusal(self, scope: Any) -> tuple[int, str, str] | None:
        """(HTTP status, RPC status, message) when the request is not served; None when it is."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host")
        if host is not None and not self._our_host(host):
            return 403, "PERMISSION_DENIED", f"Host {host!r} is not this emulator's address (it serves its own machine only)"
        origin = headers.get("origin")
        page = origin.split("://", 1)[1] if origin is not None and origin.startswith(("http://", "https://")) else None
        if origin is not None and not (page is not None and self._our_host(page, page=True)):
            return 403, "PERMISSION_DENIED", f"a request from the web page at {origin!r} (the emulator serves no web page)"
        site = headers.get("sec-fetch-site")
        if site is not None and site not in ("same-origin", "none"):
            return 403, "PERMISSION_DENIED", f"a {site} request from a web page (the emulator serves no web page)"
        media = headers.get("content-type", "").split(";")[0].strip().lower()
        if media in _SIMPLE_BODIES:
            return 415, "INVALID_ARGUMENT", f"a {media} body: the API reads JSON (Content-Type: application/json)"
        has_body = headers.get("content-length", "0").strip() not in ("", "0") or "transfer-encoding" in headers
        if not media and has_body:  # a page's fetch() of an untyped Blob: no preflight either
            return 415, "INVALID_ARGUMENT", "a body without a Content-Type: the API reads JSON (Content-Type: application/json)"
        path = scope.get("path", "")
        if not self.admin and (path == "/admin" or path.startswith("/admin/")):
            return 404, "NOT_FOUND", "the /admin hooks are off: start the emulator with --admin to set up tests through them"
        return None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or (refused := self.refusal(scope)) is None:
            await self.app(scope, receive, send)
            return
        http, status, message = refused
        body = json.dumps({"error": {"code": http, "message": message, "status": status}}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": http, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(
    host: str,
    port: int,
    state: Path | None,
    faults: FaultConfig,
    *,
    apps: Iterable[str] = (),
    auto_create_apps: bool = False,
    operation_delay: float = DEFAULT_OPERATION_DELAY,
    quota: QuotaConfig | None = None,
    log_requests: bool = True,
    listening: Callable[[str, int], None] | None = None,
    admin: bool = False,
) -> None:
    """Serve until interrupted. The socket is bound first, so a port in use is an OSError here
    (uvicorn would log its own error and exit) and ``listening`` hears the port actually bound
    (``--port 0`` picks a free one). admin: serve /admin (see LocalOnly)."""
    sock = listening_socket(host, port)
    store = seeded_store(state, apps, auto_create_apps=auto_create_apps)
    bound = int(sock.getsockname()[1])
    app: Any = LocalOnly(create_app(store, faults, operation_delay=operation_delay, quota=quota), host, bound, admin=admin)
    if log_requests:
        logger = logging.getLogger("cesync.emulator")
        if not logger.handlers:
            handler = logging.StreamHandler()  # standard error
            handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
            logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        app = RequestLog(app, logger)
    if listening is not None:
        listening(host, bound)
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_keep_alive=KEEP_ALIVE_SECONDS)
    server = uvicorn.Server(config)
    server.run(sockets=[sock])


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port) and listening; OSError when the port is taken."""
    # IPPROTO_TCP named, not 0: asyncio turns Nagle off (TCP_NODELAY) only on sockets whose proto
    # says TCP, and without it each answer waited on the client's delayed ACK (64 ms a GET, not 23).
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn's own bind: a restart need not wait
    try:
        sock.bind((host, port))
        sock.listen(2048)  # uvicorn's backlog; listening now, a client that read the banner is queued, not refused
    except OSError:
        sock.close()
        raise
    return sock


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class BackgroundServer:
    """The emulator on 127.0.0.1 in a daemon thread, for tests and benchmarks.

    admin: serve /admin, on unless a test says otherwise (the tests set up apps, faults and
    injected fields through it); ``cesync emulator`` serves it only with --admin.
    """

    def __init__(
        self,
        state: Path | None = None,
        faults: FaultConfig | None = None,
        *,
        apps: Iterable[str] = (),
        auto_create_apps: bool = False,
        operation_delay: float = DEFAULT_OPERATION_DELAY,
        tls: tuple[Path, Path] | None = None,
        quota: QuotaConfig | None = None,
        operation_clock: Callable[[], float] = time.time,
        admin: bool = True,
        keep_alive: int = KEEP_ALIVE_SECONDS,
    ) -> None:
        """operation_clock: when long-running operations are due (tests pass a clock they advance);
        keep_alive: seconds an idle connection stays open (tests of idle connections shorten it)."""
        self.port = free_port()
        self.tls = tls  # (certificate, key): serve https, as clients that insist on it need
        store = seeded_store(state, apps, auto_create_apps=auto_create_apps)
        self.app = create_app(store, faults, operation_delay=operation_delay, quota=quota, operation_clock=operation_clock)
        config = uvicorn.Config(
            LocalOnly(self.app, "127.0.0.1", self.port, admin=admin),
            host="127.0.0.1",
            port=self.port,
            log_level="critical",
            access_log=False,
            ssl_certfile=str(tls[0]) if tls else None,
            ssl_keyfile=str(tls[1]) if tls else None,
            timeout_keep_alive=keep_alive,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def hooks(self) -> WriteHooks:
        """What runs before each write (faults.WriteHooks): a console user acting mid-apply, in tests."""
        hooks: WriteHooks = self.app.state.hooks
        return hooks

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}"

    def __enter__(self) -> BackgroundServer:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("emulator did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

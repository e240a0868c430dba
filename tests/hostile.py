"""A hostile CES endpoint: a real HTTP server on loopback whose answers a test chooses.

The emulator answers as CES does; this one answers whatever a test's function returns,
so cesync's client meets hostile bodies over a real socket, through its real transport.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import parse_qs, urlsplit

# (method, path without /v1/, query) -> (HTTP status, body bytes)
Answer = Callable[[str, str, dict[str, str]], tuple[int, bytes]]

APP = "projects/p/locations/us/apps/a"


class _Listener(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: a plan's reads (one per kind, sent at once) overflow
    # it, and the kernel drops the extra connections' SYNs, which the client resends a second later
    request_queue_size = 128


class HostileServer:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                url = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                path = url.path.removeprefix("/v1/")
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                outer.requests.append((self.command, path, query))
                status, body = outer.answer(self.command, path, query)
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = do_DELETE = _any

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = _Listener(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False  # a handler still writing to a closed client must not hold up the test
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> HostileServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

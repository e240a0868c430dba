"""Serving the emulator on a socket (``cesync emulator``) and in a background thread (tests)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import uvicorn

from .app import create_app
from .faults import FaultConfig
from .store import Store

__all__ = ["BackgroundServer", "free_port", "serve"]


def serve(host: str, port: int, state: Path | None, faults: FaultConfig) -> None:
    app = create_app(Store(state), faults)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class BackgroundServer:
    """The emulator on 127.0.0.1 in a daemon thread, for tests and benchmarks."""

    def __init__(self, state: Path | None = None, faults: FaultConfig | None = None) -> None:
        self.port = free_port()
        self.app = create_app(Store(state), faults)
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="critical", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

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

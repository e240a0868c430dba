"""Serving the emulator on a socket (``cesync emulator``) and in a background thread (tests)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import uvicorn

from .app import create_app
from .faults import FaultConfig
from .operations import DEFAULT_DELAY as DEFAULT_OPERATION_DELAY
from .quota import QuotaConfig
from .store import Store

__all__ = ["BackgroundServer", "free_port", "serve"]


def seeded_store(state: Path | None, apps: Iterable[str] = (), *, auto_create_apps: bool = False) -> Store:
    """A store with the given apps created (``--app``), creating others on first use or not."""
    store = Store(state, auto_create_apps=auto_create_apps)
    for name in apps:
        store.app(name, create=True)
    return store


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
) -> None:
    store = seeded_store(state, apps, auto_create_apps=auto_create_apps)
    app = create_app(store, faults, operation_delay=operation_delay, quota=quota)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class BackgroundServer:
    """The emulator on 127.0.0.1 in a daemon thread, for tests and benchmarks."""

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
    ) -> None:
        self.port = free_port()
        self.tls = tls  # (certificate, key): serve https, as clients that insist on it need
        store = seeded_store(state, apps, auto_create_apps=auto_create_apps)
        self.app = create_app(store, faults, operation_delay=operation_delay, quota=quota)
        config = uvicorn.Config(
            self.app,
            host="127.0.0.1",
            port=self.port,
            log_level="critical",
            access_log=False,
            ssl_certfile=str(tls[0]) if tls else None,
            ssl_keyfile=str(tls[1]) if tls else None,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

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

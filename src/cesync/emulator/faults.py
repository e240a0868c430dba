"""Seeded, deterministic fault injection for the emulator's API routes.

Latency (fixed + jitter), a share of 429 RESOURCE_EXHAUSTED answers (with
``RetryInfo``), a share of 503 UNAVAILABLE, and a share of writes that are
committed and then answered with a dropped connection (``drop_next`` drops the
next N writes for certain, so a test can lose exactly one reply).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import RpcError

__all__ = ["ConnectionDropped", "FaultConfig", "FaultMiddleware", "Injected", "WriteClock", "WriteHooks"]

WRITE_METHODS = {"POST", "PATCH", "DELETE"}


class ConnectionDropped(Exception):
    """Raised after a committed write to break the connection instead of answering."""


@dataclass
class FaultConfig:
    latency_ms: float = 0.0
    jitter_ms: float = 0.0
    rate_429: float = 0.0
    rate_503: float = 0.0
    drop_rate: float = 0.0  # writes: commit, then drop the connection
    drop_next: int = 0  # the next N writes: commit, then drop the connection
    retry_delay_s: float = 0.01
    seed: int = 0
    fail_status: str = ""  # answer every call with this status, e.g. PERMISSION_DENIED

    def update(self, values: dict[str, Any]) -> None:
        known = {f.name for f in fields(self)}
        for key, value in values.items():
            if key not in known:
                raise RpcError("INVALID_ARGUMENT", f"unknown fault setting '{key}' (known: {', '.join(sorted(known))})")
            kind = type(getattr(self, key))
            if value is None or isinstance(value, bool) or not isinstance(value, (kind, int) if kind is float else kind):
                raise RpcError("INVALID_ARGUMENT", f"fault setting '{key}' must be a {kind.__name__}, not {json.dumps(value)}")
            setattr(self, key, kind(value))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class WriteClock:
    """When the API's writes came and went (epoch seconds, comparable across processes): for
    benchmarks/bench.py, which reports the time to apply's first write and the span of its writes."""

    writes: int = 0
    first_write_at: float = 0.0  # arrival of the first write
    last_write_done_at: float = 0.0  # answer of the last write

    def as_dict(self) -> dict[str, Any]:
        return {"writes": self.writes, "firstWriteAt": self.first_write_at, "lastWriteDoneAt": self.last_write_done_at}


@dataclass(frozen=True)
class Injected:
    """A request someone else makes (a console user, another pipeline), answered inside the server
    just before one of the caller's writes: what a person does in the console at a moment chosen by
    a test, with no thread or timing to race (the emulator's own; Google's service has no such hook)."""

    method: str
    path: str  # /v1/... with its query
    body: dict[str, Any] | None = None
    author: str = "console@example.com"  # the changelog's author (changelogs.py: a bearer e-mail)


@dataclass
class WriteHooks:
    """before_write(method, path) -> the requests to answer first, for each write of the API; every
    injected request's (request, status, answer) is kept in answered, in order."""

    before_write: Callable[[str, str], Iterable[Injected]] | None = None
    answered: list[tuple[Injected, int, Any]] = field(default_factory=list)


class FaultMiddleware:
    def __init__(
        self, app: ASGIApp, config: FaultConfig, registry: list[FaultMiddleware], hooks: WriteHooks | None = None
    ) -> None:
        self.app = app
        self.config = config
        self.hooks = hooks or WriteHooks()
        self.clock = WriteClock()
        self._rng = random.Random(config.seed)
        self._seed = config.seed
        registry.append(self)

    def _roll(self) -> float:
        if self._seed != self.config.seed:
            self._rng, self._seed = random.Random(self.config.seed), self.config.seed
        return self._rng.random()

    def _drop(self) -> bool:
        if self.config.drop_next > 0:
            self.config.drop_next -= 1
            return True
        return bool(self.config.drop_rate) and self._roll() < self.config.drop_rate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(("/v1/", "/v1beta/")):
            await self.app(scope, receive, send)
            return
        if scope["method"] in WRITE_METHODS:
            if self.hooks.before_write is not None:
                path = scope["path"] + (f"?{scope['query_string'].decode()}" if scope.get("query_string") else "")
                for call in self.hooks.before_write(scope["method"], path):
                    await self._inject(call)
            self.clock.writes += 1
            self.clock.first_write_at = self.clock.first_write_at or time.time()
            try:
                await self._faulted(scope, receive, send)
            finally:
                self.clock.last_write_done_at = time.time()
            return
        await self._faulted(scope, receive, send)

    async def _faulted(self, scope: Scope, receive: Receive, send: Send) -> None:
        c = self.config
        delay = c.latency_ms + (self._roll() * c.jitter_ms if c.jitter_ms else 0.0)
        if delay > 0:
            await asyncio.sleep(delay / 1000)
        if c.fail_status:
            await _send_error(send, RpcError(c.fail_status, f"{c.fail_status} (emulated)"))
            return
        if c.rate_429 and self._roll() < c.rate_429:
            err = RpcError(
                "RESOURCE_EXHAUSTED",
                "Quota exceeded (emulated)",
                [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{c.retry_delay_s}s"}],
            )
            await _send_error(send, err)
            return
        if c.rate_503 and self._roll() < c.rate_503:
            await _send_error(send, RpcError("UNAVAILABLE", "The service is currently unavailable (emulated)"))
            return
        if scope["method"] in WRITE_METHODS and self._drop():
            await self._commit_then_drop(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _inject(self, call: Injected) -> None:
        """call through the server's own routes (inside the faults: an injected request is never faulted)."""
        path, _, query = call.path.partition("?")
        payload = json.dumps(call.body).encode() if call.body is not None else b""
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": call.method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": [
                (b"host", b"127.0.0.1"),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                (b"authorization", f"Bearer {call.author}".encode()),
            ],
            "client": ("127.0.0.1", 0),
            "server": ("127.0.0.1", 0),
        }
        sent = False
        status, chunks = 0, []

        async def receive() -> Message:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": payload, "more_body": False}

        async def send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            elif message["type"] == "http.response.body":
                chunks.append(bytes(message.get("body", b"")))

        await self.app(scope, receive, send)
        text = b"".join(chunks)
        self.hooks.answered.append((call, status, json.loads(text) if text else None))

    async def _commit_then_drop(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def swallow(message: Message) -> None:
            return None  # the write happens; its answer never leaves

        await self.app(scope, receive, swallow)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"1000")]})
        raise ConnectionDropped("connection dropped after commit (emulated)")


async def _send_error(send: Send, err: RpcError) -> None:
    import json

    payload = json.dumps(err.body()).encode()
    await send(
        {
            "type": "http.response.start",
            "status": err.http,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": payload})

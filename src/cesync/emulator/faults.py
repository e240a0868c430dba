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
from dataclasses import asdict, dataclass, fields
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import RpcError

__all__ = ["ConnectionDropped", "FaultConfig", "FaultMiddleware", "WriteClock"]

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


class FaultMiddleware:
    def __init__(self, app: ASGIApp, config: FaultConfig, registry: list[FaultMiddleware]) -> None:
        self.app = app
        self.config = config
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

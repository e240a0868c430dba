"""CES's request quotas, enforced as the service enforces them (off unless asked for).

Google's CES quota documentation: ``ces.googleapis.com/write_requests`` and ``read_requests`` default to
about 600 a minute per project, enforced in one region (a multi-region app's ``us`` or
``eu`` is one location here), shared by every caller of the project. A request over
quota is answered 429 RESOURCE_EXHAUSTED with a ``google.rpc.ErrorInfo`` (reason
RATE_LIMIT_EXCEEDED, domain googleapis.com, metadata naming the quota metric and limit)
and a ``google.rpc.QuotaFailure``, the details Google APIs give quota errors (AIP-193);
no ``RetryInfo``: a per-minute quota's refusal says nothing of when to come back.

Which methods count as reads: the sources are silent per method, so a GET is a read and
every other method (create, patch, delete, custom POST methods) a write.

A per-minute limit is enforced smoothly, as a token bucket refilled at limit/60 a second
holding at most one second's worth (``burst`` requests when set), so a client that sends
at the limit's rate is never refused and one that sends faster is refused from the
second second on, not after a minute of free bursts.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from .errors import RpcError

__all__ = ["QuotaConfig", "QuotaMiddleware", "TokenBucket", "quota_error"]

SERVICE = "ces.googleapis.com"
WRITE_METRIC = f"{SERVICE}/write_requests"
READ_METRIC = f"{SERVICE}/read_requests"
LIMITS = {
    WRITE_METRIC: ("Write requests", "WriteRequestsPerMinutePerProject"),
    READ_METRIC: ("Read requests", "ReadRequestsPerMinutePerProject"),
}
SCOPE_RE = re.compile(r"^/v1(?:beta)?/projects/([^/]+)/locations/([^/:]+)")


class TokenBucket:
    """``rate`` tokens a second, at most ``capacity`` held; starts full. The clock is injected."""

    def __init__(self, rate: float, capacity: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.capacity = max(1.0, capacity)
        self.clock = clock
        self.tokens = self.capacity
        self.at = clock()

    def take(self) -> bool:
        """One token if there is one (True), else False: nothing is queued."""
        now = self.clock()
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


@dataclass
class QuotaConfig:
    """Per project and location, requests a minute (0: no quota, the default)."""

    writes_per_minute: int = 0
    reads_per_minute: int = 0
    burst: int = 0  # requests a full bucket holds; 0: one second's worth

    def limit(self, metric: str) -> int:
        return self.writes_per_minute if metric == WRITE_METRIC else self.reads_per_minute

    def update(self, values: dict[str, Any]) -> None:
        names = {"writesPerMinute": "writes_per_minute", "readsPerMinute": "reads_per_minute", "burst": "burst"}
        for key, value in values.items():
            if key not in names:
                raise RpcError("INVALID_ARGUMENT", f"unknown quota setting '{key}' (known: {', '.join(sorted(names))})")
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise RpcError("INVALID_ARGUMENT", f"quota setting '{key}' must be an integer >= 0, not {json.dumps(value)}")
            setattr(self, names[key], value)

    def as_dict(self) -> dict[str, int]:
        return {"writesPerMinute": self.writes_per_minute, "readsPerMinute": self.reads_per_minute, "burst": self.burst}


def quota_error(metric: str, limit: int, project: str, location: str) -> RpcError:
    """The answer CES gives a request over its quota."""
    name, limit_name = LIMITS[metric]
    message = (
        f"Quota exceeded for quota metric '{name}' and limit '{name} per minute' of service '{SERVICE}' "
        f"for consumer 'project:{project}'."
    )
    details: list[dict[str, Any]] = [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "RATE_LIMIT_EXCEEDED",
            "domain": "googleapis.com",
            "metadata": {
                "service": SERVICE,
                "consumer": f"projects/{project}",
                "quota_metric": metric,
                "quota_limit": limit_name,
                "quota_limit_value": str(limit),
                "quota_location": location,
            },
        },
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{"subject": f"project:{project}", "description": message}],
        },
    ]
    return RpcError("RESOURCE_EXHAUSTED", message, details)


@dataclass
class QuotaState:
    buckets: dict[tuple[str, str, str], TokenBucket] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=lambda: {WRITE_METRIC: 0, READ_METRIC: 0})
    shape: tuple[int, int, int] = (0, 0, 0)  # the config the buckets were made for


class QuotaMiddleware:
    """Refuses the API's requests over quota before they reach the routes."""

    def __init__(self, app: ASGIApp, config: QuotaConfig, state: QuotaState, clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.config = config
        self.state = state
        self.clock = clock

    def admit(self, method: str, path: str) -> RpcError | None:
        """None when the request is within quota (or unmetered), else the error to answer."""
        c = self.config
        if not (c.writes_per_minute or c.reads_per_minute):
            return None
        m = SCOPE_RE.match(path)
        if m is None:
            return None
        metric = READ_METRIC if method == "GET" else WRITE_METRIC
        limit = c.limit(metric)
        if not limit:
            return None
        if self.state.shape != (c.writes_per_minute, c.reads_per_minute, c.burst):
            self.state.buckets.clear()  # settings changed (/admin/quota): buckets start anew at the new limits
            self.state.shape = (c.writes_per_minute, c.reads_per_minute, c.burst)
        project, location = m.groups()
        key = (metric, project, location)
        bucket = self.state.buckets.get(key)
        if bucket is None:
            rate = limit / 60.0
            bucket = self.state.buckets[key] = TokenBucket(rate, float(c.burst or rate), self.clock)
        if bucket.take():
            return None
        self.state.refused[metric] += 1
        return quota_error(metric, limit, project, location)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            error = self.admit(scope["method"], scope["path"])
            if error is not None:
                payload = json.dumps(error.body()).encode()
                headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
                await send({"type": "http.response.start", "status": error.http, "headers": headers})
                await send({"type": "http.response.body", "body": payload})
                return
        await self.app(scope, receive, send)

"""The emulator's request quotas: a token bucket per metric, project and location; CES's 429."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.emulator import EmbeddedTransport, QuotaConfig
from cesync.emulator.quota import READ_METRIC, WRITE_METRIC, QuotaMiddleware, QuotaState, TokenBucket

APP = "projects/p/locations/us/apps/a"
FN = {"pythonFunction": {"pythonCode": "def f(x):\n    return x\n"}}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_holds_one_seconds_worth_and_refills_at_the_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(10.0, 10.0, clock)  # 600 a minute
    assert [bucket.take() for _ in range(11)] == [True] * 10 + [False]
    clock.now += 0.1
    assert bucket.take() and not bucket.take()
    clock.now += 60  # a long pause fills it to its capacity, no more
    assert sum(bucket.take() for _ in range(100)) == 10


@settings(max_examples=60, deadline=None)
@given(
    per_minute=st.integers(1, 6000),
    gaps=st.lists(st.floats(0, 0.5, allow_nan=False), min_size=1, max_size=300),
)
def test_admitted_requests_never_exceed_capacity_plus_rate_times_elapsed(per_minute: int, gaps: list[float]) -> None:
    """Whatever the arrivals, what a bucket lets through over any run is at most its capacity plus
    rate x elapsed: the quota holds over every window, not only per minute."""
    clock = FakeClock()
    rate = per_minute / 60
    bucket = TokenBucket(rate, rate, clock)
    start, admitted = clock.now, 0
    for gap in gaps:
        clock.now += gap
        admitted += bucket.take()
        assert admitted <= max(1.0, rate) + rate * (clock.now - start) + 1e-9


def _middleware(config: QuotaConfig, clock: FakeClock) -> QuotaMiddleware:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("not called in these tests")

    return QuotaMiddleware(app, config, QuotaState(), clock)


def test_writes_and_reads_are_metered_apart_per_project_and_location() -> None:
    clock = FakeClock()
    m = _middleware(QuotaConfig(writes_per_minute=120, reads_per_minute=60), clock)  # 2 writes/s, 1 read/s
    tools = f"/v1/{APP}/tools"
    assert m.admit("POST", tools) is None and m.admit("PATCH", f"{tools}/t") is None
    refused = m.admit("DELETE", f"{tools}/t")
    assert refused is not None and refused.http == 429
    assert m.admit("GET", tools) is None  # reads have a bucket of their own
    assert m.admit("GET", tools) is not None
    assert m.admit("POST", "/v1beta/projects/p/locations/eu/apps/a/tools") is None  # another location
    assert m.admit("POST", "/v1/projects/q/locations/us/apps/a/tools") is None  # another project
    assert m.admit("POST", "/v1beta/projects/p/locations/us/apps/b/tools") is not None  # same project and location
    assert m.state.refused == {WRITE_METRIC: 2, READ_METRIC: 1}
    clock.now += 0.5
    assert m.admit("POST", tools) is None


def test_no_quota_by_default_and_a_zero_limit_meters_nothing() -> None:
    clock = FakeClock()
    assert all(_middleware(QuotaConfig(), clock).admit("POST", f"/v1/{APP}/tools") is None for _ in range(1000))
    reads_only = _middleware(QuotaConfig(reads_per_minute=60), clock)
    assert all(reads_only.admit("POST", f"/v1/{APP}/tools") is None for _ in range(100))


def test_burst_sets_what_a_full_bucket_lets_through() -> None:
    clock = FakeClock()
    m = _middleware(QuotaConfig(writes_per_minute=60, burst=5), clock)
    assert [m.admit("POST", f"/v1/{APP}/tools") is None for _ in range(6)] == [True] * 5 + [False]


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_over_quota_is_answered_as_google_answers_quota_errors() -> None:
    """429 RESOURCE_EXHAUSTED, ErrorInfo RATE_LIMIT_EXCEEDED / googleapis.com naming the metric, QuotaFailure
    (Google's CES quota documentation); nothing written; /admin/stats counts the refusal."""

    async def go() -> tuple[list[httpx.Response], dict[str, Any], httpx.Response]:
        transport = EmbeddedTransport(auto_create_apps=True, quota=QuotaConfig(writes_per_minute=60))
        async with httpx.AsyncClient(transport=transport, base_url="http://emu") as c:
            answers = [await c.post(f"/v1/{APP}/tools", params={"toolId": f"t{i}"}, json=FN) for i in range(2)]
            stats = (await c.get("/admin/stats")).json()
            listed = await c.get(f"/v1/{APP}/tools")
            return answers, stats, listed

    (ok, refused), stats, listed = _run(go())
    assert ok.status_code == 200 and refused.status_code == 429
    error = refused.json()["error"]
    assert error["status"] == "RESOURCE_EXHAUSTED" and error["code"] == 429
    info = next(d for d in error["details"] if d["@type"] == "type.googleapis.com/google.rpc.ErrorInfo")
    assert (info["reason"], info["domain"]) == ("RATE_LIMIT_EXCEEDED", "googleapis.com")
    assert info["metadata"]["quota_metric"] == "ces.googleapis.com/write_requests"
    assert info["metadata"]["quota_limit_value"] == "60"
    failure = next(d for d in error["details"] if d["@type"] == "type.googleapis.com/google.rpc.QuotaFailure")
    assert failure["violations"][0]["subject"] == "project:p"
    assert not any("RetryInfo" in d["@type"] for d in error["details"])
    assert stats["quotaRefused"] == {"writes": 1, "reads": 0}
    assert [t["name"].rsplit("/", 1)[-1] for t in listed.json()["tools"]] == ["t0"]


def test_admin_quota_sets_and_checks_the_limits() -> None:
    async def go() -> list[httpx.Response]:
        async with httpx.AsyncClient(transport=EmbeddedTransport(auto_create_apps=True), base_url="http://emu") as c:
            return [
                await c.post("/admin/quota", json={"writesPerMinute": 60}),
                await c.post(f"/v1/{APP}/tools", params={"toolId": "a"}, json=FN),
                await c.post(f"/v1/{APP}/tools", params={"toolId": "b"}, json=FN),
                await c.post("/admin/quota", json={"writesPerMinute": -1}),
                await c.post("/admin/quota", json={"writes": 1}),
                await c.post("/admin/quota", json={"writesPerMinute": 0}),
                await c.post(f"/v1/{APP}/tools", params={"toolId": "c"}, json=FN),
            ]

    set_, a, b, negative, unknown, off, c = _run(go())
    assert set_.json() == {"writesPerMinute": 60, "readsPerMinute": 0, "burst": 0}
    assert (a.status_code, b.status_code, c.status_code) == (200, 429, 200)
    assert negative.status_code == 400 and unknown.status_code == 400
    assert off.json()["writesPerMinute"] == 0


def test_the_official_client_reads_the_refusal_as_google_s() -> None:
    """google-cloud-ces over REST: a create over quota is TooManyRequests (429), with the ErrorInfo's
    reason, domain and metadata parsed from the details as api_core parses Google's."""
    from google.api_core import exceptions
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import ces_v1

    from cesync.emulator.server import BackgroundServer

    with BackgroundServer(auto_create_apps=True, quota=QuotaConfig(writes_per_minute=60, burst=1)) as server:
        client = ces_v1.AgentServiceClient(
            credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=server.url)
        )
        tool = ces_v1.Tool(python_function=ces_v1.PythonFunction(name="f", python_code=FN["pythonFunction"]["pythonCode"]))
        client.create_tool(parent=APP, tool=tool, tool_id="t1")
        try:
            client.create_tool(parent=APP, tool=tool, tool_id="t2")
        except exceptions.TooManyRequests as exc:  # REST: by the HTTP status, as for Google
            refused = exc
        else:
            raise AssertionError("the second create was not refused")
    assert refused.code == 429
    assert (refused.reason, refused.domain) == ("RATE_LIMIT_EXCEEDED", "googleapis.com")
    assert refused.metadata["quota_metric"] == "ces.googleapis.com/write_requests"

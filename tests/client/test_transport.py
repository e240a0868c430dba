"""client/transport.py: httpx's transport with cesync's backend and pool, over a real socket."""

from __future__ import annotations

import asyncio
import ssl

import httpcore
import httpx

from cesync.client import CesClient
from cesync.client.transport import http_transport
from cesync.emulator.server import BackgroundServer

PARENT = "projects/p/locations/us/apps/transport"
CODE = "def f(x):\n    return x\n"


def test_many_requests_over_few_connections(emulator: BackgroundServer) -> None:
    """More calls in flight than connections: every call is answered, and the pool never grows past its limit."""
    seen: list[int] = []

    async def run() -> None:
        async with CesClient(emulator.url, max_connections=3) as client:
            pool = client.http._transport._pool  # type: ignore[attr-defined]

            async def one(i: int) -> None:
                written = await client.create(PARENT, "tools", f"t{i}", {"pythonFunction": {"pythonCode": CODE}})
                assert written.error is None, written.error
                seen.append(len(pool.connections))

            await asyncio.gather(*(one(i) for i in range(40)))
            listed = await client.list_all(PARENT, "tools")
            assert {t["name"].rsplit("/", 1)[-1] for t in listed} >= {f"t{i}" for i in range(40)}

    asyncio.run(run())
    assert len(seen) == 40 and max(seen) <= 3


def test_plain_http_loads_no_ca_bundle_and_trusts_nothing() -> None:
    """An http:// endpoint's transport: no certificates loaded, and a TLS connection could not be verified."""
    limits = httpx.Limits(max_connections=2)
    pool = http_transport(limits, tls=False)._pool
    context = pool._ssl_context
    assert isinstance(pool, httpcore.AsyncConnectionPool)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0
    assert http_transport(limits)._pool._ssl_context.cert_store_stats()["x509_ca"] > 0

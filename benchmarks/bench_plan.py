"""plan over N tools with 20 ms latency, side by side with a naive reader that GETs each tool.

Target: plan under 1.5 s, at least 10x faster than the naive reader, peak memory under 200 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import generate

from cesync.apply import apply_plan
from cesync.emulator.server import BackgroundServer
from cesync.workflow import make_plan, open_context


async def naive(url: str, parent: str) -> int:
    """Per-resource refresh: list the names, then GET every tool one after another."""
    async with httpx.AsyncClient(base_url=url) as c:
        names, token = [], ""
        while True:
            page = (
                await c.get(f"/v1/{parent}/tools", params={"pageSize": 1000, **({"pageToken": token} if token else {})})
            ).json()
            names += [t["name"] for t in page.get("tools", [])]
            token = page.get("nextPageToken", "")
            if not token:
                break
        for name in names:
            (await c.get(f"/v1/{name}")).raise_for_status()
        return len(names)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, BackgroundServer() as server:
        root = generate(Path(tmp), args.n)
        ctx = open_context(root, "bench", server.url)

        async def seed() -> None:
            async with ctx.client(max_connections=64) as c:
                result = await apply_plan(c, await make_plan(ctx, c), parallelism=32)
                assert result.ok

        asyncio.run(seed())
        server.app.state.faults.update({"latency_ms": args.latency_ms})

        async def plan() -> int:
            async with ctx.client() as c:
                return len((await make_plan(ctx, c)).changes)

        start = time.perf_counter()
        changes = asyncio.run(plan())
        t_plan = time.perf_counter() - start
        tracemalloc.start()  # a second, traced run: tracing slows Python, so it is not timed
        asyncio.run(plan())
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert changes == 0
        start = time.perf_counter()
        count = asyncio.run(naive(server.url, ctx.env.parent))
        t_naive = time.perf_counter() - start
    print(
        f"plan {args.n} tools at {args.latency_ms:.0f} ms latency: cesync {t_plan:.2f} s, naive per-tool GET {t_naive:.2f} s "
        f"({count} GETs); ratio {t_naive / t_plan:.1f}x; peak traced memory {peak / 1e6:.0f} MB"
    )
    print(
        f"targets: plan < 1.5 s {'ok' if t_plan < 1.5 else 'MISSED'}; >= 10x {'ok' if t_naive / t_plan >= 10 else 'MISSED'}; "
        f"< 200 MB {'ok' if peak < 200e6 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()

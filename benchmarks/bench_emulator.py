"""Does the emulator keep up? Listing 1,000 realistic tools and 16 concurrent writers.

    python benchmarks/bench_emulator.py [--n 1000] [--writers 16] [--per-writer 25] [--repeats 5]

The emulator runs in its own process (``cesync emulator --state``, SQLite in WAL
mode) with no added latency, so every figure is the emulator's own cost. The
tools are the benchmark mix (benchmarks/generate.py: Python functions of ~30
lines, OpenAPI tools with ~120-line schemas, client functions). Printed: the
median time to list all of them (one page of 1,000, both enum encodings, and the
official client's pager), and the throughput of 16 concurrent creators, each
compared with the 20 ms per call the other benchmarks assume for the network.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import openapi_schema, python_code

APP = "projects/bench/locations/us/apps/bench"
RTT_MS = 20.0


def body(i: int) -> dict[str, Any]:
    if i % 20 < 8:
        return {"pythonFunction": {"pythonCode": python_code(i)}, "timeout": "30s"}
    if i % 20 < 15:
        # CreateTool refuses OpenAPI tools (a toolset makes them): a client function as large stands in.
        return {"clientFunction": {"name": f"api_{i}", "description": openapi_schema(i)}}
    return {
        "clientFunction": {
            "name": f"client_{i}",
            "description": "Ask the app to do something.",
            "parameters": {"type": "OBJECT", "properties": {"id": {"type": "STRING"}, "n": {"type": "INTEGER", "maxItems": 3}}},
        },
        "executionType": "SYNCHRONOUS",
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(state: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "cesync.cli",
        "emulator",
        "--port",
        str(port),
        "--state",
        str(state),
        "--auto-create-apps",
        "--admin",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/admin/state", timeout=1)
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the emulator did not start")


def median_time(fn: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


async def writers(url: str, count: int, per: int, prefix: str) -> tuple[float, list[float]]:
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=count)

    async def one(c: httpx.AsyncClient, w: int) -> None:
        for i in range(per):
            t0 = time.perf_counter()
            r = await c.post(f"/v1/{APP}/tools", params={"toolId": f"{prefix}{w}-{i}"}, json=body(w * per + i))
            latencies.append(time.perf_counter() - t0)
            assert r.status_code == 200, r.text

    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as c:
        t0 = time.perf_counter()
        await asyncio.gather(*(one(c, w) for w in range(count)))
        return time.perf_counter() - t0, latencies


def official_list(url: str) -> int:
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import ces_v1

    client = ces_v1.AgentServiceClient(
        credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=url)
    )
    return len(list(client.list_tools(request={"parent": APP, "page_size": 1000})))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--per-writer", type=int, default=25)
    parser.add_argument("--repeats", type=int, default=5)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start(Path(tmp) / "state.db")
        try:
            run(url, opts)
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def run(url: str, opts: argparse.Namespace) -> None:
    print(f"emulator: own process, --state (SQLite), no added latency; pid {os.getpid()} drives it")
    wall, lat = asyncio.run(writers(url, opts.writers, opts.n // opts.writers + 1, "seed"))
    created = opts.writers * (opts.n // opts.writers + 1)
    print(f"seeded {created} realistic tools with {opts.writers} writers in {wall:.2f} s")
    with httpx.Client(base_url=url, timeout=60) as c:

        def list_all(alt: str | None) -> None:
            params = {"pageSize": "1000", **({"$alt": alt} if alt else {})}
            r = c.get(f"/v1/{APP}/tools", params=params)
            assert r.status_code == 200 and len(r.json()["tools"]) == 1000

        names = median_time(lambda: list_all(None), opts.repeats)
        ints = median_time(lambda: list_all("json;enum-encoding=int"), opts.repeats)
        size = len(c.get(f"/v1/{APP}/tools", params={"pageSize": "1000"}).content)
    official = median_time(lambda: official_list(url), max(3, opts.repeats // 2))
    print(
        f"list 1,000 tools, one page ({size / 1e6:.1f} MB): {names * 1000:.0f} ms (enum names), {ints * 1000:.0f} ms (enum numbers)"
    )
    print(f"official client list_tools of all {created} tools (pager + parsing): {official * 1000:.0f} ms")
    wall, lat = asyncio.run(writers(url, opts.writers, opts.per_writer, "w"))
    n = opts.writers * opts.per_writer
    p50, p95 = statistics.median(lat) * 1000, sorted(lat)[int(len(lat) * 0.95)] * 1000
    ideal = n * RTT_MS / 1000 / opts.writers
    print(
        f"{opts.writers} concurrent writers, {n} creates: {wall:.2f} s = {n / wall:.0f} creates/s; "
        f"latency p50 {p50:.1f} ms, p95 {p95:.1f} ms"
    )
    print(
        f"  vs the network: {n} creates at {RTT_MS:.0f} ms x {n} / {opts.writers} = {ideal:.2f} s ideal; "
        f"emulator service time per create {wall / n * 1000:.1f} ms ({'not ' if wall / n * 1000 < RTT_MS / 2 else ''}a bottleneck)"
    )


if __name__ == "__main__":
    main()

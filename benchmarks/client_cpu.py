"""Client CPU per create: 1,000 CesClient.create calls at concurrency 16, emulator in its own process.

Not a test and not one of the issue's targets: a microbenchmark for work on
src/cesync/client. The machine's cores are shared, so it prints the CPU time the
client process spent (time.process_time), not wall time. To compare two trees,
run it with each on PYTHONPATH, interleaved, and compare medians:

    python benchmarks/client_cpu.py --runs 5
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

PARENT = "projects/bench/locations/us/apps/cpu"
CODE = "def f(x):\n" + "".join(f"    y{i} = x * {i}  # line {i} of a realistic function\n" for i in range(30)) + "    return x\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_emulator() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    args = ["--port", str(port), "--latency-ms", "0", "--auto-create-apps"]
    process = subprocess.Popen(
        [sys.executable, "-c", "from cesync.cli import run; run()", "emulator", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(f"{url}/v1/{PARENT}/tools", timeout=1).read()
            return process, url
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise SystemExit("the emulator did not start")


async def _creates(url: str, n: int, concurrency: int) -> float:
    from cesync.client import CesClient

    async with CesClient(url, max_connections=32) as client:
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with gate:
                body = {"pythonFunction": {"name": "f", "pythonCode": CODE}, "executionType": 1, "timeout": "1.500s"}
                written = await client.create(PARENT, "tools", f"t{i}", body)
                assert written.error is None, written.error

        await asyncio.gather(*(one(i) for i in range(16)))  # warm: connections open, imports done
        start = time.process_time()
        await asyncio.gather(*(one(i) for i in range(16, 16 + n)))
        return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    seconds = []
    for _ in range(args.runs):
        process, url = _start_emulator()
        try:
            seconds.append(asyncio.run(_creates(url, args.n, args.concurrency)))
        finally:
            process.terminate()
            process.wait()
    print(
        f"client CPU per {args.n} creates: median {statistics.median(seconds):.3f}s ({' '.join(f'{s:.3f}' for s in seconds)}) [{os.environ.get('PYTHONPATH', 'installed')}]"
    )


if __name__ == "__main__":
    main()

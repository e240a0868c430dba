"""cesync test: N Python-tool tests (each a sandboxed child process in the emulator),
run one at a time and with --parallelism P, side by side in one run.

Prints the time of each and the speed-up. Target: at least 1.5x on 2 cores at P=4
(each call spends most of its time starting a Python process, which overlaps).
"""

from __future__ import annotations

import argparse
import asyncio
import time

from cesync.client import CesClient
from cesync.core.toolcall import request_for
from cesync.emulator.server import BackgroundServer
from cesync.tooltests import Case, run_cases

APP = "projects/bench/locations/us/apps/tests"
CODE = "def score(n: int) -> dict:\n    return {'square': n * n}\n"


async def run(url: str, cases: list[Case], parallelism: int) -> float:
    async with CesClient(url) as client:

        async def call(case: Case) -> dict[str, object]:
            return await client.execute(APP, request_for(case.tool, APP, case.args))

        start = time.perf_counter()
        results = await run_cases(cases, call, parallelism)
        elapsed = time.perf_counter() - start
    failed = [r for r in results if r.status != "passed"]
    assert not failed, failed[0].messages
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--parallelism", type=int, default=4)
    opts = parser.parse_args()
    cases = [Case("bench", i, f"t{i}", "score", {"n": i}, response={"result": {"square": i * i}}) for i in range(opts.n)]
    with BackgroundServer() as server:

        async def setup() -> None:
            async with CesClient(server.url) as client:
                (await client.create(APP, "tools", "score", {"pythonFunction": {"pythonCode": CODE}})).unwrap()

        asyncio.run(setup())
        one = asyncio.run(run(server.url, cases, 1))
        many = asyncio.run(run(server.url, cases, opts.parallelism))
    print(f"{opts.n} tool tests, sequential:        {one:6.2f} s ({one / opts.n * 1000:.0f} ms per test)")
    print(f"{opts.n} tool tests, parallelism {opts.parallelism}:     {many:6.2f} s")
    print(f"speed-up: {one / many:.2f}x (target >= 1.5x)")


if __name__ == "__main__":
    main()

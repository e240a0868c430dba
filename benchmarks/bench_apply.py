"""apply N creates at 20 ms latency and --parallelism 16, side by side with a sequential
script using the official google-cloud-ces client against the same emulator.

Target: within 1.5x of the ideal N x latency / parallelism, and at least 8x faster than sequential.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import generate

from cesync.apply import apply_plan
from cesync.emulator.server import BackgroundServer
from cesync.repo import load_repo
from cesync.workflow import make_plan, open_context


def sequential(url: str, parent: str, bodies: list[tuple[str, dict[str, object]]]) -> None:
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import ces_v1

    client = ces_v1.AgentServiceClient(
        credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=url)
    )
    for tid, body in bodies:
        client.create_tool(parent=parent, tool=ces_v1.Tool.from_json(__import__("json").dumps(body)), tool_id=tid)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=20)
    parser.add_argument("--parallelism", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = generate(Path(tmp), args.n)
        repo = load_repo(root)
        with BackgroundServer() as server:
            server.app.state.faults.update({"latency_ms": args.latency_ms})
            ctx = open_context(root, "bench", server.url)

            async def run() -> float:
                async with ctx.client(max_connections=args.parallelism * 2) as c:
                    plan = await make_plan(ctx, c)
                    start = time.perf_counter()
                    result = await apply_plan(c, plan, parallelism=args.parallelism)
                    elapsed = time.perf_counter() - start
                    assert result.ok and result.counts()["created"] == args.n
                    return elapsed

            t_apply = asyncio.run(run())
        with BackgroundServer() as server:
            server.app.state.faults.update({"latency_ms": args.latency_ms})
            env = repo.env("bench")
            bodies = [(d.id, d.body) for d in repo.render(env)]
            start = time.perf_counter()
            sequential(server.url, env.parent, bodies)
            t_seq = time.perf_counter() - start
    ideal = args.n * args.latency_ms / 1000 / args.parallelism
    print(
        f"apply {args.n} creates at {args.latency_ms:.0f} ms, parallelism {args.parallelism}: cesync {t_apply:.2f} s, "
        f"sequential official client {t_seq:.2f} s; speed-up {t_seq / t_apply:.1f}x; ideal {ideal:.2f} s, "
        f"ratio to ideal {t_apply / ideal:.2f}"
    )
    print(
        f"targets: within 1.5x of ideal {'ok' if t_apply / ideal <= 1.5 else 'MISSED'}; >= 8x {'ok' if t_seq / t_apply >= 8 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()

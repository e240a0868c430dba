"""Seeded fault runs: does apply stay safe and converge when the API misbehaves?

    python benchmarks/bench_faults.py              # 200 runs
    python benchmarks/bench_faults.py --runs 1000 --seed 7

Each run starts from an app holding tools, widgets that reference them and a toolset,
plans a random mix of creates, updates and deletes (--prune), and applies it against the
emulator (in process, over httpx) with 429 (with RetryInfo), 503 and commit-then-drop
faults (the write is done, its reply lost), while a concurrent editor (another client)
changes some resources mid-apply. Then it plans and applies again, as a user would.

Printed, and checked (exit status 1 if one is missed):
  unintended writes  a change of the concurrent editor that cesync overwrote or deleted (must be 0)
  false conflicts    a conflict reported on a resource nobody else wrote (must be 0)
  runs converged     after "plan again", a final plan shows no changes (must be all)
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.client import CesClient, RetryPolicy
from cesync.core.planbuild import build_plan
from cesync.emulator import EmbeddedTransport, FaultConfig
from cesync.pipeline.apply import ApplyResult, apply_plan
from cesync.sync.remote import read_remote

APP = "projects/bench/locations/us/apps/faults"
RETRY = RetryPolicy(attempts=8, initial=0.001, maximum=0.01)
Desired = list[tuple[str, str, dict[str, Any]]]


@dataclass
class Totals:
    runs: int = 0
    converged: int = 0
    unintended_writes: int = 0
    false_conflicts: int = 0
    real_conflicts: int = 0
    editor_writes: int = 0
    lost_replies_settled: int = 0
    retries: int = 0
    failures: list[str] = field(default_factory=list)

    def add(self, other: Totals) -> None:
        for name in ("runs", "converged", "unintended_writes", "false_conflicts", "real_conflicts", "editor_writes"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.lost_replies_settled += other.lost_replies_settled
        self.retries += other.retries
        self.failures += other.failures

    @property
    def ok(self) -> bool:
        return self.unintended_writes == 0 and self.false_conflicts == 0 and self.converged == self.runs


def search(description: str, timeout: str = "") -> dict[str, Any]:
    body: dict[str, Any] = {"googleSearchTool": {"name": "s", "description": description}}
    return {**body, "timeout": timeout} if timeout else body


def widget(source: str) -> dict[str, Any]:
    return {"widgetTool": {"name": "w", "dataMapping": {"sourceToolName": f"{APP}/{source}"}}}


def scenario(rng: random.Random) -> tuple[Desired, Desired]:
    """(what the app holds first, what the repo wants): updates, deletes in dependency order, creates."""
    base: Desired = [("toolset", "ts", {"mcpToolset": {"serverAddress": "https://mcp.example/sse"}})]
    base += [("tool", f"t{i}", search("v1")) for i in range(8)]
    base += [("tool", "w0", widget("tools/t0")), ("tool", "w1", widget("toolsets/ts/tools/op"))]
    fate = {rid: rng.choice(["keep", "update", "update", "delete"]) for _, rid, _ in base}
    for referrer, source in (("w0", "t0"), ("w1", "ts")):  # the repo never references what it deletes
        if fate[referrer] != "delete" and fate[source] == "delete":
            fate[source] = "keep"
    desired: Desired = []
    for kind, rid, body in base:
        if fate[rid] == "update":
            body = search("v2") if "googleSearchTool" in body else {**body, "timeout": "9s"}
        if fate[rid] != "delete":
            desired.append((kind, rid, body))
    creates = rng.randint(0, 4)
    desired += [("tool", f"n{i}", search("new")) for i in range(creates)]
    if creates and rng.random() < 0.5:
        desired.append(("tool", "nw", widget("tools/n0")))  # created after its source
    return base, desired


class Editor(httpx.AsyncBaseTransport):
    """Forwards cesync's calls; just before cesync's k-th write, another client edits some tools."""

    def __init__(self, inner: EmbeddedTransport, rng: random.Random, targets: list[str]) -> None:
        self.inner = inner
        self.writes_seen = 0
        self.at = rng.randint(1, 6) if rng.random() < 0.6 else -1  # 40% of runs: nobody else writes
        self.targets = rng.sample(targets, k=min(len(targets), rng.randint(1, 3)))
        self.fields = {t: rng.choice(["description", "timeout"]) for t in self.targets}
        self.written: dict[str, tuple[str, str]] = {}  # tool id -> (field, value) that the editor managed to write

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "GET":
            self.writes_seen += 1
            if self.writes_seen == self.at:
                await self.edit()
        return await self.inner.handle_async_request(request)

    async def edit(self) -> None:
        async with CesClient("http://emu", transport=self.inner, retry=RETRY, notify=lambda line: None) as other:
            for tid in self.targets:
                name, field_, value = f"{APP}/tools/{tid}", self.fields[tid], f"editor-{tid}"
                try:
                    current = await other.get(name)
                except Exception:
                    continue  # already deleted by cesync
                if field_ == "description":
                    body = {"googleSearchTool": {**current["googleSearchTool"], "description": value}}
                    mask = ["googleSearchTool.description"]
                else:
                    value = "17s"
                    body, mask = {"timeout": value}, ["timeout"]
                await other.patch(name, {**body, "etag": current["etag"]}, mask)
                # A reply may be lost here too: what the app holds says whether the edit landed.
                try:
                    after = await other.get(name)
                except Exception:
                    continue
                if _field(after, field_) == value:
                    self.written[tid] = (field_, value)


def _field(body: dict[str, Any], name: str) -> str:
    if name == "description":
        return str(body.get("googleSearchTool", {}).get("description", ""))
    return str(body.get("timeout", ""))


async def one_run(seed: int) -> Totals:
    rng = random.Random(seed)
    base, desired = scenario(rng)
    faults = FaultConfig(seed=seed)
    inner = EmbeddedTransport(faults=faults, apps=[APP])
    lines: list[str] = []
    async with CesClient("http://emu", transport=inner, retry=RETRY, notify=lambda line: None) as setup:
        created = await apply_plan(setup, build_plan("bench", APP, [Resource(KINDS[k], i, b) for k, i, b in base], []))
        assert created.ok, created.outcomes
    faults.update(
        {
            "rate_429": rng.choice([0.0, 0.05, 0.15]),
            "rate_503": rng.choice([0.0, 0.05, 0.15]),
            "drop_rate": rng.choice([0.0, 0.1, 0.3]),
            "retry_delay_s": 0.001,
        }
    )
    editor = Editor(inner, rng, [rid for kind, rid, body in base if "googleSearchTool" in body])
    totals = Totals(runs=1)
    async with CesClient("http://emu", transport=editor, retry=RETRY, notify=lines.append) as c:
        plan = build_plan("bench", APP, [Resource(KINDS[k], i, b) for k, i, b in desired], await read_remote(c, APP), prune=True)
        result = await apply_plan(c, plan, parallelism=rng.choice([1, 4, 8]))
        after = {r.id: r.body for r in await read_remote(c, APP)}
    _judge(result, editor, after, totals)
    totals.retries = len(lines)
    async with CesClient("http://emu", transport=inner, retry=RETRY, notify=lambda line: None) as c:
        for _ in range(3):  # plan again (a real conflict stops the first apply early)
            again = build_plan(
                "bench", APP, [Resource(KINDS[k], i, b) for k, i, b in desired], await read_remote(c, APP), prune=True
            )
            if not again.changes:
                totals.converged = 1
                break
            await apply_plan(c, again, parallelism=4)
    if not totals.converged:
        totals.failures.append(f"seed {seed}: did not converge: {[(o.id, o.status, o.message) for o in result.outcomes]}")
    return totals


def _judge(result: ApplyResult, editor: Editor, after: dict[str, dict[str, Any]], totals: Totals) -> None:
    totals.editor_writes = len(editor.written)
    for tid, (field_, value) in editor.written.items():
        if tid not in after or _field(after[tid], field_) != value:
            totals.unintended_writes += 1
            totals.failures.append(f"editor's {field_} of {tid} was overwritten or deleted")
    for o in result.outcomes:
        if o.status == "conflict":
            if o.id in editor.written:
                totals.real_conflicts += 1
            else:
                totals.false_conflicts += 1
                totals.failures.append(f"false conflict on {o.kind} {o.id}: {o.message}")
        if "reply was lost" in o.message and o.status == "done":
            totals.lost_replies_settled += 1


def run_many(runs: int, seed: int = 0) -> Totals:
    totals = Totals()
    for i in range(runs):
        totals.add(asyncio.run(one_run(seed * 100_003 + i)))
    return totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    t = run_many(args.runs, args.seed)
    print(f"fault runs: {t.runs} (seed {args.seed}, {time.perf_counter() - started:.1f}s)")
    print(f"  faults seen: {t.retries} retries, {t.lost_replies_settled} lost replies settled by reading back")
    print(f"  concurrent editor: {t.editor_writes} edits mid-apply, {t.real_conflicts} real conflicts reported")
    print(f"  unintended writes: {t.unintended_writes}  (must be 0) {'PASS' if t.unintended_writes == 0 else 'FAIL'}")
    print(f"  false conflicts:   {t.false_conflicts}  (must be 0) {'PASS' if t.false_conflicts == 0 else 'FAIL'}")
    print(f"  runs converged:    {t.converged}/{t.runs} {'PASS' if t.converged == t.runs else 'FAIL'}")
    for line in t.failures[:20]:
        print(f"    {line}")
    return 0 if t.ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""apply against the emulator: lost replies, retries, deletes (prune, force, races)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.client import CesClient, RetryPolicy
from cesync.core.plan import Plan
from cesync.core.planbuild import build_plan
from cesync.emulator import EmbeddedTransport, FaultConfig
from cesync.errors import ApiError
from cesync.pipeline.apply import ApplyResult, apply_plan
from cesync.sync.remote import read_remote

FAST = RetryPolicy(attempts=5, initial=0.001, maximum=0.01)
APP = "projects/p/locations/us/apps/a"


def search(description: str) -> dict[str, Any]:
    return {"googleSearchTool": {"name": "s", "description": description}}


def widget(source: str) -> dict[str, Any]:
    return {"widgetTool": {"name": "w", "dataMapping": {"sourceToolName": f"{APP}/tools/{source}"}}}


class Recorder(httpx.AsyncBaseTransport):
    """The emulator, with every request and its status written down (in order of answer)."""

    def __init__(self, faults: FaultConfig | None = None) -> None:
        self.inner = EmbeddedTransport(faults=faults, apps=[APP])
        self.calls: list[tuple[str, str, int]] = []
        self.on_drop: Callable[[httpx.AsyncBaseTransport], Awaitable[None]] | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await self.inner.handle_async_request(request)
        except httpx.TransportError:
            self.calls.append((request.method, request.url.path.rsplit("/", 1)[-1], 0))
            if self.on_drop is not None:  # someone else writes between the lost reply and the resend
                await self.on_drop(self.inner)
            raise
        self.calls.append((request.method, request.url.path.rsplit("/", 1)[-1], response.status_code))
        return response

    def writes(self) -> list[tuple[str, str, int]]:
        return [c for c in self.calls if c[0] != "GET"]


async def tools_of(c: CesClient) -> list[Resource]:
    """The app's tools and toolsets: these tests' repo (agents made through the admin API stay outside it)."""
    return [r for r in await read_remote(c, APP) if r.kind.name in ("tool", "toolset")]


async def _plan(c: CesClient, desired: dict[str, dict[str, Any]], prune: bool = False) -> Plan:
    return build_plan("e", APP, [Resource(KINDS["tool"], k, v) for k, v in desired.items()], await tools_of(c), prune=prune)


def run(
    transport: httpx.AsyncBaseTransport,
    steps: Callable[[CesClient], Awaitable[ApplyResult]],
    lines: list[str] | None = None,
) -> ApplyResult:
    async def go() -> ApplyResult:
        notify = lines.append if lines is not None else (lambda line: None)
        async with CesClient("http://emu", transport=transport, retry=FAST, notify=notify) as c:
            return await steps(c)

    return asyncio.run(go())


async def converge(c: CesClient, desired: dict[str, dict[str, Any]], **kw: Any) -> ApplyResult:
    result = await apply_plan(c, await _plan(c, desired, kw.pop("prune", False)), **kw)
    return result


# --- writes whose reply was lost --------------------------------------------------------------


@pytest.mark.parametrize("action", ["create", "update", "delete"])
def test_lost_reply_of_own_write_counts_as_done(action: str) -> None:
    """The write commits, its reply is dropped; the resend meets our own write and must not be a conflict."""
    faults = FaultConfig()
    transport = Recorder(faults)
    before = {} if action == "create" else {"t": search("old")}
    after = {} if action == "delete" else {"t": search("new")}
    lines: list[str] = []

    async def steps(c: CesClient) -> ApplyResult:
        await converge(c, before)
        plan = await _plan(c, after, prune=True)
        faults.update({"drop_next": 1})
        return await apply_plan(c, plan)

    result = run(transport, steps, lines)
    assert result.ok, result.outcomes
    assert [o.status for o in result.outcomes] == ["done"]
    method = {"create": "POST", "update": "PATCH", "delete": "DELETE"}[action]
    sent = [w for w in transport.writes() if w[0] == method]
    assert len(sent) == 2 and sent[0][2] == 0  # the lost reply, then the resend meeting our own write
    assert sent[1][2] == (404 if action == "delete" else 409)
    assert len(lines) == 1 and lines[0].startswith(f"retry 1/4: {action} tool {APP}/tools/t: reply lost"), lines
    assert "next attempt in" in lines[0]
    final = run(transport, lambda c: converge(c, after, prune=True))
    assert final.outcomes == []  # nothing left to do


async def edit(transport: httpx.AsyncBaseTransport, tid: str, description: str) -> None:
    """Another client (a person, another pipeline) changes a tool's description."""
    async with CesClient("http://emu", transport=transport) as other:
        current = await other.get(f"{APP}/tools/{tid}")
        body = {"googleSearchTool": {**current["googleSearchTool"], "description": description}, "etag": current["etag"]}
        (await other.patch(f"{APP}/tools/{tid}", body, ["googleSearchTool.description"])).unwrap()


@pytest.mark.parametrize(("theirs", "expected"), [("theirs", "conflict"), ("new", "done")])
def test_lost_reply_then_someone_else_writes(theirs: str, expected: str) -> None:
    """Between our lost reply and the resend another client writes: a real conflict unless it wrote what we did."""
    faults = FaultConfig()
    transport = Recorder(faults)

    async def steps(c: CesClient) -> ApplyResult:
        await converge(c, {"t": search("old")})
        plan = await _plan(c, {"t": search("new")})
        faults.update({"drop_next": 1})
        transport.on_drop = lambda inner: edit(inner, "t", theirs)
        result = await apply_plan(c, plan)
        assert (await c.get(f"{APP}/tools/t"))["googleSearchTool"]["description"] == theirs  # never overwritten
        return result

    result = run(transport, steps)
    assert [o.status for o in result.outcomes] == [expected], result.outcomes
    if expected == "conflict":
        assert "reply lost" in result.outcomes[0].message and "plan again" in result.outcomes[0].message


def test_lost_reply_then_someone_else_edits_another_field_counts_as_done() -> None:
    """Only the masked fields are compared: a change elsewhere is not ours to judge."""
    faults = FaultConfig()
    transport = Recorder(faults)

    async def other_field(inner: httpx.AsyncBaseTransport) -> None:
        async with CesClient("http://emu", transport=inner) as other:
            current = await other.get(f"{APP}/tools/t")
            (await other.patch(f"{APP}/tools/t", {"timeout": "7s", "etag": current["etag"]}, ["timeout"])).unwrap()

    async def steps(c: CesClient) -> ApplyResult:
        await converge(c, {"t": search("old")})
        plan = await _plan(c, {"t": search("new")})
        faults.update({"drop_next": 1})
        transport.on_drop = other_field
        return await apply_plan(c, plan)

    result = run(transport, steps)
    assert [o.status for o in result.outcomes] == ["done"]


# --- retry policy (AIP-194) -------------------------------------------------------------------

RETRIED = {"UNAVAILABLE", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED"}
NEVER = {"INVALID_ARGUMENT", "FAILED_PRECONDITION", "NOT_FOUND", "PERMISSION_DENIED", "UNAUTHENTICATED", "INTERNAL", "ABORTED"}


@pytest.mark.parametrize("status", sorted(RETRIED | NEVER))
@pytest.mark.parametrize("call", ["list", "get", "create", "patch", "delete", "execute"])
def test_what_is_retried(status: str, call: str) -> None:
    faults = FaultConfig(fail_status=status)
    transport = Recorder(faults)
    lines: list[str] = []
    requests: dict[str, Callable[[CesClient], Awaitable[Any]]] = {
        "list": lambda c: c.list_all(APP, "tools"),
        "get": lambda c: c.get(f"{APP}/tools/t"),
        "create": lambda c: c.create(APP, "tools", "t", search("x")),
        "patch": lambda c: c.patch(f"{APP}/tools/t", {**search("x"), "etag": "e"}, ["googleSearchTool"]),
        "delete": lambda c: c.delete(f"{APP}/tools/t", "e"),
        "execute": lambda c: c.execute(APP, {"tool": f"{APP}/tools/t", "args": {}}),
    }

    async def go() -> None:
        async with CesClient("http://emu", transport=transport, retry=FAST, notify=lines.append) as c:
            with contextlib.suppress(ApiError):
                await requests[call](c)

    asyncio.run(go())
    retried = status in RETRIED and call != "execute"  # executeTool may have side effects: never resent
    assert len(transport.calls) == (FAST.attempts if retried else 1), transport.calls
    assert len(lines) == (FAST.attempts - 1 if retried else 0), lines
    for n, line in enumerate(lines, 1):
        assert line.startswith(f"retry {n}/{FAST.attempts - 1}: ") and status in line and "next attempt in" in line


def test_retry_waits_at_least_the_retry_info_delay() -> None:
    faults = FaultConfig(fail_status="", rate_429=1.0, retry_delay_s=0.05)
    lines: list[str] = []

    async def go() -> None:
        async with CesClient(
            "http://emu", transport=EmbeddedTransport(faults=faults, apps=[APP]), retry=FAST, notify=lines.append
        ) as c:
            with pytest.raises(ApiError, match="RESOURCE_EXHAUSTED"):
                await c.get(f"{APP}/tools/t")

    asyncio.run(go())
    assert lines and all("server asks to wait 0.05s; next attempt in 0.05s" in line for line in lines), lines


def test_a_refused_first_connection_is_one_error_without_retries() -> None:
    """Nothing listens and nothing ever answered: one error saying what to check, no retry lines
    (#28 item 4; a server that answered once gets its retries: test_cli_endpoints)."""
    lines: list[str] = []

    async def go() -> None:
        async with CesClient("http://127.0.0.1:9", retry=FAST, notify=lines.append) as c:
            with pytest.raises(ApiError, match=r"nothing listens there.*is the emulator running"):
                await c.get(f"{APP}/tools/t")

    asyncio.run(go())
    assert lines == []


# --- deletes ------------------------------------------------------------------------------------------

TOOLSET = {"mcpToolset": {"serverAddress": "https://mcp.example/sse"}}


def test_prune_deletes_referrers_first() -> None:
    """A chain w2 -> w1 -> src and a widget on a toolset's tool: each is deleted only after its referrer is gone."""
    transport = Recorder()
    tools = {"src": search("s"), "w1": widget("src"), "w2": widget("w1")}
    tools["w3"] = {"widgetTool": {"name": "w", "dataMapping": {"sourceToolName": f"{APP}/toolsets/ts/tools/op"}}}

    async def steps(c: CesClient) -> ApplyResult:
        desired = [Resource(KINDS["toolset"], "ts", TOOLSET), *(Resource(KINDS["tool"], k, v) for k, v in tools.items())]
        created = await apply_plan(c, build_plan("e", APP, desired, await tools_of(c)))
        assert created.ok, created.outcomes
        transport.calls.clear()
        plan = build_plan("e", APP, [], await tools_of(c), prune=True)
        result = await apply_plan(c, plan, parallelism=8)
        assert await tools_of(c) == []
        return result

    result = run(transport, steps)
    assert result.ok and result.counts()["deleted"] == 5, result.outcomes
    order = [rid for method, rid, status in transport.writes() if method == "DELETE" and status == 200]
    assert sorted(order) == ["src", "ts", "w1", "w2", "w3"]
    assert order.index("w2") < order.index("w1") < order.index("src") and order.index("w3") < order.index("ts")


def test_failed_delete_keeps_what_it_references() -> None:
    """When a referrer's delete fails (an agent uses it), what it references is not deleted either."""
    transport = Recorder()

    async def steps(c: CesClient) -> ApplyResult:
        await converge(c, {"src": search("s"), "w1": widget("src")})
        await agent(transport.inner, "support", [f"{APP}/tools/w1"])
        return await converge(c, {}, prune=True)

    result = run(transport, steps)
    by_id = {o.id: o for o in result.outcomes}
    assert by_id["w1"].status == "failed" and "referenced by agent(s) support" in by_id["w1"].message
    assert "--force-delete" in by_id["w1"].message
    assert by_id["src"].status == "skipped" and "w1" in by_id["src"].message


def test_force_is_sent_only_to_deletes_that_have_it() -> None:
    """--force-delete: DeleteToolRequest has ``force``, DeleteDeploymentRequest has not (the behaviour table)."""
    transport = Recorder()
    queries: list[tuple[str, str]] = []
    inner = transport.inner

    class Queries(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            if request.method == "DELETE":
                queries.append((request.url.path.rsplit("/", 2)[-2], request.url.params.get("force", "")))
            return await inner.handle_async_request(request)

    web = {"displayName": "Web", "channelProfile": {"channelType": "WEB_UI"}}

    async def steps(c: CesClient) -> ApplyResult:
        desired = [Resource(KINDS["tool"], "t", search("t")), Resource(KINDS["deployment"], "web", web)]
        assert (await apply_plan(c, build_plan("e", APP, desired, await read_remote(c, APP)))).ok
        remote = [r for r in await read_remote(c, APP) if r.kind.name in ("tool", "deployment")]
        return await apply_plan(c, build_plan("e", APP, [], remote, prune=True), force_delete=True)

    result = run(Queries(), steps)
    assert result.ok and result.counts()["deleted"] == 2, result.outcomes
    assert sorted(queries) == [("deployments", ""), ("tools", "true")]


def test_a_refused_delete_without_force_does_not_offer_force_delete() -> None:
    from cesync.errors import FailedPrecondition
    from cesync.pipeline.apply import _failure

    c = build_plan("e", APP, [], [Resource(KINDS["deployment"], "d", {"name": f"{APP}/deployments/d"})], prune=True).changes[0]
    status, message = _failure(c, FailedPrecondition("x is referenced by the app"), False)
    assert status == "failed" and "--force-delete" not in message and "has no force" in message


async def agent(transport: httpx.AsyncBaseTransport, agent_id: str, tools: list[str]) -> None:
    async with httpx.AsyncClient(transport=transport, base_url="http://emu") as h:
        (await h.post("/admin/agents", json={"app": APP, "agentId": agent_id, "tools": tools})).raise_for_status()


def test_delete_already_gone_is_done_and_said() -> None:
    """The NotFound race: someone deletes the resource between plan and apply."""
    transport = Recorder()

    async def steps(c: CesClient) -> ApplyResult:
        await converge(c, {"a": search("a"), "b": search("b")})
        plan = await _plan(c, {}, prune=True)
        (await c.delete(f"{APP}/tools/a", None)).unwrap()  # someone else, first
        return await apply_plan(c, plan)

    result = run(transport, steps)
    by_id = {o.id: o for o in result.outcomes}
    assert result.ok and by_id["a"].status == by_id["b"].status == "done"
    assert "already gone" in by_id["a"].message and not by_id["b"].message


def test_the_docs_show_the_retry_lines_as_printed() -> None:
    from cesync.client.replies import retry_line
    from cesync.errors import RetryableError, TransportError
    from tests.conftest import ROOT

    readme = (ROOT / "docs" / "commands" / "apply.md").read_text(encoding="utf-8")
    lost = TransportError("x", sent=True, operation="update tool", resource=f"{APP}/tools/t")
    quota = RetryableError(
        "x",
        code=429,
        status="RESOURCE_EXHAUSTED",
        operation="list tools",
        resource=APP,
        details=[{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"}],
    )
    assert retry_line(lost, 0.13, 1, 6) in readme
    assert retry_line(quota, 2.0, 1, 6) in readme


# --- the fault benchmark, reduced ------------------------------------------------------------------


def test_fault_benchmark_reduced() -> None:
    """20 seeded runs of benchmarks/bench_faults.py: no overwrite, no false conflict, every run converges."""
    import importlib.util

    from tests.conftest import ROOT

    spec = importlib.util.spec_from_file_location("bench_faults", ROOT / "benchmarks" / "bench_faults.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules["bench_faults"] = bench  # dataclasses look their module up there
    spec.loader.exec_module(bench)
    totals = bench.run_many(20, seed=3)
    assert totals.unintended_writes == 0 and totals.false_conflicts == 0, totals.failures
    assert totals.converged == totals.runs == 20, totals.failures
    # The faults did happen, so the zeros above mean something.
    assert totals.retries > 0 and totals.lost_replies_settled > 0 and totals.editor_writes > 0 and totals.real_conflicts > 0


# --- two applies of the same change at once ---------------------------------------------------


def test_two_applies_of_the_same_change_both_succeed() -> None:
    """Both planned before either wrote: the second's update meets ABORTED, its create ALREADY_EXISTS;
    read back, each already is what it wanted: done ("already applied"), not a conflict."""
    transport = Recorder()
    wanted = {"t": search("new"), "u": search("made")}

    async def steps(c: CesClient) -> ApplyResult:
        await converge(c, {"t": search("old")})
        first, second = await _plan(c, wanted), await _plan(c, wanted)
        assert (await apply_plan(c, first)).ok
        return await apply_plan(c, second)

    result = run(transport, steps)
    assert sorted((o.action, o.status) for o in result.outcomes) == [("create", "done"), ("update", "done")], result.outcomes
    assert all(o.message.startswith("already applied") for o in result.outcomes)
    assert [w[2] for w in transport.writes()[-2:]] == [409, 409]  # both met the first apply's writes


def test_a_conflict_with_a_different_change_is_still_a_conflict() -> None:
    transport = Recorder()

    async def steps(c: CesClient) -> ApplyResult:
        await converge(c, {"t": search("old")})
        plan = await _plan(c, {"t": search("new")})
        await edit(transport.inner, "t", "theirs")
        return await apply_plan(c, plan)

    [outcome] = run(transport, steps).outcomes
    assert outcome.status == "conflict" and "etag mismatch" in outcome.message

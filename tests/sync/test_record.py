"""Finding the applied record: the newest of the env's, from the versions' heads, one snapshot read."""

from __future__ import annotations

import asyncio
import functools
import gc
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.client import CesClient
from cesync.client.apps import create_version
from cesync.emulator.server import BackgroundServer
from cesync.repo.environments import EnvTarget
from cesync.sync.record import changes_since, last_applied, write_record

APPS = itertools.count()


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=True) as s:
        yield s


def target(name: str, app: str) -> EnvTarget:
    return EnvTarget(name=name, project="p", location="us", app=app, endpoint=None, vars={}, urls={}, prune=False)


# each step: a record of env "a" or "b", or a version someone made by hand
steps = st.lists(st.sampled_from(["a", "b", "hand"]), min_size=0, max_size=8)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=steps)
def test_the_newest_record_of_the_env_is_found_with_one_snapshot_read(
    server: BackgroundServer, history: list[str], tmp_path: Path
) -> None:
    app = f"app-{next(APPS)}"
    envs = {name: target(name, app) for name in ("a", "b")}

    async def go() -> None:
        snapshots: list[str] = []

        async def seen(response: httpx.Response) -> None:
            await response.aread()
            snapshots.extend([str(response.request.url)] * response.content.count(b'"snapshot"'))

        async with CesClient(server.url) as client:
            (await client.create(envs["a"].parent, "tools", "t1", _tool())).unwrap()
            newest: dict[str, str] = {}
            for i, step in enumerate(history):
                if step == "hand":
                    await create_version(client, envs["a"].parent, {"displayName": f"by hand {i}"})
                    continue
                made = await write_record(client, envs[step], tmp_path, digest=f"d{i}", owned=["tool/t1"], keep=10, commit="")
                newest[step] = made.version
            client.http.event_hooks["response"].append(seen)
            for name, env in envs.items():
                snapshots.clear()
                found = await last_applied(client, env)
                assert (found.version if found else None) == newest.get(name)
                assert len(snapshots) <= 1, snapshots
                if found is not None:
                    assert found.owned == frozenset({"tool/t1"}) and found.snapshot.get("tools")

    asyncio.run(go())


def test_records_beyond_keep_are_deleted_newest_kept(server: BackgroundServer, tmp_path: Path) -> None:
    app = f"app-{next(APPS)}"
    env = target("a", app)

    async def go() -> tuple[list[str], list[str]]:
        async with CesClient(server.url) as client:
            made = [
                (await write_record(client, env, tmp_path, digest="d", owned=[], keep=3, commit="")).version for _ in range(5)
            ]
            listed = await client.pages(f"{env.parent}/versions", "appVersions", "list", env.parent)
            return made, [str(v["name"]) for v in listed]

    made, listed = asyncio.run(go())
    assert sorted(listed) == sorted(made[-3:])


def _tool() -> dict[str, Any]:
    return {"displayName": "t1", "pythonFunction": {"name": "f", "pythonCode": "def f():\n    return {}\n"}}


def test_drift_is_told_by_the_newest_change_though_the_server_lists_oldest_first(server: BackgroundServer) -> None:
    """ListChangelogs documents no default order and the emulator lists oldest first unless asked:
    changes_since asks for the newest first after the record's time (orderBy, filter), so it names
    the last person who changed the resource, not the first or nobody."""
    parent = f"projects/p/locations/us/apps/app-{next(APPS)}"
    tool = f"{parent}/tools/t1"
    with httpx.Client(base_url=f"{server.url}/v1/") as http:

        def write(who: str, method: str, path: str, **kw: Any) -> dict[str, Any]:
            answer = http.request(method, path, headers={"authorization": f"Bearer {who}"}, **kw)
            assert answer.status_code == 200, answer.text
            return dict(answer.json())

        write("bob@acme.example", "POST", f"{parent}/tools", params={"toolId": "t1"}, json=_tool())
        since = write("bob@acme.example", "GET", tool)["updateTime"]
        for who, seconds in (("alice@acme.example", "2s"), ("carol@acme.example", "3s")):
            write(who, "PATCH", tool, params={"updateMask": "timeout"}, json={"timeout": seconds})
        oldest_first = [c["author"] for c in write("x@acme.example", "GET", f"{parent}/changelogs")["changelogs"]]
        assert oldest_first == ["bob@acme.example", "alice@acme.example", "carol@acme.example"]

    async def go() -> dict[str, tuple[str, str]]:
        async with CesClient(server.url) as client:
            return await changes_since(client, parent, since, {tool})

    found = asyncio.run(go())
    assert found[tool][0] == "carol@acme.example" and found[tool][1] > since


def test_stopping_at_the_first_record_leaves_no_list_pending(
    server: BackgroundServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env = target("a", f"app-{next(APPS)}")

    async def go() -> None:
        async with CesClient(server.url) as client:
            for _ in range(2):
                await write_record(client, env, tmp_path, digest="d", owned=[], keep=10, commit="")
            assert await last_applied(client, env) is not None

    loop = asyncio.new_event_loop()  # as plan's read-ahead thread runs it: closed without shutdown_asyncgens
    try:
        loop.run_until_complete(go())
    finally:
        loop.close()
    gc.collect()  # an async generator left open is finalised here, and says so through asyncio's logger
    assert not [r for r in caplog.records if "destroyed" in r.getMessage()], caplog.text


@functools.cache
def _packed(names: int) -> str:
    import base64
    import zlib

    return base64.b64encode(zlib.compress("\n".join(f"tool/x{i:07d}" for i in range(names)).encode(), 1)).decode()


def _hostile(namespace: str, names: int) -> dict[str, Any]:
    """A version a console user made: a record of format 2 whose owned list inflates to names names."""
    import json

    packed = _packed(names)
    signed = json.dumps(
        {"v": 2, "env": "dev", "commit": "", "digest": "", "cesync": "", "at": "", "owned": packed, "ns": namespace}
    )
    return {"displayName": "x", "description": "x\ncesync-record: " + json.dumps({"r": signed})}


@pytest.mark.parametrize("keyed", [True, False])
def test_hostile_records_cost_a_plan_little(
    server: BackgroundServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keyed: bool
) -> None:
    """Versions whose records inflate to huge owned lists, one per made-up owner: with a key none is
    inflated (each fails its seal first); without one, at most MAX_OWNERS are, each bounded, or the
    plan stops with a clear message."""
    import zlib

    from cesync.errors import CesyncError
    from cesync.sync.record import MAX_OWNERS, read_records

    monkeypatch.delenv("CESYNC_PLAN_KEY", raising=False)
    if keyed:
        monkeypatch.setenv("CESYNC_RECORD_KEY", "pipeline secret")
    else:
        monkeypatch.delenv("CESYNC_RECORD_KEY", raising=False)
    env = target("dev", f"app-{next(APPS)}")
    inflated: list[int] = []
    real = zlib.decompressobj

    class Counting:
        def __init__(self) -> None:
            self.inner = real()

        def decompress(self, data: bytes, limit: int = 0) -> bytes:
            out = self.inner.decompress(data, limit)
            inflated.append(len(out))
            return out

        @property
        def unconsumed_tail(self) -> bytes:
            return self.inner.unconsumed_tail

    async def go() -> None:
        async with CesClient(server.url) as client:
            await write_record(client, env, tmp_path, digest="d", owned=["tool/t1"], keep=10, commit="")
            for i in range(MAX_OWNERS + 1):
                await create_version(client, env.parent, _hostile(f"o{i}", 100_000))
            monkeypatch.setattr(zlib, "decompressobj", Counting)
            try:
                view = await read_records(client, env)
            except CesyncError as exc:
                assert not keyed and "owners" in str(exc)
                return
            assert view.record is not None and view.record.owned == frozenset({"tool/t1"})
            if keyed:
                assert not view.others and len(view.ignored) == MAX_OWNERS + 1

    asyncio.run(go())
    assert sum(inflated) <= (0 if keyed else MAX_OWNERS) * (2 << 20) + 1000, sum(inflated)


def test_what_the_heads_say_is_read_without_a_snapshot(
    server: BackgroundServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pull needs only what the other owners own: whole=False reads no version whole."""
    from cesync.sync import record
    from cesync.sync.record import read_records

    env = target("dev", f"app-{next(APPS)}")
    read: list[str] = []
    real = record.get_version

    async def counted(client: CesClient, name: str) -> dict[str, Any] | None:
        read.append(name)
        return await real(client, name)

    async def go() -> None:
        async with CesClient(server.url) as client:
            (await client.create(env.parent, "tools", "t1", _tool())).unwrap()
            made = await write_record(client, env, tmp_path, digest="d", owned=["tool/t1"], keep=10, commit="", owner="a")
            monkeypatch.setattr(record, "get_version", counted)
            heads = await read_records(client, env, "b", whole=False)
            assert heads.others == {"tool/t1": "a"} and heads.base is None and read == []
            view = await read_records(client, env, "a")
            assert view.record is not None and view.record.version == made.version and read == [made.version]

    asyncio.run(go())

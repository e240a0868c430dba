"""The record cache never changes a result: plans are the same with the record's base known by
its digest and read whole; a version made again under the same id, a cache another key signed
or altered, a record the key does not trust, all read as without it; a promotion keeps nothing."""

from __future__ import annotations

import asyncio
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cesync.client import CesClient
from cesync.client.apps import create_version, get_version
from cesync.core.passes.drift import as_desired
from cesync.core.scrubber import Scrubber
from cesync.emulator.server import BackgroundServer
from cesync.pipeline.context import open_context
from cesync.pipeline.planning import read_plan
from cesync.repo.cache import RECORD_FILE
from cesync.repo.environments import EnvTarget
from cesync.sync import record as record_module
from cesync.sync.record import KIND_OF, read_records, write_record
from cesync.sync.recordcache import AppBase, base_of, open_record_cache, save_known
from cesync.sync.remote import read_remote
from tests.helpers import cesync
from tests.repo.test_cache import KEY, runs, same, uncached

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from generate import generate

APPS = itertools.count()


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=True) as s:
        yield s


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CESYNC_CACHE_KEY", KEY["CESYNC_CACHE_KEY"])
    for name in ("CESYNC_CACHE", "CESYNC_RECORD_KEY", "CESYNC_PLAN_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def wholes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The versions read whole (with their snapshots), in any thread."""
    read: list[str] = []

    async def counted(client: CesClient, name: str) -> dict[str, Any] | None:
        read.append(name)
        return await get_version(client, name)

    monkeypatch.setattr(record_module, "get_version", counted)
    return read


def target(app: str, project: str = "p") -> EnvTarget:
    return EnvTarget(name="dev", project=project, location="us", app=app, endpoint=None, vars={}, urls={}, prune=False)


def applied_repo(root: Path, url: str) -> tuple[Path, EnvTarget]:
    """A small generated repo of its own app, applied; and its environment."""
    app = f"rc{next(APPS)}"
    generate(root, 20, agents=True)
    config = root / "cesync.yaml"
    config.write_text(config.read_text().replace("app: bench-", f"app: {app}-"))
    done = cesync("apply", "--dir", str(root), "--env", "dev", "--endpoint", url, "--auto-approve", env={"CESYNC_CACHE": "off"})
    assert done.returncode == 0, done.stdout + done.stderr
    return root, target(f"{app}-dev", "bench")


def console_edit(url: str, parent: str, text: str) -> None:
    """A console user's change to one agent (its description): the app drifts from the record."""
    agent = httpx.get(f"{url}/v1/{parent}/agents", params={"pageSize": 1}).json()["agents"][0]
    answer = httpx.patch(f"{url}/v1/{agent['name']}", params={"updateMask": "description"}, json={"description": text})
    assert answer.status_code == 200, answer.text


def test_a_warm_plan_reads_only_the_heads_and_plans_the_same(tmp_path: Path, server: BackgroundServer, wholes: list[str]) -> None:
    root, env = applied_repo(tmp_path / "repo", server.url)
    first = runs(root, server.url)  # the record read whole, its base's digest kept
    assert len(wholes) == 1 and (root / RECORD_FILE).is_file()
    wholes.clear()
    same(runs(root, server.url), first)
    assert wholes == []  # the app stands for the base it equals
    same(uncached(root, server.url), first)
    assert len(wholes) == 1
    console_edit(server.url, env.parent, "changed in the console")
    wholes.clear()
    drifted = runs(root, server.url)  # the app no longer has the base's digest: the version is read whole
    assert len(wholes) == 1 and drifted[1][0] == 2 and "drift" in str(drifted[1][1])
    same(uncached(root, server.url), drifted)
    (root / "agents" / "a00000.yaml").write_text((root / "agents" / "a00000.yaml").read_text() + "\n# touched\n")
    same(runs(root, server.url), drifted)  # a repo edit: the base is still the record's


def _tool(text: str) -> dict[str, Any]:
    return {"clientFunction": {"name": "f", "description": text, "parameters": {"type": "OBJECT"}}}


def test_a_version_made_again_under_the_same_id_misses(tmp_path: Path, server: BackgroundServer, wholes: list[str]) -> None:
    env = target(f"rc{next(APPS)}")

    async def go() -> None:
        async with CesClient(server.url) as client:
            (await client.create(env.parent, "tools", "t1", _tool("before"))).unwrap()
            made = await write_record(client, env, tmp_path, digest="d", owned=["tool/t1"], keep=10, commit="")
            cache = open_record_cache(tmp_path)
            assert cache is not None
            view = await read_records(client, env, cache=cache)
            assert all(view.fresh)
            save_known(tmp_path, *view.fresh)
            again = await read_records(client, env, cache=open_record_cache(tmp_path))
            assert again.known == view.fresh[1] and again.base is None
            # the version deleted, the app changed, a version made under the same id with the same record
            whole = await get_version(client, made.version)
            assert whole is not None
            (await client.delete(made.version, None)).unwrap()
            (await client.patch(f"{env.parent}/tools/t1", _tool("after"), ["clientFunction"])).unwrap()
            rid = made.version.rsplit("/", 1)[1]
            remade = await create_version(client, env.parent, {k: whole[k] for k in ("displayName", "description")}, rid)
            assert remade["name"] == made.version and remade["createTime"] != whole["createTime"]
            wholes.clear()
            view = await read_records(client, env, cache=open_record_cache(tmp_path))
            assert not view.known and wholes == [made.version]
            assert view.base is not None and view.base[("tool", "t1")]["clientFunction"]["description"] == "after"

    asyncio.run(go())


def test_a_cache_another_key_signed_or_altered_is_not_read(
    tmp_path: Path, server: BackgroundServer, monkeypatch: pytest.MonkeyPatch, wholes: list[str]
) -> None:
    env = target(f"rc{next(APPS)}")

    async def known() -> bytes:
        async with CesClient(server.url) as client:
            view = await read_records(client, env, cache=open_record_cache(tmp_path))
            assert view.record is not None and (view.base is None) == bool(view.known)
            return view.known

    async def setup() -> None:
        async with CesClient(server.url) as client:
            (await client.create(env.parent, "tools", "t1", _tool("x"))).unwrap()
            await write_record(client, env, tmp_path, digest="d", owned=["tool/t1"], keep=10, commit="")
            view = await read_records(client, env, cache=open_record_cache(tmp_path))
            save_known(tmp_path, *view.fresh)

    asyncio.run(setup())
    assert asyncio.run(known())
    raw = (tmp_path / RECORD_FILE).read_bytes()
    (tmp_path / RECORD_FILE).write_bytes(raw[:-1] + bytes([raw[-1] ^ 1]))  # one bit of the digest changed
    assert not asyncio.run(known())
    (tmp_path / RECORD_FILE).write_bytes(raw)
    monkeypatch.setenv("CESYNC_CACHE_KEY", "another machine")  # a cache a branch planted, signed with its own key
    assert not asyncio.run(known())


def test_a_known_record_the_key_does_not_trust_is_not_used(
    tmp_path: Path, server: BackgroundServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trust is decided on the heads on every run: a record the cache knows, whose seal the key in
    use does not match, is ignored as it is without the cache."""
    env = target(f"rc{next(APPS)}")
    monkeypatch.setenv("CESYNC_RECORD_KEY", "the pipeline's key")

    async def go() -> None:
        async with CesClient(server.url) as client:
            (await client.create(env.parent, "tools", "t1", _tool("x"))).unwrap()
            await write_record(client, env, tmp_path, digest="d", owned=["tool/t1"], keep=10, commit="")
            view = await read_records(client, env, cache=open_record_cache(tmp_path))
            assert view.record is not None
            save_known(tmp_path, *view.fresh)
            monkeypatch.setenv("CESYNC_RECORD_KEY", "another key")
            cached = await read_records(client, env, cache=open_record_cache(tmp_path))
            fresh = await read_records(client, env)
            assert cached.record is None and fresh.record is None and cached.ignored == fresh.ignored != ()

    asyncio.run(go())


def test_the_app_stands_for_a_base_it_equals(tmp_path: Path, server: BackgroundServer) -> None:
    root, env = applied_repo(tmp_path / "repo", server.url)
    parent = env.parent

    async def go() -> None:
        async with CesClient(server.url) as client:
            remote = await read_remote(client, parent)
            view = await read_records(client, env, cache=open_record_cache(root))
            assert view.record is not None and view.base is not None
            whole = await get_version(client, view.record.version)
        assert whole is not None
        cache = open_record_cache(root)
        assert cache is not None and cache.of_app(remote) == view.fresh[1]
        base, stand_in = base_of(whole["snapshot"], KIND_OF), AppBase(remote)
        assert set(stand_in) == {k for k in base if k[0] in {r.kind.name for r in remote if r.kind.in_snapshot}}
        for key in stand_in:
            assert as_desired(stand_in[key]) == as_desired(base[key])
            assert stand_in[key] is not stand_in[key]  # a fresh copy: what a pass does with it stays there

    asyncio.run(go())


def test_a_promotion_keeps_no_record_cache(tmp_path: Path, server: BackgroundServer) -> None:
    root, _ = applied_repo(tmp_path / "repo", server.url)

    def plan(promotion: tuple[str, str]) -> None:
        ctx = open_context(root, "dev", server.url, read_ahead=True, scrubber=Scrubber())
        ctx.promotion = promotion
        asyncio.run(read_plan(ctx))

    plan(("dev", "0" * 40))  # a commit's tree in a temporary folder: nothing is kept there
    assert not (root / RECORD_FILE).exists()
    plan(("", ""))
    assert (root / RECORD_FILE).is_file()

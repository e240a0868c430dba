"""plan and apply against the emulator: idempotence, drift, unknown fields, order, faults, conflicts."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import shutil
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.client import CesClient, RetryPolicy
from cesync.core import planseal
from cesync.core.plan import Plan
from cesync.core.planbuild import build_plan
from cesync.core.planseal import desired_digest
from cesync.core.safety import check_safety
from cesync.core.scrubber import Scrubber
from cesync.emulator import EmbeddedTransport, FaultConfig
from cesync.emulator.app import create_app
from cesync.emulator.server import BackgroundServer
from cesync.emulator.store import Store
from cesync.errors import UnsafePlanError
from cesync.pipeline.apply import ApplyResult, apply_plan
from cesync.pipeline.context import open_context
from cesync.pipeline.planning import make_plan
from cesync.sync.remote import read_remote
from tests.conftest import EXAMPLES
from tests.strategies import json_values

FAST = RetryPolicy(attempts=10, initial=0.001, maximum=0.01)


def example(tmp_path: Path, name: str = "support-bot") -> Path:
    dst = tmp_path / name
    shutil.copytree(EXAMPLES / name, dst, ignore=shutil.ignore_patterns(".cesync"))
    return dst


async def plan_apply(root: Path, env: str, transport: httpx.AsyncBaseTransport, **kw: Any) -> tuple[Plan, ApplyResult, Plan]:
    from cesync.pipeline.recording import record_apply

    ctx = open_context(root, env, scrubber=Scrubber())
    async with CesClient("http://emu", transport=transport, retry=FAST) as c:
        first = await make_plan(ctx, c)
        result = await apply_plan(c, first, **kw)
        if result.ok:
            await record_apply(c, ctx, first, result)  # as the apply command does
        second = await make_plan(ctx, c)
    return first, result, second


@pytest.mark.parametrize("env", ["local", "dev", "staging", "prod"])
def test_example_idempotent_in_every_environment(tmp_path: Path, env: str) -> None:
    first, result, second = asyncio.run(plan_apply(example(tmp_path), env, EmbeddedTransport()))
    # the app first, then its 22 resources
    assert first.counts() == {"create": 23, "update": 0, "delete": 0} and result.ok, result.summary()
    assert not second.has_changes, [c.key for c in second.changes]


def test_order_widget_after_source_and_deletes_reverse(tmp_path: Path) -> None:
    first, _, _ = asyncio.run(plan_apply(example(tmp_path), "local", EmbeddedTransport()))
    keys = [c.key for c in first.changes]
    assert keys.index("tool/order-card") > keys.index("tool/order-status")
    parent = first.app
    remote = [
        Resource(KINDS["tool"], c.id, {**(c.body or {}), "name": c.name, "etag": "e"})
        for c in first.changes
        if c.kind.name == "tool"
    ]
    deletes = build_plan("local", parent, [], remote, prune=True).changes
    order = [c.id for c in deletes]
    assert order.index("order-card") < order.index("order-status")


def test_drift_from_the_official_client(tmp_path: Path) -> None:
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import ces_v1
    from google.protobuf import field_mask_pb2

    root = example(tmp_path)
    with BackgroundServer() as server:
        asyncio.run(_apply_via(root, server.url))
        official = ces_v1.AgentServiceClient(
            credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=server.url)
        )
        name = "projects/local/locations/us/apps/support-bot/tools/web-search"
        tool = official.get_tool(name=name)
        tool.google_search_tool.description = "changed by hand"
        changed = official.update_tool(tool=tool, update_mask=field_mask_pb2.FieldMask(paths=["google_search_tool.description"]))
        drift = asyncio.run(_plan_via(root, server.url))
    assert [c.key for c in drift.changes] == ["tool/web-search"]
    change = drift.changes[0]
    assert change.update_mask == ("googleSearchTool.description",)
    assert change.fields[0].before == "changed by hand" and change.fields[0].after == "Search the public help centre."
    assert change.etag == changed.etag != tool.etag  # the etag seen at plan time is recorded


async def _apply_via(root: Path, url: str) -> None:
    ctx = open_context(root, "local", url, scrubber=Scrubber())
    async with ctx.client(retry=FAST) as c:
        await apply_plan(c, await make_plan(ctx, c))


async def _plan_via(root: Path, url: str) -> Plan:
    ctx = open_context(root, "local", url, scrubber=Scrubber())
    async with ctx.client(retry=FAST) as c:
        return await make_plan(ctx, c)


def test_unknown_remote_fields_are_noted_and_survive(tmp_path: Path) -> None:
    root = example(tmp_path)
    app = create_app(Store())
    transport = EmbeddedTransport(app)
    name = "projects/local/locations/us/apps/support-bot/tools/web-search"

    async def go() -> tuple[Plan, Plan, dict[str, Any]]:
        await plan_apply(root, "local", transport)
        async with httpx.AsyncClient(transport=transport, base_url="http://emu") as h:
            await h.post("/admin/inject", json={"name": name, "fields": {"futureField": {"x": 1}}})
        noted = await _plan(root, transport)
        (root / "tools" / "web-search.yaml").write_text(
            (root / "tools" / "web-search.yaml").read_text().replace("Search the public help centre.", "New text.")
        )
        update = await _plan(root, transport)
        async with CesClient("http://emu", transport=transport) as c:
            await apply_plan(c, update)
            return noted, update, await c.get(name)

    noted, update, after = asyncio.run(go())
    assert not noted.has_changes and noted.unknown_fields[name] == ["futureField"]
    assert update.changes[0].update_mask == ("googleSearchTool.description",)
    assert after["futureField"] == {"x": 1} and after["googleSearchTool"]["description"] == "New text."


async def _plan(root: Path, transport: httpx.AsyncBaseTransport, env: str = "local", **kw: Any) -> Plan:
    ctx = open_context(root, env, scrubber=Scrubber())
    async with CesClient("http://emu", transport=transport, retry=FAST) as c:
        return await make_plan(ctx, c, **kw)


def test_concurrent_edit_is_refused_with_aborted(tmp_path: Path) -> None:
    root = example(tmp_path)
    transport = EmbeddedTransport()

    async def go() -> ApplyResult:
        await plan_apply(root, "local", transport)
        for f in ("web-search", "manuals"):
            p = root / "tools" / f"{f}.yaml"
            p.write_text(p.read_text().replace("description: ", "description: v2 "))
        stale = await _plan(root, transport)
        async with CesClient("http://emu", transport=transport) as c:
            name = f"{stale.app}/tools/web-search"
            current = await c.get(name)
            await c.patch(
                name,
                {"googleSearchTool": {**current["googleSearchTool"], "description": "theirs"}, "etag": current["etag"]},
                ["googleSearchTool.description"],
            )
            result = await apply_plan(c, stale, parallelism=1)
            assert (await c.get(name))["googleSearchTool"]["description"] == "theirs"  # not overwritten
            return result

    result = asyncio.run(go())
    statuses = {o.id: o.status for o in result.outcomes}
    assert statuses["web-search"] == "conflict" and not result.ok


def test_no_delete_without_prune_and_mass_change_guard(tmp_path: Path) -> None:
    root = example(tmp_path)
    transport = EmbeddedTransport()
    asyncio.run(plan_apply(root, "local", transport))
    for name in ("tools/manuals", "tools/open-ticket", "tools/web-search", "toolsets/crm", "toolsets/erp"):  # no agent uses these
        (root / f"{name}.yaml").unlink()
    kept = asyncio.run(_plan(root, transport))
    assert kept.counts()["delete"] == 0 and len(kept.unmanaged) == 5
    pruned = asyncio.run(_plan(root, transport, prune=True))
    assert pruned.counts()["delete"] == 5
    # 5 deletes of the example's 23 managed resources: over a 20% guard, refused unless allowed.
    with pytest.raises(UnsafePlanError, match="deletes 5 of"):
        check_safety(pruned, 0.2, 5, allow=False)
    check_safety(pruned, 0.2, 5, allow=True)


def test_empty_repo_never_deletes_everything_silently() -> None:
    remote = [Resource(KINDS["tool"], "a", {"clientFunction": {"name": "a"}, "etag": "e"})]
    plan = build_plan("e", "projects/p/locations/l/apps/a", [], remote, prune=True)
    with pytest.raises(UnsafePlanError, match="defines no resources"):
        check_safety(plan, 0.3, 10, allow=False)


@pytest.mark.parametrize("seed", range(6))
def test_faults_converge(tmp_path: Path, seed: int) -> None:
    """10-20% 429/503 plus commit-then-drop on writes: apply completes (no false conflict), then nothing is left."""
    root = example(tmp_path)
    faults = FaultConfig(rate_429=0.1, rate_503=0.1, drop_rate=0.15, seed=seed)
    transport = EmbeddedTransport(faults=faults)
    first, result, _ = asyncio.run(plan_apply(root, "local", transport, parallelism=4))
    assert result.ok, [o for o in result.outcomes if o.status != "done"]  # nobody else writes: lost replies are ours
    faults.update({"rate_429": 0, "rate_503": 0, "drop_rate": 0})
    _, second_result, final = asyncio.run(plan_apply(root, "local", transport))
    assert second_result.ok and not final.has_changes
    names = {r.id for r in asyncio.run(_remote(transport, first.app))}
    assert names == {c.id for c in first.changes}  # nothing outside the plan was touched


async def _remote(transport: httpx.AsyncBaseTransport, parent: str) -> list[Resource]:
    async with CesClient("http://emu", transport=transport) as c:
        return await read_remote(c, parent)


# --- hypothesis: generated tools survive the round trip with zero changes --------------------

schema_leaf = st.fixed_dictionaries(
    {"type": st.sampled_from(["STRING", "INTEGER", "NUMBER", "BOOLEAN"])},
    optional={
        "description": st.text(max_size=10) | st.text(alphabet=" \t\r\n\x85\u2028\u2029\ufeff'\"#:-a", max_size=4),
        "nullable": st.booleans(),
        "minimum": st.integers(-5, 5),
        "enum": st.lists(st.text("abc", min_size=1, max_size=3), max_size=2),
    },
)
schema = st.fixed_dictionaries(
    {"type": st.just("OBJECT"), "properties": st.dictionaries(st.text("xyz", min_size=1, max_size=3), schema_leaf, max_size=3)},
    optional={"maxItems": st.integers(0, 9), "required": st.lists(st.just("x"), max_size=1)},
)
duration = st.builds(lambda s, f: f"{s}{f}s", st.integers(0, 99), st.sampled_from(["", ".5", ".250", ".000001", ".1"]))
tool = st.one_of(
    st.fixed_dictionaries(
        {
            "clientFunction": st.fixed_dictionaries(
                {"name": st.just("c")}, optional={"parameters": schema, "description": st.text(max_size=20)}
            )
        }
    ),
    st.fixed_dictionaries(
        {
            "googleSearchTool": st.fixed_dictionaries(
                {"name": st.just("g")}, optional={"excludeDomains": st.lists(st.text("ab.", min_size=1, max_size=5), max_size=3)}
            )
        }
    ),
    st.fixed_dictionaries(
        {
            "dataStoreTool": st.fixed_dictionaries(
                {
                    "name": st.just("d"),
                    "boostSpecs": st.just(
                        [{"dataStores": ["x"], "spec": [{"conditionBoostSpecs": [{"condition": "c", "boost": 0.1}]}]}]
                    ),
                },
                optional={
                    "filterParameterBehavior": st.sampled_from(
                        ["ALWAYS_INCLUDE", "NEVER_INCLUDE", "FILTER_PARAMETER_BEHAVIOR_UNSPECIFIED"]
                    )
                },
            )
        }
    ),
).flatmap(
    lambda body: st.fixed_dictionaries(
        {},
        optional={
            "timeout": duration,
            "executionType": st.sampled_from(["SYNCHRONOUS", "ASYNCHRONOUS"]),
            "toolFakeConfig": st.just({"enableFakeMode": False}),
        },
    ).map(lambda extra: {**body, **extra})
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=tool)
def test_generated_tools_round_trip_without_changes(body: dict[str, Any]) -> None:
    parent = "projects/p/locations/us/apps/h"

    async def go() -> Plan:
        transport = EmbeddedTransport(apps=[parent])
        async with CesClient("http://emu", transport=transport) as c:
            created = await apply_plan(c, build_plan("h", parent, [Resource(KINDS["tool"], "t", body)], []))
            assert created.ok, created.outcomes
            return build_plan("h", parent, [Resource(KINDS["tool"], "t", body)], await read_remote(c, parent))

    again = asyncio.run(go())
    assert not again.has_changes, again.changes


@settings(max_examples=200, deadline=None)
@given(
    env=st.text(max_size=8),
    app=st.text(max_size=20),
    resources=st.dictionaries(
        st.tuples(st.sampled_from(["tool", "toolset"]), st.text(min_size=1, max_size=6)),
        st.dictionaries(st.text(max_size=6), json_values()),
        max_size=7,
    ),
    batch=st.integers(1, 4),
)
def test_desired_digest_is_the_hash_of_the_whole_text(
    env: str, app: str, resources: dict[tuple[str, str], Any], batch: int
) -> None:
    """Hashed a batch of resources at a time, the digest is still the keyed hash of one json.dumps of everything."""
    desired = [Resource(KINDS[kind], rid, body) for (kind, rid), body in resources.items()]
    listed = sorted(([d.kind.name, d.id, d.body] for d in desired), key=lambda d: (d[0], d[1]))
    whole = json.dumps({"env": env, "app": app, "resources": listed}, sort_keys=True)
    with mock.patch.object(planseal, "_BATCH", batch):
        digest = desired_digest(env, app, desired, b"k")
    assert digest == "hmac-sha256:" + hmac.new(b"k", whole.encode(), hashlib.sha256).hexdigest()

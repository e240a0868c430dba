"""Generated proof that plan and apply agree with the canonical forms and with Google's client.

For pairs (A, B) of bodies drawn from the model (tests/strategies.py), against one
emulator: apply A; plan B shows an update exactly when canonical(A) and canonical(B)
differ, naming every changed path and nothing else; apply B; the plan is empty; the
official google-cloud-ces client reads B back on every field.

The ``ci`` profile (default) runs 200 examples; ``CESYNC_PROPERTY_PROFILE=nightly``
runs 5,000 (see docs/contributing/index.md, Property tests).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import ces_v1, ces_v1beta
from hypothesis import HealthCheck, example, given, settings

from cesync.api.descriptors import field_facts
from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.client import CesClient, RetryPolicy
from cesync.core.normalize import canonical
from cesync.core.plan import Plan
from cesync.core.planbuild import build_plan
from cesync.emulator import EmbeddedTransport
from cesync.emulator.server import BackgroundServer
from cesync.pipeline.apply import apply_plan
from cesync.sync.remote import read_remote
from tests.strategies import V1BETA_KINDS, resource_bodies

COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
}
settings.register_profile("ci", max_examples=200, **COMMON)
settings.register_profile("nightly", max_examples=5000, **COMMON)
PROFILE = settings.get_profile(os.environ.get("CESYNC_PROPERTY_PROFILE", "ci"))

FAST = RetryPolicy(attempts=3, initial=0.001, maximum=0.01)
APPS = itertools.count()
RID = "r1"


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=True) as s:
        yield s


@pytest.fixture(scope="module")
def official(server: BackgroundServer) -> ces_v1.AgentServiceClient:
    return ces_v1.AgentServiceClient(
        credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=server.url)
    )


@pytest.fixture(scope="module")
def official_beta(server: BackgroundServer) -> ces_v1beta.EvaluationServiceClient:
    """The evaluation kinds through Google's own v1beta client."""
    return ces_v1beta.EvaluationServiceClient(
        credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=server.url)
    )


def _json(value: Any) -> str:
    """JSON text that tells true from 1 but not 1 from 1.0 (independent of cesync.core.diff)."""

    def norm(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, float) and v.is_integer():
            return int(v)
        return v

    return json.dumps(norm(value), sort_keys=True)


def leaf_differences(a: Any, b: Any, prefix: str = "") -> list[str]:
    """Dotted paths (through objects only) where two JSON values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in {**a, **b}:
            if key not in a or key not in b:
                out.append(prefix + key)
            else:
                out += leaf_differences(a[key], b[key], f"{prefix}{key}.")
        return out
    return [] if _json(a) == _json(b) else [prefix.rstrip(".")]


def _covers(named: str, leaf: str) -> bool:
    return leaf == named or leaf.startswith(named + ".")


async def _plan(client: CesClient, parent: str, kind: str, body: dict[str, Any]) -> Plan:
    return build_plan("prop", parent, [Resource(KINDS[kind], RID, body)], await read_remote(client, parent))


async def _apply(client: CesClient, plan: Plan) -> None:
    result = await apply_plan(client, plan)
    assert result.ok, result.to_dict()


async def _round(server: BackgroundServer, parent: str, kind: str, a: dict[str, Any], b: dict[str, Any]) -> None:
    async with CesClient("http://emu", transport=EmbeddedTransport(app=server.app), retry=FAST) as client:
        await _apply(client, await _plan(client, parent, kind, a))
        assert not (await _plan(client, parent, kind, a)).has_changes, "A applied, yet A still plans changes"

        plan = await _plan(client, parent, kind, b)
        leaves = leaf_differences(canonical(KINDS[kind], RID, a).body, canonical(KINDS[kind], RID, b).body)
        if not leaves:
            assert not plan.has_changes, [c.fields for c in plan.changes]
            return
        assert len(plan.changes) == 1, f"canonical forms differ at {leaves}, but the plan has {len(plan.changes)} changes"
        change = plan.changes[0]
        named = [f.path for f in change.fields]
        assert change.action == "update" and named == list(change.update_mask)
        assert [leaf for leaf in leaves if not any(_covers(n, leaf) for n in named)] == [], "changed paths not named"
        assert [n for n in named if not any(_covers(n, leaf) for leaf in leaves)] == [], "unchanged paths named"

        await _apply(client, plan)
        assert not (await _plan(client, parent, kind, b)).has_changes, "B applied, yet B still plans changes"


# Fields of our model that the published protos (google-cloud-ces) do not have: AgentTool.agent is
# documented on the API's reference pages only (models/overlay.py). Fields the description took
# from a discovery document or the seeds (newer than the protos) the official client cannot read
# back at all; official_view leaves them out of what it compares.
NOT_IN_OFFICIAL = {"AgentTool.agent"}
WELL_KNOWN = "google.protobuf."


def official_view(value: dict[str, Any], descriptor: Any, dropped: set[str]) -> dict[str, Any]:
    """``value`` without the fields the official message does not have (collected in ``dropped``)."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        field = descriptor.fields_by_camelcase_name.get(key)
        if field is None:
            if field_facts(descriptor.full_name, key).get("source", "proto") == "proto":  # newer fields aside
                dropped.add(f"{descriptor.name}.{key}")
            continue
        sub = field.message_type
        if sub is None or sub.full_name.startswith(WELL_KNOWN):
            out[key] = item
        elif sub.GetOptions().map_entry:
            inner = sub.fields_by_name["value"].message_type
            out[key] = {k: official_view(v, inner, dropped) for k, v in item.items()} if inner else item
        elif field.is_repeated:
            out[key] = [official_view(v, sub, dropped) for v in item]
        else:
            out[key] = official_view(item, sub, dropped)
    return out


# kind -> (the official message, how its client reads one)
OFFICIAL: dict[str, tuple[Any, str]] = {
    "tool": (ces_v1.Tool, "get_tool"),
    "toolset": (ces_v1.Toolset, "get_toolset"),
    "evaluation": (ces_v1beta.Evaluation, "get_evaluation"),
    "evaluationDataset": (ces_v1beta.EvaluationDataset, "get_evaluation_dataset"),
    "evaluationExpectation": (ces_v1beta.EvaluationExpectation, "get_evaluation_expectation"),
    "scheduledEvaluationRun": (ces_v1beta.ScheduledEvaluationRun, "get_scheduled_evaluation_run"),
}


def _read_official(client: Any, kind: str, name: str) -> dict[str, Any]:
    proto, method = OFFICIAL[kind]
    return json.loads(proto.to_json(getattr(client, method)(name=name), use_integers_for_enums=False))  # type: ignore[no-any-return]


@PROFILE
@given(case=resource_bodies(kinds=V1BETA_KINDS))
@example(  # a field newer than the protos (ModelSettings.thinkingLevel, rev 20261016), deep in a tool
    case=(
        "tool",
        (
            {"clientFunction": {"name": "X"}},
            {
                "dataStoreTool": {
                    "name": "X",
                    "modalityConfigs": [
                        {"modalityType": "TEXT", "rewriterConfig": {"modelSettings": {"thinkingLevel": "DEFAULT"}}}
                    ],
                }
            },
        ),
    )
)
def test_plan_apply_read_back(
    server: BackgroundServer,
    official: ces_v1.AgentServiceClient,
    official_beta: ces_v1beta.EvaluationServiceClient,
    case: Any,
) -> None:
    kind, (a, b) = case
    parent = f"projects/p/locations/us/apps/property-{next(APPS)}"
    asyncio.run(_round(server, parent, kind, a, b))
    client = official_beta if kind in V1BETA_KINDS else official
    read = _read_official(client, kind, f"{parent}/{KINDS[kind].collection}/{RID}")
    got = canonical(KINDS[kind], RID, read)
    assert got.unknown == []
    dropped: set[str] = set()
    want = official_view(canonical(KINDS[kind], RID, b).body, OFFICIAL[kind][0].pb().DESCRIPTOR, dropped)
    assert dropped <= NOT_IN_OFFICIAL
    assert leaf_differences(got.body, want) == [], (got.body, want)

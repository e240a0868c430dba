"""A deployment's traffic split (``Deployment.experimentConfig.versionRelease``), checked on every write.

Sources: the v1 proto's field comments (``google/cloud/ces/v1/deployment.proto``, in the descriptor
snapshot ``api/ces_v1.json``) and Google's discovery document ``ces.v1.json`` (revision 20261016,
google-api-python-client 2.202.0), which say the same of ``TrafficAllocation``: ``trafficPercentage``
"Must be between 0 and 100", ``id`` "Free format string, up to 128 characters", ``appVersion`` an
app version's full name. ``state``: RUNNING, the other values deprecated (the discovery document).

What the sources do not say, and the emulator therefore does not enforce: that the percentages
add up to 100, that the versions differ, or that ``appVersion`` and the allocations agree (Terraform's
``google_ces_deployment`` in magic-modules ``mmv1/products/ces`` has no traffic split at all). The
versions an allocation names must exist, as every reference of a write must (integrity.py).

A served version runs its tools as its snapshot holds them (``snapshot_executor``): the version a
canary serves is judged as it was made, not as the draft is now.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any

from .errors import RpcError
from .execute import Executor

__all__ = ["MAX_ID", "check_traffic", "serving_versions", "snapshot_executor"]

MAX_ID = 128


def check_traffic(data: dict[str, Any]) -> None:
    """INVALID_ARGUMENT (a BadRequest naming each field) when an allocation breaks what the sources say."""
    release = ((data.get("experimentConfig") or {}).get("versionRelease")) or {}
    allocations = release.get("trafficAllocations") or []
    violations = []
    for i, allocation in enumerate(allocations):
        at = f"experiment_config.version_release.traffic_allocations[{i}]"
        percentage = allocation.get("trafficPercentage", 0)
        if not isinstance(percentage, int) or isinstance(percentage, bool) or not 0 <= percentage <= 100:
            violations.append({"field": f"{at}.traffic_percentage", "description": "must be between 0 and 100"})
        if len(str(allocation.get("id", ""))) > MAX_ID:
            violations.append({"field": f"{at}.id", "description": f"at most {MAX_ID} characters"})
    if violations:
        raise RpcError(
            "INVALID_ARGUMENT",
            "invalid traffic allocation: " + "; ".join(f"{v['field']} {v['description']}" for v in violations),
            details=[{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": violations}],
        )


def serving_versions(deployment: dict[str, Any], parent: str) -> list[str]:
    """The app versions a deployment serves: those its running split gives traffic, else its appVersion
    (the draft, ``versions/-``, when it names none)."""
    release = (deployment.get("experimentConfig") or {}).get("versionRelease") or {}
    allocations = release.get("trafficAllocations") or []
    given = [str(a["appVersion"]) for a in allocations if a.get("appVersion") and int(a.get("trafficPercentage") or 0) > 0]
    if given:
        return list(dict.fromkeys(given))
    return [str(deployment.get("appVersion") or f"{parent}/versions/-")]


def snapshot_executor(parent: str, snapshot: dict[str, Any]) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
    """executeTool against an app version's snapshot: its tools and toolsets as they were when it was made."""
    by: dict[str, dict[str, dict[str, Any]]] = {}
    for collection in ("tools", "toolsets"):
        items = snapshot.get(collection) or []
        by[collection] = {str(i.get("name", "")).rsplit("/", 1)[-1]: i for i in items if isinstance(i, dict)}

    def read(_: str, collection: str, rid: str) -> dict[str, Any] | None:
        found = by.get(collection, {}).get(rid)
        return json.loads(json.dumps(found)) if found is not None else None  # a copy: a run never changes the version

    executor = Executor(read, lambda _: {k: dict(v) for k, v in by["tools"].items()})
    return functools.partial(executor.execute, parent)

"""/admin: test and setup hooks (apps, agents, taught fields, faults, quota, state, write timings)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from .calls import json_body
from .dispatch import APP_RE
from .errors import RpcError
from .extras import extras
from .faults import FaultMiddleware
from .quota import READ_METRIC, WRITE_METRIC
from .resources import COLLECTIONS
from .wire import printed
from .writes import stamp

if TYPE_CHECKING:
    from .app import Emulator


async def admin_call(emulator: Emulator, request: Request, registry: list[FaultMiddleware]) -> Any:
    """Test and setup hooks: apps, agents, unknown fields, faults, state, write timings (stats), the
    outcomes of evaluation steps the emulator cannot judge."""
    action = request.path_params["action"]
    body = await json_body(request) if request.method == "POST" else {}
    store = emulator.store
    if action == "state":
        return store.snapshot()
    if action == "apps":
        parent = body.get("name", "")
        if not APP_RE.match(parent) or APP_RE.match(parent).group(2):  # type: ignore[union-attr]
            raise RpcError("INVALID_ARGUMENT", "name must be projects/*/locations/*/apps/*")
        store.app(parent, create=True)
        return {"name": parent}
    if action == "config":
        if "autoCreateApps" in body:
            store.auto_create_apps = bool(body["autoCreateApps"])
        if "operationDelaySeconds" in body:
            delay = body["operationDelaySeconds"]
            if isinstance(delay, bool) or not isinstance(delay, (int, float)) or delay < 0:
                raise RpcError("INVALID_ARGUMENT", "operationDelaySeconds must be a number >= 0")
            emulator.operations.delay = float(delay)
        return {"autoCreateApps": store.auto_create_apps, "operationDelaySeconds": emulator.operations.delay}
    if action == "agents":
        parent, agent_id, tools = body.get("app", ""), body.get("agentId", ""), body.get("tools", [])
        store.app(parent)
        with store.transaction(write=True) as db:
            old = store.get(db, parent, "agents", agent_id)
            data = {**(old.data if old else {"displayName": agent_id}), "tools": list(tools)}
            data = stamp(data, f"{parent}/agents/{agent_id}", old.data.get("createTime") if old else None)
            store.put(db, parent, "agents", agent_id, printed("agents", data))
        return {"name": f"{parent}/agents/{agent_id}"}
    if action == "inject":
        name, fields = body.get("name", ""), body.get("fields", {})
        match = APP_RE.match(name)
        parts = match.group(2).strip("/").split("/") if match else []
        if not match or len(parts) != 2 or parts[0] not in COLLECTIONS:
            raise RpcError("INVALID_ARGUMENT", "name must be the name of a resource of an app")
        parent, (collection, rid) = match.group(1), parts
        store.app(parent)
        with store.transaction(write=True) as db:
            data = {**emulator._existing(db, parent, collection, rid).data, **fields}
            emulator.taught.update((e.message, str(e.path[-1])) for e in extras(collection, data))
            store.put(db, parent, collection, rid, printed(collection, data))
        return {"name": name}
    if action == "evaluationOutcomes" and request.method == "POST":  # what the emulator cannot judge (evaluations.py)
        return emulator.evaluations.set_outcome(body)
    if action == "stats":
        refused = emulator.quota_state.refused
        quota = {"quotaRefused": {"writes": refused[WRITE_METRIC], "reads": refused[READ_METRIC]}}
        return {**(registry[0].clock.as_dict() if registry else {}), **quota}
    if action == "quota":
        if request.method == "POST":
            emulator.quota.update(body)
        return emulator.quota.as_dict()
    if action == "faults":
        for middleware in registry:
            middleware.config.update(body)
        return registry[0].config.as_dict() if registry else {}
    raise RpcError("NOT_FOUND", f"unknown admin action '{action}'")

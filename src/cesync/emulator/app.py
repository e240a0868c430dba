"""The emulator's HTTP surface: the CES v1 REST API for tools and toolsets, plus /admin.

One Starlette app serves both ways: over a socket through uvicorn
(``cesync emulator``) and in process through ``httpx.ASGITransport`` (the embedded
backend). Routing is by regular expression because resource names hold slashes
and custom methods hold colons.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..checks import HTTP_METHODS, parse_document
from ..models import ProtoModel, Tool, specs
from ..protojson import encode
from .errors import RpcError
from .execute import Executor
from .faults import FaultConfig, FaultMiddleware
from .store import (
    COLLECTIONS,
    DEFAULT_PAGE,
    MAX_PAGE,
    Store,
    page_token,
    parse_page_token,
    server_fields,
    validated,
)

__all__ = ["create_app"]

APP_RE = re.compile(r"^(projects/[^/]+/locations/[^/]+/apps/[^/:]+)(.*)$")
ID_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_-]{0,127}$")
Handler = Callable[[Request, str, str, str | None], Awaitable[Any]]


def _enum_int(request: Request) -> bool:
    return "enum-encoding=int" in request.query_params.get("$alt", "")


def _out(request: Request, collection: str, stored: dict[str, Any]) -> dict[str, Any]:
    return encode(stored, COLLECTIONS[collection], enum_int=_enum_int(request))


async def _json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    try:
        body = json.loads(raw)
    except ValueError:
        raise RpcError("INVALID_ARGUMENT", "Invalid JSON payload received.") from None
    if not isinstance(body, dict):
        raise RpcError("INVALID_ARGUMENT", "Invalid JSON payload received: expected an object.")
    return body


def _mask_paths(raw: str | None, model: type[ProtoModel]) -> list[str] | None:
    if raw is None or raw.strip() in ("", "*"):
        return None
    paths = [p.strip() for p in raw.split(",") if p.strip()]
    for path in paths:
        current: type[ProtoModel] | None = model
        for part in path.split("."):
            spec = specs(current).get(part) if current is not None else None
            if spec is None:
                raise RpcError("INVALID_ARGUMENT", f"invalid update_mask path '{path}': no field '{part}' in {model.__name__}")
            current = spec.message if not (spec.repeated or spec.map) else None
    return paths


def _apply_mask(stored: dict[str, Any], body: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    merged: dict[str, Any] = json.loads(json.dumps(stored))
    for path in paths:
        parts = path.split(".")
        src: Any = body
        for part in parts:
            src = src.get(part) if isinstance(src, dict) else None
        dst = merged
        for part in parts[:-1]:
            nxt = dst.get(part)
            if not isinstance(nxt, dict):
                if src is None:
                    break
                nxt = dst[part] = {}
            dst = nxt
        else:
            if src is None:
                dst.pop(parts[-1], None)
            else:
                dst[parts[-1]] = src
    return merged


class Emulator:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.executor = Executor(self._read_copy, self._tools_copy)

    def _read_copy(self, parent: str, collection: str, rid: str) -> dict[str, Any] | None:
        found = self.store.read(lambda s: self.store.app(s, parent)[collection].get(rid))
        return copy.deepcopy(found) if found is not None else None

    def _tools_copy(self, parent: str) -> dict[str, dict[str, Any]]:
        return self.store.read(lambda s: copy.deepcopy(self.store.app(s, parent)["tools"]))

    # --- collection calls ----------------------------------------------------------------

    async def list(self, request: Request, parent: str, collection: str, _: str | None) -> Any:
        q = request.query_params
        try:
            size = int(q.get("pageSize") or DEFAULT_PAGE)
        except ValueError:
            raise RpcError("INVALID_ARGUMENT", "pageSize must be an integer") from None
        if size < 0:
            raise RpcError("INVALID_ARGUMENT", "pageSize must not be negative")
        size = min(size or DEFAULT_PAGE, MAX_PAGE)
        flt = (q.get("filter") or "").replace(" ", "")
        if flt not in ("", "include_system_tools=true", "include_system_tools=false"):
            raise RpcError("INVALID_ARGUMENT", f"unsupported filter '{q.get('filter')}'")
        order = (q.get("orderBy") or "name").strip()
        field, _, direction = order.partition(" ")
        if field not in ("name", "create_time") or direction not in ("", "asc", "desc"):
            raise RpcError("INVALID_ARGUMENT", f"unsupported orderBy '{order}': use name or create_time")
        key = f"{parent}|{collection}|{flt}|{order}"
        offset = parse_page_token(q["pageToken"], key) if q.get("pageToken") else 0

        def read(state: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
            items = list(self.store.app(state, parent)[collection].values())
            if collection == "tools" and flt != "include_system_tools=true":
                items = [t for t in items if "systemTool" not in t]
            sort_key = "createTime" if field == "create_time" else "name"
            items.sort(key=lambda t: (t.get(sort_key, ""), t["name"]), reverse=direction == "desc")
            return items[offset : offset + size], len(items)

        page, total = self.store.read(read)
        out: dict[str, Any] = {collection: [_out(request, collection, t) for t in page]}
        if offset + size < total:
            out["nextPageToken"] = page_token(offset + size, key)
        return out

    async def create(self, request: Request, parent: str, collection: str, _: str | None) -> Any:
        singular = collection[:-1]
        body = await _json_body(request)
        stored = validated(collection, body)
        rid = request.query_params.get(f"{singular}Id")
        if rid is not None and not ID_RE.match(rid):
            raise RpcError("INVALID_ARGUMENT", f"invalid {singular}Id '{rid}'")

        def write(state: dict[str, Any]) -> dict[str, Any]:
            app = self.store.app(state, parent)
            nonlocal rid
            if rid is None:
                app["seq"] += 1
                rid = f"{singular}-{app['seq']:06d}"
            if rid in app[collection]:
                raise RpcError("ALREADY_EXISTS", f"{singular} {parent}/{collection}/{rid} already exists")
            if collection == "toolsets":
                _unique_display_name(app, stored, rid)
            app[collection][rid] = server_fields(collection, parent, rid, stored, None)
            return app[collection][rid]  # type: ignore[no-any-return]

        return _out(request, collection, self.store.write(write))

    # --- resource calls ------------------------------------------------------------------

    def _existing(self, state: dict[str, Any], parent: str, collection: str, rid: str) -> dict[str, Any]:
        found = self.store.app(state, parent)[collection].get(rid)
        if found is None:
            raise RpcError("NOT_FOUND", f"{collection[:-1]} {parent}/{collection}/{rid} not found")
        return found  # type: ignore[no-any-return]

    async def get(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        return _out(request, collection, self.store.read(lambda s: self._existing(s, parent, collection, rid)))

    async def patch(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        model = COLLECTIONS[collection]
        body = await _json_body(request)
        paths = _mask_paths(request.query_params.get("updateMask"), model)
        etag = body.get("etag") or ""

        def write(state: dict[str, Any]) -> dict[str, Any]:
            app = self.store.app(state, parent)
            current = self._existing(state, parent, collection, rid)
            if "systemTool" in current:
                raise RpcError("INVALID_ARGUMENT", "system tools cannot be updated")
            if etag and etag != current.get("etag"):
                raise RpcError("ABORTED", f"etag mismatch for {current['name']}: it was changed since it was read")
            unknown = {k: v for k, v in current.items() if k not in specs(model)}
            base = {k: v for k, v in current.items() if k in specs(model)}
            merged = _apply_mask(base, body, paths) if paths is not None else dict(body)
            stored = validated(collection, merged)
            if collection == "toolsets":
                _unique_display_name(app, stored, rid)
            stored.update(unknown)  # fields this emulator was taught out of band survive
            app[collection][rid] = server_fields(collection, parent, rid, stored, current.get("createTime"))
            return app[collection][rid]  # type: ignore[no-any-return]

        return _out(request, collection, self.store.write(write))

    async def delete(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        q = request.query_params
        etag, force = q.get("etag") or "", q.get("force", "").lower() == "true"

        def write(state: dict[str, Any]) -> None:
            app = self.store.app(state, parent)
            current = self._existing(state, parent, collection, rid)
            if "systemTool" in current:
                raise RpcError("FAILED_PRECONDITION", f"{current['name']} is a system tool and cannot be deleted")
            if etag and etag != current.get("etag"):
                raise RpcError("ABORTED", f"etag mismatch for {current['name']}: it was changed since it was read")
            users = [a for a, agent in app["agents"].items() if current["name"] in agent.get("tools", [])]
            if users and not force:
                raise RpcError(
                    "FAILED_PRECONDITION",
                    f"{current['name']} is referenced by agent(s) {', '.join(sorted(users))}; "
                    "remove the references or delete with force=true",
                )
            for a in users:
                app["agents"][a]["tools"].remove(current["name"])
            del app[collection][rid]

        self.store.write(write)
        return {}

    async def retrieve_tools(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        body = await _json_body(request)
        wanted = body.get("toolIds") or []
        toolset = self.store.read(lambda s: self._existing(s, parent, "toolsets", rid))
        tools = [t for t in _derived_tools(toolset) if not wanted or t["name"].rsplit("/", 1)[-1] in wanted]
        return {"tools": [encode(t, Tool, enum_int=_enum_int(request)) for t in tools]}


def _unique_display_name(app: dict[str, Any], stored: dict[str, Any], rid: str) -> None:
    name = stored.get("displayName")
    if name and any(t.get("displayName") == name for k, t in app["toolsets"].items() if k != rid):
        raise RpcError("ALREADY_EXISTS", f"a toolset with displayName '{name}' already exists in the app")


def _derived_tools(toolset: dict[str, Any]) -> list[dict[str, Any]]:
    """The tools a toolset exposes, named {toolset}/tools/{id} (output only)."""
    base = toolset["name"]
    out: list[dict[str, Any]] = []
    if "openApiToolset" in toolset:
        try:
            doc = parse_document(toolset["openApiToolset"]["openApiSchema"])
        except ValueError:
            doc = {}
        for path, item in (doc.get("paths") or {}).items() if isinstance(doc, dict) else []:
            for method, op in (item or {}).items():
                if method in HTTP_METHODS and isinstance(op, dict):
                    tid = op.get("operationId") or f"{method}{path}".replace("/", "_")
                    out.append(
                        {"name": f"{base}/tools/{tid}", "displayName": tid, "openApiTool": {"name": tid, "openApiSchema": ""}}
                    )
    elif "mcpToolset" in toolset:
        for o in toolset["mcpToolset"].get("toolOverrides", []):
            out.append(
                {
                    "name": f"{base}/tools/{o['tool']}",
                    "displayName": o.get("nameOverride") or o["tool"],
                    "mcpTool": {"name": o["tool"], "serverAddress": toolset["mcpToolset"]["serverAddress"]},
                }
            )
    elif "connectorToolset" in toolset:
        conn = toolset["connectorToolset"]
        for i, action in enumerate(conn.get("connectorActions", [])):
            tid = action.get("connectionActionId") or f"{action.get('entityOperation', {}).get('entityId', 'entity')}_{i}"
            out.append(
                {
                    "name": f"{base}/tools/{tid}",
                    "displayName": tid,
                    "connectorTool": {"connection": conn["connection"], "action": action},
                }
            )
    return out


ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    ("GET", re.compile(r"^/(tools|toolsets)$"), "list"),
    ("POST", re.compile(r"^/(tools|toolsets)$"), "create"),
    ("GET", re.compile(r"^/(tools|toolsets)/([^/:]+)$"), "get"),
    ("PATCH", re.compile(r"^/(tools|toolsets)/([^/:]+)$"), "patch"),
    ("DELETE", re.compile(r"^/(tools|toolsets)/([^/:]+)$"), "delete"),
    ("POST", re.compile(r"^/(toolsets)/([^/:]+):retrieveTools$"), "retrieve_tools"),
]


def create_app(store: Store | None = None, faults: FaultConfig | None = None) -> Starlette:
    """The emulator as an ASGI app (state in memory unless the store has a file)."""
    emulator = Emulator(store or Store())
    fault_middleware: list[FaultMiddleware] = []

    async def api(request: Request) -> Response:
        path = request.path_params["path"]
        try:
            match = APP_RE.match(path)
            if not match:
                raise RpcError("NOT_FOUND", f"unknown resource '{path}'")
            parent, rest = match.groups()
            if rest == ":executeTool" and request.method == "POST":
                return JSONResponse(await emulator.executor.execute(parent, await _json_body(request)))
            if rest == ":retrieveToolSchema":
                raise RpcError("UNIMPLEMENTED", "retrieveToolSchema is not implemented by this emulator")
            for method, pattern, handler_name in ROUTES:
                m = pattern.match(rest)
                if m and method == request.method:
                    handler: Handler = getattr(emulator, handler_name)
                    result = await handler(request, parent, m.group(1), m.group(2) if m.lastindex and m.lastindex > 1 else None)
                    return JSONResponse(result)
            raise RpcError("NOT_FOUND", f"no method {request.method} {rest or '/'} on {parent}")
        except RpcError as exc:
            return JSONResponse(exc.body(), status_code=exc.http)

    async def admin(request: Request) -> Response:
        try:
            return JSONResponse(await _admin(emulator, request, fault_middleware))
        except RpcError as exc:
            return JSONResponse(exc.body(), status_code=exc.http)

    app = Starlette(
        routes=[
            Route("/v1/{path:path}", api, methods=["GET", "POST", "PATCH", "DELETE"]),
            Route("/admin/{action:path}", admin, methods=["GET", "POST"]),
        ]
    )
    app.state.emulator = emulator
    config = faults or FaultConfig()
    app.add_middleware(FaultMiddleware, config=config, registry=fault_middleware)
    app.state.faults = config
    return app


async def _admin(emulator: Emulator, request: Request, registry: list[FaultMiddleware]) -> Any:
    """Test and setup hooks: apps, agents, unknown fields, faults, state."""
    action = request.path_params["action"]
    body = await _json_body(request) if request.method == "POST" else {}
    store = emulator.store
    if action == "state":
        return store.snapshot()
    if action == "apps":
        parent = body.get("name", "")
        if not APP_RE.match(parent):
            raise RpcError("INVALID_ARGUMENT", "name must be projects/*/locations/*/apps/*")
        store.write(lambda s: store.app(s, parent, create=True))
        return {"name": parent}
    if action == "config":
        if "autoCreateApps" in body:
            store.auto_create_apps = bool(body["autoCreateApps"])
        return {"autoCreateApps": store.auto_create_apps}
    if action == "agents":
        parent, agent_id, tools = body.get("app", ""), body.get("agentId", ""), body.get("tools", [])

        def add(state: dict[str, Any]) -> None:
            store.app(state, parent)["agents"][agent_id] = {"tools": list(tools)}

        store.write(add)
        return {"name": f"{parent}/agents/{agent_id}"}
    if action == "inject":
        name, fields = body.get("name", ""), body.get("fields", {})
        match = APP_RE.match(name)
        parts = match.group(2).strip("/").split("/") if match else []
        if not match or len(parts) != 2 or parts[0] not in COLLECTIONS:
            raise RpcError("INVALID_ARGUMENT", "name must be a tool or toolset resource name")

        def inject(state: dict[str, Any]) -> None:
            emulator._existing(state, match.group(1), parts[0], parts[1]).update(fields)

        store.write(inject)
        return {"name": name}
    if action == "faults":
        for middleware in registry:
            middleware.config.update(body)
        return registry[0].config.as_dict() if registry else {}
    raise RpcError("NOT_FOUND", f"unknown admin action '{action}'")

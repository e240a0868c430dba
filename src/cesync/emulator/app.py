"""The emulator's HTTP surface: the CES v1 REST API for tools and toolsets, plus /admin.

One Starlette app serves both ways: over a socket through uvicorn
(``cesync emulator``) and in process through ``httpx.ASGITransport`` (the embedded
backend). Routing is by regular expression because resource names hold slashes
and custom methods hold colons.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .errors import RpcError
from .execute import Executor
from .faults import FaultConfig, FaultMiddleware
from .openapi import HTTP_METHODS, parse_document
from .store import COLLECTIONS, DEFAULT_PAGE, MAX_PAGE, Store, first_function, new_etag, now, page_token, parse_page_token
from .wire import TOOL_TYPES, Printed, mask_paths, parse, printed, split_known, to_data

__all__ = ["create_app"]

APP_RE = re.compile(r"^(projects/[^/]+/locations/[^/]+/apps/[^/:]+)(.*)\Z")
ID_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_-]{0,127}\Z")
Handler = Callable[[Request, str, str, str | None], Awaitable[Any]]


def _enum_int(request: Request) -> bool:
    return "enum-encoding=int" in request.query_params.get("$alt", "")


def _answer(request: Request, res: Printed) -> Response:
    return Response(res.text(_enum_int(request)), media_type="application/json")


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


def _server_fields(collection: str, parent: str, rid: str, data: dict[str, Any], created: str | None) -> dict[str, Any]:
    """What the server sets on every write: name, times, etag, display name, docstring description."""
    data["name"] = f"{parent}/{collection}/{rid}"
    stamp = now()
    data["createTime"] = created or stamp
    data["updateTime"] = stamp
    data["etag"] = new_etag()
    if collection == "tools":
        kind = next((t for t in TOOL_TYPES if t in data), None)
        member = data.get(kind, {}) if kind else {}
        if kind == "pythonFunction":
            fname, doc = first_function(member.get("pythonCode", ""))
            if not member.get("name") and fname:
                member["name"] = fname
            if doc:
                member["description"] = doc.strip()
            else:
                member.pop("description", None)
        data["displayName"] = member.get("name") or rid
    else:
        data.setdefault("displayName", rid)
    return data


def _checked(collection: str, body: dict[str, Any]) -> dict[str, Any]:
    """A request body as the server stores it (proto3 JSON of the parsed message), or INVALID_ARGUMENT."""
    data = to_data(parse(collection, body))
    if collection == "tools" and "mcpTool" in data:
        raise RpcError("INVALID_ARGUMENT", "mcpTool cannot be created or updated directly; it is managed by an MCP toolset")
    if collection == "tools" and "systemTool" in data:
        raise RpcError("INVALID_ARGUMENT", "systemTool cannot be created or updated; system tools come with the app")
    return data


class Emulator:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.executor = Executor(self._read_copy, self._tools_copy)

    def _read_copy(self, parent: str, collection: str, rid: str) -> dict[str, Any] | None:
        self.store.app(parent)
        with self.store.transaction() as db:
            found = self.store.get(db, parent, collection, rid)
        return found.data if found is not None else None

    def _tools_copy(self, parent: str) -> dict[str, dict[str, Any]]:
        self.store.app(parent)
        with self.store.transaction() as db:
            return self.store.all_data(db, parent, "tools")

    def _existing(self, db: Any, parent: str, collection: str, rid: str) -> Printed:
        found = self.store.get(db, parent, collection, rid)
        if found is None:
            raise RpcError("NOT_FOUND", f"{collection[:-1]} {parent}/{collection}/{rid} not found")
        return found

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
        self.store.app(parent)
        with self.store.transaction() as db:
            rows, total = self.store.page(
                db,
                parent,
                collection,
                system=collection != "tools" or flt == "include_system_tools=true",
                by_time=field == "create_time",
                desc=direction == "desc",
                offset=offset,
                size=size,
            )
        enum_int = _enum_int(request)
        text = f'{{"{collection}":[' + ",".join(r[1] if enum_int else r[0] for r in rows) + "]"
        if offset + size < total:
            text += f',"nextPageToken":{json.dumps(page_token(offset + size, key))}'
        return Response(text + "}", media_type="application/json")

    async def create(self, request: Request, parent: str, collection: str, _: str | None) -> Any:
        singular = collection[:-1]
        data = _checked(collection, await _json_body(request))
        rid = request.query_params.get(f"{singular}Id")
        if rid is not None and not ID_RE.match(rid):
            raise RpcError("INVALID_ARGUMENT", f"invalid {singular}Id '{rid}'")
        self.store.app(parent)
        with self.store.transaction(write=True) as db:
            if rid is None:
                rid = self.store.next_id(db, parent, singular)
            if self.store.get(db, parent, collection, rid) is not None:
                raise RpcError("ALREADY_EXISTS", f"{singular} {parent}/{collection}/{rid} already exists")
            data = _server_fields(collection, parent, rid, data, None)
            if collection == "toolsets":
                self._unique_display_name(db, parent, data, rid)
            res = printed(collection, data)
            self.store.put(db, parent, collection, rid, res)
        return _answer(request, res)

    # --- resource calls ------------------------------------------------------------------

    async def get(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        self.store.app(parent)
        with self.store.transaction() as db:
            return _answer(request, self._existing(db, parent, collection, rid))

    async def patch(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        body = await _json_body(request)
        paths = mask_paths(request.query_params.get("updateMask"), collection)
        incoming = _checked(collection, body) if paths is None else to_data(parse(collection, body, complete=False))
        etag = body.get("etag") or ""
        self.store.app(parent)
        with self.store.transaction(write=True) as db:
            current = self._existing(db, parent, collection, rid).data
            if "systemTool" in current:
                raise RpcError("INVALID_ARGUMENT", "system tools cannot be updated")
            if etag and etag != current.get("etag"):
                raise RpcError("ABORTED", f"etag mismatch for {current['name']}: it was changed since it was read")
            known, unknown = split_known(collection, current)
            data = incoming if paths is None else _checked(collection, _apply_mask(known, incoming, paths))
            data = _server_fields(collection, parent, rid, data, current.get("createTime"))
            if collection == "toolsets":
                self._unique_display_name(db, parent, data, rid)
            data.update(unknown)  # fields this emulator was taught out of band survive
            res = printed(collection, data)
            self.store.put(db, parent, collection, rid, res)
        return _answer(request, res)

    async def delete(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        q = request.query_params
        etag, force = q.get("etag") or "", q.get("force", "").lower() == "true"
        self.store.app(parent)
        with self.store.transaction(write=True) as db:
            current = self._existing(db, parent, collection, rid).data
            if "systemTool" in current:
                raise RpcError("FAILED_PRECONDITION", f"{current['name']} is a system tool and cannot be deleted")
            if etag and etag != current.get("etag"):
                raise RpcError("ABORTED", f"etag mismatch for {current['name']}: it was changed since it was read")
            agents = self.store.agents(db, parent)
            users = [a for a, tools in agents.items() if current["name"] in tools]
            if users and not force:
                raise RpcError(
                    "FAILED_PRECONDITION",
                    f"{current['name']} is referenced by agent(s) {', '.join(sorted(users))}; "
                    "remove the references or delete with force=true",
                )
            for a in users:
                self.store.set_agent(db, parent, a, [t for t in agents[a] if t != current["name"]])
            self.store.delete(db, parent, collection, rid)
        return {}

    async def retrieve_tools(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        body = await _json_body(request)
        wanted = body.get("toolIds") or []
        self.store.app(parent)
        with self.store.transaction() as db:
            toolset = self._existing(db, parent, "toolsets", rid).data
        tools = [t for t in _derived_tools(toolset) if not wanted or t["name"].rsplit("/", 1)[-1] in wanted]
        enum_int = _enum_int(request)
        text = '{"tools":[' + ",".join(printed("tools", t).text(enum_int) for t in tools) + "]}"
        return Response(text, media_type="application/json")

    def _unique_display_name(self, db: Any, parent: str, data: dict[str, Any], rid: str) -> None:
        name = data.get("displayName")
        if name and self.store.display_name_taken(db, parent, name, rid):
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
                    return result if isinstance(result, Response) else JSONResponse(result)
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
        store.app(parent, create=True)
        return {"name": parent}
    if action == "config":
        if "autoCreateApps" in body:
            store.auto_create_apps = bool(body["autoCreateApps"])
        return {"autoCreateApps": store.auto_create_apps}
    if action == "agents":
        parent, agent_id, tools = body.get("app", ""), body.get("agentId", ""), body.get("tools", [])
        store.app(parent)
        with store.transaction(write=True) as db:
            store.set_agent(db, parent, agent_id, list(tools))
        return {"name": f"{parent}/agents/{agent_id}"}
    if action == "inject":
        name, fields = body.get("name", ""), body.get("fields", {})
        match = APP_RE.match(name)
        parts = match.group(2).strip("/").split("/") if match else []
        if not match or len(parts) != 2 or parts[0] not in COLLECTIONS:
            raise RpcError("INVALID_ARGUMENT", "name must be a tool or toolset resource name")
        parent, (collection, rid) = match.group(1), parts
        store.app(parent)
        with store.transaction(write=True) as db:
            data = {**emulator._existing(db, parent, collection, rid).data, **fields}
            store.put(db, parent, collection, rid, printed(collection, data))
        return {"name": name}
    if action == "faults":
        for middleware in registry:
            middleware.config.update(body)
        return registry[0].config.as_dict() if registry else {}
    raise RpcError("NOT_FOUND", f"unknown admin action '{action}'")

"""What the server derives from tools and toolsets: a toolset's tools (RetrieveTools) and a tool's
schemas (RetrieveToolSchema)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from .calls import json_body, request_message, wants_enum_int
from .errors import RpcError
from .openapi import HTTP_METHODS, parse_document
from .schemas import tool_schemas, toolset_tool_schemas
from .service import Service
from .wire import printed


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


class Derived(Service):
    """RetrieveTools and RetrieveToolSchema."""

    async def retrieve_tools(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        body = await json_body(request)
        wanted = body.get("toolIds") or []
        self.store.app(parent)
        with self.store.transaction() as db:
            toolset = self._existing(db, parent, "toolsets", rid).data
        tools = [t for t in _derived_tools(toolset) if not wanted or t["name"].rsplit("/", 1)[-1] in wanted]
        enum_int = wants_enum_int(request)
        text = '{"tools":[' + ",".join(printed("tools", t).text(enum_int) for t in tools) + "]}"
        return Response(text, media_type="application/json")

    async def retrieve_tool_schema(self, request: Request, parent: str) -> Any:
        body = request_message("RetrieveToolSchemaRequest", {**await json_body(request), "parent": parent})
        self.store.app(parent)
        out: dict[str, Any]
        with self.store.transaction() as db:
            if body.get("tool"):
                tool_parent, _, rid = str(body["tool"]).rpartition("/tools/")
                if tool_parent != parent:
                    raise RpcError("INVALID_ARGUMENT", f"{body['tool']!r} is not a tool of {parent}")
                inp, outp = tool_schemas(self._existing(db, parent, "tools", rid).data)
                out = {"tool": body["tool"]}
            elif body.get("toolsetTool"):
                ref = body["toolsetTool"]
                ts_parent, _, ts_id = str(ref.get("toolset", "")).rpartition("/toolsets/")
                if ts_parent != parent:
                    raise RpcError("INVALID_ARGUMENT", f"{ref.get('toolset')!r} is not a toolset of {parent}")
                inp, outp = toolset_tool_schemas(self._existing(db, parent, "toolsets", ts_id).data, str(ref.get("toolId", "")))
                out = {"toolsetTool": ref}
            else:
                raise RpcError("INVALID_ARGUMENT", "set exactly one of tool or toolsetTool")
        out.update(inputSchema=inp, outputSchema=outp)
        return request_message("RetrieveToolSchemaResponse", out)

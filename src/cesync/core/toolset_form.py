"""The toolset a tool file of a type CES makes itself is written as (pure).

CES makes OpenAPI, connector and MCP tools from toolsets and refuses them in CreateTool
and UpdateTool (see ``api.kinds.SERVER_MADE_TOOLS`` for the sources). :func:`toolset_form`
maps such a tool's fields onto the toolset that makes it: validate shows the result,
``cesync convert-tools`` writes it. It works on the data as written (``{file: ...}``
includes, ``${VAR}`` and ``$env_var`` stay as they are), so it runs before any rendering.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..api.kinds import SERVER_MADE_TOOLS, TOOL_HOLDER, ResourceKind
from ..api.resource import Resource

__all__ = ["SHARED", "TOOLSET_FIELDS", "as_toolsets", "server_made_member", "toolset_form"]

# The fields of each tool type its toolset has too (google-cloud-ces OpenApiTool / OpenApiToolset,
# ConnectorTool / ConnectorToolset, McpTool / McpToolset); a connector tool's `action` becomes the
# one entry of `connectorActions`.
TOOLSET_FIELDS: Mapping[str, tuple[str, ...]] = {
    "openApiTool": ("openApiSchema", "apiAuthentication", "tlsConfig", "serviceDirectoryConfig", "ignoreUnknownFields", "url"),
    "connectorTool": ("connection", "authConfig"),
    "mcpTool": ("serverAddress", "apiAuthentication", "tlsConfig", "serviceDirectoryConfig", "customHeaders"),
}
# Top-level fields a Tool and a Toolset share.
SHARED = ("executionType", "timeout", "toolFakeConfig")


def server_made_member(data: Mapping[str, Any]) -> str | None:
    """The server-made tool type a tool file holds, if any."""
    return next((m for m in SERVER_MADE_TOOLS if m in data), None)


def toolset_form(data: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]] | None:
    """(the toolset body, the fields it cannot carry) for a tool of a toolset-made type; None for others.

    The tool's ``description`` becomes the toolset's; its ``name`` has no place (the toolset's tools
    are named by the server: an OpenAPI schema's operationIds, a connector's actions, the MCP
    server's tools), nor have the fields the server fills in for an MCP tool.
    """
    member = server_made_member(data)
    target = SERVER_MADE_TOOLS.get(member or "")
    if member is None or not target:
        return None
    spec = data[member] if isinstance(data[member], Mapping) else {}
    inner: dict[str, Any] = {k: spec[k] for k in TOOLSET_FIELDS[member] if k in spec}
    if member == "connectorTool" and "action" in spec:
        inner["connectorActions"] = [spec["action"]]
    body: dict[str, Any] = {target: inner}
    if isinstance(spec.get("description"), str) and "description" not in data:
        body["description"] = spec["description"]
    for key in ("displayName", "description", *SHARED):
        if key in data:
            body[key] = data[key]
    carried = {*TOOLSET_FIELDS[member], "description", "action" if member == "connectorTool" else ""}
    dropped = [f"{member}.{k}" for k in spec if k not in carried]
    dropped += [k for k in data if k not in (member, "id", "displayName", "description", *SHARED)]
    return body, dropped


def as_toolsets(resources: list[Resource], parent: str) -> tuple[list[Resource], list[str]]:
    """Resources read from elsewhere (an archive) with each tool of a server-made type made a toolset.

    A tool CES makes from a toolset becomes that toolset (its id kept where free), and an agent that
    lists the tool in ``tools`` lists the toolset in ``toolsets`` instead; a system or remote agent
    tool is left out. Returns the resources and a note per change.
    """
    taken = {r.id for r in resources if r.kind.holds_tools}
    moved: dict[str, str] = {}  # the tool's full name -> the toolset's
    kept: list[Resource] = []
    notes: list[str] = []
    for r in resources:
        member = server_made_member(r.body) if r.kind.server_made else None
        form = toolset_form(r.body) if member else None
        if member is None:
            kept.append(r)
            continue
        if form is None:
            notes.append(f"left out tool {r.id} ({member}): CES makes these itself; they are not files to apply")
            continue
        rid, n = r.id, 1
        while rid in taken:
            n += 1
            rid = f"{r.id}_{n}"
        taken.add(rid)
        body, dropped = form
        kept.append(Resource(TOOL_HOLDER, rid, {"name": r.body.get("name", ""), **body}))
        moved[r.kind.resource_name(parent, r.id)] = TOOL_HOLDER.resource_name(parent, rid)
        left = f" ({', '.join(dropped)} left out)" if dropped else ""
        notes.append(f"tool {r.id} ({member}): CES makes these only from a toolset; written as toolset {rid}{left}")
    if moved:
        kept = [_retarget_agent(r, moved, notes) if _lists_tools(r.kind) else r for r in kept]
        notes += [
            f"{r.kind} {r.id} still names {name} (now a toolset's tool): name it through the toolset instead"
            for r in kept
            for name in sorted(moved)
            if not _lists_tools(r.kind) and name in _strings(r.body)
        ]
    return kept, notes


def _lists_tools(kind: ResourceKind) -> bool:
    """An agent: its ``tools`` names tools and its ``toolsets`` toolsets, so a moved tool moves between them."""
    return all(f in kind.references for f in ("tools", "toolsets.toolset"))


def _retarget_agent(agent: Resource, moved: Mapping[str, str], notes: list[str]) -> Resource:
    tools = agent.body.get("tools")
    if not isinstance(tools, list) or not any(t in moved for t in tools if isinstance(t, str)):
        return agent
    toolsets = list(agent.body.get("toolsets") or [])
    for t in tools:
        if isinstance(t, str) and t in moved:
            toolsets.append({"toolset": moved[t]})
            notes.append(f"agent {agent.id}: tools entry {t.rsplit('/', 1)[-1]} moved to toolsets")
    body = {**agent.body, "tools": [t for t in tools if t not in moved], "toolsets": toolsets}
    if not body["tools"]:
        del body["tools"]
    return Resource(agent.kind, agent.id, body)


def _strings(node: Any) -> set[str]:
    if isinstance(node, dict):
        return {s for v in node.values() for s in _strings(v)}
    if isinstance(node, list):
        return {s for v in node for s in _strings(v)}
    return {node} if isinstance(node, str) else set()

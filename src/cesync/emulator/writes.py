"""What the server does to every write: the body checked as protobuf, the update mask applied,
the fields the server sets (name, times, etag, a tool's display name) and the ones it defaults."""

from __future__ import annotations

import json
from typing import Any

from ..api import behaviour as fb
from .errors import RpcError
from .extras import Extra, graft
from .store import first_function, new_etag, now
from .wire import TOOL_TYPES, Parsed, checked, kind


def apply_mask(stored: dict[str, Any], body: dict[str, Any], paths: list[str]) -> dict[str, Any]:
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


def with_extras(data: dict[str, Any], found: list[Extra]) -> dict[str, Any]:
    """data (a copy, when there is anything to put back) with these fields where they were."""
    return graft(json.loads(json.dumps(data)), found) if found else data


def stamp(data: dict[str, Any], name: str, created: str | None) -> dict[str, Any]:
    data["name"] = name
    stamp = now()
    data["createTime"] = created or stamp
    data["updateTime"] = stamp
    data["etag"] = new_etag()
    return data


def server_fields(collection: str, parent: str, rid: str, data: dict[str, Any], created: str | None) -> dict[str, Any]:
    """What the server sets on every write: name, times, etag, a tool's display name, docstring description."""
    stamp(data, f"{parent}/{collection}/{rid}", created)
    if collection == "tools":
        tool_kind = next((t for t in TOOL_TYPES if t in data), None)
        member = dict(data.get(tool_kind, {})) if tool_kind else {}  # a copy: the parsed body's data stays as parsed
        if tool_kind:
            data[tool_kind] = member
        if tool_kind == "pythonFunction":
            fname, doc = first_function(member.get("pythonCode", ""))
            if not member.get("name") and fname:
                member["name"] = fname
            if doc:
                member["description"] = doc.strip()
            else:
                member.pop("description", None)
        data["displayName"] = member.get("name") or rid
    elif collection == "toolsets":
        data.setdefault("displayName", rid)
    return data


def checked_body(collection: str, body: dict[str, Any]) -> dict[str, Any]:
    """A request body as the server stores it (proto3 JSON of the parsed message), or INVALID_ARGUMENT."""
    return checked_parsed(collection, body).data


def checked_parsed(collection: str, body: dict[str, Any]) -> Parsed:
    """checked_body, with the message it printed (a write prints its resource from it: see wire.printed)."""
    if collection == "tools":
        refuse_server_made(body)  # the type itself is refused, before what its own fields lack
    parsed = checked(collection, body)
    if collection == "tools":
        refuse_server_made(parsed.data)  # a proto name (mcp_tool) as well
    return parsed


# Tool types CreateTool and UpdateTool refuse: api.behaviour's READ_ONLY rules (Terraform
# mmv1/products/ces/Tool.yaml: docs.note "cannot be created, updated, or managed directly" and
# `output: true`; google-cloud-ces Tool.mcp_tool "cannot be created or updated directly"). The
# wording of the real refusal is not documented: the message is the emulator's own.
def refuse_server_made(data: dict[str, Any]) -> None:
    member = next((t for t in fb.fields("Tool", fb.READ_ONLY) if t in data), None)
    if member is not None:
        made_by = fb.rule("Tool", member, fb.READ_ONLY).detail
        why = (
            f"it is generated from a {made_by}; create the toolset instead" if made_by else "CES makes tools of this type itself"
        )
        raise RpcError("INVALID_ARGUMENT", f"{member} cannot be created or updated directly: {why}")


# What the emulator fills in for a field the server defaults (fb.SERVER_DEFAULTED) when a write
# leaves it out. The real value is not documented (Terraform says only `default_from_api`): this
# one is the emulator's own, present and non-empty so that a client that plans it away shows.
SERVER_DEFAULT_VALUES: dict[tuple[str, str], dict[str, Any]] = {
    ("App", "loggingSettings"): {"conversationLoggingSettings": {}, "cloudLoggingSettings": {}},
}


def server_defaults(collection: str, data: dict[str, Any]) -> dict[str, Any]:
    message = kind(collection).message
    for name in fb.fields(message, fb.SERVER_DEFAULTED):
        if name not in data:
            data[name] = json.loads(json.dumps(SERVER_DEFAULT_VALUES[(message, name)]))
    return data

"""One tool call (pure): naming the tool, building the executeTool request, reading the answer.

- a tool is named by local id (``refund-policy``), a toolset tool as
  ``TOOLSET/TOOL_ID``, or by a full resource name of any app (the last part counts,
  so a call captured in one environment runs in another);
- the answer becomes the canonical tool output (``content``, ``structuredContent``,
  ``metadata``, ``isError``, ``modelVisible``: docs/commands/tools.md, ``cesync exec``), its
  metadata naming who made the call and for which app (``ces.agentName``,
  ``ces.parentToolCallId``, ``ces.targetApp``) where the answer says.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import CesyncError
from .checks import suggest

__all__ = ["CALL_CONTEXT", "canonical_output", "mock_config", "request_for", "target", "target_app", "unknown_tool"]

_APP = r"^projects/[^/]+/locations/[^/]+/apps/[^/]+/"
FULL_TOOL = re.compile(_APP + r"tools/([^/]+)\Z")
FULL_TOOLSET_TOOL = re.compile(_APP + r"toolsets/([^/]+)/tools/([^/]+)\Z")
FULL = re.compile(_APP + r"(tools|toolsets)/([^/]+)(?:/tools/([^/]+))?\Z")  # either, or a form of neither


def target(ref: str, parent: str) -> dict[str, Any]:
    """{"tool": name} or {"toolsetTool": {...}} for a tool reference."""
    if match := FULL_TOOL.match(ref):
        return {"tool": f"{parent}/tools/{match.group(1)}"}
    if match := FULL_TOOLSET_TOOL.match(ref):
        return {"toolsetTool": {"toolset": f"{parent}/toolsets/{match.group(1)}", "toolId": match.group(2)}}
    if FULL.match(ref):
        raise CesyncError(f"{ref!r} names no tool (expected .../tools/ID or .../toolsets/ID/tools/TOOL_ID)")
    parts = ref.split("/")
    if len(parts) == 1 and parts[0]:
        return {"tool": f"{parent}/tools/{parts[0]}"}
    if len(parts) == 2 and all(parts):
        return {"toolsetTool": {"toolset": f"{parent}/toolsets/{parts[0]}", "toolId": parts[1]}}
    raise CesyncError(f"tool {ref!r}: use a tool id, TOOLSET/TOOL_ID or a full resource name")


def mock_config(config: Any, parent: str, names: dict[str, str] | None = None) -> dict[str, Any]:
    """mockConfig with each mocked tool named by local id resolved to this app's resource name."""
    if not isinstance(config, dict):
        raise CesyncError("mockConfig must be a mapping with mockedToolCalls and unmatchedToolCallBehavior")
    calls = []
    for call in config.get("mockedToolCalls") or []:
        if not isinstance(call, dict):
            raise CesyncError("each mockedToolCalls entry must be a mapping")
        call = dict(call)
        if isinstance(call.get("toolId"), str):
            resolved = target(_alias(call["toolId"], names or {}), parent)
            if "tool" in resolved:
                call["toolId"] = resolved["tool"]
            else:
                call.pop("toolId")
                call["toolset"] = resolved["toolsetTool"]
        call.setdefault("expectedArgsPattern", {})
        calls.append(call)
    return {
        "mockedToolCalls": calls,
        "unmatchedToolCallBehavior": config.get("unmatchedToolCallBehavior", "FAIL"),
    }


def request_for(
    ref: str,
    parent: str,
    args: dict[str, Any] | None = None,
    *,
    variables: dict[str, Any] | None = None,
    context: dict[str, Any] | None = None,
    mocks: Any = None,
    names: dict[str, str] | None = None,
) -> dict[str, Any]:
    """names: display and type-level names -> local ids (see pipeline.toolnames.tool_names)."""
    if variables is not None and context is not None:
        raise CesyncError("give variables or context, not both")
    request: dict[str, Any] = {**target(_alias(ref, names or {}), parent), "args": args or {}}
    if variables is not None:
        request["variables"] = variables
    if context is not None:
        request["context"] = context
    if mocks is not None:
        request["mockConfig"] = mock_config(mocks, parent, names)
    return request


def unknown_tool(ref: str, names: dict[str, str], where: str = "the app") -> str | None:
    """Why ``ref`` names no tool of ``names`` (every name -> local id, ids included), with the
    closest names; None when it names one. A TOOLSET/TOOL_ID is checked as far as its toolset."""
    if FULL.match(ref):
        return None  # a full name of any app: its last part counts, checked by the server
    resolved = _alias(ref, names)
    ids = set(names.values()) | {v.split("/")[0] for v in names.values()}
    if resolved in ids or ("/" in resolved and resolved.split("/")[0] in ids):
        return None
    return f"tool '{ref}' is not in {where}{suggest(ref, sorted(set(names)))}"


def _alias(ref: str, names: dict[str, str]) -> str:
    if ref in names:
        return names[ref]
    head, sep, tail = ref.partition("/")
    return f"{names.get(head, head)}/{tail}" if sep and not FULL.match(ref) else ref


# Output only on ToolCall and ToolResponse (discovery rev 20261016: agentName, parentToolCallId;
# the seeds' ToolResponse page: targetApp): who issued the call and for which app. Empty (so absent
# in proto3 JSON) for a call the root agent made at the top level, as executeTool's always is.
CALL_CONTEXT = ("agentName", "parentToolCallId", "targetApp")


def target_app(call: dict[str, Any]) -> str | None:
    """The app a tool call or answer targeted: its ``targetApp``, else the app its tool (or
    toolset tool) is named in, as ToolResponse.targetApp "mirrors ToolCall.target_app"."""
    if isinstance(call.get("targetApp"), str) and call["targetApp"]:
        return str(call["targetApp"])
    toolset_tool = call.get("toolsetTool")
    name = call.get("tool") or (toolset_tool.get("toolset") if isinstance(toolset_tool, dict) else None)
    match = re.match(r"^(projects/[^/]+/locations/[^/]+/apps/[^/]+)/", name) if isinstance(name, str) else None
    return match.group(1) if match else None


def canonical_output(answer: dict[str, Any]) -> dict[str, Any]:
    """executeTool's response -> content, structuredContent, metadata, isError, modelVisible."""
    response = answer.get("response")
    response = response if isinstance(response, dict) else {}
    is_error = "error" in response
    if is_error:
        value: Any = response["error"]
    elif "output" in response:
        value = response["output"]
    else:
        value = response
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    out: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if not is_error:
        out["structuredContent"] = value
    metadata: dict[str, Any] = {"ces.variables": answer.get("variables") or {}}
    for key in ("citations", "googleSearchSuggestions", *CALL_CONTEXT):
        if answer.get(key):
            metadata[f"ces.{key}"] = answer[key]
    app = target_app(answer)
    if app and "ces.targetApp" not in metadata:
        metadata["ces.targetApp"] = app
    out["metadata"] = metadata
    out["isError"] = is_error
    out["modelVisible"] = True
    return out

"""The names tool tests may call a tool by (display names, type-level names, a toolset's
operations as cxas-scrapi names them) -> the local ids."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..api.resource import Resource
from ..core.documents import parse_document
from ..models import TOOL_TYPES
from ..sync.remote import list_app

if TYPE_CHECKING:  # the HTTP client loads when a command first uses it (see client/__init__.py)
    from ..client.api import CesClient


async def tool_names(client: CesClient, parent: str) -> dict[str, str]:
    """Display names and type-level names (``refund_policy``) -> local ids, for tests written by name."""
    listed = await list_app(client, parent)
    tools = [r for kind, items in listed.items() if kind.named_by_type for r in items]
    toolsets = [r for kind, items in listed.items() if kind.holds_tools for r in items]
    names: dict[str, str] = {}
    for rid, t in ((r.id, r.body) for r in tools):
        kind = next((k for k in TOOL_TYPES if isinstance(t.get(k), dict)), None)
        for alias in (t.get("displayName"), t[kind].get("name") if kind else None):
            if isinstance(alias, str) and alias and alias != rid:
                names.setdefault(alias, rid)
    for rid, ts in ((r.id, r.body) for r in toolsets):
        if isinstance(ts.get("displayName"), str) and ts["displayName"] != rid:
            names.setdefault(ts["displayName"], rid)
        for operation in _operation_ids(ts):  # cxas-scrapi names an OpenAPI toolset's tool <toolset>_<operationId>
            names.setdefault(f"{ts.get('displayName') or rid}_{operation}", f"{rid}/{operation}")
    for rid in [r.id for r in tools] + [r.id for r in toolsets]:
        names.setdefault(rid, rid)  # the ids too, after the aliases: a name that names nothing is known as such
    return names


def tested_tools(root: Path, desired: Iterable[Resource]) -> dict[str, list[str]]:
    """The repo's tool tests (tests/*.yaml) -> the "tool/id" or "toolset/id" each runs, by the names
    the repo's own files give (ids, display names, type-level names). A test file that does not load
    maps nothing here: validate and test report it."""
    from ..errors import ConfigError
    from ..tooltests.schema import load_tests

    try:
        cases = load_tests(root)
    except ConfigError:
        return {}
    if not cases:
        return {}  # no test names a tool: the repo's names are not gathered
    names: dict[str, str] = {}
    for r in desired:
        if r.kind.named_by_type:
            member = next((k for k in TOOL_TYPES if isinstance(r.body.get(k), dict)), None)
            aliases = [r.id, r.body.get("displayName"), r.body[member].get("name") if member else None]
            names.update({a: f"tool/{r.id}" for a in aliases if isinstance(a, str) and a and a not in names})
        elif r.kind.holds_tools:
            for a in (r.id, r.body.get("displayName")):
                if isinstance(a, str) and a and a not in names:
                    names[a] = f"toolset/{r.id}"
    out: dict[str, list[str]] = {}
    for case in cases:
        head = case.tool.split("/", 1)[0]
        key = names.get(case.tool) or names.get(head) or names.get(case.tool.rsplit("_", 1)[0])
        if key is not None:
            out[case.id] = [key]
    return out


def _operation_ids(toolset: dict[str, Any]) -> list[str]:
    spec = toolset.get("openApiToolset")
    schema = spec.get("openApiSchema") if isinstance(spec, dict) else None
    try:
        doc = parse_document(schema) if isinstance(schema, str) else None
    except ValueError:
        return []
    paths = doc.get("paths") if isinstance(doc, dict) else None
    return [
        str(op["operationId"])
        for item in (paths.values() if isinstance(paths, dict) else [])
        if isinstance(item, dict)
        for op in item.values()
        if isinstance(op, dict) and op.get("operationId")
    ]

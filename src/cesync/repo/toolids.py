"""An agent's toolIds that its OpenAPI toolset has no operation for: validate's warnings.

An agent names the tools it may use of a toolset by id (``toolsets: [{toolset: {ref: ...},
toolIds: [getOrder]}]``); an OpenAPI toolset's tools are its operations, by ``operationId``
(the ids RetrieveTools answers with, and cxas-scrapi's ``<toolset>_<operationId>``). The API
takes any id there (its field behaviour is OPTIONAL, nothing says it is checked), so a typo
leaves the agent without the tool and nothing says so. Said where the id is written, with the
closest operation, only for a toolset whose every operation has an operationId (else CES names
some tools in a way this does not know).
"""

from __future__ import annotations

import difflib
from typing import Any

from ..api.kinds import by_collection
from ..core.documents import parse_document
from ..errors import Problem
from .credentials import WARNING
from .loading import SourceFile

__all__ = ["openapi_tool_ids", "unknown_tool_ids"]

METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})


def openapi_tool_ids(toolset: dict[str, Any]) -> set[str] | None:
    """The operationIds of an OpenAPI toolset's schema; None when not an OpenAPI toolset, its schema
    does not parse, or an operation has no operationId."""
    spec = toolset.get("openApiToolset")
    schema = spec.get("openApiSchema") if isinstance(spec, dict) else None
    if not isinstance(schema, str):
        return None
    try:
        doc = parse_document(schema)
    except ValueError:
        return None
    paths = doc.get("paths") if isinstance(doc, dict) else None
    if not isinstance(paths, dict):
        return None
    ids: set[str] = set()
    for item in paths.values():
        for method, op in item.items() if isinstance(item, dict) else ():
            if method not in METHODS or not isinstance(op, dict):
                continue
            if not isinstance(op.get("operationId"), str) or not op["operationId"]:
                return None
            ids.add(op["operationId"])
    return ids


def unknown_tool_ids(files: list[SourceFile]) -> list[Problem]:
    """A warning for each toolId of an agent that its (repo-defined) OpenAPI toolset has no operation for.

    The toolsets' files as written, their included schema read (no render: validate of a large
    repo renders once); a schema given otherwise (templated, unreadable) is not judged."""
    tools = {src.id: ids for src in files if src.kind.holds_tools and (ids := _written_ids(src)) is not None}
    found: list[Problem] = []
    for src in files:
        data = src.doc.data
        names_toolsets = "toolsets.toolset" in src.kind.references  # the agent: toolsets with toolIds
        entries = data.get("toolsets") if names_toolsets and isinstance(data, dict) else None
        for i, entry in enumerate(entries if isinstance(entries, list) else []):
            ref = entry.get("toolset") if isinstance(entry, dict) else None
            named = ref.get("ref") if isinstance(ref, dict) else None
            collection, _, rid = named.partition("/") if isinstance(named, str) else ("", "", "")
            holder = by_collection(collection)
            ids = tools.get(rid) if holder is not None and holder.holds_tools else None
            wanted = entry.get("toolIds") if ids is not None else None
            for j, tid in enumerate(wanted if isinstance(wanted, list) else []):
                if isinstance(tid, str) and tid not in (ids or set()):
                    close = difflib.get_close_matches(tid, sorted(ids or ()), n=1, cutoff=0.6)
                    listed = ", ".join(sorted(ids or ())) or "none"
                    hint = f"; did you mean '{close[0]}'?" if close else f" (its operations: {listed})"
                    said = (
                        f"{WARNING}toolsets/{rid} has no tool '{tid}'{hint}: an OpenAPI toolset's tools are its "
                        "operations, by operationId, and CES takes any id here, so the agent would be without it"
                    )
                    found.append(src.doc.problem(("toolsets", i, "toolIds", j), said))
    return found


def _written_ids(src: SourceFile) -> set[str] | None:
    data = src.doc.data if isinstance(src.doc.data, dict) else {}
    spec = data.get("openApiToolset")
    schema = spec.get("openApiSchema") if isinstance(spec, dict) else None
    if isinstance(schema, dict) and set(schema) == {"file"} and isinstance(schema["file"], str):
        try:  # validate has checked the include (inside the repo, UTF-8); anything else: not judged
            schema = (src.path.parent / schema["file"]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
    if not isinstance(schema, str) or "${" in schema:
        return None
    return openapi_tool_ids({"openApiToolset": {"openApiSchema": schema}})

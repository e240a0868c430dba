"""JSON Schemas of the repo's file formats, generated from the models (pure).

Editors use them through a ``# yaml-language-server: $schema=...`` modeline. The
schemas describe what a user writes, so output-only fields are left out and the
repo conveniences ({file: ...}, mapping-form schemas, {ref: ...}) are allowed.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from ..api.kinds import DRAFT_VERSION, KINDS, ResourceKind, ref_collections, ref_fields
from ..core.walk import written_order
from ..models import specs
from .config import Config

__all__ = ["SCHEMA_FILES", "render_schemas"]

SCHEMA_FILES = (*(f"{k}.schema.json" for k in KINDS), "cesync.schema.json")
_FILE = {"type": "object", "properties": {"file": {"type": "string"}}, "required": ["file"], "additionalProperties": False}
_REF_TARGET = f"({'|'.join(ref_collections())})/[A-Za-z0-9][A-Za-z0-9_-]*"
_REF = {
    "type": "object",
    "properties": {
        "ref": {"type": "string", "pattern": f"^({_REF_TARGET}|{re.escape(DRAFT_VERSION)})$"},
        # another repo's resource in a shared app (cesync.yaml owner; docs/ownership.md)
        "owner": {"type": "string", "pattern": "^[a-z][a-z0-9-]{0,39}$"},
    },
    "required": ["ref"],
    "additionalProperties": False,
}
# "tool" (mcpToolset.toolOverrides.tool, not a resource name) has always been offered {ref:}
# in the committed schemas; kept so they do not change (issue 16's Example.toolCall.tool is one).
_REF_FIELDS = ref_fields() | {"tool"}
_SERVER_SET = {"name", "etag"}  # top level: the id comes from the file name


def _patch(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _patch(item)
        return
    if not isinstance(node, dict):
        return
    props = node.get("properties")
    if isinstance(props, dict):
        for key in [k for k, v in props.items() if isinstance(v, dict) and v.get("readOnly")]:
            del props[key]
            if key in node.get("required", []):
                node["required"].remove(key)
        for key, value in list(props.items()):
            if key in ("pythonCode", "pythonScript"):
                props[key] = {
                    "anyOf": [_plain(value), _FILE],
                    "description": value.get("description", "Python source, inline or {file: path}"),
                }
            elif key == "openApiSchema":
                props[key] = {
                    "anyOf": [_plain(value), _FILE, {"type": "object"}],
                    "description": "OpenAPI document: text, a mapping, or {file: path}",
                }
            elif key in _REF_FIELDS and _is_string_list(value):  # agents' tools, childAgents, guardrails, ...
                items = {"anyOf": [{"type": "string"}, _REF]}
                props[key] = {"type": "array", "items": items, "description": value.get("description", "")}
            elif key in _REF_FIELDS:
                props[key] = {"anyOf": [_plain(value), _REF], "description": value.get("description", "")}
    for value in node.values():
        _patch(value)


def _is_string_list(value: dict[str, Any]) -> bool:
    shapes = value.get("anyOf", [value])
    return any(isinstance(x, dict) and x.get("type") == "array" and x.get("items") == {"type": "string"} for x in shapes)


def _plain(value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k not in ("description", "default", "title")} or {"type": "string"}


def _not_required(schema: dict[str, Any], path: list[str]) -> None:
    node: Any = schema
    for part in path[:-1]:
        prop = node.get("properties", {}).get(part, {}) if isinstance(node, dict) else {}
        ref = prop.get("$ref", "") if isinstance(prop, dict) else ""
        node = schema.get("$defs", {}).get(ref.rsplit("/", 1)[-1]) if ref.startswith("#/$defs/") else prop
    if isinstance(node, dict) and path[-1] in node.get("required", []):
        node["required"].remove(path[-1])
        if not node["required"]:
            del node["required"]


def _resource_schema(resource: ResourceKind) -> dict[str, Any]:
    kind = resource.name
    schema = resource.model.model_json_schema(mode="validation")
    _patch(schema)
    for dotted in resource.app_fields:  # cesync fills in the environment's app: a file may leave it out
        _not_required(schema, dotted.split("."))
    for key in _SERVER_SET:
        schema["properties"].pop(key, None)
    if not resource.singleton:  # the app's id is each environment's app: in cesync.yaml
        schema["properties"]["id"] = {"type": "string", "description": f"The {kind} id; defaults to the file name without .yaml"}
    schema["properties"]["ignoreChanges"] = {
        "type": "array",
        "items": {"type": "string"},
        "description": "This file's fields left to the console: dotted paths plan never changes and pull never writes back.",
    }
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"cesync {kind} file"
    return schema


def render_schemas() -> dict[str, str]:
    """File name -> JSON text, stable byte for byte (the repo commits these)."""
    return dict(_rendered())


@functools.cache
def _rendered() -> dict[str, str]:
    # The schemas follow from the models alone and pydantic takes half a second to generate them:
    # a process that writes them more than once (an export per environment, the tests) pays once.
    config = Config.model_json_schema(mode="validation")
    config["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    config["title"] = "cesync.yaml"
    docs = {
        **{f"{k.name}.schema.json": _resource_schema(k) for k in KINDS.values()},
        "cesync.schema.json": config,
    }
    # A file's own keys in the order fmt lays them out: a resource's as its files write them
    # (walk.written_order, also export's), cesync.yaml's as its model declares them.
    orders = {
        **{f"{k.name}.schema.json": written_order(specs(k.model)) for k in KINDS.values()},
        "cesync.schema.json": {n: i for i, n in enumerate(Config.model_fields)},
    }
    return {name: json.dumps(_sorted(doc, orders[name]), indent=2) + "\n" for name, doc in docs.items()}


def _sorted(doc: dict[str, Any], rank: dict[str, int]) -> dict[str, Any]:
    """Every mapping's keys sorted (stable bytes), but the file's own properties ranked as fmt orders them."""
    out: dict[str, Any] = _sorted_keys(doc)
    if isinstance(out.get("properties"), dict):
        props = out["properties"]
        out["properties"] = {k: props[k] for k in sorted(props, key=lambda k: (rank.get(k, len(rank)), k))}
    return out


def _sorted_keys(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _sorted_keys(node[k]) for k in sorted(node)}
    if isinstance(node, list):
        return [_sorted_keys(v) for v in node]
    return node

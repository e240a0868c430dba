"""``apps:retrieveToolSchema``: a tool's input and output as CES ``Schema`` JSON.

Python functions are read from their signature (annotations give the types,
parameters without defaults are required, the docstring describes the tool);
client functions carry their schemas; OpenAPI operations take theirs from the
document's parameters and JSON request body.
"""

from __future__ import annotations

import ast
from typing import Any

from .errors import RpcError
from .openapi import HTTP_METHODS, parse_document

__all__ = ["tool_schemas", "toolset_tool_schemas"]

PY_TYPES = {"str": "STRING", "int": "INTEGER", "float": "NUMBER", "bool": "BOOLEAN", "list": "ARRAY", "dict": "OBJECT"}
JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object"}


def tool_schemas(tool: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(input, output) schemas of a stored tool."""
    if "pythonFunction" in tool:
        return _python(tool["pythonFunction"].get("pythonCode") or "", tool["pythonFunction"].get("name"))
    if "clientFunction" in tool:
        fn = tool["clientFunction"]
        return fn.get("parameters") or {"type": "OBJECT"}, fn.get("response") or {"type": "OBJECT"}
    if "openApiTool" in tool:
        return _openapi(tool["openApiTool"].get("openApiSchema") or "", None)
    if "systemTool" in tool:
        return {"type": "OBJECT"}, {"type": "OBJECT"}
    kind = next((k for k in tool if k.endswith(("Tool", "Function"))), "this")
    raise RpcError("UNIMPLEMENTED", f"the emulator cannot derive the schema of {kind} tools")


def toolset_tool_schemas(toolset: dict[str, Any], tool_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    if "openApiToolset" not in toolset:
        raise RpcError("UNIMPLEMENTED", "the emulator derives schemas of OpenAPI toolsets' tools only")
    return _openapi(toolset["openApiToolset"].get("openApiSchema") or "", tool_id)


def _python(code: str, name: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise RpcError("FAILED_PRECONDITION", f"the tool's code does not parse: {exc.msg} (line {exc.lineno})") from None
    except (MemoryError, RecursionError):  # how Python's parser gives up on nesting too deep for it
        raise RpcError("FAILED_PRECONDITION", "the tool's code does not parse: too complex for Python's parser") from None
    functions = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    fn = next((f for f in functions if f.name == name), functions[0] if functions else None)
    if fn is None:
        raise RpcError("FAILED_PRECONDITION", "the tool's code defines no function")
    params = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
    defaults = len(fn.args.defaults)
    positional = [*fn.args.posonlyargs, *fn.args.args]
    required = [a.arg for a in positional[: len(positional) - defaults]]
    required += [a.arg for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True) if d is None]
    properties = {a.arg: _annotation(a.annotation) for a in params}
    doc = ast.get_docstring(fn)
    inp: dict[str, Any] = {"type": "OBJECT", "properties": properties}
    if required:
        inp["required"] = required
    if doc:
        inp["description"] = doc.strip()
    out = _annotation(fn.returns) if fn.returns is not None else {"type": "OBJECT"}
    return inp, out


def _annotation(node: ast.expr | None) -> dict[str, Any]:
    if isinstance(node, ast.Name) and node.id in PY_TYPES:
        return {"type": PY_TYPES[node.id]}
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in PY_TYPES:
        schema: dict[str, Any] = {"type": PY_TYPES[node.value.id]}
        if node.value.id == "list":
            schema["items"] = _annotation(node.slice)
        return schema
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _annotation(ast.parse(node.value, mode="eval").body) if node.value.isidentifier() else {"type": "STRING"}
    return {"type": "STRING"} if node is None else {"type": "OBJECT"}


def _openapi(text: str, operation_id: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        doc = parse_document(text)
    except ValueError as exc:
        raise RpcError("FAILED_PRECONDITION", f"the OpenAPI document does not parse: {exc}") from None
    paths = doc.get("paths") if isinstance(doc, dict) else None
    for item in (paths or {}).values():
        for method, op in (item or {}).items():
            if (
                method in HTTP_METHODS
                and isinstance(op, dict)
                and (operation_id is None or op.get("operationId") == operation_id)
            ):
                return _operation_schemas(op)
    raise RpcError("NOT_FOUND", f"no operation {operation_id or ''} in the OpenAPI document".replace("  ", " "))


def _operation_schemas(op: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in op.get("parameters") or []:
        if isinstance(param, dict) and isinstance(param.get("name"), str):
            properties[param["name"]] = _json_schema(param.get("schema") or {})
            if param.get("required"):
                required.append(param["name"])
    body = ((op.get("requestBody") or {}).get("content") or {}).get("application/json", {}).get("schema")
    if isinstance(body, dict):
        for name, sub in (body.get("properties") or {}).items():
            properties[name] = _json_schema(sub)
        required += [r for r in body.get("required") or [] if isinstance(r, str)]
    inp: dict[str, Any] = {"type": "OBJECT", "properties": properties}
    if required:
        inp["required"] = required
    ok: Any = next((r for code, r in (op.get("responses") or {}).items() if str(code).startswith("2")), {})
    out = ((ok or {}).get("content") or {}).get("application/json", {}).get("schema") if isinstance(ok, dict) else None
    return inp, _json_schema(out) if isinstance(out, dict) else {"type": "OBJECT"}


def _json_schema(schema: Any) -> dict[str, Any]:
    """An OpenAPI (JSON Schema) object as CES Schema JSON: upper-case types, the common keywords."""
    if not isinstance(schema, dict):
        return {"type": "OBJECT"}
    kind = schema.get("type")
    out: dict[str, Any] = {"type": str(kind).upper() if kind in JSON_TYPES else "OBJECT"}
    if isinstance(schema.get("description"), str):
        out["description"] = schema["description"]
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: _json_schema(v) for k, v in schema["properties"].items()}
    if isinstance(schema.get("required"), list):
        out["required"] = [r for r in schema["required"] if isinstance(r, str)]
    if isinstance(schema.get("items"), dict):
        out["items"] = _json_schema(schema["items"])
    if isinstance(schema.get("enum"), list):
        out["enum"] = [str(e) for e in schema["enum"]]
    return out

"""``apps:executeTool`` in the emulator (``ExecuteToolRequest``/``ExecuteToolResponse`` of
google/cloud/ces_v1/types/tool_service.proto).

What runs: Python functions (in a sandboxed child process, see sandbox.py), a tool's
fake code when ``toolFakeConfig.enableFakeMode`` is on, and OpenAPI operations whose
server is on loopback. Tools the running code calls through ``tools.<name>(...)``
are answered from ``mockConfig`` first; unmatched calls fail or pass through to the
real tool as ``unmatchedToolCallBehavior`` says. What cannot run here (client
functions, Google search, data stores, connectors, MCP, agents) is refused with a
clear error, never faked silently.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from .errors import RpcError
from .openapi import HTTP_METHODS, parse_document
from .sandbox import run_python
from .store import first_function
from .wire import TOOL_TYPES, TOOLSET_TYPES, duration_nanos

__all__ = ["Executor"]

DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 60.0
MAX_DEPTH = 5
Reader = Callable[[str, str, str], dict[str, Any] | None]  # (parent, collection, id) -> stored resource


@dataclass
class Mocks:
    """mockConfig: canned answers for the tools the executed tool calls in turn."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    behavior: str = "PASS_THROUGH"
    configured: bool = False

    @classmethod
    def parse(cls, config: Any) -> Mocks:
        if config is None:
            return cls()
        if not isinstance(config, dict):
            raise RpcError("INVALID_ARGUMENT", "mockConfig must be an object")
        behavior = config.get("unmatchedToolCallBehavior")
        if behavior in (1, "FAIL"):
            behavior = "FAIL"
        elif behavior in (2, "PASS_THROUGH"):
            behavior = "PASS_THROUGH"
        else:
            raise RpcError("INVALID_ARGUMENT", "mockConfig.unmatchedToolCallBehavior is required: FAIL or PASS_THROUGH")
        calls = config.get("mockedToolCalls") or []
        for i, call in enumerate(calls):
            if not isinstance(call, dict) or not isinstance(call.get("expectedArgsPattern"), dict):
                raise RpcError("INVALID_ARGUMENT", f"mockConfig.mockedToolCalls[{i}].expectedArgsPattern is required")
        return cls(list(calls), behavior, True)

    def answer(self, names: set[str], args: dict[str, Any]) -> dict[str, Any] | None:
        for call in self.calls:
            target = call.get("toolId") or call.get("tool") or _toolset_key(call.get("toolset"))
            if target in names and _matches(call["expectedArgsPattern"], args):
                response = call.get("mockResponse") or {}
                return dict(response) if isinstance(response, dict) else {"output": response}
        return None


def _toolset_key(toolset: Any) -> str | None:
    if isinstance(toolset, dict) and toolset.get("toolset"):
        return f"{toolset['toolset']}/tools/{toolset.get('toolId', '')}"
    return None


def _matches(pattern: Any, value: Any) -> bool:
    """A pattern matches when every key it names matches; strings are regular expressions (full match)."""
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(k in value and _matches(v, value[k]) for k, v in pattern.items())
    if isinstance(pattern, list):
        if not isinstance(value, list) or len(pattern) != len(value):
            return False
        return all(_matches(p, v) for p, v in zip(pattern, value, strict=True))
    if isinstance(pattern, str):
        try:
            return isinstance(value, str) and re.fullmatch(pattern, value) is not None
        except re.error:
            return bool(value == pattern)
    if isinstance(pattern, (int, float)) and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(pattern) == float(value)
    return bool(pattern == value)


@dataclass
class Executor:
    read: Reader
    list_tools: Callable[[str], dict[str, dict[str, Any]]]  # parent -> {id: stored tool}

    async def execute(self, parent: str, body: dict[str, Any]) -> dict[str, Any]:
        if ("tool" in body) == ("toolsetTool" in body):
            raise RpcError("INVALID_ARGUMENT", "set exactly one of tool or toolsetTool")
        if "variables" in body and "context" in body:
            raise RpcError("INVALID_ARGUMENT", "set at most one of variables or context")
        args, context = body.get("args") or {}, body.get("context") or {}
        if not isinstance(args, dict) or not isinstance(context, dict):
            raise RpcError("INVALID_ARGUMENT", "args and context must be JSON objects")
        variables = body.get("variables") or context.get("variables") or context.get("state") or {}
        if not isinstance(variables, dict):
            raise RpcError("INVALID_ARGUMENT", "variables must be a JSON object")
        extra = {k: v for k, v in context.items() if k not in ("variables", "state")}
        mocks = Mocks.parse(body.get("mockConfig"))
        run = _Run(self, parent, mocks, dict(variables), extra)
        if "tool" in body:
            name = str(body["tool"])
            response = await run.tool(name, args, 0)
            out: dict[str, Any] = {"tool": name}
        else:
            ref = body["toolsetTool"]
            if not isinstance(ref, dict) or not ref.get("toolset") or not ref.get("toolId"):
                raise RpcError("INVALID_ARGUMENT", "toolsetTool needs toolset and toolId")
            response = await run.toolset_tool(str(ref["toolset"]), str(ref["toolId"]), args)
            out = {"toolsetTool": {"toolset": ref["toolset"], "toolId": ref["toolId"]}}
        out["response"] = response
        out["variables"] = run.variables
        return out


@dataclass
class _Run:
    executor: Executor
    parent: str
    mocks: Mocks
    variables: dict[str, Any]
    context: dict[str, Any]

    def _stored(self, name: str, collection: str) -> dict[str, Any]:
        prefix = f"{self.parent}/{collection}/"
        if not name.startswith(prefix) or "/" in name[len(prefix) :]:
            raise RpcError("INVALID_ARGUMENT", f"{name!r} is not a {collection[:-1]} of {self.parent}")
        found = self.executor.read(self.parent, collection, name[len(prefix) :])
        if found is None:
            raise RpcError("NOT_FOUND", f"{collection[:-1]} {name} not found")
        return found

    async def tool(self, name: str, args: dict[str, Any], depth: int) -> dict[str, Any]:
        stored = self._stored(name, "tools")
        kind = next((t for t in TOOL_TYPES if t in stored), "unknown")
        fake = stored.get("toolFakeConfig") or {}
        if fake.get("enableFakeMode") and (fake.get("codeBlock") or {}).get("pythonCode"):
            code = fake["codeBlock"]["pythonCode"]
            return await self._python(code, first_function(code)[0], args, _timeout(stored), depth)
        if kind == "pythonFunction":
            fn = stored["pythonFunction"]
            code = fn.get("pythonCode") or ""
            return await self._python(code, fn.get("name") or first_function(code)[0], args, _timeout(stored), depth)
        if kind == "openApiTool":
            spec = stored["openApiTool"]
            return await call_openapi(spec.get("openApiSchema", ""), None, args, _timeout(stored))
        if kind == "clientFunction":
            raise RpcError(
                "FAILED_PRECONDITION",
                f"tool {name} is a clientFunction: it runs in the client application, not on the server "
                "(mock it with mockConfig when another tool calls it)",
            )
        raise RpcError(
            "UNIMPLEMENTED",
            f"the emulator cannot run {kind} tools like {name}; they call Google services "
            "(mock them with mockConfig when another tool calls them, or test against a real app)",
        )

    async def toolset_tool(self, toolset: str, tool_id: str, args: dict[str, Any]) -> dict[str, Any]:
        stored = self._stored(toolset, "toolsets")
        kind = next((t for t in TOOLSET_TYPES if t in stored), "unknown")
        if kind != "openApiToolset":
            raise RpcError("UNIMPLEMENTED", f"the emulator runs tools of OpenAPI toolsets only, not of {kind} {toolset}")
        spec = stored["openApiToolset"]
        return await call_openapi(spec.get("openApiSchema", ""), tool_id, args, DEFAULT_TIMEOUT)

    async def _python(self, code: str, function: str | None, args: dict[str, Any], timeout: float, depth: int) -> dict[str, Any]:
        if not function:
            try:
                compile(code, "<tool>", "exec")  # compiling runs nothing; it names the syntax error
            except SyntaxError as exc:
                return {"error": f"SyntaxError: {exc.msg} (line {exc.lineno})"}
            return {"error": "the code defines no function to call"}

        async def call_tool(name: str, call_args: dict[str, Any]) -> dict[str, Any]:
            return await self._nested(name, call_args, depth)

        run = await run_python(
            code, function, args, variables=self.variables, context=self.context, call_tool=call_tool, timeout=timeout
        )
        self.variables = run.variables
        return run.response

    async def _nested(self, name: str, args: dict[str, Any], depth: int) -> dict[str, Any]:
        """A tool the running code calls: by id, by its type-level name or by display name."""
        tools = self.executor.list_tools(self.parent)
        rid = next((i for i, t in tools.items() if name in _names(i, t)), None)
        full = f"{self.parent}/tools/{rid or name}"
        answer = self.mocks.answer({full, name}, args)
        if answer is not None:
            return answer
        if self.mocks.configured and self.mocks.behavior == "FAIL":
            raise LookupError(f"no mocked call matches {name}({json.dumps(args, sort_keys=True)}) and unmatched calls FAIL")
        if rid is None:
            raise LookupError(f"no tool named {name!r} in {self.parent}")
        if depth + 1 >= MAX_DEPTH:
            raise RecursionError(f"tools call each other more than {MAX_DEPTH} deep")
        try:
            return await self.tool(full, args, depth + 1)
        except RpcError as exc:
            raise LookupError(exc.message) from None


def _names(rid: str, stored: dict[str, Any]) -> set[str]:
    kind = next((t for t in TOOL_TYPES if t in stored), None)
    names = {rid, str(stored.get("displayName", ""))}
    if kind and isinstance(stored.get(kind), dict) and stored[kind].get("name"):
        names.add(str(stored[kind]["name"]))
    return names - {""}


def _timeout(stored: dict[str, Any]) -> float:
    raw = stored.get("timeout")
    try:
        seconds = duration_nanos(raw) / 1e9 if isinstance(raw, str) else DEFAULT_TIMEOUT
    except ValueError:
        seconds = DEFAULT_TIMEOUT
    return min(seconds or DEFAULT_TIMEOUT, MAX_TIMEOUT)


# --- OpenAPI --------------------------------------------------------------------------------


def _is_loopback(host: str | None) -> bool:
    if host in ("localhost",):
        return True
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _loopback_url(url: str) -> bool:
    """The host the request would really go to (as httpx reads the URL) is loopback; no user info."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return False
    return parsed.scheme in ("http", "https") and not parsed.userinfo and _is_loopback(parsed.host)


def _not_loopback(where: str) -> dict[str, Any]:
    return {
        "error": f"the emulator calls OpenAPI servers on loopback only, not {where}; "
        "run the API locally (e.g. http://127.0.0.1:8089) or test against a real app"
    }


def _operation(doc: dict[str, Any], operation_id: str | None) -> tuple[str, str, dict[str, Any], list[Any]]:
    for path, item in (doc.get("paths") or {}).items():
        if not isinstance(item, dict):
            continue
        for method, op in item.items():
            if method not in HTTP_METHODS or not isinstance(op, dict):
                continue
            if operation_id is None or op.get("operationId") == operation_id:
                return path, method, op, list(item.get("parameters") or []) + list(op.get("parameters") or [])
    raise RpcError("NOT_FOUND", f"the OpenAPI schema has no operation {operation_id!r}" if operation_id else "no operation")


async def call_openapi(schema: str, operation_id: str | None, args: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Make the HTTP call an OpenAPI operation describes, to a loopback server only."""
    try:
        doc = parse_document(schema)
    except ValueError as exc:
        raise RpcError("FAILED_PRECONDITION", f"the tool's OpenAPI schema does not parse: {exc}") from None
    servers = doc.get("servers") or [{}]
    base = str((servers[0] or {}).get("url") or "")
    if "$env_var" in base:
        raise RpcError("FAILED_PRECONDITION", "the schema's server is still $env_var: the tool was created without a url")
    if not _loopback_url(base):
        return _not_loopback(base or "an empty server URL")
    path, method, op, params = _operation(doc, operation_id)
    rest = dict(args)
    query: dict[str, Any] = {}
    headers: dict[str, str] = {}
    for p in params:
        if not isinstance(p, dict) or p.get("name") not in rest:
            continue
        value = rest.pop(p["name"])
        where = p.get("in")
        if where == "path":
            path = path.replace("{" + p["name"] + "}", quote(str(value), safe=""))
        elif where == "query":
            query[p["name"]] = value
        elif where == "header":
            headers[p["name"]] = str(value)
    body = rest.pop("requestBody", rest or None) if "requestBody" in op else None
    url = base.rstrip("/") + path
    if not _loopback_url(url):  # the schema's path is text too: '@host/...' or '.host/...' would move the call
        return _not_loopback(url)
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            reply = await client.request(method.upper(), url, params=query, headers=headers, json=body)
    except httpx.HTTPError as exc:
        return {"error": f"cannot reach {url}: {exc or type(exc).__name__}"}
    try:
        data: Any = reply.json()
    except ValueError:
        data = reply.text
    if reply.is_success:
        return data if isinstance(data, dict) else {"output": data}
    return {"error": {"code": reply.status_code, "message": data}}

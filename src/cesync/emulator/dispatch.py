"""Routing: a request's path and method to the emulator's call (by regular expression, because resource
names hold slashes and custom methods hold colons)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from . import evaluation_kinds, evaluations
from .calls import api_version, json_body, query, wants_enum_int
from .errors import RpcError
from .resources import COLLECTIONS
from .unserved import refuse_unserved

if TYPE_CHECKING:
    from .app import Emulator

APP_RE = re.compile(r"^(projects/[^/]+/locations/[^/]+/apps/[^/:]+)(.*)\Z")
LOCATION_RE = re.compile(r"^(projects/[^/]+/locations/[^/]+)/(apps|operations)(.*)\Z")
Handler = Callable[[Request, str, str, str | None], Awaitable[Any]]
COLLECTION_GROUP = "(" + "|".join(COLLECTIONS) + ")"
WRITABLE_GROUP = "(" + "|".join(c for c in COLLECTIONS if c != "versions") + ")"
ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    ("GET", re.compile(rf"^/{COLLECTION_GROUP}\Z"), "list"),
    ("POST", re.compile(rf"^/{COLLECTION_GROUP}\Z"), "create"),
    ("GET", re.compile(rf"^/{COLLECTION_GROUP}/([^/:]+)\Z"), "get"),
    ("PATCH", re.compile(rf"^/{WRITABLE_GROUP}/([^/:]+)\Z"), "patch"),
    ("DELETE", re.compile(rf"^/{COLLECTION_GROUP}/([^/:]+)\Z"), "delete"),
    ("POST", re.compile(r"^/(toolsets)/([^/:]+):retrieveTools\Z"), "retrieve_tools"),
    ("POST", re.compile(r"^/(versions)/([^/:]+):restore\Z"), "restore"),
    # UpdateAppVersion: ces.v1.json rev 20261016 (projects.locations.apps.versions.patch)
    ("PATCH", re.compile(r"^/(versions)/([^/:]+)\Z"), "patch_version"),
    ("GET", re.compile(r"^/(changelogs)\Z"), "list_changelogs"),
    ("GET", re.compile(r"^/(changelogs)/([^/:]+)\Z"), "get_changelog"),
]
APP_METHODS = {
    ("GET", ""): "get_app",
    ("PATCH", ""): "patch_app",
    ("DELETE", ""): "delete_app",
    ("POST", ":exportApp"): "export_app",
    ("POST", ":retrieveToolSchema"): "retrieve_tool_schema",
}
LOCATION_METHODS = {
    ("GET", "apps", ""): "list_apps",
    ("POST", "apps", ""): "create_app",
    ("POST", "apps", ":importApp"): "import_app",
    ("GET", "operations", ""): "list_operations",
}
OPERATION_RE = re.compile(r"^/([^/:]+)(:cancel)?\Z")


async def dispatch(emulator: Emulator, request: Request, path: str) -> Any:
    refuse_unserved(api_version(request), request.method, path)
    match = LOCATION_RE.match(path)
    if not match:
        raise RpcError("NOT_FOUND", f"unknown resource '{path}'")
    location, top, rest = match.groups()
    emulator.operations.settle_due()
    method = request.method
    name = LOCATION_METHODS.get((method, top, rest))
    if name is not None:
        return await getattr(emulator, name)(request, location)
    if top == "operations":
        op = OPERATION_RE.match(rest)
        if op is None:
            raise RpcError("NOT_FOUND", f"unknown resource '{path}'")
        full = f"{location}/operations/{op.group(1)}"
        if op.group(2) and method == "POST":
            return {}  # operations here finish on their own; cancelling one changes nothing, as CES may do
        if not op.group(2) and method in ("GET", "DELETE"):
            return await (emulator.get_operation if method == "GET" else emulator.delete_operation)(request, full)
        raise RpcError("NOT_FOUND", f"no method {method} {rest} on {location}/operations")
    app_match = APP_RE.match(path)
    if not app_match:
        raise RpcError("NOT_FOUND", f"no method {method} {rest or '/'} on {location}/{top}")
    parent, rest = app_match.groups()
    if rest == ":executeTool" and method == "POST":
        return await emulator.executor.execute(parent, await json_body(request))
    if evaluations.handles(rest) and api_version(request) == "v1beta":  # EvaluationService: v1beta only

        def start(action: dict[str, Any], response: str, metadata: tuple[str, dict[str, Any]]) -> dict[str, Any]:
            return emulator.operations.start(api_version(request), location, action, response, metadata)

        return await evaluations.route(
            emulator.evaluations,
            method,
            parent,
            rest,
            lambda: json_body(request),
            start,
            enum_int=wants_enum_int(request),
            query=query(request),
        )
    name = APP_METHODS.get((method, rest))
    if name is not None:
        return await getattr(emulator, name)(request, parent)
    for route_method, pattern, handler_name in ROUTES:
        m = pattern.match(rest)
        if m and method == route_method:
            evaluation_kinds.check_served(m.group(1), api_version(request), path)
            handler: Handler = getattr(emulator, handler_name)
            return await handler(request, parent, m.group(1), m.group(2) if m.lastindex and m.lastindex > 1 else None)
    raise RpcError("NOT_FOUND", f"no method {method} {rest or '/'} on {parent}")

"""Reading a call (its query, body, API version, page) and writing its answer."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format
from starlette.requests import Request
from starlette.responses import Response

from ..api import descriptors as api
from .bounded import TooLarge, load_json
from .errors import RpcError
from .store import DEFAULT_PAGE, MAX_PAGE, parse_page_token
from .wire import Printed, to_data

ID_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_-]{0,127}\Z")


def query(request: Request) -> dict[str, str]:
    """The query's parameters as Starlette reads them (the last of a repeated one wins)."""
    return dict(request.query_params)


def wants_enum_int(request: Request) -> bool:
    return "enum-encoding=int" in query(request).get("$alt", "")


def api_version(request: Request) -> str:
    return str(request.scope.get("ces_version", "v1"))


def answer(request: Request, res: Printed) -> Response:
    return Response(res.text(wants_enum_int(request)), media_type="application/json")


async def json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    try:
        body = load_json(raw)
    except TooLarge as exc:
        raise RpcError("INVALID_ARGUMENT", f"Invalid JSON payload received: {exc}.") from None
    except ValueError:
        raise RpcError("INVALID_ARGUMENT", "Invalid JSON payload received.") from None
    if not isinstance(body, dict):
        raise RpcError("INVALID_ARGUMENT", "Invalid JSON payload received: expected an object.")
    return body


def request_message(message: str, body: dict[str, Any]) -> dict[str, Any]:
    """A request message's body checked by protobuf (unknown fields, types), as proto3 JSON."""
    msg = api.message_class(f"{api.PACKAGE}.{message}")()
    try:
        json_format.ParseDict(body, msg, descriptor_pool=api.pool())
    except json_format.ParseError as exc:
        raise RpcError("INVALID_ARGUMENT", f"invalid {message}: {exc}") from None
    return to_data(msg)


def page_args(request: Request, key: str) -> tuple[int, int]:
    return page_window(query(request), key)


def page_window(q: Mapping[str, str], key: str) -> tuple[int, int]:
    """(offset, size) of the page a list's pageToken and pageSize ask for; key: what the token is bound to."""
    try:
        size = int(q.get("pageSize") or DEFAULT_PAGE)
    except ValueError:
        raise RpcError("INVALID_ARGUMENT", "pageSize must be an integer") from None
    if size < 0:
        raise RpcError("INVALID_ARGUMENT", "pageSize must not be negative")
    offset = parse_page_token(q["pageToken"], key) if q.get("pageToken") else 0
    return offset, min(size or DEFAULT_PAGE, MAX_PAGE)

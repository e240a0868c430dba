"""The app itself and its versions: get, create (a long-running operation), versions, restore.

CreateApp and RestoreAppVersion answer with a ``google.longrunning.Operation``; it is
polled (``GET /v1/{operation}``) with exponential backoff until ``done``, one progress
line at a time through the client's ``notify``, and its ``error`` (a ``google.rpc.Status``
with a numeric code) becomes the same exception a direct answer would have raised.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..core.scrubber import clip
from ..errors import BY_STATUS, ApiError, BadReply, NotFound
from .api import CesClient, Written

__all__ = [
    "Polling",
    "create_app",
    "create_version",
    "delete_app",
    "get_app",
    "get_version",
    "list_versions",
    "operation_error",
    "restore_version",
]

# google.rpc.Code: an operation's error carries the number, not the name.
CODES = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
]


_OPERATION = re.compile(r"projects/[\w.:-]+(/[\w.:-]+)*/operations/[\w.:-]+", re.ASCII)


@dataclass(frozen=True)
class Polling:
    """How an operation is waited for: first delay, longest delay, and when to give up (seconds)."""

    initial: float = 0.5
    maximum: float = 10.0
    timeout: float = 1800.0


def operation_error(error: dict[str, Any], what: str, resource: str) -> ApiError:
    """The exception for an operation's ``error`` (``{code, message, details}``)."""
    code = error.get("code", 2)
    status = CODES[code] if isinstance(code, int) and 0 <= code < len(CODES) else str(code or "UNKNOWN")
    cls = BY_STATUS.get(status, ApiError)
    message = str(error.get("message") or "the operation failed")
    details = error.get("details")
    listed = [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []
    return cls(message, status=status, operation=what, resource=resource, details=listed)


async def wait_operation(
    client: CesClient,
    operation: dict[str, Any],
    what: str,
    resource: str,
    polling: Polling | None = None,
    *,
    progress: Callable[[], Awaitable[str]] | None = None,
) -> dict[str, Any]:
    """The operation's ``response`` once it is done; its error raised as an ApiError.
    progress: how far it is, for each line while it runs ("2 of 5 results")."""
    polling = polling or Polling()
    name = operation.get("name")
    name = name if isinstance(name, str) else ""
    start = time.monotonic()
    delay = polling.initial
    while not operation.get("done"):
        waited = time.monotonic() - start
        if not _OPERATION.fullmatch(name) or ".." in name.split("/"):
            raise BadReply(
                f"the server answered with an operation named {clip(repr(name), 120)}, not projects/.../operations/ID",
                operation=what,
                resource=resource,
            )
        if waited > polling.timeout:
            raise ApiError(
                f"still running after {waited:.0f}s: {name}; it may yet finish. Check it, then plan again",
                operation=what,
                resource=resource,
            )
        said = await progress() if progress is not None else ""
        client.notify(
            f"{what} {resource}: running ({waited:.0f}s, {said + ', ' if said else ''}operation {name.rsplit('/', 1)[-1]})"
        )
        await asyncio.sleep(delay)
        delay = min(delay * 2, polling.maximum)
        operation = await client._retrying(lambda: client._call("GET", name, f"wait for {what}", resource))
    if "error" in operation:
        error = operation["error"]
        raise operation_error(error if isinstance(error, dict) else {"message": clip(str(error), 200)}, what, resource)
    response = operation.get("response")
    return dict(response) if isinstance(response, dict) else {}


async def get_app(client: CesClient, parent: str) -> dict[str, Any] | None:
    """The app, or None when it does not exist."""
    try:
        return await client._retrying(lambda: client._call("GET", parent, "get app", parent))
    except NotFound:
        return None


async def create_app(client: CesClient, parent: str, body: dict[str, Any], polling: Polling | None = None) -> Written:
    """CreateApp, waited for: the created app, or the error (``retried`` as for any write)."""
    location, app_id = parent.rsplit("/apps/", 1)
    written = await client._write(
        lambda: client._call("POST", f"{location}/apps", "create app", parent, params={"appId": app_id}, body=body)
    )
    if written.error is not None:
        return written
    try:
        created = await wait_operation(client, written.body, "create app", parent, polling)
    except ApiError as exc:
        return Written({}, exc, written.retried)
    return Written(created or await client._retrying(lambda: client._call("GET", parent, "get app", parent)))


async def delete_app(client: CesClient, parent: str, etag: str = "", polling: Polling | None = None) -> None:
    """DeleteApp (a long-running operation: ``DeleteAppRequest`` has ``name`` and ``etag``, no
    ``force``), waited for; an app already gone is not an error."""
    params = {"etag": etag} if etag else {}
    written = await client._write(lambda: client._call("DELETE", parent, "delete app", parent, params=params))
    if written.error is not None:
        if isinstance(written.error, NotFound):
            return
        raise written.error
    await wait_operation(client, written.body, "delete app", parent, polling)


async def list_versions(client: CesClient, parent: str) -> list[dict[str, Any]]:
    """Every version of the app, newest first."""
    items = await client.pages(f"{parent}/versions", "appVersions", "list app versions", parent)
    return sorted(items, key=lambda v: str(v.get("createTime", "")), reverse=True)


async def get_version(client: CesClient, name: str) -> dict[str, Any] | None:
    """One app version, whole (its snapshot with it), or None when it does not exist."""
    try:
        return await client._retrying(lambda: client._call("GET", name, "get app version", name))
    except NotFound:
        return None


async def create_version(client: CesClient, parent: str, body: dict[str, Any], version_id: str = "") -> dict[str, Any]:
    params = {"appVersionId": version_id} if version_id else {}
    return (
        await client._write(
            lambda: client._call("POST", f"{parent}/versions", "create app version", parent, params=params, body=body)
        )
    ).unwrap()


async def restore_version(client: CesClient, name: str, polling: Polling | None = None) -> dict[str, Any]:
    """RestoreAppVersion, waited for. Never resent: a second restore of the same version is harmless
    but its answer would hide the first's error."""
    operation = await client._call("POST", f"{name}:restore", "restore app version", name, body={})
    return await wait_operation(client, operation, "restore app version", name, polling)

"""What an answer of CES means to the client: a ``google.rpc.Status`` mapped to the exception
tree of :mod:`cesync.errors` (with the permission a refusal needs), the delay a ``RetryInfo``
asks for, and the one-line notices of a retry and of a quota refusal."""

from __future__ import annotations

import re
from typing import Any

import httpx

from ..api.jsonvalue import JsonValueError, loads
from ..api.permissions import permission
from ..errors import BY_STATUS, ApiError, RetryableError, TransportError
from .pacing import Pacer, is_quota_refusal

__all__ = ["quota_limit", "quota_line", "retry_delay", "retry_line", "to_error", "transient"]


def retry_delay(details: list[dict[str, Any]]) -> float | None:
    for d in details:
        if str(d.get("@type", "")).endswith("google.rpc.RetryInfo"):
            text = str(d.get("retryDelay", "")).rstrip("s")
            try:
                return float(text)
            except ValueError:
                return None
    return None


def to_error(response: httpx.Response, operation: str, resource: str) -> ApiError:
    """Map a google.rpc.Status answer to the exception tree, branching on error.status."""
    error = _status_of(response)
    status = error["status"]
    message = error["message"] or response.reason_phrase or "error"
    if 300 <= response.status_code < 400:  # not followed (credentials stay with the endpoint), and not a success
        to = response.headers.get("location")
        message = (
            f"the server answered with a redirect (HTTP {response.status_code}{f' to {to}' if to else ''}), which cesync "
            "does not follow: nothing was done; is the endpoint right?"
        )
    details = error["details"]
    if not status:
        status = {
            400: "INVALID_ARGUMENT",
            401: "UNAUTHENTICATED",
            403: "PERMISSION_DENIED",
            404: "NOT_FOUND",
            409: "ABORTED",
            429: "RESOURCE_EXHAUSTED",
            503: "UNAVAILABLE",
            504: "DEADLINE_EXCEEDED",
        }.get(response.status_code, "INTERNAL" if response.status_code >= 500 else "UNKNOWN")
    cls = BY_STATUS.get(status, ApiError)
    if status == "PERMISSION_DENIED":
        request = response.request
        needed = permission(request.method, re.sub(r"^/v1[a-z0-9]*/", "", request.url.path)) if request else ""
        if needed:  # the method's own permission, from Google's REST reference (cesync.api.permissions)
            message += f" (the caller needs permission {needed} on {resource or 'the resource'})"
    if status == "NOT_FOUND" and operation.startswith("list"):
        message += " (does the app exist? check project, location and app in cesync.yaml)"
    return cls(message, code=response.status_code, status=status, operation=operation, resource=resource, details=details)


def _status_of(response: httpx.Response) -> dict[str, Any]:
    """The google.rpc.Status of an error answer as {status, message, details}, whatever the body holds:
    a field of another type is left out (a string in place of the status object is its message)."""
    try:
        payload = loads(response.content) if response.content else {}
    except JsonValueError:
        payload = {}
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, str):
        error = {"message": error}
    if not isinstance(error, dict):
        error = {}
    status, message, details = error.get("status"), error.get("message"), error.get("details")
    return {
        "status": status if isinstance(status, str) and status.isupper() and status.isidentifier() else "",
        "message": message if isinstance(message, str) else "",
        "details": [d for d in details if isinstance(d, dict)] if isinstance(details, list) else [],
    }


def retry_line(exc: ApiError, wait: float, attempt: int, attempts: int) -> str:
    """One line per retry: what is retried, why, and how long until the next attempt."""
    what = " ".join(x for x in (exc.operation, exc.resource) if x) or "request"
    if isinstance(exc, TransportError):
        why = "reply lost (the request may have been carried out)" if exc.sent else "could not connect"
    else:
        why = f"{exc.status} ({exc.code})" if exc.code else exc.status
        hinted = retry_delay(exc.details)
        if hinted is not None:
            why += f", server asks to wait {hinted:g}s"
    return f"retry {attempt}/{attempts - 1}: {what}: {why}; next attempt in {wait:.2f}s"


def transient(exc: BaseException) -> bool:
    """Retried within the budget of attempts: a quota refusal reaching here has waited its patience out."""
    return isinstance(exc, (RetryableError, TransportError)) and not is_quota_refusal(exc.details, exc.status)


def quota_limit(exc: ApiError) -> int | None:
    """The limit a minute a quota refusal names (ErrorInfo metadata quota_limit_value), if it names one."""
    info = exc.detail("google.rpc.ErrorInfo") or {}
    metadata = info.get("metadata")
    value = str(metadata.get("quota_limit_value", "")) if isinstance(metadata, dict) else ""
    return int(value) if value.isdigit() and int(value) > 0 else None


def quota_line(exc: ApiError, pacer: Pacer) -> str:
    """One line when a quota refusal slows the client down: which quota, and the new pace."""
    info = exc.detail("google.rpc.ErrorInfo") or {}
    found = info.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    metric = str(metadata.get("quota_metric") or "the project's request quota")
    limit = metadata.get("quota_limit_value")
    told = f"{pacer.ceiling * 60:.0f}/min told" if pacer.ceiling else "none told"
    return (
        f"quota: CES refused a request over {metric}"
        + (f" (limit {limit}/min)" if limit else "")
        + f"; pacing at {(pacer.rate or 0) * 60:.0f}/min ({told}); refused requests are sent again in turn"
    )

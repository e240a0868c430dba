"""The exception tree of cesync.

CesyncError                  every error cesync reports to a user (one clear line, exit 1)
├── ConfigError              the repo on disk is invalid: carries positioned Problems
├── PlanFileError            a saved plan is unreadable or does not fit this repo/env
├── UnsafePlanError          the plan deletes or changes too much (see --allow-mass-change)
└── ApiError                 the CES API answered with an error (google.rpc.Status)
    ├── InvalidArgument      400 INVALID_ARGUMENT / OUT_OF_RANGE
    ├── FailedPrecondition   400 FAILED_PRECONDITION
    ├── Unauthenticated      401
    ├── PermissionDenied     403
    ├── NotFound             404
    ├── Conflict             409
    │   ├── Aborted          etag mismatch: someone changed the resource
    │   └── AlreadyExists    create with a taken id
    ├── RetryableError       429, 503, 504 (retried where safe, see client/api.py)
    ├── Internal             500 INTERNAL (never retried)
    ├── BadReply             an answer no CES API sends (wrong types, a name outside the app, endless pages)
    └── TransportError       the endpoint could not be reached at all
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .escape import one_line

__all__ = [
    "Aborted",
    "AlreadyExists",
    "ApiError",
    "BadReply",
    "CesyncError",
    "ConfigError",
    "Conflict",
    "FailedPrecondition",
    "Internal",
    "InvalidArgument",
    "NotFound",
    "PermissionDenied",
    "PlanFileError",
    "Problem",
    "RetryableError",
    "TransportError",
    "Unauthenticated",
    "UnsafePlanError",
    "detail_lines",
]


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong in a file, at a 1-based line and column."""

    file: str
    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: {self.message}"


class CesyncError(Exception):
    """Base of every error shown to a user; str() is the one-line message."""


class ConfigError(CesyncError):
    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class PlanFileError(CesyncError):
    pass


class UnsafePlanError(CesyncError):
    pass


class ApiError(CesyncError):
    """An error answer of the API, naming the operation and the resource."""

    status: str = "UNKNOWN"

    def __init__(
        self,
        message: str,
        *,
        code: int = 0,
        status: str | None = None,
        operation: str = "",
        resource: str = "",
        details: list[dict[str, Any]] | None = None,
    ) -> None:
        self.code = code
        if status:
            self.status = status
        self.message = message
        self.operation = operation
        self.resource = resource
        self.details = details or []
        where = " ".join(x for x in (operation, resource) if x)
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}{self.status} ({code}): {message}" if code else f"{prefix}{message}")

    def detail(self, type_suffix: str) -> dict[str, Any] | None:
        for d in self.details:
            if str(d.get("@type", "")).endswith(type_suffix):
                return d
        return None

    def detail_lines(self, locate: Callable[[str], str] | None = None) -> list[str]:
        """Every detail of the answer, one line each (see :func:`detail_lines`)."""
        return detail_lines(self.details, locate)


MAX_DETAIL_LINES = 40  # a server's list of violations is printed up to this many lines, then counted


def _plain(value: Any, limit: int = 500) -> str:
    """A server's text as one printable line: control characters (terminal escapes) shown, not sent."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
    text = one_line(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _items(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _detail(d: dict[str, Any], locate: Callable[[str], str] | None) -> list[str]:
    """google.rpc error_details.proto, by type: https://github.com/googleapis/googleapis/blob/master/google/rpc/error_details.proto"""
    kind = str(d.get("@type", "")).rsplit("/", 1)[-1].removeprefix("google.rpc.")
    g = d.get
    if kind == "ErrorInfo":
        found = g("metadata")
        meta: dict[str, Any] = found if isinstance(found, dict) else {}
        extra = ", ".join(f"{_plain(k)}={_plain(v)}" for k, v in sorted(meta.items()))
        return [f"ErrorInfo: {_plain(g('reason', ''))} (domain {_plain(g('domain', ''))}{'; ' + extra if extra else ''})"]
    if kind == "BadRequest":
        out = []
        for v in _items(g("fieldViolations")):
            field = str(v.get("field", ""))
            where = locate(field) if locate and field else ""
            reason = f" [{_plain(v['reason'])}]" if v.get("reason") else ""
            out.append(f"BadRequest: {where + ': ' if where else ''}{_plain(field)}: {_plain(v.get('description', ''))}{reason}")
        return out
    if kind == "QuotaFailure":
        out = []
        for v in _items(g("violations")):
            extra = ", ".join(f"{k} {_plain(v[k])}" for k in ("quotaMetric", "quotaId", "quotaValue", "apiService") if v.get(k))
            text = f"QuotaFailure: {_plain(v.get('subject', ''))}: {_plain(v.get('description', ''))}"
            out.append(text + (f" ({extra})" if extra else ""))
        return out
    if kind == "PreconditionFailure":
        return [
            f"PreconditionFailure: {_plain(v.get('type', ''))} {_plain(v.get('subject', ''))}: {_plain(v.get('description', ''))}"
            for v in _items(g("violations"))
        ]
    if kind == "Help":
        return [f"Help: {_plain(v.get('description', ''))}: {_plain(v.get('url', ''))}" for v in _items(g("links"))]
    if kind == "LocalizedMessage":
        return [f"LocalizedMessage ({_plain(g('locale', ''))}): {_plain(g('message', ''))}"]
    if kind == "RetryInfo":
        return [f"RetryInfo: retry after {_plain(g('retryDelay', ''))}"]
    if kind == "ResourceInfo":
        owner = f" (owner {_plain(g('owner'))})" if g("owner") else ""
        text = f"{_plain(g('resourceType', ''))} {_plain(g('resourceName', ''))}{owner}"
        return [f"ResourceInfo: {text}" + (f": {_plain(g('description'))}" if g("description") else "")]
    if kind == "RequestInfo":
        serving = f" ({_plain(g('servingData'))})" if g("servingData") else ""
        return [f"RequestInfo: request {_plain(g('requestId', ''))}{serving}"]
    if kind == "DebugInfo":
        return [f"DebugInfo: {_plain(g('detail', ''))}"]
    rest = {k: v for k, v in d.items() if k != "@type"}
    return [f"{_plain(kind or 'detail')}: {_plain(rest)}"]


def detail_lines(details: list[Any], locate: Callable[[str], str] | None = None) -> list[str]:
    """Every ``google.rpc`` detail of an error, one printable line each, at most MAX_DETAIL_LINES.

    locate: a BadRequest field path -> ``file:line:col`` of the field in the repo ("" when unknown).
    """
    lines: list[str] = []
    for d in details:
        lines += _detail(d, locate) if isinstance(d, dict) else [f"detail: {_plain(d)}"]
    if len(lines) > MAX_DETAIL_LINES:
        left = len(lines) - MAX_DETAIL_LINES + 1
        lines = [*lines[: MAX_DETAIL_LINES - 1], f"... and {left} more detail lines"]
    return lines


class InvalidArgument(ApiError):
    status = "INVALID_ARGUMENT"


class FailedPrecondition(ApiError):
    status = "FAILED_PRECONDITION"


class Unauthenticated(ApiError):
    status = "UNAUTHENTICATED"


class PermissionDenied(ApiError):
    status = "PERMISSION_DENIED"


class NotFound(ApiError):
    status = "NOT_FOUND"


class Conflict(ApiError):
    status = "ABORTED"


class Aborted(Conflict):
    status = "ABORTED"


class AlreadyExists(Conflict):
    status = "ALREADY_EXISTS"


class RetryableError(ApiError):
    status = "UNAVAILABLE"


class Internal(ApiError):
    status = "INTERNAL"


class BadReply(ApiError):
    """The server answered, but not as the CES API does: never retried, nothing built on it."""

    status = "BAD_REPLY"


class TransportError(ApiError):
    """No answer: the endpoint was not reached (``sent`` False) or the reply was lost.

    ``final``: not worth retrying (the connection was refused before the endpoint ever answered).
    """

    status = "UNREACHABLE"

    def __init__(self, message: str, *, sent: bool = False, final: bool = False, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.sent = sent
        self.final = final


BY_STATUS: dict[str, type[ApiError]] = {
    "INVALID_ARGUMENT": InvalidArgument,
    "OUT_OF_RANGE": InvalidArgument,
    "FAILED_PRECONDITION": FailedPrecondition,
    "UNAUTHENTICATED": Unauthenticated,
    "PERMISSION_DENIED": PermissionDenied,
    "NOT_FOUND": NotFound,
    "ABORTED": Aborted,
    "ALREADY_EXISTS": AlreadyExists,
    "RESOURCE_EXHAUSTED": RetryableError,
    "UNAVAILABLE": RetryableError,
    "DEADLINE_EXCEEDED": RetryableError,
    "INTERNAL": Internal,
}

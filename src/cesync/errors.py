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
    └── TransportError       the endpoint could not be reached at all
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "Aborted",
    "AlreadyExists",
    "ApiError",
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


class TransportError(ApiError):
    """No answer: the endpoint was not reached (``sent`` False) or the reply was lost."""

    status = "UNREACHABLE"

    def __init__(self, message: str, *, sent: bool = False, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.sent = sent


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

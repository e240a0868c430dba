"""Rules that refuse a write whatever its body: a locked app, ``force`` where the request has none."""

from __future__ import annotations

from typing import Any

from ..api import behaviour as fb
from .errors import RpcError
from .wire import kind


def force_allowed(collection: str) -> bool:
    """Whether the Delete request of this kind has ``force`` (a version in use cannot be forced away)."""
    return fb.delete_has_force(kind(collection).message)


def unbound_force(collection: str) -> RpcError:
    """A query parameter binds to a field of the request message (google/api/http.proto: fields not
    bound by the path "automatically become HTTP query parameters"); DeleteDeploymentRequest,
    DeleteExampleRequest and DeleteAppVersionRequest have no ``force``, so there is nothing to bind it
    to. The wording is what Google's front end answers for an unbindable parameter (seen on Google
    APIs; none of our stored sources quotes it for CES)."""
    return RpcError(
        "INVALID_ARGUMENT",
        'Invalid JSON payload received. Unknown name "force": Cannot bind query parameter. '
        f"Field 'force' could not be found in request message Delete{kind(collection).message}Request.",
        details=[
            {
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [{"field": "force", "description": 'Invalid JSON payload received. Unknown name "force"'}],
            }
        ],
    )


def locked(app: dict[str, Any]) -> bool:
    return any(app.get(name) is True for name in fb.fields("App", fb.APP_LOCK))


def locked_error(parent: str) -> RpcError:
    # App.locked (app.proto): "If the app is locked, modifications to the app resources will be
    # rejected." The status code is not stated: FAILED_PRECONDITION is AIP-193's for a request the
    # resource's state forbids. Which writes count is not stated either: the emulator refuses every
    # write that changes the app or what it holds (creating an app version, a copy, is allowed), except
    # the UpdateApp that unlocks it and an ImportApp with ignoreAppLock (ImportAppRequest.ignore_app_lock).
    return RpcError(
        "FAILED_PRECONDITION",
        f"app {parent} is locked (App.locked is true): modifications to the app's resources are rejected; "
        "unlock it first (UpdateApp with locked: false)",
    )

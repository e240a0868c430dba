"""What CES itself says is wrong with an app's resources, read from the remote (pure).

The protos carry the server's own validation as output-only fields (google-cloud-ces, ces_v1):
``App.validation_errors`` "Misconfigurations or warnings in the app", ``Agent.validation_errors``
"Misconfigurations or errors in the agent that may affect agent quality" (lists of strings),
and ``Example.invalid`` "The example may become invalid if referencing resources are deleted.
Invalid examples will not be used as few-shot examples." Being output only, they never take
part in a diff; plan and apply report them, and ``--fail-on-validation-errors`` fails on them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..api.kinds import ResourceKind
from ..api.resource import Resource

__all__ = ["INVALID_EXAMPLE", "findings"]

INVALID_EXAMPLE = "invalid: it may reference deleted resources, and is not used as a few-shot example"
_LISTS = {"App": "validationErrors", "Agent": "validationErrors"}


def _of(kind: ResourceKind, body: dict[str, Any]) -> list[str]:
    model = kind.model_name
    if model == "Example":
        return [INVALID_EXAMPLE] if body.get("invalid") is True else []
    field = _LISTS.get(model)
    found = body.get(field) if field else None
    return [f"{field}: {e}" for e in found if isinstance(e, str) and e] if isinstance(found, list) else []


def findings(parent: str, remote: Iterable[Resource]) -> dict[str, list[str]]:
    """Full resource name -> what CES reports wrong with it, for every resource that has something."""
    out: dict[str, list[str]] = {}
    for r in remote:
        if not isinstance(r.body, dict):
            continue
        found = _of(r.kind, r.body)
        if found:
            out[r.kind.resource_name(parent, r.id)] = found
    return dict(sorted(out.items()))

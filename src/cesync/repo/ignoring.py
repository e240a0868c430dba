"""ignoreChanges field paths checked against the kind's fields (validate's part of core.ignore)."""

from __future__ import annotations

from ..api.kinds import ResourceKind
from ..core.checks import suggest
from ..models.base import ProtoModel, specs

__all__ = ["field_problem"]

# What a file writes for cesync itself, not the API's: never a field to leave to the console.
_OWN = {"id", "name", "etag"}


def field_problem(kind: ResourceKind, path: str) -> str:
    """Why ``path`` (dotted, camelCase as the files write it) is no field of the kind to leave to the console; "" when it is."""
    message: type[ProtoModel] | None = kind.model
    steps = path.split(".")
    if not path or steps[0] in _OWN:
        return f"ignoreChanges: {path!r} is no field to leave to the console (name a field of the {kind}, e.g. description)"
    for i, step in enumerate(steps):
        if message is None:
            return f"ignoreChanges: {'.'.join(steps[:i])} of a {kind} holds no fields; leave it to the console whole"
        table = specs(message)
        spec = table.get(step)
        if spec is None:
            where = f" in {'.'.join(steps[:i])}" if i else ""
            return f"ignoreChanges: {kind} has no field {step!r}{where}{suggest(step, sorted(table))}"
        if (spec.repeated or spec.map) and i < len(steps) - 1:
            return f"ignoreChanges: {'.'.join(steps[: i + 1])} is a list or map: leave it to the console whole"
        message = spec.message
    return ""

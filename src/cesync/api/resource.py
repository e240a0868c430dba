"""One resource, wherever it comes from: the repo, the app, an export or an archive (pure).

The loader fills ``source`` (where the repo defines it); the remote reader leaves it
empty and takes ``name`` and ``etag`` from the server's body. Everything downstream
(normalize, diff, plan, export, import) reads the same record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .kinds import ResourceKind

__all__ = ["ID_RE", "Position", "Resource"]

ID_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_-]{0,127}\Z")  # a resource id; \Z: "$" would let a trailing newline in


class Position(NamedTuple):
    """Where a resource is defined: ``file:line:col``."""

    file: str
    line: int = 1
    col: int = 1


@dataclass(frozen=True)
class Resource:
    """kind (an entry of cesync.api.kinds.KINDS), id, wire JSON body, and what is known of it."""

    kind: ResourceKind
    id: str
    body: dict[str, Any]
    name: str = ""  # full resource name; from the body when it has one
    etag: str = ""  # from the body when it has one
    source: Position | None = None  # set by the loader

    def __post_init__(self) -> None:
        if not self.name and isinstance(self.body.get("name"), str):
            object.__setattr__(self, "name", self.body["name"])
        if not self.etag and "etag" in self.body:
            object.__setattr__(self, "etag", str(self.body["etag"]))

    @property
    def key(self) -> tuple[str, str]:
        """(kind name, id): plain data, as targets, skips and sensitive paths name a resource."""
        return (self.kind.name, self.id)

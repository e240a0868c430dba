"""(remote, desired) -> changes (pure, with deepdiff on canonical forms).

A change of a resource lists its changed field paths (for people) and the
minimal ``updateMask`` (for the API): camelCase paths that stop at the first
list, map, free-form value or document, never indexing into them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deepdiff import DeepDiff

from .models import Kind, ProtoModel, Tool, Toolset, specs
from .normalize import DOCUMENT_FIELDS, canonical

__all__ = ["FieldChange", "Remote", "ResourceDiff", "diff_resource", "mask_path"]

MODELS: dict[str, type[ProtoModel]] = {"tool": Tool, "toolset": Toolset}


@dataclass(frozen=True)
class Remote:
    """One resource as read from the app."""

    kind: str
    id: str
    body: dict[str, Any]

    @property
    def etag(self) -> str:
        return str(self.body.get("etag", ""))


@dataclass(frozen=True)
class FieldChange:
    path: str
    before: Any = None
    after: Any = None


@dataclass(frozen=True)
class ResourceDiff:
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    fields: list[FieldChange] = field(default_factory=list)
    update_mask: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


def mask_path(parts: list[str | int], model: type[ProtoModel]) -> list[str]:
    """Cut a deep path at the first list, map, struct or document field."""
    out: list[str] = []
    current: type[ProtoModel] | None = model
    for part in parts:
        if current is None or not isinstance(part, str):
            break
        spec = specs(current).get(part)
        if spec is None:
            break
        out.append(part)
        if spec.repeated or spec.map or spec.message is None or spec.kind in (Kind.STRUCT, Kind.VALUE) or part in DOCUMENT_FIELDS:
            break
        current = spec.message
    return out


def _get(data: Any, parts: list[str]) -> Any:
    for p in parts:
        if not isinstance(data, dict):
            return None
        data = data.get(p)
    return data


def _minimal(paths: list[str]) -> list[str]:
    kept: list[str] = []
    for p in sorted(set(paths), key=lambda x: (x.count("."), x)):
        if not any(p == k or p.startswith(k + ".") for k in kept):
            kept.append(p)
    return sorted(kept)


def diff_resource(kind: str, rid: str, desired: dict[str, Any] | None, remote: dict[str, Any] | None) -> ResourceDiff:
    model = MODELS[kind]
    before = canonical(kind, rid, remote) if remote is not None else None
    after = canonical(kind, rid, desired) if desired is not None else None
    unknown = before.unknown if before else []
    if before is None or after is None:
        return ResourceDiff(before.body if before else None, after.body if after else None, unknown=unknown)
    if before.body == after.body:  # the common case; deepdiff only for real differences
        return ResourceDiff(before.body, after.body, unknown=unknown)
    dd = DeepDiff(before.body, after.body, ignore_numeric_type_changes=True, view="tree", verbose_level=2)
    paths: list[str] = []
    for report in dd.values():
        for level in report:
            parts = level.path(output_format="list")
            cut = mask_path(parts, model)
            if cut:
                paths.append(".".join(cut))
    mask = _minimal(paths)
    fields = [FieldChange(p, _get(before.body, p.split(".")), _get(after.body, p.split("."))) for p in mask]
    return ResourceDiff(before.body, after.body, fields, mask, unknown)

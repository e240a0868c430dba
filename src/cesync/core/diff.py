"""(remote, desired) -> changes (pure): one walk of the canonical forms, guided by the model.

A change of a resource lists its changed field paths (for people) and the
minimal ``updateMask`` (for the API): camelCase paths that stop at the first
list, map, free-form value or document, never indexing into them.

What counts as a change is decided here and nowhere else (:func:`same`): two canonical
forms differ when their JSON differs, with one exception, 1 and 1.0 (JSON has one number
type). ``true`` and ``1`` differ, list order and repetitions count, case counts, every key
counts (even ``__x``), floats compare exactly (normalize has already rounded float32
fields). The walk descends into a field only where the mask may (a message that is not a
list, map, free-form value or document) and names every other differing field whole, so
the paths it finds are the mask's granularity and no difference can fall between them.

Two rules of the field-behaviour table (:mod:`cesync.api.behaviour`) decide what is
compared at all: INPUT_ONLY fields never are (normalize leaves them out), and a
SERVER_DEFAULTED field (or the APP_LOCK) the repo does not name is not a change.
"""

from __future__ import annotations

import hashlib
import marshal
from dataclasses import dataclass, field
from typing import Any

from ..api import behaviour as fb
from ..api.jsonvalue import value_at
from ..api.kinds import ResourceKind
from ..models import FieldSpec, Kind, ProtoModel, specs
from .normalize import DOCUMENT_FIELDS, Canonical, canonical

__all__ = [
    "FieldChange",
    "ResourceDiff",
    "changed_paths",
    "diff_resource",
    "minimal_mask",
    "pair_digest",
    "same",
]


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


def _mask_leaf(spec: FieldSpec) -> bool:
    """An update mask names this field whole (lists, maps, free-form values and documents are replaced, not merged)."""
    whole = spec.repeated or spec.map or spec.message is None
    return whole or spec.kind in (Kind.STRUCT, Kind.VALUE) or spec.name in DOCUMENT_FIELDS


def same(a: Any, b: Any) -> bool:
    """Equal as JSON: Python's == would also take True for 1 (and 1 for 1.0, which JSON agrees with)."""
    if a is b:
        return True  # one parsed document on both sides (parse_document caches by content): no walk
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and bool(a == b)


def changed_paths(before: dict[str, Any], after: dict[str, Any], model: type[ProtoModel]) -> list[str]:
    """Mask paths of every difference, each at the mask's granularity (not minimal: see minimal_mask)."""
    return [] if same(before, after) else _differing(before, after, model, "")


def _differing(before: dict[str, Any], after: dict[str, Any], model: type[ProtoModel], prefix: str) -> list[str]:
    """The fields of two different messages that differ: a message field the mask may enter is
    walked into, any other field (or a value the model does not describe) is named whole."""
    table = specs(model)
    out: list[str] = []
    for key in {**before, **after}:
        b, a = before.get(key), after.get(key)
        if key in before and key in after and same(b, a):
            continue
        spec = table.get(key)
        if spec is not None and spec.message is not None and not _mask_leaf(spec) and isinstance(b, dict) and isinstance(a, dict):
            out += _differing(b, a, spec.message, f"{prefix}{key}.")
        else:
            out.append(prefix + key)
    return out


def minimal_mask(paths: list[str]) -> list[str]:
    kept: list[str] = []
    for p in sorted(set(paths), key=lambda x: (x.count("."), x)):
        if not any(p == k or p.startswith(k + ".") for k in kept):
            kept.append(p)
    return sorted(kept)


def _left_to_the_server(model_name: str) -> tuple[str, ...]:
    """Fields compared only when the repo names them: what the server fills in (SERVER_DEFAULTED),
    and the app lock (APP_LOCK), which operators set in the console; a repo that does not name
    ``locked`` neither lifts nor sets it (``locked: false`` does lift it)."""
    return (*fb.fields(model_name, fb.SERVER_DEFAULTED), *fb.fields(model_name, fb.APP_LOCK))


def diff_resource(kind: ResourceKind, rid: str, desired: dict[str, Any] | None, remote: dict[str, Any] | None) -> ResourceDiff:
    model = kind.model
    before = canonical(kind, rid, remote) if remote is not None else None
    after = canonical(kind, rid, desired) if desired is not None else None
    unknown = before.unknown if before else []
    if before is None or after is None:
        return ResourceDiff(before.body if before else None, after.body if after else None, unknown=unknown)
    unnamed = [f for f in _left_to_the_server(kind.model_name) if (desired or {}).get(f) is None and f in before.body]
    if unnamed:
        before = Canonical({k: v for k, v in before.body.items() if k not in unnamed}, before.unknown)
    mask = minimal_mask(changed_paths(before.body, after.body, model))
    fields = [FieldChange(p, value_at(before.body, p.split(".")), value_at(after.body, p.split("."))) for p in mask]
    return ResourceDiff(before.body, after.body, fields, mask, unknown)


def pair_digest(kind: ResourceKind, rid: str, desired: dict[str, Any], remote: dict[str, Any], salt: bytes) -> bytes | None:
    """What a (desired, remote) pair is known by to a later run, or None (data marshal cannot write).

    diff_resource is a function of its arguments and of the API description in use (salt names
    it), so a pair it found equal once is equal again; marshal (format 2, no references) writes
    equal data as equal bytes and unequal data as unequal bytes, so a hit is never a wrong one.
    Hashed with SHA-256 (which CPUs compute in hardware: the 40 MB of a 10k app's pairs in half
    BLAKE2b's time), cut to 20 bytes."""
    try:
        data = marshal.dumps((kind.name, rid, desired, remote), 2)
    except ValueError:
        return None
    digest = hashlib.sha256(salt)
    digest.update(data)
    return digest.digest()[:20]

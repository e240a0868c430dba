"""Desired and remote resources -> one canonical form (pure).

Follows protobuf's proto3 JSON mapping, as the server prints it: output-only fields dropped,
defaults equal to absence (but message presence and ``optional`` scalars kept),
enums as names, Durations, int64 and float32 in one spelling, OpenAPI documents
parsed so they compare by meaning, ``$env_var`` substituted. Known server
defaults (a SYNCHRONOUS execution type, a 30 s timeout, a Python function's
name taken from its code: each kind's ``server_defaults`` in :mod:`cesync.api.kinds`)
equal their absence. INPUT_ONLY fields (:mod:`cesync.api.behaviour`: sent, never returned)
are left out, so they are never compared. Keys the model does not know are
set aside and reported, never compared.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field, replace
from typing import Any

from ..api import behaviour as fb
from ..api import descriptors
from ..api.kinds import ResourceKind
from ..api.protojson import canonical_duration, float32, is_default
from ..models import FieldSpec, Kind, ProtoModel
from .documents import parse_document
from .walk import DROP, Path, SpecWalker

__all__ = ["DOCUMENT_FIELDS", "Canonical", "canonical", "canonical_message"]

DOCUMENT_FIELDS = {"openApiSchema"}
ENV_VAR = "$env_var"


@dataclass(frozen=True)
class Canonical:
    body: dict[str, Any]
    unknown: list[str] = field(default_factory=list)  # dotted paths of fields the model does not know


def canonical(kind: ResourceKind, rid: str, body: dict[str, Any]) -> Canonical:
    walker = _Normalize()
    out = walker.walk(body, kind.model)
    for key in ("name", "etag", *fb.fields(kind.model_name, fb.INPUT_ONLY)):
        out.pop(key, None)
    hook = kind.server_defaults
    if hook is not None:
        hook(rid, out)
    return Canonical(out, walker.unknown_paths)


def canonical_message(data: Any, model: type[ProtoModel]) -> Canonical:
    """One message value (a list item, a map value) in canonical form, its unknown fields set aside."""
    walker = _Normalize()
    out = walker.walk(data, model)
    return Canonical(out if isinstance(out, dict) else {}, walker.unknown_paths)


class _Normalize(SpecWalker):
    """Output-only and unset fields dropped, empty lists and maps dropped, scalars in one spelling."""

    def __init__(self) -> None:
        self.unknown_paths: list[str] = []  # dotted, without list indices
        self.models: list[type[ProtoModel]] = []  # the message being walked, innermost last

    def walk(self, data: Any, model: type[ProtoModel], path: Path = ()) -> Any:
        self.models.append(model)
        try:
            return super().walk(data, model, path)
        finally:
            self.models.pop()

    def not_a_message(self, data: Any, model: type[ProtoModel], path: Path) -> Any:
        return {}

    def unknown(self, key: str, value: Any, model: type[ProtoModel], path: Path) -> Any:
        field = descriptors.fields_of(model.message_name).get(key) if model.message_name else None
        if field is not None:
            # Newer than the models (a newer description is in use): compared as the API prints it.
            if "OUTPUT_ONLY" in descriptors.behaviors(model.message_name, field.name):
                return DROP
            printed, why = descriptors.canonical_value(model.message_name, key, value)
            if why is None:
                return DROP if printed is None else printed
        self.unknown_paths.append(".".join(map(str, path)))
        return DROP

    def skip(self, spec: FieldSpec, value: Any, path: Path) -> bool:
        return spec.output_only or value is None

    def item_path(self, path: Path, index: int) -> Path:
        return path

    def message(self, spec: FieldSpec, value: Any, path: Path) -> Any:
        if (spec.repeated or spec.map) and not value:
            return DROP
        return super().message(spec, value, path)

    def value(self, spec: FieldSpec, value: Any, path: Path, parent: dict[str, Any]) -> Any:
        if spec.kind is Kind.ENUM and descriptors.is_newer():
            # A value newer than the models: named as the description in use names its number.
            field = descriptors.fields_of(self.models[-1].message_name).get(spec.name)
            if field is not None and field.enum_type is not None:
                spec = replace(spec, enum={v.name: v.number for v in field.enum_type.values})
        if spec.repeated:
            return [_scalar(v, spec.kind, spec.enum) for v in value] if value else DROP
        if spec.map or spec.kind is Kind.STRUCT:
            return value if value else DROP
        if spec.kind is Kind.VALUE:
            return value
        if path[-1] in DOCUMENT_FIELDS and isinstance(value, str):
            return _document(value, parent.get("url"))
        scalar = _scalar(value, spec.kind, spec.enum)
        # Judged after conversion: a float32 that rounds to 0 (1e-300) is the default.
        return scalar if spec.presence or not is_default(scalar, spec.kind, spec.enum) else DROP


def _scalar(value: Any, kind: Kind, enum_table: dict[str, int]) -> Any:
    try:
        if kind is Kind.ENUM and isinstance(value, int):
            return next((n for n, i in enum_table.items() if i == value), value)
        if kind is Kind.DURATION:
            return canonical_duration(value)
        if kind is Kind.INT64 or kind is Kind.INT32:
            return int(value)
        if kind is Kind.FLOAT:
            return float32(float(value))
        if kind is Kind.DOUBLE:
            return float(value)
        if kind is Kind.BYTES:
            return base64.b64encode(base64.b64decode(value)).decode()
    except (ValueError, TypeError, binascii.Error):
        return value
    return value


def _document(text: str, url: str | None) -> Any:
    """An OpenAPI document by meaning, with the $env_var server placeholder substituted."""
    if url and ENV_VAR in text:
        text = text.replace(ENV_VAR, url)
    try:
        return parse_document(text)
    except ValueError:
        return text

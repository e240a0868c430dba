"""Per-field conformance of a model class with the published message descriptor.

Each field is compared on JSON name, scalar type, presence (proto3 ``optional``),
message type, enum values, oneof, repeated/map and behaviour (REQUIRED,
OUTPUT_ONLY, IDENTIFIER as the field-behaviour table :mod:`cesync.api.behaviour` gives it,
from the snapshot in :mod:`cesync.api.descriptors`, which a test keeps equal to the package).
"""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import FieldDescriptor as FD

from cesync.api import behaviour as fb
from cesync.api import descriptors as api
from cesync.models import Behavior, Kind, ProtoModel, overlay, specs

WELL_KNOWN = {
    "google.protobuf.Duration": Kind.DURATION,
    "google.protobuf.Timestamp": Kind.TIMESTAMP,
    "google.protobuf.Struct": Kind.STRUCT,
    "google.protobuf.Value": Kind.VALUE,
    "google.protobuf.FieldMask": Kind.STRING,
    "google.protobuf.Any": Kind.STRUCT,
}
SCALARS = {
    FD.TYPE_STRING: Kind.STRING,
    FD.TYPE_BOOL: Kind.BOOL,
    FD.TYPE_BYTES: Kind.BYTES,
    FD.TYPE_DOUBLE: Kind.DOUBLE,
    FD.TYPE_FLOAT: Kind.FLOAT,
    FD.TYPE_ENUM: Kind.ENUM,
    **dict.fromkeys((FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32, FD.TYPE_UINT32, FD.TYPE_FIXED32), Kind.INT32),
    **dict.fromkeys((FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64, FD.TYPE_UINT64, FD.TYPE_FIXED64), Kind.INT64),
}
EXTRA = {(message, f["name"]) for message, fields in overlay.EXTRA_FIELDS.items() for f in fields}


def is_map(f: Any) -> bool:
    return bool(f.message_type is not None and f.message_type.GetOptions().map_entry)


def _value_field(f: Any) -> Any:
    return f.message_type.fields_by_name["value"] if is_map(f) else f


def expected_kind(f: Any) -> Kind:
    f = _value_field(f)
    if f.message_type is not None:
        return WELL_KNOWN.get(f.message_type.full_name, Kind.MESSAGE)
    return SCALARS[f.type]


def expected_behavior(message: str, field: str) -> Behavior:
    """The model's behaviour as the field-behaviour table (cesync.api.behaviour) gives it."""
    found = fb.of(message, field)
    if not fb.required(message, field):
        found -= {fb.REQUIRED}  # the proto says REQUIRED, CES accepts it unset (UNSET_ACCEPTED)
    for name in ("IDENTIFIER", "OUTPUT_ONLY", "REQUIRED"):
        if name in found:
            return Behavior[name]
    return Behavior.OPTIONAL


def wire_name(f: Any) -> str:
    return str(f.name[:-1] if f.name.endswith("_") else f.name)  # proto-plus renames type -> type_


def check(model: type[ProtoModel], desc: Any) -> list[str]:
    """Every way ``model`` differs from the message ``desc``; empty when they agree."""
    errors: list[str] = []
    table = specs(model)
    where = model.__name__
    theirs = {f.json_name for f in desc.fields}
    for extra in sorted(set(table) - theirs):
        if (desc.full_name, extra) not in EXTRA:
            errors.append(f"{where}.{extra}: not in {desc.full_name}")
    for f in desc.fields:
        spec = table.get(f.json_name)
        at = f"{where}.{f.json_name}"
        if spec is None:
            errors.append(f"{at}: missing")
            continue
        kind = expected_kind(f)
        if spec.kind is not kind:
            errors.append(f"{at}: type {spec.kind.value}, API has {kind.value}")
        repeated = f.is_repeated and not is_map(f)
        if (spec.repeated, spec.map) != (repeated, is_map(f)):
            errors.append(f"{at}: repeated/map {(spec.repeated, spec.map)}, API has {(repeated, is_map(f))}")
        optional = f.has_presence and f.containing_oneof is not None and f.containing_oneof.name == f"_{f.name}"
        presence = optional or (kind is Kind.MESSAGE and not repeated and not is_map(f))
        if spec.presence != presence and not (spec.repeated or spec.map):
            errors.append(f"{at}: presence {spec.presence}, API has {presence}")
        value = _value_field(f)
        if value.enum_type is not None:
            numbers = {v.name: v.number for v in value.enum_type.values}
            if spec.enum != numbers:
                errors.append(f"{at}: enum values {spec.enum}, API has {numbers}")
        if kind is Kind.MESSAGE:
            target = value.message_type
            if spec.message is None or not _same_message(spec.message, target):
                errors.append(f"{at}: message {getattr(spec.message, '__name__', None)}, API has {target.full_name}")
        oneof = f.containing_oneof.name if f.containing_oneof is not None and not optional else None
        if spec.oneof != oneof:
            errors.append(f"{at}: oneof {spec.oneof}, API has {oneof}")
        behavior = expected_behavior(desc.full_name, wire_name(f))
        if spec.behavior is not behavior:
            errors.append(f"{at}: behaviour {spec.behavior.name}, API has {behavior.name}")
    return errors


def _same_message(model: type[ProtoModel], desc: Any) -> bool:
    """The model stands for ``desc``: its name and JSON field names (field types are checked per pair)."""
    names = {desc.name, desc.full_name.removeprefix(api.PACKAGE + ".").replace(".", "")}
    return model.__name__ in names and set(specs(model)) - {n for m, n in EXTRA if m == desc.full_name} == {
        f.json_name for f in desc.fields
    }


def pairs(roots: list[tuple[type[ProtoModel], Any]]) -> list[tuple[type[ProtoModel], Any]]:
    """(model, descriptor) for every message reachable from the roots."""
    out: list[tuple[type[ProtoModel], Any]] = []
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        model, desc = todo.pop(0)
        if desc.full_name in seen:
            continue
        seen.add(desc.full_name)
        out.append((model, desc))
        table = specs(model)
        for f in desc.fields:
            target = _value_field(f).message_type
            spec = table.get(f.json_name)
            if target is not None and target.full_name in api.facts()["messages"] and spec and spec.message:
                todo.append((spec.message, target))
    return out

"""Request and response bodies through protobuf's own JSON support, over the API snapshot.

The emulator shares no model code with cesync: it parses bodies with
``google.protobuf.json_format`` into messages built from the descriptor snapshot
(:mod:`cesync.api.descriptors`), so it accepts what a real server accepts (camelCase or
snake_case names, int64 as strings or numbers, enums by name or number) and
rejects unknown fields. Field behaviour (REQUIRED, OUTPUT_ONLY, INPUT_ONLY, ...) comes
from the field-behaviour table (:mod:`cesync.api.behaviour`, the snapshot's annotations
and cited outside evidence). A resource is printed once per write, in both enum
encodings, and the texts are kept: listing never runs json_format.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from google.protobuf import duration_pb2, json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from ..api import behaviour as fb
from ..api import descriptors as api
from .errors import RpcError
from .resources import APP, COLLECTIONS, REFERENCE_FIELDS, Collection

# Messages proto3 JSON prints as a scalar or free JSON (a string, an object of any keys): not walked into.
OPAQUE = {f"google.protobuf.{n}" for n in ("Duration", "Timestamp", "Struct", "Value", "ListValue", "FieldMask", "Any")}

__all__ = [
    "RESOURCES",
    "TOOLSET_TYPES",
    "TOOL_TYPES",
    "Parsed",
    "Printed",
    "checked",
    "descriptor",
    "duration_nanos",
    "etag_honoured",
    "mask_paths",
    "parse",
    "printed",
    "split_known",
    "to_data",
    "without_input_only",
]

RESOURCES = {c.name: c.full_message for c in (*COLLECTIONS.values(), APP)}
# Resource names the server resolves, so a malformed one is INVALID_ARGUMENT there too.
RESOURCE_NAMES: dict[str, re.Pattern[str]] = {
    f"{api.PACKAGE}.{field}": re.compile(pattern)
    for field, pattern in {
        "ConnectorTool.connection": r"projects/[^/]+/locations/[^/]+/connections/[^/]+",
        "ConnectorToolset.connection": r"projects/[^/]+/locations/[^/]+/connections/[^/]+",
        "ApiKeyConfig.api_key_secret_version": r"projects/[^/]+/secrets/[^/]+/versions/[^/]+",
        "OAuthConfig.client_secret_version": r"projects/[^/]+/secrets/[^/]+/versions/[^/]+",
        "ServiceDirectoryConfig.service": r"projects/[^/]+/locations/[^/]+/namespaces/[^/]+/services/[^/]+",
    }.items()
}


def descriptor(collection: str) -> Descriptor:
    return api.message(RESOURCES[collection])


@cache
def _oneof_members(message: str, oneof: str) -> tuple[str, ...]:
    return tuple(f.json_name for f in api.message(message).oneofs_by_name[oneof].fields)


TOOL_TYPES = _oneof_members(RESOURCES["tools"], "tool_type")
TOOLSET_TYPES = _oneof_members(RESOURCES["toolsets"], "toolset_type")


@cache
def _fields(desc: Descriptor) -> dict[str, FieldDescriptor]:
    """A message's fields by JSON name and by proto name: requests may use either."""
    table = {f.name: f for f in desc.fields}
    table.update({f.json_name: f for f in desc.fields})
    return table


@cache
def _behaviors(desc: Descriptor) -> dict[str, frozenset[str]]:
    return {f.name: fb.of(desc.full_name, f.name) for f in desc.fields}


def _is_map(f: Any) -> bool:
    return f.message_type is not None and f.message_type.GetOptions().map_entry


def _children(f: FieldDescriptor, value: Any, path: str) -> list[tuple[Descriptor, Any, str]]:
    """The message values under one field, with their paths."""
    if f.message_type is None or f.message_type.full_name in OPAQUE:
        return []
    if _is_map(f):
        target = f.message_type.fields_by_name["value"].message_type
        if target is None or target.full_name in OPAQUE or not isinstance(value, dict):
            return []
        return [(target, v, f"{path}[{json.dumps(k)}]") for k, v in value.items()]
    if f.is_repeated:
        return [(f.message_type, v, f"{path}[{i}]") for i, v in enumerate(value)] if isinstance(value, list) else []
    return [(f.message_type, value, path)]


def _unknown(desc: Descriptor, value: Any, path: str) -> list[dict[str, str]]:
    if not isinstance(value, dict):
        return []  # json_format reports the type error
    found: list[dict[str, str]] = []
    table = _fields(desc)
    for key, item in value.items():
        f = table.get(key)
        # A field the API description keeps only as dropped by a newer discovery document (AgentTool.rootAgent,
        # SynthesizeSpeechConfig.voiceSampleGcsUri: gone from rev 20261016) is unknown to the service of that
        # revision, which the emulator is: refused as the service refuses any name its messages lack.
        if f is None or api.removed(desc.full_name, f.json_name):
            found.append({"field": f"{path}.{key}", "description": f'Invalid JSON payload received. Unknown name "{key}".'})
            continue
        for child, sub, at in _children(f, item, f"{path}.{f.json_name}"):
            found += _unknown(child, sub, at)
    return found


def _without_output_only(desc: Descriptor, value: Any) -> Any:
    """Requests may echo output-only fields; the server ignores them."""
    if not isinstance(value, dict):
        return value
    table, behaviors = _fields(desc), _behaviors(desc)
    out: dict[str, Any] = {}
    for key, item in value.items():
        f = table.get(key)
        if f is not None and "OUTPUT_ONLY" in behaviors[f.name]:
            continue
        if f is not None and f.message_type is not None and f.message_type.full_name not in OPAQUE:
            if _is_map(f):
                target = f.message_type.fields_by_name["value"].message_type
                if target is not None and target.full_name not in OPAQUE and isinstance(item, dict):
                    item = {k: _without_output_only(target, v) for k, v in item.items()}
            elif f.is_repeated and isinstance(item, list):
                item = [_without_output_only(f.message_type, v) for v in item]
            elif not f.is_repeated:
                item = _without_output_only(f.message_type, item)
        out[key] = item
    return out


@cache
def _checked_fields(desc: Descriptor) -> tuple[tuple[FieldDescriptor, bool, re.Pattern[str] | None], ...]:
    """(field, required, name pattern) of the fields _missing looks at: required outside a oneof, a
    resource name, or a message that may hold either. The others (most) can report nothing."""
    out = []
    for f in desc.fields:
        required = fb.required(desc.full_name, f.name) and f.containing_oneof is None
        pattern = RESOURCE_NAMES.get(f"{desc.full_name}.{f.name}")
        nested = f.message_type is not None and f.message_type.full_name not in OPAQUE
        if required or pattern is not None or nested:
            out.append((f, required, pattern))
    return tuple(out)


def _missing(message: Message, path: str) -> list[dict[str, str]]:
    """REQUIRED fields left unset, and malformed resource names, in every present message."""
    found: list[dict[str, str]] = []
    for f, required, pattern in _checked_fields(message.DESCRIPTOR):
        at = f"{path}.{f.json_name}"
        value = getattr(message, f.name)
        if f.is_repeated:
            present = len(value) > 0
        elif f.message_type is not None or f.has_presence:
            present = message.HasField(f.name)
        else:
            present = value != f.default_value
        if required and not present:
            found.append({"field": at, "description": "Field is required."})
        if pattern is not None and present and not pattern.fullmatch(value):
            found.append({"field": at, "description": f"Invalid resource name '{value}'."})
        if f.message_type is None or f.message_type.full_name in OPAQUE or not present:
            continue
        if _is_map(f):
            if f.message_type.fields_by_name["value"].message_type is not None:
                for k, v in value.items():
                    found += _missing(v, f"{at}[{json.dumps(k)}]")
        elif f.is_repeated:
            for i, v in enumerate(value):
                found += _missing(v, f"{at}[{i}]")
        else:
            found += _missing(value, at)
    return found


def _invalid(singular: str, violations: list[dict[str, str]]) -> RpcError:
    return RpcError(
        "INVALID_ARGUMENT",
        f"invalid {singular}: " + "; ".join(f"{v['field']}: {v['description']}" for v in violations),
        details=[{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": violations}],
    )


def kind(collection: str) -> Collection:
    return APP if collection == APP.name else COLLECTIONS[collection]


def _cleaned(collection: str, body: dict[str, Any]) -> dict[str, Any]:
    """A request body without output-only fields, name and etag, or INVALID_ARGUMENT for unknown fields."""
    desc = descriptor(collection)
    singular = kind(collection).singular
    unknown = _unknown(desc, body, singular)
    if unknown:
        raise _invalid(singular, unknown)
    data: dict[str, Any] = _without_output_only(desc, body)
    for key in ("name", "etag"):
        data.pop(key, None)
    return data


def _message(collection: str, data: dict[str, Any]) -> Message:
    """json_format's reading of a cleaned body, or INVALID_ARGUMENT in its words."""
    singular = kind(collection).singular
    message = api.message_class(descriptor(collection).full_name)()
    try:
        json_format.ParseDict(data, message, descriptor_pool=api.pool())
    except json_format.ParseError as exc:
        text = str(exc)
        where = re.search(r'at "([\w.\[\]"]+)"', text)
        field = singular + where.group(1).partition(".")[1] + where.group(1).partition(".")[2] if where else singular
        raise _invalid(singular, [{"field": field, "description": text}]) from None
    return message


def _complete(collection: str, violations: list[dict[str, str]], has_type: bool) -> None:
    """INVALID_ARGUMENT for required fields left out, malformed names, or no member of the type's oneof."""
    oneof = kind(collection).oneof
    if oneof is not None and not has_type:
        members = _oneof_members(descriptor(collection).full_name, oneof)
        violations.append({"field": kind(collection).singular, "description": f"exactly one of {', '.join(members)} must be set"})
    if violations:
        raise _invalid(kind(collection).singular, violations)


def _sets_newer_message(message: Message) -> bool:
    """Whether a message field the protos lack (a newer discovery document's) is set. The document
    has no oneofs, so it cannot say whether Guardrail.supervisor ("Optional. Guardrail that runs
    supervisor intervention.", rev 20261016, worded as each guardrail_type member is) is a type:
    sources silent, such a field stands for one rather than a documented field being refused."""
    desc = message.DESCRIPTOR
    return any(
        f.message_type is not None and api.field_facts(desc.full_name, f.json_name).get("source") == "discovery"
        for f, _ in message.ListFields()
    )


def parse(collection: str, body: dict[str, Any], *, complete: bool = True) -> Message:
    """A request body as a message (output-only fields, name and etag dropped), or INVALID_ARGUMENT.

    ``complete=False`` is for the body of a masked update: names and types are
    checked, required fields only once it is merged into the stored resource.
    """
    message = _message(collection, _cleaned(collection, body))
    if complete:
        oneof = kind(collection).oneof
        has_type = oneof is None or message.WhichOneof(oneof) is not None or _sets_newer_message(message)
        _complete(collection, _missing(message, kind(collection).singular), has_type)
    return message


def checked(collection: str, body: dict[str, Any], *, complete: bool = True) -> Parsed:
    """What :func:`parse` accepts, as proto3 JSON data (json_format's), or its INVALID_ARGUMENT."""
    message = parse(collection, body, complete=complete)
    return Parsed(message, to_data(message))


def split_known(collection: str, data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(fields of the message, fields the API lacks that ``/admin/inject`` added)."""
    table = _fields(descriptor(collection))
    return {k: v for k, v in data.items() if k in table}, {k: v for k, v in data.items() if k not in table}


def to_data(message: Message) -> dict[str, Any]:
    """The proto3 JSON form (camelCase, enum names, defaults omitted) as a dict."""
    return json_format.MessageToDict(message)


@dataclass(frozen=True)
class Printed:
    """A stored resource: its JSON data and its answer text in both enum encodings."""

    data: dict[str, Any]
    names: str
    ints: str

    def text(self, enum_int: bool) -> str:
        return self.ints if enum_int else self.names


@dataclass(frozen=True)
class Parsed:
    """A checked request body: its message, and the proto3 JSON data printed from it."""

    message: Message
    data: dict[str, Any]


def printed(collection: str, data: dict[str, Any]) -> Printed:
    """Print a resource's data once per write, in both enum encodings, as json_format prints its message.
    Fields the API lacks (``/admin/inject``) pass through as given, at any depth."""
    from .extras import extras, graft, without  # extras.py reads this module's descriptor helpers

    desc = descriptor(collection)
    known, extra = split_known(collection, data)
    nested = extras(collection, known)
    message = api.message_class(desc.full_name)()
    json_format.ParseDict(without(known, nested) if nested else known, message, descriptor_pool=api.pool())
    ints = json_format.MessageToDict(message, use_integers_for_enums=True)
    ints.update(extra)
    graft(ints, nested)
    return Printed(data, json.dumps(data, separators=(",", ":")), json.dumps(ints, separators=(",", ":")))


def mask_paths(raw: str | None, collection: str) -> list[str] | None:
    """updateMask paths in JSON names (snake_case accepted), or INVALID_ARGUMENT for a path the message lacks."""
    if raw is None or raw.strip() in ("", "*"):
        return None
    out = []
    for path in (p.strip() for p in raw.split(",") if p.strip()):
        current: Descriptor | None = descriptor(collection)
        parts = []
        for part in path.split("."):
            f = _fields(current).get(part) if current is not None else None
            if f is None:
                raise RpcError(
                    "INVALID_ARGUMENT", f"invalid update_mask path '{path}': no field '{part}' in {kind(collection).singular}"
                )
            parts.append(f.json_name)
            current = f.message_type if not (f.is_repeated or f.message_type is None) else None
            if current is not None and current.full_name in OPAQUE:
                current = None
        out.append(".".join(parts))
    return out


def duration_nanos(text: str) -> int:
    """A proto3 JSON Duration ("30s", "1.5s") in nanoseconds, read by protobuf itself."""
    duration = duration_pb2.Duration()
    duration.FromJsonString(text.strip())  # ValueError when it is not one
    return int(duration.ToNanoseconds())


def without_input_only(collection: str, data: dict[str, Any]) -> dict[str, Any]:
    """What the server keeps of a request: INPUT_ONLY fields (a Deployment's WhatsApp and Instagram
    credentials, ``google/cloud/ces_v1/types/deployment.proto``) are used, never stored or returned."""
    dropped = fb.fields(descriptor(collection).full_name, fb.INPUT_ONLY)
    return {k: v for k, v in data.items() if k not in dropped} if dropped else data


def etag_honoured(collection: str) -> bool:
    """Whether a write's ``etag`` is a request field: an OUTPUT_ONLY etag (App, Deployment) is ignored
    in a request like every output-only field (``google/api/field_behavior.proto``)."""
    return fb.etag_guards(descriptor(collection).full_name)


def writable(collection: str, data: dict[str, Any]) -> dict[str, Any]:
    """A stored resource without what the server sets: name, etag and output-only fields."""
    out: dict[str, Any] = _without_output_only(descriptor(collection), data)
    for key in ("name", "etag"):
        out.pop(key, None)
    return out


_REF_DOC = re.compile(r"apps/\{app\}/(\w+)/\{\w+\}``")


@cache
def reference_fields() -> dict[tuple[str, str], str]:
    """(message, proto field) -> the collection its resource names point into, from the field docs ("Format: ...")."""
    out: dict[tuple[str, str], str] = {}
    for message, entry in api.facts()["messages"].items():
        for field, facts in entry.get("fields", {}).items():
            match = _REF_DOC.search(facts.get("doc") or "")
            if match and field != "name" and match.group(1) in COLLECTIONS:
                out[(message, field)] = match.group(1)
    # The evaluation kinds' names whose docs give no format (EvaluationDataset.evaluations: "Evaluations
    # that are included in this dataset"): from the emulator's table of them (resources.REFERENCE_FIELDS).
    for collection in (c.name for c in COLLECTIONS.values() if c.package == api.BETA_PACKAGE):
        for dotted, target in REFERENCE_FIELDS.get(collection, {}).items():
            desc: Descriptor | None = descriptor(collection)
            *parts, last = dotted.split(".")
            for part in parts:
                f = _fields(desc).get(part) if desc is not None else None
                desc = f.message_type if f is not None else None
            found = _fields(desc).get(last) if desc is not None else None
            if desc is not None and found is not None:
                out.setdefault((desc.full_name, found.name), target)
    return out


def map_references(collection: str, data: Any, change: Any) -> Any:
    """``data`` with every resource-name field's value replaced by ``change(collection, value)`` (None drops it)."""
    return _map_refs(descriptor(collection), data, change)


def _map_refs(desc: Descriptor, value: Any, change: Any) -> Any:
    if not isinstance(value, dict):
        return value
    table, refs = _fields(desc), reference_fields()
    out: dict[str, Any] = {}
    for key, item in value.items():
        f = table.get(key)
        target = refs.get((desc.full_name, f.name)) if f is not None else None
        if target is not None:
            if isinstance(item, list):
                item = [r for v in item if (r := change(target, v) if isinstance(v, str) else v) is not None]
            elif isinstance(item, str):
                item = change(target, item)
                if item is None:
                    continue  # the change dropped the reference
        elif f is not None and f.message_type is not None and f.message_type.full_name not in OPAQUE and not _is_map(f):
            if f.is_repeated and isinstance(item, list):
                item = [_map_refs(f.message_type, v, change) for v in item]
            elif not f.is_repeated:
                item = _map_refs(f.message_type, item, change)
        out[key] = item
    return out

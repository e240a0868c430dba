"""proto3 JSON parsed and printed again without building a message: json_format's answer, cheaply.

``round_trip(desc, value, ints)`` is ``MessageToDict(ParseDict(value, message), use_integers_for_enums=ints)``
for the bodies the emulator sees on every write, walked once with per-descriptor tables
instead of json_format's pure-Python parser and printer (most of the emulator's CPU per
write). Whatever it cannot vouch for raises :class:`Unsure`: every input json_format
refuses, nulls, int32 or enums spelled as strings, zero floats, bytes, Struct, Any,
wrappers, maps keyed by other than strings, deep nesting. The caller then takes
json_format's own way, which also words the error. Map entries come out in the
order protobuf's map gives them (filled in the same order in an empty message).
tests/emulator/test_roundtrip.py compares both ways on generated bodies.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
import struct
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from google.protobuf import descriptor_pool, duration_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.internal import type_checkers

from ..api import behaviour as fb
from ..api import descriptors as api

__all__ = ["Unsure", "round_trip"]

F = FieldDescriptor
_INT_RANGES = {
    F.TYPE_INT32: (-(2**31), 2**31 - 1),
    F.TYPE_SINT32: (-(2**31), 2**31 - 1),
    F.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    F.TYPE_UINT32: (0, 2**32 - 1),
    F.TYPE_FIXED32: (0, 2**32 - 1),
}
_INT64_RANGES = {
    F.TYPE_INT64: (-(2**63), 2**63 - 1),
    F.TYPE_SINT64: (-(2**63), 2**63 - 1),
    F.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    F.TYPE_UINT64: (0, 2**64 - 1),
    F.TYPE_FIXED64: (0, 2**64 - 1),
}
_INT64_TEXT = re.compile(r"-?(0|[1-9][0-9]*)\Z", re.ASCII)
_TIMESTAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z\Z", re.ASCII)
# json_format refuses strings holding these (protobuf strings are UTF-8).
_SURROGATE = re.compile("[\ud800-\udfff]")
# Messages json_format prints as JSON scalars or free objects: nothing inside to check.
OPAQUE = {f"google.protobuf.{n}" for n in ("Duration", "Timestamp", "Struct", "Value", "ListValue", "FieldMask", "Any")}
# Messages with a JSON form of their own that this module leaves to json_format.
_DEFERRED = {f"google.protobuf.{n}" for n in ("Struct", "Value", "ListValue", "FieldMask", "Any")}
_MAX_DEPTH = 60  # json_format refuses nesting beyond 100


class Unsure(Exception):
    """This value is left to json_format."""


def _custom_enum_names() -> bool:
    """Whether enum values may carry custom JSON names (json_format reads them from the default pool)."""
    try:
        descriptor_pool.Default().FindExtensionByName("pb.enumvalue.json")
    except KeyError:
        return False
    return True


_ENABLED = not _custom_enum_names()


@dataclass(frozen=True)
class _Field:
    number: int
    json_name: str
    kind: str  # str, bool, int, int64, double, float, enum, message, duration, timestamp, unsure
    presence: bool  # printed even when it holds its default
    repeated: bool
    oneof: str | None
    message: Descriptor | None = None  # kind message
    enum: tuple[dict[Any, tuple[int, str]], ...] | None = None  # kind enum: (by name, by number)
    bounds: tuple[int, int] = (0, 0)  # kind int, int64
    map_value: _Field | None = None  # a map (string keys): its value field
    container: Descriptor | None = None  # a map: the message holding it
    output_only: str = ""  # "skip": an output-only field a request may echo; "unsure": one holding fields to check


def _kind(f: FieldDescriptor) -> tuple[str, dict[str, Any]]:
    if f.type == F.TYPE_STRING:
        return "str", {}
    if f.type == F.TYPE_BOOL:
        return "bool", {}
    if f.type in _INT_RANGES:
        return "int", {"bounds": _INT_RANGES[f.type]}
    if f.type in _INT64_RANGES:
        return "int64", {"bounds": _INT64_RANGES[f.type]}
    if f.type == F.TYPE_DOUBLE:
        return "double", {}
    if f.type == F.TYPE_FLOAT:
        return "float", {}
    if f.type == F.TYPE_ENUM and f.enum_type is not None:
        if f.enum_type.full_name == "google.protobuf.NullValue":
            return "unsure", {}
        return "enum", {"enum": _enum_table(f.enum_type)}
    if f.type == F.TYPE_MESSAGE and f.message_type is not None:
        name = f.message_type.full_name
        if name == "google.protobuf.Duration":
            return "duration", {}
        if name == "google.protobuf.Timestamp":
            return "timestamp", {}
        if name in _DEFERRED or f.message_type.file.name == "google/protobuf/wrappers.proto":
            return "unsure", {}
        return "message", {"message": f.message_type}
    return "unsure", {}  # bytes, groups


@cache
def _enum_table(enum: EnumDescriptor) -> tuple[dict[Any, tuple[int, str]], ...]:
    # json_format prints a number as values_by_number names it (the first of aliases).
    by_number = {n: (n, str(v.name)) for n, v in enum.values_by_number.items()}
    by_name = {str(v.name): by_number[v.number] for v in enum.values}
    return by_name, by_number


def _plan(f: FieldDescriptor, container: Descriptor) -> _Field:
    plan = _value_plan(f, container)
    if not fb.has(container.full_name, f.name, fb.OUTPUT_ONLY):
        return plan
    # wire._unknown looks inside an echoed output-only message before it is dropped: leave those to it.
    opaque = f.message_type is None or f.message_type.full_name in OPAQUE
    return dataclasses.replace(plan, output_only="skip" if opaque else "unsure")


def _value_plan(f: FieldDescriptor, container: Descriptor) -> _Field:
    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        key, value = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        if key.type != F.TYPE_STRING:
            return _Field(f.number, f.json_name, "unsure", False, False, None)
        kind, extra = _kind(value)
        entry = _Field(value.number, value.json_name, kind, True, False, None, **extra)
        return _Field(f.number, f.json_name, "map", False, False, None, map_value=entry, container=container)
    kind, extra = _kind(f)
    oneof = f.containing_oneof.name if f.containing_oneof is not None else None
    return _Field(f.number, f.json_name, kind, f.has_presence, f.is_repeated, oneof, **extra)


@cache
def _plans(desc: Descriptor) -> dict[str, _Field]:
    """A message's fields by JSON name and by proto name (requests may use either)."""
    table = {f.name: _plan(f, desc) for f in desc.fields}
    table.update({f.json_name: table[f.name] for f in desc.fields})
    return table


def round_trip(desc: Descriptor, value: Any, ints: bool, *, request: bool = False) -> dict[str, Any]:
    """``MessageToDict(ParseDict(value))`` of a message of ``desc`` (enums as numbers with ``ints``), or Unsure.

    request: value is a request body, read as wire.parse reads one: output-only fields
    (at every depth) and the resource's name and etag are dropped first.
    """
    if not _ENABLED:
        raise Unsure
    return _message(desc, value, ints, 1, _TOP if request else None)


_TOP = ("name", "etag")  # what a request's body may hold that the server sets (besides output-only fields)
_NESTED: tuple[str, ...] = ()


def _message(desc: Descriptor, value: Any, ints: bool, depth: int, request: tuple[str, ...] | None) -> dict[str, Any]:
    if type(value) is not dict or depth > _MAX_DEPTH:
        raise Unsure
    plans = _plans(desc)
    out: list[tuple[int, str, Any]] = []
    seen: set[Any] = set()
    inner = None if request is None else _NESTED
    for key, item in value.items():
        f = plans.get(key)
        if f is None:
            raise Unsure
        if request is not None and (f.output_only or key in request):
            if f.output_only == "unsure":
                raise Unsure
            continue
        if item is None or f.number in seen or f.oneof in seen:
            raise Unsure
        seen.add(f.number)
        if f.oneof is not None:
            seen.add(f.oneof)
        if f.map_value is not None:
            if item:
                out.append((f.number, f.json_name, _map(f, item, ints, depth, inner)))
            elif type(item) is not dict:
                raise Unsure
        elif f.repeated:
            if type(item) is not list:
                raise Unsure
            if item:
                out.append((f.number, f.json_name, [_single(f, v, ints, depth, inner)[0] for v in item]))
        else:
            converted, default = _single(f, item, ints, depth, inner)
            if f.presence or not default:
                out.append((f.number, f.json_name, converted))
    out.sort()
    return {name: v for _, name, v in out}


def _map(f: _Field, item: Any, ints: bool, depth: int, request: tuple[str, ...] | None) -> dict[str, Any]:
    if type(item) is not dict or f.map_value is None or f.container is None:
        raise Unsure
    entry = f.map_value
    converted = {}
    for k, v in item.items():
        if type(k) is not str or (not k.isascii() and _SURROGATE.search(k)):
            raise Unsure
        converted[k] = _single(entry, v, ints, depth + 1, request)[0]
    if len(converted) < 2:
        return converted
    # protobuf's map gives its keys in an order of its own: fill an empty one as json_format does and ask.
    scratch = getattr(api.message_class(f.container.full_name)(), _name_of(f.container, f.number))
    if entry.kind == "message":
        for k in converted:
            scratch.get_or_create(k)
    else:
        default = _DEFAULTS[entry.kind]
        for k in converted:
            scratch[k] = default
    return {k: converted[k] for k in scratch}


_DEFAULTS: dict[str, Any] = {"str": "", "bool": False, "int": 0, "int64": 0, "double": 0.0, "float": 0.0, "enum": 0}


@cache
def _name_of(desc: Descriptor, number: int) -> str:
    return str(desc.fields_by_number[number].name)


def _single(f: _Field, v: Any, ints: bool, depth: int, request: tuple[str, ...] | None) -> tuple[Any, bool]:
    """One value of a field as printed, and whether it is the field's default."""
    kind = f.kind
    t = type(v)
    if kind == "str":
        if t is not str or (not v.isascii() and _SURROGATE.search(v)):
            raise Unsure
        return v, v == ""
    if kind == "message":
        assert f.message is not None
        return _message(f.message, v, ints, depth + 1, request), False
    if kind == "enum":
        assert f.enum is not None
        found = f.enum[0].get(v) if t is str else f.enum[1].get(v) if t is int else None
        if found is None:
            raise Unsure
        return (found[0] if ints else found[1]), found[0] == 0
    if kind == "duration":
        return _duration(v) if t is str else _unsure(), False
    if kind == "timestamp":
        return _timestamp(v) if t is str else _unsure(), False
    if kind == "bool":
        if t is not bool:
            raise Unsure
        return v, not v
    if kind == "int" or kind == "int64":
        if t is str and kind == "int64" and _INT64_TEXT.match(v):
            v = int(v)
        elif t is not int:
            raise Unsure
        low, high = f.bounds
        if not low <= v <= high:
            raise Unsure
        return (str(v) if kind == "int64" else v), v == 0
    if kind == "double" or kind == "float":
        return _float(kind, v, t, f.presence)
    raise Unsure


def _float(kind: str, v: Any, t: type, presence: bool) -> tuple[Any, bool]:
    if t is not int and t is not float:
        raise Unsure
    try:
        x = float(v)
        if x != x or x in (float("inf"), float("-inf")) or (x == 0.0 and not presence):
            raise Unsure  # refused, or a zero printed or not by its sign
        if kind == "double":
            return x, False
        if not -3.4e38 < x < 3.4e38:
            raise Unsure
        single = struct.unpack("<f", struct.pack("<f", x))[0]
    except (OverflowError, struct.error):
        raise Unsure from None
    if single == 0.0 and not presence:
        raise Unsure
    return type_checkers.ToShortestFloat(single), False


def _unsure() -> Any:
    raise Unsure


@lru_cache(maxsize=4096)
def _duration(text: str) -> str:
    """protobuf's own reading and printing of a Duration (few distinct ones: kept)."""
    duration = duration_pb2.Duration()
    try:
        duration.FromJsonString(text)
        return str(duration.ToJsonString())
    except ValueError:
        raise Unsure from None


@lru_cache(maxsize=256)
def _real_moment(text: str) -> bool:
    """Whether YYYY-MM-DDTHH:MM:SS names a moment (server stamps share theirs for a second: kept)."""
    try:
        datetime.datetime(int(text[0:4]), int(text[5:7]), int(text[8:10]), int(text[11:13]), int(text[14:16]), int(text[17:19]))
    except ValueError:
        return False
    return True


def _timestamp(text: str) -> str:
    """A Timestamp as protobuf prints it after reading it, for the plain UTC form (server stamps); else Unsure."""
    match = _TIMESTAMP.match(text)
    if match is None or not _real_moment(match.group(1)):
        raise Unsure
    fraction = match.group(2)
    nanos = round(float("0." + fraction) * 1e9) if fraction else 0
    base = text[:19]
    if nanos == 0:
        return base + "Z"
    if nanos >= 1_000_000_000:
        raise Unsure
    if nanos % 1_000_000 == 0:
        return f"{base}.{nanos // 1_000_000:03d}Z"
    if nanos % 1000 == 0:
        return f"{base}.{nanos // 1000:06d}Z"
    return f"{base}.{nanos:09d}Z"

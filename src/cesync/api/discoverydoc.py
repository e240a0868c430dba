"""Google's discovery document for CES merged into the descriptor snapshot (pure).

The ``google-cloud-ces`` protos give each field's type, number and behaviour annotations;
the discovery document (``ces.v1.json``, ``ces.v1beta.json``: what the service serves at
``https://ces.googleapis.com/$discovery/rest?version=v1``) is newer and gives the fields,
enum values and methods the protos do not have yet, with the behaviour its descriptions
state ("Output only.", "Required.", "Optional.", "Immutable.", ...). :func:`merge` adds what
the document has to a ``FileDescriptorSet`` and its facts, recording for every field the
source it came from and, for the document's, its revision; a field the document no longer
has is kept (answers of older servers still parse) and recorded as removed.

Schemas are matched to messages by walking: a top-level message and the schema of the same
name, then each message-typed field's message and the schema the property refers to. A
schema no message matches (a message newer than the protos) becomes a new message of the
package, named like the schema. New fields take numbers past the message's highest: they
are never on a wire (CES's REST surface is JSON), only unique.

Both ``scripts/gen_api.py`` (the bundled description) and :mod:`cesync.api.newer` (a newer
document found at run time) use this module, so the two can never merge differently.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import descriptor_pb2

__all__ = [
    "BEHAVIOR_WORDS",
    "Merged",
    "behaviors_of",
    "config_fields",
    "merge",
    "methods_of",
    "snake",
]

FD = descriptor_pb2.FieldDescriptorProto
BEHAVIOR_WORDS = {
    "Required": "REQUIRED",
    "Optional": "OPTIONAL",
    "Output only": "OUTPUT_ONLY",
    "Identifier": "IDENTIFIER",
    "Input only": "INPUT_ONLY",
    "Immutable": "IMMUTABLE",
}
_BEHAVIOR_RE = re.compile(r"^({})\.\s*".format("|".join(BEHAVIOR_WORDS)))
# Discovery's (type, format) -> a proto scalar type, or a well-known message.
_SCALARS: dict[tuple[str, str | None], int | str] = {
    ("string", None): FD.TYPE_STRING,
    ("string", "byte"): FD.TYPE_BYTES,
    ("string", "int64"): FD.TYPE_INT64,
    ("string", "uint64"): FD.TYPE_UINT64,
    ("string", "google-duration"): ".google.protobuf.Duration",
    ("string", "google-datetime"): ".google.protobuf.Timestamp",
    ("string", "google-fieldmask"): ".google.protobuf.FieldMask",
    ("string", "date-time"): ".google.protobuf.Timestamp",
    ("integer", "int32"): FD.TYPE_INT32,
    ("integer", "uint32"): FD.TYPE_UINT32,
    ("integer", None): FD.TYPE_INT32,
    ("number", "double"): FD.TYPE_DOUBLE,
    ("number", "float"): FD.TYPE_FLOAT,
    ("number", None): FD.TYPE_DOUBLE,
    ("boolean", None): FD.TYPE_BOOL,
    ("any", None): ".google.protobuf.Value",
}
_WELL_KNOWN_FILES = {
    ".google.protobuf.Duration": "google/protobuf/duration.proto",
    ".google.protobuf.Timestamp": "google/protobuf/timestamp.proto",
    ".google.protobuf.FieldMask": "google/protobuf/field_mask.proto",
    ".google.protobuf.Value": "google/protobuf/struct.proto",
    ".google.protobuf.Struct": "google/protobuf/struct.proto",
}


def behaviors_of(text: str) -> list[str]:
    """The behaviours a description states at its start ("Output only. Required. ...")."""
    found: list[str] = []
    while match := _BEHAVIOR_RE.match(text):
        found.append(BEHAVIOR_WORDS[match.group(1)])
        text = text[match.end() :]
    return found


def snake(json_name: str) -> str:
    """A proto field name for a JSON name: ``thinkingLevel`` -> ``thinking_level``."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", json_name).lower()


@dataclass
class Merged:
    """What :func:`merge` added and found, for reports and the tests."""

    fields: list[str] = field(default_factory=list)  # message.jsonName of each field added
    messages: list[str] = field(default_factory=list)  # full names of messages made from schemas
    enum_values: list[str] = field(default_factory=list)  # Enum.VALUE of each value added
    removed: list[str] = field(default_factory=list)  # message.jsonName of each field the document lacks
    behaviours: list[str] = field(default_factory=list)  # message.jsonName whose behaviour the document changed


class _Index:
    """Every message and enum of one package in a file set, by full name, with its file."""

    def __init__(self, fds: descriptor_pb2.FileDescriptorSet, package: str) -> None:
        self.package = package
        self.messages: dict[str, descriptor_pb2.DescriptorProto] = {}
        self.enums: dict[str, descriptor_pb2.EnumDescriptorProto] = {}
        self.file_of: dict[str, descriptor_pb2.FileDescriptorProto] = {}
        self.top: dict[str, str] = {}  # top-level name -> full name
        for file in fds.file:
            if file.package != package:
                continue
            for msg in file.message_type:
                self.top[msg.name] = f"{package}.{msg.name}"
                self._visit(file, f"{package}.{msg.name}", msg)
            for enum in file.enum_type:
                self.enums[f"{package}.{enum.name}"] = enum
                self.top[enum.name] = f"{package}.{enum.name}"

    def _visit(self, file: descriptor_pb2.FileDescriptorProto, full: str, msg: descriptor_pb2.DescriptorProto) -> None:
        self.messages[full] = msg
        self.file_of[full] = file
        for enum in msg.enum_type:
            self.enums[f"{full}.{enum.name}"] = enum
        for nested in msg.nested_type:
            self._visit(file, f"{full}.{nested.name}", nested)


def _value_property(prop: dict[str, Any]) -> dict[str, Any]:
    """The property of one value: a list's item, a map's value."""
    if prop.get("type") == "array":
        return dict(prop.get("items", {}))
    if prop.get("type") == "object" and isinstance(prop.get("additionalProperties"), dict):
        return dict(prop["additionalProperties"])
    return prop


def _is_struct(prop: dict[str, Any]) -> bool:
    extra = prop.get("additionalProperties")
    return prop.get("type") == "object" and isinstance(extra, dict) and extra.get("type") == "any"


class _Merger:
    def __init__(
        self, fds: descriptor_pb2.FileDescriptorSet, facts: dict[str, Any], doc: dict[str, Any], package: str, source: str
    ) -> None:
        self.fds, self.facts, self.doc, self.package, self.source = fds, facts, doc, package, source
        self.partial = source != "discovery"  # a document of a few schemas' newer fields says nothing of the rest
        self.schemas: dict[str, Any] = doc.get("schemas", {})
        self.revision = str(doc.get("revision", ""))
        self.index = _Index(fds, package)
        self.mapped: dict[str, str] = {}  # message full name -> schema id
        self.made: dict[str, str] = {}  # schema id -> full name of a message made from it
        self.made_names: set[str] = set()  # the values of made, looked up once per new field
        self.first_mapped: dict[str, str] = {}  # schema id -> the first message mapped to it
        self.numbers: dict[str, int] = {}  # message full name -> the last field number it was given
        self.scopes: dict[str, tuple[set[str], set[str]]] = {}  # message -> (nested names, its enums' values)
        # The snapshot keeps facts of some messages only (v1beta's: the evaluation kinds'; its App's are v1's).
        self.recorded = set(facts.get("messages", {}))
        # A path parameter is in the URL, never in the request schema: not a field the document dropped.
        self.path_names = {
            name.rsplit(".", 1)[-1]
            for method in _resources(doc)
            for name, p in method.get("parameters", {}).items()
            if p.get("location") == "path"
        }
        self.out = Merged()

    def run(self) -> Merged:
        for name, full in sorted(self.index.top.items()):
            if name in self.schemas and full in self.index.messages:
                self._map(full, name)
        for full, schema_id in list(self.mapped.items()):
            self._merge_message(full, schema_id)
        return self.out

    def _map(self, full: str, schema_id: str) -> None:
        if full in self.mapped or schema_id not in self.schemas:
            return
        self.mapped[full] = schema_id
        self.first_mapped.setdefault(schema_id, full)
        props = self.schemas[schema_id].get("properties", {})
        for f in self.index.messages[full].field:
            prop = props.get(f.json_name)
            target = self._message_of(f)
            if prop is None or target is None:
                continue
            ref = _value_property(prop).get("$ref")
            if ref:
                self._map(target, ref)

    def _message_of(self, f: descriptor_pb2.FieldDescriptorProto) -> str | None:
        """The package message a field holds (a map's value), if any."""
        if f.type != FD.TYPE_MESSAGE:
            return None
        target = f.type_name.lstrip(".")
        entry = self.index.messages.get(target)
        if entry is not None and entry.options.map_entry:
            value = entry.field[1]
            target = value.type_name.lstrip(".") if value.type == FD.TYPE_MESSAGE else ""
            entry = self.index.messages.get(target)
        return target if entry is not None else None

    def _facts_of(self, full: str) -> dict[str, Any]:
        messages: dict[str, Any] = self.facts.setdefault("messages", {})
        entry: dict[str, Any] = messages.setdefault(full, {"doc": "", "fields": {}})
        return entry

    def _merge_message(self, full: str, schema_id: str) -> None:
        msg = self.index.messages[full]
        props: dict[str, Any] = self.schemas[schema_id].get("properties", {})
        known = {f.json_name: f for f in msg.field}
        for f in msg.field:
            if f.type == FD.TYPE_ENUM and f.json_name in props:
                self._merge_enum(f.type_name.lstrip("."), _value_property(props[f.json_name]).get("enum", []))
        for json_name, prop in props.items():
            if json_name not in known:
                self._add_field(full, msg, json_name, prop)
        if full not in self.recorded or self.partial:
            return
        info = self._facts_of(full)
        fields_info: dict[str, Any] = info.setdefault("fields", {})
        short = full.removeprefix(self.package + ".")
        for f in msg.field:
            entry = fields_info.setdefault(f.name, {"behaviors": [], "doc": ""})
            prop = props.get(f.json_name)
            if prop is None:
                # A seed page's field is newer than any document that lacks it.
                if "removed" not in entry and f.json_name not in self.path_names and entry.get("source") != "seeds":
                    entry["removed"] = self.revision
                    self.out.removed.append(f"{short}.{f.json_name}")
                continue
            entry.pop("removed", None)  # a field a newer document has again
            self._merge_behaviour(short, f.json_name, entry, prop)

    def _merge_behaviour(self, short: str, json_name: str, entry: dict[str, Any], prop: dict[str, Any]) -> None:
        """Where the document's description states a behaviour, the newer source's word wins
        (``WhatsAppCredentials.conversationProfileId``: REQUIRED in 0.7.2, "Optional." in 20261016)."""
        stated = behaviors_of(str(prop.get("description", "")))
        if prop.get("readOnly") and "OUTPUT_ONLY" not in stated:
            stated.append("OUTPUT_ONLY")
        if not stated:
            return
        strong = ("REQUIRED", "OUTPUT_ONLY")  # "Optional." where the proto states nothing changes nothing
        before = [b for b in entry.get("behaviors", []) if b in strong]
        theirs = [b for b in stated if b in strong]
        if sorted(before) != sorted(theirs):
            kept = [b for b in entry.get("behaviors", []) if b not in (*strong, "OPTIONAL")]
            entry["behaviors"] = [b for b in stated if b in (*strong, "OPTIONAL")] + kept
            entry["behaviour_source"] = {"source": "discovery", "revision": self.revision, "was": before}
            self.out.behaviours.append(f"{short}.{json_name}")

    def _merge_enum(self, enum_full: str, values: list[str]) -> None:
        enum = self.index.enums.get(enum_full)
        if enum is None:
            return
        have = {v.name for v in enum.value}
        number = max(v.number for v in enum.value)
        added: dict[str, Any] = self.facts.setdefault("enum_values", {}).setdefault(enum_full, {})
        for name in values:
            if name not in have:
                have.add(name)
                number += 1
                enum.value.add(name=name, number=number)
                added[name] = {"source": self.source, "revision": self.revision}
                self.out.enum_values.append(f"{enum_full.removeprefix(self.package + '.')}.{name}")
        if not added:
            self.facts["enum_values"].pop(enum_full)
            if not self.facts["enum_values"]:
                self.facts.pop("enum_values")

    def _add_field(self, full: str, msg: descriptor_pb2.DescriptorProto, json_name: str, prop: dict[str, Any]) -> None:
        name = snake(json_name)
        if full not in self.numbers:
            self.numbers[full] = max((f.number for f in msg.field), default=0)
        self.numbers[full] += 1
        number = self.numbers[full]
        f = msg.field.add(name=name, json_name=json_name, number=number, label=FD.LABEL_OPTIONAL)
        self._type_field(full, msg, f, prop)
        text = str(prop.get("description", ""))
        stated = behaviors_of(text)
        if prop.get("readOnly") and "OUTPUT_ONLY" not in stated:
            stated.append("OUTPUT_ONLY")
        if full in self.recorded or full in self.made_names:
            self._facts_of(full)["fields"][name] = {
                "behaviors": stated,
                "doc": text,
                "source": self.source,
                "revision": self.revision,
            }
        self.out.fields.append(f"{full.removeprefix(self.package + '.')}.{json_name}")

    def _type_field(self, full: str, msg: descriptor_pb2.DescriptorProto, f: FD, prop: dict[str, Any]) -> None:
        if prop.get("type") == "array":
            f.label = FD.LABEL_REPEATED
            self._type_value(full, msg, f, dict(prop.get("items", {})))
        elif prop.get("type") == "object" and isinstance(prop.get("additionalProperties"), dict) and not _is_struct(prop):
            entry_name = f.json_name[:1].upper() + f.json_name[1:] + "Entry"
            entry = msg.nested_type.add(name=entry_name)
            if full in self.scopes:
                self.scopes[full][0].add(entry_name)
            entry.options.map_entry = True
            entry.field.add(name="key", json_name="key", number=1, label=FD.LABEL_OPTIONAL, type=FD.TYPE_STRING)
            value = entry.field.add(name="value", json_name="value", number=2, label=FD.LABEL_OPTIONAL)
            self.index.messages[f"{full}.{entry_name}"] = entry
            self._type_value(full, msg, value, dict(prop["additionalProperties"]))
            f.label = FD.LABEL_REPEATED
            f.type = FD.TYPE_MESSAGE
            f.type_name = f".{full}.{entry_name}"
        else:
            self._type_value(full, msg, f, prop)

    def _type_value(self, full: str, msg: descriptor_pb2.DescriptorProto, f: FD, prop: dict[str, Any]) -> None:
        if "$ref" in prop:
            target = self._message_for(str(prop["$ref"]), full)
            f.type = FD.TYPE_MESSAGE
            f.type_name = "." + target
            self._depend(full, self.index.file_of[target].name)
            return
        if _is_struct(prop):
            self._well_known(full, f, ".google.protobuf.Struct")
            return
        if prop.get("enum"):
            f.type = FD.TYPE_ENUM
            f.type_name = "." + self._enum_for(full, msg, f.json_name[:1].upper() + f.json_name[1:], prop["enum"])
            return
        kind = _SCALARS.get((str(prop.get("type")), prop.get("format")))
        if kind is None:
            kind = _SCALARS.get((str(prop.get("type")), None), FD.TYPE_STRING)
        if isinstance(kind, str):
            self._well_known(full, f, kind)
        else:
            f.type = kind  # type: ignore[assignment]

    def _well_known(self, full: str, f: FD, type_name: str) -> None:
        f.type = FD.TYPE_MESSAGE
        f.type_name = type_name
        self._depend(full, _WELL_KNOWN_FILES[type_name])

    def _depend(self, full: str, name: str) -> None:
        """The file of message ``full`` imports file ``name`` (a field of it now holds a message of that file)."""
        file = self.index.file_of[full]
        if name != file.name and name not in file.dependency:
            file.dependency.append(name)
            file.dependency[:] = sorted(file.dependency)

    def _enum_for(self, full: str, msg: descriptor_pb2.DescriptorProto, name: str, values: list[str]) -> str:
        if full not in self.scopes:  # kept up to date below: counted once, not on every new enum
            self.scopes[full] = (
                {e.name for e in msg.enum_type} | {m.name for m in msg.nested_type},
                {v.name for e in msg.enum_type for v in e.value},
            )
        taken, value_names = self.scopes[full]
        while name in taken:
            name += "Value"
        taken.add(name)
        scope, scope_name = msg, full
        if value_names & set(values):
            # Enum values are scoped by the message that holds the enum, not by the enum: a second
            # enum with a value name the first has ("TYPE_UNSPECIFIED") gets a message of its own.
            scope = msg.nested_type.add(name=name + "Values")
            taken.add(scope.name)
            scope_name = f"{full}.{scope.name}"
            self.index.messages[scope_name] = scope
        else:
            value_names.update(values)
        enum = scope.enum_type.add(name=name)
        for number, value in enumerate(values):
            enum.value.add(name=value, number=number)
        enum_full = f"{scope_name}.{name}"
        self.index.enums[enum_full] = enum
        return enum_full

    def _message_for(self, schema_id: str, holder: str) -> str:
        """The package message for a schema: the one it is matched to, else one made from it."""
        if schema_id in self.first_mapped:
            return self.first_mapped[schema_id]
        if schema_id in self.made:
            return self.made[schema_id]
        name = schema_id
        while name in self.index.top:
            name += "Message"
        full = f"{self.package}.{name}"
        file = self.index.file_of[holder]
        schema = self.schemas.get(schema_id, {})
        msg = file.message_type.add(name=name)
        self.index.messages[full] = msg
        self.index.file_of[full] = file
        self.index.top[name] = full
        self.made[schema_id] = full
        self.made_names.add(full)
        self.mapped[full] = schema_id
        self.first_mapped.setdefault(schema_id, full)
        self._facts_of(full).update({"doc": str(schema.get("description", "")), "source": self.source, "revision": self.revision})
        self.out.messages.append(full)
        for json_name, prop in schema.get("properties", {}).items():
            self._add_field(full, msg, json_name, prop)
        return full


def merge(
    fds: descriptor_pb2.FileDescriptorSet,
    facts: dict[str, Any],
    doc: dict[str, Any],
    package: str,
    source: str = "discovery",
) -> tuple[descriptor_pb2.FileDescriptorSet, dict[str, Any], Merged]:
    """Copies of ``fds`` and ``facts`` with what the discovery document ``doc`` adds to ``package``.

    ``source`` other than "discovery" (the seeds' pages: cesync.models.overlay.SEED_SCHEMAS) is a
    document of a few schemas' newer fields: it adds them and says nothing of the fields it leaves out.
    """
    fds_out = descriptor_pb2.FileDescriptorSet()
    fds_out.CopyFrom(fds)
    facts_out = copy.deepcopy(facts)
    merged = _Merger(fds_out, facts_out, doc, package, source).run()
    _dependencies_first(fds_out)
    if source == "discovery":
        facts_out.setdefault("discovery", {})["revision"] = str(doc.get("revision", ""))
        facts_out["methods"] = methods_of(doc)
    return fds_out, facts_out, merged


def _dependencies_first(fds: descriptor_pb2.FileDescriptorSet) -> None:
    """Files in an order a pool can add them in (a new field may make a file import a later one)."""
    files = {f.name: f for f in fds.file}
    ordered: list[descriptor_pb2.FileDescriptorProto] = []
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in done or name not in files:
            return
        if name in path:
            raise ValueError(f"the merged files import each other: {' -> '.join((*path, name))}")
        for dep in files[name].dependency:
            visit(dep, (*path, name))
        done.add(name)
        ordered.append(files[name])

    for file in list(fds.file):
        visit(file.name, ())
    copies = [descriptor_pb2.FileDescriptorProto() for _ in ordered]
    for copy_, file in zip(copies, ordered, strict=True):
        copy_.CopyFrom(file)
    del fds.file[:]
    fds.file.extend(copies)


def _resources(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for resource in node.get("resources", {}).values():
        yield from resource.get("methods", {}).values()
        yield from _resources(resource)


def methods_of(doc: dict[str, Any]) -> dict[str, Any]:
    """Every method of the document by id: HTTP verb, path, request and response schemas, and
    its query parameters with their documented meaning (what the emulator must honour or refuse)."""
    out: dict[str, Any] = {}
    for method in _resources(doc):
        params = {
            name: {k: p[k] for k in ("location", "type", "format", "description", "repeated") if k in p}
            for name, p in sorted(method.get("parameters", {}).items())
        }
        entry: dict[str, Any] = {
            "httpMethod": method.get("httpMethod", ""),
            "path": method.get("flatPath") or method.get("path", ""),
            "parameters": params,
        }
        for key in ("request", "response"):
            if isinstance(method.get(key), dict) and "$ref" in method[key]:
                entry[key] = method[key]["$ref"]
        out[str(method.get("id", ""))] = entry
    return dict(sorted(out.items()))


def config_fields(doc: dict[str, Any], roots: tuple[str, ...]) -> set[str]:
    """``Schema.property`` of every property the schemas ``roots`` hold, walked through ``$ref``s:
    the fields a repo can write (and the test that the description lacks none of them)."""
    schemas: dict[str, Any] = doc.get("schemas", {})
    seen: set[str] = set()
    found: set[str] = set()
    todo = [r for r in roots if r in schemas]
    while todo:
        schema_id = todo.pop()
        if schema_id in seen:
            continue
        seen.add(schema_id)
        for name, prop in schemas[schema_id].get("properties", {}).items():
            found.add(f"{schema_id}.{name}")
            ref = _value_property(prop).get("$ref")
            if ref in schemas:
                todo.append(ref)
    return found

#!/usr/bin/env python3
"""Regenerate cesync's description of the CES API and everything generated from it.

    python scripts/gen_api.py           # write src/cesync/api/ces_v1*.{binpb,json}, src/cesync/models/*.py,
                                        # schemas/*.schema.json and docs/field-behaviour.md's tables
    python scripts/gen_api.py --check   # exit 1 if any of them differs from what the installed packages give
    python scripts/gen_api.py --bump    # upgrade both packages, pin them in pyproject.toml, regenerate

The description comes from Google's two published sources, both read from installed packages
pinned in one place (pyproject.toml's ``test`` extra: PINS). Step 1 reads ``google-cloud-ces``:
the file descriptors of ``google.cloud.ces.v1`` and their dependencies, and each field's
behaviour and documentation from the proto-plus docstrings; and the same of the v1beta files
that hold the kinds only v1beta has (the evaluations: BETA_ROOTS). Then it merges the discovery
documents ``google-api-python-client`` ships (``ces.v1.json``, ``ces.v1beta.json``: the newest
fields, enum values, methods and query parameters, see :mod:`cesync.api.discoverydoc`),
recording for every field its source and, for the document's, its revision. Step 2 reads only
that snapshot (plus the hand-written overlay in ``cesync.models.overlay``, and the REQUIRED
fields the behaviour table says CES accepts unset) and prints modules with a pydantic model per
message; then the JSON Schemas and the behaviour page are rendered from those models.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import keyword
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from cesync.api import behaviour, discoverydoc  # noqa: E402
from cesync.models import overlay  # noqa: E402

PACKAGE = "google.cloud.ces.v1"
DESCRIPTOR_FILE = ROOT / "src/cesync/api/ces_v1.binpb"
BETA_PACKAGE = "google.cloud.ces.v1beta"
# v1beta's App (the emulator's /v1beta/ apps) and the evaluation kinds with their service, and what they need.
BETA_ROOTS = tuple(f"google/cloud/ces_v1beta/types/{n}.proto" for n in ("app", "evaluation", "evaluation_service"))
BETA_ALSO = ("google.rpc",)  # EvaluationResult.error is a google.rpc.Status
BETA_FILE = ROOT / "src/cesync/api/ces_v1beta.binpb"
BETA_FACTS_FILE = ROOT / "src/cesync/api/ces_v1beta.json"
BETA_MODELS_FILE = ROOT / "src/cesync/models/evaluations.py"
FACTS_FILE = ROOT / "src/cesync/api/ces_v1.json"
MODELS_FILE = ROOT / "src/cesync/models/messages.py"
OTHER_FILE = ROOT / "src/cesync/models/other.py"
# The managed kinds' messages (overlay.RESOURCE_MESSAGES and all they hold), one module per kind for
# what that kind alone holds and one for what several hold (_homes): a command builds the classes
# of the kinds it meets (a repo of tools: msg_shared's and msg_tool's), not every kind's.
SHARED_FILE = ROOT / "src/cesync/models/msg_shared.py"
KIND_FILES = {
    f"{PACKAGE}.App": ROOT / "src/cesync/models/msg_app.py",
    f"{PACKAGE}.Agent": ROOT / "src/cesync/models/msg_agent.py",
    f"{PACKAGE}.Tool": ROOT / "src/cesync/models/msg_tool.py",
    f"{PACKAGE}.Toolset": ROOT / "src/cesync/models/msg_toolset.py",
    f"{PACKAGE}.Guardrail": ROOT / "src/cesync/models/msg_guardrail.py",
    f"{PACKAGE}.Example": ROOT / "src/cesync/models/msg_example.py",
    f"{PACKAGE}.Deployment": ROOT / "src/cesync/models/msg_deployment.py",
    f"{PACKAGE}.AppVersion": ROOT / "src/cesync/models/msg_appversion.py",
}
BEHAVIOR_WORDS = discoverydoc.BEHAVIOR_WORDS
# The two packages the description is read from: pinned here in pyproject.toml and nowhere else.
PROTO_PACKAGE = "google-cloud-ces"
DISCOVERY_PACKAGE = "google-api-python-client"
PINS = (PROTO_PACKAGE, DISCOVERY_PACKAGE)
PYPROJECT = ROOT / "pyproject.toml"
# REQUIRED fields CES accepts unset (the behaviour table's cited UNSET_ACCEPTED rules): generated as optional.
UNSET_ACCEPTED = {(r.message, r.field) for r in behaviour.OVERLAY if r.behaviour == behaviour.UNSET_ACCEPTED}
ONEOF_NOTE = re.compile(r"This field is a member of `oneof`_ ``\w+``\.")

# --- step 1: the snapshot -------------------------------------------------------------------


def _proto_classes(beta: bool = False) -> list[Any]:
    import importlib

    import proto  # type: ignore[import-untyped]

    module = "google.cloud.ces_v1beta" if beta else "google.cloud.ces_v1"
    types = importlib.import_module(f"{module}.types")
    out: list[Any] = []

    def visit(cls: Any) -> None:
        out.append(cls)
        for value in vars(cls).values():
            if isinstance(value, type) and issubclass(value, proto.Message):
                visit(value)

    for name in sorted(dir(types)):
        value = getattr(types, name)
        if isinstance(value, type) and issubclass(value, proto.Message) and value.__module__.startswith(module + "."):
            visit(value)
    return out


def _files(roots: list[str] | None = None) -> list[descriptor_pb2.FileDescriptorProto]:
    """Every file of the package (or of roots) and its dependencies, dependencies first."""
    default = descriptor_pool.Default()
    roots = roots or sorted({cls.pb().DESCRIPTOR.file.name for cls in _proto_classes()})
    ordered: list[descriptor_pb2.FileDescriptorProto] = []
    done: set[str] = set()

    def visit(name: str) -> None:
        if name in done:
            return
        done.add(name)
        file = default.FindFileByName(name)
        for dep in sorted(d.name for d in file.dependencies):
            visit(dep)
        proto = descriptor_pb2.FileDescriptorProto()
        file.CopyToProto(proto)
        assert not proto.public_dependency and not proto.weak_dependency
        proto.dependency[:] = sorted(proto.dependency)  # proto-plus lists them in set order
        _fill_json_names(proto.message_type, [file.message_types_by_name[m.name] for m in proto.message_type])
        ordered.append(proto)

    for name in roots:
        visit(name)
    return ordered


def _fill_json_names(protos: Any, descs: list[Any]) -> None:
    """CopyToProto leaves json_name out; the snapshot records it as the runtime computes it.

    proto-plus renames fields that clash with Python words (``type`` -> ``type_``);
    the snapshot keeps the wire names, which the API accepts in snake_case JSON.
    """
    for proto, desc in zip(protos, descs, strict=True):
        for field in proto.field:
            field.json_name = desc.fields_by_name[field.name].json_name
            field.name = _wire_name(field.name)
        _fill_json_names(proto.nested_type, [desc.nested_types_by_name[m.name] for m in proto.nested_type])


def _wire_name(name: str) -> str:
    return name[:-1] if name.endswith("_") else name


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """A proto-plus docstring: the message text and each attribute's text (by proto name)."""
    lines = textwrap.dedent("\n".join(doc.splitlines()[1:])).splitlines() if doc else []
    first = doc.splitlines()[0].strip() if doc else ""
    head: list[str] = [first]
    fields: dict[str, list[str]] = {}
    current: list[str] | None = None
    in_attrs = False
    for line in lines:
        if line.strip() == "Attributes:":
            in_attrs = True
            continue
        if not in_attrs:
            head.append(line)
            continue
        match = re.match(r"^    (\w+) \(.*\):\s*$", line)
        if match:
            current = fields.setdefault(_wire_name(match.group(1)), [])
        elif current is not None and (line.startswith("        ") or not line.strip()):
            current.append(line.strip())
        elif line.strip():
            current = None
    message = _paragraphs(head)
    message = message.split("This message has `oneof`_ fields")[0].split(".. _oneof:")[0].strip()
    return message, {k: ONEOF_NOTE.sub("", _paragraphs(v)).strip() for k, v in fields.items()}


def _paragraphs(lines: list[str]) -> str:
    paras = [" ".join(p.split()) for p in "\n".join(x.strip() for x in lines).split("\n\n")]
    return "\n\n".join(p for p in paras if p)


behaviors_of = discoverydoc.behaviors_of


def discovery_document(version: str) -> dict[str, Any]:
    """Google's discovery document for CES ``version`` as the installed google-api-python-client ships it."""
    import importlib.resources

    path = importlib.resources.files("googleapiclient") / "discovery_cache" / "documents" / f"ces.{version}.json"
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def _facts(package: str, classes: list[Any], messages: dict[str, Any]) -> dict[str, Any]:
    return {
        "package": package,
        "source": PROTO_PACKAGE,
        "version": importlib.metadata.version(PROTO_PACKAGE),
        "messages": dict(sorted(messages.items())),
    }


def _with_discovery(
    fds: descriptor_pb2.FileDescriptorSet, facts: dict[str, Any], package: str, version: str
) -> tuple[bytes, str]:
    """The proto snapshot with what the discovery document adds (cesync.api.discoverydoc)."""
    doc = discovery_document(version)
    merged_fds, merged, _ = discoverydoc.merge(fds, facts, doc, package)
    merged_fds, merged, _ = discoverydoc.merge(merged_fds, merged, overlay.SEED_SCHEMAS, package, source="seeds")
    merged["discovery"] = {
        "source": DISCOVERY_PACKAGE,
        "version": importlib.metadata.version(DISCOVERY_PACKAGE),
        "document": f"googleapiclient/discovery_cache/documents/ces.{version}.json",
        "revision": str(doc.get("revision", "")),
    }
    merged["messages"] = dict(sorted(merged["messages"].items()))
    order = ("package", "source", "version", "discovery", "enum_values", "messages", "methods")
    merged = {k: merged[k] for k in order if k in merged}
    return merged_fds.SerializeToString(deterministic=True), json.dumps(merged, indent=1) + "\n"


def _message_facts(classes: list[Any], wanted: set[str] | None = None) -> dict[str, Any]:
    messages: dict[str, Any] = {}
    for cls in classes:
        desc = cls.pb().DESCRIPTOR
        if wanted is not None and desc.full_name not in wanted:
            continue
        doc, field_docs = parse_docstring(cls.__doc__ or "")
        fields = {}
        for f in desc.fields:
            text = field_docs.get(_wire_name(f.name), "")
            fields[_wire_name(f.name)] = {"behaviors": behaviors_of(text), "doc": text, "source": "proto"}
        messages[desc.full_name] = {"doc": doc, "fields": fields}
    return messages


def extract() -> tuple[bytes, str]:
    """The snapshot from the installed package: (FileDescriptorSet bytes, facts JSON)."""
    fds = descriptor_pb2.FileDescriptorSet()
    fds.file.extend(_files())
    classes = _proto_classes()
    return _with_discovery(fds, _facts(PACKAGE, classes, _message_facts(classes)), PACKAGE, "v1")


def extract_beta() -> tuple[bytes, str]:
    """v1beta's part of the snapshot: the BETA_ROOTS files and their dependencies, and the facts of
    the evaluation kinds' messages (every message they hold) and of their service's requests.
    v1beta's other messages repeat v1's; the pipeline reads them from v1."""
    classes = _proto_classes(beta=True)  # importing the package registers its files
    fds = descriptor_pb2.FileDescriptorSet(file=_files(list(BETA_ROOTS)))
    walk = Walk(fds, BETA_PACKAGE, BETA_ALSO)
    service = next(f for f in fds.file if f.name == BETA_ROOTS[-1])
    wanted = held_by_resources(walk, overlay.BETA_RESOURCE_MESSAGES)
    wanted |= {f"{BETA_PACKAGE}.{m.name}" for m in service.message_type}
    return _with_discovery(fds, _facts(BETA_PACKAGE, classes, _message_facts(classes, wanted)), BETA_PACKAGE, "v1beta")


# --- step 2: the models -----------------------------------------------------------------------

WELL_KNOWN = {
    "google.protobuf.Duration": "Duration",
    "google.protobuf.Timestamp": "Timestamp",
    "google.protobuf.Struct": "Struct",
    "google.protobuf.Value": "Value",
    "google.protobuf.FieldMask": "FieldMask",
    "google.protobuf.Any": "AnyMessage",
}
FD = descriptor_pb2.FieldDescriptorProto
SCALARS = {
    FD.TYPE_STRING: "str",
    FD.TYPE_BOOL: "bool",
    FD.TYPE_INT32: "int",
    FD.TYPE_SINT32: "int",
    FD.TYPE_SFIXED32: "int",
    FD.TYPE_UINT32: "int",
    FD.TYPE_FIXED32: "int",
    FD.TYPE_INT64: "Int64",
    FD.TYPE_SINT64: "Int64",
    FD.TYPE_SFIXED64: "Int64",
    FD.TYPE_UINT64: "Int64",
    FD.TYPE_FIXED64: "Int64",
    FD.TYPE_DOUBLE: "Double",
    FD.TYPE_FLOAT: "Float32",
    FD.TYPE_BYTES: "Bytes",
}
BASE_NAMES = [
    *("AnyMessage", "Behavior", "Bytes", "Double", "Duration", "FieldMask", "Float32", "Int64", "ProtoEnum"),
    *("ProtoModel", "Struct", "Timestamp", "Value", "field_", "resolve_forward_refs", "resource"),
]
RESERVED = set(dir(__import__("pydantic").BaseModel)) | set(keyword.kwlist) | {"oneofs"}


class Walk:
    """Every message and enum of the package, with a Python name each."""

    def __init__(self, fds: descriptor_pb2.FileDescriptorSet, package: str = PACKAGE, also: tuple[str, ...] = ()) -> None:
        """``also``: other packages whose messages the package's hold (v1beta's evaluation results: google.rpc)."""
        self.messages: dict[str, descriptor_pb2.DescriptorProto] = {}
        self.enums: dict[str, descriptor_pb2.EnumDescriptorProto] = {}
        self.order: list[str] = []
        self.parents: dict[str, list[str]] = {}
        for file in fds.file:
            if file.package != package and file.package not in also:
                continue
            for enum in file.enum_type:
                self.enums[f"{file.package}.{enum.name}"] = enum
                self.parents[f"{file.package}.{enum.name}"] = [enum.name]
            for msg in file.message_type:
                self._visit(file.package, msg, [msg.name])
        self.names = self._name_messages()
        self.enum_names = {fn: "".join(self.parents[fn]) for fn in self.enums}
        clash = set(self.names.values()) & set(self.enum_names.values())
        assert not clash, f"enum and message names clash: {clash}"

    def _visit(self, package: str, msg: descriptor_pb2.DescriptorProto, path: list[str]) -> None:
        full = f"{package}.{'.'.join(path)}"
        self.messages[full] = msg
        self.parents[full] = path
        if not msg.options.map_entry:
            self.order.append(full)
        for enum in msg.enum_type:
            self.enums[f"{full}.{enum.name}"] = enum
            self.parents[f"{full}.{enum.name}"] = [*path, enum.name]
        for nested in msg.nested_type:
            self._visit(package, nested, [*path, nested.name])

    def _name_messages(self) -> dict[str, str]:
        """Short names where unique (top-level messages win), else the chain of parents."""
        short: dict[str, list[str]] = {}
        for full in self.order:
            short.setdefault(self.parents[full][-1], []).append(full)
        names = {}
        for full in self.order:
            path = self.parents[full]
            holders = short[path[-1]]
            top_level = [h for h in holders if len(self.parents[h]) == 1]
            unique = len(holders) == 1 or (len(path) == 1 and top_level == [full])
            names[full] = path[-1] if unique else "".join(path)
        assert len(set(names.values())) == len(names), "message names clash"
        return names


def _enum_alias(walk: Walk, full: str) -> str:
    enum = walk.enums[full]
    values = [v.name for v in enum.value]
    numbers = {v.name: v.number for v in enum.value}
    literal = "Literal[" + ", ".join(json.dumps(v) for v in values) + "]"
    table = "" if list(numbers.values()) == list(range(len(values))) else repr(numbers)
    return f"{walk.enum_names[full]} = Annotated[{literal}, ProtoEnum({table})]"


def _type_of(walk: Walk, full_field: str, f: descriptor_pb2.FieldDescriptorProto) -> tuple[str, bool, bool]:
    """(python type of one value, repeated, map)."""
    if f.type == FD.TYPE_MESSAGE:
        target = f.type_name.lstrip(".")
        entry = walk.messages.get(target)
        if entry is not None and entry.options.map_entry:
            key, value = entry.field
            inner, _, _ = _type_of(walk, full_field, value)
            return f"dict[{SCALARS.get(key.type, 'str')}, {inner}]", False, True
        py = WELL_KNOWN.get(target) or walk.names[target]
    elif f.type == FD.TYPE_ENUM:
        py = walk.enum_names[f.type_name.lstrip(".")]
    else:
        py = SCALARS[f.type]
        if full_field in overlay.RESOURCE_FIELDS:
            py = overlay.RESOURCE_ALIASES[overlay.RESOURCE_FIELDS[full_field]]
    repeated = f.label == FD.LABEL_REPEATED
    return (f"list[{py}]" if repeated else py), repeated, False


def _field_line(walk: Walk, message: str, f: descriptor_pb2.FieldDescriptorProto, info: dict[str, Any]) -> str:
    full_field = f"{message}.{f.name}"
    py, _, _ = _type_of(walk, full_field, f)
    found = info.get("behaviors", [])
    if (message, f.json_name) in UNSET_ACCEPTED:
        found = [b for b in found if b != "REQUIRED"]
    behavior = next((b for b in ("IDENTIFIER", "OUTPUT_ONLY", "REQUIRED") if b in found), None)
    args = {"IDENTIFIER": ["ID"], "OUTPUT_ONLY": ["OUT"], "REQUIRED": ["R"]}.get(behavior or "", [])
    doc = info.get("doc", "")
    if (message, f.json_name) in UNSET_ACCEPTED:
        doc += " (CES accepts it unset: docs/field-behaviour.md, UNSET_ACCEPTED.)"
    if doc:
        args.append(_string(doc) if args else "doc=" + _string(doc))
    if f.proto3_optional:
        args.append("presence=True")
    if full_field in overlay.MAX_ITEMS:
        args.append(f"max_items={overlay.MAX_ITEMS[full_field]}")
    if full_field in overlay.RANGES:
        ge, le = overlay.RANGES[full_field]
        args += [f"ge={ge}", f"le={le}"]
    attr = f.json_name
    if attr in RESERVED:
        args.append(f"alias={json.dumps(attr)}")
        attr += "_"
    annotation = py if behavior == "REQUIRED" or py == "Value" else f"{py} | None"
    return f"    {attr}: {annotation} = field_({', '.join(args)})"


def _string(text: str) -> str:
    """A string literal, split into implicitly concatenated pieces that fit the line length."""
    pieces = textwrap.wrap(text, 96, drop_whitespace=False, replace_whitespace=False, break_long_words=True)
    return "\n".join(json.dumps(p, ensure_ascii=False) for p in pieces) if len(pieces) > 1 else json.dumps(text)


def _docstring(text: str, indent: str = "    ") -> str:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"') or "(undocumented)"
    paras = [textwrap.fill(p, 120 - len(indent), break_long_words=False, break_on_hyphens=False) for p in text.split("\n\n")]
    body = "\n\n".join(paras).replace("\n", "\n" + indent).replace("\n" + indent + "\n", "\n\n")
    return f'{indent}"""{body}\n{indent}"""' if "\n" in body else f'{indent}"""{body}"""'


def _held(walk: Walk, f: descriptor_pb2.FieldDescriptorProto) -> str | None:
    """The message of this package a field holds (a map's value), if any."""
    target = f.type_name.lstrip(".")
    entry = walk.messages.get(target) if f.type == FD.TYPE_MESSAGE else None
    if entry is not None and entry.options.map_entry:
        value = entry.field[1]
        target = value.type_name.lstrip(".") if value.type == FD.TYPE_MESSAGE else ""
        entry = walk.messages.get(target)
    return target if entry is not None else None


def held_by_resources(walk: Walk, roots: tuple[str, ...] = overlay.RESOURCE_MESSAGES) -> set[str]:
    """The resource messages cesync manages (overlay.RESOURCE_MESSAGES) and every message they hold."""
    found: set[str] = set()
    todo = list(roots)
    while todo:
        full = todo.pop()
        if full not in found:
            found.add(full)
            todo += [t for t in (_held(walk, f) for f in walk.messages[full].field) if t is not None]
    return found


def _header(facts: dict[str, Any], summary: str, more: list[str]) -> list[str]:
    return [
        f'"""{summary}',
        "",
        f"GENERATED by scripts/gen_api.py from the snapshot in cesync/api ({facts['source']} {facts['version']},",
        f"Google's discovery document revision {facts['discovery']['revision']}) and the overlay in",
        "cesync/models/overlay.py. Do not edit: change the overlay and regenerate.",
        *more,
        '"""',
        "",
    ]


def _class(walk: Walk, full: str, facts: dict[str, Any]) -> list[str]:
    msg = walk.messages[full]
    info = facts["messages"].get(full, {"doc": "", "fields": {}})
    out = ["", "", f"class {walk.names[full]}(ProtoModel):", _docstring(info["doc"]), f'    message_name = "{full}"']
    oneofs: dict[str, list[str]] = {}
    for f in msg.field:
        if f.HasField("oneof_index") and not f.proto3_optional:
            oneofs.setdefault(msg.oneof_decl[f.oneof_index].name, []).append(f.json_name)
    if oneofs:
        items = []
        for name, members in oneofs.items():
            required = f"{full}.{name}" in overlay.REQUIRED_ONEOFS
            items.append(f'"{name}": (({", ".join(json.dumps(m) for m in members)},), {required})')
        out.append(f"    oneofs = {{{', '.join(items)}}}")
    for f in msg.field:
        out.append(_field_line(walk, full, f, info["fields"].get(f.name, {})))
    for extra in overlay.EXTRA_FIELDS.get(full, []):
        alias = overlay.RESOURCE_ALIASES.get(overlay.RESOURCE_FIELDS.get(extra["field"], ""), "str")
        out.append(f"    {extra['name']}: {alias} | None = field_(doc={json.dumps(extra['doc'])})")
    return out


def _classes(walk: Walk, fulls: list[str], facts: dict[str, Any]) -> list[str]:
    """The classes of these messages, each after those of them its fields hold where no cycle
    prevents it; a field that names one not made yet (a cycle: Schema holds Schema) has its
    annotation quoted. Annotations are evaluated as the class is made, not kept as strings
    (no ``from __future__ import annotations``): pydantic then has no string to evaluate for each
    field, a third of the time each model class takes to make."""
    made = {full: _class(walk, full, facts) for full in fulls}
    local = {walk.names[full]: full for full in fulls}
    position = {full: i for i, full in enumerate(fulls)}
    ordered: list[str] = []
    seen: set[str] = set()

    def place(full: str) -> None:
        if full not in seen:
            seen.add(full)
            for name in sorted(_annotated(made[full]) & local.keys(), key=lambda n: position[local[n]]):
                place(local[name])
            ordered.append(full)

    for full in fulls:
        place(full)
    out: list[str] = []
    defined: set[str] = set()
    for full in ordered:
        for line in made[full]:
            m = _FIELD_LINE.match(line)
            if m and _names_in(m.group(2)) & (local.keys() - defined):
                line = f'{m.group(1)}"{m.group(2)}"{m.group(3)}'
            out.append(line)
        defined.add(walk.names[full])
    return out


_FIELD_LINE = re.compile(r"(    \w+: )(.*?)( = field_\(.*)", re.S)  # a field of _class: (indent and name, annotation, rest)


def _names_in(annotation: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", annotation))


def _annotated(lines: list[str]) -> set[str]:
    """The names the field annotations of these class lines use."""
    found: set[str] = set()
    for line in lines:
        m = _FIELD_LINE.match(line)
        if m:
            found |= _names_in(m.group(2))
    return found


def _base_import(names: set[str]) -> list[str]:
    return ["from .base import (", *[f"    {n}," for n in BASE_NAMES if n in names], ")"]


def _homes(walk: Walk) -> dict[str, Path]:
    """Each message a managed resource holds -> the module it is made in: its kind's when one kind
    alone holds it, msg_shared when several do. A kind that holds other kinds (AppVersion, a
    snapshot of the app) counts only for what no other kind holds. What a shared message holds is
    shared too, and what a kind's own holds is its kind's or shared: a kind's module imports from
    msg_shared alone (AppVersion's from every module)."""
    roots = overlay.RESOURCE_MESSAGES
    assert set(KIND_FILES) == set(roots), "give every kind of overlay.RESOURCE_MESSAGES its module in KIND_FILES"
    held = {r: held_by_resources(walk, (r,)) for r in roots}
    plain = [r for r in roots if not any(o != r and o in held[r] for o in roots)]
    homes: dict[str, Path] = {}
    for full in walk.order:
        holders = [r for r in plain if full in held[r]] or [r for r in roots if full in held[r]]
        if holders:
            homes[full] = SHARED_FILE if len(holders) > 1 else KIND_FILES[holders[0]]
    return homes


def _oneof_members(walk: Walk, oneof: str) -> tuple[str, ...]:
    """The JSON names of a oneof's members (``google.cloud.ces.v1.Tool.tool_type``), in field order."""
    message, _, name = oneof.rpartition(".")
    msg = walk.messages[message]
    index = [d.name for d in msg.oneof_decl].index(name)
    return tuple(f.json_name for f in msg.field if f.HasField("oneof_index") and f.oneof_index == index and not f.proto3_optional)


def _isort(name: str, *, cased: bool = False) -> tuple[int, str]:
    """ruff's order of imported names (case aside) and of __all__ (cased): constants, classes, the rest."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2), name if cased else name.lower()


def _imports_from(where: dict[str, Path], names: set[str], here: Path | None) -> list[str]:
    """``from .module import (...)`` of each name defined in another module than ``here``."""
    out = []
    for path in sorted({where[n] for n in names if n in where and where[n] != here}):
        mine = sorted((n for n in names if where.get(n) == path), key=_isort)
        out += [f"from .{path.stem} import (", *[f"    {n}," for n in mine], ")"]
    return out


def render_models(fds_bytes: bytes, facts_text: str) -> dict[Path, str]:
    """messages.py (where each message is made), msg_shared.py and one msg_KIND.py per managed kind
    (the resources cesync manages and what they hold: _homes), and other.py (the rest)."""
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(fds_bytes)
    facts = json.loads(facts_text)
    walk = Walk(fds)
    homes = _homes(walk)
    aliases = [_enum_alias(walk, full) for full in walk.enums]
    aliases += [f'{alias} = Annotated[str, resource("{kind}")]' for kind, alias in overlay.RESOURCE_ALIASES.items()]
    # Every name a module defines -> that module: messages, and the aliases (in msg_shared).
    where = {walk.names[full]: path for full, path in homes.items()}
    where |= {n: SHARED_FILE for n in [*walk.enum_names.values(), *overlay.RESOURCE_ALIASES.values()]}
    files: dict[Path, str] = {}
    for path in [SHARED_FILE, *KIND_FILES.values()]:
        mine = [full for full in walk.order if homes.get(full) == path]
        classes = _classes(walk, mine, facts)
        used = _annotated(classes)
        own = {"Behavior", "ProtoModel", "field_", "resolve_forward_refs"}
        if path == SHARED_FILE:
            summary = "The messages several of the resources cesync manages hold, and the enums' and names' types."
            head = [
                "from typing import Annotated, Literal",
                "",
                *_base_import(used | own | {"ProtoEnum", "resource"}),
                "",
                *aliases,
            ]
        else:
            kind = next(full for full, file in KIND_FILES.items() if file == path).rsplit(".", 1)[1]
            summary = f"The messages of the kind {kind} that no other kind holds ({kind} itself among them)."
            head = [*_base_import(used | own), *_imports_from(where, used, path)]
        more = [
            "",
            "Made on first use of one of them, through cesync.models.messages: a command builds",
            "the classes of the kinds it meets.",
        ]
        out = [
            *_header(facts, summary, more),
            *head,
            "",
            "R, OUT, ID = Behavior.REQUIRED, Behavior.OUTPUT_ONLY, Behavior.IDENTIFIER",
        ]
        files[path] = _format("\n".join([*out, *classes, "", "", "resolve_forward_refs(globals())", ""]))
    names = sorted(where)
    out = _header(
        facts,
        "Every message of ``google.cloud.ces.v1`` as a pydantic model, named like the REST JSON.",
        [
            "",
            "Here: where each is made. The resources cesync manages and every message they hold are in",
            "cesync.models.msg_*: a kind's own messages in its module (msg_tool...), those several kinds",
            "hold in msg_shared, each module imported on first use of one of its names through this one",
            "(``messages.Tool``), so that a command builds the classes of the kinds it meets. The API's",
            "other messages (requests, responses, sessions...) are in cesync.models.other, imported on",
            "first use of one of them the same way (``messages.SessionInput`` works).",
        ],
    )
    out += [
        "import importlib",
        "from typing import TYPE_CHECKING, Any",
        "",
        "if TYPE_CHECKING:",
        *[f"    {line}" for line in _imports_from(where, set(names), None)],
        "",
        "__all__ = [",
        *[f'    "{n}",' for n in sorted([*names, *overlay.ONEOF_TUPLES], key=lambda n: _isort(n, cased=True))],
        "]",
        "",
    ]
    for name, oneof in overlay.ONEOF_TUPLES.items():
        out.append(f"{name}: tuple[str, ...] = {_oneof_members(walk, oneof)!r}")
    out += [
        "",
        "# The names each module of this package makes.",
        "_MADE_IN: dict[str, tuple[str, ...]] = {",
        *[
            line
            for path in sorted(set(where.values()))
            for line in [f'    "{path.stem}": (', *[f'        "{n}",' for n in names if where[n] == path], "    ),"]
        ],
        "}",
        "_HOME = {name: module for module, made in _MADE_IN.items() for name in made}",
        "",
        "",
        "def __getattr__(name: str) -> Any:",
        '    """A message (or type) from the module it is made in, imported on first use; one no resource',
        '    holds from cesync.models.other."""',
        "    if name.startswith('__'):",
        "        raise AttributeError(name)",
        "    home = _HOME.get(name)",
        "    if home is not None:",
        "        value = getattr(importlib.import_module(f\"{__name__.rpartition('.')[0]}.{home}\"), name)",
        "        globals()[name] = value  # the next use finds it here, an attribute of this module",
        "        return value",
        "    from . import other",
        "",
        "    try:",
        "        return other.__dict__[name]",
        "    except KeyError:",
        '        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None',
        "",
    ]
    files = {MODELS_FILE: _format("\n".join(out)), **files}
    rest = _classes(walk, [full for full in walk.order if full not in homes], facts)
    used = _annotated(rest)
    other = _header(facts, "The messages of ``google.cloud.ces.v1`` that no resource cesync manages holds.", [])
    other += [
        *_base_import(used | {"Behavior", "ProtoModel", "field_"}),
        *_imports_from(where, used, None),
        "",
        "R, OUT, ID = Behavior.REQUIRED, Behavior.OUTPUT_ONLY, Behavior.IDENTIFIER",
        *rest,
        "",
    ]
    files[OTHER_FILE] = _format("\n".join(other))
    return files


def _format(source: str) -> str:
    ruff = Path(sys.executable).with_name("ruff")
    cmd = [str(ruff) if ruff.exists() else "ruff", "format", "--stdin-filename", str(MODELS_FILE), "-"]
    done = subprocess.run(cmd, input=source, capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"ruff format failed: {done.stderr}")
    return done.stdout


def render_beta_models(fds_bytes: bytes, facts_text: str) -> dict[Path, str]:
    """evaluations.py: the v1beta kinds (overlay.BETA_RESOURCE_MESSAGES) and every message they hold,
    as v1beta has them (its ToolCall, Message... are its own, beside v1's in messages.py)."""
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(fds_bytes)
    facts = json.loads(facts_text)
    walk = Walk(fds, BETA_PACKAGE, BETA_ALSO)
    eager = held_by_resources(walk, overlay.BETA_RESOURCE_MESSAGES)
    classes = _classes(walk, [full for full in walk.order if full in eager], facts)
    used = _annotated(classes)
    enums = [_enum_alias(walk, full) for full in walk.enums if walk.enum_names[full] in used]
    out = _header(
        facts,
        "The evaluation kinds of ``google.cloud.ces.v1beta`` and every message they hold, as pydantic models.",
        ["", "Only v1beta has these kinds: cesync reads and writes them on the v1beta surface."],
    )
    out += [
        "from typing import Annotated, Literal" if enums else "",
        "",
        *_base_import(used | {"Behavior", "ProtoModel", "field_", "resolve_forward_refs"} | ({"ProtoEnum"} if enums else set())),
        "",
        "R, OUT, ID = Behavior.REQUIRED, Behavior.OUTPUT_ONLY, Behavior.IDENTIFIER",
        "",
        *enums,
        *classes,
        "",
        "",
        "resolve_forward_refs(globals())",
        "",
    ]
    return {BETA_MODELS_FILE: _format("\n".join(out))}


def outputs() -> dict[Path, bytes]:
    fds_bytes, facts_text = extract()
    beta_bytes, beta_facts = extract_beta()
    return {
        DESCRIPTOR_FILE: fds_bytes,
        FACTS_FILE: facts_text.encode(),
        BETA_FILE: beta_bytes,
        BETA_FACTS_FILE: beta_facts.encode(),
        **{path: text.encode() for path, text in render_models(fds_bytes, facts_text).items()},
        **{path: text.encode() for path, text in render_beta_models(beta_bytes, beta_facts).items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated file is not current")
    parser.add_argument("--bump", action="store_true", help="upgrade the two source packages, pin them, regenerate")
    args = parser.parse_args(argv)
    if args.bump:
        return bump()
    stale = []
    for path, data in outputs().items():
        if path.exists() and path.read_bytes() == data:
            continue
        stale.append(path.relative_to(ROOT))
        if not args.check:
            path.write_bytes(data)
    verb = "stale" if args.check else "written"
    for path in stale:
        print(f"{verb}: {path}")
    # What is rendered from the models: in processes of their own, which import the models just written.
    for command in DERIVED:
        done = subprocess.run([sys.executable, *command, *(["--check"] if args.check else [])], cwd=ROOT, check=False)
        if done.returncode != 0:
            stale.append(Path(command[-1]))
    if args.check and stale:
        print("run: python scripts/gen_api.py", file=sys.stderr)
        return 1
    return 0


# The editors' JSON Schemas (schemas/) and the behaviour page's tables (docs/field-behaviour.md).
DERIVED = (("-m", "cesync.cli", "schema", "--out", "schemas"), ("scripts/gen_behaviour_docs.py",))


def bump() -> int:
    """Upgrade both packages, pin what was installed in pyproject.toml, regenerate (one command)."""
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--upgrade", *PINS]
    if subprocess.run(pip, check=False).returncode != 0:
        return 1
    text = PYPROJECT.read_text(encoding="utf-8")
    for package in PINS:
        version = subprocess.run(
            [sys.executable, "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        text, count = re.subn(rf'"{re.escape(package)}==[^"]*"', f'"{package}=={version}"', text)
        if count != 1:
            raise SystemExit(f"pyproject.toml pins {package} {count} times; it must pin it once")
        print(f"pinned: {package}=={version}")
    PYPROJECT.write_text(text, encoding="utf-8")
    return subprocess.run([sys.executable, __file__], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())

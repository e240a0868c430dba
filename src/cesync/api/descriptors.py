"""The CES API as published, from a checked-in snapshot of ``google.cloud.ces.v1`` (and v1beta's part).

``ces_v1.binpb`` is a serialized ``FileDescriptorSet`` of the package and its
dependencies; ``ces_v1.json`` holds what the descriptors cannot carry: each
field's behaviour (REQUIRED, OPTIONAL, OUTPUT_ONLY, IDENTIFIER, INPUT_ONLY) and
documentation, parsed from the ``google-cloud-ces`` docstrings, and the package
version both came from. ``ces_v1beta.binpb`` and ``ces_v1beta.json`` are the same of
the v1beta files that hold what only v1beta has: the App's evaluation fields and the
evaluation kinds (Evaluation, EvaluationDataset, EvaluationExpectation,
ScheduledEvaluationRun) with their service. ``scripts/gen_api.py`` regenerates them.
One pool holds both packages (their files have different names; shared dependencies
are added once), so a message is found by its full name in either.

A newer discovery document than the bundled one (a repo's, or the live service's) is merged in
the same way by :func:`use_documents`, for cesync and the emulator alike.

This module needs only ``protobuf``: the emulator reads the API from here and
nothing from cesync's own models.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # protobuf loads on first use of a descriptor: validate of a valid repo needs only the facts
    from google.protobuf import descriptor_pb2, descriptor_pool
    from google.protobuf.descriptor import Descriptor, FieldDescriptor
    from google.protobuf.message import Message

__all__ = [
    "BEHAVIORS_FILE",
    "BETA_BEHAVIORS_FILE",
    "BETA_FILE",
    "BETA_PACKAGE",
    "DESCRIPTOR_FILE",
    "PACKAGE",
    "behaviors",
    "beta_app_class",
    "beta_only_app_fields",
    "beta_pool",
    "canonical_value",
    "description_id",
    "facts",
    "field_facts",
    "fields_of",
    "file_set",
    "is_newer",
    "message",
    "message_class",
    "newer_documents",
    "on_change",
    "package_of",
    "pool",
    "removed",
    "revision",
    "short_name",
    "use_documents",
]

PACKAGE = "google.cloud.ces.v1"
HERE = Path(__file__).parent
DESCRIPTOR_FILE = HERE / "ces_v1.binpb"
BEHAVIORS_FILE = HERE / "ces_v1.json"


BETA_PACKAGE = "google.cloud.ces.v1beta"
BETA_FILE = HERE / "ces_v1beta.binpb"  # v1beta's app, evaluation and evaluation_service files (scripts/gen_api.py)
BETA_BEHAVIORS_FILE = HERE / "ces_v1beta.json"


@cache
def file_set() -> descriptor_pb2.FileDescriptorSet:
    from google.protobuf import descriptor_pb2

    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(DESCRIPTOR_FILE.read_bytes())
    return fds


@cache
def beta_file_set() -> descriptor_pb2.FileDescriptorSet:
    from google.protobuf import descriptor_pb2

    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(BETA_FILE.read_bytes())
    return fds


# Discovery documents newer than the bundled description (use_documents): "v1"/"v1beta" -> document.
_newer: dict[str, dict[str, Any]] = {}
_on_change: list[Callable[[], None]] = []


def is_revision(value: object) -> bool:
    """Whether ``value`` is a discovery document's revision: a date of ASCII digits (20261016).
    str.isdigit would take "²", which int() refuses, and 5,000 digits, past int()'s limit."""
    return isinstance(value, str) and re.fullmatch(r"[0-9]{8,14}", value) is not None


def use_documents(documents: Mapping[str, dict[str, Any]]) -> None:
    """From now on, the description is the bundled one with these discovery documents merged in
    ("v1" -> Google's ``ces.v1.json`` of a newer revision, "v1beta" -> ``ces.v1beta.json``), as
    scripts/gen_api.py merges the installed ones; ``{}`` goes back to the bundled one. cesync (the
    repo's ``api.discovery`` or the live document, cesync.repo.apidescription) and the emulator
    (``cesync emulator --api-description``) both read the API from here, so they agree on it.
    ValueError when a document is not Google's discovery document for CES of that version."""
    for version, doc in documents.items():
        if version not in ("v1", "v1beta"):
            raise ValueError(f"a discovery document is for v1 or v1beta, not {version!r}")
        if doc.get("name") != "ces" or doc.get("version") != version or not isinstance(doc.get("schemas"), dict):
            raise ValueError(f"not Google's discovery document for CES {version} (its name, version or schemas are not CES's)")
        if not is_revision(doc.get("revision")):
            raise ValueError("the discovery document has no revision (a date such as 20261016)")
    if dict(documents) == _newer:
        return  # the description in use: its pool (and what holds its descriptors) stays
    before = dict(_newer)
    _switch(documents)
    try:
        pool()  # merged and built now: a document that cannot be merged is refused here, not on first use
    except (RecursionError, ValueError, TypeError, AttributeError, KeyError) as exc:  # the document is data
        _switch(before)
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).splitlines()[0][:200]
        raise ValueError(f"the discovery document cannot be merged into cesync's description: {why}") from None


def _switch(documents: Mapping[str, dict[str, Any]]) -> None:
    _newer.clear()
    _newer.update(documents)
    caches = (_description, description_id, pool, beta_app_class, beta_only_app_fields, facts, message_class, fields_of, _removed)
    for cached in caches:
        cached.cache_clear()
    for hook in _on_change:
        hook()


def on_change(hook: Callable[[], None]) -> None:
    """Call ``hook`` whenever use_documents changes the description (a module's caches of it)."""
    _on_change.append(hook)


_unavailable: list[str] = []  # why the newer description asked for could not be had (empty: none asked, or had)


def note_unavailable(reason: str | None) -> None:
    """Remember why a newer description could not be had (cesync.repo.apidescription's live fetch),
    for the problem of each field the description lacks to say; None forgets it."""
    _unavailable[:] = [reason] if reason else []


def unavailable() -> str | None:
    """Why the last newer description asked for could not be had, or None."""
    return _unavailable[0] if _unavailable else None


def is_newer() -> bool:
    """Whether use_documents merged a newer document in."""
    return bool(_newer)


def newer_documents() -> dict[str, dict[str, Any]]:
    """The documents use_documents merged in (empty: the bundled description)."""
    return dict(_newer)


@cache
def _description() -> tuple[descriptor_pb2.FileDescriptorSet, descriptor_pb2.FileDescriptorSet, dict[str, Any], dict[str, Any]]:
    """(v1 files, v1beta files, v1 facts, v1beta facts) of the description in use."""
    from . import discoverydoc

    v1_facts, beta_facts = _bundled_facts()
    v1, beta = file_set(), beta_file_set()
    if "v1" in _newer:
        v1, v1_facts, _ = discoverydoc.merge(v1, v1_facts, _newer["v1"], PACKAGE)
        v1_facts["discovery"] = {**v1_facts["discovery"], "document": "newer", "revision": str(_newer["v1"]["revision"])}
    if "v1beta" in _newer:
        beta, beta_facts, _ = discoverydoc.merge(beta, beta_facts, _newer["v1beta"], BETA_PACKAGE)
    elif "v1" in _newer:
        # v1beta repeats v1's messages (the emulator serves apps through v1beta's App): v1's newer fields
        # and values are theirs too; what v1 lacks of v1beta's own is not dropped (a partial merge).
        beta, beta_facts, _ = discoverydoc.merge(beta, beta_facts, _newer["v1"], BETA_PACKAGE, source="v1")
    return v1, beta, v1_facts, beta_facts


def _bundled_facts() -> tuple[dict[str, Any], dict[str, Any]]:
    """(v1 facts, v1beta facts) of the bundled description, read anew (callers keep their own)."""
    v1_facts: dict[str, Any] = json.loads(BEHAVIORS_FILE.read_text(encoding="utf-8"))
    beta_facts: dict[str, Any] = json.loads(BETA_BEHAVIORS_FILE.read_text(encoding="utf-8"))
    return v1_facts, beta_facts


@cache
def pool() -> descriptor_pool.DescriptorPool:
    """A pool of its own, so the snapshot never meets the package's registrations."""
    from google.protobuf import descriptor_pool

    built = descriptor_pool.DescriptorPool()
    added: set[str] = set()
    v1, beta, _, _ = _description()
    for file in (*v1.file, *beta.file):  # each stored in dependency order
        if file.name in added:  # google/protobuf/*, google/rpc/status.proto: in both
            continue
        added.add(file.name)
        built.AddSerializedFile(file.SerializeToString())
    return built


def beta_pool() -> descriptor_pool.DescriptorPool:
    """The pool that holds v1beta's messages (the same one as v1's)."""
    return pool()


@cache
def beta_app_class() -> type[Message]:
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(beta_pool().FindMessageTypeByName(f"{BETA_PACKAGE}.App"))


@cache
def beta_only_app_fields() -> dict[str, str]:
    """The fields v1beta's App has and v1's lacks, by JSON name and by proto name -> JSON name."""
    v1 = {f.name for f in message(f"{PACKAGE}.App").fields}
    out: dict[str, str] = {}
    for f in beta_app_class().DESCRIPTOR.fields:
        if f.name not in v1:
            out[f.json_name] = out[f.name] = f.json_name
    return out


@cache
def facts() -> dict[str, Any]:
    """Both snapshots' facts: ``messages`` by full name (v1's and v1beta's), ``version`` of the package,
    ``discovery`` (the document's ``revision``), with any newer document's merged in (use_documents)."""
    # The bundled facts need no descriptor: one is parsed only to merge a newer document in.
    v1, beta = _description()[2:] if _newer else _bundled_facts()
    data = dict(v1)
    data["messages"] = {**v1["messages"], **beta["messages"]}
    return data


def package_of(full_name: str) -> str:
    """The API package of a message's full name (v1beta's or v1's)."""
    return BETA_PACKAGE if full_name.startswith(BETA_PACKAGE + ".") else PACKAGE


def short_name(full_name: str) -> str:
    """A message's name inside its package: ``Evaluation.Golden``."""
    return full_name.removeprefix(package_of(full_name) + ".")


def message(full_name: str) -> Descriptor:
    return pool().FindMessageTypeByName(full_name)


@cache
def message_class(full_name: str) -> type[Message]:
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(message(full_name))


def behaviors(message_name: str, field: str) -> tuple[str, ...]:
    """The behaviours of ``message_name.field`` (proto names) as the docstrings state them."""
    entry = facts()["messages"].get(message_name, {}).get("fields", {}).get(field, {})
    return tuple(entry.get("behaviors", ()))


def revision() -> str:
    """The revision of Google's discovery document the description holds (``20261016``)."""
    return str(facts().get("discovery", {}).get("revision", ""))


@cache
def description_id() -> bytes:
    """Names the description in use, for what is cached by it (a render, a comparison): the
    bundled revision, and a digest of the documents merged in, if any."""
    import hashlib

    merged = json.dumps(_newer, sort_keys=True).encode() if _newer else b""
    return f"{revision()}:".encode() + hashlib.blake2b(merged, digest_size=16).digest()


def field_facts(message_name: str, json_name: str) -> dict[str, Any]:
    """What the description says of ``message_name``'s field ``json_name``: behaviours, doc,
    source and revision, and ``removed`` (the revision whose document dropped it), or {}."""
    try:
        desc = message(message_name)
    except KeyError:
        return {}
    proto = next((f.name for f in desc.fields if f.json_name == json_name), None)
    entry: dict[str, Any] = facts()["messages"].get(message_name, {}).get("fields", {}).get(proto, {})
    return entry


def removed(message_name: str, json_name: str) -> str | None:
    """The revision of the discovery document that dropped this field, or None while the API has it."""
    return _removed(message_name).get(json_name)


@cache
def _removed(message_name: str) -> dict[str, str]:
    """JSON name -> revision of every field of the message a discovery document dropped (lint asks
    per field). The descriptor, for the JSON names, only of a message that lost a field."""
    said = facts()["messages"].get(message_name, {}).get("fields", {})
    dropped = {proto: str(entry["removed"]) for proto, entry in said.items() if entry.get("removed")}
    if not dropped:
        return {}
    json_names = {f.name: f.json_name for f in message(message_name).fields}
    return {json_names.get(proto, proto): revision for proto, revision in dropped.items()}


@cache
def fields_of(message_name: str) -> dict[str, FieldDescriptor]:
    """The fields of a message of the description, by JSON name ({} for a message it lacks)."""
    try:
        return {f.json_name: f for f in message(message_name).fields}
    except KeyError:
        return {}


def canonical_value(message_name: str, json_name: str, value: Any) -> tuple[Any, str | None]:
    """``value`` of the field as the API prints it (protobuf's JSON: an int64 as text, an enum by
    name, a default left out: ``None``), or (None, why) when the field cannot hold it."""
    from google.protobuf import json_format

    try:
        parsed = json_format.ParseDict({json_name: value}, message_class(message_name)())
    except (json_format.ParseError, KeyError, TypeError, ValueError) as exc:
        return None, str(exc).split(" at ")[0][:300]
    printed = json_format.MessageToDict(parsed)
    return printed.get(json_name), None

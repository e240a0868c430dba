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

This module needs only ``protobuf``: the emulator reads the API from here and
nothing from cesync's own models.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor
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
    "facts",
    "field_facts",
    "file_set",
    "message",
    "message_class",
    "package_of",
    "pool",
    "removed",
    "revision",
    "short_name",
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
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(DESCRIPTOR_FILE.read_bytes())
    return fds


@cache
def beta_file_set() -> descriptor_pb2.FileDescriptorSet:
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(BETA_FILE.read_bytes())
    return fds


@cache
def pool() -> descriptor_pool.DescriptorPool:
    """A pool of its own, so the snapshot never meets the package's registrations."""
    built = descriptor_pool.DescriptorPool()
    added: set[str] = set()
    for file in (*file_set().file, *beta_file_set().file):  # each stored in dependency order
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
    """Both snapshots' facts: ``messages`` by full name (v1's and v1beta's), ``version`` of the package."""
    data: dict[str, Any] = json.loads(BEHAVIORS_FILE.read_text(encoding="utf-8"))
    beta: dict[str, Any] = json.loads(BETA_BEHAVIORS_FILE.read_text(encoding="utf-8"))
    data["messages"] = {**data["messages"], **beta["messages"]}
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
    return message_factory.GetMessageClass(message(full_name))


def behaviors(message_name: str, field: str) -> tuple[str, ...]:
    """The behaviours of ``message_name.field`` (proto names) as the docstrings state them."""
    entry = facts()["messages"].get(message_name, {}).get("fields", {}).get(field, {})
    return tuple(entry.get("behaviors", ()))


def revision() -> str:
    """The revision of Google's discovery document the description holds (``20261016``)."""
    return str(facts().get("discovery", {}).get("revision", ""))


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
    gone = field_facts(message_name, json_name).get("removed")
    return str(gone) if gone else None

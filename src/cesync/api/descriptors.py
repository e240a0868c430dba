"""The CES v1 API as published, from a checked-in snapshot of ``google.cloud.ces.v1``.

``ces_v1.binpb`` is a serialized ``FileDescriptorSet`` of the package and its
dependencies; ``ces_v1.json`` holds what the descriptors cannot carry: each
field's behaviour (REQUIRED, OPTIONAL, OUTPUT_ONLY, IDENTIFIER, INPUT_ONLY) and
documentation, parsed from the ``google-cloud-ces`` docstrings, and the package
version both came from. ``scripts/gen_api.py`` regenerates them.

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
    "BETA_APP_FILE",
    "BETA_PACKAGE",
    "DESCRIPTOR_FILE",
    "PACKAGE",
    "behaviors",
    "beta_app_class",
    "beta_only_app_fields",
    "beta_pool",
    "facts",
    "file_set",
    "message",
    "message_class",
    "pool",
]

PACKAGE = "google.cloud.ces.v1"
HERE = Path(__file__).parent
DESCRIPTOR_FILE = HERE / "ces_v1.binpb"
BEHAVIORS_FILE = HERE / "ces_v1.json"


@cache
def file_set() -> descriptor_pb2.FileDescriptorSet:
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(DESCRIPTOR_FILE.read_bytes())
    return fds


# Fields the API reference pages document that the package lacks (the models add them
# through cesync/models/overlay.py): message -> (proto name, JSON name) of string fields.
SEED_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {f"{PACKAGE}.AgentTool": (("agent", "agent"),)}


@cache
def pool() -> descriptor_pool.DescriptorPool:
    """A pool of its own, so the snapshot never meets the package's registrations; seed fields added."""
    built = descriptor_pool.DescriptorPool()
    for file in file_set().file:  # stored in dependency order
        patched = descriptor_pb2.FileDescriptorProto()
        patched.CopyFrom(file)
        for msg in patched.message_type:
            for name, json_name in SEED_FIELDS.get(f"{patched.package}.{msg.name}", ()):
                number = max(f.number for f in msg.field) + 1
                msg.field.add(name=name, json_name=json_name, number=number, type=9, label=1)  # optional string
        built.AddSerializedFile(patched.SerializeToString())
    return built


BETA_PACKAGE = "google.cloud.ces.v1beta"
BETA_APP_FILE = HERE / "ces_v1beta_app.binpb"  # v1beta's app.proto and its dependencies (scripts/gen_api.py)


@cache
def beta_pool() -> descriptor_pool.DescriptorPool:
    """v1beta's App and the messages it holds, in a pool of their own."""
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(BETA_APP_FILE.read_bytes())
    built = descriptor_pool.DescriptorPool()
    for file in fds.file:  # stored in dependency order
        built.AddSerializedFile(file.SerializeToString())
    return built


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
    data: dict[str, Any] = json.loads(BEHAVIORS_FILE.read_text(encoding="utf-8"))
    return data


def message(full_name: str) -> Descriptor:
    return pool().FindMessageTypeByName(full_name)


@cache
def message_class(full_name: str) -> type[Message]:
    return message_factory.GetMessageClass(message(full_name))


def behaviors(message_name: str, field: str) -> tuple[str, ...]:
    """The behaviours of ``message_name.field`` (proto names) as the docstrings state them."""
    entry = facts()["messages"].get(message_name, {}).get("fields", {}).get(field, {})
    return tuple(entry.get("behaviors", ()))

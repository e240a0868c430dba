"""The API description against Google's discovery documents: nothing the installed document has is
missing, every field says where it came from, and the merge itself keeps what a document states."""

from __future__ import annotations

import importlib.resources
import json
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.api import descriptors, discoverydoc
from cesync.models import overlay

VERSIONS = {"v1": (descriptors.PACKAGE, descriptors.file_set), "v1beta": (descriptors.BETA_PACKAGE, descriptors.beta_file_set)}
# The resources a repo writes: the schemas whose properties (and what they hold) are config fields.
CONFIG_ROOTS = {
    "v1": tuple(m.rsplit(".", 1)[1] for m in overlay.RESOURCE_MESSAGES),
    "v1beta": tuple(m.rsplit(".", 1)[1] for m in overlay.BETA_RESOURCE_MESSAGES),
}


def installed(version: str) -> dict[str, Any]:
    path = importlib.resources.files("googleapiclient") / "discovery_cache" / "documents" / f"ces.{version}.json"
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def _facts(version: str) -> dict[str, Any]:
    path = descriptors.BEHAVIORS_FILE if version == "v1" else descriptors.BETA_BEHAVIORS_FILE
    facts: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return facts


@pytest.mark.parametrize("version", sorted(VERSIONS))
def test_the_installed_discovery_document_adds_nothing_to_the_description(version: str) -> None:
    """A newer google-api-python-client whose document has a field, enum value or method the
    description lacks fails here: run `python scripts/gen_api.py` (or --bump)."""
    package, file_set = VERSIONS[version]
    doc = installed(version)
    _, facts, merged = discoverydoc.merge(file_set(), _facts(version), doc, package)
    assert merged.fields == [] and merged.messages == [] and merged.enum_values == [], "run python scripts/gen_api.py"
    assert facts["methods"] == _facts(version)["methods"]
    assert _facts(version)["discovery"]["revision"] == doc["revision"]


@pytest.mark.parametrize("version", sorted(VERSIONS))
def test_every_config_field_of_the_document_is_in_the_description(version: str) -> None:
    """Walked from the document's side: each property the resource schemas hold, through $refs,
    is a field of the description's message for that schema."""
    package, _ = VERSIONS[version]
    doc = installed(version)
    wanted = discoverydoc.config_fields(doc, CONFIG_ROOTS[version])
    assert len(wanted) > 300
    found: set[str] = set()
    todo = [(descriptors.message(f"{package}.{root}"), root) for root in CONFIG_ROOTS[version]]
    seen: set[str] = set()
    while todo:
        desc, schema_id = todo.pop()
        if schema_id in seen:
            continue
        seen.add(schema_id)
        props = doc["schemas"][schema_id].get("properties", {})
        for f in desc.fields:
            if f.json_name not in props:
                continue
            found.add(f"{schema_id}.{f.json_name}")
            prop = props[f.json_name]
            prop = prop.get("items") or prop.get("additionalProperties") or prop
            target = f.message_type
            if target is not None and target.GetOptions().map_entry:
                target = target.fields_by_name["value"].message_type
            if target is not None and isinstance(prop, dict) and "$ref" in prop:
                todo.append((target, prop["$ref"]))
    assert sorted(wanted - found) == []


def test_every_field_records_its_source_and_the_document_fields_their_revision() -> None:
    for version in VERSIONS:
        facts = _facts(version)
        revision = facts["discovery"]["revision"]
        assert facts["discovery"]["source"] == "google-api-python-client"
        for message, entry in facts["messages"].items():
            for name, field in entry["fields"].items():
                assert field.get("source") in ("proto", "discovery", "seeds"), f"{message}.{name}"
                if field["source"] == "discovery":
                    assert field["revision"] == revision


def test_the_findings_fields_are_in_the_description_with_their_source() -> None:
    """Finding 1's newer fields and enum values, finding 3's behaviour, the seeds' targetApp."""
    v1 = descriptors.PACKAGE
    newer = {
        "ModelSettings": "thinking_level",
        "Deployment": "model_settings",
        "Guardrail": "supervisor",
        "RemoteAgentTool": "api_authentication",
        "Guardrail.ContentFilter": "sensitive_words_exemptions",
        "ToolResponse": "parent_tool_call_id",
    }
    for message, field in newer.items():
        entry = descriptors.facts()["messages"][f"{v1}.{message}"]["fields"][field]
        assert (entry["source"], entry["revision"]) == ("discovery", "20261016")
    enum = descriptors.message(f"{v1}.Guardrail.ContentFilter").fields_by_name["match_type"].enum_type
    assert "SENSITIVE_WORDS" in enum.values_by_name
    for credentials in ("WhatsAppCredentials", "InstagramCredentials"):
        said = descriptors.behaviors(f"{v1}.{credentials}", "conversation_profile_id")
        assert "REQUIRED" not in said and "OPTIONAL" in said
    assert descriptors.facts()["messages"][f"{v1}.AgentTool"]["fields"]["root_agent"]["removed"] == "20261016"
    for message in ("ToolCall", "ToolResponse"):
        for package in (v1, descriptors.BETA_PACKAGE):
            field = descriptors.facts()["messages"].get(f"{package}.{message}", {"fields": {}})["fields"].get("target_app")
            assert field is None or field["source"] == "seeds"
            assert "target_app" in descriptors.message(f"{package}.{message}").fields_by_name


def test_the_methods_and_their_query_parameters_are_recorded() -> None:
    methods = _facts("v1")["methods"]
    patch = methods["ces.projects.locations.apps.versions.patch"]
    assert patch["httpMethod"] == "PATCH" and "updateMask" in patch["parameters"]
    listing = methods["ces.projects.locations.apps.changelogs.list"]
    assert {"filter", "orderBy", "pageSize", "pageToken"} <= set(listing["parameters"])


# --- the merge, on generated documents -----------------------------------------------------

NAME = st.from_regex(r"[a-z][a-zA-Z0-9]{0,12}", fullmatch=True)
SCALAR = st.sampled_from(
    [
        ({"type": "string"}, "text"),
        ({"type": "boolean"}, True),
        ({"type": "integer", "format": "int32"}, 7),
        ({"type": "number", "format": "double"}, 1.5),
        ({"type": "string", "format": "int64"}, "12"),
        ({"type": "string", "format": "google-duration"}, "3s"),
        ({"type": "string", "enum": ["X_UNSPECIFIED", "ONE", "TWO"]}, "TWO"),
        ({"type": "object", "additionalProperties": {"type": "string"}}, {"k": "v"}),
        ({"type": "object", "additionalProperties": {"type": "any", "description": "Properties of the object."}}, {"a": [1]}),
        ({"type": "array", "items": {"type": "string"}}, ["a", "b"]),
        ({"$ref": "Fresh"}, {"inner": "x"}),
        ({"type": "array", "items": {"$ref": "ModelSettings"}}, [{"model": "m"}]),
    ]
)


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(NAME, SCALAR, min_size=1, max_size=5), st.sampled_from(["Output only. ", "Optional. ", "Required. ", ""]))
def test_a_merged_field_parses_and_prints_as_the_document_types_it(new: dict[str, Any], said: str) -> None:
    """Whatever properties a document adds to a message (scalars, enums, maps, Struct, lists, a schema
    the protos never had, a message they have), the merged pool reads and prints them as JSON,
    and the facts carry the stated behaviour."""
    package = descriptors.PACKAGE
    known = {f.json_name for f in descriptors.message(f"{package}.ModelSettings").fields}
    new = {k: v for k, v in new.items() if k not in known}
    doc = installed("v1")
    schemas = dict(doc["schemas"])
    props = dict(schemas["ModelSettings"]["properties"])
    for name, (prop, _) in new.items():
        props[name] = {**prop, "description": f"{said}The {name}."}
    schemas["ModelSettings"] = {**schemas["ModelSettings"], "properties": props}
    schemas["Fresh"] = {"id": "Fresh", "type": "object", "properties": {"inner": {"type": "string"}}}
    doc = {**doc, "schemas": schemas, "revision": "29990101"}
    fds, facts, merged = discoverydoc.merge(descriptors.file_set(), _facts("v1"), doc, package)
    assert sorted(f.split(".", 1)[1] for f in merged.fields if f.startswith("ModelSettings.")) == sorted(new)
    pool = descriptor_pool.DescriptorPool()
    for file in fds.file:
        pool.AddSerializedFile(file.SerializeToString())
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.ModelSettings"))
    value = {name: example for name, (_, example) in new.items()}
    printed = json_format.MessageToDict(json_format.ParseDict(value, cls()))
    assert printed == value
    fields = facts["messages"][f"{package}.ModelSettings"]["fields"]
    for name in new:
        entry = fields[discoverydoc.snake(name)]
        assert (entry["source"], entry["revision"]) == ("discovery", "29990101")
        assert entry["behaviors"] == discoverydoc.behaviors_of(said)


def test_a_field_the_document_dropped_is_kept_and_recorded_as_removed() -> None:
    doc = installed("v1")
    schemas = dict(doc["schemas"])
    props = {k: v for k, v in schemas["ModelSettings"]["properties"].items() if k != "temperature"}
    schemas["ModelSettings"] = {**schemas["ModelSettings"], "properties": props}
    fds, facts, merged = discoverydoc.merge(
        descriptors.file_set(), _facts("v1"), {**doc, "schemas": schemas}, descriptors.PACKAGE
    )
    assert "ModelSettings.temperature" in merged.removed
    assert facts["messages"][f"{descriptors.PACKAGE}.ModelSettings"]["fields"]["temperature"]["removed"] == doc["revision"]
    names = {f.name for file in fds.file for m in file.message_type if m.name == "ModelSettings" for f in m.field}
    assert "temperature" in names


def test_the_merge_leaves_its_inputs_alone() -> None:
    before = descriptor_pb2.FileDescriptorSet()
    before.CopyFrom(descriptors.file_set())
    facts = _facts("v1")
    discoverydoc.merge(descriptors.file_set(), facts, {"revision": "1", "schemas": {"ModelSettings": {"properties": {}}}}, "x")
    assert descriptors.file_set() == before and facts == _facts("v1")


# --- a document is data: whatever it holds, it is merged or refused ----------------------------

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
PROPERTY = st.one_of(
    JSONISH,
    st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "object", "array", "any", "nope"])},
        optional={"$ref": st.text(max_size=12), "enum": JSONISH, "items": JSONISH, "additionalProperties": JSONISH},
    ),
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(max_size=12), PROPERTY, max_size=4), st.dictionaries(st.text(max_size=12), JSONISH, max_size=2))
def test_any_document_is_merged_or_refused_with_a_value_error(props: dict[str, Any], schemas: dict[str, Any]) -> None:
    doc = {"name": "ces", "version": "v1", "revision": "29990101", "schemas": {"ModelSettings": {"properties": props}, **schemas}}
    try:
        descriptors.use_documents({"v1": doc})
    except ValueError as exc:
        assert "cannot be merged" in str(exc) or "discovery document" in str(exc)
    finally:
        descriptors.use_documents({})
    assert descriptors.revision() == "20261016"


# --- a big document costs time in proportion to its size, never more ---------------------------

BIG = 30_000  # 30 times what rev 20261016 adds to the protos in either document


def _many(kind: str) -> dict[str, Any]:
    doc = installed("v1")
    schemas = dict(doc["schemas"])
    settings_props = dict(schemas["ModelSettings"]["properties"])
    if kind == "enum values":
        level = dict(settings_props["thinkingLevel"])
        level["enum"] = [*level["enum"], *(f"LEVEL_{i}" for i in range(BIG))]
        settings_props["thinkingLevel"] = level
    elif kind == "fields":
        settings_props.update({f"zz{i}": {"type": "string"} for i in range(BIG)})
    elif kind == "enum fields":
        settings_props.update({f"zz{i}": {"type": "string", "enum": ["A_UNSPECIFIED", f"V{i}"]} for i in range(BIG // 3)})
    else:  # new schemas, each referred to once, each with a field
        settings_props.update({f"zz{i}": {"$ref": f"Fresh{i}"} for i in range(2 * BIG)})
        fresh = {"properties": {"inner": {"type": "string"}}, "type": "object"}
        schemas.update({f"Fresh{i}": {"id": f"Fresh{i}", **fresh} for i in range(2 * BIG)})
    schemas["ModelSettings"] = {**schemas["ModelSettings"], "properties": settings_props}
    return {**doc, "schemas": schemas, "revision": "29990101"}


@pytest.mark.parametrize("kind", ["enum values", "fields", "enum fields", "schemas"])
def test_a_document_with_many_additions_merges_in_linear_time(kind: str) -> None:
    """A named document is the repo's: 20,000 enum values made validate run past two minutes (each
    value's number was the max of all before it), as did many fields and new schemas. Linear, each
    kind merges in about a second; quadratic, in many minutes: the bound is far from both."""
    import time

    doc = _many(kind)
    started = time.perf_counter()
    _, _, merged = discoverydoc.merge(descriptors.file_set(), _facts("v1"), doc, descriptors.PACKAGE)
    assert time.perf_counter() - started < 30
    assert len(merged.fields) + len(merged.enum_values) >= BIG // 3

"""Field behaviour: how CES treats each field, every rule in one table with its source.

This is the one place cesync (validate, normalize, diff, plan, apply, export, pull) and
the emulator learn how the service treats a field or a kind. Nothing else decides it:
a module that needs to know asks here.

The table has two parts:

* **Descriptor rules**, read from the checked-in snapshot (:mod:`.descriptors`,
  ``ces_v1.json``): the ``google.api.field_behavior`` annotations REQUIRED,
  OUTPUT_ONLY, INPUT_ONLY, IMMUTABLE and IDENTIFIER of every field, and the kinds
  whose Delete request has a ``force`` field. Their source is the proto file and field.
* **The overlay** (:data:`OVERLAY`): what only outside evidence says (Google's Terraform
  provider, the proto documentation text), each entry citing its file.

It holds facts only, no reading of them by cesync: the emulator imports it (beside
:mod:`.descriptors`), so it must stay free of cesync's own understanding of the API.

Use::

    from cesync.api import behaviour as fb

    fb.has("Deployment", "whatsappCredentials", fb.INPUT_ONLY)   # True
    fb.of("App", "loggingSettings")         # frozenset({'OPTIONAL', 'SERVER_DEFAULTED'})
    fb.fields("Deployment", fb.INPUT_ONLY)  # ('whatsappCredentials', 'instagramCredentials')
    fb.etag_guards("App")                   # False: App.etag is OUTPUT_ONLY
    fb.delete_has_force("Tool")             # True
    fb.required("google.cloud.ces.v1beta.ToolResponse", "response")  # False: a Terraform sample leaves it out
    fb.rule("Tool", "openApiTool", fb.READ_ONLY).detail  # 'openApiToolset': the toolset that makes it
    fb.rules()                              # every Rule, each with .source (docs/field-behaviour.md lists them)

Messages are named short (``"App"``, ``"Tool"``) or in full (``"google.cloud.ces.v1.App"``); a
short name is v1's message, or v1beta's when only v1beta has it (``"Evaluation"``: the evaluation
kinds, whose rules come from the v1beta part of the snapshot, ``ces_v1beta.json``); fields by
JSON name (``loggingSettings``) or proto name (``logging_settings``). Lookups return JSON names.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from . import descriptors

__all__ = [
    "APP_LOCK",
    "BEHAVIOURS",
    "DELETE_FORCE",
    "DESCRIPTOR_BEHAVIOURS",
    "IDENTIFIER",
    "IMMUTABLE",
    "INPUT_ONLY",
    "LOCK_OVERRIDE",
    "NAME_UNCHECKED",
    "OUTPUT_ONLY",
    "OVERLAY",
    "READ_ONLY",
    "REQUIRED",
    "SERVER_DEFAULTED",
    "UNSET_ACCEPTED",
    "Rule",
    "delete_has_force",
    "etag_guards",
    "fields",
    "full_name",
    "has",
    "kinds_with",
    "name_unchecked",
    "of",
    "overlay_rules",
    "required",
    "rule",
    "rules",
]

# From google/api/field_behavior.proto, as the snapshot records them.
REQUIRED = "REQUIRED"
OUTPUT_ONLY = "OUTPUT_ONLY"
INPUT_ONLY = "INPUT_ONLY"
IMMUTABLE = "IMMUTABLE"
IDENTIFIER = "IDENTIFIER"
DESCRIPTOR_BEHAVIOURS = (REQUIRED, OUTPUT_ONLY, INPUT_ONLY, IMMUTABLE, IDENTIFIER)
# Derived from the descriptors: the kind's Delete request has a ``force`` field (field "").
DELETE_FORCE = "DELETE_FORCE"
# From outside evidence (the overlay).
SERVER_DEFAULTED = "SERVER_DEFAULTED"
READ_ONLY = "READ_ONLY"
APP_LOCK = "APP_LOCK"
LOCK_OVERRIDE = "LOCK_OVERRIDE"
NAME_UNCHECKED = "NAME_UNCHECKED"
UNSET_ACCEPTED = "UNSET_ACCEPTED"

# What each behaviour means for a request and a reply: the facts the sources state.
BEHAVIOURS: dict[str, str] = {
    REQUIRED: "a request must set it (proto3: a default value counts as unset)",
    OUTPUT_ONLY: "set by the server; a server ignores it in a request (so an OUTPUT_ONLY etag guards nothing)",
    INPUT_ONLY: "sent in a request, never returned in a reply",
    IMMUTABLE: "set on create only; changing it means delete and create",
    IDENTIFIER: "the resource's name; set by the server from the parent and id",
    DELETE_FORCE: "the kind's Delete request has `force` (delete although still referenced)",
    SERVER_DEFAULTED: "the server fills it in when a request leaves it out",
    READ_ONLY: "a tool type the server makes; a request cannot create or update a tool of this type",
    APP_LOCK: "while true, modifications to the app's resources are rejected",
    LOCK_OVERRIDE: "the one request flag that overrides the app lock",
    NAME_UNCHECKED: "a resource name CES accepts in a write although the app holds nothing of that name",
    UNSET_ACCEPTED: "the proto marks it REQUIRED, yet CES accepts a request that leaves it unset (so it is not required)",
}

_TF = "GoogleCloudPlatform/magic-modules mmv1/products/ces"
_SAMPLES = "GoogleCloudPlatform/magic-modules mmv1/templates/terraform/samples/services/ces"
_TOOL_NOTE = f"{_TF}/Tool.yaml, docs.note ('Direct Management Restriction') and `output: true` on the block"


@dataclass(frozen=True)
class Rule:
    """One behaviour of one field (``field`` "" for a rule about the message's kind)."""

    message: str  # full proto name
    field: str  # JSON name
    behaviour: str
    source: str
    detail: str = ""  # e.g. the Toolset field that makes a READ_ONLY tool type


# What only outside evidence says. (message, JSON field, behaviour, source, detail)
OVERLAY: tuple[Rule, ...] = (
    Rule(
        "google.cloud.ces.v1.App",
        "loggingSettings",
        SERVER_DEFAULTED,
        f"{_TF}/App.yaml, loggingSettings: `default_from_api: true` (the only default_from_api in mmv1/products/ces)",
    ),
    *(
        Rule("google.cloud.ces.v1.Tool", tool_type, READ_ONLY, _TOOL_NOTE, made_by)
        for tool_type, made_by in (
            ("openApiTool", "openApiToolset"),
            ("connectorTool", "connectorToolset"),
            ("mcpTool", "mcpToolset"),
            ("remoteAgentTool", ""),  # "A2A connections configured externally"
            ("systemTool", ""),  # "pre-defined platform tools managed entirely by Google Cloud"
        )
    ),
    Rule(
        "google.cloud.ces.v1.App",
        "locked",
        APP_LOCK,
        "google/cloud/ces_v1/types/app.proto, App.locked: 'If the app is locked, modifications to the app "
        "resources will be rejected.' (the status code is not stated; FAILED_PRECONDITION is AIP-193's code "
        "for a request the resource's state forbids)",
    ),
    Rule(
        "google.cloud.ces.v1.ImportAppRequest",
        "ignoreAppLock",
        LOCK_OVERRIDE,
        "google/cloud/ces_v1/types/agent_service.proto, ImportAppRequest.ignore_app_lock: 'the import process "
        "will ignore the app lock' (no other request has such a flag)",
    ),
    Rule(
        "google.cloud.ces.v1.TriggerAction.TransferAgent",
        "agent",
        NAME_UNCHECKED,
        f"{_SAMPLES}/ces_guardrail_transfer_agent_content_filter.tf.tmpl: transfer_agent.agent names "
        "agents/fake-agent, which the sample never creates (Google's acceptance tests run it against CES)",
    ),
    # The v1beta evaluation samples name agents, toolsets and expectations they never create.
    *(
        Rule(f"google.cloud.ces.v1beta.{message}", field, NAME_UNCHECKED, f"{_SAMPLES}/{sample}.tf.tmpl: {what}")
        for message, field, sample, what in (
            ("AgentTransfer", "targetAgent", "ces_evaluation_full", "agent_transfer.target_agent names agents/dummy-agent"),
            ("ToolsetTool", "toolset", "ces_evaluation_toolset", "toolset_tool.toolset names toolsets/dummy-toolset"),
            (
                "Evaluation.Golden",
                "evaluationExpectations",
                "ces_evaluation_full",
                "golden.evaluation_expectations names evaluationExpectations/dummy-exp",
            ),
            (
                "Evaluation.Scenario",
                "evaluationExpectations",
                "ces_evaluation_scenario_full",
                "scenario.evaluation_expectations names evaluationExpectations/dummy-exp",
            ),
        )
    ),
    # Where a sample leaves out a field the proto marks REQUIRED and CES took it, the sample wins.
    Rule(
        "google.cloud.ces.v1beta.ToolResponse",
        "response",
        UNSET_ACCEPTED,
        f"{_SAMPLES}/ces_evaluation_full.tf.tmpl: the step 'Expect tool response' sets an expectation's "
        "tool_response with toolset_tool only, no response (Google's acceptance tests run it against CES)",
    ),
)


@cache
def full_name(message: str) -> str:
    if message.startswith((descriptors.PACKAGE + ".", descriptors.BETA_PACKAGE + ".")):
        return message
    v1 = f"{descriptors.PACKAGE}.{message}"
    try:
        descriptors.message(v1)
    except KeyError:
        return f"{descriptors.BETA_PACKAGE}.{message}"  # only v1beta has it (the evaluation kinds)
    return v1


def _json_name(message: str, field: str) -> str:
    desc = descriptors.message(message)
    f = desc.fields_by_name.get(field)
    if f is not None:
        return str(f.json_name)
    if field in {x.json_name for x in desc.fields}:
        return field
    raise KeyError(f"{message} has no field {field!r}")


def _descriptor_rules() -> list[Rule]:
    out: list[Rule] = []
    for message, entry in sorted(descriptors.facts()["messages"].items()):
        file = descriptors.message(message).file.name
        short, package = descriptors.short_name(message), descriptors.package_of(message)
        for proto_name, facts in entry.get("fields", {}).items():
            json_name = _json_name(message, proto_name)
            for b in facts.get("behaviors", ()):
                if b in DESCRIPTOR_BEHAVIOURS:
                    out.append(Rule(message, json_name, b, _cite(file, package, short, proto_name, json_name, b, facts)))
        if short.startswith("Delete") and short.endswith("Request") and "force" in entry.get("fields", {}):
            target = f"{package}.{short.removeprefix('Delete').removesuffix('Request')}"
            out.append(Rule(target, "", DELETE_FORCE, f"{file}, {short}.force"))
    return out


def _cite(file: str, package: str, short: str, proto_name: str, json_name: str, behaviour: str, facts: dict[str, Any]) -> str:
    """Where a field's behaviour is stated: its proto annotation, or the discovery document's
    description (a field newer than the protos, or one whose behaviour the newer document changed)."""
    changed = facts.get("behaviour_source") or (facts if facts.get("source") not in (None, "proto") else None)
    if not changed:
        return f"{file}, {short}.{proto_name} [{behaviour}]"
    version = "v1beta" if package.endswith("v1beta") else "v1"
    said = behaviour.replace("_", " ").capitalize()  # OUTPUT_ONLY: the description's "Output only."
    if changed["source"] == "seeds":
        return f'the reference page of seed {changed["revision"]}, {short}.{json_name}: "{said}."'
    return f'discovery document ces.{version}.json (revision {changed["revision"]}), {short}.{json_name}: "{said}."'


def overlay_rules(message: str, behaviour: str) -> tuple[Rule, ...]:
    """The overlay's rules of ``behaviour`` on ``message`` (full name), in the overlay's order: for a
    behaviour only the overlay states (READ_ONLY...), its rules without reading a descriptor."""
    return tuple(r for r in OVERLAY if r.message == message and r.behaviour == behaviour)


@cache
def rules() -> tuple[Rule, ...]:
    """Every rule: the descriptor rules, then the overlay."""
    return (*_descriptor_rules(), *OVERLAY)


@cache
def _index() -> dict[tuple[str, str], dict[str, Rule]]:
    table: dict[tuple[str, str], dict[str, Rule]] = {}
    for r in rules():
        table.setdefault((r.message, r.field), {})[r.behaviour] = r
    return table


def _key(message: str, field: str) -> tuple[str, str]:
    name = full_name(message)
    return name, (_json_name(name, field) if field else "")


def of(message: str, field: str) -> frozenset[str]:
    """Every behaviour of ``message.field`` (OPTIONAL when the descriptor says so)."""
    name, json_field = _key(message, field)
    found = set(_index().get((name, json_field), {}))
    proto = next((f.name for f in descriptors.message(name).fields if f.json_name == json_field), json_field)
    found.update(b for b in descriptors.behaviors(name, proto) if b == "OPTIONAL")
    return frozenset(found)


def has(message: str, field: str, behaviour: str) -> bool:
    return behaviour in _index().get(_key(message, field), {})


def required(message: str, field: str) -> bool:
    """Whether a request must set ``message.field``: REQUIRED, unless CES accepts it unset (UNSET_ACCEPTED)."""
    return has(message, field, REQUIRED) and not has(message, field, UNSET_ACCEPTED)


def rule(message: str, field: str, behaviour: str) -> Rule:
    """The rule (with its source); KeyError when the field does not have the behaviour."""
    return _index()[_key(message, field)][behaviour]


@cache
def fields(message: str, behaviour: str) -> tuple[str, ...]:
    """JSON names of the message's fields with the behaviour, in descriptor order."""
    if _stated_nowhere(message, behaviour):
        return ()  # the descriptors stay unread (validate asks each file's kind for INPUT_ONLY fields)
    name = full_name(message)
    order = {f.json_name: i for i, f in enumerate(descriptors.message(name).fields)}
    found = [r.field for r in rules() if r.message == name and r.behaviour == behaviour and r.field]
    return tuple(sorted(found, key=lambda f: order.get(f, len(order))))


def _stated_nowhere(message: str, behaviour: str) -> bool:
    """True when no rule can give a field of the message the behaviour, read from the facts alone: a
    descriptor behaviour that no field of the message (as v1 or v1beta has it) is stated with, and
    no overlay rule. False when unsure (a message the facts lack: the descriptors decide)."""
    if behaviour not in DESCRIPTOR_BEHAVIOURS:
        return False
    full = message.startswith((descriptors.PACKAGE + ".", descriptors.BETA_PACKAGE + "."))
    names = [message] if full else [f"{descriptors.PACKAGE}.{message}", f"{descriptors.BETA_PACKAGE}.{message}"]
    stated = descriptors.facts()["messages"]
    if not any(n in stated for n in names) or any(r.message in names and r.behaviour == behaviour for r in OVERLAY):
        return False
    return not any(behaviour in f.get("behaviors", ()) for n in names for f in stated.get(n, {}).get("fields", {}).values())


@cache
def kinds_with(behaviour: str) -> tuple[str, ...]:
    """Short names of the messages with a rule about the whole kind (``DELETE_FORCE``)."""
    return tuple(descriptors.short_name(r.message) for r in rules() if r.behaviour == behaviour and not r.field)


def delete_has_force(message: str) -> bool:
    return has(message, "", DELETE_FORCE)


def field_at(message: str, path: tuple[str | int, ...]) -> tuple[str, str] | None:
    """The (full message, JSON field) a JSON path into ``message`` ends at (list indexes and map
    keys skipped); None when the path leaves the descriptors."""
    name, field = full_name(message), ""
    for step in (p for p in path if isinstance(p, str)):
        if field:
            nested = descriptors.message(name).fields_by_name.get(_proto_name(name, field))
            if nested is None or nested.message_type is None:
                return None
            name = nested.message_type.full_name
            entry = nested.message_type
            if entry.name.endswith("Entry") and {f.name for f in entry.fields} == {"key", "value"}:
                value = entry.fields_by_name["value"]
                if value.message_type is None:
                    return None
                name, field = value.message_type.full_name, ""
                continue  # the step is the map's key
        if step not in {f.json_name for f in descriptors.message(name).fields}:
            return None
        field = step
    return (name, field) if field else None


def _proto_name(message: str, json_name: str) -> str:
    return next((f.name for f in descriptors.message(message).fields if f.json_name == json_name), json_name)


def name_unchecked(message: str, path: tuple[str | int, ...]) -> bool:
    """Whether CES accepts, at this path of a ``message`` body, a name of nothing the app holds."""
    at = field_at(message, path)
    return at is not None and has(at[0], at[1], NAME_UNCHECKED)


def etag_guards(message: str) -> bool:
    """Whether the server can be relied on to honour the message's etag in a request: it has
    one and it is not OUTPUT_ONLY (a server ignores output-only fields in a request)."""
    name = full_name(message)
    return "etag" in descriptors.message(name).fields_by_name and not has(name, "etag", OUTPUT_ONLY)


def _forget() -> None:
    """A newer description (descriptors.use_documents) may add fields and behaviours."""
    for cached in (full_name, rules, _index, fields, kinds_with):
        cached.cache_clear()


descriptors.on_change(_forget)

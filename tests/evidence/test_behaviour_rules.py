"""One case per rule of the field-behaviour table (cesync.api.behaviour), each checking what the rule does.

The cases are not drawn from the table itself, which would lose a case with its rule:
they come from the evidence the table is built from, read here independently: the
descriptor snapshot's annotations (src/cesync/api/ces_v1.json, read as JSON), the kinds
whose Delete request has ``force``, and the overlay's outside evidence
(tests/evidence/terraform_fields.json for ``default_from_api`` and the tool types Terraform
marks ``output: true``; the google-cloud-ces docstrings for the app lock; the names of
nothing the Terraform samples' fixtures hold, for NAME_UNCHECKED; the REQUIRED fields those
fixtures leave out as their samples do, for UNSET_ACCEPTED). Each case fails when its rule is missing from the table, and
checks the rule's effect where cesync or the emulator enforces it:

* REQUIRED: the emulator refuses a body without it (``Field is required.``), for every
  field a resource's body can hold outside a oneof;
* OUTPUT_ONLY: the emulator drops it from a request, and validate refuses it in a repo file
  (both, for every field a resource's body can hold);
* INPUT_ONLY: the emulator never stores it; diff never compares it;
* IDENTIFIER: the emulator sets a resource's name itself;
* DELETE_FORCE, READ_ONLY, APP_LOCK, LOCK_OVERRIDE, NAME_UNCHECKED: over HTTP, the emulator
  binds ``force`` / refuses the tool type / refuses writes under the lock / imports with the
  override / accepts the name of nothing;
* SERVER_DEFAULTED: diff does not plan away what only the remote has;
* UNSET_ACCEPTED: the emulator does not require it, nor does the generated model (so
  validate accepts the sample's fixture without it).

Rules on messages no resource body holds (request messages, Changelog, Conversation, ...)
have no effect to check beyond the request's own shape; their cases check the table.
"""

from __future__ import annotations

import base64
import inspect
import json
import re
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.cloud.ces_v1.types import agent_service, app
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from ruamel.yaml import YAML

from cesync.api import behaviour as fb
from cesync.api import descriptors
from cesync.api.kinds import KINDS, by_collection
from cesync.core.checks import lint_keys, server_made
from cesync.core.diff import diff_resource
from cesync.emulator import wire
from cesync.emulator.archive import pack
from cesync.emulator.errors import RpcError
from cesync.emulator.server import BackgroundServer
from cesync.models import specs
from tests.conftest import ROOT

PACKAGE = "google.cloud.ces.v1."
SNAPSHOTS = [
    json.loads((ROOT / "src" / "cesync" / "api" / f).read_text(encoding="utf-8")) for f in ("ces_v1.json", "ces_v1beta.json")
]
TERRAFORM = json.loads((Path(__file__).parent / "terraform_fields.json").read_text(encoding="utf-8"))
OPAQUE = {f"google.protobuf.{n}" for n in ("Duration", "Timestamp", "Struct", "Value", "ListValue", "FieldMask", "Any")}
KIND_OF = {fb.full_name(k.model_name): k for k in KINDS.values()}
APP = "projects/p/locations/us/apps/rules"


def _json_name(message: str, proto: str) -> str:
    return str(descriptors.message(message).fields_by_name[proto].json_name)


def expected() -> Iterator[tuple[str, str, str]]:
    """(message, JSON field, behaviour) of every rule the evidence states."""
    messages = [item for snapshot in SNAPSHOTS for item in snapshot["messages"].items()]
    for message, entry in sorted(messages):
        for proto, facts in entry.get("fields", {}).items():
            for b in facts.get("behaviors", ()):
                if b in fb.DESCRIPTOR_BEHAVIOURS:
                    yield message, _json_name(message, proto), b
        package, _, short = message.rpartition(".")
        if short.startswith("Delete") and short.endswith("Request") and "force" in entry.get("fields", {}):
            yield f"{package}.{short.removeprefix('Delete').removesuffix('Request')}", "", fb.DELETE_FORCE
    for resource, facts in TERRAFORM["resources"].items():
        for path in facts["defaultFromApi"]:
            yield PACKAGE + resource, path, fb.SERVER_DEFAULTED
    tool_types = {f.json_name for f in descriptors.message(PACKAGE + "Tool").oneofs_by_name["tool_type"].fields}
    for path in TERRAFORM["resources"]["Tool"]["output"]:
        if path in tool_types:
            yield PACKAGE + "Tool", path, fb.READ_ONLY
    if "If the app is locked, modifications to the app resources will be rejected" in " ".join(
        inspect.getdoc(app.App).split()  # type: ignore[union-attr]
    ):
        yield PACKAGE + "App", "locked", fb.APP_LOCK
    if "ignore the app lock" in " ".join(inspect.getdoc(agent_service.ImportAppRequest).split()):  # type: ignore[union-attr]
        yield PACKAGE + "ImportAppRequest", "ignoreAppLock", fb.LOCK_OVERRIDE
    yield from _unchecked_names()
    yield from _omitted_required()


def _strings(data: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], str]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _strings(value, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _strings(value, (*path, i))
    elif isinstance(data, str):
        yield path, data


UNCHECKED_AT: dict[tuple[str, str], tuple[str, tuple[str | int, ...]]] = {}  # rule -> (kind, path) a fixture names


def _unchecked_names() -> Iterator[tuple[str, str, str]]:
    """Where a Terraform sample (as its fixture) names a resource of its app that it never creates:
    CES accepted that name of nothing there (the fixtures cite their samples)."""
    for fixture in sorted(p for p in (ROOT / "tests" / "fixtures" / "terraform").iterdir() if p.is_dir()):
        local = YAML(typ="safe").load((fixture / "cesync.yaml").read_text(encoding="utf-8"))["environments"]["local"]
        parent = f"projects/{local['project']}/locations/{local['location']}/apps/{local['app']}/"
        files = sorted(fixture.glob("*/*.yaml"))
        defined = {(f.parent.name, f.stem) for f in files}
        for file in files:
            kind = by_collection(file.parent.name)
            assert kind is not None, file
            for at, value in _strings(YAML(typ="safe").load(file.read_text(encoding="utf-8"))):
                collection, _, rid = value.removeprefix(parent).partition("/")
                if value.startswith(parent) and by_collection(collection) and (collection, rid) not in defined:
                    found = fb.field_at(kind.model_name, at)
                    assert found is not None, (file, at)
                    UNCHECKED_AT.setdefault(found, (kind.model_name, at))
                    yield found[0], found[1], fb.NAME_UNCHECKED


REQUIRED_IN_SNAPSHOT = {
    (message, proto)
    for snapshot in SNAPSHOTS
    for message, entry in snapshot["messages"].items()
    for proto, facts in entry.get("fields", {}).items()
    if fb.REQUIRED in facts.get("behaviors", ())
}


def _absent_required(desc: Descriptor, data: Any) -> Iterator[tuple[str, str]]:
    """(message, JSON field) of each REQUIRED field outside a oneof that ``data`` (a repo body,
    read as the JSON of ``desc``) leaves out, in every message it holds."""
    if not isinstance(data, dict) or desc.full_name in OPAQUE:
        return
    for f in desc.fields:
        if f.json_name not in data:
            if (desc.full_name, f.name) in REQUIRED_IN_SNAPSHOT and f.containing_oneof is None:
                yield desc.full_name, f.json_name
            continue
        if f.message_type is None:
            continue
        value = data[f.json_name]
        if f.message_type.GetOptions().map_entry:
            target = f.message_type.fields_by_name["value"].message_type
            for item in value.values() if isinstance(value, dict) and target is not None else ():
                yield from _absent_required(target, item)
        else:
            for item in value if f.is_repeated and isinstance(value, list) else [value]:
                yield from _absent_required(f.message_type, item)


def _omitted_required() -> Iterator[tuple[str, str, str]]:
    """Where a Terraform sample (as its fixture, which keeps what the sample leaves out) leaves out a
    field the proto marks REQUIRED: CES accepted the sample, so the field is not required there."""
    for file in sorted((ROOT / "tests" / "fixtures" / "terraform").glob("*/*/*.yaml")):
        kind = by_collection(file.parent.name)
        assert kind is not None, file
        data = YAML(typ="safe").load(file.read_text(encoding="utf-8"))
        for message, field in _absent_required(descriptors.message(fb.full_name(kind.model_name)), data):
            yield message, field, fb.UNSET_ACCEPTED


EXPECTED = sorted(set(expected()))
UNSET_ACCEPTED = {(m, f) for m, f, b in EXPECTED if b == fb.UNSET_ACCEPTED}


def _id(rule: tuple[str, str, str]) -> str:
    return f"{rule[2]}:{rule[0].removeprefix('google.cloud.ces.')}.{rule[1]}"


# --- where a rule's message sits in a resource's body --------------------------------------

Step = tuple[str, str]  # (JSON field, "one" | "list" | "map")


def _reach(through_output: bool) -> dict[str, tuple[str, tuple[Step, ...]]]:
    """Each message a resource body can hold -> (collection, the shortest path to it), by BFS;
    through_output: also inside output-only fields (which a request's server ignores)."""
    found: dict[str, tuple[str, tuple[Step, ...]]] = {}
    queue: deque[tuple[Descriptor, str, tuple[Step, ...]]] = deque((wire.descriptor(c), c, ()) for c in sorted(wire.RESOURCES))
    while queue:
        desc, collection, path = queue.popleft()
        if desc.full_name in found or desc.full_name in OPAQUE:
            continue
        found[desc.full_name] = (collection, path)
        for f in desc.fields:
            if f.message_type is None or (not through_output and fb.has(desc.full_name, f.json_name, fb.OUTPUT_ONLY)):
                continue
            entry = f.message_type
            if entry.GetOptions().map_entry:
                value = entry.fields_by_name["value"].message_type
                if value is not None:
                    queue.append((value, collection, (*path, (f.json_name, "map"))))
            else:
                queue.append((entry, collection, (*path, (f.json_name, "list" if f.is_repeated else "one"))))
    return found


REACH = _reach(through_output=True)
WRITABLE = _reach(through_output=False)


def _nest(path: tuple[Step, ...], leaf: dict[str, Any]) -> dict[str, Any]:
    body: Any = leaf
    for name, how in reversed(path):
        body = {name: [body] if how == "list" else {"k": body} if how == "map" else body}
    return body  # type: ignore[no-any-return]


def _value(field: FieldDescriptor) -> Any:
    if field.message_type is not None:
        if field.message_type.GetOptions().map_entry:
            return {}
        text = {"google.protobuf.Timestamp": "2026-01-01T00:00:00Z", "google.protobuf.Duration": "1s"}
        value: Any = text.get(field.message_type.full_name, {})
    elif field.enum_type is not None:
        value = field.enum_type.values[-1].name
    elif field.type == FieldDescriptor.TYPE_BOOL:
        value = True
    elif field.type == FieldDescriptor.TYPE_STRING:
        value = "x"
    elif field.type == FieldDescriptor.TYPE_BYTES:
        value = "eA=="
    else:
        value = 1
    return [value] if field.is_repeated else value


def _violations(collection: str, body: dict[str, Any]) -> list[dict[str, str]]:
    try:
        wire.checked(collection, body)
    except RpcError as exc:
        return [v for d in exc.details for v in d.get("fieldViolations", [])]
    return []


def _descriptor_field(message: str, json_field: str) -> FieldDescriptor:
    return next(f for f in descriptors.message(message).fields if f.json_name == json_field)


# --- the cases ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=True, operation_delay=0.0) as s:
        yield s


def test_the_evidence_gives_every_rule_of_the_table() -> None:
    """Nothing in the table lacks evidence read here (the other way round, each case below)."""
    assert {(r.message, r.field, r.behaviour) for r in fb.rules()} == set(EXPECTED)


@pytest.mark.parametrize("rule", EXPECTED, ids=[_id(r) for r in EXPECTED])
def test_a_rule_is_in_the_table_and_does_what_it_says(rule: tuple[str, str, str], server: BackgroundServer) -> None:
    message, field, behaviour = rule
    assert fb.has(message, field, behaviour), f"the table lost {_id(rule)}"
    CHECKS[behaviour](message, field, server)


def _required(message: str, field: str, server: BackgroundServer) -> None:
    f = _descriptor_field(message, field)
    if message not in WRITABLE or f.containing_oneof is not None or (message, field) in UNSET_ACCEPTED:
        return  # a request's own field, only inside output, a member of a oneof (required as the member
        # chosen), or one a sample leaves out (its own case, UNSET_ACCEPTED)
    collection, path = WRITABLE[message]
    body = _nest(path, {})
    at = ".".join(n for n, _ in path)
    found = [v for v in _violations(collection, body) if v["description"] == "Field is required."]
    where = [re.sub(r"\[[^\]]*\]", "", v["field"]).split(".", 1)[1] for v in found]  # indexes and keys dropped
    assert (f"{at}.{field}" if at else field) in where, (body, found)


def _output_only(message: str, field: str, server: BackgroundServer) -> None:
    if message not in REACH:
        return  # no request carries it
    collection, path = REACH[message]
    body = _nest(path, {field: _value(_descriptor_field(message, field))})
    kept = wire.writable(collection, body)
    node: Any = kept
    for name, how in path:
        node = node.get(name, {}) if isinstance(node, dict) else {}
        node = (node[0] if node else {}) if how == "list" else node.get("k", {}) if how == "map" else node
    assert field not in node, f"the emulator kept output-only {field} of {collection}: {kept}"
    kind = next((k for k in KINDS.values() if k.collection == collection or (k.singleton and collection == "apps")), None)
    if kind is not None and field not in ("name", "etag"):  # a file's name and etag: repo.py's own check
        _, findings = lint_keys(body, kind.model)
        names = [n for n, _ in path] + [field]
        # at the field, or at the output-only block holding it (what an output block holds is output)
        at = [[p for p in x.path if isinstance(p, str)] for x in findings if "output only" in x.message]
        assert any(names[: len(a)] == a for a in at), findings


def _input_only(message: str, field: str, server: BackgroundServer) -> None:
    kind = KIND_OF[message]
    collection = "apps" if kind.singleton else kind.collection
    body = {"displayName": "D", field: {"authCode": "code"}}
    assert field not in wire.without_input_only(collection, body)
    remote = {"displayName": "D", "name": f"{APP}/{collection}/d"}
    assert diff_resource(kind, "d", body, remote).update_mask == []


def _identifier(message: str, field: str, server: BackgroundServer) -> None:
    if message not in REACH or REACH[message][1]:
        return  # a name inside a message no request carries
    collection, _ = REACH[message]
    assert field not in wire.writable(collection, {field: "projects/x/locations/y/apps/z", "displayName": "D"})


def _delete_force(message: str, field: str, server: BackgroundServer) -> None:
    kind = KIND_OF[message]
    r = httpx.delete(f"{server.url}/{kind.api_version}/{APP}/{kind.collection}/none", params={"force": "true"})
    assert r.status_code == 404, r.text  # force is bound; what is deleted does not exist
    forced = set(fb.kinds_with(fb.DELETE_FORCE))
    for other in (k for k in KINDS.values() if not k.singleton and k.model_name not in forced):
        r = httpx.delete(f"{server.url}/{other.api_version}/{APP}/{other.collection}/none", params={"force": "true"})
        assert r.status_code == 400 and "force" in r.text, (other.collection, r.text)  # no such field to bind


def _server_defaulted(message: str, field: str, server: BackgroundServer) -> None:
    kind = KIND_OF[message]
    filled = _value(_descriptor_field(message, field)) or {"x": 1}
    remote = {"displayName": "A", field: filled, "name": APP}
    assert diff_resource(kind, kind.name, {"displayName": "A"}, remote).update_mask == []
    assert diff_resource(kind, kind.name, {"displayName": "B"}, remote).update_mask == ["displayName"]


def _read_only(message: str, field: str, server: BackgroundServer) -> None:
    findings = server_made(KINDS["tool"], "t", {field: {}})
    assert findings and findings[0].path == (field,) and "output only" in findings[0].message
    r = httpx.post(f"{server.url}/v1/{APP}/tools", params={"toolId": f"t-{field.lower()}"}, json={field: {"name": "t"}})
    assert r.status_code == 400 and f"{field} cannot be created or updated directly" in r.text, r.text


def _app_lock(message: str, field: str, server: BackgroundServer) -> None:
    parent = "projects/p/locations/us/apps/locked"
    r = httpx.post(f"{server.url}/v1/projects/p/locations/us/apps", params={"appId": "locked"}, json={"displayName": "L"})
    assert r.status_code == 200, r.text
    httpx.get(f"{server.url}/v1/{r.json()['name']}").raise_for_status()  # the operation, done
    r = httpx.patch(f"{server.url}/v1/{parent}", params={"updateMask": field}, json={field: True})
    assert r.status_code == 200, r.text
    tool = {"pythonFunction": {"name": "f", "pythonCode": "def f(): pass"}}
    r = httpx.post(f"{server.url}/v1/{parent}/tools", params={"toolId": "t"}, json=tool)
    assert r.status_code == 400 and r.json()["error"]["status"] == "FAILED_PRECONDITION", r.text


def _lock_override(message: str, field: str, server: BackgroundServer) -> None:
    parent = "projects/p/locations/us/apps/override"
    httpx.post(f"{server.url}/v1/projects/p/locations/us/apps", params={"appId": "override"}, json={"displayName": "O"})
    httpx.patch(f"{server.url}/v1/{parent}", params={"updateMask": "locked"}, json={"locked": True}).raise_for_status()
    content = base64.b64encode(pack({"name": parent, "displayName": "O"}, {})).decode()
    url = f"{server.url}/v1/projects/p/locations/us/apps:importApp"
    refused = httpx.post(url, json={"appId": "override", "appContent": content})
    assert refused.status_code == 400 and refused.json()["error"]["status"] == "FAILED_PRECONDITION", refused.text
    accepted = httpx.post(url, json={"appId": "override", "appContent": content, field: True})
    assert accepted.status_code == 200, accepted.text
    done = httpx.get(f"{server.url}/v1/{accepted.json()['name']}").json()
    assert done.get("done") and "error" not in done, done


def _name_unchecked(message: str, field: str, server: BackgroundServer) -> None:
    kind_message, at = UNCHECKED_AT[(message, field)]
    assert fb.name_unchecked(kind_message, at)  # what validate and the emulator ask (the sample's fixture applies)
    if message != PACKAGE + "TriggerAction.TransferAgent":
        return
    guardrail = {
        "displayName": "G",
        "contentFilter": {"bannedContents": ["x"], "matchType": "SIMPLE_STRING_MATCH"},
        "action": {"transferAgent": {field: f"{APP}/agents/nobody"}},
    }
    r = httpx.post(f"{server.url}/v1/{APP}/guardrails", params={"guardrailId": "g"}, json=guardrail)
    assert r.status_code == 200, r.text
    agent = {"displayName": "A", "instruction": "i", "childAgents": [f"{APP}/agents/nobody"]}  # checked elsewhere
    r = httpx.post(f"{server.url}/v1/{APP}/agents", params={"agentId": "a"}, json=agent)
    assert r.status_code == 400 and "does not exist" in r.text, r.text


def _unset_accepted(message: str, field: str, server: BackgroundServer) -> None:
    assert fb.has(message, field, fb.REQUIRED) and not fb.required(message, field)
    collection, path = WRITABLE[message]
    body = _nest(path, {})
    at = ".".join(n for n, _ in path)
    found = [v for v in _violations(collection, body) if v["description"] == "Field is required."]
    where = [re.sub(r"\[[^\]]*\]", "", v["field"]).split(".", 1)[1] for v in found]
    assert (f"{at}.{field}" if at else field) not in where, found
    kind = by_collection(collection)
    assert kind is not None, collection
    model = kind.model
    for name, _ in path:  # the generated model at the rule's message, as validate reaches it
        model = specs(model)[name].message
    assert not model.model_fields[field].is_required(), f"the generated {model.__name__}.{field} is still required"


CHECKS = {
    fb.REQUIRED: _required,
    fb.OUTPUT_ONLY: _output_only,
    fb.INPUT_ONLY: _input_only,
    fb.IDENTIFIER: _identifier,
    fb.IMMUTABLE: lambda message, field, server: None,  # none in v1 (the snapshot has no IMMUTABLE field)
    fb.DELETE_FORCE: _delete_force,
    fb.SERVER_DEFAULTED: _server_defaulted,
    fb.READ_ONLY: _read_only,
    fb.APP_LOCK: _app_lock,
    fb.LOCK_OVERRIDE: _lock_override,
    fb.NAME_UNCHECKED: _name_unchecked,
    fb.UNSET_ACCEPTED: _unset_accepted,
}


def test_every_behaviour_has_a_check() -> None:
    assert set(CHECKS) == set(fb.BEHAVIOURS)
    assert not fb.fields("App", fb.IMMUTABLE) and not any(r.behaviour == fb.IMMUTABLE for r in fb.rules())

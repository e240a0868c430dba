"""validate against the API as Google publishes it now (issue 33, findings 1 and 3), and a repo of
today's fields applied to the emulator over HTTP, planning empty after.

The cases are generated from the description itself: every writable field and enum value that
revision 20261016 of the discovery document added over google-cloud-ces 0.7.2 is written into
a file of the kind that holds it, and validate must not refuse it; every field the document
dropped is refused, saying so.
"""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path
from typing import Any

import pytest

from cesync.api import descriptors
from cesync.api.kinds import KINDS, ResourceKind
from cesync.emulator.server import BackgroundServer
from cesync.models import FieldSpec, Kind, ProtoModel, specs
from cesync.repo.repo import load_repo
from tests.helpers import cesync, make_repo

_SAMPLE = {
    Kind.STRING: "x",
    Kind.BOOL: True,
    Kind.INT32: 2,
    Kind.INT64: 2,
    Kind.DOUBLE: 0.5,
    Kind.FLOAT: 0.5,
    Kind.BYTES: "eA==",
    Kind.DURATION: "2s",
    Kind.TIMESTAMP: "2026-01-01T00:00:00Z",
    Kind.STRUCT: {"a": 1},
    Kind.VALUE: "v",
    Kind.MESSAGE: {},
}
# The kinds a repo writes (not the versions cesync makes), each with its file.
WRITTEN = {name: kind for name, kind in KINDS.items() if name != "appVersion" and kind.model.message_name}


def _paths(model: type[ProtoModel]) -> dict[str, tuple[tuple[str, FieldSpec], ...]]:
    """The shortest path of fields from ``model`` to each message it holds, by message name."""
    found: dict[str, tuple[tuple[str, FieldSpec], ...]] = {model.message_name: ()}
    todo: deque[type[ProtoModel]] = deque([model])
    while todo:
        current = todo.popleft()
        for name, spec in specs(current).items():
            if spec.message is not None and spec.message.message_name not in found and not spec.output_only:
                found[spec.message.message_name] = (*found[current.message_name], (name, spec))
                todo.append(spec.message)
    return found


def _put(body: dict[str, Any], steps: tuple[tuple[str, FieldSpec], ...], value: Any) -> None:
    node: Any = body
    for name, spec in steps:
        child: dict[str, Any] = {}
        node[name] = [child] if spec.repeated else {"k": child} if spec.map else child
        node = child
    node.update(value)


def _value(spec: FieldSpec, enum_value: str | None = None) -> Any:
    one: Any = enum_value or (list(spec.enum)[-1] if spec.kind is Kind.ENUM else _SAMPLE[spec.kind])
    return [one] if spec.repeated else {"k": one} if spec.map else one


def _file(kind: ResourceKind) -> str:
    return "app.yaml" if kind.singleton else f"{kind.folder}/x.yaml"


def _newer_cases() -> list[tuple[str, str, dict[str, Any], str]]:
    """(id, file, body, field name) for every writable field and enum value newer than the protos."""
    cases: dict[str, tuple[str, str, dict[str, Any], str]] = {}
    added_values = {(enum, value) for enum, values in descriptors.facts().get("enum_values", {}).items() for value in values}
    for kind_name, kind in sorted(WRITTEN.items()):
        for message_name, steps in _paths(kind.model).items():
            holder = specs(kind.model) if not steps else specs(steps[-1][1].message)  # type: ignore[arg-type]
            for name, spec in holder.items():
                said = descriptors.field_facts(message_name, name)
                short = f"{descriptors.short_name(message_name)}.{name}"
                if said.get("source") == "discovery" and not spec.output_only and short not in cases:
                    body: dict[str, Any] = {}
                    _put(body, steps, {name: _value(spec)})
                    cases[short] = (f"{kind_name}:{short}", _file(kind), body, name)
                if spec.kind is Kind.ENUM:
                    desc = descriptors.message(message_name).fields_by_name.get(
                        next(f.name for f in descriptors.message(message_name).fields if f.json_name == name)
                    )
                    assert desc is not None
                    for value in spec.enum:
                        if (desc.enum_type.full_name, value) in added_values and f"{short}={value}" not in cases:
                            body = {}
                            _put(body, steps, {name: _value(spec, value)})
                            cases[f"{short}={value}"] = (f"{kind_name}:{short}={value}", _file(kind), body, name)
    return sorted(cases.values())


NEWER = _newer_cases()


def test_the_cases_cover_the_findings() -> None:
    ids = {c[0].split(":", 1)[1] for c in NEWER}
    for field in (
        "ModelSettings.thinkingLevel",
        "Guardrail.ContentFilter.matchType=SENSITIVE_WORDS",
        "Guardrail.ModelSafety.SafetySetting.category=HARM_CATEGORY_TOXIC",
        "Deployment.modelSettings",
        "Guardrail.supervisor",
        "RemoteAgentTool.apiAuthentication",
        "Agent.remoteA2aAgent",
        "LoggingSettings.requiredRecordingConsent",
    ):
        assert field in ids
    assert len(NEWER) >= 22


@pytest.mark.parametrize(("file", "body", "field"), [c[1:] for c in NEWER], ids=[c[0] for c in NEWER])
def test_a_field_of_the_current_api_is_not_refused(tmp_path: Path, file: str, body: dict[str, Any], field: str) -> None:
    root = make_repo(tmp_path, {file: json.dumps(body)})
    problems = [str(p) for p in load_repo(root).validate()]
    refused = [p for p in problems if f"unknown field '{field}'" in p or "is not a valid value" in p]
    assert refused == [], problems


DROPPED = [
    (
        "tools/x.yaml",
        "agentTool:\n  name: a\n  agent: projects/p/locations/us/agents/b\n  rootAgent: projects/p/locations/us/agents/b\n",
        "rootAgent",
        "AgentTool",
    ),
    (
        "app.yaml",
        "displayName: A\naudioProcessingConfig:\n  synthesizeSpeechConfigs:\n    en-US: {voice: v, voiceSampleGcsUri: 'gs://b/o'}\n",
        "voiceSampleGcsUri",
        "SynthesizeSpeechConfig",
    ),
]


@pytest.mark.parametrize(("file", "text", "field", "message"), DROPPED, ids=[d[2] for d in DROPPED])
def test_a_field_the_api_dropped_is_refused_saying_so(tmp_path: Path, file: str, text: str, field: str, message: str) -> None:
    problems = [str(p) for p in load_repo(make_repo(tmp_path, {file: text})).validate()]
    said = [p for p in problems if f"'{field}' is no longer a field of {message}" in p]
    assert len(said) == 1, problems
    assert "revision 20261016" in said[0] and said[0].endswith("remove it")


@pytest.mark.parametrize("credentials", ["WhatsAppCredentials", "InstagramCredentials"])
def test_conversation_profile_id_is_optional(tmp_path: Path, credentials: str) -> None:
    """Finding 3: the document says "Optional." (google-cloud-ces 0.7.2's proto said REQUIRED)."""
    document: dict[str, Any] = {"displayName": "d"}
    _put(document, _paths(KINDS["deployment"].model)[f"google.cloud.ces.v1.{credentials}"], {"authCode": "c"})
    problems = [str(p) for p in load_repo(make_repo(tmp_path, {"deployments/x.yaml": json.dumps(document)})).validate()]
    assert "authCode" in json.dumps(document)
    assert [p for p in problems if "conversationProfileId" in p] == []


E2E_CONFIG = "version: 1\nenvironments:\n  local: {project: p, location: us, app: a, endpoint: emulator}\n"
E2E_FILES = {
    "cesync.yaml": E2E_CONFIG,
    "app.yaml": (
        "displayName: Support\n"
        "modelSettings: {model: gemini-2.5-flash, thinkingLevel: HIGH}\n"
        "loggingSettings: {requiredRecordingConsent: true}\n"
    ),
    "guardrails/words.yaml": (
        "displayName: Words\n"
        "contentFilter:\n"
        "  bannedContents: [darn]\n"
        "  matchType: SENSITIVE_WORDS\n"
        "  sensitiveWordsExemptions: [darned]\n"
        "supervisor: {type: PROFANITY, detectionMode: BLOCKING}\n"
        "enabled: true\n"
        "action: {respondImmediately: {responses: [{text: Let us keep it friendly.}]}}\n"
    ),
    "guardrails/safety.yaml": (
        "displayName: Safety\n"
        "modelSafety:\n"
        "  safetySettings: [{category: HARM_CATEGORY_TOXIC, threshold: BLOCK_LOW_AND_ABOVE}]\n"
        "action: {respondImmediately: {responses: [{text: No.}]}}\n"
    ),
    "deployments/web.yaml": (
        "displayName: Web chat\n"
        "channelProfile: {channelType: WEB_UI}\n"
        "modelSettings: {model: gemini-2.5-flash, thinkingLevel: LOW}\n"
        "modality: MODALITY_TEXT\n"
    ),
}


def test_a_repo_of_todays_api_applies_and_plans_empty(tmp_path: Path) -> None:
    root = make_repo(tmp_path, E2E_FILES)
    (root / "tools" / "greet.yaml").unlink()
    checked = cesync("validate", "--dir", str(root))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    with BackgroundServer(auto_create_apps=False, operation_delay=0.05) as server:
        where = ["--dir", str(root), "--env", "local", "--endpoint", server.url]
        applied = cesync("apply", *where, "--auto-approve")
        assert applied.returncode == 0 and "4 created" in applied.stdout + applied.stderr, applied.stdout + applied.stderr
        for said in ("thinkingLevel: HIGH", "matchType: SENSITIVE_WORDS", "detectionMode: BLOCKING", "modality: MODALITY_TEXT"):
            assert said in applied.stdout
        planned = cesync("plan", *where, "--format", "json")
        assert planned.returncode == 0, planned.stderr
        assert json.loads(planned.stdout)["changes"] == []

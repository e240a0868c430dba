"""Every field Google's Terraform provider marks read-only is refused in a repo (#23 item 8).

tests/evidence/terraform_fields.json holds, per Terraform resource, the fields
mmv1/products/ces/*.yaml marks ``output: true`` (scripts/terraform_fields.py reads them at
the commit the file names). For each one on a kind the repo holds, a case writes the field
into a resource file, with a value of its type, and validate must refuse it at
file:line:col, naming it as output only.

Where the protos and Terraform disagree, PROTO_WINS says which wins and why.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.descriptor import FieldDescriptor

from cesync.api import behaviour as fb
from cesync.api import descriptors
from cesync.api.kinds import KINDS
from tests.helpers import cesync_in_process as cesync
from tests.helpers import make_repo

DATA = json.loads((Path(__file__).parent / "terraform_fields.json").read_text(encoding="utf-8"))
BY_MODEL = {k.model_name: k for k in KINDS.values()}

# Terraform resources that are no file of a repo, and why nothing is tested for them here.
NOT_IN_A_REPO = {
    "AppVersion": "app versions are made by apply --snapshot, never written from a file",
    "SecuritySettings": "a location's security settings are outside any app (cesync manages apps)",
    "AppRootAgentAssociation": "Terraform's own resource for App.rootAgent (app.yaml's rootAgent); it has no fields",
}

# Where Terraform marks a field output and the protos do not: which wins, and why.
PROTO_WINS = {
    ("Toolset", "openApiToolset.url"): (
        "the proto (google-cloud-ces OpenApiToolset.url) is Optional and says CES sets it in an export's "
        "environment dependencies and reads it on import to fill the schema's $env_var placeholder: the "
        "per-environment server URL a repo gives (docs/repo-format.md: toolsets and $env_var URLs). Terraform, which never imports, "
        "only reads it back"
    ),
    ("Evaluation", "golden.turns.rootSpan"): (
        "the proto (google-cloud-ces v1beta Evaluation.GoldenTurn.root_span) is Optional: 'the root span of the "
        "golden turn for processing and maintaining audio information. The uri for the audio must contain audio "
        "saved in 16Khz sample rate', which a golden's author gives; only the span's own fields are output only "
        "(Span.name and the rest, which validate refuses)"
    ),
}
# Where both say the repo must not hold it, in different words: Terraform's `output: true` on every
# kind's etag, the protos' OUTPUT_ONLY on App's and Deployment's only (the others' etags are sent to
# guard a write, cesync sends them itself). validate refuses etag in every kind.

BASES: dict[str, dict[str, Any]] = {
    "App": {"displayName": "A"},
    "Agent": {"displayName": "A", "instruction": "i", "llmAgent": {}},
    "Tool": {"pythonFunction": {"name": "f", "pythonCode": "def f(): pass"}},
    "Toolset": {"mcpToolset": {"serverAddress": "https://mcp.example.com"}},
    "Guardrail": {
        "displayName": "G",
        "contentFilter": {"bannedContents": ["x"], "matchType": "SIMPLE_STRING_MATCH"},
        "action": {"respondImmediately": {"responses": [{"text": "t"}]}},
    },
    "Example": {"displayName": "E"},
    "Deployment": {"displayName": "D", "channelProfile": {"channelType": "WEB_UI"}},
    "Evaluation": {"displayName": "E", "golden": {"turns": [{"steps": [{"userInput": {"text": "hi"}}]}]}},
}

CASES = [
    (resource, path)
    for resource, entry in sorted(DATA["resources"].items())
    if resource in BY_MODEL
    for path in entry["output"]
    if (resource, path) not in PROTO_WINS
]


def _scalar(field: FieldDescriptor) -> Any:
    if field.message_type is not None:
        name = field.message_type.full_name
        return {"google.protobuf.Timestamp": "2026-01-01T00:00:00Z", "google.protobuf.Duration": "1s"}.get(name, {})
    if field.enum_type is not None:
        return field.enum_type.values[-1].name
    if field.type == FieldDescriptor.TYPE_BOOL:
        return True
    if field.type == FieldDescriptor.TYPE_STRING:
        return "x"
    if field.type == FieldDescriptor.TYPE_BYTES:
        return "eA=="
    return 1


def value_at(message: str, path: list[str]) -> dict[str, Any]:
    """A body holding ``path`` (JSON names) with a value of its type, lists where fields repeat."""
    desc = descriptors.message(fb.full_name(message))
    field = next(f for f in desc.fields if f.json_name == path[0])
    value = _scalar(field) if len(path) == 1 else value_at(field.message_type.full_name, path[1:])
    return {path[0]: [value] if field.is_repeated else value}


def merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        have = out.get(key)
        if isinstance(have, dict) and isinstance(value, dict):
            value = merged(have, value)
        elif isinstance(have, list) and isinstance(value, list) and have and isinstance(have[0], dict):
            value = [merged(have[0], value[0]), *have[1:]]  # into the base's first entry
        out[key] = value
    return out


def file_for(resource: str, path: str) -> tuple[str, str]:
    """The repo file and its text: the base body with the field in it (a tool of the field's type
    when the field is inside one, as the type is a oneof)."""
    base = BASES[resource]
    top = path.split(".")[0]
    if resource == "Tool" and top.endswith(("Tool", "Function")) and top != "pythonFunction":
        base = {}
    body = merged(base, value_at(resource, path.split(".")))
    kind = BY_MODEL[resource]
    rel = "app.yaml" if kind.singleton else f"{kind.folder}/x.yaml"
    return rel, json.dumps(body, indent=1)  # JSON is YAML: one key a line, so line:col is where the key is


def test_every_terraform_resource_is_a_repo_kind_or_said_why_not() -> None:
    assert DATA["source"].startswith("GoogleCloudPlatform/magic-modules mmv1/products/ces/")
    assert re.fullmatch(r"[0-9a-f]{40}", DATA["commit"])
    assert set(DATA["resources"]) - set(BY_MODEL) == set(NOT_IN_A_REPO)
    assert {r for r, _ in PROTO_WINS} <= set(DATA["resources"])
    assert all(p in DATA["resources"][r]["output"] for r, p in PROTO_WINS)
    assert len(CASES) > 40


@pytest.mark.parametrize("resource", sorted(BASES))
def test_the_base_bodies_are_valid(resource: str, tmp_path: Path) -> None:
    """Each case adds one field to one of these: the refusal below is the field's."""
    kind = BY_MODEL[resource]
    rel = "app.yaml" if kind.singleton else f"{kind.folder}/x.yaml"
    repo = make_repo(tmp_path, {rel: json.dumps(BASES[resource])})
    r = cesync("validate", "--dir", str(repo))
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize(("resource", "path"), CASES, ids=[f"{r}.{p}" for r, p in CASES])
def test_a_field_terraform_marks_output_is_refused_where_it_is_written(resource: str, path: str, tmp_path: Path) -> None:
    rel, text = file_for(resource, path)
    repo = make_repo(tmp_path, {rel: text})
    r = cesync("validate", "--dir", str(repo))
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    leaf = path.rsplit(".", 1)[-1]
    # the field's key: the last one of that name, as merged() puts what a case adds after the base
    line = max(i for i, t in enumerate(text.splitlines(), 1) if t.lstrip().startswith(f'"{leaf}"'))
    col = text.splitlines()[line - 1].index(f'"{leaf}"') + 1
    wanted = f"{rel}:{line}:{col}: "
    found = [x for x in out.splitlines() if x.startswith(wanted)]
    assert found, f"no problem at {wanted}:\n{out}"
    assert any(leaf in x and "output only" in x for x in found), found


@pytest.mark.parametrize(("resource", "path"), sorted(PROTO_WINS), ids=[f"{r}.{p}" for r, p in sorted(PROTO_WINS)])
def test_where_the_proto_wins_the_field_is_accepted(resource: str, path: str, tmp_path: Path) -> None:
    rel, text = file_for(resource, path)
    field = fb.field_at(resource, tuple(path.split(".")))
    assert field is not None and fb.OUTPUT_ONLY not in fb.of(*field)
    body = json.loads(text)
    if resource == "Toolset":  # the url belongs with an openApiToolset's schema
        body = {"openApiToolset": {"openApiSchema": "openapi: 3.0.0\npaths: {}", "url": "https://api.example.com"}}
    repo = make_repo(tmp_path, {rel: json.dumps(body)})
    r = cesync("validate", "--dir", str(repo))
    assert r.returncode == 0, r.stdout + r.stderr

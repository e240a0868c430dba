"""diff_resource: every difference of the canonical forms reaches the update mask."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.api.kinds import KINDS
from cesync.core.diff import diff_resource, same
from cesync.core.normalize import DOCUMENT_FIELDS
from cesync.models import Kind, ProtoModel, specs
from tests.helpers import cesync, make_repo
from tests.strategies import pairs, resource_bodies

CODE = 'def f(x):\n    """Echo."""\n    return x\n'
PY = {"pythonFunction": {"pythonCode": CODE}}
SCHEMA = {"name": "c", "parameters": {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}}}

# (case, remote body, desired body, expected update mask)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], list[str]]] = [
    (
        "several top-level fields at once",
        PY,
        {**PY, "timeout": "5s", "executionType": "ASYNCHRONOUS", "toolFakeConfig": {"enableFakeMode": True}},
        ["executionType", "timeout", "toolFakeConfig"],
    ),
    ("tool type change", PY, {"clientFunction": {"name": "f"}}, ["clientFunction", "pythonFunction"]),
    (
        "every field of a nested message replaced",
        {"clientFunction": {"name": "a", "description": "x"}},
        {"clientFunction": {"name": "b", "description": "y"}},
        ["clientFunction.description", "clientFunction.name"],
    ),
    (
        "top-level fields removed",
        {**PY, "timeout": "5s", "toolFakeConfig": {"enableFakeMode": True}},
        PY,
        ["timeout", "toolFakeConfig"],
    ),
    (
        "map key that looks private",
        {"widgetTool": {"name": "w", "uiConfig": {"a": 1}}},
        {"widgetTool": {"name": "w", "uiConfig": {"a": 1, "__b": 2}}},
        ["widgetTool.uiConfig"],
    ),
    (
        "bool against number in a free-form value",
        {"clientFunction": {"name": "c", "parameters": {"type": "BOOLEAN", "default": 1}}},
        {"clientFunction": {"name": "c", "parameters": {"type": "BOOLEAN", "default": True}}},
        ["clientFunction.parameters.default"],
    ),
    (
        "list order",
        {"googleSearchTool": {"name": "g", "contextUrls": ["a", "b"]}},
        {"googleSearchTool": {"name": "g", "contextUrls": ["b", "a"]}},
        ["googleSearchTool.contextUrls"],
    ),
    (
        "repeated value",
        {"googleSearchTool": {"name": "g", "contextUrls": ["a", "b"]}},
        {"googleSearchTool": {"name": "g", "contextUrls": ["a", "b", "b"]}},
        ["googleSearchTool.contextUrls"],
    ),
    (
        "string case",
        {"clientFunction": {"name": "c", "description": "abc"}},
        {"clientFunction": {"name": "c", "description": "ABC"}},
        ["clientFunction.description"],
    ),
    (
        "tiny double difference",
        {"clientFunction": {"name": "c", "parameters": {"type": "NUMBER", "minimum": 0.1}}},
        {"clientFunction": {"name": "c", "parameters": {"type": "NUMBER", "minimum": 0.1000000001}}},
        ["clientFunction.parameters.minimum"],
    ),
    (
        "double difference in the 13th digit",
        {"clientFunction": {"name": "c", "parameters": {"type": "NUMBER", "maximum": 0.1}}},
        {"clientFunction": {"name": "c", "parameters": {"type": "NUMBER", "maximum": 0.1000000000001}}},
        ["clientFunction.parameters.maximum"],
    ),
    (
        "false against zero in a free-form value",
        {"widgetTool": {"name": "w", "uiConfig": {"a": [0]}}},
        {"widgetTool": {"name": "w", "uiConfig": {"a": [False]}}},
        ["widgetTool.uiConfig"],
    ),
    (
        "deep under a schema",
        {"clientFunction": SCHEMA},
        {"clientFunction": {**SCHEMA, "parameters": {"type": "OBJECT", "properties": {"a": {"type": "NUMBER"}}}}},
        ["clientFunction.parameters.properties"],
    ),
    (
        "integral number as int or float in a free-form value",
        {"widgetTool": {"name": "w", "uiConfig": {"a": 1}}},
        {"widgetTool": {"name": "w", "uiConfig": {"a": 1.0}}},
        [],
    ),
    (
        "float32 that rounds to zero equals absence",
        {
            "dataStoreTool": {
                "name": "d",
                "boostSpecs": [{"dataStores": ["x"], "spec": [{"conditionBoostSpecs": [{"condition": "c"}]}]}],
            }
        },
        {
            "dataStoreTool": {
                "name": "d",
                "boostSpecs": [{"dataStores": ["x"], "spec": [{"conditionBoostSpecs": [{"condition": "c", "boost": 1e-300}]}]}],
            }
        },
        [],
    ),
    ("equal", PY, dict(PY), []),
]


@pytest.mark.parametrize(("remote", "desired", "mask"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_update_mask(remote: dict[str, Any], desired: dict[str, Any], mask: list[str]) -> None:
    d = diff_resource(KINDS["tool"], "t", desired, remote)
    assert d.update_mask == mask
    assert [f.path for f in d.fields] == mask


def test_toolset_type_change() -> None:
    mcp = {"mcpToolset": {"serverAddress": "https://mcp.example/x"}}
    api = {"openApiToolset": {"openApiSchema": "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {}\n"}}
    assert diff_resource(KINDS["toolset"], "ts", api, mcp).update_mask == ["mcpToolset", "openApiToolset"]


GREET = """pythonFunction:
  name: greet
  pythonCode: |
    def greet(name: str) -> dict:
        return {"greeting": "Hello " + name}
"""


@pytest.mark.parametrize(
    "changed",
    [
        GREET + "timeout: 5s\nexecutionType: ASYNCHRONOUS\ntoolFakeConfig:\n  enableFakeMode: true\n",
        "clientFunction:\n  name: greet\n",
    ],
    ids=["fields added", "type change"],
)
def test_plan_detailed_exitcode_sees_the_change(tmp_path: Path, changed: str) -> None:
    repo = make_repo(tmp_path, {"tools/greet.yaml": GREET})
    assert cesync("apply", "--dir", str(repo), "--auto-approve").returncode == 0
    (repo / "tools" / "greet.yaml").write_text(changed)
    plan = cesync("plan", "--dir", str(repo), "--detailed-exitcode")
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert "tool greet will be updated" in plan.stdout
    assert cesync("apply", "--dir", str(repo), "--auto-approve").returncode == 0
    assert cesync("plan", "--dir", str(repo), "--detailed-exitcode").returncode == 0


EXAMPLES = 5000 if os.environ.get("CESYNC_PROPERTY_PROFILE") == "nightly" else 300
OTHER_KINDS = [k for k in KINDS.values() if not k.named_by_type and not k.holds_tools]  # tools and toolsets: resource_bodies


def _at(data: Any, parts: list[str]) -> tuple[bool, Any]:
    for p in parts:
        if not isinstance(data, dict) or p not in data:
            return False, None
        data = data[p]
    return True, data


def _patched(before: dict[str, Any], after: dict[str, Any], mask: list[str]) -> dict[str, Any]:
    """before with each masked field set as after has it (left out where after has none): what the API makes of a patch."""
    out: dict[str, Any] = dict(before)
    for path in mask:
        *head, last = path.split(".")
        node, theirs = out, after
        for p in head:
            node[p] = dict(node.get(p) or {})
            node, theirs = node[p], (theirs or {}).get(p)
        if isinstance(theirs, dict) and last in theirs:
            node[last] = theirs[last]
        else:
            node.pop(last, None)
    return out


def _walkable(model: type[ProtoModel], parts: list[str]) -> bool:
    """Every segment but the last is a message field a mask may name a field of."""
    for p in parts[:-1]:
        spec = specs(model).get(p)
        if spec is None or spec.message is None or spec.repeated or spec.map:
            return False
        if spec.kind in (Kind.STRUCT, Kind.VALUE) or p in DOCUMENT_FIELDS:
            return False
        model = spec.message
    return True


def _check_mask(kind_name: str, a: dict[str, Any], b: dict[str, Any]) -> None:
    d = diff_resource(KINDS[kind_name], "r", b, a)
    before, after, mask = d.before or {}, d.after or {}, d.update_mask
    assert bool(mask) == (not same(before, after))
    assert same(_patched(before, after, mask), after), mask  # complete: patching the mask makes after
    for path in mask:
        assert not same(_at(before, path.split(".")), _at(after, path.split("."))), path  # each path differs
        assert not any(o != path and o.startswith(path + ".") for o in mask), path  # minimal
        assert _walkable(KINDS[kind_name].model, path.split(".")), path  # stops where a mask must


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(resource_bodies())
def test_the_mask_of_generated_tools_is_complete_and_minimal(drawn: tuple[str, tuple[dict[str, Any], dict[str, Any]]]) -> None:
    """Independently of how the diff finds them: patching exactly the masked fields turns the remote
    into the desired body, each masked field differs, and no path enters a list, map or document."""
    kind, (a, b) = drawn
    _check_mask(kind, a, b)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(OTHER_KINDS).flatmap(lambda k: pairs(k.model, 3).map(lambda p, k=k: (k.name, p))))
def test_the_mask_of_every_other_kind_is_complete_and_minimal(drawn: tuple[str, tuple[dict[str, Any], dict[str, Any]]]) -> None:
    kind, (a, b) = drawn
    _check_mask(kind, a, b)

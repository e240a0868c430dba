"""An agent's toolIds checked against its OpenAPI toolset's operations (cesync.repo.toolids)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.repo.repo import load_repo
from cesync.repo.toolids import openapi_tool_ids, unknown_tool_ids
from tests.helpers import cesync, make_repo

IDS = st.from_regex(r"[a-z][A-Za-z]{2,8}", fullmatch=True)


def _schema(operations: list[str]) -> str:
    paths = {
        f"/p{i}": {"get": {"operationId": op, "responses": {"200": {"description": "ok"}}}} for i, op in enumerate(operations)
    }
    return json.dumps({"openapi": "3.0.3", "info": {"title": "T", "version": "1"}, "paths": paths})


def _files(operations: list[str], wanted: list[str]) -> dict[str, str]:
    toolset = {"displayName": "orders", "openApiToolset": {"openApiSchema": _schema(operations), "url": "https://o.example.com"}}
    agent = {
        "displayName": "Front",
        "llmAgent": {},
        "instruction": "Hi.",
        "toolsets": [{"toolset": {"ref": "toolsets/orders"}, "toolIds": wanted}],
    }
    return {"toolsets/orders.yaml": json.dumps(toolset), "agents/front.yaml": json.dumps(agent)}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=st.lists(IDS, min_size=1, max_size=4, unique=True), wanted=st.lists(IDS, min_size=1, max_size=4, unique=True))
def test_each_tool_id_the_toolset_lacks_is_warned_where_it_is_written(
    tmp_path_factory: pytest.TempPathFactory, operations: list[str], wanted: list[str]
) -> None:
    repo = load_repo(make_repo(tmp_path_factory.mktemp("repo"), _files(operations, wanted)))
    warned = unknown_tool_ids(repo.files)
    missing = [w for w in wanted if w not in operations]
    assert [w for w in missing if any(f"no tool '{w}'" in p.message for p in warned)] == missing
    assert len(warned) == len(missing)
    assert all(p.file == "agents/front.yaml" and p.line >= 1 for p in warned)


def test_an_included_schema_is_read(tmp_path: Path) -> None:
    files = _files(["getOrder"], ["getOrdr"])
    toolset = json.loads(files["toolsets/orders.yaml"])
    schema = toolset["openApiToolset"]["openApiSchema"]
    toolset["openApiToolset"]["openApiSchema"] = {"file": "../specs/orders.json"}
    root = make_repo(tmp_path, {**files, "toolsets/orders.yaml": json.dumps(toolset), "specs/orders.json": schema})
    repo = load_repo(root)
    assert [p.message for p in unknown_tool_ids(repo.files) if "no tool 'getOrdr'" in p.message]


def test_a_toolset_with_an_operation_without_id_is_not_judged() -> None:
    schema = json.loads(_schema(["getOrder"]))
    schema["paths"]["/x"] = {"post": {"responses": {}}}
    assert openapi_tool_ids({"openApiToolset": {"openApiSchema": json.dumps(schema)}}) is None
    assert openapi_tool_ids({"mcpToolset": {}}) is None


def test_validate_warns_with_the_closest_operation(tmp_path: Path) -> None:
    root = make_repo(tmp_path, _files(["getOrder", "listOrders"], ["getOrdr"]))
    done = cesync("validate", "--dir", str(root))
    assert done.returncode == 0, done.stderr
    assert "agents/front.yaml" in done.stderr and "no tool 'getOrdr'; did you mean 'getOrder'?" in done.stderr
    strict = cesync("validate", "--dir", str(root), "--strict")
    assert strict.returncode == 1

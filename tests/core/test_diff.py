"""diff_resource: every difference of the canonical forms reaches the update mask."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest
from deepdiff import DeepDiff

from cesync.api.kinds import KINDS
from cesync.core.diff import DEEPDIFF_OPTIONS, deepdiff_paths, diff_resource, minimal_mask
from cesync.core.normalize import canonical
from tests.conftest import ROOT
from tests.helpers import cesync, make_repo

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


@pytest.mark.parametrize(("remote", "desired", "mask"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_deepdiff_alone_reports_every_case(remote: dict[str, Any], desired: dict[str, Any], mask: list[str]) -> None:
    """The options, not the guard behind them, find each change (run at both ends of the deepdiff range)."""
    before, after = canonical(KINDS["tool"], "t", remote).body, canonical(KINDS["tool"], "t", desired).body
    assert minimal_mask(deepdiff_paths(before, after, KINDS["tool"].model)) == mask


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


# DeepDiff parameters that cannot change what counts as a change of canonical JSON:
# caching, logging, performance, output formatting, pairing heuristics of ignore_order
# (off), and types JSON does not have (uuid, datetime, bytes encodings).
NOT_DECISIVE = {
    *("self", "t1", "t2", "kwargs", "_original_type", "_parameters", "_shared_parameters"),
    *("cache_purge_level", "cache_size", "cache_tuning_sample_size", "hasher", "hashes", "max_passes"),
    *("log_frequency_in_sec", "log_stacktrace", "progress_logger", "get_deep_distance", "number_format_notation"),
    *("cutoff_distance_for_pairs", "cutoff_intersection_for_pairs", "group_by_sort_key", "log_scale_similarity_threshold"),
    *("multiprocessing", "multiprocessing_threshold", "multiprocessing_workers"),
    *("encodings", "ignore_uuid_types", "default_timezone"),
}


def test_every_deepdiff_option_is_decided() -> None:
    """A deepdiff release with a new option fails here until the option is set or judged harmless."""
    params = set(inspect.signature(DeepDiff.__init__).parameters)
    assert params - set(DEEPDIFF_OPTIONS) - NOT_DECISIVE == set()
    assert set(DEEPDIFF_OPTIONS) <= params


def test_the_docs_state_the_tested_range() -> None:
    pinned = re.search(r'"(deepdiff[^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert pinned and f"`{pinned.group(1)}`" in (ROOT / "docs" / "commands" / "plan.md").read_text()

"""cesync exec and cesync test end to end on the example, plus the pure parts (output shape, matching)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cesync.core.toolcall import canonical_output, target
from cesync.errors import ApiError
from cesync.tooltests import Case, Expectation, check
from tests.conftest import EXAMPLES
from tests.helpers import cesync


@pytest.fixture
def stub_api() -> Iterator[str]:
    """The example's stub orders/catalog API on a free loopback port (it picks one, so two runs cannot collide)."""
    stub = [sys.executable, str(EXAMPLES / "support-bot" / "stub_api.py"), "--port", "0"]
    proc = subprocess.Popen(stub, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()  # printed once it listens
    assert url.startswith("http://127.0.0.1:") and not url.endswith(":0"), url
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def bot(tmp_path: Path, stub_api: str) -> Path:
    """The example, applied to its local (embedded) environment, pointing at the stub API (its catalog url follows ORDERS_URL)."""
    dst = tmp_path / "support-bot"
    shutil.copytree(EXAMPLES / "support-bot", dst, ignore=shutil.ignore_patterns(".cesync"))
    config = dst / "cesync.yaml"
    config.write_text(config.read_text().replace("http://127.0.0.1:8089", stub_api))
    applied = cesync("apply", "--dir", str(dst), "--env", "local", "--auto-approve")
    assert applied.returncode == 0, applied.stderr
    return dst


def test_example_tests_pass_with_junit(bot: Path, tmp_path: Path) -> None:
    junit = tmp_path / "reports" / "junit.xml"
    r = cesync("test", "--dir", str(bot), "--env", "local", "--junit", str(junit))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "12 tests: 12 passed, 0 failed, 0 errors" in r.stdout
    root = ET.parse(junit).getroot()
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == 12 and not root.findall(".//failure") and not root.findall(".//error")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {f"tests/{n}.yaml" for n in ("order_status", "orders_api", "refund_policy", "scrapi_refund")}
    assert suites["tests/scrapi_refund.yaml"].get("tests") == "2"  # the cxas-scrapi file ran as it is


def test_failures_are_reported_exit_1_and_in_junit(bot: Path, tmp_path: Path) -> None:
    (bot / "tests" / "wrong.yaml").write_text(
        "tests:\n"
        "  - name: wrong refund\n"
        "    toolCall: {tool: refund-policy, args: {order_total: 80, days_since_delivery: 3}}\n"
        "    toolResponse: {response: {result: {refund: 81}}}\n"
        "  - name: wrong scrapi\n"
        "    tool: refund_policy\n"
        "    args: {order_total: 80, days_since_delivery: 3}\n"
        "    expectations: {response: [{path: $.result.refund, operator: greater_than, value: 100}]}\n"
    )
    junit = tmp_path / "junit.xml"
    r = cesync("test", "wrong.yaml", "--dir", str(bot), "--env", "local", "--junit", str(junit))
    assert r.returncode == 1
    assert "FAIL  tests/wrong.yaml::wrong refund" in r.stdout and "response.result.refund: expected 81, got 80.0" in r.stdout
    assert "response $.result.refund greater_than 100: got 80.0" in r.stdout
    failures = ET.parse(junit).getroot().findall(".//failure")
    assert len(failures) == 2 and "expected 81" in (failures[0].get("message") or "")
    as_json = cesync("test", "wrong.yaml", "--dir", str(bot), "--env", "local", "--format", "json")
    data = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and data["counts"] == {"passed": 0, "failed": 2, "error": 0}
    assert [t["format"] for t in data["tests"]] == ["cesync", "cxas-scrapi"] and data["tests"][0]["answer"]["response"]
    unmatched = cesync("test", "no-such-test", "--dir", str(bot), "--env", "local")
    assert unmatched.returncode == 1 and "no test matches" in unmatched.stderr


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            "tests:\n  - name: x\n    tool: refund_policy\n    expectations:\n      response:\n        - {path: $.a, operator: equal, value: 1}\n",
            "tests/bad.yaml:6:33: unknown operator 'equal'; did you mean 'equals'?",
        ),
        (
            "tests:\n  - name: x\n    tool: t\n    expectations: {response: [{path: '$[', operator: equals}]}\n",
            "invalid JSONPath",
        ),
        ("tests:\n  - name: x\n    toolCall: {tool: t}\n", "tests/bad.yaml:2:5: each test needs toolResponse"),
        (
            "tests:\n  - name: x\n    toolCall: {tool: t}\n    toolResponse: {response: {a: {$regex: '('}}}\n",
            "invalid regular expression",
        ),
        (
            "tests:\n  - name: x\n    toolCall: {tool: t}\n    toolRespons: {}\n",
            "tests/bad.yaml:4:5: unknown test field 'toolRespons'; did you mean 'toolResponse'?",
        ),
        (
            "tests:\n  - name: x\n    toolCal: {tool: t}\n    toolResponse: {}\n",
            "tests/bad.yaml:3:5: unknown test field 'toolCal'; did you mean 'toolCall'?\n1 problem found",
        ),
        ("tests: {}\n", "a test file is a mapping with a 'tests' list"),
        ("tests: [\n", "tests/bad.yaml:2:1: invalid YAML"),
    ],
    ids=["operator", "jsonpath", "no-response", "regex", "typo", "toolCal", "not-a-list", "yaml"],
)
def test_bad_test_files_are_positioned_errors(tmp_path: Path, content: str, expected: str) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "minimal", repo)
    (repo / "tests").mkdir()
    (repo / "tests" / "bad.yaml").write_text(content)
    r = cesync("test", "--dir", str(repo))
    assert r.returncode == 1 and expected in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_exec_prints_the_canonical_output(bot: Path, tmp_path: Path) -> None:
    base = ["exec", "--dir", str(bot), "--env", "local"]
    ok = cesync(*base, "refund-policy", "--args", '{"order_total": 20, "days_since_delivery": 1}')
    assert ok.returncode == 0, ok.stderr
    out = json.loads(ok.stdout)
    assert out["structuredContent"] == {"result": {"eligible": True, "refund": 15.01}}
    assert json.loads(out["content"][0]["text"]) == out["structuredContent"] and out["isError"] is False
    assert out["metadata"]["ces.targetApp"].startswith("projects/") and "agentName" not in json.dumps(out)
    args_file = tmp_path / "args.yaml"
    args_file.write_text("order_id: Z1\n")
    mock_file = tmp_path / "mock.yaml"
    mock_file.write_text(
        "mockedToolCalls: [{toolId: getOrder, expectedArgsPattern: {}, mockResponse: {status: late}}]\n"
        "unmatchedToolCallBehavior: FAIL\n"
    )
    mocked = cesync(*base, "order_status", "--args", "@-", "--mock", str(mock_file), "--variables", "{}", stdin="order_id: Z1\n")
    assert mocked.returncode == 0, mocked.stderr
    assert json.loads(mocked.stdout)["metadata"]["ces.variables"] == {"last_order_status": "late"}
    raw = cesync(*base, "catalog/getProduct", "--args", '{"id": "p1"}', "--raw")
    assert json.loads(raw.stdout)["response"]["name"] == "Kettle" and "toolsetTool" in json.loads(raw.stdout)
    app_error = cesync(*base, "refund-policy", "--args", "{}")
    assert app_error.returncode == 0 and json.loads(app_error.stdout)["isError"] is True
    assert cesync(*base, "refund-policy", "--args", "{}", "--fail-on-error").returncode == 1


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["refund-policy", "--args", '{"a": 1,}'], "--args: not valid JSON: Expecting property name"),
        (["refund-policy", "--args", "[1]"], "--args: expected a JSON object, got list"),
        (["refund-policy", "--args", "@/no/such/file.json"], "--args: /no/such/file.json:1:1: cannot read"),
        (["nope"], "NOT_FOUND"),
        (["refund-polcy"], "did you mean 'refund-policy'"),
        (["a/b/c"], "use a tool id, TOOLSET/TOOL_ID or a full resource name"),
        (["refund-policy", "--variables", "{}", "--context", "{}"], "give --variables or --context, not both"),
    ],
    ids=["json", "not-object", "missing-file", "unknown-tool", "close-tool", "bad-ref", "both"],
)
def test_exec_bad_input(bot: Path, args: list[str], expected: str) -> None:
    r = cesync("exec", "--dir", str(bot), "--env", "local", *args)
    assert r.returncode == 1 and expected in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_slow_tool_times_out_and_the_emulator_stays_up(bot: Path) -> None:
    (bot / "tools" / "slow.yaml").write_text(
        "pythonFunction:\n  pythonCode: |\n    def slow():\n        while True:\n            pass\ntimeout: 1s\n"
    )
    assert cesync("apply", "--dir", str(bot), "--env", "local", "--auto-approve").returncode == 0
    start = time.monotonic()
    r = cesync("exec", "slow", "--dir", str(bot), "--env", "local")
    assert json.loads(r.stdout)["content"][0]["text"] == "the tool did not finish within 1s and was stopped"
    assert time.monotonic() - start < 20
    assert cesync("exec", "refund-policy", "--dir", str(bot), "--env", "local", "--args", "{}").returncode == 0


# --- pure -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"response": {"output": {"a": 1}}}, {"structuredContent": {"a": 1}, "isError": False, "text": '{"a": 1}'}),
        ({"response": {"output": "plain"}}, {"structuredContent": "plain", "isError": False, "text": "plain"}),
        ({"response": {"error": "boom"}}, {"isError": True, "text": "boom"}),
        ({"response": {"result": 2}}, {"structuredContent": {"result": 2}, "isError": False, "text": '{"result": 2}'}),
        (
            {"response": {}, "variables": {"v": 1}, "citations": {"c": [1]}},
            {"structuredContent": {}, "metadata": {"ces.variables": {"v": 1}, "ces.citations": {"c": [1]}}},
        ),
        (
            {"response": {}, "tool": "projects/p/locations/us/apps/a/tools/t"},
            {"metadata": {"ces.variables": {}, "ces.targetApp": "projects/p/locations/us/apps/a"}},
        ),
        (
            {
                "response": {},
                "toolsetTool": {"toolset": "projects/p/locations/us/apps/a/toolsets/s", "toolId": "op"},
                "agentName": "Contract Architect",
                "parentToolCallId": "call-1",
                "targetApp": "projects/p/locations/us/apps/other",
            },
            {
                "metadata": {
                    "ces.variables": {},
                    "ces.agentName": "Contract Architect",
                    "ces.parentToolCallId": "call-1",
                    "ces.targetApp": "projects/p/locations/us/apps/other",
                }
            },
        ),
    ],
    ids=["output", "text-output", "error", "whole-response", "metadata", "target-app-from-tool", "call-context"],
)
def test_canonical_output(answer: dict[str, Any], expected: dict[str, Any]) -> None:
    out = canonical_output(answer)
    assert out["modelVisible"] is True
    for key, value in expected.items():
        if key == "text":
            assert out["content"] == [{"type": "text", "text": value}]
        else:
            assert out[key] == value
    assert ("structuredContent" in out) is not out["isError"]


def test_target_names_tools_of_this_app() -> None:
    app = "projects/p/locations/us/apps/b"
    assert target("x", app) == {"tool": f"{app}/tools/x"}
    assert target("projects/o/locations/eu/apps/a/tools/x", app) == {"tool": f"{app}/tools/x"}  # captured elsewhere
    assert target("ts/op", app) == {"toolsetTool": {"toolset": f"{app}/toolsets/ts", "toolId": "op"}}


@pytest.mark.parametrize(
    ("case", "answer", "failures"),
    [
        (Case("f", 1, "n", "t", response={"a": {"$regex": "x+"}}), {"response": {"a": "xxx", "b": 1}}, []),
        (Case("f", 1, "n", "t", response={"a": {"$regex": "x+"}}), {"response": {"a": "xy"}}, ["does not match"]),
        (Case("f", 1, "n", "t", response={"a": 1}), {"response": {"a": True}}, ["expected 1, got True"]),
        (Case("f", 1, "n", "t", response={"a": [1, 2]}), {"response": {"a": [1]}}, ["expected a list of 2"]),
        (Case("f", 1, "n", "t", checks=(Expectation("$.items", "length_equals", 2),)), {"response": {"items": [1, 2]}}, []),
        (Case("f", 1, "n", "t", checks=(Expectation("$.a", "contains", "b"),)), {"response": {"a": 5}}, ["got 5"]),
        (Case("f", 1, "n", "t", checks=(Expectation("$.missing", "is_null"),)), {"response": {}}, []),
        (Case("f", 1, "n", "t", api_error="NOT_FOUND"), {"response": {}}, ["expected the call to fail"]),
        (
            Case("f", 1, "n", "t", response={"a": 1}),
            {"response": {"error": "KeyError: 'order_total'"}},
            ["response.a: missing", "the tool reported an error: \"KeyError: 'order_total'\""],
        ),
        (Case("f", 1, "n", "t", response={"error": {"$regex": "Key.*"}}), {"response": {"error": "KeyError: x"}}, []),
    ],
    ids=[
        "regex",
        "regex-miss",
        "bool-is-not-int",
        "list-length",
        "length",
        "contains-type",
        "is-null",
        "api-error",
        "tool-error-shown",
        "expected-tool-error",
    ],
)
def test_check(case: Case, answer: dict[str, Any], failures: list[str]) -> None:
    found = check(case, answer, None)
    assert len(found) == len(failures) and all(f in m for f, m in zip(failures, found, strict=True)), found


def test_check_expected_api_error() -> None:
    error = ApiError("runs in the client", code=400, status="FAILED_PRECONDITION", operation="execute tool")
    assert check(Case("f", 1, "n", "t", api_error="FAILED_PRECONDITION"), None, error) == []
    assert "the call failed" in check(Case("f", 1, "n", "t"), None, error)[0]


APP_VARIABLES = {
    "variableDeclarations": [
        {"name": "tier", "description": "d", "schema": {"type": "STRING", "default": "gold"}},
        {"name": "count", "description": "d", "schema": {"type": "INTEGER", "default": 0}},
    ]
}


@pytest.mark.parametrize(
    ("variables", "context", "sent"),
    [
        (None, None, ({"tier": "gold", "count": {}}, None)),  # scrapi's `default or value or {}`: 0 becomes {}
        ({"tier": None}, None, ({"tier": "gold"}, None)),
        ({"tier": "tin", "x": None}, None, ({"tier": "tin"}, None)),
        ({"x": None}, None, ({"tier": "gold", "count": {}}, None)),
        (None, {"state": {"a": 1}, "k": 2}, (None, {"state": {"a": 1}, "k": 2})),
        (None, {"state": {}}, (None, {"state": {"tier": "gold", "count": {}}})),
        (None, {"k": 2}, (None, {"k": 2})),
        (None, {}, ({"tier": "gold", "count": {}}, None)),  # an empty context is no context to scrapi
    ],
)
def test_scrapi_request_is_what_scrapi_sends(variables: Any, context: Any, sent: Any) -> None:
    from cesync.tooltests.scrapi import app_variables, scrapi_request

    assert scrapi_request(variables, context, app_variables(APP_VARIABLES)) == sent


def test_scrapi_values_are_read_as_pyyaml_reads_them(tmp_path: Path) -> None:
    """cxas-scrapi loads test files with PyYAML (YAML 1.1): a scrapi-format case means what it means there."""
    from cesync.tooltests import load_tests

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.yaml").write_text(
        "tests:\n"
        "  - name: yaml 1.1\n"
        "    tool: t\n"
        "    agrs: {flag: yes, minutes: 1:20, octal: 012, text: 0o12}\n"
        "    variables: {mode: on}\n"
        "    expectations:\n"
        "      response:\n"
        "        - {path: $.result.ok, operator: equals, value: yes}\n"
        "  - name: cesync's own format keeps YAML 1.2\n"
        "    toolCall: {tool: t, args: {flag: yes}}\n"
        "    toolResponse: {response: {}}\n"
    )
    scrapi_case, native = load_tests(tmp_path)
    assert scrapi_case.args == {"flag": True, "minutes": 80, "octal": 10, "text": "0o12"}
    assert scrapi_case.variables == {"mode": True} and scrapi_case.checks[0].value is True
    assert native.args == {"flag": "yes"}

"""validate warns when a golden or tool test expects a Python tool's answer outside 'result' (issue #38, finding 9)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.repo.answers import python_answer_warnings
from cesync.repo.repo import load_repo
from cesync.tooltests import load_tests
from tests.helpers import cesync, make_repo

keys = st.text("abcdefgh", min_size=1, max_size=6).filter(lambda k: k not in ("result", "error"))
returned = st.dictionaries(keys, st.integers(0, 9), min_size=1, max_size=3)


def _golden(response: dict[str, object]) -> str:
    expectation = {"toolResponse": {"tool": {"ref": "tools/greet"}, "response": response}}
    turns = [{"steps": [{"userInput": {"text": "hi"}}, {"expectation": expectation}]}]
    return json.dumps({"displayName": "g", "golden": {"turns": turns}})


def _cesync_test(response: dict[str, object]) -> str:
    case = {"name": "t", "toolCall": {"tool": "greet", "args": {"name": "x"}}, "toolResponse": {"response": response}}
    return json.dumps({"tests": [case]})


def _scrapi_test(paths: list[str]) -> str:
    checks = [{"path": p, "operator": "equals", "value": 1} for p in paths]
    return json.dumps({"tests": [{"name": "s", "tool": "greet", "args": {}, "expectations": {"response": checks}}]})


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(returned, st.booleans(), st.sampled_from(["golden", "cesync", "scrapi"]))
def test_an_answer_expected_outside_result_is_a_warning_where_it_is_written(
    tmp_path_factory: pytest.TempPathFactory, value: dict[str, int], nested: bool, where: str
) -> None:
    response: dict[str, object] = {"result": value} if nested else dict(value)
    files = {
        "golden": {"evaluations/g.yaml": _golden(response)},
        "cesync": {"tests/t.yaml": _cesync_test(response)},
        "scrapi": {"tests/t.yaml": _scrapi_test([f"$.result.{k}" if nested else f"$.{k}" for k in value])},
    }[where]
    root = make_repo(tmp_path_factory.mktemp("answers"), dict(files))
    repo = load_repo(root)
    warned = python_answer_warnings(repo.files, load_tests(root))
    if nested:
        assert warned == []
    else:
        [warning] = warned
        assert warning.file == next(iter(files)) and "outside 'result'" in warning.message
        assert all(k in warning.message for k in value)


def test_validate_prints_the_warning_and_strict_fails_on_it(tmp_path: Path) -> None:
    root = make_repo(tmp_path, {"evaluations/g.yaml": _golden({"greeting": "Hello x"})})
    said = cesync("validate", "--dir", str(root))
    assert said.returncode == 0 and "evaluations/g.yaml:" in said.stderr and "outside 'result'" in said.stderr
    assert cesync("validate", "--dir", str(root), "--strict").returncode == 1


def test_a_tool_that_is_not_python_is_not_warned_about(tmp_path: Path) -> None:
    tool = "clientFunction: {name: greet, description: d}\n"
    root = make_repo(tmp_path, {"tools/greet.yaml": tool, "tests/t.yaml": _cesync_test({"greeting": "x"})})
    repo = load_repo(root)
    assert python_answer_warnings(repo.files, load_tests(root)) == []

"""Matching an answer against a case (pure): subset match with ``$regex``, and the
JSONPath operators of the cxas-scrapi format."""

from __future__ import annotations

import re
from typing import Any

from jsonpath_ng.parser import parse as jsonpath  # cxas-scrapi's parser: its paths mean the same here

from ..core.scrubber import clip
from ..core.subset import Difference, subset_differences
from ..errors import ApiError
from .schema import REGEX, Case, Expectation

__all__ = ["check"]


def check(case: Case, answer: dict[str, Any] | None, error: ApiError | None) -> list[str]:
    """What does not hold; empty when the test passes."""
    if error is not None:
        if case.api_error and (case.api_error == error.status or re.search(case.api_error, str(error))):
            return []
        return [f"the call failed: {error}"]
    assert answer is not None
    if case.api_error:
        return [f"expected the call to fail with {case.api_error}, but it answered {answer.get('response')}"]
    response = answer.get("response") or {}
    variables = answer.get("variables") or {}
    failures: list[str] = []
    if case.response is not None:
        failures += _subset(case.response, response, "response")
        if failures and _nested_in_result(case.response, response):
            failures.append("a Python tool's answer is nested under 'result': write response: {result: ...}")
    if case.expect_variables is not None:
        failures += _subset(case.expect_variables, variables, "variables")
    failures += [f for e in case.checks if (f := _expect(e, response, "response"))]
    failures += [f for e in case.variable_checks if (f := _expect(e, variables, "variables"))]
    tool_error = response.get("error") if isinstance(response, dict) else None
    if failures and tool_error is not None and not _expects_error(case):
        # The expectations fail because the tool itself failed: say how, not only "missing".
        failures.append(f"the tool reported an error: {_show(tool_error)}")
    return failures


def _nested_in_result(expected: Any, answer: Any) -> bool:
    """The expectation is the function's own return value, which the answer holds under 'result'."""
    if not (isinstance(expected, dict) and isinstance(answer, dict)) or "result" in expected or not expected:
        return False
    inner = answer.get("result")
    return isinstance(inner, dict) and set(answer) <= {"result", "error"} and bool(set(expected) & set(inner))


def _expects_error(case: Case) -> bool:
    expected = case.response if isinstance(case.response, dict) else {}
    return "error" in expected or any(re.match(r"\$\.error\b", e.path) for e in case.checks)


def _subset(expected: Any, actual: Any, path: str) -> list[str]:
    return [_say(d) for d in subset_differences(expected, actual, path, regex_key=REGEX)]


def _say(d: Difference) -> str:
    if d.kind == "regex":
        return f"{d.path}: {_show(d.actual)} does not match /{d.expected}/"
    if d.kind == "mapping":
        return f"{d.path}: expected a mapping, got {_show(d.actual)}"
    if d.kind == "missing":
        return f"{d.path}: missing (got keys {sorted(d.actual)})"
    if d.kind == "list":
        return f"{d.path}: expected a list of {len(d.expected)}, got {_show(d.actual)}"
    return f"{d.path}: expected {_show(d.expected)}, got {_show(d.actual)}"


def _expect(e: Expectation, data: Any, where: str) -> str | None:
    matches = [m.value for m in jsonpath(e.path).find(data)]
    actual = None if not matches else matches[0] if len(matches) == 1 else matches
    if _holds(e.operator, actual, e.value):
        return None
    return f"{where} {e.path} {e.operator} {_show(e.value)}: got {_show(actual)}"


def _holds(op: str, actual: Any, expected: Any) -> bool:
    """cxas-scrapi's operators, with its semantics."""
    try:
        if op == "equals":
            return bool(actual == expected)
        if op == "contains":
            return isinstance(actual, (str, list, dict)) and expected in actual
        if op == "greater_than":
            return bool(actual > expected)
        if op == "less_than":
            return bool(actual < expected)
        if op == "length_equals":
            return bool(len(actual) == expected)
        if op == "length_greater_than":
            return bool(len(actual) > expected)
        if op == "length_less_than":
            return bool(len(actual) < expected)
    except TypeError:
        return False
    if op == "is_null":
        return actual is None
    return actual is not None  # is_not_null


def _show(value: Any) -> str:
    return clip(repr(value), 200)

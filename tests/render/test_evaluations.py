"""Rendering an evaluation report: text names the evaluation and the expectation, the Markdown
comment carries its marker, the JUnit XML parses and counts what the report counts."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from cesync.core.evalreport import Report, build_report
from cesync.render.evaluations import EVAL_MARKER, render_eval, render_eval_junit, render_eval_markdown

APP = "projects/p/locations/us/apps/a"


def _result(evaluation: str, i: int, status: str, outcomes: list[dict[str, object]]) -> dict[str, object]:
    return {
        "name": f"{APP}/evaluations/{evaluation}/results/r{i}",
        "executionState": "COMPLETED",
        "evaluationStatus": status,
        "goldenResult": {"turnReplayResults": [{"expectationOutcome": outcomes}]},
    }


FAILED_RESPONSE = {
    "expectation": {
        "toolResponse": {"tool": f"{APP}/tools/refund-policy", "response": {"result": {"refund": 80}}},
        "note": "full refund",
    },
    "observedToolResponse": {"tool": f"{APP}/tools/refund-policy", "response": {"result": {"refund": 76, "eligible": True}}},
    "outcome": "FAIL",
}


def report(runs: int = 1) -> Report:
    evaluations = [
        {"name": f"{APP}/evaluations/ok", "displayName": "Passes"},
        {"name": f"{APP}/evaluations/bad", "displayName": "Refund | full"},
        {"name": f"{APP}/evaluations/chat", "displayName": "Chat"},
    ]
    results = []
    for i in range(runs):
        results.append(_result("ok", i, "PASS", [{"expectation": {"toolCall": {"tool": "t"}}, "outcome": "PASS"}]))
        results.append(_result("bad", i, "FAIL", [FAILED_RESPONSE]))
        results.append(_result("chat", i, "SKIPPED", [{"expectation": {"agentResponse": {}}, "outcome": "SKIPPED"}]))
    run = {"name": f"{APP}/evaluationRuns/run1", "runCount": runs}
    return build_report("dev", APP, run, evaluations, results, None, thresholds_from="app")


def test_text_names_the_evaluation_and_the_expectation_that_missed() -> None:
    text = render_eval(report(), "text")
    assert "PASS  ok (Passes)" in text
    assert "FAIL  bad" in text
    assert 'turn 1, toolResponse tools/refund-policy (full refund): expected response {"result": {"refund": 80}}, ' in text
    assert 'the tool answered {"result": {"refund": 76}}' in text  # what the expectation names, not the whole answer
    assert "NOT EVALUATED  chat" in text
    assert "3 evaluations: 1 passed, 1 failed, 1 not evaluated" in text


def test_runs_are_counted_and_a_line_said_by_every_run_is_said_once() -> None:
    text = render_eval(report(runs=3), "text")
    assert "0/3 runs passed (0%)" in text and "3/3 runs passed (100%)" in text
    assert text.count("expected response") == 1 and "(run 1, 2, 3)" in text


def test_markdown_starts_with_its_own_marker_and_escapes_cells() -> None:
    body = render_eval_markdown(report())
    assert body.splitlines()[0] == EVAL_MARKER.format(env="dev", app=APP) != "<!-- cesync-plan:dev:" + APP + " -->"
    assert "Refund \\| full" in body
    assert "**Evaluations did not pass.**" in body


@pytest.mark.parametrize("runs", [1, 2])
def test_junit_parses_and_counts_what_the_report_counts(runs: int) -> None:
    r = report(runs)
    root = ET.fromstring(render_eval_junit(r))
    (suite,) = root.findall("testsuite")
    assert suite.get("tests") == "3" and suite.get("failures") == "2" and suite.get("errors") == "0"
    cases = {c.get("classname"): c for c in suite.findall("testcase")}
    assert set(cases) == {"evaluations.ok", "evaluations.bad", "evaluations.chat"}
    assert cases["evaluations.ok"].find("failure") is None
    failure = cases["evaluations.bad"].find("failure")
    assert failure is not None and "toolResponse tools/refund-policy" in (failure.get("message") or "")
    assert cases["evaluations.chat"].find("failure").get("type") == "not evaluated"  # type: ignore[union-attr]
    assert suite.find("properties/property").get("value") == r.run  # type: ignore[union-attr]

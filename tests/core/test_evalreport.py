"""Judging evaluation results against the thresholds (pure): generated results, each verdict checked."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cesync.core.evalreport import Report, build_report, judge_result

APP = "projects/p/locations/us/apps/a"
EVALUATION = {"name": f"{APP}/evaluations/refunds", "displayName": "Refunds", "tags": ["tools"]}
CONDITIONS = ["toolCall", "toolResponse", "agentResponse", "agentTransfer"]


@st.composite
def outcomes(draw: st.DrawFn) -> dict[str, Any]:
    condition = draw(st.sampled_from(CONDITIONS))
    expectation: dict[str, Any] = {condition: {"tool": f"{APP}/tools/rate"} if condition.startswith("tool") else {}}
    if draw(st.booleans()):
        expectation["note"] = draw(st.sampled_from(["check_rate", "refund_called"]))
    if draw(st.integers(0, 9)) == 0:
        expectation["skipEvaluation"] = True
    out: dict[str, Any] = {"expectation": expectation, "outcome": draw(st.sampled_from(["PASS", "FAIL", "SKIPPED", 1, 2, 3]))}
    if condition == "toolCall" and draw(st.booleans()):
        out["toolInvocationResult"] = {"parameterCorrectnessScore": draw(st.sampled_from([0.0, 0.5, 0.8, 1.0]))}
    return out


@st.composite
def results(draw: st.DrawFn) -> dict[str, Any]:
    turns = draw(st.lists(st.lists(outcomes(), max_size=4), min_size=1, max_size=3))
    return {
        "name": f"{APP}/evaluations/refunds/results/r1",
        "executionState": draw(st.sampled_from(["COMPLETED", 2])),
        "evaluationStatus": draw(st.sampled_from(["PASS", "FAIL", "SKIPPED", 1, 2])),
        "goldenResult": {"turnReplayResults": [{"expectationOutcome": t} for t in turns]},
    }


def _name(value: Any) -> str:
    return {1: "PASS", 2: "FAIL", 3: "SKIPPED"}.get(value, value) if isinstance(value, int) else str(value)


@given(results(), st.sampled_from([None, 0.5, 0.8]))
def test_a_result_passes_only_when_ces_says_pass_and_every_score_meets_its_threshold(
    result: dict[str, Any], threshold: float | None
) -> None:
    given_thresholds = (
        {
            "goldenEvaluationMetricsThresholds": {
                "expectationLevelMetricsThresholds": {"toolInvocationParameterCorrectnessThreshold": threshold}
            }
        }
        if threshold is not None
        else None
    )
    wanted = 1.0 if threshold is None else threshold
    judged = judge_result(result, EVALUATION, given_thresholds)
    counted = [
        (t, o)
        for t, turn in enumerate(result["goldenResult"]["turnReplayResults"], 1)
        for o in turn["expectationOutcome"]
        if not o["expectation"].get("skipEvaluation")
    ]
    failed = [(t, o) for t, o in counted if _name(o["outcome"]) == "FAIL"]
    low = [
        (t, o)
        for t, o in counted
        if _name(o["outcome"]) != "FAIL" and o.get("toolInvocationResult", {}).get("parameterCorrectnessScore", 1.0) < wanted
    ]
    unjudged = [(t, o) for t, o in counted if _name(o["outcome"]) not in ("PASS", "FAIL")]
    status = _name(result["evaluationStatus"])
    if failed or low or status == "FAIL":
        assert judged.status == "failed"
        for t, o in failed + low:  # each miss is named: its turn, its kind, its note
            condition = next(c for c in CONDITIONS if c in o["expectation"])
            assert any(
                f.turn == t and f.condition == condition and f.note == o["expectation"].get("note", "") for f in judged.misses
            )
    elif status == "PASS" and not unjudged:
        assert judged.status == "passed" and not judged.misses
    else:
        assert judged.status == "not evaluated"  # never a pass


def test_a_result_that_did_not_complete_is_an_error_with_its_reason() -> None:
    result = {"name": "r", "executionState": "ERROR", "errorInfo": {"errorMessage": "quota"}}
    judged = judge_result(result, EVALUATION, None)
    assert judged.status == "error" and "quota" in judged.error


def test_the_turn_and_evaluation_overrides_win_over_the_given_thresholds() -> None:
    result = {
        "name": "r",
        "executionState": "COMPLETED",
        "evaluationStatus": "PASS",
        "goldenResult": {
            "turnReplayResults": [{"expectationOutcome": [], "overallToolInvocationResult": {"toolInvocationScore": 0.5}}]
        },
    }
    loose = {
        "goldenEvaluationMetricsThresholds": {"turnLevelMetricsThresholds": {"overallToolInvocationCorrectnessThreshold": 0.4}}
    }
    assert judge_result(result, EVALUATION, loose).status == "passed"
    assert judge_result(result, EVALUATION, None).status == "failed"  # v1beta's default: 1.0
    strict_turn = {
        **EVALUATION,
        "golden": {"turns": [{"turnLevelMetricsThresholdsOverride": {"overallToolInvocationCorrectnessThreshold": 0.9}}]},
    }
    judged = judge_result(result, strict_turn, loose)
    assert judged.status == "failed" and "0.50 is below the threshold 0.90" in judged.misses[0].message


@given(st.lists(st.sampled_from(["PASS", "FAIL", "SKIPPED"]), min_size=1, max_size=6), st.sampled_from([0.5, 0.6, 1.0]))
def test_the_pass_rate_over_runs_decides_and_the_report_round_trips(statuses: list[str], rate: float) -> None:
    results = [
        {"name": f"{EVALUATION['name']}/results/r{i}", "executionState": "COMPLETED", "evaluationStatus": s, "goldenResult": {}}
        for i, s in enumerate(statuses)
    ]
    run = {"name": f"{APP}/evaluationRuns/x", "runCount": len(statuses)}
    report = build_report("dev", APP, run, [EVALUATION], results, None, thresholds_from="app", min_pass_rate=rate)
    (outcome,) = report.outcomes
    assert outcome.passed_runs == statuses.count("PASS")
    assert (outcome.status == "passed") == (statuses.count("PASS") / len(statuses) >= rate) == report.passed
    if not report.passed:
        assert outcome.status == ("failed" if "FAIL" in statuses else "not evaluated")
    assert Report.from_dict(report.to_dict()) == report


answers = st.dictionaries(
    st.text("abcdefgh", min_size=1, max_size=6),
    st.one_of(st.booleans(), st.integers(-99, 99), st.text("xyz", max_size=4)),
    min_size=1,
    max_size=4,
)


@given(answers, st.booleans())
def test_a_missed_golden_shows_what_the_tool_really_answered(returned: dict[str, Any], nested: bool) -> None:
    """A Python tool answers {"result": ...}: a golden written as the bare return value said
    'the tool answered {}' (issue #38, finding 9). The report shows the answer, and why it missed."""
    expected = returned if nested else {"result": {**returned, "other": 1}}
    observed = {"result": returned}
    outcome = {
        "expectation": {"toolResponse": {"tool": f"{APP}/tools/rate", "response": expected}},
        "outcome": "FAIL",
        "observedToolResponse": {"tool": f"{APP}/tools/rate", "response": observed},
    }
    result = {
        "name": "r",
        "executionState": "COMPLETED",
        "goldenResult": {"turnReplayResults": [{"expectationOutcome": [outcome]}]},
    }
    [miss] = judge_result(result, EVALUATION, None).misses
    assert "the tool answered {}" not in miss.message
    assert '"result"' in miss.message.split("the tool answered", 1)[1], miss.message
    assert ("nested under 'result'" in miss.message) == nested, miss.message

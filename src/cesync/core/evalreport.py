"""What an evaluation run says, judged against the metrics thresholds (pure, plain data).

The input is what CES v1beta answers: the evaluations (``Evaluation``), the results of
one run (``EvaluationResult``: ``evaluationStatus``, ``executionState``,
``goldenResult.turnReplayResults[].expectationOutcome[]`` with each expectation, what was
observed, its ``outcome`` and ``toolInvocationResult``, the turn's
``overallToolInvocationResult`` and ``semanticSimilarityResult``) and the thresholds
(``EvaluationMetricsThresholds``: the repo's app settings when they name them, else the
app's). A result passes when CES says PASS and every score it carries meets its threshold:
the most specific one given (the expectation's override, the turn's, the evaluation's,
then the thresholds), else v1beta's defaults (parameter and overall tool invocation
correctness 1.0, semantic similarity 3). SKIPPED or unspecified is "not evaluated": not a
pass. With several runs an evaluation passes when at least ``min_pass_rate`` of its runs do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..api.jsonvalue import value_at
from .scrubber import clip

__all__ = ["REPORT_FORMAT", "Finding", "Outcome", "Report", "RunOutcome", "build_report", "judge_result"]

REPORT_FORMAT = "cesync-eval-report/1"
PARAMETER_DEFAULT, OVERALL_DEFAULT, SIMILARITY_DEFAULT = 1.0, 1.0, 3  # v1beta EvaluationMetricsThresholds' docs
STATUSES = ("passed", "failed", "not evaluated", "error")
# proto enums arrive as names or numbers ($alt=json;enum-encoding=int)
OUTCOME_NAMES = {0: "OUTCOME_UNSPECIFIED", 1: "PASS", 2: "FAIL", 3: "SKIPPED"}
EXECUTION_NAMES = {0: "EXECUTION_STATE_UNSPECIFIED", 1: "RUNNING", 2: "COMPLETED", 3: "ERROR", 4: "CANCELLED", 5: "QUEUED"}
CONDITIONS = ("toolCall", "toolResponse", "agentResponse", "agentTransfer", "updatedVariables", "mockToolResponse", "noToolCalls")


@dataclass(frozen=True)
class Finding:
    """One expectation that missed (or was not evaluated), where it is and why."""

    turn: int  # 1-based, as people count
    step: int  # 1-based, among the turn's expectation outcomes (0: the turn or evaluation as a whole)
    condition: str  # toolCall, toolResponse, agentResponse, ...
    subject: str  # the tool or agent it names ("" when none)
    note: str  # the expectation's own note
    message: str

    def describe(self) -> str:
        what = f"{self.condition} {self.subject}".strip()
        return f"turn {self.turn}, {what}" + (f" ({self.note})" if self.note else "") + f": {self.message}"


@dataclass(frozen=True)
class RunOutcome:
    result: str  # the EvaluationResult's name
    status: str  # one of STATUSES
    misses: tuple[Finding, ...] = ()
    unjudged: tuple[Finding, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class Outcome:
    """One evaluation over the runs."""

    name: str
    id: str
    display_name: str
    tags: tuple[str, ...]
    runs: tuple[RunOutcome, ...]
    status: str

    @property
    def passed_runs(self) -> int:
        return sum(r.status == "passed" for r in self.runs)

    @property
    def pass_rate(self) -> float:
        return self.passed_runs / len(self.runs) if self.runs else 0.0


@dataclass(frozen=True)
class Report:
    environment: str
    app: str
    run: str  # the EvaluationRun's name
    run_count: int
    min_pass_rate: float
    thresholds_from: str  # "repo", "app" or "defaults"
    outcomes: tuple[Outcome, ...] = field(default=())

    @property
    def passed(self) -> bool:
        return all(o.status == "passed" for o in self.outcomes)

    def counts(self) -> dict[str, int]:
        return {s: sum(o.status == s for o in self.outcomes) for s in STATUSES}

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["format"] = REPORT_FORMAT
        data["passed"] = self.passed
        data["counts"] = self.counts()
        for o, d in zip(self.outcomes, data["outcomes"], strict=True):
            d["passedRuns"], d["passRate"] = o.passed_runs, round(o.pass_rate, 4)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        """A report read back (``cesync comment`` of a saved ``eval --format json``)."""
        if data.get("format") != REPORT_FORMAT:
            raise ValueError(f"not a cesync evaluation report (format {data.get('format')!r}, expected {REPORT_FORMAT})")
        outcomes = tuple(
            Outcome(
                name=str(o["name"]),
                id=str(o["id"]),
                display_name=str(o["display_name"]),
                tags=tuple(o.get("tags", ())),
                status=str(o["status"]),
                runs=tuple(
                    RunOutcome(
                        result=str(r["result"]),
                        status=str(r["status"]),
                        misses=tuple(Finding(**f) for f in r.get("misses", ())),
                        unjudged=tuple(Finding(**f) for f in r.get("unjudged", ())),
                        error=str(r.get("error", "")),
                    )
                    for r in o.get("runs", ())
                ),
            )
            for o in data.get("outcomes", ())
        )
        keys = ("environment", "app", "run", "run_count", "min_pass_rate", "thresholds_from")
        return cls(**{k: data[k] for k in keys}, outcomes=outcomes)


# --- judging one result -----------------------------------------------------------------------


def _name(value: Any, names: dict[int, str]) -> str:
    return names.get(value, str(value)) if isinstance(value, int) else str(value or "")


def _dig(data: Any, *path: str) -> Any:
    return value_at(data, path)


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


# A reply is the server's: any part of it may be of any JSON type. Each part is read through
# these, so a wrong type counts as absent rather than ending the report in an internal error.
def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _threshold(*values: Any) -> float:
    """The first threshold given as a number (the last value is the default, always one)."""
    return next(n for n in map(_number, values) if n is not None)


def _subject(condition: str, body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    if condition in ("toolCall", "toolResponse", "mockToolResponse"):
        ref = _obj(body.get("toolsetTool"))
        name = str(body.get("tool") or (f"{ref.get('toolset', '')}/tools/{ref.get('toolId', '')}" if ref else ""))
        return _short_name(name)
    if condition == "agentTransfer":
        return _short_name(str(body.get("targetAgent") or ""))
    return ""


def _short_name(name: str) -> str:
    """tools/x, toolsets/y/tools/z, agents/a: the part of a full name below its app."""
    return name.split("/apps/", 1)[-1].split("/", 1)[-1] if "/apps/" in name else name


def _projection(expected: Any, observed: Any) -> Any:
    """observed, cut to the keys expected names: what to show beside the expectation."""
    if isinstance(expected, dict) and isinstance(observed, dict):
        return {k: _projection(v, observed[k]) for k, v in expected.items() if k in observed}
    return observed


def _shown(expected: Any, observed: Any) -> Any:
    """What to show of the answer beside the expectation: cut to the keys the expectation names
    when the answer has them all; the whole answer otherwise, as a cut to nothing read "the tool
    answered {}" when it had answered {"result": {...}}."""
    if isinstance(expected, dict) and isinstance(observed, dict) and expected and set(expected) <= set(observed):
        return _projection(expected, observed)
    return observed


def _nested_in_result(expected: Any, observed: Any) -> bool:
    """The expectation is the function's own return value, and the answer holds it under 'result'."""
    if not (isinstance(expected, dict) and isinstance(observed, dict)) or "result" in expected or not expected:
        return False
    inner = observed.get("result")
    return isinstance(inner, dict) and set(observed) <= {"result", "error"} and bool(set(expected) & set(inner))


def _compact(value: Any) -> str:
    return clip(json.dumps(value, sort_keys=True, ensure_ascii=False), 160)


def _why(condition: str, outcome: dict[str, Any]) -> str:
    expectation = _obj(outcome.get("expectation"))
    if condition == "toolResponse":
        expected = _dig(expectation, "toolResponse", "response")
        observed = _dig(outcome, "observedToolResponse", "response")
        if observed is None:
            return f"expected response {_compact(expected)}; no response was observed"
        said = f"expected response {_compact(expected)}, the tool answered {_compact(_shown(expected, observed))}"
        if _nested_in_result(expected, observed):
            said += "; a Python tool's answer is nested under 'result': expect {\"result\": ...}"
        return said
    if condition == "toolCall":
        explanation = _dig(outcome, "toolInvocationResult", "explanation")
        observed = outcome.get("observedToolCall")
        said = f"expected args {_compact(_dig(expectation, 'toolCall', 'args') or {})}"
        said += (
            f", observed {_compact(observed.get('args') or {})}" if isinstance(observed, dict) else ", no such call was observed"
        )
        return said + (f" ({explanation})" if explanation else "")
    for key in ("observedAgentResponse", "observedAgentTransfer"):
        if key in outcome:
            return f"expected {_compact(expectation.get(condition))}, observed {_compact(outcome[key])}"
    return f"expected {_compact(expectation.get(condition))}"


def _turn_threshold(evaluation: Mapping[str, Any], turn: int, key: str) -> Any:
    turns = _items(_dig(evaluation, "golden", "turns"))
    return _dig(turns[turn], "turnLevelMetricsThresholdsOverride", key) if turn < len(turns) else None


def judge_result(result: Mapping[str, Any], evaluation: Mapping[str, Any], thresholds: Mapping[str, Any] | None) -> RunOutcome:
    """One EvaluationResult: passed, failed (with what missed), not evaluated, or error."""
    name = str(result.get("name", ""))
    state = _name(result.get("executionState"), EXECUTION_NAMES)
    if state in ("ERROR", "CANCELLED") or (state != "COMPLETED" and result.get("errorInfo")):
        info = _obj(result.get("errorInfo"))
        message = info.get("userFacingErrorMessage") or info.get("errorMessage") or _dig(result, "error", "message")
        return RunOutcome(name, "error", error=f"{state.lower()}: {message or 'no reason given'}")
    if state != "COMPLETED":
        return RunOutcome(name, "error", error=f"the result is {state.lower() or 'in no state'}, not completed")
    override = _obj(evaluation.get("evaluationMetricsThresholdOverride"))
    given = _obj(thresholds)

    def level(*path: str) -> Any:
        return _first(
            _dig(override, "goldenEvaluationMetricsThresholds", *path), _dig(given, "goldenEvaluationMetricsThresholds", *path)
        )

    misses: list[Finding] = []
    unjudged: list[Finding] = []
    for t, turn in enumerate(map(_obj, _items(_dig(result, "goldenResult", "turnReplayResults")))):
        for s, outcome in enumerate(map(_obj, _items(turn.get("expectationOutcome")))):
            expectation = _obj(outcome.get("expectation"))
            condition = next((c for c in CONDITIONS if c in expectation), "expectation")
            finding = (t + 1, s + 1, condition, _subject(condition, expectation.get(condition)), str(expectation.get("note", "")))
            verdict = _name(outcome.get("outcome"), OUTCOME_NAMES)
            if expectation.get("skipEvaluation"):
                continue
            if verdict == "FAIL":
                misses.append(Finding(*finding, _why(condition, outcome)))
            elif verdict != "PASS":
                unjudged.append(
                    Finding(*finding, "not evaluated" + (f": {turn['conversation']}" if turn.get("conversation") else ""))
                )
            score = _number(_dig(outcome, "toolInvocationResult", "parameterCorrectnessScore"))
            wanted = _threshold(
                _dig(expectation, "expectationLevelMetricsThresholdsOverride", "toolInvocationParameterCorrectnessThreshold"),
                level("expectationLevelMetricsThresholds", "toolInvocationParameterCorrectnessThreshold"),
                PARAMETER_DEFAULT,
            )
            if score is not None and score < wanted and verdict != "FAIL":
                misses.append(Finding(*finding, f"parameter correctness {score:.2f} is below the threshold {wanted:.2f}"))
        overall = _number(_dig(turn, "overallToolInvocationResult", "toolInvocationScore"))
        wanted = _threshold(
            _turn_threshold(evaluation, t, "overallToolInvocationCorrectnessThreshold"),
            level("turnLevelMetricsThresholds", "overallToolInvocationCorrectnessThreshold"),
            OVERALL_DEFAULT,
        )
        if overall is not None and overall < wanted:
            misses.append(Finding(t + 1, 0, "turn", "", "", f"tool invocation {overall:.2f} is below the threshold {wanted:.2f}"))
        similarity = _number(_dig(turn, "semanticSimilarityResult", "score"))
        wanted = _threshold(
            _turn_threshold(evaluation, t, "semanticSimilaritySuccessThreshold"),
            level("turnLevelMetricsThresholds", "semanticSimilaritySuccessThreshold"),
            SIMILARITY_DEFAULT,
        )
        if similarity is not None and similarity < wanted:
            misses.append(
                Finding(t + 1, 0, "turn", "", "", f"semantic similarity {similarity:g} is below the threshold {wanted:g}")
            )
    status = _name(result.get("evaluationStatus"), OUTCOME_NAMES)
    if "scenarioResult" in result and status not in ("PASS", "FAIL"):
        unjudged.append(
            Finding(0, 0, "scenario", "", "", "not evaluated: " + str(_dig(result, "scenarioResult", "conversation") or ""))
        )
    if misses or status == "FAIL":
        if not misses:
            misses.append(Finding(0, 0, "evaluation", "", "", "CES reports the evaluation failed"))
        return RunOutcome(name, "failed", tuple(misses), tuple(unjudged))
    if status == "PASS" and not unjudged:
        return RunOutcome(name, "passed")
    return RunOutcome(
        name, "not evaluated", (), tuple(unjudged) or (Finding(0, 0, "evaluation", "", "", f"CES reports {status}"),)
    )


def build_report(
    environment: str,
    app: str,
    run: Mapping[str, Any],
    evaluations: Sequence[Mapping[str, Any]],
    results: Sequence[Mapping[str, Any]],
    thresholds: Mapping[str, Any] | None,
    *,
    thresholds_from: str,
    tags: Mapping[str, tuple[str, ...]] | None = None,
    min_pass_rate: float = 1.0,
) -> Report:
    """The report of one run: each evaluation's results judged, in the order the run names them."""
    by_evaluation: dict[str, list[Mapping[str, Any]]] = {}
    for r in results:
        by_evaluation.setdefault(str(r.get("name", "")).split("/results/", 1)[0], []).append(r)
    outcomes = []
    for evaluation in evaluations:
        name = str(evaluation.get("name", ""))
        runs = tuple(judge_result(r, evaluation, thresholds) for r in by_evaluation.get(name, []))
        rate = sum(r.status == "passed" for r in runs) / len(runs) if runs else 0.0
        if runs and rate >= min_pass_rate:
            status = "passed"
        elif any(r.status == "failed" for r in runs):
            status = "failed"
        elif any(r.status == "error" for r in runs) or not runs:
            status = "error"
        else:
            status = "not evaluated"
        rid = name.rsplit("/", 1)[-1]
        outcomes.append(
            Outcome(
                name=name,
                id=rid,
                display_name=str(evaluation.get("displayName") or rid),
                tags=tuple((tags or {}).get(rid, tuple(map(str, _items(evaluation.get("tags")))))),
                runs=runs,
                status=status,
            )
        )
    count = run.get("runCount")
    return Report(
        environment=environment,
        app=app,
        run=str(run.get("name", "")),
        run_count=int(count) if isinstance(count, (int, float)) and count else 1,
        min_pass_rate=min_pass_rate,
        thresholds_from=thresholds_from,
        outcomes=tuple(outcomes),
    )

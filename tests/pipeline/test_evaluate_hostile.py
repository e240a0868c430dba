"""cesync eval against a hostile server: a run or result name outside the app is never read,
a run cannot list more results than it was asked for, and whatever any reply holds (generated
garbage in the app, the evaluations list, the operation, the run, each result) ends in a clear
message and exit 0 or 1, never an internal error. A real HTTP server (tests/hostile.py) answers."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import cesync_in_process, make_repo
from tests.hostile import APP, HostileServer

EVALUATION = f"{APP}/evaluations/greets"
RUN = f"{APP}/evaluationRuns/r1"
RESULT = f"{EVALUATION}/results/x1"
GOLDEN = """displayName: Greets Ada
golden:
  turns:
    - steps:
        - userInput: {text: Hi Ada}
        - expectation:
            toolCall:
              tool: {ref: tools/greet}
              args: {name: Ada}
"""
PASSED = {
    "name": RESULT,
    "executionState": "COMPLETED",
    "evaluationStatus": "PASS",
    "goldenResult": {"turnReplayResults": [{"expectationOutcome": [{"expectation": {"toolCall": {}}, "outcome": "PASS"}]}]},
}


def _replies(**over: Any) -> dict[str, Any]:
    """What a well-behaved CES answers to each call of eval, with some replaced."""
    replies: dict[str, Any] = {
        "app": {"name": APP, "displayName": "a", "etag": "e0"},
        "evaluations": {"evaluations": [{"name": EVALUATION, "displayName": "Greets Ada"}]},
        "operation": {
            "name": "projects/p/locations/us/operations/o1",
            "done": True,
            "metadata": {"evaluationRun": RUN},
            "response": {"evaluationRun": RUN},
        },
        "run": {"name": RUN, "state": "COMPLETED", "runCount": 1, "evaluationResults": [RESULT]},
        "result": PASSED,
    }
    return {**replies, **over}


def _answer(replies: dict[str, Any]) -> Callable[[str, str, dict[str, str]], tuple[int, bytes]]:
    def answer(method: str, path: str, query: dict[str, str]) -> tuple[int, bytes]:
        path = path.removeprefix("/v1beta/")
        if method == "POST" and path == f"{APP}:runEvaluation":
            which = "operation"
        elif path == APP:
            which = "app"
        elif path == f"{APP}/evaluations":
            which = "evaluations"
        elif "/evaluationRuns/" in path:
            which = "run"
        elif "/results/" in path:
            which = "result"
        else:
            return 404, json.dumps({"error": {"code": 404, "status": "NOT_FOUND", "message": path}}).encode()
        body = replies[which]
        return 200, body if isinstance(body, bytes) else json.dumps(body).encode()

    return answer


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("eval"), {"evaluations/greets.yaml": GOLDEN})


def _eval(repo: Path, server: HostileServer, *args: str) -> tuple[int, str, str]:
    r = cesync_in_process("eval", "--dir", str(repo), "--env", "local", "--endpoint", server.url, *args)
    return r.returncode, r.stdout, r.stderr


def test_a_well_behaved_server_passes(repo: Path) -> None:
    with HostileServer(_answer(_replies())) as server:
        code, out, err = _eval(repo, server)
    assert code == 0, out + err


def _requested(server: HostileServer) -> list[str]:
    return [p.removeprefix("/v1beta/") for _, p, _ in server.requests]


OUTSIDE_RUNS = [
    f"{APP}/evaluationRuns/../../../../other/locations/us/apps/b/evaluationRuns/r",
    f"{APP}/evaluationRuns/r1/../../tools/greet",
    f"{APP}/evaluationRuns/r1?alt=media",
    f"{APP}/evaluationRuns/r1#x",
    f"{APP}/evaluationRuns/r1%2F..%2F..",
    f"{APP}/evaluationRuns/r1/more",
    f"{APP}/evaluationRuns/",
]


@pytest.mark.parametrize("name", OUTSIDE_RUNS)
def test_a_run_name_outside_the_app_is_never_read(repo: Path, name: str) -> None:
    for replies in (
        _replies(operation={**_replies()["operation"], "response": {"evaluationRun": name}}),
        _replies(operation={**_replies()["operation"], "metadata": {"evaluationRun": name}, "response": {}}),
    ):
        with HostileServer(_answer(replies)) as server:
            code, out, err = _eval(repo, server)
        assert code == 1 and "evaluation run" in err and "internal error" not in err, out + err
        assert all("/evaluationRuns/" not in p for p in _requested(server)), _requested(server)


OUTSIDE_RESULTS = [
    f"{EVALUATION}/results/../../../../../../other/locations/us/apps/b/evaluations/e/results/x",
    f"{APP}/evaluations/../tools/greet",
    f"{EVALUATION}/results/x1?alt=media",
    f"{EVALUATION}/results/x1#y",
    f"{EVALUATION}/results/x1%2F..",
    f"{EVALUATION}/results/x1/more",
    f"{APP}/evaluations/other/results/x1",  # an evaluation the run was not asked to run
]


@pytest.mark.parametrize("name", OUTSIDE_RESULTS)
def test_a_result_name_outside_the_run_is_never_read(repo: Path, name: str) -> None:
    with HostileServer(_answer(_replies(run={**_replies()["run"], "evaluationResults": [name]}))) as server:
        code, out, err = _eval(repo, server)
    assert code == 1 and "internal error" not in err, out + err
    assert all("/results/" not in p for p in _requested(server)), _requested(server)


def test_a_run_cannot_list_more_results_than_it_was_asked_for(repo: Path) -> None:
    names = [f"{EVALUATION}/results/x{i}" for i in range(50_000)]
    with HostileServer(_answer(_replies(run={**_replies()["run"], "evaluationResults": names}))) as server:
        code, out, err = _eval(repo, server, "--runs", "3")
    assert code == 1 and "50000 results" in err and "internal error" not in err, out + err
    assert not any("/results/" in p for p in _requested(server))


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)
_keys = st.sampled_from(
    [
        "name", "state", "done", "error", "response", "metadata", "evaluationRun", "evaluationResults", "runCount",
        "executionState", "evaluationStatus", "goldenResult", "turnReplayResults", "expectationOutcome", "expectation",
        "outcome", "toolCall", "toolResponse", "toolInvocationResult", "parameterCorrectnessScore", "conversation",
        "overallToolInvocationResult", "toolInvocationScore", "semanticSimilarityResult", "score", "errorInfo",
        "scenarioResult", "evaluationMetricsThresholds", "goldenEvaluationMetricsThresholds", "evaluations", "progress",
        "turnLevelMetricsThresholds", "expectationLevelMetricsThresholds", "observedToolCall", "args", "response", "note",
    ]
)  # fmt: skip
_shaped = st.recursive(
    _json, lambda inner: st.dictionaries(_keys, inner, max_size=4) | st.lists(inner, max_size=2), max_leaves=14
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value, containers included."""
    found = [path]
    if isinstance(value, dict):
        found += [p for k, v in value.items() for p in _paths(v, (*path, k))]
    elif isinstance(value, list):
        found += [p for i, v in enumerate(value) for p in _paths(v, (*path, i))]
    return found


def _put(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    where = copy
    for key in path[:-1]:
        where = where[key]
    where[path[-1]] = new
    return copy


@st.composite
def _near(draw: st.DrawFn, base: Any) -> Any:
    """A good reply with one to three of its places (at any depth) replaced by garbage."""
    reply = base
    for _ in range(draw(st.integers(1, 3))):
        reply = _put(reply, draw(st.sampled_from(_paths(reply))), draw(_shaped))
    return reply


THRESHOLDS = {
    "goldenEvaluationMetricsThresholds": {
        "turnLevelMetricsThresholds": {
            "overallToolInvocationCorrectnessThreshold": 1.0,
            "semanticSimilaritySuccessThreshold": 3,
        },
        "expectationLevelMetricsThresholds": {"toolInvocationParameterCorrectnessThreshold": 1.0},
    }
}
RICH = {  # every part of a result the report reads
    **PASSED,
    "evaluationStatus": "FAIL",
    "errorInfo": {"errorMessage": "m", "userFacingErrorMessage": "u"},
    "scenarioResult": {"conversation": "c", "task": "t"},
    "goldenResult": {
        "turnReplayResults": [
            {
                "conversation": "user: hi",
                "expectationOutcome": [
                    {
                        "expectation": {"toolCall": {"tool": f"{APP}/tools/greet", "args": {"name": "Ada"}}, "note": "n"},
                        "observedToolCall": {"tool": f"{APP}/tools/greet", "args": {"name": "Ada"}},
                        "outcome": "FAIL",
                        "toolInvocationResult": {"parameterCorrectnessScore": 0.5, "explanation": "e"},
                    },
                    {
                        "expectation": {"toolResponse": {"tool": "t", "response": {"a": 1}}, "skipEvaluation": False},
                        "observedToolResponse": {"response": {"a": 2}},
                        "outcome": 3,
                    },
                    {"expectation": {"agentTransfer": {"targetAgent": f"{APP}/agents/x"}}, "observedAgentTransfer": {}},
                ],
                "overallToolInvocationResult": {"toolInvocationScore": 0.5},
                "semanticSimilarityResult": {"score": 2},
            }
        ]
    },
}
BASES = {"app": {"name": APP, "evaluationMetricsThresholds": THRESHOLDS}, "result": RICH}


@pytest.fixture(scope="module")
def server() -> Iterator[HostileServer]:
    """One server for every generated case, each setting its answer: a server's stop waits for its
    next poll, a twentieth of a second a case."""
    with HostileServer(_answer(_replies())) as s:
        yield s


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data(), which=st.sampled_from(["app", "evaluations", "operation", "run", "result"]))
def test_generated_replies_end_in_a_result_or_a_clear_error(
    repo: Path, server: HostileServer, data: st.DataObject, which: str
) -> None:
    good = _replies()
    base = BASES.get(which, good[which])
    reply = data.draw(st.one_of(_shaped, _near(base), _near(base)), label=which)
    server.answer = _answer({**good, which: reply})
    code, out, err = _eval(repo, server)
    assert code in (0, 1), out + err
    assert "internal error" not in err, err

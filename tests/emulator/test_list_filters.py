"""The list filters the v1beta evaluation kinds document (emulator/list_filters.py), through Google's
own v1beta client: ListEvaluations' evaluationFilter (evaluation_datasets) and evaluationRunFilter
(create_time, initiated_by, app_version_display_name of its runs), ListScheduledEvaluationRuns'
filter (request.evaluations, request.evaluation_dataset); anything else is INVALID_ARGUMENT
naming what is supported."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from google.api_core import exceptions
from google.cloud import ces_v1, ces_v1beta
from hypothesis import given
from hypothesis import strategies as st

from cesync.emulator.errors import RpcError
from cesync.emulator.list_filters import keep_of
from cesync.emulator.server import BackgroundServer
from tests.helpers import fast_polling, official_client, official_evaluation_client

APP = "projects/p/locations/us/apps/a"
Beta = ces_v1beta.EvaluationServiceClient


@pytest.fixture
def beta(emulator: BackgroundServer) -> Beta:
    """The app with evaluations a (in dataset smoke) and b, a scheduled run of a and one of smoke."""
    v1 = official_client(emulator.url)
    code = 'def rate(currency: str) -> dict:\n    """Rate."""\n    return {"rate": 1.1}\n'
    tool = v1.create_tool(parent=APP, tool=ces_v1.Tool(python_function=ces_v1.PythonFunction(python_code=code)), tool_id="rate")
    client: Beta = official_evaluation_client(emulator.url)
    call = ces_v1beta.ToolCall(tool=tool.name, args={"currency": "EUR"})
    steps = [ces_v1beta.Evaluation.Step(expectation=ces_v1beta.Evaluation.GoldenExpectation(tool_call=call))]
    golden = ces_v1beta.Evaluation.Golden(turns=[ces_v1beta.Evaluation.GoldenTurn(steps=steps)])
    for rid in ("a", "b"):
        evaluation = ces_v1beta.Evaluation(display_name=f"rate {rid}", golden=golden)
        client.create_evaluation(parent=APP, evaluation=evaluation, evaluation_id=rid)
    dataset = ces_v1beta.EvaluationDataset(display_name="smoke", evaluations=[f"{APP}/evaluations/a"])
    client.create_evaluation_dataset(parent=APP, evaluation_dataset=dataset, evaluation_dataset_id="smoke")
    daily = ces_v1beta.ScheduledEvaluationRun.SchedulingConfig(
        frequency=ces_v1beta.ScheduledEvaluationRun.SchedulingConfig.Frequency.DAILY, start_time="2027-01-01T02:00:00Z"
    )
    requests = {
        "of-a": ces_v1beta.RunEvaluationRequest(app=APP, evaluations=[f"{APP}/evaluations/a"]),
        "of-smoke": ces_v1beta.RunEvaluationRequest(app=APP, evaluation_dataset=f"{APP}/evaluationDatasets/smoke"),
    }
    for rid, request in requests.items():
        run = ces_v1beta.ScheduledEvaluationRun(display_name=rid, request=request, scheduling_config=daily)
        client.create_scheduled_evaluation_run(parent=APP, scheduled_evaluation_run=run, scheduled_evaluation_run_id=rid)
    return client


def ids(listed: Any) -> list[str]:
    return sorted(str(r.name).rsplit("/", 1)[-1] for r in listed)


def test_evaluations_are_filtered_by_their_datasets(beta: Beta) -> None:
    def listed(flt: str) -> list[str]:
        return ids(beta.list_evaluations(request=ces_v1beta.ListEvaluationsRequest(parent=APP, evaluation_filter=flt)))

    assert listed('evaluation_datasets:"smoke"') == ["a"]
    assert listed(f"evaluation_datasets:{APP}/evaluationDatasets/smoke") == ["a"]  # the full name, as the field holds
    assert listed("evaluation_datasets:other") == []
    assert ids(beta.list_evaluations(parent=APP)) == ["a", "b"]


def test_evaluations_are_filtered_by_their_runs(beta: Beta) -> None:
    def listed(flt: str) -> list[str]:
        return ids(beta.list_evaluations(request=ces_v1beta.ListEvaluationsRequest(parent=APP, evaluation_run_filter=flt)))

    assert listed('create_time > "2000-01-01T00:00:00Z"') == []  # no run yet
    operation = beta.run_evaluation(request=ces_v1beta.RunEvaluationRequest(app=APP, evaluations=[f"{APP}/evaluations/b"]))
    operation.result(timeout=30, polling=fast_polling())
    assert listed('create_time > "2000-01-01T00:00:00Z"') == ["b"]
    assert listed('create_time < "2000-01-01T00:00:00Z"') == []
    assert listed('initiated_by = "emulator@localhost" AND create_time >= "2000-01-01T00:00:00Z"') == ["b"]
    assert listed('initiated_by != "emulator@localhost"') == []
    both = ces_v1beta.ListEvaluationsRequest(
        parent=APP, evaluation_filter="evaluation_datasets:smoke", evaluation_run_filter='initiated_by="emulator@localhost"'
    )
    assert ids(beta.list_evaluations(request=both)) == []  # a is in smoke, b has the run: both must hold


def test_scheduled_runs_are_filtered_by_what_they_run(beta: Beta) -> None:
    def listed(flt: str) -> list[str]:
        return ids(
            beta.list_scheduled_evaluation_runs(request=ces_v1beta.ListScheduledEvaluationRunsRequest(parent=APP, filter=flt))
        )

    assert listed("request.evaluations:a") == ["of-a"]
    assert listed("request.evaluations:b") == []
    assert listed("request.evaluation_dataset:smoke") == ["of-smoke"]
    assert listed(f'request.evaluation_dataset:"{APP}/evaluationDatasets/smoke"') == ["of-smoke"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda b: b.list_evaluations(request={"parent": APP, "filter": "x"}), "filter is deprecated on ListEvaluations"),
        (
            lambda b: b.list_evaluations(request={"parent": APP, "evaluation_filter": "display_name:x"}),
            "unsupported field 'display_name' in evaluationFilter: supported are evaluation_datasets",
        ),
        (
            lambda b: b.list_evaluations(request={"parent": APP, "evaluation_filter": "evaluation_datasets=smoke"}),
            "unsupported operator '=' on evaluation_datasets in evaluationFilter: use :",
        ),
        (
            lambda b: b.list_evaluations(request={"parent": APP, "evaluation_run_filter": "create_time > yesterday"}),
            "'yesterday' is not an RFC 3339 time",
        ),
        (
            lambda b: b.list_evaluations(request={"parent": APP, "evaluation_filter": "evaluation_datasets:a OR x:b"}),
            "the emulator takes terms FIELD OP VALUE joined by AND",
        ),
        (
            lambda b: b.list_scheduled_evaluation_runs(request={"parent": APP, "filter": "display_name:x"}),
            "supported are request.evaluations, request.evaluation_dataset",
        ),
        (
            lambda b: b.list_evaluation_datasets(request={"parent": APP, "filter": "display_name:x"}),
            "ListEvaluationDatasets documents no fields for it",
        ),
    ],
    ids=["deprecated", "field", "operator", "time", "or", "scheduled-field", "undocumented"],
)
def test_what_the_protos_do_not_document_is_refused_saying_what_is(beta: Beta, call: Callable[[Beta], Any], message: str) -> None:
    with pytest.raises(exceptions.BadRequest) as caught:
        list(call(beta))
    assert message in str(caught.value)


_TERM = st.tuples(
    st.sampled_from(
        [
            "evaluation_datasets",
            "create_time",
            "initiated_by",
            "app_version_display_name",
            "request.evaluations",
            "request.evaluation_dataset",
            "display_name",
        ]
    ),
    st.sampled_from([":", "=", "!=", "<", ">=", "~"]),
    st.sampled_from(["smoke", '"a b"', "2026-01-01T00:00:00Z", "yesterday", f"{APP}/evaluationDatasets/smoke", '"', ""]),
).map("".join)
_FILTER_TEXT = st.one_of(
    st.text(alphabet='abcdeilnorstuv_.:=!<>" ()AND-0123456789TZ/', max_size=60),
    st.lists(_TERM, min_size=1, max_size=3).map(" AND ".join),
)
_RESOURCE = st.fixed_dictionaries(
    {},
    optional={
        "evaluationDatasets": st.lists(st.sampled_from([f"{APP}/evaluationDatasets/smoke", "x"]), max_size=2),
        "evaluationRuns": st.lists(st.sampled_from([f"{APP}/evaluationRuns/r1", "gone"]), max_size=2),
        "request": st.fixed_dictionaries({}, optional={"evaluations": st.lists(st.text(max_size=8), max_size=2)}),
    },
)
_RUNS = {f"{APP}/evaluationRuns/r1": {"createTime": "2026-01-01T00:00:00Z", "initiatedBy": "a@b.c"}}


@given(
    st.sampled_from(["evaluations", "scheduledEvaluationRuns", "evaluationDatasets"]),
    st.sampled_from(["filter", "evaluationFilter", "evaluationRunFilter"]),
    _FILTER_TEXT,
    st.lists(_RESOURCE, max_size=3),
)
def test_any_filter_text_is_a_list_or_a_400(collection: str, param: str, text: str, resources: list[dict[str, Any]]) -> None:
    """Whatever a client sends as a filter, the emulator answers a list or INVALID_ARGUMENT, never a 500."""
    try:
        keep = keep_of(collection, {param: text}, _RUNS.get)
    except RpcError as exc:
        assert exc.status == "INVALID_ARGUMENT", exc
        return
    for resource in resources:
        assert keep is None or isinstance(keep(resource), bool)

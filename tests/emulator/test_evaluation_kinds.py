"""The evaluation kinds on the emulator, through Google's own v1beta client (google.cloud.ces_v1beta).

Each behaviour is the one emulator/evaluation_kinds.py cites: served on /v1beta/ only, etags
output only (ignored in a request), Evaluation.evaluationDatasets kept by the server,
DeleteEvaluationRequest.force, Evaluation.invalid once what it names is deleted.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import httpx
import pytest
from google.api_core import exceptions
from google.cloud import ces_v1, ces_v1beta
from google.protobuf import field_mask_pb2

from cesync.emulator.server import BackgroundServer
from cesync.sync.archive import ARCHIVE_APP, find_app_root, read_archive
from tests.helpers import fast_polling, official_client, official_evaluation_client

LOCATION = "projects/p/locations/us"
APP = f"{LOCATION}/apps/a"


@pytest.fixture
def beta(emulator: BackgroundServer) -> ces_v1beta.EvaluationServiceClient:
    return official_evaluation_client(emulator.url)


@pytest.fixture
def v1(emulator: BackgroundServer) -> ces_v1.AgentServiceClient:
    return official_client(emulator.url)


def _tool(v1: ces_v1.AgentServiceClient, tid: str = "rate") -> str:
    code = 'def rate(currency: str) -> dict:\n    """Rate."""\n    return {"rate": 1.1}\n'
    return v1.create_tool(parent=APP, tool=ces_v1.Tool(python_function=ces_v1.PythonFunction(python_code=code)), tool_id=tid).name


def _golden(tool: str) -> ces_v1beta.Evaluation:
    step_call = ces_v1beta.Evaluation.Step(
        expectation=ces_v1beta.Evaluation.GoldenExpectation(tool_call=ces_v1beta.ToolCall(tool=tool, args={"currency": "EUR"}))
    )
    user = ces_v1beta.Evaluation.Step(user_input=ces_v1beta.SessionInput(text="EUR rate?"))
    turn = ces_v1beta.Evaluation.GoldenTurn(steps=[user, step_call])
    return ces_v1beta.Evaluation(display_name="rate check", tags=["smoke"], golden=ces_v1beta.Evaluation.Golden(turns=[turn]))


def test_the_official_client_creates_reads_updates_and_deletes_each_kind(
    beta: ces_v1beta.EvaluationServiceClient, v1: ces_v1.AgentServiceClient
) -> None:
    tool = _tool(v1)
    expectation = beta.create_evaluation_expectation(
        parent=APP,
        evaluation_expectation=ces_v1beta.EvaluationExpectation(
            display_name="polite", llm_criteria=ces_v1beta.EvaluationExpectation.LlmCriteria(prompt="The agent is polite.")
        ),
        evaluation_expectation_id="polite",
    )
    assert expectation.name == f"{APP}/evaluationExpectations/polite" and expectation.etag
    evaluation = _golden(tool)
    evaluation.golden.evaluation_expectations = [expectation.name]
    created = beta.create_evaluation(parent=APP, evaluation=evaluation, evaluation_id="rate-check")
    assert created.name == f"{APP}/evaluations/rate-check"
    assert created.golden.turns[0].steps[1].expectation.tool_call.tool == tool
    assert created.create_time and created.etag and not created.invalid

    dataset = beta.create_evaluation_dataset(
        parent=APP,
        evaluation_dataset=ces_v1beta.EvaluationDataset(display_name="smoke", evaluations=[created.name]),
        evaluation_dataset_id="smoke",
    )
    # Evaluation.evaluation_datasets (output only): "List of evaluation datasets the evaluation belongs to".
    assert list(beta.get_evaluation(name=created.name).evaluation_datasets) == [dataset.name]

    run = ces_v1beta.ScheduledEvaluationRun(
        display_name="nightly",
        request=ces_v1beta.RunEvaluationRequest(app=APP, evaluation_dataset=dataset.name),
        scheduling_config=ces_v1beta.ScheduledEvaluationRun.SchedulingConfig(
            frequency=ces_v1beta.ScheduledEvaluationRun.SchedulingConfig.Frequency.DAILY,
            start_time={"seconds": 1_800_000_000},  # SchedulingConfig.start_time [REQUIRED]
        ),
    )
    scheduled = beta.create_scheduled_evaluation_run(
        parent=APP, scheduled_evaluation_run=run, scheduled_evaluation_run_id="nightly"
    )
    assert scheduled.request.evaluation_dataset == dataset.name

    assert [e.name for e in beta.list_evaluations(parent=APP)] == [created.name]
    assert [d.name for d in beta.list_evaluation_datasets(parent=APP)] == [dataset.name]
    assert [x.name for x in beta.list_evaluation_expectations(parent=APP)] == [expectation.name]
    assert [r.name for r in beta.list_scheduled_evaluation_runs(parent=APP)] == [scheduled.name]

    got = beta.get_evaluation(name=created.name)
    got.description = "EUR only"
    updated = beta.update_evaluation(evaluation=got, update_mask=field_mask_pb2.FieldMask(paths=["description"]))
    assert updated.description == "EUR only" and updated.etag != created.etag
    assert updated.golden.turns[0].steps[1].expectation.tool_call.tool == tool  # outside the mask: kept
    assert list(updated.evaluation_datasets) == [dataset.name]

    # The etags are output only (Evaluation.etag [OUTPUT_ONLY]): a stale one in an update is ignored.
    stale = ces_v1beta.Evaluation(name=created.name, etag=created.etag, description="again")
    assert beta.update_evaluation(evaluation=stale, update_mask=field_mask_pb2.FieldMask(paths=["description"])).description

    beta.delete_scheduled_evaluation_run(name=scheduled.name)
    beta.delete_evaluation_dataset(name=dataset.name)
    assert list(beta.get_evaluation(name=created.name).evaluation_datasets) == []
    beta.delete_evaluation(name=created.name)
    beta.delete_evaluation_expectation(name=expectation.name)
    with pytest.raises(exceptions.NotFound):
        beta.get_evaluation(name=created.name)


def test_a_dataset_holds_an_evaluations_delete_unless_forced(
    beta: ces_v1beta.EvaluationServiceClient, v1: ces_v1.AgentServiceClient
) -> None:
    created = beta.create_evaluation(parent=APP, evaluation=_golden(_tool(v1)), evaluation_id="e")
    beta.create_evaluation_dataset(
        parent=APP,
        evaluation_dataset=ces_v1beta.EvaluationDataset(display_name="d", evaluations=[created.name]),
        evaluation_dataset_id="d",
    )
    with pytest.raises(exceptions.BadRequest, match="evaluation dataset") as held:
        beta.delete_evaluation(name=created.name)
    assert held.value.response.json()["error"]["status"] == "FAILED_PRECONDITION"
    # DeleteEvaluationRequest.force: "all existing references from datasets will be removed"
    beta.delete_evaluation(request=ces_v1beta.DeleteEvaluationRequest(name=created.name, force=True))
    assert list(beta.get_evaluation_dataset(name=f"{APP}/evaluationDatasets/d").evaluations) == []


def test_deleting_what_an_evaluation_names_leaves_it_invalid(
    beta: ces_v1beta.EvaluationServiceClient, v1: ces_v1.AgentServiceClient
) -> None:
    tool = _tool(v1)
    created = beta.create_evaluation(parent=APP, evaluation=_golden(tool), evaluation_id="e")
    v1.delete_tool(name=tool)  # not held: DeleteToolRequest.force names agents and examples only
    after = beta.get_evaluation(name=created.name)
    assert after.invalid  # Evaluation.invalid: "referencing a tool ... that has since been deleted"
    assert after.golden.turns[0].steps[1].expectation.tool_call.tool == tool  # the reference stays


def test_a_name_that_does_not_exist_is_refused(beta: ces_v1beta.EvaluationServiceClient) -> None:
    with pytest.raises(exceptions.BadRequest, match="does not exist"):
        beta.create_evaluation(parent=APP, evaluation=_golden(f"{APP}/tools/missing"), evaluation_id="e")
    with pytest.raises(exceptions.BadRequest, match="not the name of a tool"):
        beta.create_evaluation(parent=APP, evaluation=_golden("rate"), evaluation_id="e")


def test_the_kinds_are_served_on_v1beta_only(emulator: BackgroundServer, beta: ces_v1beta.EvaluationServiceClient) -> None:
    expectation = ces_v1beta.EvaluationExpectation(display_name="x", llm_criteria={"prompt": "p"})
    beta.create_evaluation_expectation(parent=APP, evaluation_expectation=expectation, evaluation_expectation_id="x")
    assert httpx.get(f"{emulator.url}/v1beta/{APP}/evaluationExpectations/x").status_code == 200
    on_v1 = httpx.get(f"{emulator.url}/v1/{APP}/evaluationExpectations/x")
    assert on_v1.status_code == 404 and on_v1.json()["error"]["status"] == "NOT_FOUND"


def test_display_names_are_unique_within_the_app(beta: ces_v1beta.EvaluationServiceClient) -> None:
    expectation = ces_v1beta.EvaluationExpectation(display_name="same", llm_criteria={"prompt": "p"})
    beta.create_evaluation_expectation(parent=APP, evaluation_expectation=expectation, evaluation_expectation_id="one")
    with pytest.raises(exceptions.GoogleAPICallError):
        beta.create_evaluation_expectation(parent=APP, evaluation_expectation=expectation, evaluation_expectation_id="two")


def test_an_app_archive_holds_them_and_imports_them(
    tmp_path: Path, beta: ces_v1beta.EvaluationServiceClient, v1: ces_v1.AgentServiceClient
) -> None:
    """cxas-scrapi pushes evaluations/, evaluationDatasets/ and evaluationExpectations/ in an app
    folder (its push's valid_roots): exportApp writes them, importApp and import-archive read them."""
    tool = _tool(v1)
    created = beta.create_evaluation(parent=APP, evaluation=_golden(tool), evaluation_id="e")
    beta.create_evaluation_dataset(
        parent=APP,
        evaluation_dataset=ces_v1beta.EvaluationDataset(display_name="d", evaluations=[created.name]),
        evaluation_dataset_id="d",
    )
    request = ces_v1.ExportAppRequest(name=APP, export_format=ces_v1.ExportAppRequest.ExportFormat.JSON)
    content = v1.export_app(request=request).result(timeout=30, polling=fast_polling()).app_content
    with zipfile.ZipFile(io.BytesIO(content)) as zf:
        names = set(zf.namelist())
        evaluation = json.loads(zf.read("a/evaluations/e/e.json"))
        zf.extractall(tmp_path)
    assert {"a/evaluations/e/e.json", "a/evaluationDatasets/d/d.json"} <= names
    assert evaluation["golden"]["turns"][0]["steps"][1]["expectation"]["toolCall"]["tool"] == "rate"  # short, as every name
    read = read_archive(find_app_root(tmp_path))  # what `cesync import-archive` reads
    by_kind = {r.kind.name: r for r in read.resources}
    assert (
        by_kind["evaluation"].body["golden"]["turns"][0]["steps"][1]["expectation"]["toolCall"]["tool"]
        == f"{ARCHIVE_APP}/tools/rate"
    )
    assert by_kind["evaluationDataset"].body["evaluations"] == [f"{ARCHIVE_APP}/evaluations/e"]

    copy = v1.import_app(request=ces_v1.ImportAppRequest(parent=LOCATION, app_content=content, app_id="copy")).result(
        timeout=30, polling=fast_polling()
    )
    assert not copy.warnings
    imported = beta.get_evaluation(name=f"{copy.name}/evaluations/e")
    assert imported.golden.turns[0].steps[1].expectation.tool_call.tool == f"{copy.name}/tools/rate"
    assert list(imported.evaluation_datasets) == [f"{copy.name}/evaluationDatasets/d"]

"""runEvaluation on the emulator (emulator/evaluations.py): the long-running operation comes back at
once, the replay goes on in the background with its progress counted, the operation is done when
the replay has finished, and one request or many cannot tie the server up (the emulator's caps).

The golden's one tool call goes to an OpenAPI server of the test's that answers only when the
test lets it (a gate), so what the run is doing while it replays is seen, not guessed at."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest
from google.api_core import retry
from google.cloud import ces_v1beta

from cesync.emulator.evaluations import MAX_REPLAYING, MAX_RESULTS, MAX_RUN_COUNT
from cesync.emulator.server import BackgroundServer
from tests.helpers import fast_polling, json_api, official_evaluation_client

APP = "projects/p/locations/us/apps/a"
SCHEMA = """
openapi: 3.0.3
info: {title: Orders, version: "1"}
servers: [{url: %s}]
paths:
  /orders/{id}:
    get:
      operationId: getOrder
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
"""
WAIT = 30.0  # a safety bound on every wait below, never a clock: each wait ends on its event


class Gate:
    """Each tool call is let through by one ``open``; ``arrived`` counts the calls waiting."""

    def __init__(self) -> None:
        self.passes = threading.Semaphore(0)
        self.arrived = threading.Semaphore(0)

    def open(self, calls: int = 1) -> None:
        self.passes.release(calls)


@pytest.fixture
def gate() -> Iterator[tuple[Gate, str]]:
    found = Gate()

    def answer(path: str, headers: Mapping[str, str]) -> tuple[int, Any]:
        found.arrived.release()
        found.passes.acquire(timeout=WAIT)
        return 200, {"order": path.rsplit("/", 1)[-1]}

    with json_api(answer) as url:
        try:
            yield found, url
        finally:
            found.open(1000)  # whatever still waits answers, so the server can stop


@pytest.fixture
def app(emulator: BackgroundServer, gate: tuple[Gate, str]) -> Iterator[httpx.Client]:
    """The app with the gated OpenAPI toolset and evaluation e calling it; operations due at once,
    so a run's operation waits for its replay only."""
    with httpx.Client(base_url=f"{emulator.url}/v1beta", timeout=10) as c:
        httpx.post(f"{emulator.url}/admin/config", json={"operationDelaySeconds": 0}).raise_for_status()
        toolset = {"openApiToolset": {"openApiSchema": SCHEMA % gate[1]}}
        c.post(f"/{APP}/toolsets", params={"toolsetId": "orders"}, json=toolset).raise_for_status()
        add_evaluation(c, "e")
        yield c


def add_evaluation(c: httpx.Client, rid: str) -> str:
    call = {"toolsetTool": {"toolset": f"{APP}/toolsets/orders", "toolId": "getOrder"}, "args": {"id": "A1"}}
    steps = [{"userInput": {"text": "where is A1?"}}, {"expectation": {"toolCall": call}}]
    body = {"displayName": f"order {rid}", "golden": {"turns": [{"steps": steps}]}}
    c.post(f"/{APP}/evaluations", params={"evaluationId": rid}, json=body).raise_for_status()
    return f"{APP}/evaluations/{rid}"


def run_evaluation(c: httpx.Client, runs: int = 1, evaluations: list[str] | None = None) -> httpx.Response:
    body = {"app": APP, "evaluations": evaluations or [f"{APP}/evaluations/e"], "runCount": runs}
    return c.post(f"/{APP}:runEvaluation", json=body)


def error_of(response: httpx.Response) -> dict[str, Any]:
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == response.status_code and isinstance(error["message"], str)
    return error


def test_the_operation_comes_back_at_once_and_is_done_when_the_replay_ends(
    emulator: BackgroundServer, app: httpx.Client, gate: tuple[Gate, str]
) -> None:
    official = official_evaluation_client(emulator.url)
    operation = official.run_evaluation(
        request=ces_v1beta.RunEvaluationRequest(app=APP, evaluations=[f"{APP}/evaluations/e"], run_count=2)
    )  # answered while the first tool call waits at the gate: the replay is not inside the POST
    assert gate[0].arrived.acquire(timeout=WAIT)
    run = operation.metadata.evaluation_run
    assert not operation.done()
    read = app.get(f"/{run}").json()
    assert read["state"] == "RUNNING" and read["progress"] == {"totalCount": 2}
    assert read["operation"] == operation.operation.name
    assert not app.get(f"/{APP}/evaluations/e/results").json().get("evaluationResults")  # listed once the run is done

    gate[0].open()  # the first result completes; the second call waits
    assert gate[0].arrived.acquire(timeout=WAIT)
    read = app.get(f"/{run}").json()
    assert read["progress"] == {"totalCount": 2, "completedCount": 1, "passedCount": 1}
    assert not operation.done()

    gate[0].open()
    response = operation.result(timeout=WAIT, polling=fast_polling())  # Google's client waits on the operation
    assert response.evaluation_run == run
    done = official.get_evaluation_run(name=run)
    assert done.state == ces_v1beta.EvaluationRun.EvaluationRunState.COMPLETED
    assert (done.progress.total_count, done.progress.completed_count, done.progress.passed_count) == (2, 2, 2)
    assert len(done.evaluation_results) == 2


def test_a_request_is_bounded(app: httpx.Client) -> None:
    refused = run_evaluation(app, runs=MAX_RUN_COUNT + 1)
    assert refused.status_code == 400 and error_of(refused)["status"] == "INVALID_ARGUMENT"
    assert f"runCount must be a whole number from 1 to {MAX_RUN_COUNT}" in error_of(refused)["message"]

    many = [add_evaluation(app, f"e{i}") for i in range(MAX_RESULTS // MAX_RUN_COUNT + 1)]
    refused = run_evaluation(app, runs=MAX_RUN_COUNT, evaluations=many)
    assert refused.status_code == 400 and error_of(refused)["status"] == "INVALID_ARGUMENT"
    wanted = len(many) * MAX_RUN_COUNT
    assert f"this run would replay {wanted} results" in error_of(refused)["message"]
    assert f"at most {MAX_RESULTS} in one runEvaluation" in error_of(refused)["message"]
    assert not app.get(f"/{APP}/evaluationRuns").json().get("evaluationRuns")  # nothing was started


def test_runs_replaying_at_once_are_bounded_and_a_deleted_run_frees_its_place(app: httpx.Client, gate: tuple[Gate, str]) -> None:
    started = [run_evaluation(app).json() for _ in range(MAX_REPLAYING)]
    for _ in started:
        assert gate[0].arrived.acquire(timeout=WAIT)
    refused = run_evaluation(app)
    assert refused.status_code == 429 and error_of(refused)["status"] == "RESOURCE_EXHAUSTED"
    assert f"{MAX_REPLAYING} evaluation runs are replaying in this emulator" in error_of(refused)["message"]
    assert len(app.get(f"/{APP}/evaluationRuns").json()["evaluationRuns"]) == MAX_REPLAYING

    gone = started[0]["metadata"]["evaluationRun"]
    app.delete(f"/{gone}").raise_for_status()  # stops its replay
    again = run_evaluation(app)
    assert again.status_code == 200, again.text

    gate[0].open(1000)
    finished = [wait(app, o["name"]) for o in [*started, again.json()]]
    assert finished[0]["error"]["code"] == 5 and "not found" in finished[0]["error"]["message"]  # NOT_FOUND: deleted
    assert all("response" in o for o in finished[1:]), finished


class Running(Exception):
    pass


def wait(app: httpx.Client, name: str) -> dict[str, Any]:
    """The operation once done, polled with Google's backoff (api_core's Retry) as its clients poll."""

    def poll() -> dict[str, Any]:
        got: dict[str, Any] = app.get(f"/{name}").json()
        if not got.get("done"):
            raise Running(name)
        return got

    found: dict[str, Any] = retry.Retry(predicate=retry.if_exception_type(Running), timeout=WAIT)(poll)()
    return found

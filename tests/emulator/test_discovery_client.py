"""Google's discovery-based client as a third real client of the emulator, beside the official GAPIC
client (test_official_client.py, test_whole_app.py) and cxas-scrapi (test_scrapi.py):
google-api-python-client's ``build_from_document`` over the discovery documents it ships
(``ces.v1.json``, ``ces.v1beta.json``, revision 20261016), through httplib2, the transport it uses.
Every config method, paging, etags, force, long-running operations, and an idle connection."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import googleapiclient
import httplib2
import pytest
from googleapiclient.discovery import build_from_document
from googleapiclient.errors import HttpError
from googleapiclient.http import HttpRequest

from cesync.emulator.server import BackgroundServer
from cesync.emulator.unserved import PREFIX, UNSERVED

DOCUMENTS = Path(googleapiclient.__file__).parent / "discovery_cache" / "documents"
LOCATION = "projects/p/locations/us"
APP = f"{LOCATION}/apps/a"
CODE = 'def rate(currency: str) -> dict:\n    """The rate."""\n    return {"rate": 1.1}\n'


class Recorded(HttpRequest):
    """The client's own request, noting the id of each method it executes (what the tests cover)."""

    called: set[str] = set()

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        Recorded.called.add(self.methodId)
        return super().execute(*args, **kwargs)


def build(url: str, version: str = "v1") -> Any:
    """The discovery-based client of one API version, pointed at the emulator (no credentials: it takes any)."""
    document = json.loads((DOCUMENTS / f"ces.{version}.json").read_text())
    return build_from_document(
        document, http=httplib2.Http(timeout=30), client_options={"api_endpoint": url}, requestBuilder=Recorded
    )


class Clock:
    """When the emulator's long-running operations are due: advanced by the test, never slept on."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def server(clock: Clock) -> Iterator[BackgroundServer]:
    with BackgroundServer(apps=[APP], operation_clock=clock) as running:
        yield running


@pytest.fixture
def ces(server: BackgroundServer) -> Any:
    return build(server.url).projects().locations()


def status(call: Callable[[], Any]) -> tuple[int, str]:
    """(HTTP status, google.rpc status) of a call that must fail."""
    with pytest.raises(HttpError) as caught:
        call()
    return caught.value.resp.status, json.loads(caught.value.content)["error"]["status"]


def finished(ces: Any, clock: Clock, operation: dict[str, Any]) -> dict[str, Any]:
    """A long-running operation polled as a client does: not done until its time has come, then done."""
    assert operation["done"] is False
    assert ces.operations().get(name=operation["name"]).execute()["done"] is False
    clock.now += 60
    done: dict[str, Any] = ces.operations().get(name=operation["name"]).execute()
    assert done["done"] is True and "error" not in done, done
    return done


def every(collection: Any, field: str, **params: Any) -> list[dict[str, Any]]:
    """Every item of a list, page by page through the client's own list_next."""
    out: list[dict[str, Any]] = []
    request = collection.list(**params)
    while request is not None:
        page = request.execute()
        out += page.get(field, [])
        request = collection.list_next(request, page)
    return out


def test_apps_are_made_and_deleted_through_operations(ces: Any, clock: Clock) -> None:
    apps = ces.apps()
    for rid in ("b", "c"):
        made = finished(ces, clock, apps.create(parent=LOCATION, appId=rid, body={"displayName": rid.upper()}).execute())
        assert made["response"]["@type"] == "type.googleapis.com/google.cloud.ces.v1.App"
        assert made["response"]["name"] == f"{LOCATION}/apps/{rid}"
    assert [a["name"][-1] for a in every(apps, "apps", parent=LOCATION, pageSize=1)] == ["a", "b", "c"]
    assert [a["name"][-1] for a in every(apps, "apps", parent=LOCATION, orderBy="name desc")] == ["c", "b", "a"]
    patched = apps.patch(name=f"{LOCATION}/apps/b", updateMask="description", body={"description": "second"}).execute()
    assert patched["description"] == "second" and patched["displayName"] == "B"
    finished(ces, clock, apps.delete(name=f"{LOCATION}/apps/c").execute())
    assert status(lambda: apps.get(name=f"{LOCATION}/apps/c").execute()) == (404, "NOT_FOUND")
    ops = ces.operations()
    listed = every(ops, "operations", name=LOCATION, pageSize=1)
    assert len(listed) == 3 and all(o["done"] for o in listed)
    assert ops.cancel(name=listed[0]["name"], body={}).execute() == {}
    assert ops.delete(name=listed[0]["name"]).execute() == {}
    assert len(every(ops, "operations", name=LOCATION)) == 2


GOLDEN = {"turns": [{"steps": [{"expectation": {"toolCall": {"tool": f"{APP}/tools/rate", "args": {"currency": "EUR"}}}}]}]}
SCHEDULE = {"frequency": "DAILY", "startTime": "2027-01-01T02:00:00Z"}
# (API version, collection, id parameter, a body to create, an update mask and the body it takes, whether its etag guards)
KINDS = [
    ("v1", "tools", "toolId", {"pythonFunction": {"pythonCode": CODE}}, "timeout", {"timeout": "7s"}, True),
    (
        "v1",
        "toolsets",
        "toolsetId",
        {"mcpToolset": {"serverAddress": "https://mcp.example/x"}},
        "description",
        {"description": "d"},
        True,
    ),
    ("v1", "agents", "agentId", {"displayName": "Front", "llmAgent": {}}, "instruction", {"instruction": "Help."}, True),
    (
        "v1",
        "guardrails",
        "guardrailId",
        {"displayName": "G", "contentFilter": {"bannedContents": ["x"], "matchType": "REGEXP_MATCH"}},
        "description",
        {"description": "d"},
        True,
    ),
    ("v1", "examples", "exampleId", {"displayName": "E"}, "description", {"description": "d"}, True),
    # Deployment.etag is output only (deployment.proto): an update ignores a stale one; so are the evaluation kinds'
    (
        "v1",
        "deployments",
        "deploymentId",
        {"displayName": "D", "channelProfile": {"channelType": "WEB_UI"}},
        "displayName",
        {"displayName": "D2"},
        False,
    ),
    ("v1beta", "evaluations", "evaluationId", {"displayName": "E", "golden": GOLDEN}, "description", {"description": "d"}, False),
    ("v1beta", "evaluationDatasets", "evaluationDatasetId", {"displayName": "S"}, "displayName", {"displayName": "S2"}, False),
    (
        "v1beta",
        "evaluationExpectations",
        "evaluationExpectationId",
        {"displayName": "X", "llmCriteria": {"prompt": "Polite."}},
        "llmCriteria.prompt",
        {"llmCriteria": {"prompt": "Kind."}},
        False,
    ),
    (
        "v1beta",
        "scheduledEvaluationRuns",
        "scheduledEvaluationRunId",
        {
            "displayName": "N",
            "request": {"app": APP, "evaluationDataset": f"{APP}/evaluationDatasets/smoke"},
            "schedulingConfig": SCHEDULE,
        },
        "description",
        {"description": "d"},
        False,
    ),
]


@pytest.mark.parametrize(
    ("version", "collection", "id_param", "body", "mask", "change", "guarded"), KINDS, ids=[k[1] for k in KINDS]
)
def test_every_collection_of_an_app_round_trips(
    server: BackgroundServer,
    version: str,
    collection: str,
    id_param: str,
    body: dict[str, Any],
    mask: str,
    change: dict[str, Any],
    guarded: bool,
) -> None:
    apps = build(server.url, version).projects().locations().apps()
    if collection != "tools":  # what the evaluation kinds name
        apps.tools().create(parent=APP, toolId="rate", body={"pythonFunction": {"pythonCode": CODE}}).execute()
    if collection == "scheduledEvaluationRuns":
        apps.evaluationDatasets().create(parent=APP, evaluationDatasetId="smoke", body={"displayName": "smoke"}).execute()
    resource = getattr(apps, collection)()
    made = [
        resource.create(parent=APP, body=body if i == 0 else _renamed(body, i), **{id_param: f"r{i}"}).execute() for i in range(3)
    ]
    assert made[0]["name"] == f"{APP}/{collection}/r0" and made[0]["etag"]
    assert resource.get(name=made[0]["name"]).execute() == made[0]
    listed = every(resource, collection, parent=APP, pageSize=2, orderBy="name")
    assert [r["name"] for r in listed if "systemTool" not in r] == [m["name"] for m in made]
    assert status(lambda: resource.create(parent=APP, body=body, **{id_param: "r0"}).execute()) == (409, "ALREADY_EXISTS")

    updated = resource.patch(name=made[0]["name"], updateMask=mask, body=change).execute()
    assert all(updated[k] == v for k, v in change.items()) and updated["etag"] != made[0]["etag"]
    stale = {**change, "etag": made[0]["etag"]}
    if guarded:
        assert status(lambda: resource.patch(name=made[0]["name"], updateMask=mask, body=stale).execute()) == (409, "ABORTED")
        assert status(lambda: resource.delete(name=made[0]["name"], etag=made[0]["etag"]).execute()) == (409, "ABORTED")
    else:
        assert resource.patch(name=made[0]["name"], updateMask=mask, body=stale).execute()["etag"]
    current = resource.get(name=made[0]["name"]).execute()
    assert resource.delete(name=made[0]["name"], etag=current["etag"]).execute() == {}
    assert status(lambda: resource.get(name=made[0]["name"]).execute()) == (404, "NOT_FOUND")


def _renamed(body: dict[str, Any], i: int) -> dict[str, Any]:
    """A body whose display name differs (agents, toolsets, guardrails and examples keep them unique)."""
    return {**body, "displayName": f"{body['displayName']} {i}"} if "displayName" in body else body


def test_force_deletes_what_is_still_named(ces: Any) -> None:
    apps = ces.apps()
    tool = apps.tools().create(parent=APP, toolId="rate", body={"pythonFunction": {"pythonCode": CODE}}).execute()
    agent = (
        apps.agents()
        .create(parent=APP, agentId="front", body={"displayName": "F", "llmAgent": {}, "tools": [tool["name"]]})
        .execute()
    )
    assert status(lambda: apps.tools().delete(name=tool["name"]).execute()) == (400, "FAILED_PRECONDITION")
    assert apps.tools().delete(name=tool["name"], force=True).execute() == {}
    assert "tools" not in apps.agents().get(name=agent["name"]).execute()
    # DeleteExample has no force: the client sends it as a query parameter all the same, and it is refused
    example = apps.examples().create(parent=APP, exampleId="e", body={"displayName": "E"}).execute()
    refused = apps.examples().delete(name=example["name"])
    refused.uri += "&force=true" if "?" in refused.uri else "?force=true"
    assert status(refused.execute) == (400, "INVALID_ARGUMENT")


def test_versions_are_made_updated_restored_and_deleted(ces: Any, clock: Clock) -> None:
    apps, versions = ces.apps(), ces.apps().versions()
    apps.tools().create(parent=APP, toolId="rate", body={"pythonFunction": {"pythonCode": CODE}}).execute()
    version = versions.create(parent=APP, appVersionId="v1", body={"displayName": "one"}).execute()
    assert version["updateTime"] and [t["name"] for t in version["snapshot"]["tools"]] == [f"{APP}/tools/rate"]
    renamed = versions.patch(name=version["name"], updateMask="displayName", body={"displayName": "first"}).execute()
    assert renamed["displayName"] == "first" and renamed["updateTime"] >= version["updateTime"]
    assert versions.get(name=version["name"]).execute() == renamed
    apps.tools().delete(name=f"{APP}/tools/rate").execute()
    restored = finished(ces, clock, versions.restore(name=version["name"], body={}).execute())
    assert restored["response"]["@type"] == "type.googleapis.com/google.cloud.ces.v1.RestoreAppVersionResponse"
    assert apps.tools().get(name=f"{APP}/tools/rate").execute()["name"] == f"{APP}/tools/rate"
    listed = every(versions, "appVersions", parent=APP, orderBy="create_time desc", pageSize=1)
    assert len(listed) == 2 and listed[-1]["name"] == version["name"]  # restoring saved the draft as a version first
    assert versions.delete(name=version["name"]).execute() == {}


def test_changelogs_are_filtered_and_read(ces: Any) -> None:
    apps = ces.apps()
    apps.tools().create(parent=APP, toolId="rate", body={"pythonFunction": {"pythonCode": CODE}}).execute()
    apps.tools().patch(name=f"{APP}/tools/rate", updateMask="timeout", body={"timeout": "3s"}).execute()
    changelogs = apps.changelogs()
    [update] = every(changelogs, "changelogs", parent=APP, filter="action:update AND resource_type:tool")
    assert update["resource"] == f"{APP}/tools/rate" and update["action"] == "Update"
    newest = every(changelogs, "changelogs", parent=APP, orderBy="create_time desc", pageSize=1)
    assert newest[0] == update and changelogs.get(name=update["name"]).execute() == update
    assert status(lambda: changelogs.list(parent=APP, filter="nonsense").execute()) == (400, "INVALID_ARGUMENT")


def test_an_app_is_exported_imported_and_its_tools_run(ces: Any, clock: Clock) -> None:
    apps = ces.apps()
    apps.tools().create(parent=APP, toolId="rate", body={"pythonFunction": {"pythonCode": CODE}}).execute()
    exported = finished(ces, clock, apps.exportApp(name=APP, body={"exportFormat": "JSON"}).execute())
    content = exported["response"]["appContent"]
    imported = apps.importApp(parent=LOCATION, body={"appId": "copy", "appContent": content}).execute()
    finished(ces, clock, imported)
    assert apps.tools().get(name=f"{LOCATION}/apps/copy/tools/rate").execute()["pythonFunction"]["name"] == "rate"
    ran = apps.executeTool(parent=APP, body={"tool": f"{APP}/tools/rate", "args": {"currency": "EUR"}}).execute()
    assert ran["response"] == {"result": {"rate": 1.1}}
    schema = apps.retrieveToolSchema(parent=APP, body={"tool": f"{APP}/tools/rate"}).execute()
    assert schema["inputSchema"]["properties"]["currency"]["type"] == "STRING"
    spec = "openapi: 3.0.0\ninfo: {title: t, version: '1'}\nservers: [{url: 'https://api.example'}]\npaths:\n  /r:\n    get: {operationId: getR, responses: {'200': {description: ok}}}\n"
    apps.toolsets().create(parent=APP, toolsetId="api", body={"openApiToolset": {"openApiSchema": spec}}).execute()
    tools = apps.toolsets().retrieveTools(toolset=f"{APP}/toolsets/api", body={}).execute()["tools"]
    assert [t["openApiTool"]["name"] for t in tools] == ["getR"]


def test_the_evaluation_kinds_and_runs_on_v1beta(server: BackgroundServer, clock: Clock) -> None:
    beta = build(server.url, "v1beta").projects().locations()
    apps = beta.apps()
    tool = apps.tools().create(parent=APP, toolId="rate", body={"pythonFunction": {"pythonCode": CODE}}).execute()
    step = {"expectation": {"toolCall": {"tool": tool["name"], "args": {"currency": "EUR"}}}}
    golden = {"turns": [{"steps": [step]}]}
    evaluation = apps.evaluations().create(parent=APP, evaluationId="e", body={"displayName": "E", "golden": golden}).execute()
    dataset = (
        apps.evaluationDatasets()
        .create(parent=APP, evaluationDatasetId="smoke", body={"displayName": "smoke", "evaluations": [evaluation["name"]]})
        .execute()
    )
    expectation = (
        apps.evaluationExpectations()
        .create(parent=APP, evaluationExpectationId="x", body={"displayName": "X", "llmCriteria": {"prompt": "Polite."}})
        .execute()
    )
    request = {"app": APP, "evaluations": [evaluation["name"]]}
    scheduled = (
        apps.scheduledEvaluationRuns()
        .create(
            parent=APP,
            scheduledEvaluationRunId="nightly",
            body={
                "displayName": "nightly",
                "request": request,
                "schedulingConfig": {"frequency": "DAILY", "startTime": "2027-01-01T02:00:00Z"},
            },
        )
        .execute()
    )
    for kind, made in (
        ("evaluations", evaluation),
        ("evaluationDatasets", dataset),
        ("evaluationExpectations", expectation),
        ("scheduledEvaluationRuns", scheduled),
    ):
        listed = every(getattr(apps, kind)(), kind, parent=APP, pageSize=1)
        assert [r["name"] for r in listed] == [made["name"]], kind
    assert [
        e["name"] for e in every(apps.evaluations(), "evaluations", parent=APP, evaluationFilter="evaluation_datasets:smoke")
    ] == [evaluation["name"]]
    patched = apps.evaluations().patch(name=evaluation["name"], updateMask="description", body={"description": "d"}).execute()
    assert patched["description"] == "d"

    run = apps.runEvaluation(app=APP, body=request).execute()
    metadata = run["metadata"]
    assert metadata["@type"] == "type.googleapis.com/google.cloud.ces.v1beta.RunEvaluationOperationMetadata"
    deadline = time.monotonic() + 30
    while not (done := beta.operations().get(name=run["name"]).execute())["done"]:  # the replay runs in the background
        clock.now += 60
        assert time.monotonic() < deadline, "the evaluation run did not finish"
    assert "error" not in done
    [listed_run] = every(apps.evaluationRuns(), "evaluationRuns", parent=APP, pageSize=1)
    assert apps.evaluationRuns().get(name=listed_run["name"]).execute()["name"] == listed_run["name"]
    [result] = every(apps.evaluations().results(), "evaluationResults", parent=evaluation["name"])
    assert apps.evaluations().results().get(name=result["name"]).execute() == result
    with_results = apps.evaluations().list(parent=APP, lastTenResults=True).execute()["evaluations"]
    assert [r["name"] for r in with_results[0]["lastTenResults"]] == [result["name"]]
    assert apps.evaluations().results().delete(name=result["name"]).execute() == {}
    assert every(apps.evaluations().results(), "evaluationResults", parent=evaluation["name"]) == []
    # DeleteEvaluationRun is a long-running operation in v1beta (DeleteEvaluationRunOperationMetadata)
    finished(beta, clock, apps.evaluationRuns().delete(name=listed_run["name"]).execute())
    assert status(lambda: apps.evaluationRuns().get(name=listed_run["name"]).execute()) == (404, "NOT_FOUND")
    assert apps.evaluations().delete(name=evaluation["name"], force=True).execute() == {}


def test_what_the_emulator_does_not_serve_is_unimplemented(ces: Any) -> None:
    session = ces.apps().sessions().runSession(session=f"{APP}/sessions/s1", body={"config": {}, "inputs": [{"text": "hi"}]})
    assert status(session.execute) == (501, "UNIMPLEMENTED")
    assert status(lambda: ces.apps().conversations().list(parent=APP).execute()) == (501, "UNIMPLEMENTED")


@pytest.mark.slow
@pytest.mark.parametrize(("keep_alive", "survives"), [(1, False), (3, True)])
def test_a_post_after_an_idle_connection(keep_alive: int, survives: bool) -> None:
    """The discovery client reuses its connection after any idle: a POST 1.5 s after the last call
    breaks when the server closed the connection at 1 s, and goes through when it keeps it longer.
    (The timeout is shortened so the wait is 1.5 s; the emulator's own is server.KEEP_ALIVE_SECONDS,
    checked in test_server.py.)"""
    with BackgroundServer(apps=[APP], keep_alive=keep_alive) as running:
        tools = build(running.url).projects().locations().apps().tools()
        tools.create(parent=APP, toolId="t1", body={"clientFunction": {"name": "first"}}).execute()
        time.sleep(1.5)  # the idle connection under test, not a clock: nothing else can make a socket idle
        second = tools.create(parent=APP, toolId="t2", body={"clientFunction": {"name": "second"}})
        if survives:
            assert second.execute()["name"] == f"{APP}/tools/t2"
        else:
            with pytest.raises(ConnectionError):  # a broken pipe, or a reset, as the kernel has it
                second.execute()


def _method_ids(version: str) -> set[str]:
    def walk(resources: dict[str, Any]) -> Iterator[str]:
        for resource in resources.values():
            yield from (str(m["id"]) for m in resource.get("methods", {}).values())
            yield from walk(resource.get("resources", {}))

    return set(walk(json.loads((DOCUMENTS / f"ces.{version}.json").read_text())["resources"]))


def test_these_tests_drive_every_method_the_emulator_serves() -> None:
    """Every method of the two discovery documents that the emulator serves (all but unserved.py's) is
    executed by the scenarios above through the discovery client, on one version or the other."""
    Recorded.called = set()
    scenarios: list[Callable[[Any, Clock, BackgroundServer], None]] = [
        lambda ces, clock, _: test_apps_are_made_and_deleted_through_operations(ces, clock),
        *(lambda _, __, server, kind=kind: test_every_collection_of_an_app_round_trips(server, *kind) for kind in KINDS),
        lambda ces, _, __: test_force_deletes_what_is_still_named(ces),
        lambda ces, clock, _: test_versions_are_made_updated_restored_and_deleted(ces, clock),
        lambda ces, _, __: test_changelogs_are_filtered_and_read(ces),
        lambda ces, clock, _: test_an_app_is_exported_imported_and_its_tools_run(ces, clock),
        lambda _, clock, server: test_the_evaluation_kinds_and_runs_on_v1beta(server, clock),
    ]
    for scenario in scenarios:
        clock = Clock()
        with BackgroundServer(apps=[APP], operation_clock=clock) as server:
            scenario(build(server.url).projects().locations(), clock, server)
    served = (_method_ids("v1") | _method_ids("v1beta")) - {PREFIX + m for m in UNSERVED}
    assert sorted(served - Recorded.called) == []

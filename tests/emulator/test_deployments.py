"""emulator.deployments: a deployment's traffic split kept and checked as the sources say, and
runEvaluation judging an app version's snapshot or the versions a deployment serves."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.emulator.server import BackgroundServer
from tests.conftest import APP

CHANNEL = {"channelType": "WEB_UI"}


def split(*allocations: tuple[str, str, int]) -> dict[str, Any]:
    found = [{"id": i, "appVersion": v, "trafficPercentage": p} for i, v, p in allocations]
    return {"versionRelease": {"state": "RUNNING", "trafficAllocations": found}}


@pytest.fixture(scope="module")
def served() -> Any:
    with BackgroundServer(auto_create_apps=True) as server:
        client = httpx.Client(base_url=server.url)
        assert client.post(f"/v1/{APP}/versions", params={"appVersionId": "v1"}, json={}).status_code == 200
        yield server, client


@settings(max_examples=40, deadline=None)
@given(share=st.integers(-1000, 1000))
def test_a_share_outside_0_to_100_is_invalid_argument(served: Any, share: int) -> None:
    _, client = served
    body = {"displayName": "d", "channelProfile": CHANNEL, "experimentConfig": split(("a", f"{APP}/versions/v1", share))}
    answer = client.patch(
        f"/v1/{APP}/deployments/d", params={"updateMask": "experimentConfig", "allowMissing": "true"}, json=body
    )
    if answer.status_code == 404:  # created once, then patched
        answer = client.post(f"/v1/{APP}/deployments", params={"deploymentId": "d"}, json=body)
    if 0 <= share <= 100:
        assert answer.status_code == 200, answer.text
        kept = client.get(f"/v1/{APP}/deployments/d").json()["experimentConfig"]["versionRelease"]["trafficAllocations"]
        assert kept[0].get("trafficPercentage", 0) == share  # proto3 JSON leaves 0 out
    else:
        assert answer.status_code == 400 and answer.json()["error"]["status"] == "INVALID_ARGUMENT"
        assert "traffic_percentage must be between 0 and 100" in answer.json()["error"]["message"]


def test_shares_need_not_add_up_and_long_ids_are_refused(served: Any) -> None:
    _, client = served
    v1 = f"{APP}/versions/v1"
    ok = {"displayName": "s", "channelProfile": CHANNEL, "experimentConfig": split(("a", v1, 30), ("b", v1, 30))}
    assert client.post(f"/v1/{APP}/deployments", params={"deploymentId": "s"}, json=ok).status_code == 200  # sources are silent
    long = {"displayName": "l", "channelProfile": CHANNEL, "experimentConfig": split(("x" * 129, v1, 30))}
    assert client.post(f"/v1/{APP}/deployments", params={"deploymentId": "l"}, json=long).status_code == 400
    gone = {"displayName": "g", "channelProfile": CHANNEL, "experimentConfig": split(("a", f"{APP}/versions/nope", 30))}
    assert client.post(f"/v1/{APP}/deployments", params={"deploymentId": "g"}, json=gone).status_code in (400, 404)


def _run(client: httpx.Client, body: dict[str, Any]) -> list[dict[str, Any]]:
    op = client.post(f"/v1beta/{APP}:runEvaluation", json=body)
    assert op.status_code == 200, op.text
    name = op.json()["name"]
    for _ in range(100):
        done = client.get(f"/v1beta/{name}").json()
        if done.get("done"):
            break
        time.sleep(0.05)
    run = client.get(f"/v1beta/{done['response']['evaluationRun']}").json()
    return [client.get(f"/v1beta/{r}").json() for r in run["evaluationResults"]]


def test_runs_judge_a_versions_snapshot_and_each_version_a_deployment_serves() -> None:
    code = "def double(x: int) -> dict:\n    return {'y': x * 2}\n"
    with BackgroundServer(auto_create_apps=True) as server:
        client = httpx.Client(base_url=server.url)
        tool = {"pythonFunction": {"name": "double", "pythonCode": code}}
        assert client.post(f"/v1/{APP}/tools", params={"toolId": "double"}, json=tool).status_code == 200
        golden = {
            "turns": [
                {
                    "steps": [
                        {"expectation": {"toolCall": {"tool": f"{APP}/tools/double", "args": {"x": 2}}}},
                        {"expectation": {"toolResponse": {"tool": f"{APP}/tools/double", "response": {"result": {"y": 4}}}}},
                    ]
                }
            ]
        }
        ev = {"displayName": "doubles", "golden": golden}
        assert client.post(f"/v1beta/{APP}/evaluations", params={"evaluationId": "e"}, json=ev).status_code == 200
        assert client.post(f"/v1/{APP}/versions", params={"appVersionId": "good"}, json={}).status_code == 200
        broken = {"pythonFunction": {"name": "double", "pythonCode": code.replace("x * 2", "x * 3")}}
        assert client.patch(f"/v1/{APP}/tools/double", params={"updateMask": "pythonFunction"}, json=broken).status_code == 200
        evaluations = [f"{APP}/evaluations/e"]
        draft = _run(client, {"evaluations": evaluations})
        good = _run(client, {"evaluations": evaluations, "appVersion": f"{APP}/versions/good"})
        assert [r["evaluationStatus"] for r in draft] == ["FAIL"]  # the draft's tool triples now
        assert [(r["evaluationStatus"], r["appVersion"]) for r in good] == [("PASS", f"{APP}/versions/good")]
        deployment = {
            "displayName": "web",
            "channelProfile": CHANNEL,
            "experimentConfig": split(("old", f"{APP}/versions/-", 90), ("new", f"{APP}/versions/good", 10)),
        }
        assert client.post(f"/v1/{APP}/deployments", params={"deploymentId": "web"}, json=deployment).status_code == 200
        both = _run(client, {"evaluations": evaluations, "deployment": f"{APP}/deployments/web"})
        assert sorted((r["appVersion"].rsplit("/", 1)[-1], r["evaluationStatus"]) for r in both) == [
            ("-", "FAIL"),
            ("good", "PASS"),
        ]
        switch = {"appVersion": f"{APP}/versions/good", "outcome": "FAIL"}
        assert client.post("/admin/evaluationOutcomes", json=switch).status_code == 200
        assert [
            r["evaluationStatus"] for r in _run(client, {"evaluations": evaluations, "appVersion": switch["appVersion"]})
        ] == ["FAIL"]
        both_given = {"evaluations": evaluations, "appVersion": f"{APP}/versions/good", "deployment": f"{APP}/deployments/web"}
        refused = client.post(f"/v1beta/{APP}:runEvaluation", json=both_given)
        assert refused.status_code == 400 and "at most one of appVersion or deployment" in refused.text

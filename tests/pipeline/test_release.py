"""pipeline.release end to end: the example repo's releases/web.yaml moves deployments/web onto the
version its last apply recorded, against the emulator over HTTP, holds on a clock that never sleeps.
A gate failed by the emulator's fault switch rolls the traffic back; a release stopped in a hold
resumes from what the deployment holds; a split moved by someone else is refused."""

from __future__ import annotations

import asyncio
import datetime
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cesync.core.release import PREVIOUS_ID, TARGET_ID
from cesync.core.scrubber import Scrubber
from cesync.emulator.server import BackgroundServer
from cesync.pipeline.context import open_context
from cesync.pipeline.release import ReleaseRefused, ReleaseResult, release
from cesync.repo.releases import load_release
from tests.conftest import EXAMPLES
from tests.helpers import cesync

APP = "projects/local/locations/us/apps/support-bot"
WEB = f"{APP}/deployments/web"


class Stop(Exception):
    """The release interrupted in a hold (a cancelled CI job)."""


class FakeClock:
    """Now starts at the real time (the emulator stamps updateTime with it) and moves only by sleep."""

    def __init__(self, on_sleep: Callable[[int], None] = lambda n: None) -> None:
        self.at = datetime.datetime.now(datetime.timezone.utc)
        self.slept: list[float] = []
        self.on_sleep = on_sleep

    def now(self) -> datetime.datetime:
        return self.at

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.on_sleep(len(self.slept))
        self.at += datetime.timedelta(seconds=seconds)


@pytest.fixture
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=True) as s:
        yield s


@pytest.fixture
def repo(tmp_path: Path, server: BackgroundServer) -> Path:
    dst = tmp_path / "support-bot"
    shutil.copytree(EXAMPLES / "support-bot", dst, ignore=shutil.ignore_patterns(".cesync"))
    applied = cesync("apply", "--dir", str(dst), "--env", "local", "--endpoint", server.url, "--auto-approve")
    assert applied.returncode == 0, applied.stderr
    return dst


def run(repo: Path, server: BackgroundServer, clock: FakeClock, **kw: Any) -> ReleaseResult:
    ctx = open_context(repo, "local", server.url, scrubber=Scrubber())
    _, spec = load_release(repo, "web")

    async def go() -> ReleaseResult:
        async with ctx.client() as client:
            return await release(ctx, client, "web", spec, clock=clock, **kw)

    return asyncio.run(go())


def deployment(server: BackgroundServer) -> dict[str, Any]:
    return dict(httpx.get(f"{server.url}/v1/{WEB}").json())


def shares(server: BackgroundServer) -> dict[str, int]:
    found = (deployment(server).get("experimentConfig") or {}).get("versionRelease", {}).get("trafficAllocations", [])
    return {a["id"]: a.get("trafficPercentage", 0) for a in found}


def fail_gates_of(server: BackgroundServer, version: str) -> None:
    """The emulator's fault switch: every result replayed against version fails."""
    answer = httpx.post(f"{server.url}/admin/evaluationOutcomes", json={"appVersion": version, "outcome": "FAIL"})
    assert answer.status_code == 200, answer.text


def test_the_release_moves_through_every_step_and_ends_serving_the_new_version_alone(
    repo: Path, server: BackgroundServer
) -> None:
    seen: list[dict[str, int]] = []
    clock = FakeClock(on_sleep=lambda n: seen.append(shares(server)))
    result = run(repo, server, clock)
    assert result.outcome == "released" and result.ok
    assert clock.slept == [600.0, 1800.0]  # the holds of releases/web.yaml: 10m, 30m (the last step holds none)
    assert seen == [{PREVIOUS_ID: 90, TARGET_ID: 10}, {PREVIOUS_ID: 50, TARGET_ID: 50}]
    after = deployment(server)
    assert after["appVersion"] == result.target and "experimentConfig" not in after
    assert result.previous == f"{APP}/versions/-"  # the deployment served the draft before
    kinds = [e["event"] for e in result.events]
    assert kinds == ["gate", "step", "hold", "gate", "step", "hold", "gate", "step", "gate", "done"]
    assert [e.get("against") for e in result.events if e["event"] == "gate"] == [result.target, WEB, WEB, WEB]
    again = run(repo, server, FakeClock())
    assert again.outcome == "already serving" and not again.schedule
    # the deployment's file names no appVersion: a plan leaves what the release wrote (never moves it back)
    plan = cesync("plan", "--dir", str(repo), "--env", "local", "--endpoint", server.url, "--detailed-exitcode")
    assert plan.returncode == 0, plan.stdout


def test_a_failing_gate_before_any_traffic_moves_nothing(repo: Path, server: BackgroundServer) -> None:
    versions = httpx.get(f"{server.url}/v1/{APP}/versions").json()["appVersions"]
    newest = max(versions, key=lambda v: v["createTime"])["name"]
    fail_gates_of(server, newest)
    before = deployment(server)
    result = run(repo, server, FakeClock())
    assert result.outcome == "gate failed" and not result.ok
    assert deployment(server)["etag"] == before["etag"]  # never written


def test_a_gate_failing_on_a_step_rolls_traffic_back(repo: Path, server: BackgroundServer) -> None:
    target: list[str] = []

    def break_it(n: int) -> None:
        if n == 2:  # in the hold of step 2: the canary starts failing
            fail_gates_of(server, target[0])

    versions = httpx.get(f"{server.url}/v1/{APP}/versions").json()["appVersions"]
    target.append(max(versions, key=lambda v: v["createTime"])["name"])
    clock = FakeClock(on_sleep=break_it)
    result = run(repo, server, clock)
    assert result.outcome == "rolled back" and not result.ok
    after = deployment(server)
    assert after.get("appVersion", f"{APP}/versions/-") == f"{APP}/versions/-" and "experimentConfig" not in after
    gates = [e for e in result.events if e["event"] == "gate"]
    assert [g["passed"] for g in gates] == [True, True, False] and gates[-1]["step"] == 2


def test_an_interrupted_release_resumes_from_the_deployment(repo: Path, server: BackgroundServer) -> None:
    def stop(n: int) -> None:
        if n == 2:
            raise Stop

    first = FakeClock(on_sleep=stop)
    with pytest.raises(Stop):
        run(repo, server, first)
    assert shares(server) == {PREVIOUS_ID: 50, TARGET_ID: 50}
    later = FakeClock()
    later.at += datetime.timedelta(minutes=20)  # 20 of step 2's 30 minutes have passed since it was written
    result = run(repo, server, later)
    assert result.outcome == "released" and result.resumed_at == 2
    assert [e["event"] for e in result.events][:3] == ["resume", "hold", "gate"]  # no gate of the version again, no step 1
    assert later.slept and 590 <= later.slept[0] <= 601  # what was left of the hold, by the deployment's updateTime


def test_traffic_moved_by_someone_else_is_refused(repo: Path, server: BackgroundServer) -> None:
    def meddle(n: int) -> None:
        if n == 1:
            d = deployment(server)
            allocations = d["experimentConfig"]["versionRelease"]["trafficAllocations"]
            for a in allocations:
                a["trafficPercentage"] = 70 if a["id"] == PREVIOUS_ID else 30
            body = {"experimentConfig": d["experimentConfig"]}
            assert httpx.patch(f"{server.url}/v1/{WEB}", params={"updateMask": "experimentConfig"}, json=body).status_code == 200

    with pytest.raises(ReleaseRefused, match="someone else moved its traffic"):
        run(repo, server, FakeClock(on_sleep=meddle))
    assert shares(server) == {PREVIOUS_ID: 70, TARGET_ID: 30}  # left as the other person made it
    with pytest.raises(ReleaseRefused, match="which no step gives"):
        run(repo, server, FakeClock())


def test_a_dry_run_shows_the_schedule_and_writes_nothing(repo: Path, server: BackgroundServer) -> None:
    before = deployment(server)
    result = run(repo, server, FakeClock(), dry_run=True)
    assert result.outcome == "dry run" and not result.events
    assert [(s["step"], s["traffic"][result.target]) for s in result.schedule] == [
        (1, {"before": 0, "after": 10}),
        (2, {"before": 10, "after": 50}),
        (3, {"before": 50, "after": 100}),
    ]
    assert deployment(server)["etag"] == before["etag"]

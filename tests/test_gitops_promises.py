"""GitOps that keeps its promises (#25), a week of it against the emulator over HTTP, the remote
read back with Google's official client: two applies at once, rollback of an apply, the applied
record, drift labelled with its author, prune keeping what a person made."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import ces_v1

from cesync.emulator.server import BackgroundServer
from tests.conftest import EXAMPLES

PARENT = "projects/local/locations/us/apps/support-bot"


@pytest.fixture
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=False, operation_delay=0.05) as s:
        yield s


@pytest.fixture
def google(server: BackgroundServer) -> ces_v1.AgentServiceClient:
    return ces_v1.AgentServiceClient(
        credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=server.url)
    )


@pytest.fixture
def bot(tmp_path: Path) -> Path:
    dst = tmp_path / "support-bot"
    shutil.copytree(EXAMPLES / "support-bot", dst, ignore=shutil.ignore_patterns(".cesync"))
    return dst


def start(*args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "CES_EMULATOR_HOST"}
    return subprocess.Popen(
        [sys.executable, "-m", "cesync.cli", *args],
        env={**env, "NO_COLOR": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_applies_of_a_new_app_at_once_both_succeed(
    bot: Path, server: BackgroundServer, google: ces_v1.AgentServiceClient
) -> None:
    """However the two interleave, neither reports a conflict: the one that meets the other's
    writes reads them back and finds what it wanted ("already applied")."""
    common = ("apply", "--dir", str(bot), "--env", "local", "--endpoint", server.url, "--auto-approve")
    runs = [start(*common), start(*common)]
    outputs = [p.communicate(timeout=120) for p in runs]
    for p, (out, err) in zip(runs, outputs, strict=True):
        assert p.returncode == 0, out + err
        assert "conflict" not in out + err
        lines = [line for line in out.splitlines() if line.startswith(("  skipped", "  not started", "skipped", "not started"))]
        assert len(lines) == len(set(lines)), out  # each line once
    assert {a.name.rsplit("/", 1)[-1] for a in google.list_agents(parent=PARENT)} == {"support", "billing"}


def test_example_workflows_serialize_applies_per_environment() -> None:
    """A second apply to an environment waits for the first (GitHub concurrency group, GitLab resource_group)."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    groups: dict[str, str] = {}
    for path in sorted((EXAMPLES / "ci" / "github").glob("*.yml")):
        workflow = yaml.load(path.read_text())
        for job in workflow["jobs"].values():
            if any(s.get("with", {}).get("command") == "apply" for s in job.get("steps", [])):
                group = (job.get("concurrency") or workflow.get("concurrency") or {}).get("group", "")
                assert job.get("environment") and group, path.name
                assert (job.get("concurrency") or workflow["concurrency"]).get("cancel-in-progress") is False, path.name
                assert groups.setdefault(job["environment"], group) == group, path.name  # one group per environment
    gitlab = yaml.load((EXAMPLES / "ci" / "gitlab" / ".gitlab-ci.yml").read_text())
    for name, job in gitlab.items():
        if isinstance(job, dict) and any("cesync apply" in line for line in job.get("script", [])):
            assert job.get("resource_group"), name
    assert set(groups) == {"dev", "prod"}

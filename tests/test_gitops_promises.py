"""GitOps that keeps its promises (#25), a week of it against the emulator over HTTP, the remote
read back with Google's official client: two applies at once, rollback of an apply, the applied
record, drift labelled with its author, prune keeping what a person made."""

from __future__ import annotations

import asyncio
import json
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
from google.oauth2.credentials import Credentials
from google.protobuf import field_mask_pb2

from cesync.core.record import AppliedRecord
from cesync.emulator.server import BackgroundServer
from tests.conftest import EXAMPLES
from tests.helpers import cesync_in_process as cesync

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


def run(*args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    r = cesync(*args)
    assert r.returncode in ok, r.stdout + r.stderr
    return r


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=Dev", "-c", "user.email=dev@acme.example", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def last_record(url: str) -> AppliedRecord | None:
    from cesync.client import CesClient
    from cesync.repo.repo import load_repo
    from cesync.sync.record import last_applied

    env = load_repo(EXAMPLES / "support-bot", resources=False).env("local")

    async def go() -> AppliedRecord | None:
        async with CesClient(url) as client:
            return await last_applied(client, env)

    return asyncio.run(go())


def test_a_week_of_gitops(bot: Path, server: BackgroundServer, google: ces_v1.AgentServiceClient) -> None:
    git(bot, "init", "-q", "-b", "main")
    git(bot, "add", "-A")
    git(bot, "commit", "-q", "-m", "Support bot")
    sha = git(bot, "rev-parse", "HEAD")
    common = ("--dir", str(bot), "--env", "local", "--endpoint", server.url)

    # Monday: the first apply leaves its record in CES, an app version the official client sees
    out = run("apply", *common, "--auto-approve").stdout
    assert "Applied record: version version-" in out and sha[:7] in out
    [version] = [v for v in google.list_app_versions(parent=PARENT) if "cesync-record: " in v.description]
    assert version.display_name == f"cesync applied {sha[:7]} to local"
    record = last_record(server.url)
    assert record is not None and (record.commit, record.env, record.version) == (sha, "local", version.name)
    assert record.digest.startswith("hmac-sha256:") and {"tool/web-search", "agent/billing"} <= record.owned
    assert not json.loads(run("plan", *common, "--format", "json").stdout)["changes"]

    # Tuesday: alice edits an agent in the console; the plan says it is drift, and who and when
    alice = ces_v1.AgentServiceClient(
        credentials=Credentials(token="alice@acme.example"),
        transport="rest",
        client_options=ClientOptions(api_endpoint=server.url),
    )
    billing = alice.get_agent(name=f"{PARENT}/agents/billing")
    billing.instruction = "Refund everything."
    alice.update_agent(agent=billing, update_mask=field_mask_pb2.FieldMask(paths=["instruction"]))
    # The emulator lists changelogs oldest first unless asked (CES documents no default order): the
    # plan below must still find alice's edit, which is the newest.
    [entry, *_] = google.list_changelogs(request={"parent": PARENT, "order_by": "create_time desc"})
    assert (entry.author, entry.resource, entry.action) == ("alice@acme.example", billing.name, "Update")
    assert list(google.list_changelogs(parent=PARENT))[-1] == entry
    plan = json.loads(run("plan", *common, "--format", "json").stdout)
    [change] = plan["changes"]
    assert change["id"] == "billing" and change["drift"]["by"] == "alice@acme.example"
    assert change["drift"]["fields"] == ["instruction"]
    assert change["drift"]["at"][:19] == entry.create_time.strftime("%Y-%m-%dT%H:%M:%S")
    text = run("plan", *common).stdout
    assert "! drift: changed outside cesync since its last apply by alice@acme.example" in text
    assert "(**drift**)" in run("plan", *common, "--format", "markdown").stdout
    check = cesync("plan", *common, "--detailed-exitcode", "--fail-on-drift")
    assert check.returncode == 2 and "drift: 1 resource changed outside cesync since its last apply" in check.stderr
    run("apply", *common, "--auto-approve")
    assert "Refund everything." not in google.get_agent(name=billing.name).instruction
    assert cesync("plan", *common, "--detailed-exitcode", "--fail-on-drift").returncode == 0

    # Wednesday: someone makes an agent by hand; the repo drops a tool; prune deletes only cesync's
    google.create_agent(parent=PARENT, agent=ces_v1.Agent(display_name="Hand made", llm_agent={}), agent_id="hand")
    git(bot, "rm", "-q", "tools/web-search.yaml")
    git(bot, "commit", "-q", "-m", "No web search")
    plan = json.loads(run("plan", *common, "--prune", "--format", "json").stdout)
    assert [(c["action"], c["id"]) for c in plan["changes"]] == [("delete", "web-search")]
    assert f"{PARENT}/agents/hand" in plan["unmanaged"] and "tool/web-search" in plan["owned"]
    assert (
        "(kept: cesync did not make it; --prune-unmanaged deletes it):\n  ? " + f"{PARENT}/agents/hand"
        in run("plan", *common, "--prune").stdout
    )
    run("apply", *common, "--auto-approve", "--prune")
    names = {a.name.rsplit("/", 1)[-1] for a in google.list_agents(parent=PARENT)}
    assert "hand" in names and not [t for t in google.list_tools(parent=PARENT) if t.name.endswith("/web-search")]
    saved = bot / "plan.json"
    plan = json.loads(run("plan", *common, "--prune", "--prune-unmanaged", "--out", str(saved), "--format", "json").stdout)
    assert [(c["action"], c["id"]) for c in plan["changes"]] == [("delete", "hand")] and plan["prune_unmanaged"]
    refused = cesync("apply", str(saved), *common, "--auto-approve", "--prune")
    assert refused.returncode == 1 and "pass --prune-unmanaged to apply it" in refused.stderr
    assert "hand" in {a.name.rsplit("/", 1)[-1] for a in google.list_agents(parent=PARENT)}
    run("apply", str(saved), *common, "--auto-approve", "--prune", "--prune-unmanaged")
    assert "hand" not in {a.name.rsplit("/", 1)[-1] for a in google.list_agents(parent=PARENT)}

    # Thursday: a change to a tool's code; its tests test the repo's code, and the deployed code is named as such
    code = bot / "code" / "refund_policy.py"
    code.write_text(code.read_text().replace("4.99", "5.99"), encoding="utf-8")
    local = cesync("test", "refund", "--dir", str(bot), "--env", "local", "--local")
    assert local.returncode == 1 and "15.01" in local.stdout  # the repo's new fee fails the old expectation
    deployed = cesync("test", "refund", *common)
    assert deployed.returncode == 0 and "tools/refund-policy differs from the repo (pythonFunction.pythonCode)" in deployed.stderr
    code.write_text(code.read_text().replace("5.99", "4.99").replace("how much.", "how much (v2)."), encoding="utf-8")
    saved.unlink()  # Wednesday's plan file: the checkout is clean, so the apply records a commit
    git(bot, "commit", "-q", "-am", "Refund policy v2")
    changed = git(bot, "rev-parse", "HEAD")
    run("apply", *common, "--auto-approve")
    assert cesync("test", "refund", "--dir", str(bot), "--env", "local", "--local").returncode == 0

    # Friday: prod gets exactly what local runs, by commit, not the working tree
    code.write_text(code.read_text().replace("(v2)", "WORK IN PROGRESS"), encoding="utf-8")
    promote_plan = bot.parent / "promote.json"
    shown = run(
        "promote", "--from", "local", "--to", "prod", "--dir", str(bot), "--endpoint", server.url, "--out", str(promote_plan)
    )
    assert f"commit {changed[:12]}, which 'local' last applied" in shown.stdout and "WORK IN PROGRESS" not in shown.stdout
    run("apply", str(promote_plan), "--dir", str(bot), "--endpoint", server.url, "--auto-approve")
    prod = "projects/acme-support/locations/us/apps/support-bot"
    assert "how much (v2)." in google.get_tool(name=f"{prod}/tools/refund-policy").python_function.python_code
    assert any(v.display_name == f"cesync applied {changed[:7]} to prod" for v in google.list_app_versions(parent=prod))

    # Saturday: an apply made with --snapshot is undone by rolling back to the version it made first
    code.write_text(code.read_text().replace("WORK IN PROGRESS", "(v2)"), encoding="utf-8")
    guard = bot / "guardrails" / "prompt-safety.yaml"
    guard.write_text(guard.read_text() + "description: Loosened by mistake.\n", encoding="utf-8")
    applied = run("apply", *common, "--auto-approve", "--snapshot").stdout
    snapshot = next(line.split()[2] for line in applied.splitlines() if line.startswith("Snapshot: version"))
    assert google.get_guardrail(name=f"{PARENT}/guardrails/prompt-safety").description == "Loosened by mistake."
    run("rollback", snapshot, *common, "--auto-approve")
    assert google.get_guardrail(name=f"{PARENT}/guardrails/prompt-safety").description != "Loosened by mistake."

"""The whole app as code (#16), end to end against the emulator over HTTP, read back with Google's client.

The example applies from nothing (the app included), plans empty, sees an agent edited by
hand as drift, removes a tool together with the references to it in one apply, exports to a
repo that plans empty; new agents that name each other are created then patched; versions
and rollback restore a snapshot.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import ces_v1
from google.protobuf import field_mask_pb2

from cesync.core.scrubber import Scrubber
from cesync.emulator.server import BackgroundServer
from tests.conftest import EXAMPLES
from tests.helpers import cesync_in_process as cesync
from tests.helpers import fast_polling, make_repo

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


def run(*args: str, ok: tuple[int, ...] = (0,)) -> str:
    r = cesync(*args)
    assert r.returncode in ok, r.stdout + r.stderr
    return r.stdout + r.stderr


def plan_json(repo: Path, url: str, *extra: str) -> dict[str, object]:
    r = cesync("plan", "--dir", str(repo), "--env", "local", "--endpoint", url, "--format", "json", *extra)
    assert r.returncode == 0, r.stderr
    data: dict[str, object] = json.loads(r.stdout)
    return data


def keys(plan: dict[str, object]) -> list[tuple[str, str]]:
    changes = plan["changes"]
    assert isinstance(changes, list)
    return [(c["action"], f"{c['kind']}/{c['id']}") for c in changes]


def test_the_example_applies_from_nothing_and_round_trips(
    bot: Path, tmp_path: Path, server: BackgroundServer, google: ces_v1.AgentServiceClient
) -> None:
    url = server.url
    first = keys(plan_json(bot, url))
    assert first[0] == ("create", "app/app")  # the app does not exist yet: created first
    assert {a for a, _ in first} == {"create"} and len(first) == 23
    order = [k for _, k in first]
    # what is named exists first; examples and deployments come last
    assert order.index("agent/billing") < order.index("agent/support") < order.index("guardrail/prompt-safety")
    assert order.index("tool/refund-policy") < order.index("agent/billing") < order.index("tool/billing-agent")
    assert set(order[-2:]) == {"example/refund-question", "deployment/web"}

    out = run("apply", "--dir", str(bot), "--env", "local", "--endpoint", url, "--auto-approve")
    assert "23 created" in out
    run("plan", "--dir", str(bot), "--env", "local", "--endpoint", url, "--detailed-exitcode")

    app = google.get_app(name=PARENT)
    assert app.display_name == "Acme support" and app.root_agent == f"{PARENT}/agents/support"
    assert list(app.guardrails) == [f"{PARENT}/guardrails/prompt-safety"]
    support = google.get_agent(name=f"{PARENT}/agents/support")
    assert f"{PARENT}/tools/refund-policy" in support.tools and list(support.child_agents) == [f"{PARENT}/agents/billing"]
    assert [t.toolset for t in support.toolsets] == [f"{PARENT}/toolsets/orders", f"{PARENT}/toolsets/catalog"]
    assert support.transfer_rules[0].child_agent == f"{PARENT}/agents/billing"
    assert {g.name.rsplit("/", 1)[1] for g in google.list_guardrails(parent=PARENT)} == {"no-card-numbers", "prompt-safety"}
    example = google.get_example(name=f"{PARENT}/examples/refund-question")
    assert example.entry_agent == f"{PARENT}/agents/support"
    assert example.messages[1].chunks[0].tool_call.tool == f"{PARENT}/tools/refund-policy"
    assert google.get_deployment(name=f"{PARENT}/deployments/web").display_name == "Web chat"

    # an agent edited by hand is drift: planned back
    support.instruction = "edited in the console"
    google.update_agent(agent=support, update_mask=field_mask_pb2.FieldMask(paths=["instruction"]))
    drift = plan_json(bot, url)
    assert keys(drift) == [("update", "agent/support")]
    changes = drift["changes"]
    assert isinstance(changes, list) and changes[0]["update_mask"] == ["instruction"]
    run("apply", "--dir", str(bot), "--env", "local", "--endpoint", url, "--auto-approve")

    # export: a repo that plans empty, agents and the app included
    exported = tmp_path / "exported"
    run("export", "--dir", str(bot), "--env", "local", "--endpoint", url, "--out", str(exported))
    assert "rootAgent: {ref: agents/support}" in (exported / "app.yaml").read_text()
    assert "{ref: agents/billing}" in (exported / "agents" / "support.yaml").read_text()
    run("plan", "--dir", str(exported), "--env", "local", "--endpoint", url, "--detailed-exitcode")


def test_removing_a_tool_removes_its_references_first_in_the_same_apply(
    bot: Path, server: BackgroundServer, google: ces_v1.AgentServiceClient
) -> None:
    url = server.url
    run("apply", "--dir", str(bot), "--env", "local", "--endpoint", url, "--auto-approve")
    (bot / "tools" / "refund-policy.yaml").unlink()
    for rel in ("agents/support.yaml", "agents/billing.yaml"):
        path = bot / rel
        path.write_text(path.read_text().replace("  - {ref: tools/refund-policy}\n", ""))
    example = bot / "examples" / "refund-question.yaml"
    example.write_text(example.read_text().replace("{ref: tools/refund-policy}", "{ref: tools/order-status}"))
    shutil.rmtree(bot / "evaluations")  # the goldens of that tool go with it from the repo
    plan = plan_json(bot, url, "--prune")
    assert keys(plan)[-1] == ("delete", "tool/refund-policy")  # after the evaluations that name it
    assert {k for a, k in keys(plan) if a == "delete"} == {
        "tool/refund-policy",
        *(f"evaluation/{e}" for e in ("refund-full", "refund-small-order", "refund-too-late")),
    }
    assert {k for a, k in keys(plan) if a == "update"} == {"agent/support", "agent/billing", "example/refund-question"}
    out = run("apply", "--dir", str(bot), "--env", "local", "--endpoint", url, "--auto-approve", "--prune")
    assert "4 deleted, 0 failed" in out
    assert all("refund-policy" not in t.name for t in google.list_tools(parent=PARENT))
    run("plan", "--dir", str(bot), "--env", "local", "--endpoint", url, "--prune", "--detailed-exitcode")


CYCLE = {
    "agents/a.yaml": "displayName: A\nllmAgent: {}\nchildAgents: [{ref: agents/b}]\n",
    "agents/b.yaml": (
        "displayName: B\nllmAgent: {}\n"
        "transferRules: [{childAgent: {ref: agents/a}, direction: CHILD_TO_PARENT, disablePlannerTransfer: "
        "{expressionCondition: {expression: 'true'}}}]\n"
    ),
    "app.yaml": "displayName: Cyclic\nrootAgent: {ref: agents/a}\n",
}


def test_new_agents_naming_each_other_are_created_then_patched(
    tmp_path: Path, server: BackgroundServer, google: ces_v1.AgentServiceClient
) -> None:
    repo = make_repo(tmp_path, CYCLE)
    url = server.url
    r = cesync("validate", "--dir", str(repo))
    assert r.returncode == 0, r.stderr  # a cycle through child agents / transfer rules is no error
    plan = plan_json(repo, url)
    changes = plan["changes"]
    assert isinstance(changes, list)
    deferred = {f"{c['kind']}/{c['id']}": c["deferred"] for c in changes if c["deferred"]}
    assert deferred["app/app"] == ["rootAgent"]  # the app first, its root agent once that exists
    assert len([k for k in deferred if k.startswith("agent/")]) == 1
    run("apply", "--dir", str(repo), "--env", "local", "--endpoint", url, "--auto-approve")
    parent = "projects/p/locations/us/apps/a"
    assert list(google.get_agent(name=f"{parent}/agents/a").child_agents) == [f"{parent}/agents/b"]
    assert google.get_agent(name=f"{parent}/agents/b").transfer_rules[0].child_agent == f"{parent}/agents/a"
    assert google.get_app(name=parent).root_agent == f"{parent}/agents/a"
    run("plan", "--dir", str(repo), "--env", "local", "--endpoint", url, "--detailed-exitcode")


def test_a_created_resource_whose_patch_cannot_happen_is_not_done_once(tmp_path: Path, server: BackgroundServer) -> None:
    """The app is created without its root agent; the agent's create then fails: the app exists,
    so it is 'not started' (its patch), not 'skipped', and it is reported once."""
    # agent 0, created first, takes agent a's display name: CES refuses a (display names are unique)
    repo = make_repo(tmp_path, {**CYCLE, "agents/0.yaml": "displayName: A\nllmAgent: {}\n"})
    common = ("--dir", str(repo), "--env", "local", "--endpoint", server.url, "--parallelism", "1")
    r = cesync("apply", *common, "--auto-approve", "--format", "json")
    assert r.returncode == 1, r.stderr
    outcomes = [o for o in json.loads(r.stdout)["outcomes"] if o["kind"] == "app"]
    assert [o["status"] for o in outcomes] == ["not started"], outcomes
    assert outcomes[0]["message"] == "created without rootAgent: agent a was not created"
    progress = [line for line in (r.stdout + r.stderr).splitlines() if "created without rootAgent" in line]
    assert len(progress) <= 1, progress  # said once, not by both the wait and the change


def test_a_cycle_through_required_fields_is_refused_by_validate(tmp_path: Path) -> None:
    files = {
        "tools/t.yaml": "agentTool: {name: t, description: d, agent: {ref: agents/a}}\n",
        "guardrails/g.yaml": "displayName: G\nllmPromptSecurity: {defaultSettings: {}}\n",
        "agents/a.yaml": "displayName: A\nllmAgent: {}\ntools: [{ref: tools/t}]\n",
    }
    repo = make_repo(tmp_path, files)
    assert cesync("validate", "--dir", str(repo)).returncode == 0  # agents' tools may wait for a patch


def test_snapshot_versions_and_rollback(bot: Path, server: BackgroundServer, google: ces_v1.AgentServiceClient) -> None:
    url = server.url
    common = ("--dir", str(bot), "--env", "local", "--endpoint", url)
    out = run("apply", *common, "--auto-approve", "--snapshot")
    assert "Snapshot: none (the app does not exist yet" in out  # nothing before the app to go back to

    # change the app with a snapshot taken before the change, then roll back to it
    agent = bot / "agents" / "billing.yaml"
    agent.write_text(agent.read_text().replace("Explain charges", "Explain every charge"))
    out = run("apply", *common, "--auto-approve", "--snapshot")
    assert "Snapshot: version" in out and "undoes it" in out
    version = out.split("Snapshot: version ", 1)[1].split()[0]
    listed = run("versions", *common)
    assert any(line.startswith(version + " ") and "cesync apply" in line for line in listed.splitlines()), listed
    preview = cesync("rollback", version, *common)  # no terminal, no --auto-approve: shows, then refuses
    assert preview.returncode == 1 and "~ agent billing" in preview.stdout and "--auto-approve" in preview.stderr
    assert preview.stdout.splitlines()[0].endswith(f"({PARENT}) at {url}"), preview.stdout[:300]  # as every plan names it
    assert "Explain every charge" in google.get_agent(name=f"{PARENT}/agents/billing").instruction
    restored = run("rollback", version, *common, "--auto-approve")
    assert "Explain charges" in google.get_agent(name=f"{PARENT}/agents/billing").instruction
    versions = google.list_app_versions(parent=PARENT)
    [backup] = [v for v in versions if not v.name.endswith(f"/{version}") and "cesync-record: " not in v.description]
    assert any("Explain every charge" in a.instruction for a in backup.snapshot.agents)
    assert f"kept as version {backup.name.rsplit('/', 1)[-1]}" in restored
    drift = plan_json(bot, url)
    assert keys(drift) == [("update", "agent/billing")]  # the repo still says otherwise


def test_rollback_of_an_unknown_version_is_a_clear_error(bot: Path, server: BackgroundServer) -> None:
    url = server.url
    run("apply", "--dir", str(bot), "--env", "local", "--endpoint", url, "--auto-approve")
    r = cesync("rollback", "nope", "--dir", str(bot), "--env", "local", "--endpoint", url, "--yes")
    assert r.returncode == 1 and "no version 'nope'" in r.stderr and "Traceback" not in r.stderr
    assert "--yes is deprecated; use --auto-approve" in r.stderr  # the old spelling still works, with a warning


def test_export_app_archive_round_trips_through_import_archive(
    bot: Path, tmp_path: Path, server: BackgroundServer, google: ces_v1.AgentServiceClient
) -> None:
    """exportApp (CES's own archive, short names inside) -> cesync import-archive -> a repo that plans empty."""
    url = server.url
    run("apply", "--dir", str(bot), "--env", "local", "--endpoint", url, "--auto-approve")
    request = ces_v1.ExportAppRequest(name=PARENT, export_format=ces_v1.ExportAppRequest.ExportFormat.JSON)
    archive = tmp_path / "export.zip"
    archive.write_bytes(google.export_app(request=request).result(timeout=30, polling=fast_polling()).app_content)
    repo = tmp_path / "imported"
    out = run("import-archive", str(archive), "--out", str(repo), "--env", "local", "--app", PARENT)
    assert "2 agents" in out and "2 guardrails" in out and "1 example " in out  # singular for one
    assert "rootAgent: {ref: agents/support}" in (repo / "app.yaml").read_text()
    assert "- {ref: tools/refund-policy}" in (repo / "agents" / "billing.yaml").read_text()
    plan = plan_json(repo, url)
    assert keys(plan) == [], keys(plan)  # deployments are not in an archive: left alone (unmanaged)


def test_diff_between_environments_covers_every_kind(
    bot: Path, server: BackgroundServer, google: ces_v1.AgentServiceClient
) -> None:
    url = server.url
    for env in ("local", "dev"):
        run("apply", "--dir", str(bot), "--env", env, "--endpoint", url, "--auto-approve")
    same = cesync("diff", "--from", "local", "--to", "dev", "--dir", str(bot), "--endpoint", url, "--detailed-exitcode")
    assert same.returncode == 0, same.stdout + same.stderr
    dev = "projects/acme-support/locations/us/apps/support-bot-dev"
    guardrail = google.get_guardrail(name=f"{dev}/guardrails/no-card-numbers")
    guardrail.description = "changed in dev only"
    google.update_guardrail(guardrail=guardrail, update_mask=field_mask_pb2.FieldMask(paths=["description"]))
    differs = cesync("diff", "--from", "local", "--to", "dev", "--dir", str(bot), "--endpoint", url, "--detailed-exitcode")
    assert differs.returncode == 2 and "~ guardrail no-card-numbers" in differs.stdout, differs.stdout + differs.stderr


def test_create_app_operation_error_is_reported(tmp_path: Path) -> None:
    """Someone else's CreateApp of the same id finishes first: ours ends in an operation error, said clearly."""
    repo = make_repo(tmp_path, {"app.yaml": "displayName: Mine\n"})
    with BackgroundServer(operation_delay=1.0) as server:
        google = ces_v1.AgentServiceClient(
            credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=server.url)
        )
        theirs = google.create_app(parent="projects/p/locations/us", app_id="a", app=ces_v1.App(display_name="Theirs"))
        r = cesync("apply", "--dir", str(repo), "--endpoint", server.url, "--auto-approve")
        theirs.result(timeout=30, polling=fast_polling())
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "conflict: create the app" in r.stdout and "already exists" in r.stdout, r.stdout
    assert "create app projects/p/locations/us/apps/a: running" in r.stderr  # the operation was polled, with progress


def test_pull_brings_an_agent_edited_by_hand_back_into_its_file(
    bot: Path, server: BackgroundServer, google: ces_v1.AgentServiceClient
) -> None:
    url = server.url
    run("apply", "--dir", str(bot), "--env", "local", "--endpoint", url, "--auto-approve")
    billing = google.get_agent(name=f"{PARENT}/agents/billing")
    billing.description = "Invoices only."
    google.update_agent(agent=billing, update_mask=field_mask_pb2.FieldMask(paths=["description"]))
    run("pull", "--dir", str(bot), "--env", "local", "--endpoint", url)
    text = (bot / "agents" / "billing.yaml").read_text()
    assert "description: Invoices only." in text and "- {ref: tools/refund-policy}" in text  # refs stay refs
    run("plan", "--dir", str(bot), "--env", "local", "--endpoint", url, "--detailed-exitcode")


def test_a_saved_plan_with_create_then_patch_applies_as_made(tmp_path: Path, server: BackgroundServer) -> None:
    repo = make_repo(tmp_path, CYCLE)
    saved = tmp_path / "plan.json"
    run("plan", "--dir", str(repo), "--env", "local", "--endpoint", server.url, "--out", str(saved))
    run("apply", str(saved), "--dir", str(repo), "--endpoint", server.url, "--auto-approve")
    run("plan", "--dir", str(repo), "--env", "local", "--endpoint", server.url, "--detailed-exitcode")


BAD_FILES = {
    "agent with a misspelt field": ("agents/x.yaml", "displayName: X\ninstrction: hi\n", "agents/x.yaml:2:1: unknown field"),
    "agent naming an unknown tool": (
        "agents/x.yaml",
        "displayName: X\ntools: [{ref: tools/gret}]\n",
        "agents/x.yaml:2:15: ref 'tools/gret' names no tool of this repo; did you mean 'tools/greet'?",
    ),
    "guardrail without a display name": ("guardrails/g.yaml", "enabled: true\n", "guardrails/g.yaml:1:1: missing required field"),
    "deployment with a bad enum": (
        "deployments/d.yaml",
        "displayName: D\nchannelProfile: {channelType: WEB}\n",
        "deployments/d.yaml:2:31: channelProfile.channelType: 'WEB' is not a valid value",
    ),
    "app.yaml with an id": ("app.yaml", "displayName: A\nid: other\n", "app.yaml:2:1: the app's id is each environment's"),
}


@pytest.mark.parametrize("rel,text,expected", BAD_FILES.values(), ids=list(BAD_FILES))
def test_new_kinds_are_validated_with_positions(tmp_path: Path, rel: str, text: str, expected: str) -> None:
    repo = make_repo(tmp_path, {rel: text})
    r = cesync("validate", "--dir", str(repo))
    assert r.returncode == 1 and expected in r.stderr, r.stderr


@pytest.mark.parametrize("seed", range(4))
def test_the_whole_app_applies_through_lost_replies_and_retries(bot: Path, seed: int) -> None:
    """Seeded 503s, 429s and committed-then-dropped replies on every kind's writes (CreateApp included):
    every lost reply is settled by reading back, nothing is a false conflict, and one apply converges."""
    import asyncio

    from cesync.client import CesClient, RetryPolicy
    from cesync.emulator import EmbeddedTransport, FaultConfig
    from cesync.pipeline.apply import apply_plan
    from cesync.pipeline.context import open_context
    from cesync.pipeline.planning import make_plan

    faults = FaultConfig(rate_429=0.1, rate_503=0.1, drop_rate=0.3, seed=seed)
    transport = EmbeddedTransport(faults=faults)

    async def go() -> tuple[list[str], bool]:
        ctx = open_context(bot, "local", scrubber=Scrubber())
        lines: list[str] = []
        retry = RetryPolicy(attempts=12, initial=0.001, maximum=0.01)
        async with CesClient("http://emu", transport=transport, retry=retry, notify=lines.append) as c:
            result = await apply_plan(c, await make_plan(ctx, c))
            assert result.ok, [(o.kind, o.id, o.status, o.message) for o in result.outcomes if o.status != "done"]
            faults.update({"rate_429": 0.0, "rate_503": 0.0, "drop_rate": 0.0})
            again = await make_plan(ctx, c)
            settled = [o.message for o in result.outcomes if "reply was lost" in o.message]
        return settled, again.has_changes

    settled, changes = asyncio.run(go())
    assert not changes
    assert settled  # the faults did hit writes, so the zero conflicts above mean something


def test_a_targeted_apply_creates_the_missing_app_first(tmp_path: Path, server: BackgroundServer) -> None:
    repo = make_repo(tmp_path, {})
    url = server.url
    plan = plan_json(repo, url, "--target", "tools/greet")
    assert keys(plan) == [("create", "app/app"), ("create", "tool/greet")]  # nothing exists without its app
    run("apply", "--dir", str(repo), "--env", "local", "--endpoint", url, "--auto-approve", "--target", "tools/greet")
    run("plan", "--dir", str(repo), "--env", "local", "--endpoint", url, "--detailed-exitcode")


def test_sensitive_values_and_environments_hold_for_agents_and_the_app(
    tmp_path: Path, server: BackgroundServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "hunter2-agent-secret"
    files = {
        "cesync.yaml": (
            "version: 1\ndefaults: {project: p, location: us, sensitive: [PASSPHRASE]}\nenvironments:\n"
            "  dev: {app: a-dev, vars: {TONE: brief}}\n  prod: {app: a-prod, vars: {TONE: formal}}\n"
        ),
        "agents/x.yaml": "displayName: X\nllmAgent: {}\ninstruction: 'Be ${TONE}. The passphrase is ${PASSPHRASE}.'\n",
        "app.yaml": "displayName: A ${TONE}\nrootAgent: {ref: agents/x}\n",
    }
    repo = make_repo(tmp_path, files)
    monkeypatch.setenv("CESYNC_VAR_PASSPHRASE", secret)
    url = server.url
    for env, tone in (("dev", "brief"), ("prod", "formal")):
        r = cesync("plan", "--dir", str(repo), "--env", env, "--endpoint", url, "--format", "markdown")
        assert r.returncode == 0 and secret not in r.stdout + r.stderr and "(sensitive)" in r.stdout, r.stdout
        assert f"displayName: A {tone}" in r.stdout and f"projects/p/locations/us/apps/a-{env}/agents/x" in r.stdout
        run("apply", "--dir", str(repo), "--env", env, "--endpoint", url, "--auto-approve")
        run("plan", "--dir", str(repo), "--env", env, "--endpoint", url, "--detailed-exitcode")

"""export (adoption) and diff (promotion): round trips against the emulator, and the pure reverse mapping."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.client import CesClient
from cesync.core.planbuild import build_plan
from cesync.core.scrubber import Scrubber
from cesync.emulator import EmbeddedTransport
from cesync.emulator.server import BackgroundServer
from cesync.errors import CesyncError
from cesync.pipeline.apply import apply_plan
from cesync.pipeline.exporting import plan_files
from cesync.repo.files import write_tree
from cesync.sync.export import export_repo, file_names
from cesync.sync.remote import read_remote
from tests.conftest import EXAMPLES
from tests.helpers import cesync_in_process as cesync  # the commands, not the process: no interpreter start-up each
from tests.helpers import make_repo
from tests.pipeline.test_plan_apply import tool as generated_tool

APP = "projects/p/locations/us/apps/a"
ENVS = ["local", "dev", "staging", "prod"]


@pytest.fixture
def bot(tmp_path: Path) -> Path:
    dst = tmp_path / "support-bot"
    shutil.copytree(EXAMPLES / "support-bot", dst, ignore=shutil.ignore_patterns(".cesync"))
    return dst


def _apply(repo: Path, env: str, url: str) -> None:
    r = cesync("apply", "--dir", str(repo), "--env", env, "--endpoint", url, "--auto-approve")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("env", ENVS)
def test_export_then_plan_shows_no_changes(bot: Path, tmp_path: Path, emulator: BackgroundServer, env: str) -> None:
    _apply(bot, env, emulator.url)
    out = tmp_path / "exported"
    r = cesync("export", "--dir", str(bot), "--env", env, "--endpoint", emulator.url, "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert (
        "warning" not in r.stderr
        and "exported the app's settings, 8 tools, 5 toolsets, 2 guardrails, 2 agents, 1 example, 1 deployment and 3 evaluations"
        in r.stdout
    )
    plan = cesync("plan", "--dir", str(out), "--env", env, "--endpoint", emulator.url, "--detailed-exitcode")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "No changes" in plan.stdout
    # cesync.yaml goes along, and with it the policies folder it names: the app holds no policy.
    policies = sorted(p.relative_to(bot).as_posix() for p in (bot / "policies").rglob("*.yaml"))
    assert policies and all((out / p).read_text() == (bot / p).read_text() for p in policies)
    # What made the environment concrete went back to its portable form.
    orders = (out / "toolsets" / "orders.yaml").read_text()
    assert "url: ${ORDERS_URL}" in orders and "projects/${SECRETS_PROJECT}/secrets" in orders
    assert "$env_var" in (out / "schemas" / "orders.toolset.yaml").read_text()
    assert "{ref: tools/order-status}" in (out / "tools" / "order-card.yaml").read_text()
    assert "url:" not in (out / "toolsets" / "catalog.yaml").read_text()  # given by environments.<env>.urls
    code = (out / "code" / "refund-policy.py").read_text()
    assert code == (bot / "code" / "refund_policy.py").read_text()


def test_adopt_an_app_without_a_repo(tmp_path: Path, emulator: BackgroundServer) -> None:
    src = make_repo(tmp_path, {})
    _apply(src, "local", emulator.url)
    out = tmp_path / "adopted"
    app = "projects/p/locations/us/apps/a"
    r = cesync("export", "--app", app, "--env", "prod", "--endpoint", emulator.url, "--out", str(out))
    assert r.returncode == 0, r.stderr
    config = (out / "cesync.yaml").read_text()
    assert "prod:" in config and "app: a" in config and emulator.url in config
    plan = cesync("plan", "--dir", str(out), "--detailed-exitcode")
    assert plan.returncode == 0 and "No changes" in plan.stdout, plan.stdout + plan.stderr


def test_export_refuses_non_empty_folder_and_force_keeps_other_files(
    bot: Path, tmp_path: Path, emulator: BackgroundServer
) -> None:
    _apply(bot, "dev", emulator.url)
    out = tmp_path / "existing"
    (out / "tools").mkdir(parents=True)
    (out / "tools" / "stale.yaml").write_text("googleSearchTool: {name: stale}\n")
    (out / "README.md").write_text("keep me\n")
    args = ["export", "--dir", str(bot), "--env", "dev", "--endpoint", emulator.url, "--out", str(out)]
    refused = cesync(*args)
    assert refused.returncode == 1 and "not empty" in refused.stderr and "--force" in refused.stderr
    assert (out / "tools" / "stale.yaml").exists() and not (out / "cesync.yaml").exists()
    forced = cesync(*args, "--force")
    assert forced.returncode == 0, forced.stderr
    assert (out / "README.md").read_text() == "keep me\n"
    assert not (out / "tools" / "stale.yaml").exists() and (out / "tools" / "order-status.yaml").exists()
    assert not list(tmp_path.glob(".existing.cesync-*"))  # no staging folder left behind


@pytest.mark.parametrize(
    ("injected", "expected"),
    [
        ("projects/p/locations/us/apps/a/tools/..\\..\\evil", "which is not a tool of projects/p/locations/us/apps/a"),
        ("projects/other/locations/us/apps/x/tools/greet", "not a tool of"),
    ],
)
def test_export_rejects_hostile_remote_names(tmp_path: Path, emulator: BackgroundServer, injected: str, expected: str) -> None:
    src = make_repo(tmp_path, {})
    _apply(src, "local", emulator.url)
    tool = "projects/p/locations/us/apps/a/tools/greet"
    httpx.post(f"{emulator.url}/admin/inject", json={"name": tool, "fields": {"name": injected}}).raise_for_status()
    out = tmp_path / "out"
    r = cesync("export", "--dir", str(src), "--env", "local", "--endpoint", emulator.url, "--out", str(out))
    assert r.returncode == 1 and expected in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


def test_diff_shows_exactly_the_seeded_difference(bot: Path, emulator: BackgroundServer) -> None:
    for env in ("dev", "prod"):
        _apply(bot, env, emulator.url)
    same = cesync("diff", "--dir", str(bot), "--from", "dev", "--to", "prod", "--endpoint", emulator.url, "--detailed-exitcode")
    assert same.returncode == 0 and "No changes" in same.stdout, same.stdout + same.stderr
    # Someone changes a description in dev by hand.
    name = "projects/acme-support/locations/us/apps/support-bot-dev/tools/web-search"
    tool = httpx.get(f"{emulator.url}/v1/{name}").json()
    search = {**tool["googleSearchTool"], "description": "Search the new help centre."}
    httpx.post(f"{emulator.url}/admin/inject", json={"name": name, "fields": {"googleSearchTool": search}}).raise_for_status()
    args = ["diff", "--dir", str(bot), "--from", "dev", "--to", "prod", "--endpoint", emulator.url, "--detailed-exitcode"]
    differ = cesync(*args, "--format", "json")
    assert differ.returncode == 2, differ.stderr
    plan = json.loads(differ.stdout)
    assert [(c["action"], c["kind"], c["id"], c["update_mask"]) for c in plan["changes"]] == [
        ("update", "tool", "web-search", ["googleSearchTool.description"])
    ]
    assert plan["app"].endswith("/apps/support-bot") and plan["endpoint"] == emulator.url  # prod's, read there
    text = cesync(*args)
    assert "like the live 'dev'" in text.stdout and "Search the new help centre." in text.stdout
    assert f"apps/support-bot) at {emulator.url}\n" in text.stdout  # the header names where prod was read, as plan's
    assert "not a promotion: 'cesync promote --from dev --to prod'" in text.stderr


# --- the pure reverse mapping -------------------------------------------------------------


def _export(resources: list[Resource], variables: dict[str, str] | None = None, urls: dict[str, str] | None = None) -> Any:
    return export_repo(resources, parent=APP, variables=variables or {}, urls=urls or {}, config_text="")


def _tool(rid: str, body: dict[str, Any]) -> Resource:
    return Resource(KINDS["tool"], rid, {"name": f"{APP}/tools/{rid}", "etag": "e", **body})


@pytest.mark.parametrize(
    ("description", "variables", "expected"),
    [
        ("Price in ${currency}", {}, "Price in $${currency}"),  # a literal ${ stays literal
        ("https://api.dev.example/v1", {"API": "https://api.dev.example"}, "${API}/v1"),
        ("local", {"ENV": "local"}, "${ENV}"),  # a whole value, however short
        ("localhost only", {"ENV": "local"}, "localhost only"),  # not a part of a longer word
        ("in us only", {"REGION": "us"}, "in us only"),  # too short to replace inside text
        ("a-b-c", {"LONG": "a-b-c", "SHORT": "b-c"}, "${LONG}"),  # the longest value wins
    ],
)
def test_values_back_to_variables(description: str, variables: dict[str, str], expected: str) -> None:
    body = {"googleSearchTool": {"name": "s", "description": description}}
    text = _export([_tool("s", body)], variables).files["tools/s.yaml"]
    assert f"description: {expected}" in text or f"description: '{expected}'" in text, text


def test_file_names_are_safe_and_unique() -> None:
    assert file_names(KINDS["tool"], ["con", "Foo", "foo", "ok"]) == {"con": "con_2", "Foo": "Foo", "foo": "foo_2", "ok": "ok"}
    with pytest.raises(CesyncError, match="cannot be a cesync tool"):
        file_names(KINDS["tool"], ["..", "fine"])


def test_renamed_file_keeps_the_id_and_code_goes_to_files() -> None:
    code = "def f():\n    return {}\n"
    files = _export([_tool("con", {"pythonFunction": {"name": "f", "pythonCode": code}})]).files
    assert next(line for line in files["tools/con_2.yaml"].splitlines() if not line.startswith("#")) == "id: con"
    assert files["code/con_2.py"] == code


def test_write_tree_is_all_or_nothing(tmp_path: Path) -> None:
    target = tmp_path / "t"
    target.mkdir()
    (target / "tools").mkdir()
    (target / "tools" / "old.yaml").write_text("old")
    with pytest.raises(CesyncError, match="outside"):
        write_tree(target, {"tools/new.yaml": "new", "../escape.txt": "x"}, force=True)
    assert (target / "tools" / "old.yaml").read_text() == "old" and not (tmp_path / "escape.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]


def test_references_in_lists_round_trip() -> None:
    config = "version: 1\nenvironments:\n  local:\n    project: p\n    location: us\n    app: a\n    vars: {REGION: eu-west}\n"
    body = {
        "googleSearchTool": {
            "name": "s",
            "description": "Search ${literal} in eu-west",
            "contextUrls": ["https://a.example", f"{APP}/versions/help"],
        }
    }
    remote = [_tool("s", body)]
    exported = export_repo(remote, parent=APP, variables={"REGION": "eu-west"}, urls={}, config_text=config)
    text = exported.files["tools/s.yaml"]
    assert "{ref: versions/help}" in text and "$${literal} in ${REGION}" in text
    app = Resource(KINDS["app"], "app", {"name": APP, "displayName": "a"})  # the app exists
    plan = plan_files(exported.files, "local", [app, Resource(KINDS["tool"], "s", remote[0].body)], scrubber=Scrubber())
    assert not plan.has_changes, [c.fields for c in plan.changes]


def test_a_deployment_of_the_draft_app_round_trips() -> None:
    # Deployment.app_version: ".../versions/- to use the draft app" (google-cloud-ces docstring)
    config = "version: 1\nenvironments:\n  local:\n    project: p\n    location: us\n    app: a\n"
    body = {"displayName": "Web", "appVersion": f"{APP}/versions/-", "channelProfile": {"channelType": "WEB_UI"}}
    remote = [Resource(KINDS["deployment"], "web", {"name": f"{APP}/deployments/web", "etag": "e", **body})]
    exported = export_repo(remote, parent=APP, variables={}, urls={}, config_text=config)
    assert "appVersion: {ref: versions/-}" in exported.files["deployments/web.yaml"]
    app = Resource(KINDS["app"], "app", {"name": APP, "displayName": "a"})
    plan = plan_files(exported.files, "local", [app, remote[0]], scrubber=Scrubber())
    assert not plan.has_changes, [c.fields for c in plan.changes]


tricky_text = st.lists(
    st.sampled_from(
        [
            *["a", "b", " ", "\n", "$", "{", "}", "é", "\t", ":", "#", "'", '"', "-", "abcd", "eu-west", "${V}"],
            *["\x85", "\u2028", "\u2029", "\r", "\ufeff", "\\"],  # line breaks only YAML knows, BOM: readers fold or drop them
        ]
    ),
    max_size=20,
).map("".join)


@settings(
    max_examples=int(os.environ.get("CESYNC_HYPOTHESIS_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@example(  # '\x85' was written raw in single quotes and read back as ' '
    body={
        "clientFunction": {
            "name": "c",
            "parameters": {"type": "OBJECT", "properties": {"x": {"type": "STRING", "description": "\x85"}}},
        }
    },
    description="",
    value="abcd",
)
@given(body=generated_tool, description=tricky_text, value=st.sampled_from(["abcd", "$x", "a b", "eu-west"]))
def test_generated_tools_export_and_plan_without_changes(body: dict[str, Any], description: str, value: str) -> None:
    """Whatever the remote holds (odd text, ${, block-unfriendly whitespace), export gives it back exactly."""
    kind = next(iter(k for k in body if isinstance(body[k], dict)))
    body = {**body, kind: {**body[kind], "description": description}}
    parent = "projects/p/locations/us/apps/h"

    async def remote() -> list[Resource]:
        async with CesClient("http://emu", transport=EmbeddedTransport(apps=[parent])) as c:
            assert (await apply_plan(c, build_plan("h", parent, [Resource(KINDS["tool"], "t", body)], []))).ok
            return await read_remote(c, parent)

    remote_now = asyncio.run(remote())
    config = (
        f"version: 1\nenvironments:\n  h:\n    project: p\n    location: us\n    app: h\n    vars: {{V: {json.dumps(value)}}}\n"
    )
    resources = [Resource(r.kind, r.id, r.body) for r in remote_now]
    exported = export_repo(resources, parent=parent, variables={"V": value}, urls={}, config_text=config)
    plan = plan_files(exported.files, "h", remote_now, scrubber=Scrubber())
    assert not plan.has_changes, (exported.files["tools/t.yaml"], plan.changes)


def test_export_of_an_embedded_environment_takes_its_app_along(bot: Path, tmp_path: Path) -> None:
    assert cesync("apply", "--dir", str(bot), "--env", "local", "--auto-approve").returncode == 0
    out = tmp_path / "exported"
    r = cesync("export", "--dir", str(bot), "--env", "local", "--out", str(out))
    assert r.returncode == 0, r.stderr
    plan = cesync("plan", "--dir", str(out), "--env", "local", "--detailed-exitcode")
    assert plan.returncode == 0 and "No changes" in plan.stdout, plan.stdout + plan.stderr


def test_write_tree_verify_failure_leaves_nothing(tmp_path: Path) -> None:
    def refuse(staged: Path) -> None:
        assert (staged / "tools" / "a.yaml").read_text() == "a"
        raise CesyncError("not valid")

    with pytest.raises(CesyncError, match="not valid"):
        write_tree(tmp_path / "new" / "repo", {"tools/a.yaml": "a"}, verify=refuse)
    assert not (tmp_path / "new" / "repo").exists() and list((tmp_path / "new").iterdir()) == []


def test_diff_reads_each_environments_own_secret(bot: Path, emulator: BackgroundServer) -> None:
    """Two apps that both match the repo, each with its own secret, diff as equal in one run (issue #38, finding 6)."""
    config = bot / "cesync.yaml"
    config.write_text(config.read_text().replace("defaults:\n", "defaults:\n  sensitive: [ORDERS_TOKEN]\n", 1))
    orders = bot / "toolsets" / "orders.yaml"
    version = "projects/${SECRETS_PROJECT}/secrets/orders-api-key/versions/latest"
    orders.write_text(orders.read_text().replace(version, "${ORDERS_TOKEN}"))
    dev, prod = "projects/d/secrets/k4f1c9a/versions/3", "projects/p/secrets/k8b2e7d/versions/7"
    secrets = {"CESYNC_DEV_VAR_ORDERS_TOKEN": dev, "CESYNC_PROD_VAR_ORDERS_TOKEN": prod}
    for env in ("dev", "prod"):
        r = cesync("apply", "--dir", str(bot), "--env", env, "--endpoint", emulator.url, "--auto-approve", env=secrets)
        assert r.returncode == 0, r.stderr
    token = "projects/acme-support/locations/us/apps/support-bot/toolsets/orders"
    stored = httpx.get(f"{emulator.url}/v1/{token}").json()["openApiToolset"]["apiAuthentication"]
    assert stored["apiKeyConfig"]["apiKeySecretVersion"] == prod  # each environment got its own
    args = ["diff", "--dir", str(bot), "--from", "dev", "--to", "prod", "--endpoint", emulator.url, "--detailed-exitcode"]
    same = cesync(*args, env=secrets)
    assert same.returncode == 0 and "No changes" in same.stdout, same.stdout + same.stderr
    assert not any(v in same.stdout + same.stderr for v in secrets.values())
    # one value for both (the only way before): the apps differ in the secret, and only that is shown
    shared = cesync(*args, env={"CESYNC_VAR_ORDERS_TOKEN": dev})
    assert shared.returncode == 2 and "(sensitive value changed)" in shared.stdout, shared.stdout + shared.stderr
    missing = cesync("plan", "--dir", str(bot), "--env", "dev", "--endpoint", emulator.url)
    assert missing.returncode == 1
    assert "sensitive variable 'ORDERS_TOKEN' is not set for environment 'dev'" in missing.stderr
    assert "CESYNC_DEV_VAR_ORDERS_TOKEN" in missing.stderr and "environments.dev.vars" not in missing.stderr


def test_a_file_holding_a_value_only_another_environment_marks_sensitive_is_refused() -> None:
    """The run's scrubber knows every environment's sensitive values; this environment names none."""
    from cesync.sync.export import check_no_secret

    known = Scrubber()
    known.remember(["prod-only-T0ken-9f3k"])
    with pytest.raises(CesyncError, match=r"another environment of cesync\.yaml marks sensitive"):
        check_no_secret({"tools/a.yaml": "description: prod-only-T0ken-9f3k\n"}, {}, known)
    check_no_secret({"tools/a.yaml": "description: nothing secret\n"}, {}, known)

"""What the applied record says cesync owns (pipeline/recording.py), judged on the app's state."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cesync.emulator.faults import Injected
from cesync.emulator.server import BackgroundServer
from tests.helpers import cesync, emulator_env, make_repo

APP = "projects/p/locations/us/apps/a"


def tool(name: str) -> str:
    return f"pythonFunction:\n  name: {name}\n  pythonCode: |\n    def {name}() -> dict:\n        return {{}}\n"


@pytest.fixture
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=True) as s:
        yield s


def tools_of(server: BackgroundServer) -> set[str]:
    import httpx

    names = httpx.get(f"{server.url}/v1/{APP}/tools", params={"pageSize": 1000}).json().get("tools", [])
    return {t["name"].rsplit("/", 1)[-1] for t in names}


def hand_made(tid: str) -> Injected:
    body = {"displayName": tid, "pythonFunction": {"name": tid, "pythonCode": f"def {tid}():\n    return {{}}\n"}}
    return Injected("POST", f"/v1/{APP}/tools?toolId={tid}", body)


def test_a_tool_made_by_hand_during_an_apply_is_never_owned(tmp_path: Path, server: BackgroundServer) -> None:
    root = make_repo(tmp_path, {"tools/one.yaml": tool("one"), "tools/two.yaml": tool("two")})
    env = emulator_env(server.host)
    fired: list[str] = []

    def console(method: str, path: str) -> Iterable[Injected]:
        if method == "POST" and "/tools" in path and not fired:  # during the apply's first create
            fired.append(path)
            return [hand_made("handt13")]
        return []

    server.hooks.before_write = console
    done = cesync("apply", "--auto-approve", "--prune", cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    server.hooks.before_write = None
    assert fired and server.hooks.answered[0][1] == 200 and "handt13" in tools_of(server)
    (root / "tools" / "two.yaml").unlink()
    plan = cesync("plan", "--prune", "--format", "json", cwd=root, env=env)
    deletes = [c["id"] for c in json.loads(plan.stdout)["changes"] if c["action"] == "delete"]
    assert deletes == ["two"], plan.stdout
    assert cesync("apply", "--auto-approve", "--prune", cwd=root, env=env).returncode == 0
    assert tools_of(server) == {"greet", "one", "handt13"}


# --- records a console user writes: promote steering, drift laundering, prune widening ---------

KEY = {"CESYNC_PLAN_KEY": "pipeline-only secret"}


def api(server: BackgroundServer, method: str, path: str, body: dict[str, Any] | None = None, **params: str) -> Any:
    """A console user's call (changelog author alice@example.com)."""
    import httpx

    headers = {"Authorization": "Bearer alice@example.com"}
    answer = httpx.request(method, f"{server.url}/v1/{path}", json=body, params=params, headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.json()


def newest_record(server: BackgroundServer) -> dict[str, Any]:
    versions = api(server, "GET", f"{APP}/versions", pageSize="100")["appVersions"]
    found = sorted((v for v in versions if "cesync-record: " in v.get("description", "")), key=lambda v: v["createTime"])
    return dict(found[-1])


def copy_record(server: BackgroundServer, version: dict[str, Any], description: str | None = None) -> str:
    made = api(
        server,
        "POST",
        f"{APP}/versions",
        {"displayName": version["displayName"], "description": description or version["description"]},
    )
    return str(made["name"])


@pytest.mark.parametrize("original", ["kept", "deleted"])
def test_a_copied_record_does_not_launder_drift(tmp_path: Path, server: BackgroundServer, original: str) -> None:
    """After a console edit, a new version holding a verbatim copy of the last record (its snapshot
    now holds the edit) must not turn the drift check green; nor when the original is deleted, so
    that the copy is the only record (the sealed hashes judge the app then)."""
    root = make_repo(tmp_path, {"tools/one.yaml": tool("one")})
    env = {**emulator_env(server.host), **KEY}
    assert cesync("apply", "--auto-approve", cwd=root, env=env).returncode == 0
    api(server, "PATCH", f"{APP}/tools/one", {"timeout": "9s"}, updateMask="timeout")
    drift = cesync("plan", "--detailed-exitcode", "--fail-on-drift", cwd=root, env=env)
    assert drift.returncode == 2, drift.stdout + drift.stderr
    last = newest_record(server)
    copy_record(server, last)
    if original == "deleted":
        api(server, "DELETE", last["name"])
    again = cesync("plan", "--detailed-exitcode", "--fail-on-drift", cwd=root, env=env)
    assert again.returncode == 2, again.stdout + again.stderr
    assert "drift: changed outside cesync" in again.stdout


@pytest.mark.parametrize("form", ["format 1, notOwned empty", "format 2, unsealed"])
def test_a_forged_record_cannot_widen_prune(tmp_path: Path, server: BackgroundServer, form: str) -> None:
    """A record naming a hand-made tool as cesync's, written without the key, is ignored and named:
    the form the finding used (an empty notOwned, so the snapshot, hand-made tool and all, was
    owned) and a record of today's form owning the tool by name."""
    import base64
    import zlib

    root = make_repo(tmp_path, {"tools/one.yaml": tool("one")})
    env = {**emulator_env(server.host), **KEY}
    assert cesync("apply", "--auto-approve", cwd=root, env=env).returncode == 0
    api(server, "POST", f"{APP}/tools", hand_made("hand").body, toolId="hand")
    last = newest_record(server)
    outer = json.loads(last["description"].split("cesync-record: ", 1)[1])
    inner = json.loads(outer["r"]) if "r" in outer else outer
    if form.startswith("format 1"):
        empty = base64.b64encode(zlib.compress(b"")).decode()
        line = {"v": 1, "env": "local", "commit": inner["commit"], "digest": inner["digest"], "cesync": "x", "notOwned": empty}
        wide = {"description": "What cesync applied.\ncesync-record: " + json.dumps(line)}
    else:
        from cesync.core.record import record_body

        owned = ["tool/one", "tool/greet", "tool/hand"]
        wide = record_body(APP, "local", inner["commit"], False, inner["digest"], "x", owned, written_at=inner["at"])
    forged = copy_record(server, last, wide["description"])
    plan = cesync("plan", "--prune", "--format", "json", cwd=root, env=env)
    data = json.loads(plan.stdout)
    assert not [c for c in data["changes"] if c["action"] == "delete"], plan.stdout
    assert any(forged in note and "not sealed" in note for note in data["record_notes"]), data["record_notes"]
    text = cesync("plan", "--prune", cwd=root, env=env)
    assert f"Records: ignored the applied record in {forged}: it is not sealed" in text.stdout


def test_without_a_key_the_plan_says_what_a_console_user_can_steer(tmp_path: Path, server: BackgroundServer) -> None:
    root = make_repo(tmp_path, {})
    plan = cesync("plan", cwd=root, env=emulator_env(server.host))
    assert (
        "Records: no record key (CESYNC_RECORD_KEY or CESYNC_PLAN_KEY) is set, so applied records are taken as written"
        in plan.stdout
    )
    assert "Records:" not in cesync("plan", cwd=root, env={**emulator_env(server.host), **KEY}).stdout


def _git(root: Path, *args: str) -> str:
    import subprocess

    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.mark.parametrize("key", [False, True], ids=["no key", "key"])
def test_a_record_cannot_steer_promote_to_an_unreviewed_commit(tmp_path: Path, server: BackgroundServer, key: bool) -> None:
    """dev's newest record names a side-branch commit never merged: with the key the forged record is
    ignored (prod is planned from what dev really runs); without it the commit is refused as unreviewed."""
    config = "version: 1\ndefaults: {project: p, location: us}\nenvironments:\n  dev: {app: a}\n  prod: {app: b}\n"
    root = make_repo(tmp_path, {"cesync.yaml": config})
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "reviewed")
    reviewed = _git(root, "rev-parse", "HEAD")
    env = {**emulator_env(server.host), **(KEY if key else {})}
    assert cesync("apply", "--env", "dev", "--auto-approve", cwd=root, env=env).returncode == 0
    _git(root, "checkout", "-qb", "side")
    (root / "tools" / "evil.yaml").write_text(tool("evil"), encoding="utf-8")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "unreviewed")
    side = _git(root, "rev-parse", "HEAD")
    _git(root, "checkout", "-q", "main")
    last = newest_record(server)
    outer = json.loads(last["description"].split("cesync-record: ", 1)[1])
    data = json.loads(outer["r"])
    data["commit"] = side
    outer["r"] = json.dumps(data, sort_keys=True, separators=(",", ":"))
    copy_record(server, last, last["description"].split("cesync-record: ", 1)[0] + "cesync-record: " + json.dumps(outer))
    promoted = cesync("promote", "--from", "dev", "--to", "prod", "--format", "json", cwd=root, env=env)
    if key:
        assert promoted.returncode == 0, promoted.stderr
        assert json.loads(promoted.stdout)["commit"] == reviewed
        assert "ignored the applied record" in promoted.stderr and "seal does not match" in promoted.stderr
        assert "evil" not in promoted.stdout
    else:
        assert promoted.returncode == 1 and f"commit {side[:12]} is not on the reviewed branch 'main'" in promoted.stderr


# --- a write the server cannot guard, checked afterwards (pipeline/apply.py, sync/changelog.py) ----


DEPLOYMENT = "displayName: Web\nchannelProfile:\n  channelType: WEB_UI\n  webWidgetConfig:\n    webWidgetTitle: %s\n"


def test_a_console_edit_of_a_deployment_overwritten_mid_apply_is_a_conflict(tmp_path: Path, server: BackgroundServer) -> None:
    """A Deployment's etag is output only too: the same check after its write."""
    root = make_repo(tmp_path, {"deployments/web.yaml": DEPLOYMENT % "Hi"})
    env = emulator_env(server.host)
    assert cesync("apply", "--auto-approve", cwd=root, env=env).returncode == 0
    (root / "deployments" / "web.yaml").write_text(DEPLOYMENT % "Hello", encoding="utf-8")

    def console(method: str, path: str) -> Iterable[Injected]:
        if method == "PATCH" and path.startswith(f"/v1/{APP}/deployments/web?"):
            return [
                Injected("PATCH", f"/v1/{APP}/deployments/web?updateMask=displayName", {"displayName": "Mine"}, "bob@example.com")
            ]
        return []

    server.hooks.before_write = console
    done = cesync("apply", "--auto-approve", cwd=root, env=env)
    server.hooks.before_write = None
    assert done.returncode == 1, done.stdout + done.stderr
    assert "bob@example.com at " in done.stdout and "(displayName)" in done.stdout


@pytest.mark.parametrize("when", ["between read and write", "none"])
def test_a_console_edit_of_the_app_overwritten_mid_apply_is_a_conflict(
    tmp_path: Path, server: BackgroundServer, when: str
) -> None:
    """The App's etag is output only: a console PATCH landing between apply's read and its write is
    overwritten without the server saying a word. The changelogs say it; apply reports who, when
    and which fields, and exits non-zero."""
    root = make_repo(tmp_path, {"app.yaml": "displayName: A\nglobalInstruction: Be brief.\n"})
    env = emulator_env(server.host)
    assert cesync("apply", "--auto-approve", cwd=root, env=env).returncode == 0
    (root / "app.yaml").write_text("displayName: A\nglobalInstruction: Be kind.\n", encoding="utf-8")

    def console(method: str, path: str) -> Iterable[Injected]:
        if when != "none" and method == "PATCH" and path.startswith(f"/v1/{APP}?"):
            return [
                Injected("PATCH", f"/v1/{APP}?updateMask=globalInstruction", {"globalInstruction": "Mine!"}, "alice@example.com")
            ]
        return []

    server.hooks.before_write = console
    done = cesync("apply", "--auto-approve", cwd=root, env=env)
    server.hooks.before_write = None
    if when == "none":
        assert done.returncode == 0, done.stdout + done.stderr
        return
    assert server.hooks.answered and server.hooks.answered[0][1] == 200
    assert done.returncode == 1, done.stdout + done.stderr
    assert "conflict" in done.stdout and "alice@example.com at " in done.stdout and "(globalInstruction)" in done.stdout
    assert "overwritten" in done.stdout


# --- renames of kinds whose names are unique in the app (core/passes/renames.py, pipeline/apply.py) ---

GUARDRAIL = "displayName: G\ncontentFilter:\n  bannedContents: [x]\n  matchType: REGEXP_MATCH\nenabled: true\n"


@pytest.mark.parametrize("named", [False, True], ids=["alone", "named by an agent"])
def test_renaming_a_guardrail_file_keeping_its_name_applies(tmp_path: Path, server: BackgroundServer, named: bool) -> None:
    """A guardrail's displayName is unique in the app: the rename deletes the old one first (forced
    when only the repo's own agent names it, which the same apply rewrites), then creates the new."""
    agent = "displayName: Front\nllmAgent: {}\ninstruction: Hi.\nguardrails:\n  - {ref: guardrails/%s}\n"
    files = {"guardrails/old.yaml": GUARDRAIL, **({"agents/front.yaml": agent % "old"} if named else {})}
    root = make_repo(tmp_path, files)
    env = emulator_env(server.host)
    assert cesync("apply", "--auto-approve", cwd=root, env=env).returncode == 0
    (root / "guardrails" / "old.yaml").rename(root / "guardrails" / "new.yaml")
    if named:
        (root / "agents" / "front.yaml").write_text(agent % "new", encoding="utf-8")
    plan = cesync("plan", "--prune", cwd=root, env=env)
    assert "deleted before new is created" in plan.stdout and "display name is unique in the app" in plan.stdout
    done = cesync("apply", "--auto-approve", "--prune", cwd=root, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    names = {g["name"].rsplit("/", 1)[-1] for g in api(server, "GET", f"{APP}/guardrails").get("guardrails", [])}
    assert names == {"new"}
    if named:
        front = api(server, "GET", f"{APP}/agents/front")
        assert front["guardrails"] == [f"{APP}/guardrails/new"]
    assert "No changes" in cesync("plan", "--prune", cwd=root, env=env).stdout


def test_a_rename_refused_names_the_real_cause(tmp_path: Path, server: BackgroundServer) -> None:
    """The old guardrail is named by an agent made by hand: its delete is refused, and the create
    of the new one says that, not that someone else made one since the plan."""
    root = make_repo(tmp_path, {"guardrails/old.yaml": GUARDRAIL})
    env = emulator_env(server.host)
    assert cesync("apply", "--auto-approve", cwd=root, env=env).returncode == 0
    api(
        server,
        "POST",
        f"{APP}/agents",
        {"displayName": "Hand", "llmAgent": {}, "guardrails": [f"{APP}/guardrails/old"]},
        agentId="hand",
    )
    (root / "guardrails" / "old.yaml").rename(root / "guardrails" / "new.yaml")
    done = cesync("apply", "--auto-approve", "--prune", "--prune-unmanaged", cwd=root, env=env)
    assert done.returncode == 1
    assert "created by someone else since the plan" not in done.stdout + done.stderr
    assert "guardrail old was not deleted, and a guardrail's display name is unique in the app" in done.stdout


# --- two repos, one app: owner namespaces (cesync.yaml owner, core/ownership.py) -----------------


def two_repos(tmp_path: Path) -> tuple[Path, Path]:
    def config(owner: str) -> str:
        return f"version: 1\nowner: {owner}\nenvironments:\n  local: {{endpoint: embedded, project: p, location: us, app: a}}\n"

    front = (
        "displayName: Front\nllmAgent: {}\ninstruction: Hi.\ntools:\n  - {ref: tools/s1}\n  - {ref: tools/b1, owner: billing}\n"
    )
    billing = make_repo(
        tmp_path / "billing", {"cesync.yaml": config("billing"), "tools/b1.yaml": tool("b1"), "tools/b2.yaml": tool("b2")}
    )
    support = make_repo(
        tmp_path / "support", {"cesync.yaml": config("support"), "tools/s1.yaml": tool("s1"), "agents/front.yaml": front}
    )
    for root in (billing, support):
        (root / "tools" / "greet.yaml").unlink()
    return billing, support


def test_two_repos_share_an_app_without_touching_each_others(tmp_path: Path, server: BackgroundServer) -> None:
    billing, support = two_repos(tmp_path)
    env = {**emulator_env(server.host), **KEY}
    assert cesync("apply", "--auto-approve", "--prune", cwd=billing, env=env).returncode == 0
    done = cesync("apply", "--auto-approve", "--prune", "--prune-unmanaged", cwd=support, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert tools_of(server) == {"b1", "b2", "s1"}
    front = api(server, "GET", f"{APP}/agents/front")
    assert f"{APP}/tools/b1" in front["tools"]  # a reference across owners
    plan = cesync("plan", "--prune", "--prune-unmanaged", "--format", "json", cwd=billing, env=env)
    data = json.loads(plan.stdout)
    assert data["changes"] == [] and data["owners"] == {f"{APP}/tools/s1": "support", f"{APP}/agents/front": "support"}
    text = cesync("plan", "--prune", cwd=billing, env=env).stdout
    assert "kept: another repo's (owner support); never pruned or adopted here" in text
    # another repo's resources are no drift of this one's
    assert cesync("plan", "--fail-on-unmanaged", "--fail-on-drift", cwd=billing, env=env).returncode == 0
    # one resource, one owner: support may not define (adopt, change) billing's tool
    (support / "tools" / "b2.yaml").write_text(tool("b2"), encoding="utf-8")
    refused = cesync("plan", cwd=support, env=env)
    assert (
        refused.returncode == 1
        and "defines what another repo owns" in refused.stderr
        and "tool b2 (owner 'billing')" in refused.stderr
    )
    (support / "tools" / "b2.yaml").unlink()
    # a reference must name the owner whose record owns what it names
    front = (support / "agents" / "front.yaml").read_text(encoding="utf-8")
    (support / "agents" / "front.yaml").write_text(front.replace("owner: billing", "owner: sales"), encoding="utf-8")
    wrong = cesync("plan", cwd=support, env=env)
    assert wrong.returncode == 1 and "{ref: tools/b1, owner: sales}: the app's records make it owner 'billing''s" in wrong.stderr
    (support / "agents" / "front.yaml").write_text(front, encoding="utf-8")
    # a reference to another owner's resource that the app no longer holds is refused, naming it
    api(server, "DELETE", f"{APP}/tools/b1", force="true")
    gone = cesync("plan", cwd=support, env=env)
    assert gone.returncode == 1 and "names tool/b1 of owner 'billing', which the app does not hold" in gone.stderr


def test_a_ref_to_another_owner_is_only_for_what_this_repo_does_not_define(tmp_path: Path) -> None:
    root = make_repo(
        tmp_path,
        {"agents/front.yaml": "displayName: F\nllmAgent: {}\ninstruction: Hi.\ntools:\n  - {ref: tools/greet, owner: billing}\n"},
    )
    said = cesync("validate", cwd=root)
    assert said.returncode == 1 and "ref 'tools/greet' is this repo's own tool: drop owner: billing" in said.stdout + said.stderr


def test_pull_keeps_a_reference_to_another_owner_as_written(tmp_path: Path, server: BackgroundServer) -> None:
    billing, support = two_repos(tmp_path)
    env = emulator_env(server.host)
    assert cesync("apply", "--auto-approve", cwd=billing, env=env).returncode == 0
    assert cesync("apply", "--auto-approve", cwd=support, env=env).returncode == 0
    api(server, "PATCH", f"{APP}/agents/front", {"instruction": "Hello."}, updateMask="instruction")
    pulled = cesync("pull", cwd=support, env=env)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    text = (support / "agents" / "front.yaml").read_text(encoding="utf-8")
    assert "instruction: Hello." in text and "{ref: tools/b1, owner: billing}" in text
    assert cesync("validate", cwd=support).returncode == 0


def test_deleting_the_newest_record_does_not_make_a_later_hand_made_tool_owned(tmp_path: Path, server: BackgroundServer) -> None:
    """A console user deletes the newest record (an app version) after making a tool by hand with
    the id of one cesync pruned before: the record before it, sealed and genuine, owns that id.
    A record owns nothing the app made after the record's version: the hand-made tool stays."""
    root = make_repo(tmp_path, {"tools/one.yaml": tool("one"), "tools/gone.yaml": tool("gone")})
    env = {**emulator_env(server.host), **KEY}
    assert cesync("apply", "--auto-approve", cwd=root, env=env).returncode == 0
    (root / "tools" / "gone.yaml").unlink()
    assert cesync("apply", "--auto-approve", "--prune", cwd=root, env=env).returncode == 0
    assert "gone" not in tools_of(server)
    api(server, "POST", f"{APP}/tools", hand_made("gone").body, toolId="gone")
    api(server, "DELETE", newest_record(server)["name"])
    plan = cesync("plan", "--prune", "--format", "json", cwd=root, env=env)
    assert not [c for c in json.loads(plan.stdout)["changes"] if c["action"] == "delete"], plan.stdout
    assert cesync("apply", "--auto-approve", "--prune", cwd=root, env=env).returncode == 0
    assert "gone" in tools_of(server)

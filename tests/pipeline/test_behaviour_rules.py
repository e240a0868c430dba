"""plan and apply follow the field-behaviour table against the emulator over HTTP (cesync.api.behaviour):
input-only credentials, server-defaulted settings, output-only etags, the app lock."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cesync.api import behaviour as fb
from cesync.core.plan import Plan
from cesync.core.scrubber import Scrubber
from cesync.emulator.server import BackgroundServer
from cesync.errors import CesyncError
from cesync.pipeline.apply import ApplyResult, apply_plan
from cesync.pipeline.context import open_context
from cesync.pipeline.planning import make_plan
from cesync.render.text import render_text
from tests.helpers import make_repo

APP_YAML = "displayName: Shop\n"
PIN, AUTH = "493817", "meta-auth-code-77311"
DEPLOYMENT = f"""displayName: WhatsApp
channelProfile:
  channelType: WHATSAPP
whatsappCredentials:
  authCode: {AUTH}
  pin: "{PIN}"
  phoneNumber: "+15550100"
  businessAccountId: biz-1
  wabaId: waba-1
  conversationProfileId: profile-1
"""


@pytest.fixture
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=False, operation_delay=0) as s:
        yield s


def _repo(tmp_path: Path, server: BackgroundServer, files: dict[str, str]) -> Path:
    config = f"version: 1\nenvironments:\n  local:\n    endpoint: {server.url}\n    project: p\n    location: us\n    app: a\n"
    return make_repo(tmp_path, {"cesync.yaml": config, "app.yaml": APP_YAML, **files})


async def _plan(root: Path, **kw: object) -> Plan:
    ctx = open_context(root, "local", scrubber=Scrubber())
    async with ctx.client() as c:
        return await make_plan(ctx, c, **kw)  # type: ignore[arg-type]


async def _apply(plan: Plan, root: Path) -> ApplyResult:
    ctx = open_context(root, "local", scrubber=Scrubber())
    async with ctx.client() as c:
        return await apply_plan(c, plan)


def _printed(plan: Plan) -> str:
    return render_text(plan) + plan.to_json()


def test_input_only_credentials_are_sent_on_create_never_compared_never_printed(tmp_path: Path, server: BackgroundServer) -> None:
    """Finding 2: CES never returns them, so comparing them planned a change (and a re-sent code) every time."""
    root = _repo(tmp_path, server, {"deployments/whatsapp.yaml": DEPLOYMENT})
    first = asyncio.run(_plan(root))
    create = next(c for c in first.changes if c.key == "deployment/whatsapp")
    assert create.action == "create" and create.body is not None and create.body["whatsappCredentials"]["pin"] == PIN
    assert "whatsappCredentials" in render_text(first)  # the plan says they are sent
    assert PIN not in _printed(first) and AUTH not in _printed(first)
    assert asyncio.run(_apply(first, root)).ok
    second = asyncio.run(_plan(root))
    assert not second.has_changes, [(c.key, c.update_mask) for c in second.changes]


def test_a_server_defaulted_setting_the_repo_leaves_out_is_not_planned_away(tmp_path: Path, server: BackgroundServer) -> None:
    """Finding 3: the server fills App.loggingSettings; a repo without it planned to clear it, forever."""
    root = _repo(tmp_path, server, {})
    assert asyncio.run(_apply(asyncio.run(_plan(root)), root)).ok
    remote = httpx.get(f"{server.url}/v1/projects/p/locations/us/apps/a").json()
    assert "loggingSettings" in remote  # the emulator, like CES, filled it in
    assert not asyncio.run(_plan(root)).has_changes
    (root / "app.yaml").write_text(APP_YAML + "loggingSettings:\n  cloudLoggingSettings:\n    enableCloudLogging: true\n")
    named = asyncio.run(_plan(root))
    assert [c.key for c in named.changes] == ["app/app"]  # named: compared as usual
    assert all(m.startswith("loggingSettings") for m in named.changes[0].update_mask)
    assert asyncio.run(_apply(named, root)).ok and not asyncio.run(_plan(root)).has_changes


# (file, its text, a change of the repo, the console's edit of the same resource: path, mask, body)
UNGUARDED = {
    "App": ("app.yaml", APP_YAML, "description: ours\n", ("", "description", {"description": "theirs"})),
    "Deployment": (
        "deployments/web.yaml",
        "displayName: Web\nchannelProfile:\n  channelType: WEB_UI\n",
        "displayName: Web (ours)\n",
        ("/deployments/web", "channelProfile", {"channelProfile": {"channelType": "API"}}),
    ),
}


@pytest.mark.parametrize("message", [m for m in UNGUARDED if not fb.etag_guards(m)])
def test_a_console_edit_of_a_kind_whose_etag_is_output_only_is_a_conflict(
    tmp_path: Path, server: BackgroundServer, message: str
) -> None:
    """Finding 4: the server ignores an OUTPUT_ONLY etag, so apply reads the resource just before writing it."""
    assert set(UNGUARDED) == {
        m for m in ("App", "Agent", "Tool", "Toolset", "Guardrail", "Example", "Deployment") if not fb.etag_guards(m)
    }
    path, text, ours, (suffix, mask, theirs) = UNGUARDED[message]
    root = _repo(tmp_path, server, {path: text} if path != "app.yaml" else {})
    assert asyncio.run(_apply(asyncio.run(_plan(root)), root)).ok
    (root / path).write_text(text.replace("displayName: Web\n", "") + ours if path != "app.yaml" else text + ours)
    plan = asyncio.run(_plan(root))
    assert plan.has_changes
    name = f"/v1/projects/p/locations/us/apps/a{suffix}"
    edited = httpx.patch(f"{server.url}{name}", params={"updateMask": mask}, json=theirs)
    assert edited.status_code == 200, edited.text
    result = asyncio.run(_apply(plan, root))
    (outcome,) = [o for o in result.outcomes if o.status != "done"]
    assert outcome.status == "conflict" and "changed by someone else since the plan" in outcome.message
    after = httpx.get(f"{server.url}{name}").json()
    assert after[mask] == theirs[mask]  # not overwritten
    assert asyncio.run(_apply(asyncio.run(_plan(root)), root)).ok  # a new plan sees their edit, and applies


def test_an_unchanged_app_is_written_after_the_read(tmp_path: Path, server: BackgroundServer) -> None:
    root = _repo(tmp_path, server, {})
    assert asyncio.run(_apply(asyncio.run(_plan(root)), root)).ok
    (root / "app.yaml").write_text(APP_YAML + "description: ours\n")
    result = asyncio.run(_apply(asyncio.run(_plan(root)), root))
    assert result.ok and httpx.get(f"{server.url}/v1/projects/p/locations/us/apps/a").json()["description"] == "ours"


def _lock(server: BackgroundServer, value: bool) -> None:
    r = httpx.patch(f"{server.url}/v1/projects/p/locations/us/apps/a", params={"updateMask": "locked"}, json={"locked": value})
    assert r.status_code == 200, r.text


def _app(server: BackgroundServer) -> dict[str, object]:
    return httpx.get(f"{server.url}/v1/projects/p/locations/us/apps/a").json()  # type: ignore[no-any-return]


TOOL = "pythonFunction:\n  pythonCode: |\n    def greet(name: str) -> dict:\n        return {'hi': name}\n"


def test_apply_to_a_locked_app_stops_before_its_first_write(tmp_path: Path, server: BackgroundServer) -> None:
    """Finding 5: a locked production app failed mid-apply; now apply stops first, naming the setting."""
    root = _repo(tmp_path, server, {})
    assert asyncio.run(_apply(asyncio.run(_plan(root)), root)).ok
    _lock(server, True)
    assert not asyncio.run(_plan(root)).has_changes  # a repo that does not name 'locked' leaves the lock alone
    (root / "tools" / "second.yaml").write_text(TOOL.replace("greet", "second"))
    (root / "app.yaml").write_text(APP_YAML + "description: new\n")
    plan = asyncio.run(_plan(root))
    assert "apply will stop before its first write" in plan.app_lock and "App lock: " in render_text(plan)
    before = _app(server)
    with pytest.raises(CesyncError, match=r"is locked \(App\.locked is true\): nothing was written"):
        asyncio.run(_apply(plan, root))
    assert _app(server) == before
    assert httpx.get(f"{server.url}/v1/projects/p/locations/us/apps/a/tools/second").status_code == 404


def test_a_repo_that_unlocks_the_app_unlocks_it_first(tmp_path: Path, server: BackgroundServer) -> None:
    root = _repo(tmp_path, server, {})
    assert asyncio.run(_apply(asyncio.run(_plan(root)), root)).ok
    _lock(server, True)
    (root / "tools" / "second.yaml").write_text(TOOL.replace("greet", "second"))
    (root / "app.yaml").write_text(APP_YAML + "description: new\nlocked: false\n")
    plan = asyncio.run(_plan(root))
    assert "apply unlocks it first" in plan.app_lock
    result = asyncio.run(_apply(plan, root))
    assert result.ok, [(o.key if hasattr(o, "key") else o.id, o.status, o.message) for o in result.outcomes]
    assert _app(server).get("locked") is None and _app(server)["description"] == "new"
    assert not asyncio.run(_plan(root)).has_changes


@pytest.mark.parametrize("existing", [True, False], ids=["update", "create"])
def test_a_repo_that_locks_the_app_locks_it_last(tmp_path: Path, server: BackgroundServer, existing: bool) -> None:
    root = _repo(tmp_path, server, {})
    if existing:
        assert asyncio.run(_apply(asyncio.run(_plan(root)), root)).ok
    (root / "tools" / "second.yaml").write_text(TOOL.replace("greet", "second"))
    (root / "deployments").mkdir()  # deployments are written after the app: the lock must wait for them
    (root / "deployments" / "web.yaml").write_text("displayName: Web\nchannelProfile:\n  channelType: WEB_UI\n")
    (root / "app.yaml").write_text(APP_YAML + "description: new\nlocked: true\n")
    plan = asyncio.run(_plan(root))
    assert "apply locks it last" in plan.app_lock
    result = asyncio.run(_apply(plan, root))  # every write under the lock would be refused: it goes last
    assert result.ok, [(o.id, o.status, o.message) for o in result.outcomes]
    assert _app(server)["locked"] is True and _app(server)["description"] == "new"
    again = asyncio.run(_plan(root))
    assert not again.has_changes and again.app_lock == "the app is locked (App.locked is true)"


def test_input_only_credentials_are_sent_again_only_when_asked(tmp_path: Path, server: BackgroundServer) -> None:
    from tests.helpers import cesync_in_process

    root = _repo(tmp_path, server, {"deployments/whatsapp.yaml": DEPLOYMENT})
    assert asyncio.run(_apply(asyncio.run(_plan(root)), root)).ok
    assert not asyncio.run(_plan(root)).has_changes
    plan = asyncio.run(_plan(root, resend_input_only=True))
    (change,) = plan.changes
    assert change.action == "update" and change.update_mask == ("whatsappCredentials",) and "again" in change.note
    shown = render_text(plan)
    assert "~ whatsappCredentials: (sensitive, input only: sent again)" in shown
    assert PIN not in _printed(plan) and AUTH not in _printed(plan)
    out = tmp_path / "plan.json"
    made = cesync_in_process("plan", "--dir", str(root), "--resend-input-only", "--out", str(out))
    assert made.returncode == 0 and PIN not in made.stdout + out.read_text()
    applied = cesync_in_process("apply", str(out), "--dir", str(root), "--auto-approve")
    assert applied.returncode == 0 and "1 updated" in applied.stdout, applied.stdout + applied.stderr
    assert PIN not in applied.stdout + applied.stderr
    direct = cesync_in_process("apply", "--dir", str(root), "--auto-approve", "--resend-input-only")
    assert direct.returncode == 0 and "1 updated" in direct.stdout  # without a saved plan the flag plans it itself

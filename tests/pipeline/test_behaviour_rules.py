"""plan and apply follow the field-behaviour table against the emulator over HTTP (cesync.api.behaviour):
input-only credentials, server-defaulted settings, output-only etags, the app lock."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cesync.core.plan import Plan
from cesync.emulator.server import BackgroundServer
from cesync.pipeline.apply import ApplyResult, apply_plan
from cesync.pipeline.workflow import make_plan, open_context
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
    ctx = open_context(root, "local")
    async with ctx.client() as c:
        return await make_plan(ctx, c, **kw)  # type: ignore[arg-type]


async def _apply(plan: Plan, root: Path) -> ApplyResult:
    ctx = open_context(root, "local")
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

"""pull edits only the values that changed: the lines around them keep their style as written (#28 item 2)."""

from __future__ import annotations

from pathlib import Path

import httpx

from cesync.emulator.server import BackgroundServer
from tests.helpers import cesync_in_process, make_repo
from tests.pipeline.test_pull import changed_lines

AGENT = (
    "# the front desk\n"
    "llmAgent: {}\n"
    "displayName: A\n"
    "description: before\n"
    "tools: [{ref: tools/greet}]\n"
    "childAgents:\n"
    "  - {ref: agents/b}\n"
    "transferRules: [{childAgent: {ref: agents/b}, direction: PARENT_TO_CHILD, disablePlannerTransfer: {expressionCondition: {expression: 'true'}}}]\n"
)


def test_pull_keeps_flow_style_and_key_order_on_untouched_lines(tmp_path: Path, emulator: BackgroundServer) -> None:
    root = make_repo(tmp_path, {"agents/a.yaml": AGENT, "agents/b.yaml": "displayName: B\nllmAgent: {}\n"})
    r = cesync_in_process("apply", "--dir", str(root), "--endpoint", emulator.url, "--auto-approve")
    assert r.returncode == 0, r.stdout + r.stderr
    url = f"{emulator.url}/v1/projects/p/locations/us/apps/a/agents/a"
    body = httpx.get(url).json()
    r2 = httpx.patch(url, params={"updateMask": "description"}, json={**body, "description": "after"})
    assert r2.status_code == 200, r2.text
    r = cesync_in_process("pull", "--dir", str(root), "--endpoint", emulator.url)
    assert r.returncode == 0, r.stdout + r.stderr
    assert changed_lines(AGENT, (root / "agents/a.yaml").read_text()) == (["description: before"], ["description: after"])

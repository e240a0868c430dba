"""rollback: the app restored to a version, and the applied record that says what cesync owns then."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from google.cloud import ces_v1

from cesync.emulator.server import BackgroundServer
from tests.helpers import cesync, make_repo, official_client

APP = "projects/p/locations/us/apps/a"
TOOL = """pythonFunction:
  name: {name}
  pythonCode: |
    def {name}() -> dict:
        \"\"\"Say {name}.\"\"\"
        return {{}}
"""


@pytest.fixture
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=True) as s:
        yield s


def _run(root: Path, server: BackgroundServer, *args: str) -> str:
    r = cesync(*args, "--dir", str(root), "--env", "local", "--endpoint", server.url)
    assert r.returncode in (0, 2), r.stdout + r.stderr
    return r.stdout


def test_what_a_rollback_brings_back_is_cesync_s_again_and_a_hand_made_tool_is_not(
    tmp_path: Path, server: BackgroundServer
) -> None:
    root = make_repo(tmp_path, {"tools/keep.yaml": TOOL.format(name="keep"), "tools/gone.yaml": TOOL.format(name="gone")})
    _run(root, server, "apply", "--auto-approve")
    google: ces_v1.AgentServiceClient = official_client(server.url)
    google.create_tool(  # made by hand in the console: never cesync's
        parent=APP, tool_id="byhand", tool=ces_v1.Tool(client_function=ces_v1.ClientFunction(name="byhand"))
    )
    (root / "tools" / "gone.yaml").unlink()
    # without --prune each kept resource is under the flag that would delete it
    plan = _run(root, server, "plan")
    ours, others = plan.split("not in the repo (kept; --prune deletes it):")[1].split("not in the repo (kept: cesync did not")
    assert "tools/gone" in ours and "byhand" not in ours, plan
    assert "--prune-unmanaged deletes it):" in others and "tools/byhand" in others and "gone" not in others, plan
    applied = _run(root, server, "apply", "--auto-approve", "--prune", "--snapshot")
    assert "tool gone will be deleted" in applied and "byhand" in applied  # listed as kept
    before = next(line.split()[2] for line in applied.splitlines() if line.startswith("Snapshot: version"))

    rolled = _run(root, server, "rollback", before, "--auto-approve")
    assert "Applied record: version" in rolled, rolled
    google.get_tool(name=f"{APP}/tools/gone")  # back

    plan = _run(root, server, "plan", "--prune", "--detailed-exitcode")
    assert "tool gone will be deleted" in plan, plan  # cesync made it: --prune takes it out again
    assert "tool byhand will be deleted" not in plan and "byhand" in plan, plan  # still not cesync's


def test_a_hand_made_tool_under_an_id_cesync_once_pruned_stays_not_cesync_s_after_a_rollback(
    tmp_path: Path, server: BackgroundServer
) -> None:
    root = make_repo(tmp_path, {"tools/x.yaml": TOOL.format(name="x")})
    _run(root, server, "apply", "--auto-approve")  # cesync makes x
    (root / "tools" / "x.yaml").unlink()
    _run(root, server, "apply", "--auto-approve", "--prune")  # and prunes it
    google: ces_v1.AgentServiceClient = official_client(server.url)
    google.create_tool(parent=APP, tool_id="x", tool=ces_v1.Tool(client_function=ces_v1.ClientFunction(name="byhand")))
    (root / "tools" / "other.yaml").write_text(TOOL.format(name="other"), encoding="utf-8")
    applied = _run(root, server, "apply", "--auto-approve", "--snapshot")
    before = next(line.split()[2] for line in applied.splitlines() if line.startswith("Snapshot: version"))

    _run(root, server, "rollback", before, "--auto-approve")  # the snapshot holds the hand-made x
    plan = _run(root, server, "plan", "--prune")
    assert "tool x will be deleted" not in plan and "tools/x" in plan, plan  # kept: cesync did not make this x


def test_rollback_in_json_prints_one_json_document(tmp_path: Path, server: BackgroundServer) -> None:
    import json

    root = make_repo(tmp_path, {"tools/keep.yaml": TOOL.format(name="keep")})
    _run(root, server, "apply", "--auto-approve")
    (root / "tools" / "keep.yaml").write_text(TOOL.format(name="keep").replace("Say", "Tell"), encoding="utf-8")
    applied = _run(root, server, "apply", "--auto-approve", "--snapshot")
    before = next(line.split()[2] for line in applied.splitlines() if line.startswith("Snapshot: version"))
    r = cesync(
        "rollback", before, "--auto-approve", "--format", "json", "--dir", str(root), "--env", "local", "--endpoint", server.url
    )
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout)  # the preview alone
    assert "Restored" in r.stderr and "Applied record" in r.stderr

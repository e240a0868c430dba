"""The command line end to end: exit codes, messages, files. Runs cesync as a user would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cesync.emulator.server import BackgroundServer, free_port
from tests.conftest import EXAMPLES, ROOT
from tests.helpers import cesync


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    dst = tmp_path / "support-bot"
    shutil.copytree(EXAMPLES / "support-bot", dst, ignore=shutil.ignore_patterns(".cesync"))
    return dst


def test_validate_example_and_broken_copy(repo: Path) -> None:
    ok = cesync("validate", "--dir", str(repo))
    assert ok.returncode == 0 and "14 files valid" in ok.stdout
    (repo / "tools" / "web-search.yaml").write_text("googleSearchTool:\n  nme: x\n")
    bad = cesync("validate", "--dir", str(repo))
    assert bad.returncode == 1
    assert "tools/web-search.yaml:2:3: unknown field 'nme' in GoogleSearchTool; did you mean 'name'?" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_schemas_are_current() -> None:
    result = cesync("schema", "--out", str(ROOT / "schemas"), "--check")
    assert result.returncode == 0, result.stderr


def test_init_then_validate_plan_apply(tmp_path: Path) -> None:
    assert cesync("init", "--dir", str(tmp_path)).returncode == 0
    assert cesync("init", "--dir", str(tmp_path)).returncode == 1  # never overwrites
    assert cesync("validate", "--dir", str(tmp_path)).returncode == 0
    plan = cesync("plan", "--dir", str(tmp_path), "--detailed-exitcode")
    assert plan.returncode == 2 and "+ tool greet will be created" in plan.stdout
    assert cesync("apply", "--dir", str(tmp_path), "--auto-approve").returncode == 0
    assert cesync("plan", "--dir", str(tmp_path), "--detailed-exitcode").returncode == 0


def test_saved_plan_apply_and_digest_guard(repo: Path) -> None:
    out = repo / "plan.json"
    plan = cesync("plan", "--dir", str(repo), "--env", "local", "--out", str(out), "--format", "json")
    assert plan.returncode == 0 and json.loads(plan.stdout)["environment"] == "local"
    md = cesync("show", str(out), "--format", "markdown")
    assert (
        "<!-- cesync-plan:local:projects/local/locations/us/apps/support-bot -->" in md.stdout
        and "| 14 | 0 | 0 | 0 |" in md.stdout
    )
    (repo / "tools" / "manuals.yaml").write_text((repo / "tools" / "manuals.yaml").read_text().replace("manuals.", "manuals!"))
    stale = cesync("apply", str(out), "--dir", str(repo), "--auto-approve")
    assert stale.returncode == 1 and "digest differs" in stale.stderr
    fresh = cesync("plan", "--dir", str(repo), "--env", "local", "--out", str(out), "--format", "json")
    assert fresh.returncode == 0
    applied = cesync("apply", str(out), "--dir", str(repo), "--auto-approve", "--format", "json")
    result = json.loads(applied.stdout)
    assert applied.returncode == 0 and result["counts"]["created"] == 14 and all(o["etag"] for o in result["outcomes"])


def test_apply_without_terminal_needs_auto_approve(repo: Path) -> None:
    result = cesync("apply", "--dir", str(repo), "--env", "local", stdin="")
    assert result.returncode == 1 and "--auto-approve" in result.stderr


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ({"fail_status": "UNAUTHENTICATED"}, "UNAUTHENTICATED (401)"),
        ({"fail_status": "PERMISSION_DENIED"}, "needs permission ces.tools.list"),
        ({"autoCreateApps": False}, "does the app exist?"),
    ],
    ids=["401", "403", "404-app"],
)
def test_api_errors_are_one_clear_line(repo: Path, setup: dict[str, object], expected: str) -> None:
    import httpx

    with BackgroundServer() as server:
        if "autoCreateApps" in setup:
            httpx.post(f"{server.url}/admin/config", json=setup)
        else:
            httpx.post(f"{server.url}/admin/faults", json=setup)
        result = cesync("plan", "--dir", str(repo), "--env", "prod", env={"CES_EMULATOR_HOST": server.host})
    assert result.returncode == 1 and expected in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_unreachable_endpoint(repo: Path) -> None:
    port = free_port()
    result = cesync(
        "plan", "--dir", str(repo), "--env", "prod", env={"CES_EMULATOR_HOST": f"127.0.0.1:{port}", "CESYNC_RETRY_ATTEMPTS": "2"}
    )
    assert result.returncode == 1 and "cannot reach" in result.stderr


@pytest.mark.parametrize("content", ["not json", '{"format_version": 99}', '{"format_version": 1, "changes": [{"x": 1}]}'])
def test_invalid_plan_file(tmp_path: Path, content: str) -> None:
    path = tmp_path / "plan.json"
    path.write_text(content)
    result = cesync("show", str(path))
    assert result.returncode == 1 and "error:" in result.stderr and "Traceback" not in result.stderr


def test_env_required_when_several(repo: Path) -> None:
    result = cesync("plan", "--dir", str(repo))
    assert result.returncode == 1 and "choose an environment with --env: local, dev, staging, prod" in result.stderr
    unknown = cesync("plan", "--dir", str(repo), "--env", "prd")
    assert "unknown environment 'prd'; did you mean 'prod'?" in unknown.stderr


def test_ctrl_c_stops_new_actions_and_reports(repo: Path) -> None:
    import signal
    import time

    import httpx

    with BackgroundServer() as server:
        httpx.post(f"{server.url}/admin/faults", json={"latency_ms": 300})
        env = {**os.environ, "NO_COLOR": "1", "CES_EMULATOR_HOST": server.host}
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cesync.cli",
                "apply",
                "--dir",
                str(repo),
                "--env",
                "prod",
                "--auto-approve",
                "--parallelism",
                "1",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(2.5)
        proc.send_signal(signal.SIGINT)
        out, errout = proc.communicate(timeout=60)
        assert proc.returncode == 130, errout
        assert "Interrupted:" in out and "not started" in out
        httpx.post(f"{server.url}/admin/faults", json={"latency_ms": 0})
        rest = cesync("plan", "--dir", str(repo), "--env", "prod", "--format", "json", env={"CES_EMULATOR_HOST": server.host})
        remaining = json.loads(rest.stdout)["changes"]
        created = out.count("done: create")
        assert created >= 1 and len(remaining) == 14 - created  # plan shows exactly the rest

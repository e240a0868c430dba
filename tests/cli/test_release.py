"""cesync release: the schedule (--dry-run), a whole release in JSON and Markdown, and clear errors.
The example's holds are taken out of a copy: the command waits on the real clock (the pipeline's
tests hold on one that never sleeps)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES
from tests.helpers import cesync

LOCAL = ("--env", "local", "--endpoint", "embedded")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    dst = tmp_path / "support-bot"
    shutil.copytree(EXAMPLES / "support-bot", dst, ignore=shutil.ignore_patterns(".cesync"))
    schedule = dst / "releases" / "web.yaml"
    schedule.write_text(re.sub(r", hold: \d+m", "", schedule.read_text()))
    assert cesync("apply", "--dir", str(dst), *LOCAL, "--auto-approve").returncode == 0
    return dst


def test_dry_run_json_and_markdown(repo: Path) -> None:
    dry = cesync("release", "--dir", str(repo), *LOCAL, "--deployment", "web", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "step 1/3: - 100% -> 90%, version-" in dry.stdout and "Release: dry run." in dry.stdout
    done = cesync("release", "--dir", str(repo), *LOCAL, "--deployment", "web", "--format", "json")
    data = json.loads(done.stdout)
    assert done.returncode == 0 and data["outcome"] == "released" and data["ok"]
    assert [e["event"] for e in data["events"]].count("step") == 3
    md = cesync("release", "--dir", str(repo), *LOCAL, "--deployment", "web", "--format", "markdown").stdout
    assert md.startswith("### cesync release: `web` in `local`") and "**already serving**" in md


def test_errors_are_one_clear_line(repo: Path) -> None:
    missing = cesync("release", "--dir", str(repo), *LOCAL, "--deployment", "kiosk")
    assert missing.returncode == 1 and "no release schedule for deployment 'kiosk': write releases/kiosk.yaml" in missing.stderr
    (repo / "releases" / "web.yaml").write_text("steps:\n  - {traffic: 50}\n")
    bad = cesync("release", "--dir", str(repo), *LOCAL, "--deployment", "web")
    assert bad.returncode == 1 and "releases/web.yaml:2:3: steps: the last step gives the new version all traffic" in bad.stderr
    (repo / "releases" / "web.yaml").write_text("steps:\n  - {traffic: 100}\n")
    unknown = cesync("release", "--dir", str(repo), *LOCAL, "--deployment", "web", "--version", "nope")
    assert unknown.returncode == 1 and "versions/nope does not exist" in unknown.stderr
    odd = cesync("release", "--dir", str(repo), *LOCAL, "--deployment", "../web")
    assert odd.returncode == 1 and "--deployment: invalid deployment id" in odd.stderr
    assert "Traceback" not in missing.stderr + bad.stderr + unknown.stderr + odd.stderr


def test_validate_checks_the_schedules(repo: Path) -> None:
    shutil.copy(repo / "releases" / "web.yaml", repo / "releases" / "kiosk.yaml")
    (repo / "releases" / "web.yaml").write_text("steps:\n  - {traffic: 100, hold: soon}\n")
    bad = cesync("validate", "--dir", str(repo))
    assert bad.returncode == 1
    assert "releases/kiosk.yaml:1:1: no deployments/kiosk.yaml" in bad.stderr
    assert "releases/web.yaml:2:26: steps.0.hold: hold 'soon': write a duration" in bad.stderr


def test_the_tag_workflow_releases_prod(tmp_path: Path, repo: Path) -> None:
    """examples/ci/github/cesync-release.yml as a tag push runs it: its cesync steps, in order, in the
    example repo's prod environment (served by the embedded emulator, holds taken out)."""
    import os
    import subprocess
    import sys

    from ruamel.yaml import YAML

    workflow = YAML(typ="safe", pure=True).load((EXAMPLES / "ci" / "github" / "cesync-release.yml").read_text())
    assert workflow["on"]["push"]["tags"] == ["v*"]
    job = workflow["jobs"]["release"]
    assert job["environment"] == "prod" and "GCP_DEPLOY_SERVICE_ACCOUNT" in str(job["steps"])
    scripts = [s["run"] for s in job["steps"] if "cesync release" in str(s.get("run", ""))]
    assert len(scripts) == 3
    assert cesync("apply", "--dir", str(repo), "--env", "prod", "--endpoint", "embedded", "--auto-approve").returncode == 0
    summary = tmp_path / "summary.md"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CESYNC_", "CES_", "GOOGLE_"))},
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "CESYNC_ENDPOINT": "embedded",
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_STEP_SUMMARY": str(summary),
        "NO_COLOR": "1",
    }
    for script in scripts:
        done = subprocess.run(["bash", "-e", "-c", script], cwd=repo, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "release.json").read_text())
    assert report["outcome"] == "released" and report["environment"] == "prod"
    assert [e["event"] for e in report["events"]].count("step") == 3
    assert "**already serving**" in summary.read_text()

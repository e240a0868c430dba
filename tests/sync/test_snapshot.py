"""apply --snapshot names the app version after the git commit (pure body; git read from a real checkout)."""

from __future__ import annotations

import datetime
import subprocess
from pathlib import Path

import pytest

from cesync.repo.environments import EnvTarget
from cesync.sync.snapshot import MAX_DISPLAY, commit_of, version_body

ENV = EnvTarget("prod", "p", "us", "a", None, {}, {}, False)
NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
SHA = "0123456789abcdef0123456789abcdef01234567"

CASES = {
    "a commit": ((SHA, "Fix the refund text", False), "0123456 Fix the refund text", f"commit {SHA}"),
    "uncommitted changes": ((SHA, "Fix", True), "0123456 Fix (+ uncommitted changes)", "with uncommitted changes"),
    "not a checkout": (("", "", False), "cesync apply 2026-01-02 03:04:05 UTC", "(not a git checkout)"),
    "a long subject": ((SHA, "x" * 300, False), "0123456 " + "x" * (MAX_DISPLAY - 11) + "...", "prod"),
}


@pytest.mark.parametrize("commit,display,in_description", CASES.values(), ids=list(CASES))
def test_version_body(commit: tuple[str, str, bool], display: str, in_description: str) -> None:
    body = version_body(ENV, *commit, NOW)
    assert body["displayName"] == display and len(body["displayName"]) <= MAX_DISPLAY
    assert in_description in body["description"]


def test_commit_of_a_checkout(tmp_path: Path) -> None:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout

    assert commit_of(tmp_path) == ("", "", False)
    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "First version")
    sha, subject, dirty = commit_of(tmp_path)
    assert sha == git("rev-parse", "HEAD").strip() and subject == "First version" and not dirty
    (tmp_path / "app.yaml").write_text("displayName: A\n")
    assert commit_of(tmp_path)[2]  # an untracked file counts as uncommitted

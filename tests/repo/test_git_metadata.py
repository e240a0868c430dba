"""Git's own files are never repo content: an include cannot read them and pull cannot write them.

actions/checkout keeps the job's GITHUB_TOKEN in .git/config (an http extraheader) unless told
not to, and the PR plan job checks out the PR's files at the repo root: before, a pull request
adding ``pythonScript: {file: .git/config}`` (a field nothing parses) had the token printed in
its own plan, the comment and the artifact. And pull writes the app's value back into an
included file: into .git/config or .git/hooks, a console edit became code git runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cesync.errors import CesyncError
from cesync.repo.files import write_files
from tests.helpers import cesync_in_process, make_repo

TOKEN = "eC1hY2Nlc3MtdG9rZW46Z2hzX1NFQ1JFVFRPS0VO"  # base64 of x-access-token:ghs_..., as actions/checkout writes it
WIDGET = "widgetTool:\n  name: w\n  dataMapping:\n    pythonScript: {{file: {path}}}\n"
TOOL = "pythonFunction:\n  name: f\n  pythonCode: {{file: {path}}}\n"


def _checkout(tmp_path: Path) -> Path:
    root = make_repo(tmp_path, {})
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(
        ["git", "-C", str(root), "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {TOKEN}"], check=True
    )
    (root / ".git" / "hooks" / "ok.py").write_text("def f() -> dict:\n    return {}\n")  # valid Python under .git
    return root


SPELLINGS = ["../.git/config", "./../.git/config", "../tools/../.git/config", "../.git/../.git/config", "../.git/hooks/ok.py"]


@pytest.mark.parametrize("path", SPELLINGS)
@pytest.mark.parametrize("shape", [WIDGET, TOOL], ids=["pythonScript", "pythonCode"])
def test_an_include_inside_git_is_refused(tmp_path: Path, path: str, shape: str) -> None:
    root = _checkout(tmp_path)
    (root / "tools" / "leak.yaml").write_text(shape.format(path=path))
    r = cesync_in_process("plan", "--dir", str(root), "--env", "local")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "inside .git" in r.stderr, r.stderr
    assert TOKEN not in r.stdout + r.stderr


def test_a_symlink_into_git_is_refused(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    (root / "tools" / "code.py").symlink_to(root / ".git" / "config")
    (root / "tools" / "leak.yaml").write_text(WIDGET.format(path="code.py"))
    r = cesync_in_process("plan", "--dir", str(root), "--env", "local")
    assert r.returncode == 1 and "inside .git" in r.stderr, r.stdout + r.stderr
    assert TOKEN not in r.stdout + r.stderr


@pytest.mark.parametrize("rel", [".git/config", ".git/hooks/pre-commit", "sub/.git/config", "tools/../.git/config"])
def test_pull_never_writes_into_git(tmp_path: Path, rel: str) -> None:
    root = _checkout(tmp_path)
    before = (root / ".git" / "config").read_text()
    with pytest.raises(CesyncError, match=r"inside \.git"):
        write_files(root, {"tools/greet.yaml": "x: 1\n", rel: "[core]\n\tfsmonitor = touch /tmp/owned\n"})
    assert (root / ".git" / "config").read_text() == before
    assert (root / "tools" / "greet.yaml").read_text() != "x: 1\n"  # nothing at all was written

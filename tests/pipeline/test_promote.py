"""cesync promote: prod planned from exactly the commit dev last applied, and that plan applied;
checked on the emulator with Google's official client."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.api_core import exceptions
from google.cloud import ces_v1

from cesync.emulator.server import BackgroundServer
from tests.helpers import cesync_in_process, make_repo, official_client

CONFIG = """version: 1
defaults: {project: p, location: us}
environments:
  dev: {app: a-dev}
  prod: {app: a-prod}
"""
PROD = "projects/p/locations/us/apps/a-prod"


def _tool(word: str) -> str:
    return f"""pythonFunction:
  name: greet
  pythonCode: |
    def greet(name: str) -> dict:
        \"\"\"Greet someone.\"\"\"
        return {{"greeting": "{word} " + name}}
"""


def _git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _commit(root: Path, word: str) -> str:
    (root / "tools" / "greet.yaml").write_text(_tool(word), encoding="utf-8")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", word)
    return _git(root, "rev-parse", "HEAD")


@pytest.fixture
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer() as s:
        yield s


@pytest.fixture
def google(server: BackgroundServer) -> ces_v1.AgentServiceClient:
    client: ces_v1.AgentServiceClient = official_client(server.url)
    return client


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path, {"cesync.yaml": CONFIG})
    _git(root, "init", "-q", "-b", "main")
    return root


def _cli(root: Path, server: BackgroundServer, *args: str) -> tuple[int, str, str]:
    r = cesync_in_process(*args, "--dir", str(root), "--endpoint", server.url)
    return r.returncode, r.stdout, r.stderr


def _greeting(google: ces_v1.AgentServiceClient) -> str:
    return google.get_tool(name=f"{PROD}/tools/greet").python_function.python_code.split('"greeting": "')[1].split(" ")[0]


def test_prod_gets_what_dev_runs_not_the_working_tree(
    repo: Path, server: BackgroundServer, google: ces_v1.AgentServiceClient
) -> None:
    _commit(repo, "Hello")
    assert _cli(repo, server, "apply", "--env", "dev", "--auto-approve")[0] == 0
    applied = _commit(repo, "Hi")
    code, _, err = _cli(repo, server, "apply", "--env", "dev", "--auto-approve", "--snapshot")
    assert code == 0, err
    _commit(repo, "Yo")  # committed, not applied to dev
    (repo / "tools" / "greet.yaml").write_text(_tool("Hey"), encoding="utf-8")  # and a working-tree edit

    plan_file = repo.parent / "promote.json"
    code, out, err = _cli(repo, server, "promote", "--from", "dev", "--to", "prod", "--out", str(plan_file))
    assert code == 0, err
    assert f"Promotion: the repo as at commit {applied[:12]}, which 'dev' last applied" in out
    assert '"greeting": "Hi "' in out and "Yo" not in out and "Hey" not in out
    saved = json.loads(plan_file.read_text())
    assert (saved["commit"], saved["promoted_from"], saved["environment"]) == (applied, "dev", "prod")

    code, out, err = _cli(repo, server, "apply", str(plan_file), "--auto-approve")
    assert code == 0, out + err
    assert _greeting(google) == "Hi"
    assert _git(repo, "status", "--porcelain") == "M tools/greet.yaml"  # the checkout is as it was
    assert _git(repo, "worktree", "list").count("\n") == 0  # no worktree left behind

    code, out, _ = _cli(repo, server, "promote", "--from", "dev", "--to", "prod", "--detailed-exitcode")
    assert code == 0 and "No changes" in out  # prod now runs what dev runs
    records = [v.display_name for v in google.list_app_versions(parent=PROD)]
    assert any(applied[:7] in name and "prod" in name for name in records), records  # prod's record names the same commit


def test_an_edited_commit_in_the_plan_is_refused(repo: Path, server: BackgroundServer, google: ces_v1.AgentServiceClient) -> None:
    _commit(repo, "Hello")
    assert _cli(repo, server, "apply", "--env", "dev", "--auto-approve")[0] == 0
    _commit(repo, "Hi")
    assert _cli(repo, server, "apply", "--env", "dev", "--auto-approve", "--snapshot")[0] == 0
    other = _commit(repo, "Evil")
    plan_file = repo.parent / "promote.json"
    assert _cli(repo, server, "promote", "--from", "dev", "--to", "prod", "--out", str(plan_file))[0] == 0
    data = json.loads(plan_file.read_text())
    data["commit"] = other  # a plan that says it is another commit
    plan_file.write_text(json.dumps(data))
    code, _, err = _cli(repo, server, "apply", str(plan_file), "--auto-approve")
    assert (code == 1 and "digest" in err) or "changed" in err
    with pytest.raises(exceptions.NotFound):
        google.get_app(name=PROD)  # nothing was written, not even the app


@pytest.mark.parametrize("bad", ["HEAD", "--output=/tmp/x", "0" * 39, "g" * 40])
def test_a_commit_that_is_not_a_full_id_is_refused(repo: Path, server: BackgroundServer, bad: str) -> None:
    from cesync.errors import CesyncError
    from cesync.pipeline.promote import commit_tree

    with pytest.raises(CesyncError, match="not a full commit id"), commit_tree(repo, bad):
        pass


def test_no_record_and_a_missing_commit_are_clear_errors(repo: Path, server: BackgroundServer) -> None:
    _commit(repo, "Hello")
    code, _, err = _cli(repo, server, "promote", "--from", "dev", "--to", "prod")
    assert code == 1 and "'dev' has no app (projects/p/locations/us/apps/a-dev): nothing was applied" in err
    (repo / "tools" / "greet.yaml").write_text(_tool("Dirty"), encoding="utf-8")
    code, out, _ = _cli(repo, server, "apply", "--env", "dev", "--auto-approve")  # from a dirty tree: no commit to record
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True).stdout
    assert code == 0 and f"({sha[:7]} + uncommitted changes)." in out, out  # the apply says what promote will say
    code, _, err = _cli(repo, server, "promote", "--from", "dev", "--to", "prod")
    assert code == 1 and "'dev' has no record of an applied commit" in err
    from cesync.errors import CesyncError
    from cesync.pipeline.promote import commit_tree

    with pytest.raises(CesyncError, match="is not in this checkout: fetch it"), commit_tree(repo, "ab" * 20):
        pass
    code, _, err = _cli(repo, server, "promote", "--from", "dev", "--to", "dev")
    assert code == 1 and "same environment" in err


def test_links_in_the_commit_are_not_laid_out(repo: Path) -> None:
    from cesync.pipeline.promote import commit_tree

    (repo / "tools").mkdir(exist_ok=True)
    (repo / "tools" / "leak.yaml").symlink_to("/etc/passwd")
    sha = _commit(repo, "Hello")
    with commit_tree(repo, sha) as folder:
        assert (folder / "tools" / "greet.yaml").is_file()
        assert not (folder / "tools" / "leak.yaml").exists() and not (folder / "tools" / "leak.yaml").is_symlink()


def _versions(google: ces_v1.AgentServiceClient, app: str) -> list[str]:
    return [v.name for v in google.list_app_versions(parent=app)]


def test_an_apply_that_changes_nothing_records_the_commit_the_app_now_matches(
    repo: Path, server: BackgroundServer, google: ces_v1.AgentServiceClient
) -> None:
    """A console edit pulled and committed: dev already runs it, so apply changes nothing, yet
    promote must take that commit, not the one before the pull."""
    dev = "projects/p/locations/us/apps/a-dev"
    _commit(repo, "Hello")
    assert _cli(repo, server, "apply", "--env", "dev", "--auto-approve")[0] == 0
    tool = google.get_tool(name=f"{dev}/tools/greet")
    tool.python_function.python_code = tool.python_function.python_code.replace("Hello", "Hi")
    google.update_tool(tool=tool)  # the console edit
    code, _, err = _cli(repo, server, "pull", "--env", "dev")
    assert code == 0, err
    assert "Hi " in (repo / "tools" / "greet.yaml").read_text()
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qam", "pulled")
    pulled = _git(repo, "rev-parse", "HEAD")

    before = _versions(google, dev)
    code, out, err = _cli(repo, server, "apply", "--env", "dev", "--auto-approve")
    assert code == 0, err
    assert f"({pulled[:7]}: the app already matched it)" in out, out
    assert len(_versions(google, dev)) == len(before) + 1
    # again, with nothing moved: no new record (a GitOps loop does not pile up versions)
    code, out, err = _cli(repo, server, "apply", "--env", "dev", "--auto-approve")
    assert code == 0 and "Applied record" not in out, out
    assert len(_versions(google, dev)) == len(before) + 1

    plan_file = repo.parent / "promote.json"
    code, out, err = _cli(repo, server, "promote", "--from", "dev", "--to", "prod", "--out", str(plan_file))
    assert code == 0, err
    assert f"Promotion: the repo as at commit {pulled[:12]}, which 'dev' last applied" in out, out
    assert _cli(repo, server, "apply", str(plan_file), "--auto-approve")[0] == 0
    assert _greeting(google) == "Hi"


def test_a_clean_apply_replaces_a_record_of_uncommitted_changes(
    repo: Path, server: BackgroundServer, google: ces_v1.AgentServiceClient
) -> None:
    _commit(repo, "Hello")
    assert _cli(repo, server, "apply", "--env", "dev", "--auto-approve")[0] == 0
    (repo / "NOTES.md").write_text("a commit that changes no environment\n", encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "notes")
    head = _git(repo, "rev-parse", "HEAD")
    stray = repo / "scratch.txt"
    stray.write_text("uncommitted\n", encoding="utf-8")
    code, out, err = _cli(repo, server, "apply", "--env", "dev", "--auto-approve")
    assert code == 0 and f"({head[:7]} + uncommitted changes: the app already matched it)" in out, out + err
    stray.unlink()
    code, out, err = _cli(repo, server, "apply", "--env", "dev", "--auto-approve")
    assert code == 0 and f"({head[:7]}: the app already matched it)" in out, out + err  # clean now: recorded again
    code, out, err = _cli(repo, server, "promote", "--from", "dev", "--to", "prod")
    assert code == 0 and f"commit {head[:12]}, which 'dev' last applied" in out, out + err

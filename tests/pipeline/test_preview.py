"""cesync preview: the repo applied to APP-NAME beside the environment's app, tested there,
and deleted; checked on the emulator with Google's official client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.api_core import exceptions
from google.cloud import ces_v1

from cesync.api.kinds import KINDS
from cesync.emulator.server import BackgroundServer
from cesync.pipeline.preview import NAME_RE, mark_desired
from cesync.repo.environments import EnvTarget
from tests.helpers import cesync_in_process, make_repo, official_client

GREET_TEST = """tests:
  - name: greets by name
    toolCall: {tool: greet, args: {name: Ada}}
    toolResponse:
      response: {result: {greeting: Hello Ada}}
"""
ENV_APP = "projects/p/locations/us/apps/a"
PREVIEW_APP = "projects/p/locations/us/apps/a-pr-7"


@pytest.fixture
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer() as s:  # apps exist once created, as in CES
        yield s


@pytest.fixture
def google(server: BackgroundServer) -> ces_v1.AgentServiceClient:
    client: ces_v1.AgentServiceClient = official_client(server.url)
    return client


def _run(root: Path, server: BackgroundServer, *args: str) -> tuple[int, str, str]:
    r = cesync_in_process(*args, "--dir", str(root), "--env", "local", "--endpoint", server.url)
    return r.returncode, r.stdout, r.stderr


def test_preview_lifecycle(tmp_path: Path, server: BackgroundServer, google: ces_v1.AgentServiceClient) -> None:
    root = make_repo(tmp_path, {"tests/greet.yaml": GREET_TEST})
    code, out, err = _run(root, server, "preview", "--name", "pr-7", "--auto-approve")
    assert code == 0, out + err
    assert "2 created" in out and PREVIEW_APP in out

    app = google.get_app(name=PREVIEW_APP)
    assert dict(app.metadata) == {"cesync-preview": "local/pr-7"}
    assert [t.name for t in google.list_tools(parent=PREVIEW_APP)] == [f"{PREVIEW_APP}/tools/greet"]
    with pytest.raises(exceptions.NotFound):
        google.get_app(name=ENV_APP)  # the environment's own app is not touched

    code, out, _ = _run(root, server, "preview", "--name", "pr-7", "--auto-approve")
    assert code == 0 and "matches the repo" in out  # a second run changes nothing

    code, out, err = _run(root, server, "test", "--preview", "pr-7")
    assert code == 0 and "1 passed" in out, out + err

    (root / "tools" / "other.yaml").write_text((root / "tools" / "greet.yaml").read_text(), encoding="utf-8")
    (root / "tools" / "greet.yaml").unlink()
    (root / "tests" / "greet.yaml").unlink()
    code, out, err = _run(root, server, "preview", "--name", "pr-7", "--auto-approve")
    assert code == 0, out + err
    assert {t.name for t in google.list_tools(parent=PREVIEW_APP)} == {f"{PREVIEW_APP}/tools/other"}  # mirrors the repo

    code, out, _ = _run(root, server, "preview", "--name", "pr-7", "--delete")
    assert code == 0 and "Deleted the preview app" in out
    with pytest.raises(exceptions.NotFound):
        google.get_app(name=PREVIEW_APP)
    code, out, _ = _run(root, server, "preview", "--name", "pr-7", "--delete", "--format", "json")
    assert code == 0 and json.loads(out)["deleted"] is False


@pytest.mark.parametrize("mark", [None, "local/pr-8", "staging/pr-7"], ids=["by-hand", "other-preview", "other-env"])
def test_an_app_the_preview_did_not_make_is_never_written_or_deleted(
    tmp_path: Path, server: BackgroundServer, google: ces_v1.AgentServiceClient, mark: str | None
) -> None:
    app = ces_v1.App(display_name="someone's", metadata={"cesync-preview": mark} if mark else {})
    google.create_app(parent="projects/p/locations/us", app=app, app_id="a-pr-7").result()
    root = make_repo(tmp_path, {})
    for args in (("preview", "--name", "pr-7", "--auto-approve"), ("preview", "--name", "pr-7", "--delete")):
        code, _, err = _run(root, server, *args)
        assert code == 1 and "choose another --name" in err
    assert google.get_app(name=PREVIEW_APP).display_name == "someone's"
    assert list(google.list_tools(parent=PREVIEW_APP)) == []


@pytest.mark.parametrize("name", ["PR-7", "pr_7", "-x", "x-", "a" * 41, "a/b", "", "pr 7", "pr-7\n"])
def test_bad_names_are_refused(tmp_path: Path, name: str) -> None:
    root = make_repo(tmp_path, {})
    r = cesync_in_process("preview", "--dir", str(root), "--env", "local", "--name", name, "--auto-approve")
    assert r.returncode in (1, 2) and "--name" in r.stderr
    assert not (root / ".cesync").exists()  # refused before anything was opened


def test_a_repo_app_keeps_its_metadata_and_gains_the_mark() -> None:
    from cesync.api.resource import Resource

    env = EnvTarget("local", "p", "us", "a-pr-1", None, {}, {}, False)
    desired = [Resource(KINDS["app"], "app", {"displayName": "A", "metadata": {"team": "x"}}), Resource(KINDS["tool"], "t", {})]
    marked = mark_desired(desired, env, "pr-1")
    app = next(r for r in marked if r.kind.name == "app")
    assert app.body["metadata"] == {"team": "x", "cesync-preview": "local/pr-1"} and app.body["displayName"] == "A"
    assert desired[0].body["metadata"] == {"team": "x"}  # the input is not changed
    assert NAME_RE.fullmatch("pr-123") and not NAME_RE.fullmatch("pr--")

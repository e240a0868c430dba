"""Renders and comparisons taken from the cache can never change a result: an app applied, then
edited in the console and in the repo, plans the same with the cache warm and with it off; an
include that changed, left the repo or went away since the render is never taken from it."""

from __future__ import annotations

import marshal
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from cesync.repo import cache
from cesync.repo.cache import CACHE_FILE, COMPARED_FILE
from tests.helpers import cesync, make_repo
from tests.repo.test_cache import KEY, OFF, apply_edit, edit, generate, runs, same, uncached
from tests.repo.test_wholerender import validate

APP = "projects/bench/locations/us/apps/bench-dev"
NO_SHRINK = [Phase.explicit, Phase.reuse, Phase.generate]  # a whole plan per example: shrinking would take minutes


@pytest.fixture(autouse=True)
def small_repos_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "MIN_ENTRIES", 0)


@pytest.fixture(scope="module")
def server() -> Iterator[object]:
    from cesync.emulator.server import BackgroundServer

    with BackgroundServer(auto_create_apps=True) as s:
        yield s


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory, server: object) -> Path:
    root = generate(tmp_path_factory.mktemp("render") / "repo", 30, agents=True)
    url = server.url  # type: ignore[attr-defined]
    done = cesync("apply", "--dir", str(root), "--env", "dev", "--endpoint", url, "--auto-approve", env=OFF)
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def console_edit(url: str, which: int, text: str) -> None:
    """A console user's change to one agent of the app (its description)."""
    agents = httpx.get(f"{url}/v1/{APP}/agents", params={"pageSize": 1000}).json().get("agents", [])
    agent = agents[which % len(agents)]
    answer = httpx.patch(f"{url}/v1/{agent['name']}", params={"updateMask": "description"}, json={"description": text})
    assert answer.status_code == 200, answer.text


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], phases=NO_SHRINK)
@given(
    edits=st.lists(edit, max_size=3),
    console=st.lists(st.tuples(st.integers(0, 10_000), st.text(max_size=12)), max_size=3),
)
def test_plans_of_an_applied_app_are_the_same_cached_and_not(
    applied: Path, server: object, edits: list[tuple[str, int, int, str]], console: list[tuple[int, str]]
) -> None:
    url = server.url  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        shutil.copytree(applied, root, ignore=shutil.ignore_patterns(".cesync"))
        first = runs(root, url)  # fills both caches
        assert (root / CACHE_FILE).is_file() and (root / COMPARED_FILE).is_file()
        same(runs(root, url), first)
        for which, text in console:
            console_edit(url, which, text)
        for op, which, at, text in edits:
            apply_edit(root, op, which, at, text)
        warm = runs(root, url)
        same(uncached(root, url), warm)
        same(runs(root, url), warm)


def includes_of(root: Path) -> list[Path]:
    return sorted((root / "code").glob("*.py"))


def test_an_include_changed_since_the_render_is_read_again(tmp_path: Path) -> None:
    root = generate(tmp_path / "repo", 20, agents=True)
    assert cesync("validate", "--dir", str(root), env=KEY).returncode == 0
    target = includes_of(root)[0]
    target.write_text("def broken(:\n")
    cached, fresh = (cesync("validate", "--dir", str(root), "--env", "dev", env=e) for e in (KEY, OFF))
    assert cached.returncode == fresh.returncode == 1
    assert (cached.stdout, cached.stderr) == (fresh.stdout, fresh.stderr)


@pytest.mark.parametrize("how", ["outside", "removed", "inside .git"])
def test_an_include_that_left_the_repo_is_refused_as_without_a_cache(tmp_path: Path, how: str) -> None:
    root = generate(tmp_path / "repo", 20, agents=True)
    assert cesync("validate", "--dir", str(root), env=KEY).returncode == 0
    target = includes_of(root)[0]
    text = target.read_text()
    target.unlink()
    if how == "outside":
        outside = tmp_path / "elsewhere.py"
        outside.write_text(text)  # what it held: only where it lies has changed
        target.symlink_to(outside)
    elif how == "inside .git":
        (root / ".git").mkdir()
        (root / ".git" / "hooks.py").write_text(text)
        target.symlink_to(root / ".git" / "hooks.py")
    cached, fresh = (cesync("validate", "--dir", str(root), "--env", "dev", env=e) for e in (KEY, OFF))
    assert cached.returncode == fresh.returncode == 1, cached.stdout + cached.stderr
    assert (cached.stdout, cached.stderr) == (fresh.stdout, fresh.stderr)


def test_a_sensitive_value_never_reaches_the_cache_files(tmp_path: Path, server: object) -> None:
    """The render of a file that takes a sensitive variable, and a pair of bodies that hold its
    value, are not kept (neither whole nor as a digest one could try guesses against); the
    plan is the same as without the cache."""
    root = generate(tmp_path / "repo", 20, agents=True)
    config = root / "cesync.yaml"
    config.write_text(config.read_text().replace("defaults:\n", "defaults:\n  sensitive: [GREETING_TOKEN]\n", 1))
    agent = next((root / "agents").glob("*.yaml"))
    agent.write_text(agent.read_text().replace("description: ", "description: ${GREETING_TOKEN} ", 1))
    secret = "Sx7Qm2Lp9Vw4Zk8R"
    url = server.url  # type: ignore[attr-defined]
    common = ("--dir", str(root), "--env", "dev", "--var", f"GREETING_TOKEN={secret}")
    applied = cesync("apply", *common, "--endpoint", url, "--auto-approve", env=OFF)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    said = [cesync(*args, *common, env=e) for e in (KEY, KEY, OFF) for args in (("validate",), ("plan", "--endpoint", url))]
    assert {(r.returncode, r.stdout, r.stderr) for r in said[0::2]} == {(said[0].returncode, said[0].stdout, said[0].stderr)}
    assert all(r.returncode == 0 for r in said), [r.stdout + r.stderr for r in said]
    assert (root / CACHE_FILE).is_file() and (root / COMPARED_FILE).is_file()
    for kept in (root / ".cesync").rglob("*"):
        if kept.is_file():
            assert secret.encode() not in kept.read_bytes(), kept


SECRET = "S3cr3t-cache-0123456789"
SCHEMA = """\
openapi: 3.0.0
info: {title: shop, version: "1"}
servers:
  - url: https://shop.example.com/${SHOP_TOKEN}
paths: {}
"""


def test_a_sensitive_value_in_a_document_or_code_is_never_written_to_the_cache(tmp_path: Path) -> None:
    """A ${NAME} substituted into an OpenAPI document or Python code: their parses hold the value
    (or are known by a digest of a text that holds it), so none is kept; nor is a value only
    another environment marks sensitive (the scrubber masks those too)."""
    files = {
        "tools/secret.yaml": "googleSearchTool:\n  name: search\n  description: key ${SHOP_TOKEN}\n",
        "toolsets/shop.yaml": "openApiToolset:\n  openApiSchema: |\n" + "".join(f"    {line}\n" for line in SCHEMA.splitlines()),
        "tools/code.yaml": 'pythonFunction:\n  name: code\n  pythonCode: |\n    def code() -> dict:\n        return {"k": "${SHOP_TOKEN}"}\n',
    }
    root = make_repo(tmp_path, files)
    config = root / "cesync.yaml"
    config.write_text(
        config.read_text()
        + "  prod:\n    endpoint: embedded\n    project: p\n    location: us\n    app: b\n    sensitive: [SHOP_TOKEN]\n"
    )
    env = {**KEY, "CESYNC_VAR_SHOP_TOKEN": SECRET}
    for command in ("validate", "plan"):
        done = cesync(command, "--dir", str(root), "--env", "local", env=env)
        assert done.returncode in (0, 2), done.stdout + done.stderr
        written = b"".join(p.read_bytes() for p in (root / ".cesync" / "cache").glob("*.bin"))
        assert written and SECRET.encode() not in written, command


ODD = "id: odd\npythonFunction:\n  name: odd\n  pythonCode: {file: ../code/odd.py}\n"
INLINE = "id: inline\npythonFunction:\n  name: inline\n  pythonCode: |\n    def other() -> dict:\n        return {}\n"


@pytest.mark.parametrize("how", ["file renamed", "include re-pointed"])
def test_a_render_names_the_files_it_comes_from_now(tmp_path: Path, how: str) -> None:
    """What a render reports is positioned in its file and the files it includes: the same text
    under another name (a file renamed, its id given by 'id:'; an include whose symlink now
    points at a copy) reports the names they have now, as without the cache."""
    code = "def other() -> dict:\n    return {}\n"
    root = make_repo(tmp_path, {"tools/b.yaml": ODD, "tools/d.yaml": INLINE, "code/first.py": code, "code/second.py": code})
    (root / "code" / "odd.py").symlink_to("first.py")
    assert cesync("validate", "--dir", str(root), env=KEY).returncode == 1
    if how == "file renamed":
        (root / "tools" / "d.yaml").rename(root / "tools" / "e.yaml")
    else:
        (root / "code" / "odd.py").unlink()
        (root / "code" / "odd.py").symlink_to("second.py")
    cached, fresh = (cesync("validate", "--dir", str(root), env=e) for e in (KEY, OFF))
    assert cached.returncode == fresh.returncode == 1, cached.stdout + cached.stderr
    assert (cached.stdout, cached.stderr) == (fresh.stdout, fresh.stderr)


def test_a_sensitive_value_typed_as_a_number_reaches_no_cache(tmp_path: Path) -> None:
    """${PIN} in a number field is the number, which the cache writes as binary, not as the text;
    marked sensitive in another environment, its value here is withheld all the same."""
    root = generate(tmp_path / "repo", 12, agents=True)
    config = root / "cesync.yaml"
    config.write_text(config.read_text().replace("    app: bench-prod\n", "    app: bench-prod\n    sensitive: [PIN]\n", 1))
    agent = sorted((root / "agents").glob("*.yaml"))[0]
    agent.write_text(agent.read_text().replace("llmAgent: {}", "llmAgent: {}\nmodelSettings:\n  temperature: ${PIN}", 1))
    for _ in range(2):
        assert validate(root, {**KEY, "CESYNC_VAR_PIN": "0.7351"})[0] == 0
    number = marshal.dumps(0.7351, 4)[1:]  # the float's 8 bytes
    assert (root / CACHE_FILE).is_file()
    for kept in (root / ".cesync").rglob("*"):
        if kept.is_file():
            assert number not in kept.read_bytes(), kept

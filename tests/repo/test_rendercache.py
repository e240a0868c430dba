"""Renders and comparisons taken from the cache can never change a result: an app applied, then
edited in the console and in the repo, plans the same with the cache warm and with it off; an
include that changed, left the repo or went away since the render is never taken from it."""

from __future__ import annotations

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
from tests.helpers import cesync
from tests.repo.test_cache import KEY, OFF, apply_edit, edit, generate, runs, same, uncached

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

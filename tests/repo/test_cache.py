"""The parse cache can never change a result: generated repos and edits to them give the same
validate and plan output, and exit code, with the cache warm, cold and off; a cache this machine
did not sign is never read."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.emulator.server import BackgroundServer
from cesync.repo import cache
from cesync.repo.cache import CACHE_FILE
from tests.helpers import cesync

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from generate import generate

KEY = {"CESYNC_CACHE_KEY": "test-key-of-this-machine"}
OFF = {"CESYNC_CACHE": "off"}


@pytest.fixture(autouse=True)
def small_repos_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "MIN_ENTRIES", 0)  # the repos here are small, to keep the test short


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(tmp_path_factory.mktemp("cache") / "repo", 30, agents=True)


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=True) as s:
        yield s


# Edits as people (and mistakes) make them: text put in or taken out anywhere in a file,
# including what YAML treats specially; a file copied under another id; a file removed.
SPECIAL = st.sampled_from(
    [
        "\n",
        ": ",
        "\t",
        "{",
        "}",
        "[",
        "#",
        "- ",
        "${API_BASE}",
        "${NOPE}",
        "%YAML 1.1\n",
        "&a ",
        "*a",
        "'",
        "x",
        "\napi_token: Zx8Kq2Lm9Pw4Rt6Yv1Nb3Hj5Gf7\n",
    ]
)
edit = st.tuples(
    st.sampled_from(["insert", "delete", "copy", "remove"]),
    st.integers(min_value=0, max_value=10_000),
    st.integers(min_value=0, max_value=10_000),
    st.lists(SPECIAL, min_size=1, max_size=3).map("".join),
)


def apply_edit(root: Path, op: str, which: int, at: int, text: str) -> None:
    files = sorted(p for p in root.rglob("*") if p.is_file() and ".cesync" not in p.parts and p.name != "cesync.yaml")
    path = files[which % len(files)]
    content = path.read_text()
    at %= len(content) + 1
    if op == "insert":
        path.write_text(content[:at] + text + content[at:])
    elif op == "delete":
        path.write_text(content[:at] + content[at + len(text) * 7 :])
    elif op == "copy":
        (path.parent / f"copy-{at}{path.suffix}").write_text(content)
    else:
        path.unlink()


def runs(root: Path, url: str, env: dict[str, str | None] | None = None) -> list[tuple[int, Any, str]]:
    """validate of every environment, and plan of one against an app, as a person sees them
    (the plan's time, salt and seal are new in every run, cached or not)."""
    out: list[tuple[int, Any, str]] = []
    for args in (
        ("validate", "--dir", str(root)),
        ("plan", "--dir", str(root), "--env", "dev", "--endpoint", url, "--format", "json", "--detailed-exitcode"),
    ):
        r = cesync(*args, env=env or {**KEY, "CESYNC_CACHE": None})
        shown: Any = r.stdout
        if args[0] == "plan" and r.stdout.startswith("{"):
            shown = json.loads(r.stdout)
            shown.pop("seal")
            shown.pop("created_at")
            shown["sensitive"].pop("salt")
        out.append((r.returncode, shown, r.stderr))
    return out


def uncached(root: Path, url: str) -> list[tuple[int, Any, str]]:
    return runs(root, url, OFF)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(edit, min_size=1, max_size=4))
def test_cached_and_uncached_runs_are_the_same(
    base: Path, server: BackgroundServer, edits: list[tuple[str, int, int, str]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        shutil.copytree(base, root, ignore=shutil.ignore_patterns(".cesync"))
        cold = runs(root, server.url)  # fills the cache
        assert (root / CACHE_FILE).is_file()
        same(runs(root, server.url), cold)
        same(uncached(root, server.url), cold)
        for op, which, at, text in edits:
            apply_edit(root, op, which, at, text)
            warm = runs(root, server.url)  # the cache knows every file but the edited ones
            same(uncached(root, server.url), warm)
            same(runs(root, server.url), warm)


def same(got: list[tuple[int, Any, str]], expected: list[tuple[int, Any, str]]) -> None:
    """got == expected, or the lines that differ."""
    if got != expected:
        a, b = (json.dumps(x, indent=1, sort_keys=True).splitlines() for x in (got, expected))
        raise AssertionError("\n".join(list(difflib.unified_diff(b, a, "expected", "got", lineterm=""))[:60]))


def test_a_cache_signed_with_another_key_or_altered_is_not_read(tmp_path: Path) -> None:
    root = generate(tmp_path / "repo", 10, agents=True)
    tool = next((root / "tools").glob("*.yaml"))
    first = cesync("validate", "--dir", str(root), env=KEY)
    assert first.returncode == 0, first.stderr
    # Another parse of the tool's text under the same digest, as a hostile branch could commit it:
    # the file's signature no longer matches, so the cache is not read and the tool is checked as written.
    cache = root / CACHE_FILE
    raw = cache.read_bytes()
    tool.write_text("clientFunction: {name: 1, bogus: field}\n")
    broken = cesync("validate", "--dir", str(root), env=OFF)
    assert broken.returncode == 1 and "bogus" in broken.stdout + broken.stderr
    for tampered, env in (
        (raw[:-1] + bytes([raw[-1] ^ 1]), KEY),  # one bit of the data changed
        (raw, {"CESYNC_CACHE_KEY": "another machine"}),  # a cache another key signed
    ):
        cache.write_bytes(tampered)
        again = cesync("validate", "--dir", str(root), env=env)
        assert (again.returncode, again.stdout, again.stderr) == (broken.returncode, broken.stdout, broken.stderr)


def test_a_cache_other_code_wrote_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cesync's own files are part of what a cache is of: an install from a source tree keeps its
    version string while its code changes, and what the old code parsed or rendered is not used."""
    monkeypatch.setenv("CESYNC_CACHE_KEY", KEY["CESYNC_CACHE_KEY"])
    root = generate(tmp_path / "repo", 10, agents=True)
    assert cesync("validate", "--dir", str(root), "--env", "dev", env=KEY).returncode == 0
    found = cache.load_cache(root)
    assert found is not None and found.stored()
    monkeypatch.setattr(cache, "_code_id", lambda: "the code changed")
    found = cache.load_cache(root)
    assert found is not None and not found.stored()


def test_cached_before_says_whether_this_code_left_a_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hint that starts the app's read before the files load: this code's cache file is there."""
    monkeypatch.setenv("CESYNC_CACHE_KEY", KEY["CESYNC_CACHE_KEY"])
    root = generate(tmp_path / "repo", 10, agents=True)
    assert not cache.cached_before(root)
    assert cesync("validate", "--dir", str(root), "--env", "dev", env=KEY).returncode == 0
    assert cache.cached_before(root)
    monkeypatch.setenv("CESYNC_CACHE", "off")
    assert not cache.cached_before(root)
    monkeypatch.delenv("CESYNC_CACHE")
    monkeypatch.setattr(cache, "_code_id", lambda: "the code changed")
    assert not cache.cached_before(root)
    monkeypatch.undo()
    kept = root / "kept.bin"
    (root / CACHE_FILE).rename(kept)
    (root / CACHE_FILE).symlink_to(kept)  # the repo's file, never one a symlink in it names
    assert not cache.cached_before(root)


def test_a_planted_cache_name_never_fails_nor_waits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pull request commits a folder at parsed.bin, or a symlinked .cesync whose parsed.bin is
    this code's; a local FIFO at the name has no writer. None is a cache, and none fails or waits."""
    monkeypatch.setenv("CESYNC_CACHE_KEY", KEY["CESYNC_CACHE_KEY"])
    root = generate(tmp_path / "repo", 10, agents=True)
    (root / CACHE_FILE).mkdir(parents=True)
    assert not cache.cached_before(root)
    planted = cesync("plan", "--dir", str(root), "--env", "dev", "--endpoint", "embedded", env=KEY)
    assert "internal error" not in planted.stderr and planted.returncode == 0, planted.stderr
    (root / CACHE_FILE).rmdir()
    os.mkfifo(root / CACHE_FILE)
    found: list[object] = []
    reader = threading.Thread(target=lambda: found.extend([cache.cached_before(root), cache.load_cache(root)]), daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive() and found[0] is False and not found[1].stored()  # type: ignore[union-attr]
    elsewhere = generate(tmp_path / "other", 10, agents=True)
    assert cesync("validate", "--dir", str(elsewhere), "--env", "dev", env=KEY).returncode == 0
    assert cache.cached_before(elsewhere)
    shutil.rmtree(root / ".cesync")
    (root / ".cesync").symlink_to(elsewhere / ".cesync")  # its parsed.bin is outside the repo
    assert not cache.cached_before(root)


def test_a_small_repo_gets_no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "MIN_ENTRIES", 200)
    root = generate(tmp_path / "repo", 20)
    assert cesync("validate", "--dir", str(root), env=KEY).returncode == 0
    assert not (root / ".cesync").exists()


def test_the_cache_is_not_part_of_the_repo(tmp_path: Path) -> None:
    root = generate(tmp_path / "repo", 5)
    assert cesync("validate", "--dir", str(root), env=KEY).returncode == 0
    assert (root / CACHE_FILE.parent / ".gitignore").read_text().splitlines()[-1] == "*"


def test_credential_warnings_are_the_same_from_the_cache(tmp_path: Path) -> None:
    root = generate(tmp_path / "repo", 10, agents=True)
    (root / "tools" / "leaky.yaml").write_text(
        "clientFunction: {name: leaky, description: 'api_token: Zx8Kq2Lm9Pw4Rt6Yv1Nb3Hj5Gf7'}\n"
    )
    said = [cesync("validate", "--dir", str(root), env=e) for e in (KEY, KEY, OFF)]
    assert "leaky.yaml:1:" in said[0].stderr + said[0].stdout
    assert len({(r.returncode, r.stdout, r.stderr) for r in said}) == 1


def test_a_cesync_folder_that_leads_out_of_the_repo_is_neither_read_nor_written(tmp_path: Path) -> None:
    root = generate(tmp_path / "repo", 10, agents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / ".cesync").symlink_to(elsewhere, target_is_directory=True)
    assert cesync("validate", "--dir", str(root), env=KEY).returncode == 0
    assert not any(elsewhere.rglob("*"))


def test_a_cache_file_that_is_no_regular_file_is_not_read(tmp_path: Path) -> None:
    root = generate(tmp_path / "repo", 10, agents=True)
    (root / CACHE_FILE).parent.mkdir(parents=True)
    (root / CACHE_FILE).symlink_to("/dev/zero")
    r = cesync("validate", "--dir", str(root), env=KEY)
    assert r.returncode == 0, r.stderr


def test_the_cache_is_never_written_through_a_symlink_the_repo_planted(tmp_path: Path) -> None:
    """.cesync/cache is the repo's, which a pull request writes: a symlink planted where cesync
    puts its temporary file (named by the process id, which can be guessed) or its .gitignore
    would have the cache written over, or a file made at, any path the job can write."""
    root = generate(tmp_path / "repo", 10, agents=True)
    folder = (root / CACHE_FILE).parent
    folder.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("the job's own file\n")
    made = tmp_path / "made.txt"
    (folder / f".{CACHE_FILE.name}.{os.getpid()}").symlink_to(victim)
    (folder / ".gitignore").symlink_to(made)
    r = cesync("validate", "--dir", str(root), env=KEY)
    assert r.returncode == 0, r.stdout + r.stderr
    assert victim.read_text() == "the job's own file\n"
    assert not made.exists()
    assert (root / CACHE_FILE).is_file() and not (root / CACHE_FILE).is_symlink()

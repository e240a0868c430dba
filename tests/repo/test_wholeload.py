"""The repo's files are taken as the run before loaded them only when none changed: each case
changes the resource files after a warm run, and the next run must say what a run without the
cache says; a file that changes after the check, before its data is read, stops the run."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cesync.core import parsecache
from cesync.errors import CesyncError
from cesync.repo import cache, wholeload
from cesync.repo.repo import load_repo
from tests.helpers import spy_found
from tests.repo.test_cache import KEY, OFF, generate
from tests.repo.test_wholerender import validate


@pytest.fixture(autouse=True)
def small_repos_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "MIN_ENTRIES", 0)


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each run took the files as the run before loaded them."""
    return spy_found(monkeypatch, wholeload)


def tool(root: Path) -> Path:
    return sorted((root / "tools").glob("*.yaml"))[0]


def test_an_unchanged_repo_is_not_loaded_again(tmp_path: Path, taken: list[bool]) -> None:
    root = generate(tmp_path / "repo", 20, agents=True)
    first, second = validate(root, KEY), validate(root, KEY)
    assert taken == [False, True]
    assert first == second == validate(root, OFF)


def _content(root: Path, tmp: Path) -> None:
    tool(root).write_text(tool(root).read_text() + "unknownField: 1\n")


def _same_size_and_time(root: Path, tmp: Path) -> None:
    path = tool(root)
    info = path.stat()
    path.write_text(path.read_text().replace("name: ", "nome: ", 1))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def _added(root: Path, tmp: Path) -> None:
    (root / "tools" / "zz-copy.yaml").write_text(tool(root).read_text())


def _removed(root: Path, tmp: Path) -> None:
    tool(root).unlink()


def _file_link(root: Path, tmp: Path) -> None:
    outside = tmp / "outside.yaml"
    outside.write_text(tool(root).read_text())
    tool(root).unlink()
    (root / "tools" / outside.name).symlink_to(outside)


def _folder_link(root: Path, tmp: Path) -> None:
    (root / "tools").rename(tmp / "tools-copy")
    (root / "tools").symlink_to(tmp / "tools-copy")


CHANGES: dict[str, Callable[[Path, Path], None]] = {
    "content": _content,
    "content, same size and mtime": _same_size_and_time,
    "a file added": _added,
    "a file removed": _removed,
    "a file now a symlink out of the repo": _file_link,
    "a folder now a symlink out of the repo": _folder_link,
}


@pytest.mark.parametrize("settled", [False, True], ids=["just written", "settled"])
@pytest.mark.parametrize("name", sorted(CHANGES))
def test_a_change_to_the_files_is_never_hidden(
    tmp_path: Path, taken: list[bool], monkeypatch: pytest.MonkeyPatch, name: str, settled: bool
) -> None:
    if settled:  # every file counts as long unchanged: only its size, times and inode vouch for it
        monkeypatch.setattr(wholeload, "SETTLED_NS", -(10**18))
    root = generate(tmp_path / "repo", 12, agents=True)
    validate(root, KEY)
    CHANGES[name](root, tmp_path)
    cached, fresh = validate(root, KEY), validate(root, OFF)
    assert cached == fresh
    assert taken == [False, False]


def test_a_repo_with_a_symlinked_folder_inside_it_is_loaded_each_run(tmp_path: Path, taken: list[bool]) -> None:
    """Loading follows a folder's symlink that stays in the repo; the entry, checked through plain
    folders only, is never taken."""
    root = generate(tmp_path / "repo", 12, agents=True)
    (root / "tools").rename(root / "tools-real")
    (root / "tools").symlink_to("tools-real")
    first, second = validate(root, KEY), validate(root, KEY)
    assert first == second == validate(root, OFF)
    assert first[0] == 0 and taken == [False, False]


def test_a_file_changed_after_the_check_stops_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check passed, then the file changed before its data was read: the run must not go on
    with a text the check never saw."""
    monkeypatch.setenv("CESYNC_CACHE_KEY", KEY["CESYNC_CACHE_KEY"])
    root = generate(tmp_path / "repo", 12, agents=True)
    load_repo(root).keep_cache()
    repo = load_repo(root)
    parsecache.install(None)
    lazy = [f for f in repo.files if isinstance(f.doc, wholeload.LazyDocument)]
    assert len(lazy) == len(repo.files) > 0
    path = lazy[0].path
    path.write_text(path.read_text() + "# changed\n")
    with pytest.raises(CesyncError, match="changed while cesync was reading the repo"):
        _ = lazy[0].doc.data
    assert lazy[1].doc.data == load_repo(root).files[1].doc.data  # the others read as they are


def test_a_file_changed_while_the_run_read_the_others_is_read_again(
    tmp_path: Path, taken: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file changed after it was read, in a run that went on long enough for the change to look
    settled when the files were kept: what the run read is not what the file holds."""
    from cesync.repo import repo as repo_module

    root = generate(tmp_path / "repo", 12, agents=True)
    real_load, real_clock = repo_module.load_sources, time.time_ns

    def load_then_edit(*args: Any) -> Any:
        files = real_load(*args)
        _content(root, tmp_path)
        monkeypatch.setattr(time, "time_ns", lambda: real_clock() + 10 * 10**9)  # ten seconds on
        return files

    monkeypatch.setattr(repo_module, "load_sources", load_then_edit)
    assert validate(root, KEY)[0] == 0
    monkeypatch.undo()
    monkeypatch.setattr(cache, "MIN_ENTRIES", 0)
    cached, fresh = validate(root, KEY), validate(root, OFF)
    assert cached == fresh
    assert fresh[0] == 1


@pytest.mark.parametrize(
    "entry",
    [
        lambda files: ([(p, "x", [], d) for p, d in files], {}),  # no signature
        lambda files: ([(p, "x", [], d, -1, 0, 0, 0) for p, d in files], []),  # owners not a mapping
        lambda files: 5,
    ],
    ids=["no signature", "owners a list", "a number"],
)
def test_an_entry_of_another_shape_is_loaded_again(tmp_path: Path, entry: Callable[[list[tuple[str, bytes]]], Any]) -> None:
    """What the signed file holds is what this code wrote, read with care all the same."""
    import marshal

    from cesync.api.kinds import KINDS
    from cesync.core.yamlfile import text_digest
    from cesync.repo.loading import kind_files

    root = generate(tmp_path / "repo", 3, agents=False).resolve()
    files = [(str(p), text_digest(p.read_text())) for kind in KINDS.values() for p in kind_files(root, kind)]
    store = parsecache.ParseCache({wholeload.SLOT: marshal.dumps(entry(files), 4)})
    assert wholeload.find(store, root) is None


def test_files_known_by_their_text_are_known_by_their_signature_the_run_after(
    tmp_path: Path, taken: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkout again (or touch) leaves every text as it was and every signature new: the run that
    finds them by their bytes keeps their signatures, so the run after reads none of them."""
    root = generate(tmp_path / "repo", 12, agents=True)
    assert validate(root, KEY)[0] == 0
    for path in (root / "tools").glob("*.yaml"):
        path.touch()
    real_clock = time.time_ns
    monkeypatch.setattr(time, "time_ns", lambda: real_clock() + 10 * 10**9)  # the touches settled
    opened: list[str] = []

    def spy(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return open(file, *args, **kwargs)

    monkeypatch.setattr(wholeload, "open", spy, raising=False)
    runs = []
    for _ in range(2):
        opened.clear()
        runs.append((validate(root, KEY), [p for p in opened if "/tools/" in p]))
    assert taken == [False, True, True]
    assert runs[0][1] and not runs[1][1]
    assert runs[0][0] == runs[1][0] == validate(root, OFF)

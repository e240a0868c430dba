"""The whole render of an environment is taken from the cache only when nothing it came from
changed: each case below changes one input after a warm run, and the next run must say what a
run without the cache says; with nothing changed, the run must take the whole render."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cesync.repo import cache, wholeload, wholerender
from tests.helpers import cesync, spy_found
from tests.repo.test_cache import KEY, OFF, generate


@pytest.fixture(autouse=True)
def small_repos_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "MIN_ENTRIES", 0)
    # a repo here is written an instant before its first run: settled once the run begins
    monkeypatch.setattr(wholeload, "SETTLED_NS", 0)


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each run took the whole render from the cache."""
    return spy_found(monkeypatch, wholerender)


def validate(root: Path, env: dict[str, str | None], *extra: str) -> tuple[int, str, str]:
    done = cesync("validate", "--dir", str(root), "--env", "dev", *extra, env=env)
    return done.returncode, done.stdout, done.stderr


def include(root: Path) -> Path:
    return sorted((root / "code").glob("*.py"))[0]


def test_an_unchanged_repo_takes_the_whole_render(tmp_path: Path, taken: list[bool]) -> None:
    root = generate(tmp_path / "repo", 20, agents=True)
    first, second = validate(root, KEY), validate(root, KEY)
    assert taken == [False, True]
    assert first == second == validate(root, OFF)
    assert first[0] == 0


def _content(root: Path, tmp: Path) -> None:
    target = include(root)
    target.write_text(target.read_text().replace("return", "return  ", 1))


def _same_size_and_time(root: Path, tmp: Path) -> None:
    """A change that keeps the size and puts the modification time back (ctime still moves)."""
    target = include(root)
    info = target.stat()
    text = target.read_text()
    target.write_text(text.replace("def ", "dex ", 1))
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))


def _outside(root: Path, tmp: Path) -> None:
    target = include(root)
    outside = tmp / "elsewhere.py"
    outside.write_text(target.read_text())  # the same text: only where it lies has changed
    target.unlink()
    target.symlink_to(outside)


def _folder_link(root: Path, tmp: Path) -> None:
    """The include's folder becomes a symlink to a copy outside the repo."""
    copy = tmp / "code-copy"
    (root / "code").rename(copy)
    (root / "code").symlink_to(copy)


def _into_git(root: Path, tmp: Path) -> None:
    target = include(root)
    (root / ".git").mkdir()
    (root / ".git" / "hooks.py").write_text(target.read_text())
    target.unlink()
    target.symlink_to(root / ".git" / "hooks.py")


def _removed(root: Path, tmp: Path) -> None:
    include(root).unlink()


def _variable(root: Path, tmp: Path) -> None:
    config = root / "cesync.yaml"
    text = config.read_text()
    assert "https://api.dev." in text
    config.write_text(text.replace("https://api.dev.", "https://v2.api.dev."))


def _renamed(root: Path, tmp: Path) -> None:
    tool = sorted((root / "tools").glob("*.yaml"))[0]
    tool.rename(tool.with_name("zz-" + tool.name))


CHANGES: dict[str, Callable[[Path, Path], None]] = {
    "include content": _content,
    "include content, same size and mtime": _same_size_and_time,
    "include now a symlink out of the repo": _outside,
    "include's folder now a symlink out of the repo": _folder_link,
    "include now a symlink into .git": _into_git,
    "include removed": _removed,
    "cesync.yaml": _variable,
    "a file renamed": _renamed,
}


@pytest.mark.parametrize("settled", [False, True], ids=["written before the run", "settled"])
@pytest.mark.parametrize("name", sorted(CHANGES))
def test_a_change_is_never_hidden_by_the_whole_render(
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


def test_a_variable_s_value_given_from_outside_is_part_of_the_key(tmp_path: Path, taken: list[bool]) -> None:
    root = generate(tmp_path / "repo", 12, agents=True)
    agent = sorted((root / "agents").glob("*.yaml"))[0]
    agent.write_text(agent.read_text().replace("description: ", "description: ${TONE} ", 1))
    runs = [validate(root, {**KEY, "CESYNC_VAR_TONE": tone}) for tone in ("calm", "calm", "brisk")]
    assert taken == [False, True, False]
    assert runs[2] == validate(root, {**OFF, "CESYNC_VAR_TONE": "brisk"})
    assert runs[0] == runs[1] == validate(root, {**OFF, "CESYNC_VAR_TONE": "calm"})


def test_a_render_a_sensitive_value_took_part_in_is_not_kept_whole(tmp_path: Path, taken: list[bool]) -> None:
    root = generate(tmp_path / "repo", 12, agents=True)
    config = root / "cesync.yaml"
    config.write_text(config.read_text().replace("defaults:\n", "defaults:\n  sensitive: [TOKEN]\n", 1))
    agent = sorted((root / "agents").glob("*.yaml"))[0]
    agent.write_text(agent.read_text().replace("description: ", "description: ${TOKEN} ", 1))
    secret = "Qw8Zr4Tn6Yp2Lk0Hs5"
    for _ in range(2):
        assert validate(root, {**KEY, "CESYNC_VAR_TOKEN": secret})[0] == 0
    assert taken == [False, False]
    for kept in (root / ".cesync").rglob("*"):
        if kept.is_file():
            assert secret.encode() not in kept.read_bytes()


def test_a_repo_with_a_problem_is_not_kept_whole(tmp_path: Path, taken: list[bool]) -> None:
    root = generate(tmp_path / "repo", 12, agents=True)
    tool = sorted((root / "tools").glob("*.yaml"))[0]
    tool.write_text(tool.read_text() + "\nunknownField: 1\n")
    first, second = validate(root, KEY), validate(root, KEY)
    assert first == second == validate(root, OFF)
    assert first[0] == 1 and taken == [False, False]


def test_a_variable_written_with_a_yaml_escape_is_part_of_the_key(tmp_path: Path, taken: list[bool]) -> None:
    """A YAML escape makes ${TONE} of "\\x24{TONE}": the text never says so, the data does."""
    root = generate(tmp_path / "repo", 12, agents=True)
    agent = sorted((root / "agents").glob("*.yaml"))[0]
    text = agent.read_text()
    agent.write_text(re.sub(r"(?m)^description: .*\n", lambda _: 'description: "\\x24{TONE} handles"\n', text, count=1))
    validate(root, {**KEY, "CESYNC_VAR_TONE": "calm"})
    cached, fresh = validate(root, KEY), validate(root, OFF)
    assert cached == fresh
    assert fresh[0] == 1


def test_an_include_changed_after_the_render_read_it_is_read_again(
    tmp_path: Path, taken: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The include changed between the render and the keeping of it: the render kept is of the old text."""
    root = generate(tmp_path / "repo", 12, agents=True)
    real = wholerender.store

    def edit_then_store(*args: Any) -> None:
        include(root).write_text("def broken(:\n")
        real(*args)

    monkeypatch.setattr(wholerender, "store", edit_then_store)
    assert validate(root, KEY)[0] == 0
    monkeypatch.setattr(wholerender, "store", real)
    cached, fresh = validate(root, KEY), validate(root, OFF)
    assert cached == fresh
    assert fresh[0] == 1


def test_a_file_that_did_not_load_is_a_problem_of_the_whole_render_too(tmp_path: Path, taken: list[bool]) -> None:
    """A second file of an id (tools/x.yml beside tools/x.yaml) adds a problem, not a resource or a name."""
    root = generate(tmp_path / "repo", 12, agents=True)
    validate(root, KEY)
    tool = sorted((root / "tools").glob("*.yaml"))[0]
    tool.with_suffix(".yml").write_text(tool.read_text())
    cached, fresh = validate(root, KEY), validate(root, OFF)
    assert cached == fresh
    assert fresh[0] == 1


def test_a_file_mapping_that_is_no_include_reads_nothing_outside_the_repo(
    tmp_path: Path, taken: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """{file: ...} in a field that takes any value (a schema's default) is data, not an include: the
    render reads nothing there, and neither may keeping it (a FIFO or /dev/zero would never end)."""
    root = generate(tmp_path / "repo", 12, agents=True)
    (tmp_path / "outside.txt").write_text("not the repo's\n")
    tool = "clientFunction:\n  name: zz\n  parameters:\n    type: OBJECT\n    default: {file: ../../outside.txt}\n"
    (root / "tools" / "zz.yaml").write_text(tool)
    opened: list[str] = []

    def spy(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return open(file, *args, **kwargs)

    for module in (wholerender, wholeload):  # wholeload reads an include again for wholerender
        monkeypatch.setattr(module, "open", spy, raising=False)
    runs = [validate(root, KEY) for _ in range(2)]
    assert runs[0] == runs[1] == validate(root, OFF)
    assert runs[0][0] == 0 and taken == [False, True]
    assert not [p for p in opened if not Path(p).resolve().is_relative_to(root)]


def test_a_url_holding_a_sensitive_value_keeps_no_whole_render(tmp_path: Path, taken: list[bool]) -> None:
    """An environment's urls are part of the kept render's digest: one that holds a sensitive value
    (substituted from ${KEY_IN_URL}) would let a reader of the cache check guesses of it."""
    root = generate(tmp_path / "repo", 12, agents=True)
    config = root / "cesync.yaml"
    url = "    app: bench-dev\n    sensitive: [TOKEN]\n    urls: {elsewhere: 'https://x.example/?k=${TOKEN}'}\n"
    config.write_text(config.read_text().replace("    app: bench-dev\n", url, 1))
    runs = [validate(root, {**KEY, "CESYNC_VAR_TOKEN": "Qw8Zr4Tn6Yp2Lk0Hs5"}) for _ in range(2)]
    assert runs[0][0] == 0, runs[0]
    assert taken == [False, False]

"""The caches of whole results (repo/wholeload.py, repo/wholerender.py) never change an answer: a
generated repo whose files look long settled, validated once to fill the cache, then edited step
by step (text put in, taken out or changed in place at the same size, a file added or removed, an
include edited), each edited file's modification time put back as it was, validates the same with
the cache as without it after every step. Its size and modification time then say nothing of the
edit: only the change time (and perhaps the inode), which every write moves, tells the file from
the one the cache vouched for."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.repo import cache, wholeload, wholerender
from tests.helpers import cesync, spy_found
from tests.repo.test_cache import KEY, OFF, apply_edit, edit, generate

AGO = 10 * 10**9  # how long before a run its files were last changed: settled (wholeload.SETTLED_NS)

# An edit as test_cache makes it, or one byte of a file changed in place: the size stays, and with
# the modification time put back, only the change time differs.
in_place = st.tuples(st.just("in place"), st.integers(0, 10_000), st.integers(0, 10_000), st.sampled_from("x1 :#-\n"))
step = st.one_of(edit, in_place)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(tmp_path_factory.mktemp("whole") / "repo", 12, agents=True)


def validate(root: Path, env: dict[str, str | None], *extra: str) -> tuple[int, str, str]:
    done = cesync("validate", "--dir", str(root), *extra, env=env)
    return done.returncode, done.stdout, done.stderr


def files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and ".cesync" not in p.parts)


def edit_keeping_times(root: Path, op: str, which: int, at: int, text: str, old: int) -> None:
    """The edit, then each file it wrote given back its access and modification times (a file it
    added: old ones), as a checkout or an editor that keeps times could leave it."""
    before = {p: (s.st_atime_ns, s.st_mtime_ns, s.st_ctime_ns) for p in files(root) for s in [p.stat()]}
    if op == "in place":
        path = files(root)[which % len(before)]
        raw = bytearray(path.read_bytes())
        if raw and raw[at % len(raw)] < 0x80:  # an ASCII byte for another: still UTF-8, of the same size
            raw[at % len(raw)] = ord(text)
            path.write_bytes(bytes(raw))
    else:
        apply_edit(root, op, which, at, text)
    for path in files(root):
        info = path.stat()
        if path not in before:
            os.utime(path, ns=(old, old))
        elif (info.st_mtime_ns, info.st_ctime_ns) != before[path][1:]:
            os.utime(path, ns=before[path][:2])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=1, max_size=5))
def test_a_settled_repo_edited_with_its_times_kept_validates_as_without_the_cache(
    base: Path, monkeypatch: pytest.MonkeyPatch, steps: list[tuple[str, int, int, str]]
) -> None:
    with monkeypatch.context() as patch, tempfile.TemporaryDirectory() as tmp:
        patch.setattr(cache, "MIN_ENTRIES", 0)
        real_clock = time.time_ns
        # every file's change time, which no call sets, is in the past of a run as its modification time is
        patch.setattr(time, "time_ns", lambda: real_clock() + AGO)
        loads, renders = spy_found(patch, wholeload), spy_found(patch, wholerender)
        read: list[str] = []

        def reading(file: Any, *args: Any, **kwargs: Any) -> Any:
            read.append(str(file))
            return open(file, *args, **kwargs)

        patch.setattr(wholeload, "open", reading, raising=False)
        root = Path(tmp) / "repo"
        shutil.copytree(base, root, ignore=shutil.ignore_patterns(".cesync"))
        old = real_clock() - AGO
        for path in files(root):
            os.utime(path, ns=(old, old))
        variants: list[tuple[str, ...]] = [(), ("--env", "dev")]
        filled = [validate(root, KEY, *extra) for extra in variants]
        assert all(code == 0 for code, _, _ in filled), filled
        # unchanged: both whole results taken, each file vouched for by its size and times alone
        for seen in (loads, renders, read):
            seen.clear()
        assert [validate(root, KEY, *extra) for extra in variants] == filled
        assert loads == [True, True] and all(renders) and read == []
        for op, which, at, text in steps:
            edit_keeping_times(root, op, which, at, text, old)
            for extra in variants:
                cached, fresh = validate(root, KEY, *extra), validate(root, OFF, *extra)
                assert cached == fresh, (op, which, at, text, extra)

"""The second process's failures at every step of its answer, and an interrupted parent: the
outcome is one process's, and nothing is left behind (no child, no open pipe)."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.repo import parallel


@pytest.fixture(autouse=True)
def two_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "THRESHOLD", 4)
    monkeypatch.setattr(parallel, "CHUNK", 50)
    monkeypatch.setattr(parallel, "cpus", lambda: 2)
    monkeypatch.setattr(parallel, "other_threads", lambda: 0)
    monkeypatch.delenv("CESYNC_PARALLEL", raising=False)


def fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def children() -> list[int]:
    """This process's child processes, zombies included."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():
            found.append(int(pid))
    return found


@contextlib.contextmanager
def nothing_left() -> Iterator[None]:
    """No child process and no descriptor more after the block than before it (the test process
    may hold others: an earlier test's server, a worker's own)."""
    fds_before, children_before = fds(), set(children())
    yield
    multiprocessing.active_children()  # reaps what multiprocessing started and has ended
    assert set(children()) <= children_before
    assert len(fds() - fds_before) <= 2  # multiprocessing keeps the last Process's own sentinel pipe


def big(items: list[int]) -> list[str]:
    return [f"{i:08d}" * 250 for i in items]  # 2 KB each: a part larger than the pipe holds


def failing_at(part: int, how: str) -> Callable[[Any, Any], None]:
    """A _send that sends the parts before `part` whole, then is killed or sends all of it but its end."""
    real, sent = parallel._send, [0]

    def send(sender: Any, answer: Any) -> None:
        if sent[0] == part:
            if how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
            sender.write(data[:-1])  # all but its last byte (STOP)
            sender.flush()
            raise RuntimeError("cut")
        sent[0] += 1
        real(sender, answer)

    return send


@pytest.mark.parametrize("how", ["kill", "cut"])
@pytest.mark.parametrize("part", [0, 1, 2])
@pytest.mark.parametrize("deferred", [False, True])
def test_a_part_lost_after_whole_ones_leaves_the_outcome_and_nothing_behind(
    monkeypatch: pytest.MonkeyPatch, part: int, how: str, deferred: bool
) -> None:
    items = list(range(200))
    monkeypatch.setattr(parallel, "_send", failing_at(part, how))
    later: list[Callable[[], None]] | None = [] if deferred else None
    with nothing_left():
        assert parallel.run(items, big, later=later) == big(items)
        for then in later or ():
            then()


def cut_at(part: int, fraction: float) -> Callable[[Any, Any], None]:
    """A _send that sends the parts before `part` whole, then that part's first bytes only (a
    fraction of them) and ends."""
    real, sent = parallel._send, [0]

    def send(sender: Any, answer: Any) -> None:
        if sent[0] == part:
            data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
            sender.write(data[: int(len(data) * fraction)])
            sender.flush()
            raise RuntimeError("cut")
        sent[0] += 1
        real(sender, answer)

    return send


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    part=st.integers(0, 2),
    fraction=st.floats(0, 1, exclude_max=True),
    count=st.integers(4, 120),
    deferred=st.booleans(),
)
def test_an_answer_cut_anywhere_gives_one_process_s_outcome(
    monkeypatch: pytest.MonkeyPatch, part: int, fraction: float, count: int, deferred: bool
) -> None:
    items = list(range(count))
    later: list[Callable[[], None]] | None = [] if deferred else None
    with monkeypatch.context() as patch, nothing_left():
        patch.setattr(parallel, "_send", cut_at(part, fraction))
        assert parallel.run(items, big, later=later) == big(items)
        for then in later or ():
            then()


def stalling(where: str) -> Callable[[Any, Any], None]:
    """A _send that stops at `where` (before the first part, half-way through it, before the
    last) and waits there until the parent ends it."""
    real = parallel._send

    def send(sender: Any, answer: Any) -> None:
        last = not isinstance(answer, (list, dict))
        if where == "first" or (where == "mid-part" and isinstance(answer, list)) or (where == "last" and last):
            if where == "mid-part":
                sender.write(pickle.dumps(answer)[:1000])
                sender.flush()
            signal.pause()  # until the parent ends it
        real(sender, answer)

    return send


def interrupted_at(where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C in the parent where it waits for the child: in the wait for its answer, half-way
    through reading a part, reading the last part (raised there, not sent: a signal to the process
    may reach another of the test process's threads)."""

    def interrupt(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    if where == "first":
        monkeypatch.setattr(parallel.select, "select", interrupt)
        return
    load, calls = pickle.load, [0]

    def loading(stream: Any) -> Any:
        calls[0] += 1
        if where == "mid-part":
            stream.read(500)  # the part has begun to come
            raise KeyboardInterrupt
        return interrupt() if calls[0] == 3 else load(stream)

    monkeypatch.setattr(pickle, "load", loading)


@pytest.mark.parametrize("where", ["first", "mid-part", "last"])
def test_an_interrupted_parent_leaves_no_child(monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    monkeypatch.setattr(parallel, "_send", stalling(where))
    later: list[Callable[[], None]] = []
    with nothing_left(), pytest.raises(KeyboardInterrupt), monkeypatch.context() as patch:
        interrupted_at(where, patch)
        parallel.run(list(range(100)), big, later=later if where == "last" else None)
        for then in later:
            then()


class RefusingCache:
    """A parse cache whose taking of the child's entries fails (as Ctrl-C at that moment does)."""

    used: frozenset[bytes] = frozenset()

    def since(self, before: frozenset[bytes]) -> dict[bytes, bytes]:
        return {}

    def take(self, entries: dict[bytes, bytes]) -> None:
        raise KeyboardInterrupt


@pytest.mark.parametrize("deferred", [False, True])
def test_a_failure_after_the_answer_came_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch, deferred: bool) -> None:
    monkeypatch.setattr(parallel.parsecache, "current", RefusingCache)
    later: list[Callable[[], None]] | None = [] if deferred else None
    with nothing_left(), pytest.raises(KeyboardInterrupt):
        parallel.run(list(range(100)), big, later=later)
    assert later in (None, [])  # nothing left to a caller that never gets to call it


def test_ctrl_c_while_the_child_starts_says_nothing(monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    real = parallel._child

    def interrupted(*args: Any) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # before the child's code ignores it: multiprocessing's own start
        real(*args)

    monkeypatch.setattr(parallel, "_child", interrupted)
    capfd.readouterr()

    def where(items: list[int]) -> list[bool]:
        return [multiprocessing.parent_process() is not None for _ in items]

    assert parallel.run(list(range(10)), where) == [False, True] * 5  # the child did its half
    assert capfd.readouterr() == ("", "")


def test_a_process_without_standard_streams_still_forks(tmp_path: Path) -> None:
    out = tmp_path / "where.json"
    script = textwrap.dedent(
        f"""
        import json, multiprocessing
        from cesync.repo import parallel
        parallel.THRESHOLD, parallel.cpus, parallel.other_threads = 2, lambda: 2, lambda: 0
        done = parallel.run(list(range(6)), lambda xs: [multiprocessing.parent_process() is not None for _ in xs])
        with open({str(out)!r}, "w") as f:
            json.dump(done, f)
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "CESYNC_PARALLEL"}
    closed = subprocess.run(["bash", "-c", 'exec "$0" -c "$1" 1>&- 2>&-', sys.executable, script], env=env, timeout=60)
    assert closed.returncode == 0
    assert json.loads(out.read_text()) == [False, True] * 3  # the pipe did not land on 1 or 2

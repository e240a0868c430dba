"""fork_map: the same results as one process, in order, whatever the child does."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.repo import forked
from cesync.repo.forked import fork_map

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork_map maps in one process without os.fork")


@pytest.fixture(autouse=True)
def allow_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest-xdist's workers run threads, which turns forking off: these tests are about the fork."""
    monkeypatch.setattr(forked, "can_fork", lambda: True)


def square_with_pid(items: list[int]) -> list[tuple[int, int]]:
    return [(i * i, os.getpid()) for i in items]


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(-1000, 1000), max_size=40), st.floats(0.0, 1.0))
def test_same_results_in_order(items: list[int], share: float) -> None:
    out = fork_map(square_with_pid, items, minimum=0, child_share=share)
    assert [square for square, _ in out] == [i * i for i in items]
    forked_part = [pid for _, pid in out if pid != os.getpid()]
    assert len(forked_part) == int(len(items) * share)
    # Spread through the list, not its tail: every prefix holds its share of the child's items
    # (a folder of costly files at the end is shared between the two processes).
    in_child = [pid != os.getpid() for _, pid in out]
    assert all(sum(in_child[:k]) == int(k * share) for k in range(len(items) + 1)), in_child


def test_carry_comes_back_to_adopt() -> None:
    adopted: list[Any] = []
    out = fork_map(
        lambda xs: [x + 1 for x in xs],
        list(range(10)),
        minimum=0,
        carry=lambda rs: {"pid": os.getpid(), "n": rs},
        adopt=adopted.append,
    )
    assert out == list(range(1, 11))
    assert len(adopted) == 1 and adopted[0]["pid"] != os.getpid() and adopted[0]["n"] == [2, 4, 6, 8, 10]  # every other item


def test_a_failing_child_share_is_mapped_here() -> None:
    parent = os.getpid()

    def only_here(xs: list[int]) -> list[int]:
        if os.getpid() != parent:
            raise RuntimeError("the child fails")
        return [x * 2 for x in xs]

    adopted: list[Any] = []
    assert fork_map(only_here, list(range(9)), minimum=0, carry=lambda rs: 1, adopt=adopted.append) == [x * 2 for x in range(9)]
    assert adopted == []  # nothing from a failed child


def test_a_killed_child_share_is_mapped_here() -> None:
    parent = os.getpid()

    def killed(xs: list[int]) -> list[int]:
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return [-x for x in xs]

    assert fork_map(killed, list(range(7)), minimum=0) == [-x for x in range(7)]


def test_an_error_here_ends_the_child_too() -> None:
    parent = os.getpid()
    child_pid: list[int] = []
    read_end, write_end = os.pipe()

    def slow_child(xs: list[int]) -> list[int]:
        if os.getpid() != parent:
            os.write(write_end, str(os.getpid()).encode() + b"\n")
            threading.Event().wait(60)  # would keep the child alive for a minute
            return xs
        child_pid.append(int(os.read(read_end, 64).split()[0]))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fork_map(slow_child, list(range(4)), minimum=0)
    os.close(read_end)
    os.close(write_end)
    with pytest.raises(ProcessLookupError):  # killed and reaped: no such process any more
        os.kill(child_pid[0], 0)


@pytest.mark.parametrize(("n", "minimum"), [(5, 10), (50, 10)])
def test_started_once_either_way(n: int, minimum: int) -> None:
    calls: list[int] = []
    assert fork_map(lambda xs: xs, list(range(n)), minimum=minimum, started=lambda: calls.append(1)) == list(range(n))
    assert calls == [1]


def test_no_fork_with_threads_running(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()
    gate = threading.Event()
    t = threading.Thread(target=gate.wait)
    t.start()
    try:
        assert not forked.can_fork()
        assert {pid for _, pid in fork_map(square_with_pid, list(range(300)))} == {os.getpid()}
    finally:
        gate.set()
        t.join()

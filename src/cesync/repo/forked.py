"""Work split over two cores: part of a list mapped in a forked child process (Linux only).

Python runs one thread of Python code at a time, so rendering a repo of a thousand files
keeps one core busy and leaves the other idle. Here a forked copy of the process maps
part of the list, the process itself maps the rest, and the child's results come back
pickled through a pipe; the results are in the list's order, the same as one process
would compute. The child's items are spread evenly through the list, not its tail: a
repo's files come sorted by folder, and one folder can cost far more per file than
another (at 1,000 tools the OpenAPI toolsets, last, took twice the time of the tools, so
a tail of 55% left this process waiting 0.6 s of a 1.5 s render). Anything unusual (no
fork, other threads running, a failed or killed child) maps the whole list in this
process.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["MIN_ITEMS", "fork_map"]

T = TypeVar("T")
R = TypeVar("R")

# Below this many items forking costs about what it saves (a fork of a 60 MB process and
# the pickling take a few milliseconds; a file renders in under one).
MIN_ITEMS = 200


def can_fork() -> bool:
    """fork only on Linux and only with one thread: a thread holding a lock (the import lock,
    a logging lock) at the moment of the fork would leave that lock held forever in the child."""
    return sys.platform == "linux" and hasattr(os, "fork") and threading.active_count() == 1


def fork_map(
    fn: Callable[[list[T]], list[R]],
    items: list[T],
    *,
    child_share: float = 0.5,
    minimum: int | None = None,
    carry: Callable[[list[R]], Any] | None = None,
    adopt: Callable[[Any], None] | None = None,
    started: Callable[[], None] | None = None,
) -> list[R]:
    """fn(items), child_share of the items (spread evenly) mapped in a forked child process.

    fn maps a list to a list of the same length and must depend only on its items and on
    state that exists before the call (the child sees the process as it was at the fork).
    carry(child's results) is computed in the child and handed to adopt in this process:
    what the child learnt that this process would otherwise compute again (parse caches).
    started() is called once the work is under way (after the fork: it may start threads).
    """
    theirs_at = _spread(len(items), child_share)
    if len(items) < (MIN_ITEMS if minimum is None else minimum) or not any(theirs_at) or not can_fork():
        if started is not None:
            started()
        return fn(items)
    head = [item for item, there in zip(items, theirs_at, strict=True) if not there]
    tail = [item for item, there in zip(items, theirs_at, strict=True) if there]
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child leaves by os._exit, which coverage does not see
        _child(fn, tail, carry, read_end, write_end)
    os.close(write_end)
    reaped = False
    try:
        if started is not None:
            started()
        mine = fn(head)
        with os.fdopen(read_end, "rb") as pipe:
            read_end = -1
            try:  # from the pipe as it comes: the pickled bytes are never all in memory at once
                theirs, carried = pickle.load(pipe)
            except (EOFError, pickle.UnpicklingError, ValueError, TypeError):  # the child failed or died
                theirs, carried = None, None
        _, status = os.waitpid(pid, 0)
        reaped = True
        if status != 0:
            theirs, carried = None, None
    finally:
        if read_end != -1:
            os.close(read_end)
        if not reaped:  # this process is leaving with an exception (Ctrl-C): the child goes too
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    if not isinstance(theirs, list) or len(theirs) != len(tail):
        theirs = fn(tail)  # the child failed: its share here, so any error is raised from this process
    elif adopt is not None:
        adopt(carried)
    return _merge(theirs_at, mine, theirs)


def _spread(n: int, share: float) -> list[bool]:
    """Which of n items the child maps: int(n * share) of them, evenly spaced."""
    return [int((i + 1) * share) > int(i * share) for i in range(n)]


def _merge(theirs_at: list[bool], mine: list[R], theirs: list[R]) -> list[R]:
    """The two processes' results back in the order of their items."""
    here, there = iter(mine), iter(theirs)
    return [next(there) if at else next(here) for at in theirs_at]


def _child(
    fn: Callable[[list[T]], list[R]], tail: list[T], carry: Callable[[list[R]], Any] | None, read_end: int, write_end: int
) -> None:
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C on the terminal: leave quietly, the parent reports it
        os.close(read_end)
        results = fn(tail)
        payload = pickle.dumps((results, carry(results) if carry else None), protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(payload)
        code = 0
    except BaseException:
        pass
    finally:
        os._exit(code)

"""A large repo parsed and rendered on two cores: every other file in a forked child process.

Parsing the files (loading.load_sources) and rendering them (templating, key linting, the
model, the checks that parse each OpenAPI document and each Python tool's code) is CPU work
in Python, one core at a time in one process; a repo of thousands of files spends most of a
cold plan or validate there. So, from THRESHOLD files on and with two CPUs or more, every
other file is handled in a child forked from this process (it has all it needs already:
nothing is sent to it) while this one handles the rest. The child sends back its results
(parsed Documents, or renders), the parse cache's entries it used or made
(core/parsecache.py: the next run's cache holds every file's) and the documents and code it
parsed (core/documents.py: the plan's diff finds them parsed). Each file's result is a
function of the file (and the environment), so the outcome is the one a single process
gives: the same resources in the same order and the same problems.

The child writes no file and prints nothing (its standard streams lead to the null device),
ignores Ctrl-C (the terminal sends it to both: the parent stops it), ends on SIGTERM
without a word, and stops when the parent is gone. Whatever goes wrong in it (an
exception, a value that cannot be pickled, a lost pipe) leaves its files to the parent,
which handles them as a single process would.

``CESYNC_PARALLEL=off`` keeps everything in one process.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, BinaryIO, TypeVar

from ..core import documents, parsecache

__all__ = ["THRESHOLD", "run", "wanted"]

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

# Files from which a second process pays. A cold validate of generated repos (benchmarks/generate.py)
# took this process 0.57 s of CPU alone and 0.42 s beside its child at 250 files, 0.84 and 0.55 s
# at 500, 1.40 and 0.80 s at 1,000: the fork and the pickles cost little, but below a few hundred
# files there is little to gain for a second process's memory and a second core taken.
THRESHOLD = 500
CHUNK = 200  # items the child does between two looks at whether its parent is still there
OFF = ("off", "0", "no", "false")
JOIN_SECONDS = 10  # for a child told to end (SIGTERM) before it is killed
# The child's share of the items when this process also runs a thread (the app's read during a
# plan's render): the read's decoding is this process's too. At 10k this process rendered a file
# in 0.75 ms beside it and the child in 0.61 ms: the two end together at 0.55.
THREADED_SHARE = 0.55


def cpus() -> int:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def other_threads() -> int:
    """The threads alive besides this one: a fork copies none of them, but every lock they hold."""
    return threading.active_count() - 1


def wanted(count: int) -> bool:
    """Whether count files are parsed or rendered in two processes: never from a process with a
    thread besides this one (a lock it holds would stay held in the child: the app read ahead
    starts early only when nothing is left to load)."""
    if os.environ.get("CESYNC_PARALLEL", "").lower() in OFF or count < THRESHOLD or other_threads():
        return False
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods() and cpus() >= 2


def run(
    items: list[T],
    work: Callable[[list[T]], list[R]],
    started: Callable[[], None] | None = None,
    *,
    later: list[Callable[[], None]] | None = None,
) -> list[R]:
    """work(items), every other item in a forked child when there are enough of them.

    started() is called once the child is forked: it may start a thread, and a process with
    threads is not to be forked (a lock one of them holds would stay held in the child).
    later: where to leave the receipt of the documents the child parsed, for the caller to call
    once it has let go of what it holds meanwhile (the parse cache, written): the two are never
    held at once. Called or not, the child ends with the process (it is a daemon)."""
    if not wanted(len(items)):
        if started is not None:
            started()
        return work(items)
    # Items spread evenly, not halves taken in a row: a repo's files come kind by kind, and some
    # kinds cost more than others (a toolset's OpenAPI document). Every other item, or a little more
    # for the child when this process runs a thread too (started: the app's read, decoding its pages).
    theirs_at = _spread(len(items), THREADED_SHARE if started is not None else 0.5)
    taken = set(theirs_at)
    mine_at = [i for i in range(len(items)) if i not in taken]
    mine, theirs = [items[i] for i in mine_at], [items[i] for i in theirs_at]
    # What this process holds now (the repo read) stays out of the collector's full passes from here
    # on, in this process and the child: each pass would walk all of it (a fifth of a cold render's
    # time on the 10k repo), and in the child copy every page it is on (a pass writes to each object).
    gc.freeze()
    import multiprocessing

    context = multiprocessing.get_context("fork")
    # A plain pipe, each answer pickled into it as it is made and unpickled from it as it comes: a
    # multiprocessing Connection holds a message's whole pickle on each side (90 MB of the 10k
    # repo's at the cache-filling plan's peak), and reads it into a buffer the size of what is left.
    read_end, write_end = (_above_stdio(fd) for fd in os.pipe())
    cache = parsecache.current()
    before = frozenset(cache.used) if cache is not None else frozenset()
    child = context.Process(target=_child, args=((read_end, write_end), work, theirs, before), daemon=True)
    # Ctrl-C waits while the child is made: the child ignores it once its code runs, but before that
    # (multiprocessing's own start) it would print a traceback to the terminal.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        child.start()
    except Exception as exc:  # no process to be had (a limit on processes or memory; a daemon process): one does it all
        log.debug("parallel: no second process (%s)", exc)
        os.close(read_end)
        os.close(write_end)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        if started is not None:
            started()
        return work(items)
    receiver = open(read_end, "rb")  # noqa: SIM115 - closed by _end, now or once the child's documents are taken
    got: tuple[list[R], dict[bytes, bytes], documents.Parsed | None] | None = None
    left_to_later = False  # the child's end, to come once its documents are taken
    try:
        os.close(write_end)  # the parent's copy: once the child is gone the receive ends, not waits
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # one that came meanwhile is raised here
        if started is not None:
            started()
        begun = time.perf_counter()
        out = work(mine)
        done = time.perf_counter()
        with contextlib.suppress(OSError, ValueError):
            select.select([receiver], [], [])  # the child's answer, or its end
        waited = time.perf_counter()
        got = _receive(receiver, len(theirs), docs=later is None)
        log.debug(
            "parallel: %d items here in %.2f s; waited %.2f s for the other %d, received in %.2f s",
            len(mine),
            done - begun,
            waited - done,
            len(theirs),
            time.perf_counter() - waited,
        )
        if got is not None:
            _, entries, parsed = got
            if cache is not None:
                cache.take(entries)
            if parsed is not None:
                documents.adopt(parsed)
            if later is not None:
                later.append(lambda: _adopt_then_end(receiver, child))
                left_to_later = True
    finally:
        if not left_to_later:  # whatever happened: the child is not left running, nor its pipe open
            _end(receiver, child, answered=got is not None)
    if got is None:
        log.debug("parallel: the second process gave no answer; its items are done here")
        return _placed(mine_at, out, theirs_at, work(theirs))
    return _placed(mine_at, out, theirs_at, got[0])


def _above_stdio(fd: int) -> int:
    """fd, moved above 0-2 when it is one of them (this process began with a standard stream
    closed): the child points those three at the null device, which would end its pipe."""
    if fd > 2:
        return fd
    import fcntl

    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return moved


def _end(receiver: BinaryIO, child: Any, *, answered: bool) -> None:
    receiver.close()
    if not answered and child.is_alive():
        child.terminate()  # interrupted, or its answer is not to be had: nothing more of it is wanted
    child.join(JOIN_SECONDS)
    if child.is_alive():
        child.kill()
        child.join()


def _adopt_then_end(receiver: BinaryIO, child: Any) -> None:
    """The documents the child parsed, taken (a lost or odd answer: they are parsed again when asked for)."""
    import pickle  # here and below, not at import: loaded for a repo that forks, not every validate

    collecting = gc.isenabled()
    gc.disable()
    parsed: Any = None
    try:
        parsed = pickle.load(receiver)
    except Exception as exc:
        log.debug("parallel: the second process's documents are lost (%s)", type(exc).__name__)
    finally:
        if collecting:
            gc.enable()
        _end(receiver, child, answered=parsed is not None)
    if isinstance(parsed, documents.Parsed):
        documents.adopt(parsed)


def _spread(count: int, share: float) -> list[int]:
    """The indices of share of count items, spread evenly (share 0.5: 1, 3, 5, ...)."""
    return [i for i in range(count) if int((i + 1) * share) > int(i * share)]


def _placed(mine_at: list[int], mine: list[R], theirs_at: list[int], theirs: list[R]) -> list[R]:
    """The items' results in the items' order, from those of the items at mine_at and at theirs_at."""
    out: list[Any] = [None] * (len(mine) + len(theirs))
    for i, r in zip(mine_at, mine, strict=True):
        out[i] = r
    for i, r in zip(theirs_at, theirs, strict=True):
        out[i] = r
    return out


def _receive(receiver: BinaryIO, count: int, *, docs: bool = True) -> Any:
    """The child's (results, parse cache entries, parsed documents), or None: it failed, or sent
    something else. docs=False: the documents are left in the pipe (None in their place)."""
    import pickle

    collecting = gc.isenabled()
    gc.disable()  # unpickling makes no garbage: a collection meanwhile would walk the whole heap for nothing
    try:  # a part the child could not finish has no end: it does not unpickle (EOFError, truncated)
        got = (pickle.load(receiver), pickle.load(receiver), pickle.load(receiver) if docs else None)
    except Exception as exc:  # gone, or an answer that does not unpickle
        log.debug("parallel: the second process's answer is lost (%s)", type(exc).__name__)
        return None
    finally:
        if collecting:
            gc.enable()
    if not (isinstance(got, tuple) and len(got) == 3 and isinstance(got[0], list) and len(got[0]) == count):
        return None
    if not (isinstance(got[1], dict) and (isinstance(got[2], documents.Parsed) or not docs)):
        return None
    return got


def _child(pipe: tuple[int, int], work: Callable[[list[T]], list[R]], items: list[T], before: frozenset[bytes]) -> None:
    """The forked child: work on items and send what it made. multiprocessing leaves a forked child
    through os._exit once this returns, so the parent's atexit handlers and finalizers (which
    write files) never run here."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the parent stops this one
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked by the parent for the fork: one pending is dropped
    os.close(pipe[0])  # the parent's end: with it gone, a write fails (EPIPE) rather than waits for a reader
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # Whatever is written here, a warning or a stream's buffer flushed at exit, is never seen: the
    # streams and the descriptors under them lead to the null device.
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the rest of the process
    os.dup2(sys.stdout.fileno(), 1)
    os.dup2(sys.stdout.fileno(), 2)
    logging.disable(logging.CRITICAL)
    documents.record()
    import multiprocessing

    parent = multiprocessing.parent_process()
    with contextlib.suppress(BaseException), open(pipe[1], "wb") as sender:  # any failure: the parent does these items itself
        out: list[R] = []
        for start in range(0, len(items), CHUNK):
            if parent is not None and not parent.is_alive():
                return  # the parent is gone: nobody wants the rest
            out += work(items[start : start + CHUNK])
        cache = parsecache.current()
        for part in (out, cache.since(before) if cache is not None else {}, documents.recorded()):
            _send(sender, part)


def _send(sender: BinaryIO, answer: Any) -> None:
    """One part, pickled into the pipe as it is made: one that fails half-way (a value that cannot
    be pickled) is cut off before its end, which the parent cannot unpickle."""
    import pickle

    pickle.dump(answer, sender, protocol=pickle.HIGHEST_PROTOCOL)
    sender.flush()

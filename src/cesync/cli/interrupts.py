"""Ctrl-C from the end of a command to the end of the process, and a Ctrl-C Python lost.

The command line's contract: Ctrl-C at any moment exits 130 with one line, never a
traceback and never death by SIGINT (-2). The commands handle the KeyboardInterrupt
(cli.handled); what is here covers the two places where Python, left alone, breaks that:
a KeyboardInterrupt raised where it cannot propagate, and the way out of the process.
Public interfaces only: signal, _thread.interrupt_main, sys.unraisablehook, the frame a
signal handler is given.
"""

from __future__ import annotations

import _thread
import contextlib
import queue
import signal
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

Handler = Callable[[int, FrameType | None], Any]


def no_lost_interrupt(hook: Callable[[Any], object]) -> Callable[[Any], object]:
    """sys.unraisablehook that hands a Ctrl-C lost in a callback back to the main thread.

    Python runs the SIGINT handler at whatever bytecode the main thread is at; inside a
    weakref callback (importlib's module locks have one, run at the end of every import)
    or a __del__, the KeyboardInterrupt cannot propagate: Python would print "Exception
    ignored ... KeyboardInterrupt" and go on as if no Ctrl-C had come. Here it is not
    printed, and the interrupt is raised again (_thread.interrupt_main, from a thread of
    its own: raised from the hook, it would come at the hook's next bytecode) with
    _HandBack as the SIGINT handler. _HandBack lets it through only once the main thread
    has left the hook (a KeyboardInterrupt raised inside the hook would be lost too), to
    the handler that was there before: Python's, which raises KeyboardInterrupt where the
    command handles it, or asyncio.run's, which cancels the command's task. Like any
    interrupt_main, it comes after the blocking call (a sleep, a lock) the main thread is in.
    """

    def unraisable(info: Any) -> object:
        if not isinstance(info.exc_value, KeyboardInterrupt):
            return hook(info)
        if threading.current_thread() is threading.main_thread():
            before = signal.getsignal(signal.SIGINT)
            if not callable(before):
                return None  # ignored (the command is over) or not Python's: nothing to hand it to
            if not isinstance(before, _HandBack):  # else one lost before is being handed back: one is enough
                signal.signal(signal.SIGINT, _HandBack(before, unraisable.__code__))
        _interrupt_main_soon()
        return None

    return unraisable


class _HandBack:
    """The SIGINT handler while a lost Ctrl-C is handed back (see no_lost_interrupt)."""

    def __init__(self, before: Handler, hook: CodeType) -> None:
        self.before, self.hook = before, hook

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if _runs(frame, self.hook):
            _interrupt_main_soon()  # still in the hook: again, later
            return
        signal.signal(signal.SIGINT, self.before)
        self.before(signum, frame)


def _runs(frame: FrameType | None, code: CodeType) -> bool:
    """Whether code is running in frame or one of its callers (a signal handler is given the
    frame the main thread was in)."""
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


_requests: queue.SimpleQueue[None] = queue.SimpleQueue()
_interrupter: list[threading.Thread] = []


def _interrupt_main_soon() -> None:
    """interrupt_main from another thread, which runs once the main thread lets it (a blocking
    call, or Python's switch interval). A SimpleQueue: put is one call into C, never a wait,
    so it can be interrupted only after it, and never holds a lock a handler would need."""
    if not _interrupter:
        _interrupter.append(threading.Thread(target=_interrupt_on_request, name="cesync-interrupt", daemon=True))
        _interrupter[0].start()
    _requests.put(None)


def _interrupt_on_request() -> None:
    while True:
        _requests.get()
        _thread.interrupt_main()


def ignore_interrupts(code: int | str | None, interrupted: bool, say: Callable[[str], None]) -> int | str | None:
    """SIGINT ignored to the end of the process; the exit code, 130 if a Ctrl-C came first.

    Called once the command has finished. The interpreter's shutdown then frees every object
    and runs the atexit handlers; a Ctrl-C meanwhile would be a KeyboardInterrupt with no one
    to handle it, or, after the shutdown has reset the Python handlers to the default, death
    by SIGINT. SIG_IGN is the one setting the shutdown keeps, and no process is started from
    here that could inherit it. A Ctrl-C that came before (interrupted, or still pending: the
    switch runs it first) ends the command as any other does: 130 and one line, said once.
    """
    if isinstance(signal.getsignal(signal.SIGINT), _HandBack):
        interrupted = True  # a lost one not yet handed back
    while True:
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            break
        except KeyboardInterrupt:
            interrupted = True
        except ValueError:  # not the main thread (a program that runs the command line in a thread)
            break
    if interrupted and code != 130:
        with contextlib.suppress(OSError):  # stderr is gone: the exit code still says it
            say("interrupted")
        return 130
    return code


def forget_unhandled_interrupt() -> None:
    """Clear CPython's note of a KeyboardInterrupt left unhandled by a code string it evaluated.

    When a KeyboardInterrupt leaves a string that CPython evaluates (exec or eval of a string,
    which dataclasses and namedtuple use to build their methods, or PyRun_* called by a C
    extension, as pyo3's eval in pydantic-core is), CPython notes it as unhandled even when
    a caller then handles it; under ``python -m`` the process then kills itself by SIGINT
    after its shutdown, whatever the exit code: a handled Ctrl-C (130), or a lost one handed
    back, would end as -2. CPython clears the note at the start of each such evaluation, so
    evaluating an empty string clears it. That is CPython's behaviour, not a documented one:
    tests/cli/test_interrupts.py runs the command line under ``python -m`` to see it hold.
    """
    exec("")

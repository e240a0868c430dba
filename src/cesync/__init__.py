"""cesync: manage Google Cloud Customer Engagement Suite (CES) apps as code."""

from __future__ import annotations

import os
import signal
import sys
from itertools import pairwise


def _version() -> str:
    """The version the build wrote (hatch-vcs, from the git tag): a module, not importlib.metadata,
    which costs every command's start-up; absent in a source tree never built or installed."""
    try:
        from ._version import __version__ as built  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        return "0+unknown"
    return str(built)


__version__ = _version()


def _interrupted_at_startup(signum: int, frame: object) -> None:
    os.write(2, b"interrupted\n")
    os._exit(130)


def guard_startup(*, cli: bool) -> object:
    """Make Ctrl-C during start-up (imports) exit 130 with one line; returns the handler to restore.

    Installed here, when the package loads, if the process is the command line (the
    ``cesync`` script or ``python -m cesync.cli``): between this package and ``cesync.cli``
    the interpreter would otherwise print a KeyboardInterrupt traceback. A program that
    imports cesync as a library keeps its own Ctrl-C.
    """
    if signal.getsignal(signal.SIGINT) is _interrupted_at_startup:
        return _before
    if not (cli or _is_the_command_line()):
        return None
    try:
        return signal.signal(signal.SIGINT, _interrupted_at_startup)
    except ValueError:  # imported outside the main thread: nothing to guard
        return None


def _is_the_command_line() -> bool:
    script = os.path.splitext(os.path.basename(sys.argv[0] if sys.argv else ""))[0]
    orig = list(getattr(sys, "orig_argv", []))
    return script == "cesync" or any(a == "-m" and b == "cesync.cli" for a, b in pairwise(orig))


def end_startup(before: object) -> None:
    """Start-up is over: from here a Ctrl-C is a KeyboardInterrupt that the commands handle."""
    if before is not None and signal.getsignal(signal.SIGINT) is _interrupted_at_startup:
        signal.signal(signal.SIGINT, before)  # type: ignore[arg-type]


_before = guard_startup(cli=False)

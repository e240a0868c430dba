"""What both modes of the runner do with processes: libc calls, dying with the parent, ending
like a waited-for child, counting a user's processes."""

import contextlib
import ctypes
import os
import signal
from typing import Any, NoReturn

PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 24, 36, 38
MAX_PROCESSES = 64  # on top of what the tool's user already runs (the kernel counts per user)


def load_libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def check(result: int, what: str) -> None:
    if result != 0:
        raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")


def die_with_parent(libc: Any) -> None:
    check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")


def exit_like(status: int, from_init: bool = False) -> NoReturn:
    """End this process the way the waited-for one ended (a signal stays a signal)."""
    code = os.waitstatus_to_exitcode(status)
    if from_init and 128 < code <= 128 + 64:
        code = 128 - code  # see namespaces._init
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code if code >= 0 else 1)


def processes_of(uid: int) -> int:
    count = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            with contextlib.suppress(OSError):
                if entry.name.isdigit() and entry.stat().st_uid == uid:
                    count += 1
    return count

"""What both modes of the runner do with processes: libc calls, dying with the parent, ending
like a waited-for child, counting a user's processes, a session keyring of its own."""

import contextlib
import ctypes
import errno
import os
import platform
import signal
from typing import Any, NoReturn

PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 24, 36, 38
MAX_PROCESSES = 64  # on top of what the tool's user already runs (the kernel counts per user)
# keyctl(2) has no glibc wrapper: the syscall's number per machine (the kernel's syscall tables).
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "ppc64le": 130, "s390x": 280, "i686": 288, "armv7l": 311}
KEYCTL_JOIN_SESSION_KEYRING = 1


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


def fresh_session_keyring(libc: Any) -> None:
    """Leave the caller's session keyring for a new, empty, anonymous one (keyctl(2)
    KEYCTL_JOIN_SESSION_KEYRING with no name), as a login does.

    The session keyring is inherited across fork and no namespace separates it: without this,
    tool code could search and read every key the process that ran cesync added to ``@s``
    (a CI job's or a developer's tokens). A kernel without keyrings (ENOSYS) has nothing to
    leave; any other failure stops the call, the tool unrun.
    """
    number = SYS_KEYCTL.get(platform.machine())
    if number is None:
        raise OSError(errno.ENOSYS, f"no keyctl syscall number known for {platform.machine()}: the tool is not run")
    if libc.syscall(number, KEYCTL_JOIN_SESSION_KEYRING, None) < 0 and ctypes.get_errno() != errno.ENOSYS:
        raise OSError(ctypes.get_errno(), f"cannot give the tool a session keyring of its own: {os.strerror(ctypes.get_errno())}")

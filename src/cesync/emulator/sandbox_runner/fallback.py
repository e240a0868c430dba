"""Where namespaces cannot be had (macOS, containers that forbid them) or the emulator asks for
it (``--fallback``), the code runs in this process with resource limits only, and the first
message says what is left open (``mode: fallback``)."""

import contextlib
import os
import signal
import sys
from typing import NoReturn

from .namespaces import CLONE_NEWNET
from .processes import MAX_PROCESSES, PR_SET_CHILD_SUBREAPER, check, exit_like, load_libc, processes_of
from .protocol import MEMORY, send
from .running import MAX_FILE_BYTES


def fallback(reason: str) -> int:
    network = False
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            network = load_libc().unshare(CLONE_NEWNET) == 0  # root can have this much even here
    root = os.geteuid() == 0
    open_ = ["other processes (their environment, signals)", "your files (read and write, as your user)"]
    if not network:
        open_.append("the network, loopback included, for code that goes around Python's socket module")
    # a call's memory is its cgroup's, or 128 MB of address space x 4 processes (emulator/sandbox.py):
    # as root outside a cgroup the kernel does not count the processes, so nothing holds the total
    unbounded = root and MEMORY.get("cgroup") != "joined"
    if root:
        open_.append(
            "the number of processes (the kernel does not count root's)"
            + (", and so a call's total memory: 128 MB each" if unbounded else "")
        )
    held = [
        "CPU time and the call's timeout",
        "memory, 128 MB a process" if unbounded else "memory, 512 MB a call (cesync -v says how it is held)",
        f"files written up to {MAX_FILE_BYTES // (1 << 20)} MB each",
        "Python's socket module (refused)" + ("; a network namespace: nothing reachable" if network else ""),
    ]
    if not root:
        held.append("processes: a fixed number beyond those your user already runs")
    if sys.platform.startswith("linux"):
        held.append("what the tool starts is killed at the end of the call (unless it kills this runner first)")
    send({"sandbox": {"mode": "fallback", "reason": reason, "open": open_, "held": held, "root": root, **MEMORY}})
    processes = processes_of(os.geteuid()) + MAX_PROCESSES
    if sys.platform.startswith("linux"):
        _supervise()
    return processes


def _supervise() -> None:
    """Linux without namespaces: stay as a subreaper while a worker runs the tool, so that what
    it started, even in a session of its own, comes back to us and dies at the end of the call
    or on SIGTERM (the emulator's timeout). Best effort: the tool runs as the same user and
    can kill this process first. Returns in the worker only."""
    check(load_libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "subreaper")
    worker = os.fork()
    if worker == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        return
    signal.signal(signal.SIGTERM, lambda *_: _sweep(int(signal.SIGKILL)))  # end as if killed
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)
        if pid == worker:
            _sweep(status)


def _parent_of(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])  # after the command name, which may hold anything
    except (OSError, IndexError, ValueError):
        return None


def _sweep(status: int) -> NoReturn:
    """Kill every child (orphans of the tool's processes are ours), again as their own orphans arrive."""
    me = os.getpid()
    for _ in range(1000):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit() and _parent_of(entry.name) == me:
                with contextlib.suppress(OSError):
                    os.kill(int(entry.name), signal.SIGKILL)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            break
    exit_like(status)

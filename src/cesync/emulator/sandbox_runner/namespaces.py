"""Isolation on Linux (``mode: namespaces``).

The process the emulator starts (the outer runner) forks a child that unshares user, PID,
network, mount, IPC and UTS namespaces; the outer runner maps the child's ids (root becomes
``nobody``, anyone else stays themselves); the child forks PID 1 of the new PID namespace.
PID 1 builds a root of its own (a tmpfs holding read-only binds of the system's and the
interpreter's folders, a few devices, its own /proc and an empty /tmp), pivots into it, drops
every capability and forks the worker that runs the code; PID 1 itself only reaps, and ends
with the worker. When PID 1 ends, however it ends, the kernel kills every process left in its
namespace; the emulator kills PID 1 at timeout, and each process of the chain dies with its
parent (``PR_SET_PDEATHSIG``), so a killed cesync takes its tool along.
"""

import contextlib
import ctypes
import os
import platform
import signal
import sys
from typing import Any, NoReturn

from .processes import (
    MAX_PROCESSES,
    PR_CAPBSET_DROP,
    PR_SET_NO_NEW_PRIVS,
    check,
    die_with_parent,
    exit_like,
    load_libc,
    processes_of,
)
from .protocol import MEMORY, send

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
NAMESPACES = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE, MS_RELATIME = 1024, 2048, 4096, 8192, 16384, 1 << 18, 1 << 21
MNT_DETACH = 2
# statvfs f_flag bit -> mount flag: a bind mount in a user namespace must keep these when remounted.
LOCKED_FLAGS = {1: MS_RDONLY, 2: MS_NOSUID, 4: MS_NODEV, 8: MS_NOEXEC, 1024: MS_NOATIME, 2048: MS_NODIRATIME, 4096: MS_RELATIME}
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
NOBODY = 65534
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
DEVICES = ("null", "zero", "full", "random", "urandom")
TMP_SIZE = "64m"


class NotIsolated(Exception):
    """Namespaces are not available here; the message says why."""


def isolate() -> int:
    """Returns in PID 1 of the new namespaces only, with the process limit to set; raises NotIsolated in this process."""
    if not sys.platform.startswith("linux"):
        raise NotIsolated(f"{sys.platform} has no Linux namespaces")
    uid, gid = os.geteuid(), os.getegid()
    inner_uid, inner_gid = (NOBODY, NOBODY) if uid == 0 else (uid, gid)
    if uid == 0:
        with contextlib.suppress(OSError):  # refused to root of a user namespace that lacks CAP_SETGID
            os.setgroups([])  # root's groups would follow the tool into the namespace
    nproc = processes_of(inner_uid) + MAX_PROCESSES
    status_r, status_w = os.pipe()
    go_r, go_w = os.pipe()
    libc = load_libc()
    outer = os.getpid()
    child = os.fork()
    if child == 0:
        os.close(status_r)
        os.close(go_w)
        die_with_parent(libc)
        if os.getppid() != outer:
            os._exit(1)
        _middle(status_w, go_r)
        return nproc
    os.close(status_w)
    os.close(go_r)
    with os.fdopen(status_r) as status:
        first = status.readline().strip()
        if first == "unshared":
            try:
                _write_maps(child, (inner_uid, uid), (inner_gid, gid))
            except OSError as exc:
                first = f"cannot map user ids ({exc.strerror})"
            else:
                os.write(go_w, b"1")
        os.close(go_w)
        lines = [first, *status.read().splitlines()]
    pid = next((int(line[4:]) for line in lines if line.startswith("pid ")), None)
    if pid is None or "ready" not in lines:
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        reasons = [line for line in lines if line and line not in ("unshared", "ready") and not line.startswith("pid ")]
        raise NotIsolated(reasons[0] if reasons else "the namespace setup died")
    send({"sandbox": {"mode": "namespaces", "pid": pid, **MEMORY}})
    exit_like(os.waitpid(child, 0)[1])


def _write_maps(child: int, uids: tuple[int, int], gids: tuple[int, int]) -> None:
    """Map root of the child's namespace to the first host id the kernel accepts (``nobody`` needs
    a root that owns it: root of a container may not, and then keeps its own id)."""
    with open(f"/proc/{child}/setgroups", "w") as f:
        f.write("deny")
    for name, ids in (("uid_map", uids), ("gid_map", gids)):
        for i, host_id in enumerate(ids):
            try:
                with open(f"/proc/{child}/{name}", "w") as f:
                    f.write(f"0 {host_id} 1\n")
                break
            except OSError:
                if i == len(ids) - 1:
                    raise


def _middle(status_w: int, go_r: int) -> None:
    """Unshares, waits for its id maps, forks PID 1 and waits for it. Returns in PID 1 only."""
    try:
        libc = load_libc()
        if libc.unshare(NAMESPACES) != 0:
            os.write(status_w, f"unshare: {os.strerror(ctypes.get_errno())}\n".encode())
            os._exit(0)
        os.write(status_w, b"unshared\n")
        if os.read(go_r, 1) != b"1":
            os._exit(0)
        os.close(go_r)
        pid = os.fork()
        if pid == 0:
            try:
                _enter(libc)
                die_with_parent(libc)  # after _enter: a change of user clears it
                worker = os.fork()
            except OSError as exc:
                os.write(status_w, f"{exc.strerror or exc}\n".encode())
                os._exit(1)
            if worker == 0:
                os.close(status_w)
                return
            os.write(status_w, b"ready\n")
            os.close(status_w)
            _init(worker)
        os.write(status_w, f"pid {pid}\n".encode())
        os.close(status_w)
        status = os.waitpid(pid, 0)[1]
    except BaseException:
        os._exit(1)
    exit_like(status, from_init=True)


def _init(worker: int) -> NoReturn:
    """PID 1 runs no tool code: it reaps, and ends with the worker (the kernel then kills the rest).

    Nothing in the namespace can signal it (init ignores signals it has no handler for) and
    nobody can trace it, so the tool cannot keep its namespace alive. Init cannot die of a
    signal either: a worker killed by signal N is reported as exit status 128 + N.
    """
    os.close(0)
    os.close(1)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(1)
        if pid == worker:
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)


def _mount(libc: Any, source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(text: str | None) -> bytes | None:
        return text.encode() if text is not None else None

    check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def _enter(libc: Any) -> None:
    """PID 1: become the namespace's root, build and enter a root of our own, drop capabilities."""
    links, dirs = _exposures()
    os.setresgid(0, 0, 0)
    os.setresuid(0, 0, 0)
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)  # nothing we mount leaks out, nothing leaks in
    root = os.getcwd()  # the emulator's empty scratch folder, now covered by a tmpfs
    _mount(libc, "tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    for path, target in links:
        os.makedirs(root + os.path.dirname(path), exist_ok=True)
        os.symlink(target, root + path)
    for path, fd in dirs.items():
        _bind_read_only(libc, fd, root + path)
        os.close(fd)  # a handle on a host folder would lead out of the new root
    os.mkdir(root + "/dev")
    for name in DEVICES:
        with open(f"{root}/dev/{name}", "w"):
            pass
        _mount(libc, f"/dev/{name}", f"{root}/dev/{name}", None, MS_BIND)
    os.mkdir(root + "/tmp")
    _mount(libc, "tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={TMP_SIZE},mode=1777")
    os.mkdir(root + "/proc")
    with contextlib.suppress(OSError):  # refused where the host's /proc is partly masked: then there is none
        _mount(libc, "proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _no_nested_user_namespaces(root)
    os.chdir(root)
    number = SYS_PIVOT_ROOT.get(platform.machine())
    if number is not None:
        check(libc.syscall(number, b".", b"."), "pivot_root")
        check(libc.umount2(b".", MNT_DETACH), "umount old root")  # the old root sat on top of the new one
    else:
        _mount(libc, root, "/", None, MS_MOVE)
        os.chroot(".")
    os.chdir("/")
    _mount(libc, None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chdir("/tmp")
    _drop_capabilities(libc)


def _no_nested_user_namespaces(root: str) -> None:
    """The limit belongs to our user namespace: 0 means tool code cannot make one of its own
    (where it would hold every capability: the kernel surface most escapes need)."""
    with contextlib.suppress(OSError), open(root + "/proc/sys/user/max_user_namespaces", "w") as limit:
        limit.write("0")


def _exposures() -> tuple[list[tuple[str, str]], dict[str, int]]:
    """The system's and the interpreter's folders: symlinks to copy, and folders opened now, while
    we are still the host's user (``nobody`` cannot pass through root's 0700 home, where pyenv lives)."""
    interpreter = (sys.base_prefix, sys.base_exec_prefix, os.path.dirname(os.path.realpath(sys.executable)))
    links: list[tuple[str, str]] = []
    dirs: dict[str, int] = {}
    for path in (*SYSTEM_DIRS, *interpreter):
        if os.path.islink(path):
            links.append((path, os.readlink(path)))
            path = os.path.realpath(path)
        covered = any(path == d or path.startswith(d.rstrip("/") + "/") for d in dirs)
        if os.path.isdir(path) and not covered:
            dirs[path] = os.open(path, os.O_PATH | os.O_DIRECTORY)
    return links, dirs


def _bind_read_only(libc: Any, fd: int, target: str) -> None:
    os.makedirs(target, exist_ok=True)
    _mount(libc, f"/proc/self/fd/{fd}", target, None, MS_BIND)
    flags = os.fstatvfs(fd).f_flag
    locked = 0
    for bit, flag in LOCKED_FLAGS.items():
        if flags & bit:
            locked |= flag
    _mount(libc, None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | locked)


def _drop_capabilities(libc: Any) -> None:
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # past the last capability this fails: fine
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    check(libc.capset(header, (ctypes.c_uint32 * 6)()), "capset")

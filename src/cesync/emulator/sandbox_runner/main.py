"""The runner's start: join the call's cgroup, isolate (or fall back), read the request, run it."""

import contextlib
import json
import os
import sys

from .fallback import fallback
from .namespaces import NotIsolated, isolate
from .processes import die_with_parent, fresh_session_keyring, load_libc
from .protocol import MEMORY
from .running import run


def _join_cgroup() -> None:
    """--cgroup DIR: move this process into the call's memory cgroup before anything forks, so
    that every process of the call is counted together (the kernel holds the sum to its limit)."""
    args = sys.argv[1:]
    if "--cgroup" not in args:
        return
    path = args[args.index("--cgroup") + 1]
    try:
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        MEMORY["cgroup"] = "joined"
    except (OSError, IndexError) as exc:
        MEMORY["cgroup"] = f"cannot join {path}: {getattr(exc, 'strerror', None) or exc}"


def _forget_the_runner() -> None:
    """Out of sys.modules, so that the tool's ``import sandbox_runner`` fails as it would in CES
    (the runner's functions keep their modules' globals, so nothing here needs the entries)."""
    package = __name__.rpartition(".")[0]
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]


def main() -> None:
    if sys.platform.startswith("linux"):
        # A killed cesync takes its tool along: each process of the chain dies with its parent.
        with contextlib.suppress(OSError):
            die_with_parent(load_libc())
    _join_cgroup()
    if "--fallback" in sys.argv[1:]:
        processes = fallback("the emulator was asked for it with CESYNC_SANDBOX=fallback")
    else:
        try:
            processes = isolate()
        except NotIsolated as exc:
            processes = fallback(str(exc))
    if sys.platform.startswith("linux"):
        fresh_session_keyring(load_libc())  # in the worker, either mode: the keys of @s stay outside
    request = json.loads(sys.stdin.readline())
    _forget_the_runner()
    run(request, processes)

"""Run a command and report its own peak memory and CPU: a small process between the benchmark and it.

    python benchmarks/launch.py OUT.json CMD ARGS...

On Linux a process forked from a larger one starts with that process's peak resident set
(ru_maxrss survives fork and exec), so a command started straight from the benchmark would
report the benchmark's own size if that were larger. Started from this launcher (a fresh
interpreter of a few MB, that loads nothing else), the peak is the command's. OUT.json gets
``{"seconds", "rss_mb", "cpu", "code"}``: wall time from spawn to exit, the command's peak RSS
(its own, from wait4; a child it forks is a process of its own), user + system CPU of the
command and everything it waited for. The command's standard streams are this process's.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time


def main() -> None:
    out, cmd = sys.argv[1], sys.argv[2:]
    start = time.perf_counter()
    pid = os.posix_spawnp(cmd[0], cmd, os.environ)
    _, status, usage = os.wait4(pid, 0)
    seconds = time.perf_counter() - start
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = {
        "seconds": seconds,
        "rss_mb": usage.ru_maxrss / 1024,  # KiB on Linux
        "cpu": children.ru_utime + children.ru_stime,
        "code": os.waitstatus_to_exitcode(status),
    }
    with open(out, "w") as f:
        json.dump(result, f)
    sys.exit(0)


if __name__ == "__main__":
    main()

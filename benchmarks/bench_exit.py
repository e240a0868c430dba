"""The exit path side by side: `cesync validate` of a generated repo leaving as the command does
(cli.run: atexit handlers, a flush, os._exit) and leaving through the interpreter's own shutdown
(click's main, then the objects freed one by one). Alternating runs, user and system CPU from
wait4 (steadier than wall time on a shared machine) and wall time, medians.

    python benchmarks/bench_exit.py --n 1000 --repeats 7
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from generate import generate

PATHS = {
    "os._exit (cli.run)": [sys.executable, "-m", "cesync.cli"],
    "interpreter shutdown": [sys.executable, "-c", "import sys; from cesync.cli import main; sys.argv[0] = 'cesync'; main()"],
}


def once(command: list[str], root: Path) -> tuple[float, float]:
    started = time.perf_counter()
    proc = subprocess.Popen([*command, "validate", "--dir", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "validate failed"
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = generate(Path(tmp) / "repo", args.n)
        once(PATHS["os._exit (cli.run)"], root)  # the parse cache filled, as in every later run
        runs: dict[str, list[tuple[float, float]]] = {k: [] for k in PATHS}
        for _ in range(args.repeats):
            for name, command in PATHS.items():
                runs[name].append(once(command, root))
    for name, measured in runs.items():
        wall = statistics.median(w for w, _ in measured)
        cpu = statistics.median(c for _, c in measured)
        print(f"{name:22} wall {wall:.3f} s  cpu {cpu:.3f} s  ({len(measured)} runs, {args.n} files)")


if __name__ == "__main__":
    main()

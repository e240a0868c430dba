"""What users wait for: the real `cesync` command, whole process, on realistic repos.

    python benchmarks/bench.py                     # 100 and 1,000 tools, 3 repeats
    python benchmarks/bench.py --sizes 100,1000,10000
    python benchmarks/bench.py --sizes 1000,10000 --only plan   # the growth targets alone

For each size a repo is generated (benchmarks/generate.py), the emulator runs in its
own process (`cesync emulator --latency-ms 20`), and every measure is the median of
--repeats runs of a child process: wall time from start to exit, and the child's peak
resident memory (wait4 rusage). The official-client baselines (benchmarks/official.py)
run in the same session against the same emulator. Each target prints as PASS or FAIL;
the exit status is 1 if any failed. ``--only`` runs some measures (help, validate, plan,
apply, official); targets whose measures did not run are not printed.

cesync's modules are compiled to bytecode first, as installing a wheel does: with
PYTHONDONTWRITEBYTECODE set (CI images often set it) an editable install would otherwise
compile every module again in every run, which no installed cesync does.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from generate import ENVIRONMENTS, generate

HERE = Path(__file__).parent
BIN = Path(sys.executable).parent
CESYNC = [str(BIN / "cesync")] if (BIN / "cesync").exists() else [sys.executable, "-m", "cesync.cli"]
ENV = "dev"
PARENT = f"projects/bench/locations/us/apps/bench-{ENV}"


@dataclass
class Run:
    seconds: float
    rss_mb: float
    stdout: str
    cpu: float = 0.0  # the child's user + system CPU seconds: what load on the machine cannot inflate much
    server_cpu: float = 0.0  # the emulator's CPU seconds during the run (it shares the machine's cores)
    started_at: float = 0.0  # epoch seconds at spawn (to place the emulator's write times, /admin/stats)
    first_write: float = 0.0  # seconds from spawn to the first write's arrival (apply)
    writes: float = 0.0  # seconds from the first write's arrival to the last write's answer (apply)


@dataclass
class Measure:
    runs: list[Run] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return statistics.median(r.seconds for r in self.runs)

    @property
    def rss_mb(self) -> float:
        return statistics.median(r.rss_mb for r in self.runs)

    def spread(self) -> str:
        times = sorted(r.seconds for r in self.runs)
        cpu = statistics.median(r.cpu for r in self.runs)
        server = statistics.median(r.server_cpu for r in self.runs)
        emulator = f"; emulator CPU {server:.2f} s" if server else ""
        writes = ""
        if all(r.writes for r in self.runs):
            first, span = statistics.median(r.first_write for r in self.runs), statistics.median(r.writes for r in self.runs)
            writes = f"\n{'':34}first write at {first:.2f} s, writes for {span:.2f} s (medians)"
        return (
            f"{self.seconds:7.2f} s  (runs {', '.join(f'{t:.2f}' for t in times)}; CPU {cpu:.2f} s{emulator};"
            f" peak RSS {self.rss_mb:.0f} MB){writes}"
        )


def run(cmd: list[str], *, ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None, server: Emulator | None = None) -> Run:
    """One child process: wall time from spawn to exit, its peak RSS (wait4), its stdout."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        server_start = server.cpu() if server else 0.0
        started_at = time.time()
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{stderr[-3000:]}")
    server_cpu = server.cpu() - server_start if server else 0.0
    return Run(elapsed, usage.ru_maxrss / 1024, stdout, usage.ru_utime + usage.ru_stime, server_cpu, started_at)  # ru_maxrss: KiB


def repeat(cmd: list[str], times: int, **kw: object) -> Measure:
    return Measure([run(cmd, **kw) for _ in range(times)])  # type: ignore[arg-type]


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a running process (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Emulator:
    url: str
    pid: int

    def cpu(self) -> float:
        return process_cpu(self.pid)


@contextlib.contextmanager
def emulator(latency_ms: float) -> Iterator[Emulator]:
    """`cesync emulator` in its own process, in memory, with a fixed latency per API call."""
    port = free_port()
    proc = subprocess.Popen(
        [*CESYNC, "emulator", "--port", str(port), "--latency-ms", str(latency_ms), "--auto-create-apps"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("the emulator did not start") from None
                time.sleep(0.05)
        yield Emulator(url, proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def set_latency(url: str, latency_ms: float) -> None:
    request = urllib.request.Request(
        f"{url}/admin/faults",
        data=json.dumps({"latency_ms": latency_ms}).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    urllib.request.urlopen(request, timeout=10).read()


def write_stats(url: str) -> dict[str, float]:
    """The emulator's write timings (/admin/stats): when the first write came, when the last was answered."""
    with urllib.request.urlopen(f"{url}/admin/stats", timeout=10) as answer:
        return dict(json.loads(answer.read()))


def official(mode: str, url: str, *extra: str) -> float:
    result = run([sys.executable, str(HERE / "official.py"), mode, url, PARENT, *extra])
    return float(json.loads(result.stdout)["seconds"])


def rendered_bodies(root: Path, path: Path) -> None:
    """What apply sends, for the official-client script (made here, outside every clock)."""
    from cesync.repo.repo import load_repo

    repo = load_repo(root)
    path.write_text(json.dumps([[d.id, d.body] for d in repo.render(repo.env(ENV)) if d.kind == "tool"]))


@dataclass
class Results:
    sizes: dict[int, dict[str, float]] = field(default_factory=dict)
    help_s: float = 0.0


def bench_size(n: int, opts: argparse.Namespace, work: Path) -> dict[str, float]:
    root = generate(work / f"repo{n}", n)
    r: dict[str, float] = {}
    print(f"\n== {n} tools ({root}) ==", flush=True)
    baselines = "official" in opts.only and n <= opts.baseline_max

    if "validate" in opts.only:
        one = repeat([*CESYNC, "validate", "--dir", str(root), "--env", ENV], opts.repeats)
        every = repeat([*CESYNC, "validate", "--dir", str(root)], opts.repeats)
        print(f"validate, 1 environment          {one.spread()}")
        print(f"validate, {len(ENVIRONMENTS)} environments         {every.spread()}", flush=True)
        r["validate"], r["validate_all"] = one.seconds, every.seconds

    endpoint = ["--dir", str(root), "--env", ENV, "--endpoint"]
    if "plan" in opts.only or baselines:
        with emulator(0) as emu:
            run([*CESYNC, "apply", *endpoint, emu.url, "--auto-approve", "--parallelism", "32", "--format", "json"])
            set_latency(emu.url, opts.latency_ms)
            if "plan" in opts.only:
                plan = repeat([*CESYNC, "plan", *endpoint, emu.url, "--detailed-exitcode"], opts.repeats, server=emu)
                r["plan"], r["plan_rss"] = plan.seconds, plan.rss_mb
                print(f"plan, unchanged                  {plan.spread()}", flush=True)
            if baselines:
                lists = [official("list", emu.url) for _ in range(opts.repeats)]
                r["official_list"] = statistics.median(lists)
                print(f"  official client, list only     {r['official_list']:7.2f} s", flush=True)
                gets = [official("get", emu.url) for _ in range(opts.repeats)]
                r["official_get"] = statistics.median(gets)
                print(
                    f"  official client, GET per tool  {r['official_get']:7.2f} s  (runs {', '.join(f'{t:.2f}' for t in sorted(gets))})"
                )

    if "apply" in opts.only and n <= opts.apply_max:
        apply_runs = []
        for _ in range(opts.repeats):
            with emulator(opts.latency_ms) as emu:
                cmd = [*CESYNC, "apply", *endpoint, emu.url, "--auto-approve", "--parallelism", str(opts.parallelism)]
                done = run(cmd, server=emu)
                stats = write_stats(emu.url)
                if stats["writes"]:
                    done.first_write = stats["firstWriteAt"] - done.started_at
                    done.writes = stats["lastWriteDoneAt"] - stats["firstWriteAt"]
                apply_runs.append(done)
        apply = Measure(apply_runs)
        r["apply"], r["apply_rss"] = apply.seconds, apply.rss_mb
        if all(x.writes for x in apply.runs):
            r["apply_first_write"] = statistics.median(x.first_write for x in apply.runs)
            r["apply_writes"] = statistics.median(x.writes for x in apply.runs)
        print(f"apply, {n} creates, -p {opts.parallelism:<3}      {apply.spread()}", flush=True)
    if baselines and n <= opts.apply_max:
        bodies = work / f"bodies{n}.json"
        rendered_bodies(root, bodies)
        creates = []
        for _ in range(opts.repeats):
            with emulator(opts.latency_ms) as emu:
                creates.append(official("create", emu.url, str(bodies)))
        r["official_create"] = statistics.median(creates)
        print(
            f"  official client, sequential    {r['official_create']:7.2f} s  (runs {', '.join(f'{t:.2f}' for t in sorted(creates))})"
        )
    return r


class Targets:
    def __init__(self) -> None:
        self.failed = 0

    def check(self, what: str, value: float, target: str, ok: bool) -> None:
        self.failed += not ok
        print(f"  {'PASS' if ok else 'FAIL'}  {what:<46} {value:8.2f}  target {target}")


def report(results: Results, opts: argparse.Namespace) -> int:
    print("\n== targets ==")
    t = Targets()
    if results.help_s:
        t.check("cesync --help (s)", results.help_s, "<= 0.15", results.help_s <= 0.15)
    k = results.sizes.get(1000, {})
    if "plan" in k:
        t.check("plan 1,000 unchanged (s)", k["plan"], "<= 1.5", k["plan"] <= 1.5)
        if "official_get" in k:
            t.check(
                "plan vs official GET per tool (x faster)",
                k["official_get"] / k["plan"],
                ">= 10",
                k["official_get"] / k["plan"] >= 10,
            )
    if "apply" in k:
        ideal = 1000 * opts.latency_ms / 1000 / opts.parallelism
        if "official_create" in k:
            speed = k["official_create"] / k["apply"]
            t.check(f"apply 1,000 -p {opts.parallelism} vs official sequential (x)", speed, ">= 8", speed >= 8)
        t.check(
            f"apply 1,000 / ideal {ideal:.2f} s (N x RTT / {opts.parallelism})",
            k["apply"] / ideal,
            "<= 1.5",
            k["apply"] / ideal <= 1.5,
        )
        if "apply_writes" in k:  # no target of its own: where the whole command's time goes (README, Performance)
            what = "apply's writes alone / ideal (x)"
            print(f"  info  {what:<46} {k['apply_writes'] / ideal:8.2f}  first write {k['apply_first_write']:.2f} s after start")
    if "validate" in k:
        t.check("validate 1,000 files (s)", k["validate"], "<= 2", k["validate"] <= 2)
        ratio = k["validate_all"] / k["validate"]
        t.check(f"validate {len(ENVIRONMENTS)} environments / 1 (x)", ratio, "<= 2", ratio <= 2)
    big = results.sizes.get(10000, {})
    if "plan" in big:
        if "plan" in k:
            growth = big["plan"] / k["plan"]
            t.check("plan 10,000 / plan 1,000 (x)", growth, "<= 12", growth <= 12)
        t.check("plan 10,000 peak RSS (MB)", big["plan_rss"], "<= 300", big["plan_rss"] <= 300)
    print(f"{'all targets met' if not t.failed else f'{t.failed} target(s) missed'}")
    return 1 if t.failed else 0


MEASURES = ("help", "validate", "plan", "apply", "official")


def compile_cesync() -> None:
    """Bytecode for every cesync module, as a wheel install leaves it (see the module docstring)."""
    import cesync

    for folder in cesync.__path__:
        compileall.compile_dir(folder, quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,1000", help="Comma-separated repo sizes (add 10000 for the growth targets).")
    parser.add_argument("--repeats", type=int, default=3, help="Runs per measure; the median counts.")
    parser.add_argument("--latency-ms", type=float, default=20.0, help="Emulator latency per API call.")
    parser.add_argument("--parallelism", type=int, default=16)
    parser.add_argument("--baseline-max", type=int, default=1000, help="Run the official-client baselines up to this size.")
    parser.add_argument("--apply-max", type=int, default=1000, help="Measure apply up to this size (no target above 1,000).")
    parser.add_argument("--only", default=",".join(MEASURES), help=f"Comma-separated measures to run, of: {', '.join(MEASURES)}.")
    opts = parser.parse_args()
    opts.repeats = max(3, opts.repeats)
    opts.only = {m.strip() for m in opts.only.split(",") if m.strip()}
    if not opts.only <= set(MEASURES):
        parser.error(f"--only: unknown measure(s) {', '.join(sorted(opts.only - set(MEASURES)))}; known: {', '.join(MEASURES)}")
    compile_cesync()
    print(f"cesync benchmark: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, python {sys.version.split()[0]}")
    results = Results()
    if "help" in opts.only:
        helps = repeat([*CESYNC, "--help"], max(5, opts.repeats))
        results.help_s = helps.seconds
        print(f"cesync --help                    {helps.spread()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="cesync-bench-") as tmp:
        for n in sorted(int(s) for s in opts.sizes.split(",")):
            results.sizes[n] = bench_size(n, opts, Path(tmp))
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")
    sys.exit(report(results, opts))


if __name__ == "__main__":
    main()

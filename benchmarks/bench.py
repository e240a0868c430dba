"""What users wait for: the real `cesync` command, whole process, on realistic repos.

    python benchmarks/bench.py                     # 100 and 1,000 tools
    python benchmarks/bench.py --quota 600         # CES's default quota (slow by design: 100 s per 1,000 writes)
    python benchmarks/bench.py --sizes 1000,10000 --only plan   # the growth targets alone

For each size a repo is generated (benchmarks/generate.py) and the emulator runs in its
own process (`cesync emulator --latency-ms 20`). plan and validate are the median of
--repeats runs of a child process: wall time from start to exit, and the child's peak
resident memory (wait4 rusage); the official-client baselines (benchmarks/official.py)
run in the same session against the same emulator. apply runs against an emulator that
enforces the quota (`--quota-writes-per-minute Q --quota-reads-per-minute Q`), once per
scenario: told the quota (cesync.yaml `quota:`), two applies of N/2 in one project at
once (both told), and not told. Each is held to N/Q plus the time of a plan of the same
creates (the part of the command before its first write), and the quota's 429s are
counted (/admin/stats). Each target prints as PASS or FAIL; the exit status is 1 if any
failed. ``--only`` runs some measures (help, validate, plan, apply, official); targets
whose measures did not run are not printed.

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
from typing import Any

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
        return (
            f"{self.seconds:7.2f} s  (runs {', '.join(f'{t:.2f}' for t in times)}; CPU {cpu:.2f} s{emulator};"
            f" peak RSS {self.rss_mb:.0f} MB)"
        )


def run(cmd: list[str], *, ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None, server: Emulator | None = None) -> Run:
    """One child process: wall time from spawn to exit, its peak RSS (wait4), its stdout."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        server_start = server.cpu() if server else 0.0
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
    return Run(elapsed, usage.ru_maxrss / 1024, stdout, usage.ru_utime + usage.ru_stime, server_cpu)  # ru_maxrss: KiB


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
def emulator(latency_ms: float, quota: int = 0) -> Iterator[Emulator]:
    """`cesync emulator` in its own process, in memory, with a fixed latency per API call and, given
    one, a quota of writes and of reads a minute (per project and location, as CES meters them)."""
    port = free_port()
    quotas = ["--quota-writes-per-minute", str(quota), "--quota-reads-per-minute", str(quota)] if quota else []
    proc = subprocess.Popen(
        [*CESYNC, "emulator", "--port", str(port), "--latency-ms", str(latency_ms), "--auto-create-apps", "--admin", *quotas],
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


def write_stats(url: str) -> dict[str, Any]:
    """The emulator's /admin/stats: writes, and the writes and reads refused over quota."""
    with urllib.request.urlopen(f"{url}/admin/stats", timeout=10) as answer:
        return dict(json.loads(answer.read()))


def official(mode: str, url: str, *extra: str) -> float:
    result = run([sys.executable, str(HERE / "official.py"), mode, url, PARENT, *extra])
    return float(json.loads(result.stdout)["seconds"])


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
                    f"  official client, GET per resource {r['official_get']:7.2f} s  (runs {', '.join(f'{t:.2f}' for t in sorted(gets))})"
                )

    if "apply" in opts.only and n <= opts.apply_max:
        r.update(bench_apply(n, opts, work, root))
    return r


def tell_quota(root: Path, per_minute: int, app: str | None = None) -> None:
    """The dev environment told the quota (cesync.yaml ``quota:``), and moved to another app of the project."""
    config = root / "cesync.yaml"
    text = config.read_text()
    block = f"  {ENV}:\n    app: bench-{ENV}\n"
    assert block in text
    told = f"    quota: {{writesPerMinute: {per_minute}, readsPerMinute: {per_minute}}}\n" if per_minute else ""
    config.write_text(text.replace(block, f"  {ENV}:\n    app: {app or f'bench-{ENV}'}\n{told}"))


@dataclass
class Applied:
    seconds: float
    code: int
    summary: str
    retries: int  # lines announcing a retry of a transient error (quota refusals are paced, not retried)


def applies(roots: list[Path], url: str) -> list[Applied]:
    """Each repo's `cesync apply` at once, against one emulator: wall time from spawn to exit, each."""
    with contextlib.ExitStack() as files:
        procs = []
        for root in roots:
            cmd = [*CESYNC, "apply", "--dir", str(root), "--env", ENV, "--endpoint", url, "--auto-approve"]
            out, err = files.enter_context(tempfile.TemporaryFile()), files.enter_context(tempfile.TemporaryFile())
            start = time.perf_counter()
            procs.append((start, subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL), out, err))
        ran = []
        for start, proc, out, err in procs:
            code = proc.wait()
            elapsed = time.perf_counter() - start
            out.seek(0)
            err.seek(0)
            ran.append((elapsed, code, out.read().decode(), err.read().decode()))
    done = []
    for elapsed, code, stdout, stderr in ran:
        summary = next((line for line in reversed(stdout.splitlines()) if line.startswith(("Apply:", "Interrupted:"))), "")
        if code and not summary:
            summary = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit {code}"
        retries = sum(1 for line in stderr.splitlines() if line.startswith("retry "))
        done.append(Applied(elapsed, code, summary, retries))
    return done


def bench_apply(n: int, opts: argparse.Namespace, work: Path, root: Path) -> dict[str, float]:
    """apply at the quota: told it, two at once in one project, not told; each held to N/Q + plan time."""
    q = opts.quota
    r: dict[str, float] = {"ideal": n / q * 60}
    told = generate(work / f"told{n}", n)
    tell_quota(told, q)
    with emulator(opts.latency_ms, q) as emu:  # the part of apply before its first write: a plan of the creates
        plans = repeat([*CESYNC, "plan", "--dir", str(told), "--env", ENV, "--endpoint", emu.url], opts.repeats)
    r["plan_creates"] = plans.seconds
    print(f"plan, {n} creates (quota {q}/min)     {plans.spread()}", flush=True)
    halves = [generate(work / f"half{n}{x}", n // 2) for x in "ab"]
    for x, half in zip("ab", halves, strict=True):
        tell_quota(half, q, app=f"bench-{ENV}-{x}")  # two apps, one project: one quota
    untold = generate(work / f"untold{n}", n)
    for name, roots in (("told", [told]), ("two", halves), ("untold", [untold])):
        with emulator(opts.latency_ms, q) as emu:
            ran = applies(roots, emu.url)
            stats = write_stats(emu.url)
        refused = int(stats.get("quotaRefused", {}).get("writes", 0))
        slowest = max(a.seconds for a in ran)
        r[f"{name}_s"] = slowest
        r[f"{name}_ok"] = float(all(a.code == 0 and ", 0 failed" in a.summary and "not done" not in a.summary for a in ran))
        r[f"{name}_429"] = refused
        r[f"{name}_retries"] = refused + sum(a.retries for a in ran)
        share = r["ideal"] / max(slowest - plans.seconds, 1e-9)
        each = ", ".join(f"{a.seconds:.2f} s ({a.summary or f'exit {a.code}'})" for a in ran)
        print(
            f"apply {name:<6} {n} creates: {slowest:7.2f} s = {slowest / (r['ideal'] + plans.seconds):.2f} x (N/Q + plan);"
            f" {share:.0%} of the quota after the plan; {refused} writes refused (429), "
            f"{sum(a.retries for a in ran)} retries\n{'':34}{each}",
            flush=True,
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
    if "plan" in k and "official_get" in k:
        t.check(
            "plan vs official GET per resource (x faster)",
            k["official_get"] / k["plan"],
            ">= 10",
            k["official_get"] / k["plan"] >= 10,
        )
    for n in sorted(results.sizes):
        a = results.sizes[n]
        if "told_s" not in a:
            continue
        base = a["ideal"] + a["plan_creates"]
        what = f"{n:,} creates at {opts.quota}/min"
        t.check(f"apply {what}, told / (N/Q + plan)", a["told_s"] / base, "<= 1.3", a["told_s"] / base <= 1.3)
        t.check("  told: writes failed", 1 - a["told_ok"], "= 0", a["told_ok"] == 1)
        t.check("  told: retries / writes (%)", 100 * a["told_retries"] / n, "<= 5", a["told_retries"] <= 0.05 * n)
        t.check(f"two applies of {n // 2:,}, slower / (N/Q + plan)", a["two_s"] / base, "<= 1.35", a["two_s"] / base <= 1.35)
        t.check("  two: both succeeded (failed runs)", 1 - a["two_ok"], "= 0", a["two_ok"] == 1)
        t.check(f"apply {what}, not told / (N/Q + plan)", a["untold_s"] / base, "<= 1.6", a["untold_s"] / base <= 1.6)
        t.check("  not told: all writes made (failed runs)", 1 - a["untold_ok"], "= 0", a["untold_ok"] == 1)
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
    parser.add_argument(
        "--quota",
        type=int,
        default=3000,
        help="The emulator's write and read quota a minute for apply (CES's default is 600: 100 s per 1,000 writes).",
    )
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

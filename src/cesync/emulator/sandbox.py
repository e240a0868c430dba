"""Running a Python tool's code the way CES does, but locally: in a child process.

The child (the sandbox_runner folder) isolates itself where the OS allows (Linux namespaces: no
other process, no network, a root of its own) and sets CPU, memory, file-size and
process limits; it gets an empty environment and a wall-clock timeout here. Whatever the
code does (raise, loop, exit, print, fork, return a set) comes back as a tool response;
it never takes the emulator down, and nothing it started outlives the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import signal
import sys
import tempfile
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["PythonRun", "run_python"]

RUNNER = Path(__file__).with_name("sandbox_runner") / "__main__.py"  # loads its package by path
MEMORY_BYTES = 512 * 1024 * 1024  # the budget of one tool call: all its processes together
BOUND_PROCESSES = 4  # without a cgroup: processes per call, each with MEMORY_BYTES / 4 of address space
MAX_LINE = 16 * 1024 * 1024
MAX_STDERR = 64 * 1024
GRACE = 0.5  # after the kill, how long the pipes may stay open (a fallback's escaped daemon holds them)
SWEEP = 0.3  # how long the fallback's runner may take to kill what the tool started
SANDBOX_ENV = "CESYNC_SANDBOX"  # "fallback": skip the namespaces (tests of the fallback)
MEMORY_ENV = "CESYNC_SANDBOX_MEMORY"  # "bound": no cgroup even where one can be made (tests of the bound)
BOUND = {"memory_bytes": MEMORY_BYTES // BOUND_PROCESSES, "processes": BOUND_PROCESSES}  # address space x processes
TOTAL_ENV = "CESYNC_SANDBOX_MEMORY_TOTAL"  # MB all calls at once may use (default: half the available memory)

ToolCaller = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass
class PythonRun:
    response: dict[str, Any]  # {"result": ...} or {"error": ...}
    variables: dict[str, Any] = field(default_factory=dict)
    logs: str = ""


async def run_python(
    code: str,
    function: str,
    args: dict[str, Any],
    *,
    variables: dict[str, Any],
    context: dict[str, Any],
    call_tool: ToolCaller,
    timeout: float,
) -> PythonRun:
    async with _slots():  # calls at once: as many budgets as the machine has memory for
        return await _run_python(code, function, args, variables, context, call_tool, timeout)


async def _run_python(
    code: str,
    function: str,
    args: dict[str, Any],
    variables: dict[str, Any],
    context: dict[str, Any],
    call_tool: ToolCaller,
    timeout: float,
) -> PythonRun:
    group = memory_cgroup()
    request = {
        "code": code,
        "function": function,
        "args": args,
        "variables": variables,
        "context": context,
        "cpu_seconds": max(1, int(timeout) + 1),
        # In a cgroup the cgroup holds the call's total; RLIMIT_AS stays as a per-process guard.
        "memory_bytes": MEMORY_BYTES,
        "processes": None,
        **({} if group.path else BOUND),
    }
    forced = ["--fallback"] if os.environ.get(SANDBOX_ENV) == "fallback" else []
    if group.path:
        forced += ["--cgroup", group.path]
    try:
        return await _in_process(request, forced, call_tool, timeout, group)
    finally:
        group.remove()


async def _in_process(
    request: dict[str, Any], forced: list[str], call_tool: ToolCaller, timeout: float, group: MemoryGroup
) -> PythonRun:
    variables = request["variables"]
    with tempfile.TemporaryDirectory(prefix="cesync-tool-") as scratch:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            str(RUNNER),
            *forced,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=scratch,
            env={"PATH": os.defpath, "LANG": "C.UTF-8"},
            start_new_session=True,  # its own process group: a timeout kills all it started
            limit=MAX_LINE,
        )
        box = _Box(proc, group=group)
        stderr = bytearray()
        stderr_task = asyncio.create_task(_read_limited(proc.stderr, stderr))
        try:
            final = await asyncio.wait_for(box.converse(request, call_tool), timeout)
        except asyncio.TimeoutError:
            final = {"error": f"the tool did not finish within {timeout:g}s and was stopped"}
        except (ValueError, ConnectionError, OSError) as exc:  # a broken line or pipe
            final = {"error": f"the tool's process failed: {exc}"}
        finally:
            await box.end()
        with contextlib.suppress(asyncio.TimeoutError):  # a straggler may hold the pipe: keep what came
            await asyncio.wait_for(stderr_task, GRACE)
        logs = stderr.decode("utf-8", "replace")
    if not final:
        status = proc.returncode or 0
        reason = f"killed by signal {-status}" if status < 0 else f"exited with status {status}"
        final = {"error": f"the tool's process {reason} without an answer" + (f": {logs.strip()[-500:]}" if logs else "")}
    out_vars = final.pop("variables", variables)
    return PythonRun(final, out_vars if isinstance(out_vars, dict) else variables, logs)


_warned = False
_noted = False


def _warn_once(sandbox: dict[str, Any]) -> None:
    """Say once per process, plainly, what holds the tool code and what does not when namespaces are not there."""
    global _warned
    if _warned or sandbox.get("mode") == "namespaces":
        return
    _warned = True
    held = "; ".join(str(x) for x in sandbox.get("held") or []) or "the timeout"
    left_open = "; ".join(str(x) for x in sandbox.get("open") or []) or "the rest of the system"
    sys.stderr.write(
        f"cesync: warning: the emulator runs Python tools without isolation here ({sandbox.get('reason', 'unknown')}). "
        f"Held: {held}. Not held: {left_open}. "
        "Run untrusted tool code on Linux with user namespaces enabled.\n"
    )


log = logging.getLogger(__name__)


def _note_memory_once(note: str) -> None:
    """Say once per process how a tool call's memory is held (a cgroup, or the bound): a log line
    (--verbose). Said on stderr on every run of test and eval, it was noise people learned to
    skip; where the total is not held (root in the fallback), the fallback's own warning says so."""
    global _noted
    if _noted:
        return
    _noted = True
    log.info("tool memory: %s", note)


def memory_note(sandbox: dict[str, Any], group: MemoryGroup) -> str:
    """Which memory budget holds the calls: the cgroup, or the bound and whether the kernel keeps it."""
    mb = MEMORY_BYTES >> 20
    if group.path and sandbox.get("cgroup") == "joined":
        return (
            f"each call's processes share one cgroup v{group.version} limit of {mb} MB (swap included where the kernel "
            "accounts it); "
            f"at most {parallel_calls()} calls run at once"
        )
    why = group.reason or str(sandbox.get("cgroup") or "no cgroup")
    each = mb // BOUND_PROCESSES
    if sandbox.get("mode") == "fallback" and sandbox.get("root"):
        return (
            f"no cgroup ({why}): {each} MB of address space per process, and the kernel does not count root's "
            f"processes, so a call's total is not bounded; at most {parallel_calls()} calls run at once"
        )
    return (
        f"no cgroup ({why}): {each} MB of address space x {BOUND_PROCESSES} processes = {mb} MB per call; "
        f"at most {parallel_calls()} calls run at once"
    )


# --- the memory budget of a call ----------------------------------------------------------------


@dataclass
class MemoryGroup:
    """A memory cgroup made for one call (path empty: none could be made; reason says why)."""

    path: str = ""
    reason: str = ""
    version: int = 0

    def remove(self) -> None:
        """Kill what is left in it and remove it (the call is over); bounded, never raises."""
        if not self.path:
            return
        for _ in range(50):
            with contextlib.suppress(OSError):
                os.rmdir(self.path)
                return
            if self.version == 2:
                with contextlib.suppress(OSError), open(os.path.join(self.path, "cgroup.kill"), "w") as f:
                    f.write("1")
            else:
                for pid in _read_pids(self.path):
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)  # the kernel frees a killed process's cgroup membership asynchronously


def _read_pids(path: str) -> list[int]:
    try:
        with open(os.path.join(path, "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return []


_CGROUP_ROOT = "/sys/fs/cgroup"
_made = itertools.count()


def memory_cgroup(root: str = _CGROUP_ROOT, own: str = "/proc/self/cgroup") -> MemoryGroup:
    """A child of this process's own memory cgroup limited to MEMORY_BYTES (swap included), where the kernel
    lets us make one: cgroup v2 (memory.max, memory.swap.max) or, on hybrid hosts, the v1 memory hierarchy
    (memory.limit_in_bytes, memory.memsw.limit_in_bytes). Otherwise an empty path and the reason."""
    if os.environ.get(MEMORY_ENV) == "bound":
        return MemoryGroup(reason=f"{MEMORY_ENV}=bound")
    if not sys.platform.startswith("linux"):
        return MemoryGroup(reason=f"{sys.platform} has no cgroups")
    try:
        with open(own) as f:
            lines = [line.rstrip("\n").split(":", 2) for line in f if line.count(":") >= 2]
    except OSError as exc:
        return MemoryGroup(reason=f"cannot read {own} ({exc.strerror})")
    name = f"cesync-tool-{os.getpid()}-{next(_made)}"
    reasons: list[str] = []
    for hierarchy, controllers, path in lines:
        if hierarchy == "0" and controllers == "":
            for mount in (root, os.path.join(root, "unified")):
                made = _make_v2(os.path.join(mount, path.lstrip("/")), name, reasons)
                if made is not None:
                    return made
        elif "memory" in controllers.split(","):
            made = _make_v1(os.path.join(root, "memory", path.lstrip("/")), name, reasons)
            if made is not None:
                return made
    return MemoryGroup(reason="; ".join(reasons) or "no memory cgroup")


def _sweep_stale(parent: str) -> None:
    """Remove the empty cgroups of emulators that were killed before they could (their pid is gone)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            parts = entry.name.split("-")
            if entry.name.startswith("cesync-tool-") and len(parts) == 4 and parts[2].isdigit():
                try:
                    os.kill(int(parts[2]), 0)
                except ProcessLookupError:
                    with contextlib.suppress(OSError):
                        os.rmdir(entry.path)  # refused while a process is still in it
                except OSError:
                    pass


def _make_v2(parent: str, name: str, reasons: list[str]) -> MemoryGroup | None:
    try:
        with open(os.path.join(parent, "cgroup.controllers")) as f:
            available = f.read().split()
    except OSError:
        return None
    if "memory" not in available:
        reasons.append("cgroup v2 has no memory controller here")
        return None
    try:
        with open(os.path.join(parent, "cgroup.subtree_control")) as f:
            enabled = f.read().split()
        if "memory" not in enabled:
            with open(os.path.join(parent, "cgroup.subtree_control"), "w") as f:
                f.write("+memory")  # refused (EBUSY) where the parent holds processes: not delegated to us
        group = os.path.join(parent, name)
        _sweep_stale(parent)
        os.mkdir(group)
    except OSError as exc:
        reasons.append(f"cgroup v2: {exc.strerror or exc}")
        return None
    try:
        _write(group, "memory.max", str(MEMORY_BYTES))
        with contextlib.suppress(OSError):  # no swap accounting: nothing to swap to
            _write(group, "memory.swap.max", "0")
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.rmdir(group)
        reasons.append(f"cgroup v2 memory.max: {exc.strerror or exc}")
        return None
    return MemoryGroup(group, version=2)


def _make_v1(parent: str, name: str, reasons: list[str]) -> MemoryGroup | None:
    group = os.path.join(parent, name)
    _sweep_stale(parent)
    try:
        os.mkdir(group)
    except OSError as exc:
        reasons.append(f"cgroup v1 memory: {exc.strerror or exc}")
        return None
    try:
        _write(group, "memory.limit_in_bytes", str(MEMORY_BYTES))
        with contextlib.suppress(OSError):  # present only with swap accounting
            _write(group, "memory.memsw.limit_in_bytes", str(MEMORY_BYTES))
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.rmdir(group)
        reasons.append(f"cgroup v1 memory.limit_in_bytes: {exc.strerror or exc}")
        return None
    return MemoryGroup(group, version=1)


def _write(group: str, name: str, value: str) -> None:
    with open(os.path.join(group, name), "w") as f:
        f.write(value)


def parallel_calls() -> int:
    """How many tool calls may run at once: the memory all may use over one call's budget (at least 1)."""
    total = os.environ.get(TOTAL_ENV)
    available = int(total) << 20 if total is not None and total.isdigit() else _available_memory() // 2
    return max(1, available // MEMORY_BYTES)


def _available_memory() -> int:
    with contextlib.suppress(OSError, ValueError), open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 4 * MEMORY_BYTES  # unknown (macOS): four calls at once


_semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()


def _slots() -> asyncio.Semaphore:
    """The calls of one event loop (one emulator) wait for a free budget."""
    loop = asyncio.get_running_loop()
    found = _semaphores.get(loop)
    if found is None:
        found = _semaphores[loop] = asyncio.Semaphore(parallel_calls())
    return found


@dataclass
class _Box:
    """One tool's process: the conversation, and the kill that takes its whole tree down."""

    proc: asyncio.subprocess.Process
    pidfd: int | None = None
    pid1: int | None = None
    mode: str = ""
    group: MemoryGroup = field(default_factory=MemoryGroup)

    async def converse(self, request: dict[str, Any], call_tool: ToolCaller) -> dict[str, Any]:
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None
        hello = await self._read()
        if hello is None or not isinstance(hello.get("sandbox"), dict):
            return hello or {}
        self._hold(hello["sandbox"])
        if hello["sandbox"].get("cgroup") != "joined":  # not in the cgroup after all: the bound, then
            request = {**request, **BOUND}
        proc.stdin.write((json.dumps(request) + "\n").encode())
        await proc.stdin.drain()
        while True:
            message = await self._read()
            if message is None:
                return {}
            if "call" not in message:
                return message
            call = message["call"]
            try:
                reply: dict[str, Any] = {"response": await call_tool(str(call.get("tool")), dict(call.get("args") or {}))}
            except Exception as exc:  # an unmatched mock, an unknown tool: the calling code sees it raised
                reply = {"error": str(exc)}
            proc.stdin.write((json.dumps(reply) + "\n").encode())
            await proc.stdin.drain()

    async def _read(self) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        line = await self.proc.stdout.readline()
        if not line:
            return None
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError("the tool's process sent something other than an object")
        return message

    def _hold(self, sandbox: dict[str, Any]) -> None:
        _warn_once(sandbox)
        _note_memory_once(memory_note(sandbox, self.group))
        self.mode = str(sandbox.get("mode"))
        pid = sandbox.get("pid")
        if isinstance(pid, int) and pid > 1:
            self.pid1 = pid
            # PID 1 is waiting for the request, so it cannot have been reaped: this handle is
            # it, and cannot hit another process that reuses the number later.
            with contextlib.suppress(OSError, AttributeError):
                self.pidfd = os.pidfd_open(pid)

    async def end(self) -> None:
        """Kill PID 1 of the namespace (the kernel kills the rest), then the process group; wait briefly."""
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            os.close(self.pidfd)
            self.pidfd = None
        if self.mode == "fallback" and self.proc.returncode is None:
            # The runner stayed as a subreaper (Linux): asked to, it kills all the tool started first.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.proc.wait(), SWEEP)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        try:
            await asyncio.wait_for(self.proc.wait(), GRACE)
        except asyncio.TimeoutError:
            # Only something that left the process group still holds our pipes (the fallback
            # cannot catch it): stop listening rather than wait for it.
            self.proc._transport.close()  # type: ignore[attr-defined]
            await self.proc.wait()


async def _read_limited(stream: asyncio.StreamReader | None, into: bytearray) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65536):
        if len(into) < MAX_STDERR:
            into += chunk[: MAX_STDERR - len(into)]

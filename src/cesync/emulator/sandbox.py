"""Running a Python tool's code the way CES does, but locally: in a child process.

The child (sandbox_runner.py) isolates itself where the OS allows (Linux namespaces: no
other process, no network, a root of its own) and sets CPU, memory, file-size and
process limits; it gets an empty environment and a wall-clock timeout here. Whatever the
code does (raise, loop, exit, print, fork, return a set) comes back as a tool response;
it never takes the emulator down, and nothing it started outlives the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["PythonRun", "run_python"]

RUNNER = Path(__file__).with_name("sandbox_runner.py")
MEMORY_BYTES = 512 * 1024 * 1024
MAX_LINE = 16 * 1024 * 1024
MAX_STDERR = 64 * 1024
GRACE = 0.5  # after the kill, how long the pipes may stay open (a fallback's escaped daemon holds them)
SWEEP = 0.3  # how long the fallback's runner may take to kill what the tool started
SANDBOX_ENV = "CESYNC_SANDBOX"  # "fallback": skip the namespaces (tests of the fallback)

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
    request = {
        "code": code,
        "function": function,
        "args": args,
        "variables": variables,
        "context": context,
        "cpu_seconds": max(1, int(timeout) + 1),
        "memory_bytes": MEMORY_BYTES,
    }
    forced = ["--fallback"] if os.environ.get(SANDBOX_ENV) == "fallback" else []
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
        box = _Box(proc)
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


def _warn_once(sandbox: dict[str, Any]) -> None:
    """Say once per process, plainly, what the tool code can reach when namespaces are not there."""
    global _warned
    if _warned or sandbox.get("mode") == "namespaces":
        return
    _warned = True
    left_open = ", ".join(str(x) for x in sandbox.get("open") or []) or "the rest of the system"
    sys.stderr.write(
        f"cesync: warning: the emulator runs Python tools without isolation here ({sandbox.get('reason', 'unknown')}): "
        f"only CPU, memory, file-size and process limits and the timeout apply; the code can reach {left_open}. "
        "Run untrusted tool code on Linux with user namespaces enabled.\n"
    )


@dataclass
class _Box:
    """One tool's process: the conversation, and the kill that takes its whole tree down."""

    proc: asyncio.subprocess.Process
    pidfd: int | None = None
    pid1: int | None = None
    mode: str = ""

    async def converse(self, request: dict[str, Any], call_tool: ToolCaller) -> dict[str, Any]:
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None
        hello = await self._read()
        if hello is None or not isinstance(hello.get("sandbox"), dict):
            return hello or {}
        self._hold(hello["sandbox"])
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

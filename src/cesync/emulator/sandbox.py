"""Running a Python tool's code the way CES does, but locally: in a child process.

The child (sandbox_runner.py) gets a time limit (wall clock here, CPU time there),
an address-space limit, no network, an empty environment and a scratch folder.
Whatever the code does (raise, loop, exit, print, return a set) comes back as a
tool response; it never takes the emulator down.
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
    with tempfile.TemporaryDirectory(prefix="cesync-tool-") as scratch:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            str(RUNNER),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=scratch,
            env={"PATH": os.defpath, "LANG": "C.UTF-8"},
            start_new_session=True,  # its own process group: a timeout kills all it started
            limit=MAX_LINE,
        )
        stderr_task = asyncio.create_task(_read_limited(proc.stderr))
        try:
            final = await asyncio.wait_for(_converse(proc, request, call_tool), timeout)
        except asyncio.TimeoutError:
            final = {"error": f"the tool did not finish within {timeout:g}s and was stopped"}
        except (ValueError, ConnectionError, OSError) as exc:  # a broken line or pipe
            final = {"error": f"the tool's process failed: {exc}"}
        finally:
            _kill(proc)
            await proc.wait()
        logs = await stderr_task
    if not final:
        status = proc.returncode or 0
        reason = f"killed by signal {-status}" if status < 0 else f"exited with status {status}"
        final = {"error": f"the tool's process {reason} without an answer" + (f": {logs.strip()[-500:]}" if logs else "")}
    out_vars = final.pop("variables", variables)
    return PythonRun(final, out_vars if isinstance(out_vars, dict) else variables, logs)


async def _converse(proc: asyncio.subprocess.Process, request: dict[str, Any], call_tool: ToolCaller) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps(request) + "\n").encode())
    await proc.stdin.drain()
    while True:
        line = await proc.stdout.readline()
        if not line:
            return {}
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError("the tool's process sent something other than an object")
        if "call" not in message:
            return message
        call = message["call"]
        try:
            reply: dict[str, Any] = {"response": await call_tool(str(call.get("tool")), dict(call.get("args") or {}))}
        except Exception as exc:  # an unmatched mock, an unknown tool: the calling code sees it raised
            reply = {"error": str(exc)}
        proc.stdin.write((json.dumps(reply) + "\n").encode())
        await proc.stdin.drain()


async def _read_limited(stream: asyncio.StreamReader | None) -> str:
    if stream is None:
        return ""
    data = b""
    while chunk := await stream.read(65536):
        if len(data) < MAX_STDERR:
            data += chunk[: MAX_STDERR - len(data)]
    return data.decode("utf-8", "replace")


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

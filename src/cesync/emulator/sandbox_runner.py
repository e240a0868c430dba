"""Runs one Python tool in a child process; started by sandbox.py as ``python -I this_file``.

Protocol, one JSON object per line: the parent writes the request on stdin; the
child answers on stdout with ``{"call": ...}`` (a tool the code calls, answered by
the parent on stdin) and finally ``{"result": ...}`` or ``{"error": ...}``. The
tool's own prints go to stderr so they cannot break the protocol.

Kept free of cesync imports: it runs with ``-I`` (no site packages, no PYTHON* env).
"""

import contextlib
import ctypes
import json
import resource
import sys
import traceback
from typing import Any

CLONE_NEWNET = 0x40000000
PROTOCOL = sys.stdout
NO_NETWORK = "network access is disabled in the emulator's tool sandbox"


def _limits(cpu_seconds: int, memory_bytes: int) -> None:
    # Best effort per limit: some systems refuse one (macOS and RLIMIT_AS); the wall-clock
    # timeout of the parent holds everywhere.
    for name, value in (("RLIMIT_CPU", cpu_seconds), ("RLIMIT_AS", memory_bytes), ("RLIMIT_FSIZE", 1 << 20), ("RLIMIT_CORE", 0)):
        with contextlib.suppress(ValueError, OSError, AttributeError):
            resource.setrlimit(getattr(resource, name), (value, value))


def _no_network() -> None:
    # A network namespace of our own has no interfaces but a downed loopback: nothing
    # can be reached. Where the OS refuses (no privilege), sockets are blocked in-process.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWNET)
    import _socket
    import socket

    class _Blocked:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise PermissionError(NO_NETWORK)

    def _refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(NO_NETWORK)

    socket.socket = _socket.socket = _Blocked  # type: ignore[misc,assignment]
    socket.create_connection = socket.getaddrinfo = _refuse


def _send(message: dict[str, Any]) -> None:
    PROTOCOL.write(json.dumps(message) + "\n")
    PROTOCOL.flush()


class _Tools:
    """``tools.<name>(args)`` calls another tool of the app (the parent answers, mocks first)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)

        def call(args: dict[str, Any] | None = None, **kwargs: Any) -> Any:
            _send({"call": {"tool": name, "args": {**(args or {}), **kwargs}}})
            line = sys.stdin.readline()
            reply = json.loads(line) if line else {"error": "no answer from the emulator"}
            if "error" in reply:
                raise RuntimeError(f"tool {name}: {reply['error']}")
            return reply.get("response")

        return call


class _Context:
    def __init__(self, variables: dict[str, Any], extra: dict[str, Any]) -> None:
        self.variables = variables
        self.state = variables
        self.function_call_id = extra.pop("function_call_id", "emulator-call")
        self.user_content = extra.pop("user_content", None)
        self.events = extra.pop("events", [])
        for key, value in extra.items():
            setattr(self, key, value)


def main() -> None:
    request = json.loads(sys.stdin.readline())
    sys.stdout = sys.stderr  # the tool's prints
    _limits(request["cpu_seconds"], request["memory_bytes"])
    _no_network()
    variables = dict(request.get("variables") or {})
    context = _Context(variables, dict(request.get("context") or {}))
    namespace = {"__name__": "tool", "context": context, "tools": _Tools()}
    try:
        exec(compile(request["code"], "<tool>", "exec"), namespace)
        function = namespace.get(request["function"])
        if not callable(function):
            _send({"error": f"the code defines no function '{request['function']}'"})
            return
        result = function(**(request.get("args") or {}))
    except BaseException as exc:  # the tool's failure is the answer, never ours
        frames = traceback.extract_tb(exc.__traceback__)
        line = next((f.lineno for f in reversed(frames) if f.filename == "<tool>"), None)
        where = f" (line {line})" if line else ""
        _send({"error": f"{type(exc).__name__}: {exc}{where}", "variables": variables})
        return
    try:
        text = json.dumps({"result": result, "variables": variables}, allow_nan=False)
    except (TypeError, ValueError) as exc:
        _send({"error": f"the function returned {type(result).__name__}, which is not JSON ({exc})", "variables": variables})
        return
    PROTOCOL.write(text + "\n")
    PROTOCOL.flush()


if __name__ == "__main__":
    main()

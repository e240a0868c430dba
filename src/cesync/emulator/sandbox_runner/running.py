"""Running the tool's code: its limits, no socket module, its globals ``context`` and ``tools``
(the emulator answers ``tools.<name>(...)`` over the protocol), and the answer it comes to."""

import contextlib
import json
import resource
import sys
import traceback
from typing import Any

from .processes import MAX_PROCESSES
from .protocol import PROTOCOL, send

MAX_FILE_BYTES = 1 << 20
NO_NETWORK = "network access is disabled in the emulator's tool sandbox"


def _limits(cpu_seconds: int, memory_bytes: int, processes: int) -> None:
    # Best effort per limit: some systems refuse one (macOS and RLIMIT_AS); the wall-clock
    # timeout of the parent holds everywhere.
    for name, value in (
        ("RLIMIT_CPU", cpu_seconds),
        ("RLIMIT_AS", memory_bytes),
        ("RLIMIT_FSIZE", MAX_FILE_BYTES),
        ("RLIMIT_CORE", 0),
        ("RLIMIT_NPROC", processes),
    ):
        with contextlib.suppress(ValueError, OSError, AttributeError):
            resource.setrlimit(getattr(resource, name), (value, value))


def _block_sockets() -> None:
    # A clear error for the common case; the network namespace is what holds against code
    # that goes around the socket module.
    import _socket
    import socket

    class _Blocked:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise PermissionError(NO_NETWORK)

    def _refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(NO_NETWORK)

    socket.socket = _socket.socket = _Blocked  # type: ignore[misc,assignment]
    socket.create_connection = socket.getaddrinfo = _refuse


class _Tools:
    """``tools.<name>(args)`` calls another tool of the app (the parent answers, mocks first)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)

        def call(args: dict[str, Any] | None = None, **kwargs: Any) -> Any:
            send({"call": {"tool": name, "args": {**(args or {}), **kwargs}}})
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


def run(request: dict[str, Any], processes: int) -> None:
    """Run the requested function under the limits and send its answer (its failure is an answer too)."""
    sys.stdout = sys.stderr  # the tool's prints
    if isinstance(request.get("processes"), int):  # no cgroup: address space x processes is the call's bound
        processes += request["processes"] - MAX_PROCESSES
    _limits(request["cpu_seconds"], request["memory_bytes"], processes)
    _block_sockets()
    variables = dict(request.get("variables") or {})
    context = _Context(variables, dict(request.get("context") or {}))
    namespace = {"__name__": "tool", "context": context, "tools": _Tools()}
    try:
        exec(compile(request["code"], "<tool>", "exec"), namespace)
        function = namespace.get(request["function"])
        if not callable(function):
            send({"error": f"the code defines no function '{request['function']}'"})
            return
        result = function(**(request.get("args") or {}))
    except BaseException as exc:  # the tool's failure is the answer, never ours
        frames = traceback.extract_tb(exc.__traceback__)
        line = next((f.lineno for f in reversed(frames) if f.filename == "<tool>"), None)
        where = f" (line {line})" if line else ""
        send({"error": f"{type(exc).__name__}: {exc}{where}", "variables": variables})
        return
    try:
        text = json.dumps({"result": result, "variables": variables}, allow_nan=False)
    except (TypeError, ValueError) as exc:
        send({"error": f"the function returned {type(result).__name__}, which is not JSON ({exc})", "variables": variables})
        return
    PROTOCOL.write(text + "\n")
    PROTOCOL.flush()

"""The runner of one Python tool: a child process that sandbox.py starts as
``python -I sandbox_runner/__main__.py``.

Protocol, one JSON object per line: the child first says how it is isolated
(``{"sandbox": {"mode": ..., ...}}``), then the parent writes the request on stdin; the
child answers on stdout with ``{"call": ...}`` (a tool the code calls, answered by the
parent on stdin) and finally ``{"result": ...}`` or ``{"error": ...}``. The tool's own
prints go to stderr so they cannot break the protocol.

On Linux the runner isolates itself in namespaces (namespaces.py); where it cannot, or the
emulator asks for it, it runs the code with resource limits only (fallback.py). Everything
happens in that fresh single-threaded process, never in a preexec hook of the
(multi-threaded) emulator.

Nothing here imports cesync: the package is loaded by its path (__main__.py), so that the
child's sys.path holds nothing of cesync or of the emulator.
"""

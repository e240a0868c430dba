"""Ctrl-C where Python itself would lose it or turn it into death by SIGINT (cli/interrupts.py):
each probe is a real process running the command line with a command of its own."""

from __future__ import annotations

import inspect
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

import pytest

from cesync.cli import interrupts

PROBE = """\
import os, signal, sys, time, weakref
from cesync import cli
{head}
@cli.main.command("boom")
@cli.handled
def boom():
{body}
    print("went on")

sys.argv = ["cesync", "boom"]
cli.run()
"""


def probe(tmp_path: Path, body: str, *, head: str = "", as_module: bool = False) -> subprocess.CompletedProcess[str]:
    """The command line with one command, body, run as a script or with ``python -m``."""
    (tmp_path / "probe_cli.py").write_text(PROBE.format(body=body, head=head))
    args = ["-m", "probe_cli"] if as_module else [str(tmp_path / "probe_cli.py")]
    return subprocess.run([sys.executable, *args], cwd=tmp_path, capture_output=True, text=True, timeout=60)


# A KeyboardInterrupt in a weakref callback cannot propagate (Python reports it to sys.unraisablehook).
LOST = {
    # raised by the callback itself
    "raised": "    def cb(_): raise KeyboardInterrupt\n    x = X(); r = [weakref.ref(x, cb)]\n",
    # a SIGINT whose handler runs inside the callback, as a Ctrl-C at the end of an import does
    "signal": "    def cb(_): signal.raise_signal(signal.SIGINT)\n    x = X(); r = [weakref.ref(x, cb)]\n",
    # handed back while the next callbacks run (50 ms of bytecode each, past Python's switch
    # interval): lost there again, and handed back again
    "lost twice": (
        "    def cb(_): signal.raise_signal(signal.SIGINT)\n"
        "    def work(_):\n"
        "        t = time.monotonic()\n"
        "        while time.monotonic() - t < 0.05: pass\n"
        "    x = X(); r = [weakref.ref(x, work), weakref.ref(x, cb), weakref.ref(x, work)]\n"
    ),
}


@pytest.mark.parametrize("how", list(LOST))
@pytest.mark.parametrize("as_module", [False, True], ids=["script", "python -m"])
def test_a_ctrl_c_that_lands_in_a_callback_is_not_lost(tmp_path: Path, how: str, as_module: bool) -> None:
    """The command still ends with 130 and one line. After the callbacks, 5 s of work in slices
    (an interrupt_main comes after the blocking call it came in): 'went on' if it was lost."""
    body = "    class X: pass\n" + LOST[how] + "    del x\n    for _ in range(500): time.sleep(0.01)\n"
    r = probe(tmp_path, body, as_module=as_module)
    assert (r.returncode, r.stderr, r.stdout) == (130, "interrupted\n", "")


@pytest.mark.parametrize(
    ("body", "code", "stderr"),
    [
        # the command's own Ctrl-C handling, the interrupt having passed through an exec'd string
        ('    exec("raise KeyboardInterrupt")\n', 130, "interrupted\n"),
        # a KeyboardInterrupt the command itself catches: its exit code stands
        ('    try: exec("raise KeyboardInterrupt")\n    except KeyboardInterrupt: pass\n', 0, ""),
    ],
    ids=["handled by cesync", "handled by the command"],
)
@pytest.mark.parametrize("as_module", [False, True], ids=["script", "python -m"])
def test_a_ctrl_c_that_went_through_an_evaluated_string_is_not_death_by_sigint(
    tmp_path: Path, body: str, code: int, stderr: str, as_module: bool
) -> None:
    """CPython marks a KeyboardInterrupt leaving an evaluated string as unhandled, and under
    ``python -m`` kills the process by SIGINT (-2) after its shutdown for it
    (interrupts.forget_unhandled_interrupt)."""
    r = probe(tmp_path, body, as_module=as_module)
    assert (r.returncode, r.stderr) == (code, stderr)


# Ctrl-C during the shutdown, then Python code or a wait: early (an atexit handler) and late (the
# main module's objects are freed after the shutdown has reset Python's signal handlers).
LATE_CTRL_C = "def ctrl_c(*_):\n    os.kill(os.getpid(), signal.SIGINT)\n    time.sleep(0.05)\n"
SHUTDOWN = {
    "atexit": ("", "    import atexit\n    atexit.register(ctrl_c)\n"),
    "module teardown": ("class Late:\n    __del__ = ctrl_c\nlate = Late()\n", "    pass\n"),
}


@pytest.mark.parametrize("when", list(SHUTDOWN))
@pytest.mark.parametrize("as_module", [False, True], ids=["script", "python -m"])
def test_a_ctrl_c_during_the_shutdown_changes_nothing(tmp_path: Path, when: str, as_module: bool) -> None:
    """The command is over: SIGINT is ignored to the end, and the exit code is the command's."""
    head, body = SHUTDOWN[when]
    r = probe(tmp_path, body, head=LATE_CTRL_C + head, as_module=as_module)
    assert (r.returncode, r.stderr, r.stdout) == (0, "", "went on\n")


def test_the_hand_back_waits_until_the_hook_is_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """A SIGINT while the main thread is still in the hook is asked for again, not raised there;
    outside it, the handler that was there before gets it and is put back."""
    asked: list[None] = []
    monkeypatch.setattr(interrupts, "_interrupt_main_soon", lambda: asked.append(None))
    given: list[int] = []

    def before(signum: int, frame: FrameType | None) -> None:
        given.append(signum)

    def the_hook() -> None:
        hand_back(signal.SIGINT, inspect.currentframe())

    hand_back = interrupts._HandBack(before, the_hook.__code__)
    saved = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, hand_back)
        the_hook()
        assert (len(asked), given, signal.getsignal(signal.SIGINT)) == (1, [], hand_back)
        hand_back(signal.SIGINT, inspect.currentframe())
        assert (len(asked), given, signal.getsignal(signal.SIGINT)) == (1, [signal.SIGINT], before)
    finally:
        signal.signal(signal.SIGINT, saved)

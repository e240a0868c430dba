"""The command line: wiring, output and exit codes only.

Every command turns a CesyncError into one clear message on stderr and exit 1;
a user never sees a traceback (set CESYNC_DEBUG=1 to get one). Ctrl-C at any
moment exits 130 with one line: during start-up (imports) nothing has been read
or written yet, so the process leaves at once. The commands live in the modules
of this package by theme; importing it registers them all.
"""

from __future__ import annotations

import os
import signal
import sys


def _interrupted_at_startup(signum: int, frame: object) -> None:
    os.write(2, b"interrupted\n")
    os._exit(130)


def _guard_startup() -> object:
    try:
        return signal.signal(signal.SIGINT, _interrupted_at_startup)
    except ValueError:  # imported outside the main thread: nothing to guard
        return None


_handler_before_startup = _guard_startup()

import contextlib  # noqa: E402
import functools  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, TypeVar  # noqa: E402

import click  # noqa: E402

from .. import __version__  # noqa: E402
from ..errors import CesyncError, ConfigError, PlanFileError  # noqa: E402
from ..plan import Plan  # noqa: E402
from ..render import FORMATS, render, use_color  # noqa: E402
from ..sensitive import scrub  # noqa: E402

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_ERROR, EXIT_CHANGES, EXIT_INTERRUPTED = 0, 1, 2, 130


def err(message: str) -> None:
    click.echo(scrub(message), err=True)


def out(message: str, **kw: Any) -> None:
    """Everything a command prints goes through here: sensitive values never reach a terminal or log."""
    click.echo(scrub(message), **kw)


def handled(fn: F) -> F:
    """Run a command body; map cesync errors and interrupts to messages and exit codes."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ConfigError as exc:
            for problem in exc.problems:
                err(str(problem))
            err(f"{len(exc.problems)} problem{'s' if len(exc.problems) != 1 else ''} found")
            sys.exit(EXIT_ERROR)
        except CesyncError as exc:
            err(f"error: {exc}")
            sys.exit(EXIT_ERROR)
        except (KeyboardInterrupt, click.exceptions.Abort):
            err("interrupted")
            sys.exit(EXIT_INTERRUPTED)
        except click.exceptions.Exit:
            raise
        except click.ClickException:
            raise
        except Exception as exc:  # a bug: still no traceback unless asked for
            if os.environ.get("CESYNC_DEBUG"):
                traceback.print_exc()
            err(f"internal error: {type(exc).__name__}: {exc} (set CESYNC_DEBUG=1 for a traceback, and please report it)")
            sys.exit(EXIT_ERROR)

    return wrapper  # type: ignore[return-value]


dir_option = click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The cesync repo.",
)


@contextlib.contextmanager
def _exit_130_on_interrupt() -> Iterator[None]:
    try:
        yield
    except (KeyboardInterrupt, click.exceptions.Abort):
        err("interrupted")
        sys.exit(EXIT_INTERRUPTED)


class _Main(click.Group):
    """Ctrl-C in click's own work (parsing, prompts) exits 130 too, not with click's "Aborted!" and 1."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        with _exit_130_on_interrupt():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        with _exit_130_on_interrupt():
            return super().invoke(ctx)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cesync")
def main() -> None:
    """Manage Google Cloud CES agent tools as code: validate, plan, apply."""


def atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


# --- plan, show, apply ------------------------------------------------------------------------

env_option = click.option("--env", "env_name", help="The environment of cesync.yaml (or CESYNC_ENV).")


def _endpoint(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--endpoint gets the same check as endpoint: in cesync.yaml (one function for both)."""
    if value is None:
        return None
    from ..config import normalize_endpoint

    try:
        return normalize_endpoint(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


endpoint_option = click.option(
    "--endpoint",
    callback=_endpoint,
    help="Override the environment's endpoint: 'embedded' or an emulator URL (CES_EMULATOR_HOST works too); "
    "a loopback host:port means http://host:port.",
)
format_option = click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)


def print_plan(plan: Plan, fmt: str) -> None:
    out(render(plan, fmt, color=use_color(sys.stdout.isatty())), nl=False)


def save(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, scrub(text))


def load_plan(path: Path) -> Plan:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanFileError(f"cannot read plan file {path}: {exc}") from None
    return Plan.from_json(text, str(path))


# Registers the commands on `main` (they import main, so this comes last).
from . import adopt, ci, core, serve, sync, tools  # noqa: E402, F401

# Start-up is over: from here a Ctrl-C is a KeyboardInterrupt that the commands handle.
if _handler_before_startup is not None and signal.getsignal(signal.SIGINT) is _interrupted_at_startup:
    signal.signal(signal.SIGINT, _handler_before_startup)  # type: ignore[arg-type]

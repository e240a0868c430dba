"""Logging for every command: --verbose (-v, -vv) and CESYNC_LOG, each line to standard error
through the run's scrubber, as everything else cesync prints."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import click

from ..core.scrubber import Scrubber
from ..escape import output

__all__ = ["GLOBAL_OPTIONS", "configure_logging", "verbose_option"]


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Log lines to the standard error of the moment (click's test runner swaps it), each
    scrubbed whole by the run's scrubber, traceback included, and made inert (escape.output),
    as everything else cesync prints."""

    def __init__(self, scrubber: Scrubber) -> None:
        super().__init__()
        self.scrubber = scrubber

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass

    def format(self, record: logging.LogRecord) -> str:
        return output(self.scrubber.scrub(super().format(record)))


LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
# Libraries whose debug lines are the bytes on the wire: hpack logs each HTTP/2 header block it
# encodes, the Authorization header included (Huffman-coded, which any HPACK decoder reads back;
# its own redaction covers one of its lines only), so -vv would print the access token.
WIRE_LOGGERS = ("hpack",)


def configure_logging(verbose: int, scrubber: Scrubber) -> None:
    """--verbose (-v: cesync's loggers at debug; -vv: every library's too) or CESYNC_LOG=LEVEL;
    without either, nothing of cesync is logged. Called for every command, so a second command
    in the same process (tests) starts from its own setting and its own scrubber.

    One handler, on the root logger, writes every line: without it a library's warning would
    reach logging's handler of last resort, which prints it unscrubbed; with -v it passes
    cesync's records and the others' warnings."""
    named = os.environ.get("CESYNC_LOG", "").strip().lower()
    level = logging.DEBUG if verbose else LOG_LEVELS.get(named)
    root, ours = logging.getLogger(), logging.getLogger("cesync")
    for logger in (ours, root):
        for h in [h for h in logger.handlers if isinstance(h, _StderrHandler)]:
            logger.removeHandler(h)
    ours.setLevel(logging.NOTSET)
    for name in WIRE_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO)
    if named and named not in LOG_LEVELS and not verbose:
        from . import err  # here: cli/__init__ imports this module before it defines err

        err(f"warning: CESYNC_LOG={named!r} is not one of {', '.join(LOG_LEVELS)}: nothing is logged")
    handler = _StderrHandler(scrubber)
    root.addHandler(handler)
    if level is None:  # what the handler of last resort would print: a warning, its message alone
        handler.setLevel(logging.WARNING)
        return
    handler.setFormatter(logging.Formatter("%(asctime)s.%(msecs)03d %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    if verbose > 1:
        root.setLevel(level)
        return
    ours.setLevel(level)
    handler.addFilter(lambda r: r.name == "cesync" or r.name.startswith("cesync.") or r.levelno >= logging.WARNING)


def _verbosity(ctx: click.Context, param: click.Parameter, value: int) -> None:
    if value or not ctx.find_root().meta.get("cesync.verbose"):
        ctx.find_root().meta["cesync.verbose"] = value or ctx.find_root().meta.get("cesync.verbose", 0)
        from . import scrubber  # here: cli/__init__ imports this module before it defines scrubber

        configure_logging(ctx.find_root().meta["cesync.verbose"], scrubber(ctx))


def verbose_option() -> click.Option:
    """-v/--verbose, on the group and on every command (``cesync -v plan`` and ``cesync plan -v``)."""
    return click.Option(
        ["-v", "--verbose"],
        count=True,
        expose_value=False,
        is_eager=True,
        callback=_verbosity,
        help="Log each HTTP call (method, path, status, time) and each planning decision to standard error; "
        "-vv adds the libraries' logs. CESYNC_LOG=debug|info|warning|error does the same without the flag.",
    )


GLOBAL_OPTIONS = ("--verbose",)  # on every command: docs/commands/index.md lists them once

"""Logging for every command: --verbose (-v, -vv) and CESYNC_LOG, each line to standard error
through the same scrubber as everything else cesync prints."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import click

from ..core.scrubber import scrub
from ..escape import output

__all__ = ["GLOBAL_OPTIONS", "configure_logging", "verbose_option"]


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Log lines to the standard error of the moment (click's test runner swaps it), each
    scrubbed whole, traceback included, and made inert (escape.output), as everything else cesync prints."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass

    def format(self, record: logging.LogRecord) -> str:
        return output(scrub(super().format(record)))


LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
# Libraries whose debug lines are the bytes on the wire: hpack logs each HTTP/2 header block it
# encodes, the Authorization header included (Huffman-coded, which any HPACK decoder reads back;
# its own redaction covers one of its lines only), so -vv would print the access token.
WIRE_LOGGERS = ("hpack",)


def configure_logging(verbose: int) -> None:
    """--verbose (-v: cesync's loggers at debug; -vv: every library's too) or CESYNC_LOG=LEVEL;
    without either, nothing is logged. Called for every command, so a second command in the
    same process (tests) starts from its own setting."""
    named = os.environ.get("CESYNC_LOG", "").strip().lower()
    level = logging.DEBUG if verbose else LOG_LEVELS.get(named)
    for logger in (logging.getLogger("cesync"), logging.getLogger()):
        for h in [h for h in logger.handlers if isinstance(h, _StderrHandler)]:
            logger.removeHandler(h)
    logging.getLogger("cesync").setLevel(logging.NOTSET)
    for name in WIRE_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO)
    if named and named not in LOG_LEVELS and not verbose:
        from . import err  # here: cli/__init__ imports this module before it defines err

        err(f"warning: CESYNC_LOG={named!r} is not one of {', '.join(LOG_LEVELS)}: nothing is logged")
    if level is None:
        return
    logger = logging.getLogger() if verbose > 1 else logging.getLogger("cesync")
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s.%(msecs)03d %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    logger.addHandler(handler)
    logger.setLevel(level)


def _verbosity(ctx: click.Context, param: click.Parameter, value: int) -> None:
    if value or not ctx.find_root().meta.get("cesync.verbose"):
        ctx.find_root().meta["cesync.verbose"] = value or ctx.find_root().meta.get("cesync.verbose", 0)
        configure_logging(ctx.find_root().meta["cesync.verbose"])


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

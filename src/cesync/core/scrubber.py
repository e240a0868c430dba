"""The safety net on everything cesync prints or logs (the process's scrubber).

Every known sensitive value, in every form an output can carry (:func:`forms`), is replaced in
whatever cesync prints or logs (:func:`scrub`), for values of at least :data:`MIN_SCRUB`
characters; a file cesync writes (export, pull) that would hold one is refused instead
(:func:`leaks`). The values are remembered once per process, by the command before its first
output (:func:`remember`), and a log record factory scrubs every log message.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from .sensitive import MASK, MIN_SCRUB

__all__ = ["MIN_SCRUB", "clip", "forget", "forms", "known", "leaks", "occurrences", "remember", "scrub"]

_KNOWN: set[str] = set()
_ORDER: list[str] = []  # _KNOWN, longest first (one form may contain another); made again by remember()
_factory_installed = False
MIN_BASE64 = 8  # shorter base64 fragments would match ordinary text (ids, etags)


def forms(value: str) -> set[str]:
    """Every spelling of value an output can carry, each as it appears inside a longer text.

    Raw; JSON-escaped (ASCII escapes or not, and JSON in JSON: a request body quoted in an
    error message); Python's repr (``'abc\\'def"ghi'``: what an exception or a test report
    echoes), with and without ASCII escapes; URL-encoded (path, query and form style);
    YAML-quoted (single quotes doubled); XML/HTML-escaped (JUnit, Markdown); and the base64
    of any body holding it (the characters that depend on the value alone, at each of the
    three alignments, standard and URL-safe alphabets).
    """
    import base64
    import html
    from urllib.parse import quote, quote_plus

    json_ascii, json_raw = json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]
    found = {
        value,
        json_ascii,
        json_raw,
        json.dumps(json_ascii)[1:-1],
        json.dumps(json_raw, ensure_ascii=False)[1:-1],
        repr(value)[1:-1],
        ascii(value)[1:-1],
        _repr_in_quotes(value, "'"),
        _repr_in_quotes(value, '"'),
        quote(value, safe=""),
        quote(value),
        quote_plus(value),
        value.replace("'", "''"),
        html.escape(value, quote=False),
        html.escape(value),
        html.escape(value).replace("&#x27;", "&apos;"),
    }
    raw = value.encode("utf-8", "surrogatepass")
    for offset in range(3):
        start = 4 if offset else 0  # the first group mixes in what came before the value
        whole = (offset + len(raw)) // 3 * 4  # the last group, what comes after it
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            fragment = encode(b"\0" * offset + raw)[start:whole].decode()
            if len(fragment) >= MIN_BASE64:
                found.add(fragment)
    return {f for f in found if len(f) >= MIN_SCRUB}


def _repr_in_quotes(value: str, quote: str) -> str:
    """Python's repr of value as if it were written between these quotes (repr picks one itself)."""
    inner = repr(value)[1:-1]
    if repr(value)[0] == quote:
        return inner
    other = "'" if quote == '"' else '"'
    return inner.replace("\\" + other, other).replace(quote, "\\" + quote)


def remember(values: Iterable[str]) -> None:
    """Values this process must never print, log or write (from here on), in every form."""
    global _ORDER
    for v in values:
        if len(v) >= MIN_SCRUB:
            _KNOWN.update(forms(v))
    _ORDER = sorted(_KNOWN, key=len, reverse=True)
    _install_log_filter()


def forget() -> None:
    global _ORDER
    _KNOWN.clear()
    _ORDER = []


def known() -> bool:
    """Whether any value has been remembered."""
    return bool(_KNOWN)


def scrub(text: str, values: Iterable[str] = ()) -> str:
    """text with every known (and given) sensitive value, in any of its forms, replaced by (sensitive)."""
    extra = [f for v in values if len(v) >= MIN_SCRUB for f in forms(v)]
    order = sorted({*_ORDER, *extra}, key=len, reverse=True) if extra else _ORDER
    for v in order:  # longest first: one value may contain another
        if v in text:
            text = text.replace(v, MASK)
    return text


def clip(text: str, limit: int) -> str:
    """text cut to limit characters ("..." at the end), scrubbed before the cut: a sensitive value
    that the cut would split leaves no prefix of itself for the final scrub to miss."""
    text = scrub(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def occurrences(text: str, value: str) -> int:
    """How many times value appears in text, in any of its forms (the remembered values aside)."""
    count = 0
    for form in sorted(forms(value), key=len, reverse=True) if len(value) >= MIN_SCRUB else ():
        count += text.count(form)
        text = text.replace(form, "\0")
    return count


def leaks(text: str, values: Iterable[str] = ()) -> bool:
    """Whether text holds a known (or given) value in any form: for files, which are refused, not masked."""
    return scrub(text, values) != text


def _install_log_filter() -> None:
    """Every log record, of any logger, has its message scrubbed."""
    global _factory_installed
    if _factory_installed:
        return
    _factory_installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if _KNOWN:
            message = record.getMessage()
            clean = scrub(message)
            if clean != message:
                record.msg, record.args = clean, None
        return record

    logging.setLogRecordFactory(factory)

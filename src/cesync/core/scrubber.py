"""The safety net on everything cesync prints or logs: a :class:`Scrubber`, one per command run.

Every known sensitive value, in every form an output can carry (:func:`forms`), is replaced in
whatever cesync prints or logs (:meth:`Scrubber.scrub`), for values of at least
:data:`MIN_SCRUB` characters; a file cesync writes (export, pull) that would hold one is
refused instead (:meth:`Scrubber.leaks`). The command line makes the scrubber of a run, tells
it the values (the environment's, before the first output) and hands it to what prints, logs
or writes (pure: the values come in as arguments, nothing here reads an environment).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from .sensitive import MASK, MIN_SCRUB

__all__ = ["CUT", "MIN_SCRUB", "Scrubber", "clip", "forms", "occurrences"]

CUT = "..."  # what clip() puts where it cut
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


class Scrubber:
    """The sensitive values one command run must never print, log or write, in every form.

    Safe to read from another thread while remember() runs (a log record of the read-ahead):
    remember() replaces the tuple of forms whole."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._known: frozenset[str] = frozenset()
        self._order: tuple[str, ...] = ()  # the forms, longest first (one form may contain another)
        self.remember(values)

    def remember(self, values: Iterable[str]) -> None:
        """Values this run must never print, log or write (from here on), in every form."""
        found = {f for v in values if len(v) >= MIN_SCRUB for f in forms(v)}
        if found - self._known:
            known = self._known | found
            self._known, self._order = known, tuple(sorted(known, key=len, reverse=True))

    def known(self) -> bool:
        """Whether any value has been remembered."""
        return bool(self._known)

    def scrub(self, text: str, values: Iterable[str] = ()) -> str:
        """text with every known (and given) sensitive value, in any of its forms, replaced by (sensitive),
        and the start of one that a cut (:func:`clip`) split as well."""
        order = self._forms(values)
        return _mask_cut_starts(_mask(text, order), order)

    def clip(self, text: str, limit: int) -> str:
        """text scrubbed, then cut to limit characters (:func:`clip`)."""
        return clip(self.scrub(text), limit)

    def leaks(self, text: str, values: Iterable[str] = ()) -> bool:
        """Whether text holds a known (or given) value in any form: for files, which are refused, not masked
        (whole forms only: a file's own "..." after two letters that begin a value is no leak)."""
        return _mask(text, self._forms(values)) != text

    def _forms(self, values: Iterable[str]) -> tuple[str, ...]:
        """The known forms and those of values, longest first (one form may contain another)."""
        extra = {f for v in values if len(v) >= MIN_SCRUB for f in forms(v)}
        return tuple(sorted({*self._order, *extra}, key=len, reverse=True)) if extra - self._known else self._order


def clip(text: str, limit: int) -> str:
    """text cut to limit characters, :data:`CUT` at the end.

    Pure: it needs no values. A cut may split a sensitive value and keep its first characters,
    which no whole form matches; :meth:`Scrubber.scrub`, on every channel, masks those too (the
    end of the text before each :data:`CUT` that begins a known form)."""
    return text if len(text) <= limit else text[: limit - len(CUT)] + CUT


def _mask(text: str, order: Iterable[str]) -> str:
    for v in order:
        if v in text:
            text = text.replace(v, MASK)
    return text


def _mask_cut_starts(text: str, order: tuple[str, ...]) -> str:
    """text with the end of each piece before a CUT masked where it begins a form (two characters
    or more: one tells nothing of a value, two may begin an ordinary word and are masked all the
    same; the cost of a cut that kept a value's start is a word masked for nothing)."""
    if CUT not in text or not order:
        return text
    pieces = text.split(CUT)
    for i, piece in enumerate(pieces[:-1]):
        k = _longest_start(piece, order)
        if k:
            pieces[i] = piece[:-k] + MASK
    return CUT.join(pieces)


def _longest_start(piece: str, order: tuple[str, ...]) -> int:
    """The length of the longest end of piece (2 characters or more) that is the start of a form."""
    best, last = 0, piece[-1:]
    if not last:
        return 0
    for form in order:
        j = form.rfind(last, 0, min(len(form), len(piece)))  # piece ends with form[: j + 1]?
        while j + 1 > max(best, 1):
            if piece.endswith(form[: j + 1]):
                best = j + 1
                break
            j = form.rfind(last, 0, j)
    return best


def occurrences(text: str, value: str) -> int:
    """How many times value appears in text, in any of its forms (the remembered values aside)."""
    count = 0
    for form in sorted(forms(value), key=len, reverse=True) if len(value) >= MIN_SCRUB else ():
        count += text.count(form)
        text = text.replace(form, "\0")
    return count

"""Sensitive variables: which fields hold them, masking, and the keyed hashes of a saved plan.

``sensitive: [NAME, ...]`` in cesync.yaml marks variables whose values are secret. A
field holds a sensitive value when its source text references ``${NAME}`` or its
rendered text contains the value (``$env_var`` copies a url into the schema). Such
fields are shown as ``(sensitive)`` on both sides of a diff, so neither the new nor
the remote's old value is ever printed; a change of one shows as
``(sensitive value changed)``.

A saved plan never holds a value. It holds, per variable,
``HMAC-SHA256(key, scrypt(value, salt || NAME))`` where ``salt`` is 16 random bytes
made for each plan (stored in it) and ``key`` is ``CESYNC_PLAN_KEY`` from the process
environment (empty when unset). The per-plan salt means the same secret gives
unrelated hashes in two plans and no table can be computed in advance; scrypt makes
each guess of a value cost tens of milliseconds and 16 MiB; with ``CESYNC_PLAN_KEY``
set (a CI secret of the plan and apply jobs), a reader of the plan file cannot test a
guess at all.

Defense in depth: every known value, in every form an output can carry (:func:`forms`),
is also replaced in whatever cesync prints or logs (:func:`scrub`), for values of at least
:data:`MIN_SCRUB` characters; a file cesync writes (export, pull) that would hold one is
refused instead (:func:`leaks`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import secrets
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the command line imports this module for every command: nothing heavy
    from .yamlfile import Path_

__all__ = [
    "CHANGED",
    "KEY_ENV",
    "MASK",
    "MIN_SCRUB",
    "binding_key",
    "clip",
    "field_paths",
    "forms",
    "input_only_fields",
    "input_only_values",
    "leaks",
    "mask",
    "new_salt",
    "occurrences",
    "remember",
    "scrub",
    "seal",
]

MASK = "(sensitive)"
CHANGED = "(sensitive value changed)"
MIN_SCRUB = 4
KEY_ENV = "CESYNC_PLAN_KEY"  # where a plan says its key came from (read in repo/keys.py)
_REF = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


# --- which fields hold a sensitive value ------------------------------------------------------


def field_paths(source: Any, rendered: Any, names: Iterable[str], values: Iterable[str]) -> list[Path_]:
    """Paths of the strings that reference a sensitive ${NAME} (source) or contain a value (rendered)."""
    wanted = set(names)
    found = {p for p, text in _strings(source) if wanted & set(_REF.findall(text))}
    needles = [v for v in values if len(v) >= MIN_SCRUB]
    found |= {p for p, text in _strings(rendered) if any(v in text for v in needles)}
    return sorted(found, key=lambda p: [str(x) for x in p])


def input_only_fields(model_name: str, body: dict[str, Any]) -> list[str]:
    """The INPUT_ONLY fields a body sets (cesync.api.behaviour): one-time credentials, treated as sensitive."""
    from ..api import behaviour as fb

    return [f for f in fb.fields(model_name, fb.INPUT_ONLY) if body.get(f) is not None]


def input_only_values(model_name: str, body: dict[str, Any]) -> list[str]:
    """Every string inside the body's INPUT_ONLY fields (for scrub)."""
    return [text for f in input_only_fields(model_name, body) for _, text in _strings(body[f])]


def _strings(data: Any, path: Path_ = ()) -> Iterable[tuple[Path_, str]]:
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _strings(v, (*path, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _strings(v, (*path, i))
    elif isinstance(data, str):
        yield path, data


def cut(path: Path_) -> Path_:
    """A path up to its first list index: canonical forms may reorder lists, so mask them whole."""
    out: list[str | int] = []
    for part in path:
        if isinstance(part, int):
            break
        out.append(part)
    return tuple(out)


def mask(data: Any, paths: Iterable[Path_]) -> Any:
    """A copy of data with the value at each path replaced by (sensitive).

    Where a path runs into a value that is no longer a container (a document the
    canonical form parsed, a string), that whole value is masked.
    """
    out = json.loads(json.dumps(data))
    for path in paths:
        out = _mask_one(out, tuple(path))
    return out


def _mask_one(data: Any, path: Path_) -> Any:
    if not path:
        return MASK if data is not None else None
    head, rest = path[0], path[1:]
    if isinstance(data, dict) and isinstance(head, str) and head in data:
        data[head] = _mask_one(data[head], rest)
        return data
    if isinstance(data, list) and isinstance(head, int) and 0 <= head < len(data):
        data[head] = _mask_one(data[head], rest)
        return data
    if isinstance(data, (dict, list)) or data is None:
        return data  # the path is not there: nothing to mask
    return MASK


def overlaps(dotted: str, paths: Iterable[Path_]) -> tuple[bool, bool]:
    """(the field is or lies inside a sensitive field, the field contains one deeper down)."""
    inside = contains = False
    for p in paths:
        s = ".".join(str(x) for x in cut(p))
        if dotted == s or dotted.startswith(s + "."):
            inside = True
        elif s.startswith(dotted + "."):
            contains = True
    return inside, contains


# --- keyed hashes -----------------------------------------------------------------------------


def new_salt() -> str:
    return secrets.token_hex(16)


def seal(values: Mapping[str, str], salt: str, key: bytes) -> dict[str, str]:
    """NAME -> keyed hash of its value (see the module docstring)."""
    out: dict[str, str] = {}
    for name in sorted(values):
        stretched = hashlib.scrypt(values[name].encode(), salt=bytes.fromhex(salt) + name.encode(), n=2**14, r=8, p=1, dklen=32)
        out[name] = "hmac-sha256:" + hmac.new(key, stretched, hashlib.sha256).hexdigest()
    return out


def binding_key(values: Mapping[str, str], salt: str, key: bytes) -> bytes:
    """The key of a saved plan's digest, body hashes and seal: ``HMAC-SHA256(key, scrypt(values, salt))``.

    They cover the unmasked bodies, so they are keyed like the values' own hashes: testing a
    guess of a value costs a scrypt, and with CESYNC_PLAN_KEY set it cannot be done at all.
    Without sensitive values there is nothing to stretch (the bodies are in the file).
    """
    material = json.dumps(sorted(values.items())).encode()
    stretched = (
        hashlib.scrypt(material, salt=bytes.fromhex(salt) + b"cesync-plan", n=2**14, r=8, p=1, dklen=32) if values else b""
    )
    return hmac.new(key, b"cesync plan binding\0" + stretched, hashlib.sha256).digest()


def same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


# --- the safety net on everything printed or logged --------------------------------------------

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

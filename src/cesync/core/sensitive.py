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

Defense in depth: every known value (and its JSON-escaped forms) is also replaced in
whatever cesync prints or logs (:func:`scrub`), for values of at least
:data:`MIN_SCRUB` characters.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
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
    "field_paths",
    "input_only_fields",
    "input_only_values",
    "mask",
    "new_salt",
    "remember",
    "scrub",
    "seal",
]

MASK = "(sensitive)"
CHANGED = "(sensitive value changed)"
MIN_SCRUB = 4
KEY_ENV = "CESYNC_PLAN_KEY"
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


def plan_key() -> bytes:
    return os.environ.get(KEY_ENV, "").encode()


def seal(values: Mapping[str, str], salt: str, key: bytes) -> dict[str, str]:
    """NAME -> keyed hash of its value (see the module docstring)."""
    out: dict[str, str] = {}
    for name in sorted(values):
        stretched = hashlib.scrypt(values[name].encode(), salt=bytes.fromhex(salt) + name.encode(), n=2**14, r=8, p=1, dklen=32)
        out[name] = "hmac-sha256:" + hmac.new(key, stretched, hashlib.sha256).hexdigest()
    return out


def same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


# --- the safety net on everything printed or logged --------------------------------------------

_KNOWN: set[str] = set()
_factory_installed = False


def _forms(value: str) -> set[str]:
    """The value as written, and as JSON writes it (with and without ASCII escapes)."""
    return {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}


def remember(values: Iterable[str]) -> None:
    """Values this process must never print or log (from here on)."""
    for v in values:
        if len(v) >= MIN_SCRUB:
            _KNOWN.update(f for f in _forms(v) if len(f) >= MIN_SCRUB)
    _install_log_filter()


def forget() -> None:
    _KNOWN.clear()


def scrub(text: str, values: Iterable[str] = ()) -> str:
    """text with every known (and given) sensitive value replaced by (sensitive)."""
    extra = {f for v in values if len(v) >= MIN_SCRUB for f in _forms(v)}
    for v in sorted(_KNOWN | extra, key=len, reverse=True):  # longest first: one value may contain another
        if v in text:
            text = text.replace(v, MASK)
    return text


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

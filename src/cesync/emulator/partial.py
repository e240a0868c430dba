"""Partial responses: the ``fields`` system parameter every Google API takes.

Google's discovery documents list ``fields`` among the parameters of every method ("Selector
specifying which fields to include in a partial response", ces.v1.json, revision 20261016);
its syntax is Google's partial-response selector: names separated by commas, ``a/b`` for a
field inside another, ``a(b,c)`` for several inside one, ``*`` for every field, a repeated
field's selection applied to each element. A selector that does not parse is refused with
INVALID_ARGUMENT. Whether CES refuses a well-formed name its message lacks the sources do not
say: here it selects nothing.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .errors import RpcError

__all__ = ["Selection", "parse_fields", "project", "selects", "without_last"]

Selection = dict[str, "Selection | None"]  # a name -> what of it is kept (None: all of it)

_TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*|\*|[,/()])", re.ASCII)
MAX_SELECTOR = 2048


def parse_fields(text: str) -> Selection:
    """The selection a ``fields`` value names; RpcError INVALID_ARGUMENT when it does not parse."""
    if len(text) > MAX_SELECTOR:
        raise RpcError("INVALID_ARGUMENT", f"Invalid field selection: longer than {MAX_SELECTOR} characters")
    tokens: list[str] = []
    at = 0
    while at < len(text.rstrip()):
        found = _TOKEN.match(text, at)
        if found is None:
            raise RpcError("INVALID_ARGUMENT", f"Invalid field selection {text[:200]!r} at character {at + 1}")
        tokens.append(found.group(1))
        at = found.end()
    selection, rest = _selector(tokens, 0, text)
    if rest != len(tokens):
        raise RpcError("INVALID_ARGUMENT", f"Invalid field selection {text[:200]!r}: unexpected {tokens[rest]!r}")
    return selection


def _selector(tokens: list[str], at: int, text: str) -> tuple[Selection, int]:
    selection: Selection = {}
    while True:
        at = _item(tokens, at, selection, text)
        if at < len(tokens) and tokens[at] == ",":
            at += 1
            continue
        return selection, at


def _item(tokens: list[str], at: int, into: Selection, text: str) -> int:
    path: list[str] = []
    while True:
        if at >= len(tokens) or not (tokens[at] == "*" or tokens[at][0].isalpha() or tokens[at][0] == "_"):
            raise RpcError("INVALID_ARGUMENT", f"Invalid field selection {text[:200]!r}: a field name is missing")
        path.append(tokens[at])
        at += 1
        if at < len(tokens) and tokens[at] == "/":
            at += 1
            continue
        break
    inner: Selection | None = None
    if at < len(tokens) and tokens[at] == "(":
        inner, at = _selector(tokens, at + 1, text)
        if at >= len(tokens) or tokens[at] != ")":
            raise RpcError("INVALID_ARGUMENT", f"Invalid field selection {text[:200]!r}: '(' is not closed")
        at += 1
    _add(into, path, inner)
    return at


def _add(into: Selection, path: list[str], inner: Selection | None) -> None:
    head, rest = path[0], path[1:]
    if rest:
        inner = _nest(rest, inner)
    if head in into and (into[head] is None or inner is None):
        into[head] = None  # one selection of all of it covers any narrower one
        return
    if head in into:
        merged = dict(into[head] or {})
        for name, sub in (inner or {}).items():
            _add(merged, [name], sub)
        into[head] = merged
    else:
        into[head] = inner


def _nest(path: list[str], inner: Selection | None) -> Selection:
    selection: Selection = {path[-1]: inner}
    for name in reversed(path[:-1]):
        selection = {name: selection}
    return selection


def project(value: Any, selection: Selection) -> Any:
    """value with only what selection names (a list: each element so)."""
    if isinstance(value, list):
        return [project(v, selection) for v in value]
    if not isinstance(value, dict):
        return value
    if "*" in selection:
        every = selection["*"]
        return {k: v if every is None else project(v, every) for k, v in value.items()}
    return {k: v if sub is None else project(v, sub) for k, sub in selection.items() if k in value for v in (value[k],)}


def selects(selection: Selection | None, *path: str) -> bool:
    """Whether selection keeps the field at path (None: no ``fields`` given, everything is kept)."""
    for name in path:
        if selection is None:
            return True
        if name not in selection and "*" not in selection:
            return False
        selection = selection[name] if name in selection else selection["*"]
    return True


def head_before(text: str, key: str) -> str | None:
    """A stored JSON object's text cut after '"key":' (store.page's cut), as the object without key:
    only when every field before it is a scalar, else None (the whole text is needed); a text
    with no such field is whole, and kept as it is."""
    if not text.endswith(f'"{key}":'):
        return text
    head = text[: -len(key) - 3].rstrip().removesuffix(",") + "}"
    try:
        fields = json.loads(head)
    except ValueError:
        return None
    return head if isinstance(fields, dict) and not any(isinstance(v, (dict, list)) for v in fields.values()) else None


def without_last(text: str, key: str) -> str:
    """A stored JSON object's text without key, where key is its last field and every field before it
    a scalar (an app version: its snapshot, written last, is as large as the app); any other text is
    parsed and printed again. Inside a JSON string every quote is escaped, so the first '"key":' of
    the text is a field's name, and with only scalars before it, a field of the object itself."""
    at = text.find(f'"{key}":')
    if at < 0:
        return text
    head = text[:at].rstrip().removesuffix(",") + "}"
    try:
        fields = json.loads(head)
    except ValueError:
        fields = None
    if not isinstance(fields, dict) or any(isinstance(v, (dict, list)) for v in fields.values()):
        data = json.loads(text)
        return json.dumps({k: v for k, v in data.items() if k != key}, separators=(",", ":"))
    return head

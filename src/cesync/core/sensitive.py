"""Sensitive variables: which fields hold them, and masking them (pure).

``sensitive: [NAME, ...]`` in cesync.yaml marks variables whose values are secret. A
field holds a sensitive value when its source text references ``${NAME}`` or its
rendered text contains the value (``$env_var`` copies a url into the schema). Such
fields are shown as ``(sensitive)`` on both sides of a diff, so neither the new nor
the remote's old value is ever printed; a change of one shows as
``(sensitive value changed)``.

A saved plan never holds a value: its keyed hashes are core/planseal.py's. Whatever cesync
prints or logs is scrubbed of every known value as well (the run's Scrubber, core/scrubber.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
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
    "input_only_names",
    "input_only_values",
    "mask",
]

MASK = "(sensitive)"
CHANGED = "(sensitive value changed)"
MIN_SCRUB = 4  # shorter values would match ordinary text: never looked for, never scrubbed
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
    return [f for f in input_only_names(model_name) if body.get(f) is not None]


def input_only_names(model_name: str) -> tuple[str, ...]:
    """The INPUT_ONLY fields of a message, set or not (none: no body of it holds one)."""
    from ..api import behaviour as fb

    return fb.fields(model_name, fb.INPUT_ONLY)


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

"""A JSON document edited in its own text: changed scalars replaced where they are written, so the
rest of the text (key order, spacing) stays; the indentation it uses, for when it must be rewritten."""

from __future__ import annotations

import json
import re
from typing import Any


def json_in_place(text: str, old: Any, new: Any) -> str | None:
    """Changed scalars of a JSON document replaced where they are written; None when that cannot be done."""
    changes: list[tuple[str, Any, Any]] = []
    if not _scalar_changes(old, new, "", changes):
        return None
    for key, before, after in changes:
        spellings = {json.dumps(before, ensure_ascii=False), json.dumps(before)}
        hits = [
            m for spelled in spellings for m in re.finditer(re.escape(json.dumps(key)) + r"(\s*:\s*)" + re.escape(spelled), text)
        ]
        if len(hits) != 1:
            return None
        m = hits[0]
        text = text[: m.start()] + json.dumps(key) + m.group(1) + json.dumps(after, ensure_ascii=False) + text[m.end() :]
    try:
        return text if json.loads(text) == new else None
    except ValueError:
        return None


def _scalar_changes(old: Any, new: Any, key: str, out: list[tuple[str, Any, Any]]) -> bool:
    """Collect (key, old, new) of changed scalar values; False when the shapes differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        return set(old) == set(new) and all(_scalar_changes(old[k], new[k], k, out) for k in old)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(_scalar_changes(a, b, key, out) for a, b in zip(old, new, strict=True))
    if isinstance(old, dict | list) or isinstance(new, dict | list) or not key:
        return False
    if old != new or type(old) is not type(new):
        out.append((key, old, new))
    return True


def json_indent(text: str) -> int | None:
    match = re.search(r"\n( +)\S", text)
    return len(match.group(1)) if match else None

"""Fields a newer API has and the emulator's snapshot lacks, found at any depth of a body, kept
aside while the message is checked, and grafted back where they were (the emulator serves them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.protobuf.descriptor import Descriptor

from .wire import OPAQUE, _fields, _is_map, descriptor

__all__ = ["Extra", "ExtraPath", "extras", "graft", "without"]


ExtraPath = tuple[str | int, ...]


@dataclass(frozen=True)
class Extra:
    """A field the snapshot lacks (a newer API's), found at any depth: where, in which message, its value."""

    path: ExtraPath  # keys and list indices down to the field, the field's own name last
    message: str  # full name of the message that holds it
    value: Any


def extras(collection: str, data: dict[str, Any]) -> list[Extra]:
    """Every field of ``data`` its message lacks, wherever it sits (list items and map values included)."""
    found: list[Extra] = []
    _extras(descriptor(collection), data, (), found)
    return found


def _extras(desc: Descriptor, value: Any, path: ExtraPath, found: list[Extra]) -> None:
    if not isinstance(value, dict):
        return
    table = _fields(desc)
    for key, item in value.items():
        f = table.get(key)
        if f is None:
            found.append(Extra((*path, key), desc.full_name, item))
            continue
        if f.message_type is None or f.message_type.full_name in OPAQUE:
            continue
        if _is_map(f):
            target = f.message_type.fields_by_name["value"].message_type
            if target is not None and target.full_name not in OPAQUE and isinstance(item, dict):
                for k, v in item.items():
                    _extras(target, v, (*path, key, k), found)
        elif f.is_repeated:
            for i, v in enumerate(item if isinstance(item, list) else []):
                _extras(f.message_type, v, (*path, key, i), found)
        else:
            _extras(f.message_type, item, (*path, key), found)


def without(data: dict[str, Any], found: list[Extra]) -> dict[str, Any]:
    """``data`` without these fields (copied along their paths only: data itself is left as it is)."""
    out: Any = data
    for extra in found:
        out = _removed(out, extra.path)
    return dict(out)


def _removed(node: Any, path: ExtraPath) -> Any:
    head, rest = path[0], path[1:]
    if isinstance(node, dict):
        out = dict(node)
        if rest:
            out[head] = _removed(node[head], rest)
        else:
            out.pop(head, None)
        return out
    if isinstance(node, list) and isinstance(head, int):
        items = list(node)
        items[head] = _removed(node[head], rest)
        return items
    return node


def graft(data: dict[str, Any], found: list[Extra]) -> dict[str, Any]:
    """``data`` with these fields put back where they were (an item or map entry that is gone takes its own along)."""
    for extra in found:
        node: Any = data
        for step in extra.path[:-1]:
            if isinstance(node, dict) and isinstance(step, str):
                node = node.setdefault(step, {})
            elif isinstance(node, list) and isinstance(step, int) and step < len(node):
                node = node[step]
            else:
                node = None
                break
        if isinstance(node, dict):
            node[str(extra.path[-1])] = extra.value
    return data

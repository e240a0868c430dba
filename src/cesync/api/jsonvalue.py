"""JSON from outside (a server's reply, a saved plan): parsed with a bound on its nesting (pure).

Python's JSON parser stops with RecursionError near the interpreter's recursion limit
(about 1,000 levels); a value just under that parses, and then every recursive pass over
it (masking, diffing, printing) could hit the same limit deeper in cesync. Nothing CES
sends or cesync writes comes near :data:`MAX_DEPTH`, so a deeper value is refused when it
is read, with a clear message, never as a RecursionError later.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

__all__ = ["MAX_DEPTH", "JsonValueError", "check_depth", "has_path", "loads", "value_at"]

MAX_DEPTH = 200


class JsonValueError(ValueError):
    """The text is not JSON, or is nested deeper than MAX_DEPTH; str() says which."""


def loads(text: str | bytes) -> Any:
    """json.loads, with RecursionError and over-deep values as JsonValueError."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise JsonValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise JsonValueError(f"not JSON ({exc})") from None
    check_depth(value)
    return value


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """JsonValueError when value holds lists or objects more than limit levels deep (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                if depth >= limit:
                    raise JsonValueError(f"nested deeper than {limit} levels")
                push((child, depth + 1))


def has_path(data: Any, path: Iterable[str | int]) -> bool:
    """Whether path leads to a value in JSON data (null included): where a problem can point."""
    for part in path:
        if isinstance(data, dict):
            if part not in data:
                return False
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return False
    return True


def value_at(data: Any, path: Iterable[str | int]) -> Any:
    """The value at path in JSON data (an object's key, an array's index); None where the path leaves it."""
    for part in path:
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return None
    return data

"""Whether an answer holds an expected value as a subset (pure; imports nothing of cesync, so
the emulator can judge goldens with it without sharing any reading of the API).

Every key an expected mapping names must be there and hold its value (more keys are fine), a
list must have as many items and each must match, and scalars are equal as JSON values: numbers
by value (``80 == 80.0``), a boolean never equal to a number. With ``regex_key``, a mapping of
that one key (``{"$regex": "..."}``) matches a string the pattern matches in full.

The differences come back as data: ``cesync test`` and the emulator's golden replay each say
them in words of their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Difference", "json_equal", "subset_differences"]

# regex: actual does not match the pattern (expected); mapping: actual is not one; missing: the
# last key of path is not in actual (the mapping); list: not a list of expected's length;
# value: two scalars differ.
Kind = Literal["regex", "mapping", "missing", "list", "value"]


@dataclass(frozen=True)
class Difference:
    path: str
    kind: Kind
    expected: Any
    actual: Any


def subset_differences(expected: Any, actual: Any, path: str, regex_key: str | None = None) -> list[Difference]:
    """Where actual does not hold expected, in the order expected names them; empty when it does."""
    if isinstance(expected, dict) and regex_key is not None and set(expected) == {regex_key}:
        pattern = str(expected[regex_key])
        if isinstance(actual, str) and re.fullmatch(pattern, actual, re.DOTALL):
            return []
        return [Difference(path, "regex", pattern, actual)]
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [Difference(path, "mapping", expected, actual)]
        out: list[Difference] = []
        for key, value in expected.items():
            where = f"{path}.{key}"
            if key not in actual:
                out.append(Difference(where, "missing", value, actual))
            else:
                out += subset_differences(value, actual[key], where, regex_key)
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [Difference(path, "list", expected, actual)]
        return [
            d
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for d in subset_differences(e, a, f"{path}[{i}]", regex_key)
        ]
    return [] if json_equal(expected, actual) else [Difference(path, "value", expected, actual)]


def json_equal(a: Any, b: Any) -> bool:
    """Equal as JSON values: int and float by value, otherwise the same type and equal (``True != 1``)."""
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        return float(a) == float(b)
    return bool(a == b) and type(a) is type(b)

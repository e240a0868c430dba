"""The subset match that `cesync test` and the emulator's golden replay share: what differs, where."""

from __future__ import annotations

from typing import Any

import pytest

from cesync.core.subset import Difference, json_equal, subset_differences


@pytest.mark.parametrize(
    ("expected", "actual", "found"),
    [
        ({"a": 1}, {"a": 1.0, "b": 2}, []),  # more keys are fine, numbers by value
        ({"a": {"b": [1, {"c": "x"}]}}, {"a": {"b": [1, {"c": "y"}]}}, [Difference("r.a.b[1].c", "value", "x", "y")]),
        ({"a": 1}, {"b": 2}, [Difference("r.a", "missing", 1, {"b": 2})]),
        ({"a": {"b": 1}}, {"a": [1]}, [Difference("r.a", "mapping", {"b": 1}, [1])]),
        ([1, 2], [1], [Difference("r", "list", [1, 2], [1])]),
        ({"a": True}, {"a": 1}, [Difference("r.a", "value", True, 1)]),  # JSON true is not 1
        ({"a": 1, "b": 2}, {}, [Difference("r.a", "missing", 1, {}), Difference("r.b", "missing", 2, {})]),
    ],
)
def test_what_differs_and_where(expected: Any, actual: Any, found: list[Difference]) -> None:
    assert subset_differences(expected, actual, "r") == found


def test_a_regex_key_matches_a_whole_string_only_when_asked_for() -> None:
    pattern = {"$regex": "Hel+o.*"}
    assert subset_differences(pattern, "Hello\nAda", "r", regex_key="$regex") == []
    assert subset_differences(pattern, "Oh Hello", "r", regex_key="$regex") == [Difference("r", "regex", "Hel+o.*", "Oh Hello")]
    assert subset_differences(pattern, 5, "r", regex_key="$regex") == [Difference("r", "regex", "Hel+o.*", 5)]
    # Without a regex key the mapping is just a mapping with a key "$regex".
    assert subset_differences(pattern, "Hello", "r") == [Difference("r", "mapping", pattern, "Hello")]


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [(80, 80.0, True), (1, True, False), (False, 0, False), (None, None, True), ("1", 1, False), (0.5, 0.5, True)],
)
def test_json_equality(a: Any, b: Any, equal: bool) -> None:
    assert json_equal(a, b) is equal and json_equal(b, a) is equal

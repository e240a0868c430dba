"""cesync.api.jsonvalue.has_path: whether a problem's path leads to a value of the file's data."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cesync.api.jsonvalue import has_path
from tests.strategies import json_values


def _walks(data: Any, path: list[str | int]) -> bool:
    """Python's own indexing along path, into objects and arrays only, an index whole and not negative."""
    node = data
    try:
        for part in path:
            if not isinstance(node, (dict, list)) or (isinstance(node, list) and (type(part) is not int or part < 0)):
                return False
            node = node[part]  # type: ignore[index]
    except (KeyError, IndexError):
        return False
    return True


@given(json_values(depth=3), st.lists(st.one_of(st.text(max_size=2), st.integers(-1, 3)), max_size=4))
def test_has_path_is_whether_indexing_along_the_path_succeeds(data: Any, path: list[str | int]) -> None:
    assert has_path(data, path) is _walks(data, path)


def test_a_null_value_is_there_and_leads_nowhere() -> None:
    assert has_path({"a": None}, ["a"]) and not has_path({"a": None}, ["a", "b"])
    assert has_path([[1]], [0, 0]) and not has_path([[1]], [0, 1]) and not has_path([1], [-1])

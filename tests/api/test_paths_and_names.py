"""The small helpers every layer shares: a value at a path in JSON data (api/jsonvalue.py), a field's
JSON name (api/protojson.py), and CES's $env_var placeholder put back (core/documents.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cesync.api.jsonvalue import value_at
from cesync.api.protojson import json_name
from cesync.core.documents import ENV_VAR, substitute_url, url_back
from tests.strategies import json_values

KEYS = st.text(st.characters(codec="ascii", categories=["Ll"]), min_size=1, max_size=4)


@given(value=json_values(), path=st.lists(KEYS | st.integers(0, 3), max_size=4))
def test_value_at_follows_objects_and_arrays_and_never_raises(value: Any, path: list[str | int]) -> None:
    expected: Any = value
    for part in path:
        inside = isinstance(expected, dict) and part in expected
        if inside or (isinstance(expected, list) and isinstance(part, int) and part < len(expected)):
            expected = expected[part]
        else:
            expected = None
            break
    assert value_at(value, path) == expected


@given(words=st.lists(KEYS, min_size=1, max_size=4))
def test_json_name_is_lower_camel_case(words: list[str]) -> None:
    name = json_name("_".join(words))
    assert name == words[0] + "".join(w.capitalize() for w in words[1:]) and "_" not in name


@given(before=KEYS, after=KEYS, host=KEYS)
def test_url_back_undoes_the_substitution(before: str, after: str, host: str) -> None:
    schema = f"servers:\n  - url: {ENV_VAR}\ninfo: {{title: {before}-{after}}}\n"
    url = f"https://{host}.example.com"
    assert url_back(substitute_url(schema, ENV_VAR, url), url) == schema
    assert url_back(schema, "") == schema

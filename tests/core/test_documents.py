"""core.documents: Python code and documents in resource bodies, read without dying on their shape."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.core import documents
from cesync.core.documents import ENV_VAR, parse_document, python_functions, substitute_url

# Python's parser gives up on these with MemoryError (its stack overflows) or RecursionError, not
# SyntaxError: a hostile server's tool, or the app's copy of one, must not end the run with them.
TOO_COMPLEX = [
    "def f(x: int) -> int:\n    return " + "-" * 100_000 + "1\n",
    "x = " + "not " * 100_000 + "1\n",
]


@pytest.mark.parametrize("code", TOO_COMPLEX, ids=["unary", "not"])
def test_code_too_complex_to_parse_is_a_value_error_saying_so(code: str) -> None:
    with pytest.raises(ValueError, match="too complex"):
        python_functions(code)


def _substituted_by_calls(data: Any, placeholder: str, url: str) -> Any:
    """documents._substituted spelt as one call per value: what the walk must give, shared parts and all."""
    if isinstance(data, str):
        return data.replace(placeholder, url) if placeholder in data else data
    if isinstance(data, dict):
        copy: dict[Any, Any] | None = None
        for k, v in data.items():
            if isinstance(k, str) and placeholder in k:
                raise documents._KeyPlaceholder
            new = _substituted_by_calls(v, placeholder, url)
            if new is not v:
                copy = dict(data) if copy is None else copy
                copy[k] = new
        return data if copy is None else copy
    if isinstance(data, list):
        items = [_substituted_by_calls(v, placeholder, url) for v in data]
        return data if all(a is b for a, b in zip(items, data, strict=True)) else items
    return data


def _same_sharing(a: Any, b: Any, source: Any) -> None:
    """a and b are equal, and each part of them is the source's own object exactly where the other's is."""
    assert type(a) is type(b) and a == b
    assert (a is source) == (b is source)
    if isinstance(a, dict):
        for k in a:
            _same_sharing(a[k], b[k], source.get(k) if isinstance(source, dict) else None)
    elif isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same_sharing(x, y, source[i] if isinstance(source, list) and i < len(source) else None)


_WORDS = st.sampled_from(["$v", "a$v", "x", "", "$", "v"])
_DATA = st.recursive(
    st.one_of(_WORDS, st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_WORDS, inner, max_size=4)),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None)
@given(data=_DATA)
def test_the_substituting_walk_gives_what_a_call_per_value_gives(data: Any) -> None:
    try:
        expected = _substituted_by_calls(data, "$v", "https://h/x")
    except documents._KeyPlaceholder:
        with pytest.raises(documents._KeyPlaceholder):
            documents._substituted(data, "$v", "https://h/x")
        return
    _same_sharing(documents._substituted(data, "$v", "https://h/x"), expected, data)


def test_substituting_parses_nothing_until_the_data_is_asked_for() -> None:
    """validate checks the unsubstituted text only: the substituted data is derived when a diff asks."""
    text = "openapi: 3.0.0\nservers: [{url: $env_var}]\npaths: {/never-parsed-before: {}}\n"
    before = documents._parse_document.cache_info().misses
    out = substitute_url(text, ENV_VAR, "https://api.example/v1")
    assert documents._parse_document.cache_info().misses == before
    data = parse_document(out)
    assert data["servers"] == [{"url": "https://api.example/v1"}]
    assert data["paths"] is parse_document(text)["paths"]  # shared with the unsubstituted document's
    assert parse_document(out) is data

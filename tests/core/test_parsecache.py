"""The parse cache gives back what the parse gave, a fresh copy each time, and keeps only plain data."""

from __future__ import annotations

import datetime
import marshal
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cesync.core import parsecache
from cesync.core.parsecache import ParseCache, cached

plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@pytest.fixture(autouse=True)
def none_installed() -> Iterator[None]:
    yield
    parsecache.install(None)


@given(st.text(max_size=20), plain)
def test_a_kept_parse_comes_back_equal_and_fresh(text: str, value: Any) -> None:
    calls: list[str] = []

    def parse(t: str) -> Any:
        calls.append(t)
        return value

    parsecache.install(ParseCache())
    assert cached(b"t", parse)(text) == value
    store = parsecache.current()
    assert store is not None
    parsecache.install(ParseCache(dict(store.used)))  # the next run, from what this one wrote
    again = cached(b"t", parse)(text)
    assert again == value and calls == [text]  # parsed once
    if isinstance(again, (dict, list)):
        again.clear()  # a caller changes what it is given (load_sources pops 'id')
        assert cached(b"t", parse)(text) == value


def test_what_marshal_cannot_write_is_parsed_again() -> None:
    calls: list[str] = []

    def parse(t: str) -> Any:
        calls.append(t)
        return {"when": datetime.date(2026, 1, 1)}

    parsecache.install(ParseCache())
    lookup = cached(b"t", parse)
    assert lookup("a") == lookup("a") and calls == ["a", "a"]


def test_an_uncachable_answer_is_not_kept() -> None:
    slow = object()
    calls: list[str] = []

    def parse(t: str) -> Any:
        calls.append(t)
        return slow

    parsecache.install(ParseCache())
    lookup = cached(b"t", parse, slow)
    assert lookup("x") is slow and lookup("x") is slow and calls == ["x", "x"]


def test_parsers_do_not_share_entries() -> None:
    parsecache.install(ParseCache())
    assert cached(b"a", lambda t: "from a")("same") == "from a"
    assert cached(b"b", lambda t: "from b")("same") == "from b"


def test_a_run_keeps_what_it_used_and_what_parsers_it_never_asked_kept() -> None:
    """plan asks no credential scan: the scans validate kept survive a plan between two validates;
    what a parser it asked did not use this run is dropped (the store never grows past the repo)."""
    old = ParseCache()
    for parser, text in ((b"y", "used"), (b"y", "gone"), (b"c", "scan")):
        old.put(old.key(parser, text), text)
    run = ParseCache(old.used)
    assert run.get(run.key(b"y", "used")) == "used"
    kept = run.kept()
    assert set(kept) == {run.key(b"y", "used"), run.key(b"c", "scan")}
    assert run.changed


def test_a_store_used_as_a_set_keeps_exactly_its_keys() -> None:
    run = ParseCache({b"x" * 21: b"", b"y" * 21: b""})
    run.keep_only({b"y" * 21})
    assert set(run.kept()) == {b"y" * 21} and run.changed
    run.keep_only({b"x" * 21, b"y" * 21})
    assert not run.changed


def test_nothing_holding_a_withheld_value_is_kept_or_looked_up() -> None:
    """What holds a sensitive value (a document a ${NAME} was substituted into, parsed) is not
    kept, nor what the store held of it (a variable marked sensitive since); a text holding
    one is not looked up: its key, a digest of the text, would let a reader check guesses."""
    secret = "tok-\u00e9-0123"
    old = ParseCache.key(b"d", "old")
    other = ParseCache.key(b"c", "unasked")
    cache = ParseCache({old: marshal.dumps({"url": f"https://x/{secret}"}), other: marshal.dumps([secret])})
    cache.put(ParseCache.key(b"y", "before"), [secret])
    cache.withhold([secret, ""])
    assert cache.get(old) is parsecache.MISSING
    cache.put(ParseCache.key(b"y", "after"), {"k": f"a {secret}"})
    cache.put(ParseCache.key(b"y", "clean"), ["clean"])
    assert set(cache.kept()) == {ParseCache.key(b"y", "clean")}
    assert cache.changed
    parsecache.install(cache)
    parse = cached(b"y", lambda text: [text])
    assert parse(f"x {secret}") == [f"x {secret}"]
    assert set(cache.kept()) == {ParseCache.key(b"y", "clean")}

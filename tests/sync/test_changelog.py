"""Who else wrote a resource between apply's read and its write (sync/changelog.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cesync.sync.changelog import Entry, nanos, overwritten

authors = st.sampled_from(["cesync@ci.example", "alice@example.com", "bob@example.com"])


def entry(author: str, etag: str, n: int = 0) -> Entry:
    return Entry(author, f"2026-01-01T00:00:{n:02d}.5Z", "globalInstruction", "Update", etag)


@given(before=st.lists(authors, max_size=4), between=st.lists(authors, max_size=4), after=st.lists(authors, max_size=4))
def test_only_other_authors_between_the_read_state_and_the_write_are_overwritten(
    before: list[str], between: list[str], after: list[str]
) -> None:
    us = "cesync@ci.example"
    log = [entry(a, f"b{i}") for i, a in enumerate(before)] + [entry(us, "read")]
    log += [entry(a, f"m{i}") for i, a in enumerate(between)] + [entry(us, "ours")]
    log += [entry(a, f"a{i}") for i, a in enumerate(after)]
    found = overwritten(log, "read", "ours")
    assert [e.etag for e in found] == [f"m{i}" for i, a in enumerate(between) if a != us]


def test_a_write_not_in_the_log_says_nothing() -> None:
    assert overwritten([entry("alice@example.com", "x")], "read", "ours") == []
    assert overwritten([entry("alice@example.com", "x")], "read", "") == []


def test_times_of_any_precision_compare() -> None:
    assert nanos("2026-01-01T00:00:00.123456789Z") == nanos("2026-01-01T00:00:00Z") + 123456789  # type: ignore[operator]
    assert nanos("yesterday") is None

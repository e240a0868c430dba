"""Matching a tool's answer: what a miss says."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cesync.tooltests.match import check
from cesync.tooltests.schema import Case

keys = st.text("abcdefgh", min_size=1, max_size=6).filter(lambda k: k not in ("result", "error"))
returned = st.dictionaries(keys, st.integers(0, 9), min_size=1, max_size=3)


@given(returned, st.booleans())
def test_a_miss_of_a_bare_return_value_says_the_answer_is_under_result(value: dict[str, int], bare: bool) -> None:
    """A Python tool answers {"result": ...}: the miss says where the keys went (issue #38, finding 9)."""
    expected = dict(value) if bare else {"result": {**value, "zz": 1}}
    case = Case(file="tests/t.yaml", line=1, name="t", tool="greet", response=expected)
    failures = check(case, {"response": {"result": value}}, None)
    assert failures
    assert any("nested under 'result'" in f for f in failures) == bare, failures

"""The Scrubber: the known values of one run, masked in what it prints and refused in what it writes."""

from __future__ import annotations

import html
import json
import threading

from hypothesis import given
from hypothesis import strategies as st

from cesync.core.scrubber import CUT, Scrubber, clip, occurrences
from cesync.core.sensitive import MASK

VALUE = "sk-scrubber-4821"


def test_remembered_values_are_masked_in_every_form() -> None:
    s = Scrubber()
    assert not s.known() and s.scrub(f"key {VALUE}") == f"key {VALUE}"
    s.remember([VALUE])
    assert s.known()
    assert s.scrub(f"key {VALUE} in {json.dumps({'k': VALUE})}") == f'key {MASK} in {{"k": "{MASK}"}}'


def test_values_given_at_construction_are_known() -> None:
    assert Scrubber([VALUE]).scrub(VALUE) == MASK


def test_two_scrubbers_share_nothing() -> None:
    a, b = Scrubber(), Scrubber()
    a.remember([VALUE])
    assert a.scrub(VALUE) == MASK
    assert b.scrub(VALUE) == VALUE and not b.known() and not b.leaks(VALUE)
    assert Scrubber().scrub(VALUE) == VALUE  # a new one starts empty


def test_the_module_holds_no_state() -> None:
    """Every run's values live in its own Scrubber: nothing module-wide, and no logging hook."""
    import logging

    import cesync.core.scrubber as module

    held = [n for n, v in vars(module).items() if not n.startswith("__") and isinstance(v, (list, dict, set, Scrubber))]
    assert held == []
    factory = logging.getLogRecordFactory()
    Scrubber([VALUE])
    assert logging.getLogRecordFactory() is factory


def test_short_values_are_not_remembered() -> None:
    s = Scrubber(["abc"])
    assert not s.known() and s.scrub("abc abc") == "abc abc"


def test_given_values_count_for_one_call_only() -> None:
    s = Scrubber()
    assert s.scrub(f"a {VALUE}", [VALUE]) == f"a {MASK}"
    assert s.leaks(f"a {VALUE}", [VALUE])
    assert s.scrub(f"a {VALUE}") == f"a {VALUE}" and not s.leaks(f"a {VALUE}")


def test_the_longest_value_is_masked_first() -> None:
    s = Scrubber(["abcd", "abcdefgh"])
    assert s.scrub("x abcdefgh y") == f"x {MASK} y"


def test_leaks_is_any_known_form() -> None:
    s = Scrubber([VALUE])
    assert s.leaks(f"url: https://x?key={VALUE}") and s.leaks(repr(VALUE)) and not s.leaks("nothing here")


@given(before=st.text(".", max_size=200), limit=st.integers(8, 160))
def test_clip_scrubs_before_the_cut(before: str, limit: int) -> None:
    value = "Zq9Wx7Kv3Lp2Mn8Rt4"
    shown = Scrubber([value]).clip(repr(before + value + " and more"), limit)
    assert len(shown) <= limit
    assert not any(value[:k] in shown for k in range(2, len(value) + 1)), shown


@given(before=st.text(st.sampled_from("ab.-' "), max_size=40), limit=st.integers(4, 80))
def test_a_cut_anywhere_in_any_form_leaves_no_start_of_the_value(before: str, limit: int) -> None:
    """clip is pure: the channel's scrub masks the start of a value a cut kept, in each form."""
    value = "Zq9W'x7Kv\"3Lp2"
    s = Scrubber([value])
    cut = clip(before + value + " and more", limit)
    shown = [s.scrub(clip(before + spelled + " and more", limit)) for spelled in (value, repr(value), json.dumps(value))]
    shown += [s.scrub(f"said {cut!r}"), s.scrub(json.dumps({"said": cut})), s.scrub(html.escape(cut))]
    for text in shown:
        assert not any(value[:k] in text or json.dumps(value[:k])[1:-1] in text for k in range(2, len(value) + 1)), text


def test_a_cut_keeps_ordinary_text() -> None:
    s = Scrubber([VALUE])
    assert clip("abcdefghij", 8) == "abcde" + CUT and clip("abc", 8) == "abc"
    assert s.scrub("loading... done") == "loading... done"
    assert s.scrub(f"said {VALUE[:6]}{CUT}") == f"said {MASK}{CUT}"
    assert not s.leaks(f"said {VALUE[:6]}{CUT}")  # a file is refused for a whole value only


def test_occurrences_ignores_the_remembered_values() -> None:
    Scrubber([VALUE])
    assert occurrences(f"{VALUE} {json.dumps(VALUE)}", VALUE) == 2
    assert occurrences("nothing", VALUE) == 0


def test_a_reader_in_another_thread_sees_old_or_new_forms_whole() -> None:
    s = Scrubber()
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(s.scrub(VALUE) for _ in range(200)))
    reader.start()
    s.remember([VALUE, "another-value-99"])
    reader.join()
    assert set(seen) <= {VALUE, MASK}

"""core.release: the schedule file, and where a release stands read from a deployment alone."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from cesync.core.release import (
    PREVIOUS_ID,
    TARGET_ID,
    ReleaseSpec,
    finish_body,
    hold_seconds,
    position,
    rollback_body,
    schedule,
    step_body,
)

APP = "projects/p/locations/l/apps/a"
OLD, NEW, DRAFT = f"{APP}/versions/old", f"{APP}/versions/new", f"{APP}/versions/-"


def spec(*shares: int) -> ReleaseSpec:
    return ReleaseSpec.model_validate({"steps": [{"traffic": s, "hold": "1m"} for s in shares]})


@given(h=st.integers(0, 48), m=st.integers(0, 59), s=st.integers(0, 59))
def test_hold_durations(h: int, m: int, s: int) -> None:
    assert hold_seconds(f"{h}h{m}m{s}s") == h * 3600 + m * 60 + s


@pytest.mark.parametrize("text", ["", "10", "10 m", "1d", "m", "-5s", "5s5"])
def test_bad_holds_say_how_to_write_one(text: str) -> None:
    with pytest.raises(ValueError, match="write a duration"):
        hold_seconds(text)


@pytest.mark.parametrize(
    ("steps", "said"),
    [([10, 50], "the last step gives the new version all traffic"), ([50, 10, 100], "must rise"), ([0, 100], "greater than")],
)
def test_a_schedule_rises_to_100(steps: list[int], said: str) -> None:
    with pytest.raises(ValidationError, match=said):
        spec(*steps)


shares_st = st.lists(st.integers(1, 99), min_size=0, max_size=5, unique=True).map(lambda xs: [*sorted(xs), 100])


@settings(max_examples=60)
@given(shares=shares_st, data=st.data())
def test_every_step_written_reads_back_as_that_step(shares: list[int], data: st.DataObject) -> None:
    plan = spec(*shares)
    i = data.draw(st.integers(0, len(shares) - 1))
    body, mask = step_body(OLD, NEW, shares[i])
    at = position({"appVersion": OLD, **body}, NEW, plan, DRAFT)
    assert (at.stage, at.step, at.previous, at.share) == ("running", i, OLD, shares[i])
    left = schedule(at, plan)
    assert [p.share for p in left] == shares[i:] and left[0].done and not any(p.done for p in left[1:])
    assert mask == ["experimentConfig"]


@settings(max_examples=60)
@given(shares=shares_st, other=st.integers(0, 100))
def test_a_share_no_step_gives_is_someone_elses(shares: list[int], other: int) -> None:
    body, _ = step_body(OLD, NEW, other)
    at = position(body, NEW, spec(*shares), DRAFT)
    assert at.stage == ("running" if other in shares else "foreign")


def test_fresh_done_and_foreign_splits() -> None:
    plan = spec(10, 100)
    assert position({}, NEW, plan, DRAFT).previous == DRAFT  # no appVersion: the draft
    assert position({"appVersion": OLD}, NEW, plan, DRAFT).stage == "fresh"
    assert position({"appVersion": NEW}, NEW, plan, DRAFT).stage == "done"
    one = {
        "experimentConfig": {"versionRelease": {"trafficAllocations": [{"id": "x", "appVersion": NEW, "trafficPercentage": 100}]}}
    }
    assert position(one, NEW, plan, DRAFT).stage == "done"
    hand = {"id": "mine", "appVersion": OLD, "trafficPercentage": 80}
    theirs = {"experimentConfig": {"versionRelease": {"trafficAllocations": [hand, {"id": TARGET_ID, "appVersion": NEW}]}}}
    assert position(theirs, NEW, plan, DRAFT).stage == "foreign"
    body, _ = step_body(OLD, f"{APP}/versions/other", 10)
    assert "releasing" in position(body, NEW, plan, DRAFT).why
    assert PREVIOUS_ID != TARGET_ID


def test_finish_and_rollback_leave_one_version_and_no_split() -> None:
    for body, mask in (finish_body(NEW), rollback_body(OLD)):
        assert set(mask) == {"appVersion", "experimentConfig"} and "experimentConfig" not in body
    assert position(finish_body(NEW)[0], NEW, spec(100), DRAFT).stage == "done"
    assert position(rollback_body(OLD)[0], NEW, spec(100), DRAFT).stage == "fresh"

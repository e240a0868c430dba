"""The passes of the app's records (core/passes/records.py): another owner's resources are never
deleted nor defined here, drift is judged by the sealed hashes too, and the plan says what it trusts."""

from __future__ import annotations

import pytest

from cesync.core.normalize import canonical
from cesync.core.ownership import DIFFERS, UNSEALED
from cesync.core.passes import RecordsInput
from cesync.core.passes.compare import compare
from cesync.core.passes.ownership import ownership
from cesync.core.passes.records import other_owners, record_notes, sealed_drift
from cesync.core.record import resource_sum
from cesync.errors import CesyncError

from .data import P, empty, given, remote_tool, tool

KEY = b"k" * 32


def test_without_records_read_nothing_changes() -> None:
    g = given([tool("t", "new")], [remote_tool("t"), remote_tool("u")], prune=True)
    plan = ownership(compare(empty(g), g), g)
    assert other_owners(plan, g) is plan and sealed_drift(plan, g) is plan and record_notes(plan, g) is plan


def test_another_owners_resource_is_kept_and_may_not_be_defined() -> None:
    records = RecordsInput(owner="web", others={"tool/theirs": "voice"})
    g = given([], [remote_tool("theirs"), remote_tool("mine")], prune=True, records=records)
    plan = other_owners(ownership(compare(empty(g), g), g), g)
    assert [c.id for c in plan.changes] == ["mine"] and plan.owners == {f"{P}/tools/theirs": "voice"}
    defining = given([tool("theirs", "new")], [remote_tool("theirs")], records=records)
    with pytest.raises(CesyncError, match="another repo owns"):
        other_owners(compare(empty(defining), defining), defining)


@pytest.mark.parametrize("same_as_applied", [True, False])
def test_drift_is_judged_by_the_sealed_hash(same_as_applied: bool) -> None:
    app = remote_tool("t", "console")
    applied = app if same_as_applied else remote_tool("t", "cesync")
    sums = {"tool/t": resource_sum(KEY, canonical(applied.kind, applied.id, applied.body).body)}
    authors = {f"{P}/tools/t": ("bob@example.com", "2026-01-01T00:00:00Z")}
    g = given(
        [tool("t", "repo")], [app], records=RecordsInput(sums=sums, sum_key=KEY, key_from="CESYNC_RECORD_KEY"), authors=authors
    )
    [c] = sealed_drift(compare(empty(g), g), g).changes
    assert c.drift == (None if same_as_applied else {"fields": [DIFFERS], "by": "bob@example.com", "at": "2026-01-01T00:00:00Z"})


@pytest.mark.parametrize("key_from", ["", "CESYNC_RECORD_KEY"])
def test_an_unsealed_record_says_what_it_lets_anyone_steer(key_from: str) -> None:
    g = given([], [], records=RecordsInput(ignored=("version v3: its seal does not match",), key_from=key_from))
    notes = record_notes(empty(g), g).record_notes
    assert notes[0] == "version v3: its seal does not match" and (UNSEALED in notes) == (key_from == "")

"""The ownership rules of the plan (core/ownership.py), on in-memory plans."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.core.normalize import canonical
from cesync.core.ownership import (
    DIFFERS,
    MAX_IGNORED_SHOWN,
    UNSEALED,
    drift_by_sums,
    foreign_references,
    made_before,
    other_owners,
    record_trust,
)
from cesync.core.plan import Change, Plan
from cesync.core.record import record_key, resource_sum
from cesync.errors import CesyncError

P = "projects/p/locations/us/apps/a"
KEY = record_key(b"secret")
TOOL = KINDS["tool"]


def remote(rid: str, code: str = "f") -> Resource:
    return Resource(TOOL, rid, {"name": f"{P}/tools/{rid}", "clientFunction": {"name": code}})


def change(rid: str, action: Any = "update", drift: dict[str, Any] | None = None) -> Change:
    return Change(kind=TOOL, id=rid, action=action, name=f"{P}/tools/{rid}", drift=drift)


def plan(*changes: Change, unmanaged: tuple[str, ...] = ()) -> Plan:
    return Plan(environment="e", app=P, digest="", changes=changes, unmanaged=unmanaged)


def sum_of(r: Resource) -> str:
    return resource_sum(KEY, canonical(r.kind, r.id, r.body).body)


@given(applied=st.sampled_from(["f", "g"]), now=st.sampled_from(["f", "g"]), snapshot_said=st.booleans())
def test_drift_is_what_the_sealed_hashes_say(applied: str, now: str, snapshot_said: bool) -> None:
    """Whatever the snapshot said (a copied record makes it the app's current state), the change is
    drift exactly when the app differs from the hash of what cesync applied."""
    sums = {"tool/t": sum_of(remote("t", applied))}
    said = {"fields": ["clientFunction"], "by": None, "at": None} if snapshot_said else None
    judged = drift_by_sums(plan(change("t", drift=said)), [remote("t", now)], sums, KEY).changes[0]
    assert (judged.drift is not None) == (applied != now)
    if applied != now and not snapshot_said:
        assert judged.drift == {"fields": [DIFFERS], "by": None, "at": None}


def test_without_a_key_or_hashes_drift_is_left_to_the_snapshot() -> None:
    p = plan(change("t"))
    assert drift_by_sums(p, [remote("t")], {"tool/t": "x"}, b"") is p
    assert drift_by_sums(p, [remote("t")], {}, KEY) is p


def test_an_owned_resource_gone_from_the_app_is_drift() -> None:
    judged = drift_by_sums(plan(change("t", "create")), [], {"tool/t": "x"}, KEY).changes[0]
    assert judged.drift is not None and judged.drift["fields"] == ["(deleted outside cesync)"]


def test_another_owners_resource_is_never_deleted_here() -> None:
    p = plan(change("theirs", "delete"), change("mine", "delete"), unmanaged=(f"{P}/tools/hand",))
    kept = other_owners(p, {"tool/theirs": "billing"}, "support")
    assert [c.id for c in kept.changes] == ["mine"]
    assert kept.unmanaged == (f"{P}/tools/hand", f"{P}/tools/theirs")
    assert kept.owners == {f"{P}/tools/theirs": "billing"}


@pytest.mark.parametrize("how", ["changed", "defined unchanged"])
def test_a_repo_that_defines_another_owners_resource_is_refused(how: str) -> None:
    p = plan(change("theirs")) if how == "changed" else plan()
    with pytest.raises(CesyncError, match=r"tool theirs \(owner 'billing'\)"):
        other_owners(p, {"tool/theirs": "billing"}, "support", ["tool/theirs"] if how != "changed" else [])


def test_a_reference_across_owners_must_name_what_the_app_holds() -> None:
    agent = Resource(KINDS["agent"], "front", {"tools": [f"{P}/tools/b1", f"{P}/tools/s1"]})
    mine = [agent, Resource(TOOL, "s1", {})]
    others = {"tool/b1": "billing"}
    assert foreign_references(mine, [remote("b1")], P, others) == []
    [problem] = foreign_references(mine, [], P, others)
    assert "agent front names tool/b1 of owner 'billing', which the app does not hold" in problem


def test_records_ignored_and_unsealed_are_said() -> None:
    assert record_trust(plan(), [], "CESYNC_PLAN_KEY").record_notes == ()
    assert record_trust(plan(), ["ignored x: why"], "").record_notes == ("ignored x: why", UNSEALED)


@pytest.mark.parametrize(
    ("said", "whose"),
    [("billing", ""), ("sales", "owner 'billing''s"), ("billing", "no other owner's")],
    ids=["right", "wrong", "nobody's"],
)
def test_a_ref_to_another_owner_names_the_owner_its_records_say(said: str, whose: str) -> None:
    others = {} if whose == "no other owner's" else {"tool/b1": "billing"}
    found = foreign_references([], [remote("b1")], P, others, {"tool/b1": ("agents/front.yaml", said)})
    assert found == ([f"agents/front.yaml: {{ref: tools/b1, owner: {said}}}: the app's records make it {whose}"] if whose else [])


def stamp(nanos: int, digits: int) -> str:
    """nanos after 2026-01-01T00:00:00Z as CES prints a time, with digits of fraction (0: none)."""
    import datetime

    whole = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(seconds=nanos // 10**9)
    fraction = f"{nanos % 10**9:09d}"[:digits]
    return whole.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if digits else "") + "Z"


@given(
    made=st.lists(st.integers(0, 5 * 10**9).map(lambda n: n - n % 1000), min_size=1, max_size=6),
    record=st.integers(0, 5 * 10**9).map(lambda n: n - n % 1000),
    digits=st.sampled_from([6, 9]),
)
def test_a_record_owns_nothing_the_app_made_after_its_version(made: list[int], record: int, digits: int) -> None:
    """A hand-made resource that took the id of one cesync pruned is newer than every record that
    owned the id: those records do not make it cesync's. Times compare as times, whatever the
    precision each is printed with (a string compare puts '42.5Z' before '42Z')."""
    tools = [Resource(TOOL, f"t{i}", {"createTime": stamp(n, digits)}) for i, n in enumerate(made)]
    owned = {f"tool/t{i}" for i in range(len(made))} | {"tool/absent"}
    kept = made_before(owned, tools, stamp(record, 0 if record % 10**9 == 0 else 9))
    assert kept == {"tool/absent"} | {f"tool/t{i}" for i, n in enumerate(made) if n <= record}


TIMES = st.sampled_from(
    [
        "2026-01-01T00:00:00Z",
        "2026-01-01T00:00:00.5Z",
        "2026-01-01T00:00:00.000000001Z",
        "2026-01-01T00:00:01Z",
        "2025-12-31T23:59:59.999Z",
        "2026-01-01T01:00:00+02:00",  # before 00:00:00Z, though its digits are not
        "2025-12-31T23:00:00-02:00",  # after it, though its digits are not
        "2026-02-30T00:00:00Z",  # no such day
        "2025-13-01T00:00:00Z",  # no such month
        "2026-01-01 00:00:00Z",
        "1Z",
        "yesterday",
        "",
    ]
)


@given(made=st.lists(st.one_of(TIMES, st.integers(0, 3)), max_size=6), record=TIMES)
def test_a_time_is_later_only_as_read_in_full(made: list[str | int], record: str) -> None:
    """Whatever the app prints, a resource is left out exactly when its time, read as a time,
    is after the record's: the shortcut on the digits of two UTC times changes nothing."""
    from cesync.core.ownership import _stamp

    tools = [Resource(TOOL, f"t{i}", {"createTime": m}) for i, m in enumerate(made)]
    owned = {f"tool/t{i}" for i in range(len(made))}
    since = _stamp(record)
    later = {f"tool/t{i}" for i, m in enumerate(made) if since is not None and (at := _stamp(m)) is not None and at > since}
    assert made_before(owned, tools, record) == owned - later


def test_a_time_that_cannot_be_read_leaves_ownership_alone() -> None:
    tools = [Resource(TOOL, "t", {"createTime": "yesterday"})]
    assert made_before({"tool/t"}, tools, "2026-01-01T00:00:00Z") == {"tool/t"}
    assert made_before({"tool/t"}, [Resource(TOOL, "t", {"createTime": "2027-01-01T00:00:00Z"})], "") == {"tool/t"}


@given(count=st.integers(0, 3000))
def test_a_flood_of_ignored_records_is_named_a_few_then_counted(count: int) -> None:
    """A console user can make thousands of versions that look like records: the plan (and the
    comment a bot posts of it) names the newest few and counts the rest."""
    ignored = [f"ignored the applied record in {P}/versions/v{i}: it is not sealed" for i in range(count)]
    notes = record_trust(plan(), ignored, "CESYNC_RECORD_KEY").record_notes
    shown = min(count, MAX_IGNORED_SHOWN)
    assert list(notes[:shown]) == ignored[:shown]
    assert len(notes) == shown + (count > shown)
    if count > shown:
        assert notes[-1] == f"and {count - shown} more records ignored"

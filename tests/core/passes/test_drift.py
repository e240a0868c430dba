"""The drift pass labels a change whose app side differs from the record's snapshot, with the
author the changelogs name; maybe_drifted never leaves out what drifted."""

from __future__ import annotations

from hypothesis import given as hypothesis_given
from hypothesis import settings
from hypothesis import strategies as st

from cesync.core.passes.compare import compare
from cesync.core.passes.drift import drift, maybe_drifted

from .data import P, empty, given, remote_tool, tool


@settings(max_examples=60, deadline=None)
@hypothesis_given(
    recorded=st.sampled_from(["f", "g", None]), now=st.sampled_from(["f", "g", None]), want=st.sampled_from(["f", "h"])
)
def test_drift_is_the_app_against_the_record(recorded: str | None, now: str | None, want: str) -> None:
    base = {("tool", "t"): remote_tool("t", recorded).body} if recorded else {}
    remote = [remote_tool("t", now)] if now else []
    name = f"{P}/tools/t"
    g = given([tool("t", want)], remote, base=base, authors={name: ("alice@example.com", "2026-01-01T00:00:00Z")})
    plan = drift(compare(empty(g), g), g)
    labelled = {c.id: c.drift for c in plan.changes if c.drift}
    drifted = recorded != now
    if drifted and plan.changes:
        fields = (
            ["(deleted outside cesync)"]
            if now is None
            else ["(made outside cesync)"]
            if recorded is None
            else ["clientFunction.name"]
        )
        assert labelled == {"t": {"fields": fields, "by": "alice@example.com", "at": "2026-01-01T00:00:00Z"}}
    else:
        assert labelled == {}
    if labelled:
        assert name in maybe_drifted(P, g.desired, g.remote, base)


def test_without_a_record_nothing_is_drift() -> None:
    g = given([tool("t", "new")], [remote_tool("t")])
    compared = compare(empty(g), g)
    assert drift(compared, g) is compared


@settings(max_examples=60, deadline=None)
@hypothesis_given(
    recorded=st.sampled_from(["f", "g"]),
    now=st.sampled_from(["f", "g"]),
    etag=st.sampled_from(["e-t", "e-2"]),
    stamped=st.sampled_from([{}, {"updateTime": "2026-01-01T00:00:00Z"}]),
)
def test_only_a_field_beyond_the_servers_own_may_have_drifted(
    recorded: str, now: str, etag: str, stamped: dict[str, str]
) -> None:
    """The record's snapshot and the app compared without name, etag and times: a new etag alone is no drift."""
    base = {("tool", "t"): remote_tool("t", recorded).body}
    g = given([tool("t")], [remote_tool("t", now, etag=etag, **stamped)])
    found = maybe_drifted(P, g.desired, g.remote, base)
    assert found == ({f"{P}/tools/t"} if recorded != now else set())

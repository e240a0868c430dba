"""The ownership pass: a delete stays only under prune, and only of what cesync owns (or every
resource under --prune-unmanaged, or when no record says what is owned); the rest is listed."""

from __future__ import annotations

from hypothesis import given as hypothesis_given
from hypothesis import settings
from hypothesis import strategies as st

from cesync.core.passes.compare import compare
from cesync.core.passes.ownership import ownership

from .data import P, empty, given, remote_tool

IDS = ["a", "b", "c", "d"]


@settings(max_examples=80, deadline=None)
@hypothesis_given(
    prune=st.booleans(),
    unmanaged=st.booleans(),
    owned=st.none() | st.frozensets(st.sampled_from([f"tool/{i}" for i in IDS])),
)
def test_deletes_only_what_is_owned_under_prune(prune: bool, unmanaged: bool, owned: frozenset[str] | None) -> None:
    g = given([], [remote_tool(i) for i in IDS], prune=prune, prune_unmanaged=unmanaged, owned=owned)
    plan = ownership(compare(empty(g), g), g)
    deleted = {c.id for c in plan.changes if c.action == "delete"}
    expected = set(IDS) if prune and (unmanaged or owned is None) else {i for i in IDS if prune and f"tool/{i}" in (owned or ())}
    assert deleted == expected
    assert set(plan.unmanaged) == {f"{P}/tools/{i}" for i in set(IDS) - expected}
    assert plan.owned == tuple(sorted(owned or ()))
    assert (plan.prune, plan.prune_unmanaged) == (prune, unmanaged)

"""Planning's reads around the passes: the changelogs are asked only of what may have drifted."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.core.passes.drift import maybe_drifted
from cesync.sync.recordcache import AppBase

P = "projects/p/locations/us/apps/a"
IDS = st.sets(st.sampled_from([f"t{i}" for i in range(6)]), max_size=6)


@settings(max_examples=60, deadline=None)
@given(repo=IDS, app=IDS, changed=IDS, kind=st.sampled_from(["tool", "toolset", "deployment"]))
def test_an_app_that_stands_for_its_base_has_drifted_nowhere(repo: set[str], app: set[str], changed: set[str], kind: str) -> None:
    """read_for_plan skips maybe_drifted for an AppBase: against the app it was made from, it finds nothing."""
    desired = [Resource(KINDS[kind], i, {"displayName": "new" if i in changed else "d"}) for i in sorted(repo)]
    remote = [
        Resource(KINDS[kind], i, {"name": f"{P}/{KINDS[kind].collection}/{i}", "etag": "e", "displayName": "d"})
        for i in sorted(app)
    ]
    assert maybe_drifted(P, desired, remote, AppBase(remote)) == set()

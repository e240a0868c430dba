"""The targets pass keeps only what --target names (and the app when it must be created), and
refuses a change that names something new the targets leave out."""

from __future__ import annotations

import pytest
from hypothesis import given as hypothesis_given
from hypothesis import settings
from hypothesis import strategies as st

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.core.passes.compare import compare
from cesync.core.passes.targets import targets
from cesync.errors import CesyncError

from .data import P, empty, given, remote_tool, tool


@settings(max_examples=40, deadline=None)
@hypothesis_given(chosen=st.sets(st.sampled_from(["a", "b", "c", "tool/a", "tool/d"]), min_size=1))
def test_only_the_targets_stay(chosen: set[str]) -> None:
    g = given([tool("a"), tool("b", "new"), tool("c")], [remote_tool("b"), remote_tool("d")], targets=chosen)
    plan = targets(compare(empty(g), g), g)
    named = {t.rpartition("/")[2] for t in chosen}
    assert {c.id for c in plan.changes} == named  # a, c created, b updated, d deleted: each only when named
    assert plan.targets == tuple(sorted(chosen))


def test_no_targets_keeps_everything() -> None:
    g = given([tool("a")], [remote_tool("b")])
    compared = compare(empty(g), g)
    assert targets(compared, g) == compared


def test_a_target_naming_an_untargeted_new_resource_is_refused() -> None:
    uses = Resource(KINDS["agent"], "a", {"displayName": "a", "tools": [f"{P}/tools/b"]})
    g = given([uses, tool("b")], [], targets={"agent/a"})
    with pytest.raises(CesyncError, match="--target tools/b"):
        targets(compare(empty(g), g), g)

"""The masking pass is the one place values are masked: what a change shows of a sensitive path
is the mask (or that it changed), what it sends (body) and what it read (read) stay whole."""

from __future__ import annotations

import json

from hypothesis import given as hypothesis_given
from hypothesis import settings
from hypothesis import strategies as st

from cesync.core.passes.compare import compare
from cesync.core.passes.masking import masking
from cesync.core.sensitive import CHANGED

from .data import P, empty, given, remote_tool, tool

SECRET = st.text(alphabet="0123456789abcdef", min_size=12, max_size=20).map(lambda s: "S" + s)  # never in a key or a mask


@settings(max_examples=40, deadline=None)
@hypothesis_given(old=SECRET, new=SECRET)
def test_no_value_of_a_sensitive_path_is_shown(old: str, new: str) -> None:
    desired = [tool("t", new), tool("n", new)]
    g = given(
        desired,
        [remote_tool("t", old)],
        sensitive={("tool", "t"): [("clientFunction", "name")], ("tool", "n"): [("clientFunction", "name")]},
    )
    plan = masking(compare(empty(g), g), g)
    shown = json.dumps([[c.before, c.after, [(f.before, f.after) for f in c.fields]] for c in plan.changes])
    if old != new:
        assert old not in shown and new not in shown
        [update] = [c for c in plan.changes if c.action == "update"]
        assert [(f.path, f.after) for f in update.fields] == [("clientFunction.name", CHANGED)]
        assert update.read is not None and update.read["clientFunction"]["name"] == old
    assert all((c.body or {})["clientFunction"]["name"] == new for c in plan.changes)
    assert plan.sensitive.fields == {f"{P}/tools/n": [["clientFunction", "name"]], f"{P}/tools/t": [["clientFunction", "name"]]}


def test_without_sensitive_paths_the_plan_is_unchanged() -> None:
    g = given([tool("t", "new")], [remote_tool("t")])
    compared = compare(empty(g), g)
    assert masking(compared, g) is compared

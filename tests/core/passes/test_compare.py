"""The compare pass: a create per resource the app lacks, an update per one that differs (only
what differs in its mask), a delete per deletable resource the repo lacks; nothing for the same."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import given as hypothesis_given
from hypothesis import settings
from hypothesis import strategies as st

from cesync.core.passes import Compared
from cesync.core.passes.compare import compare

from .data import P, empty, given, remote_tool, tool

IDS = st.sets(st.sampled_from([f"t{i}" for i in range(8)]), max_size=8)


@settings(max_examples=60, deadline=None)
@hypothesis_given(repo=IDS, app=IDS, changed=IDS)
def test_one_change_per_difference(repo: set[str], app: set[str], changed: set[str]) -> None:
    desired = [tool(i, "new" if i in changed else "f") for i in sorted(repo)]
    remote = [remote_tool(i) for i in sorted(app)]
    g = given(desired, remote)
    plan = compare(empty(g), g)
    actions = {c.id: c.action for c in plan.changes}
    assert actions == (
        {i: "create" for i in repo - app} | {i: "update" for i in repo & app & changed} | {i: "delete" for i in app - repo}
    )
    for c in plan.changes:
        assert c.name == f"{P}/tools/{c.id}"
        if c.action == "update":
            assert c.update_mask == ("clientFunction.name",) and c.etag == f"e-{c.id}"
            assert c.read == c.before  # unmasked until the masking pass


def test_the_app_is_created_first_when_the_repo_has_no_app_yaml() -> None:
    g = given([tool("t")], [], app_body={"displayName": "a"})
    plan = compare(empty(g), g)
    assert [(c.kind.name, c.action) for c in plan.changes] == [("app", "create"), ("tool", "create")]
    assert plan.changes[1].depends_on == (P,)  # nothing exists before its app


def test_resend_input_only_makes_an_update_of_an_unchanged_resource() -> None:
    body = {"displayName": "d", "channelProfile": {}, "whatsappCredentials": {"authCode": "x", "pin": "1"}}
    from cesync.api.kinds import KINDS
    from cesync.api.resource import Resource

    desired = [Resource(KINDS["deployment"], "d", body)]
    remote = [Resource(KINDS["deployment"], "d", {"name": f"{P}/deployments/d", "displayName": "d", "channelProfile": {}})]
    quiet = given(desired, remote)
    assert compare(empty(quiet), quiet).changes == ()
    loud = given(desired, remote, resend_input_only=True)
    [c] = compare(empty(loud), loud).changes
    assert c.action == "update" and "whatsappCredentials" in c.update_mask and "--resend-input-only" in c.note


def test_a_pair_found_equal_is_known_to_the_next_run_and_not_diffed_again() -> None:
    from dataclasses import replace

    from cesync.core.passes import Compared

    g = given([tool("a"), tool("b", "new")], [remote_tool("a"), remote_tool("b")], compared=Compared(b"salt"))
    first = compare(empty(g), g)
    assert len(first.same) == 1 and [c.id for c in first.changes] == ["b"]
    # the next run, told of that pair, finds it again; under another description it is another pair
    again = replace(g, compared=Compared(b"salt", first.same))
    assert compare(empty(again), again).same == first.same
    other_salt = replace(g, compared=Compared(b"another description", first.same))
    assert compare(empty(other_salt), other_salt).same != first.same


def test_a_body_holding_a_sensitive_value_is_never_known_by_a_digest() -> None:
    from cesync.core.passes import Compared

    g = given(
        [tool("a", "s3cret-value"), tool("b")],
        [remote_tool("a", "s3cret-value"), remote_tool("b")],
        compared=Compared(b"salt"),
        sensitive={("tool", "a"): [("clientFunction", "name")]},
    )
    plan = compare(empty(g), g)
    assert not plan.changes and len(plan.same) == 1  # b's pair only


def test_a_write_waits_only_for_what_the_same_apply_creates() -> None:
    named = f"{P}/tools/b"
    g = given([tool("a", "new", description=named), tool("b")], [remote_tool("a")])
    waits = {c.id: (c.depends_on, c.level) for c in compare(empty(g), g).changes}
    assert waits == {"a": ((named,), 1), "b": ((), 0)}
    # b exists: nothing is created, nothing waits
    g = given([tool("a", "new", description=named), tool("b", "new")], [remote_tool("a"), remote_tool("b")])
    waits = {c.id: (c.depends_on, c.level) for c in compare(empty(g), g).changes}
    assert waits == {"a": ((), 0), "b": ((), 0)}


def _halves(items: list[Any], work: Callable[[list[Any]], list[Any]]) -> list[Any]:
    """A mapper as repo.parallel.run is one: every other item done apart, the results woven back."""
    evens, odds = work(items[0::2]), work(items[1::2])
    out = evens + odds
    out[0::2], out[1::2] = evens, odds
    return out


CHANGES = st.sampled_from(["same", "name", "unknown", "gone", "new"])


@settings(max_examples=60, deadline=None)
@hypothesis_given(changes=st.lists(CHANGES, max_size=12), resend=st.booleans())
def test_the_diffs_made_apart_give_the_same_plan(changes: list[str], resend: bool) -> None:
    """The mapper a pipeline hands in (two processes) changes nothing: the same changes, masks,
    bodies and unknown fields as diffs made in turn, the input-only fields sent again included."""
    from cesync.api.kinds import KINDS
    from cesync.api.resource import Resource

    desired, remote = [], []
    for i, change in enumerate(changes):
        rid = f"t{i}"
        if change != "gone":
            desired.append(tool(rid, "g" if change == "name" else "f"))
        if change != "new":
            remote.append(remote_tool(rid, **({"surprise": 1} if change == "unknown" else {})))
        if i % 3 == 0:  # one whose input-only field is sent again with --resend-input-only, else never compared
            desired.append(Resource(KINDS["deployment"], f"d{i}", {"displayName": "d", "whatsappCredentials": {"pin": "1"}}))
            remote.append(Resource(KINDS["deployment"], f"d{i}", {"name": f"{P}/deployments/d{i}", "displayName": "d"}))
    options: dict[str, Any] = {"resend_input_only": resend, "compared": Compared(b"s")}
    one, two = given(desired, remote, **options), given(desired, remote, mapper=_halves, **options)
    assert compare(empty(two), two) == compare(empty(one), one)

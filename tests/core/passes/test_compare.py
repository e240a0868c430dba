"""The compare pass: a create per resource the app lacks, an update per one that differs (only
what differs in its mask), a delete per deletable resource the repo lacks; nothing for the same."""

from __future__ import annotations

from hypothesis import given as hypothesis_given
from hypothesis import settings
from hypothesis import strategies as st

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

"""render/common: the parts every renderer shares."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.core.plan import Plan
from cesync.core.planbuild import build_plan
from cesync.render.common import unified, unmanaged_groups
from cesync.render.markdown import render_markdown
from cesync.render.text import render_text

PARENT = "projects/p/locations/us/apps/a"
IDS = st.sets(st.sampled_from(["a", "b", "c", "d", "e", "f"]), max_size=6)


def _tool(rid: str) -> Resource:
    return Resource(KINDS["tool"], rid, {"name": f"{PARENT}/tools/{rid}", "clientFunction": {"name": rid}})


@given(remote=IDS, desired=IDS, owned=st.none() | IDS)
def test_each_kept_resource_is_under_the_flag_that_deletes_it(
    remote: set[str], desired: set[str], owned: set[str] | None
) -> None:
    """The hint of a plan without --prune says what --prune would delete: checked against the
    plan --prune makes from the same app, repo and record."""

    def plan(prune: bool) -> Plan:
        made = build_plan(
            "dev",
            PARENT,
            [_tool(r) for r in sorted(desired)],
            [_tool(r) for r in sorted(remote)],
            prune=prune,
            owned=None if owned is None else frozenset(f"tool/{r}" for r in owned),
        )
        return dataclasses.replace(made, record="" if owned is None else f"{PARENT}/versions/v")

    kept = plan(False)
    groups = dict(unmanaged_groups(kept))
    by_prune = {
        n.rsplit("/", 1)[-1] for n in groups.get("kept; --prune deletes them", []) + groups.get("kept; --prune deletes it", [])
    }
    by_unmanaged = {
        n.rsplit("/", 1)[-1]
        for n in groups.get("kept: cesync did not make them; --prune-unmanaged deletes them", [])
        + groups.get("kept: cesync did not make it; --prune-unmanaged deletes it", [])
    }
    assert not by_prune & by_unmanaged and by_prune | by_unmanaged == remote - desired  # each once
    pruned = plan(True)
    assert by_prune == {c.id for c in pruned.changes if c.action == "delete"}
    assert all("--prune-unmanaged" in why for why, _ in unmanaged_groups(pruned))


code_lines = st.lists(st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=20), min_size=1, max_size=6)


@given(code_lines, st.booleans())
def test_a_change_no_line_diff_shows_is_said_in_words(lines: list[str], final: bool) -> None:
    """CRLF against LF, or a final newline, differ with equal lines: the diff says what differs (issue #38, finding 3)."""
    lf = "\n".join(["def f():", *lines]) + ("\n" if final else "")
    for remote in (lf.replace("\n", "\r\n"), lf + "\n"):
        shown = unified(remote, lf, "pythonFunction.pythonCode")[2:]
        said = "line endings only" in shown[0] or "newline at the end" in shown[0] if shown else False
        assert said or any(line.startswith(("+", "-")) for line in shown), (remote, lf, shown)


@given(prune_unmanaged=st.booleans(), destroy=st.booleans())
def test_a_plan_without_changes_says_what_that_means(prune_unmanaged: bool, destroy: bool) -> None:
    """A finished tear-down has nothing to delete, but the app no longer matches the repo: the
    text and Markdown plans must not say it does."""
    plan = dataclasses.replace(build_plan("dev", PARENT, [], [], prune=True), destroy=destroy, prune_unmanaged=prune_unmanaged)
    for shown in (render_text(plan), render_markdown(plan)):
        assert ("matches the repo" in shown) is not destroy
        assert ("is left in the app" in shown) is destroy

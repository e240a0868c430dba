"""The ignore pass: fields left to the console (ignoreChanges) are never changed (issue #38 item 1)."""

from __future__ import annotations

from hypothesis import given as hypothesis_given
from hypothesis import strategies as st

from cesync.core.planbuild import run_passes

from .data import P, given, remote_tool, tool

TIMEOUTS = st.sampled_from(["1s", "5s", "9s"])


@hypothesis_given(repo_fn=st.sampled_from(["f", "g"]), repo_t=TIMEOUTS, app_t=TIMEOUTS, saved=st.booleans())
def test_an_ignored_field_is_never_planned_and_the_rest_is(repo_fn: str, repo_t: str, app_t: str, saved: bool) -> None:
    rules = {("tool", "a"): ["timeout"]} if saved else {}
    plan = run_passes(given([tool("a", repo_fn, timeout=repo_t)], [remote_tool("a", timeout=app_t)], ignore=rules))
    masks = [c.update_mask for c in plan.changes]
    expected = {*(["clientFunction.name"] if repo_fn != "f" else []), *(["timeout"] if repo_t != app_t and not saved else [])}
    assert masks == ([tuple(sorted(expected))] if expected else [])
    assert plan.ignored == ({f"{P}/tools/a": ["timeout"]} if saved and repo_t != app_t else {})
    for c in plan.changes:  # what apply sends keeps the app's value of the ignored field
        assert c.body is not None and c.body["timeout"] == (app_t if saved else repo_t)


def test_a_create_sends_the_repo_s_value_and_the_digest_is_the_repo_s() -> None:
    rules = {("tool", "a"): ["timeout"]}
    created = run_passes(given([tool("a", timeout="5s")], [], ignore=rules))
    assert [c.action for c in created.changes] == ["create"] and created.changes[0].body["timeout"] == "5s"
    with_rule = run_passes(given([tool("a", timeout="5s")], [remote_tool("a", timeout="9s")], ignore=rules))
    without = run_passes(given([tool("a", timeout="5s")], [remote_tool("a", timeout="9s")]))
    assert with_rule.digest == without.digest  # a saved plan is checked against the repo, not the app

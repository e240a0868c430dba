"""Fields left to the console (core.ignore, issue #38 item 1): the pure pass."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.core.diff import diff_resource
from cesync.core.ignore import covers, leave_to_console

APP = "projects/p/locations/us/apps/a"
AGENT = KINDS["agent"]
FIELDS = ["description", "instruction", "displayName"]
texts = st.text("abcxyz ", min_size=1, max_size=8)
bodies = st.fixed_dictionaries({}, optional={f: texts for f in FIELDS}).map(lambda b: {"llmAgent": {}, **b})


def _agent(body: dict[str, Any]) -> Resource:
    return Resource(AGENT, "a", body)


@given(bodies, bodies, st.lists(st.sampled_from(FIELDS), unique=True))
def test_an_ignored_field_never_changes_and_every_other_field_still_does(
    repo: dict[str, Any], app: dict[str, Any], ignored: list[str]
) -> None:
    [desired], left = leave_to_console([_agent(repo)], [_agent(app)], {("agent", "a"): ignored}, APP)
    changed = {f.path for f in diff_resource(AGENT, "a", desired.body, app).fields}
    before = {f.path for f in diff_resource(AGENT, "a", repo, app).fields}
    assert not any(covers(p, c) for p in ignored for c in changed)  # plan never changes them
    assert changed == {c for c in before if not any(covers(p, c) for p in ignored)}  # and nothing else is hidden
    assert left.get(f"{APP}/agents/a", []) == sorted(p for p in ignored if p in before)  # shown as left
    assert repo == _agent(repo).body  # the repo's own body is not touched


@given(bodies, st.lists(st.sampled_from(FIELDS), unique=True))
def test_a_create_sends_the_repo_s_values(repo: dict[str, Any], ignored: list[str]) -> None:
    [desired], left = leave_to_console([_agent(repo)], [], {("agent", "a"): ignored}, APP)
    assert desired.body == repo and left == {}


def test_a_nested_path_takes_the_app_s_value_inside_the_message() -> None:
    repo = _agent({"llmAgent": {}, "instruction": "x", "modelSettings": {"model": "m", "temperature": 0.2}})
    app = _agent({"llmAgent": {}, "instruction": "y", "modelSettings": {"model": "m", "temperature": 0.9}})
    [desired], left = leave_to_console([repo], [app], {("agent", "a"): ["modelSettings.temperature"]}, APP)
    assert desired.body["modelSettings"] == {"model": "m", "temperature": 0.9}
    assert left == {f"{APP}/agents/a": ["modelSettings.temperature"]}
    assert [f.path for f in diff_resource(AGENT, "a", desired.body, app.body).fields] == ["instruction"]

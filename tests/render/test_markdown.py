"""render.markdown: text a server or the app can put in a plan's notices and findings is only code.

A record note names a version as the server gave it; a policy finding's message may be built by
its messageExpression from ``change.before``, the app's copy a console user writes; its subject
names a resource the app holds (a rule's name is the repo's, held to RULE_NAME). None of it may add a mention, link, image, HTML or paragraph
to the pull-request comment, or a control or CI command to the terminal."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.core.planbuild import build_plan
from cesync.core.policy import RULE_NAME, Finding
from cesync.escape import output
from cesync.render import render
from tests.hostile_text import hostile, markdown_problems, parses_as_json, terminal_and_ci_problems

PARENT = "projects/p/locations/us/apps/a"


@given(note=hostile, message=hostile, subject=hostile, rule=st.from_regex(RULE_NAME, fullmatch=True))
def test_record_notes_and_policy_findings_are_data(note: str, message: str, subject: str, rule: str) -> None:
    tool = Resource(KINDS["tool"], "t", {"name": f"{PARENT}/tools/t", "clientFunction": {"name": "t"}})
    plan = build_plan("dev", PARENT, [tool], [])
    plan = dataclasses.replace(
        plan,
        record_notes=(f"ignored the applied record in {note}: not sealed",),
        policy=(Finding(rule, "deny", subject, message), Finding(rule, "warn", subject, message)),
    )
    assert markdown_problems(render(plan, "markdown")) == []
    assert terminal_and_ci_problems(output(render(plan, "text"))) == []
    assert parses_as_json(render(plan, "json"))

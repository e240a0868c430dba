"""passes.affected: the plan names, per changed resource, the evaluations and tool tests at risk;
a deleted tool is read from the app, and the plan's JSON carries it through a saved file."""

from __future__ import annotations

from cesync.api.kinds import KINDS, THE_APP
from cesync.api.resource import Resource
from cesync.core.passes import PlanInput
from cesync.core.plan import Plan
from cesync.core.planbuild import run_passes

P = "projects/p/locations/l/apps/a"


def test_the_plan_names_what_its_changes_put_at_risk() -> None:
    evaluation = Resource(
        KINDS["evaluation"],
        "calls-old",
        {"displayName": "e", "golden": {"turns": [{"steps": [{"expectation": {"toolCall": {"tool": f"{P}/tools/old"}}}]}]}},
    )
    app = Resource(THE_APP, "app", {"displayName": "a"})
    remote = [app, Resource(KINDS["tool"], "old", {"name": f"{P}/tools/old", "clientFunction": {"name": "old"}}), evaluation]
    given = PlanInput("dev", P, [app, evaluation], remote, prune=True, tool_tests={"tests/x.yaml::old": ["tool/old"]})
    plan = run_passes(given)
    assert [c.action for c in plan.changes] == ["delete"]
    assert plan.affected == {"tool/old": {"evaluations": ["calls-old"], "toolTests": ["tests/x.yaml::old"]}}
    assert Plan.from_json(plan.to_json()).affected == plan.affected

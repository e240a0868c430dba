"""core.policy: CEL rules on resources and changes, their tests, and what the app's deployments reach."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.api.kinds import KINDS, THE_APP
from cesync.api.resource import Resource
from cesync.core.policy import (
    PolicyError,
    PolicyFile,
    compile_rules,
    evaluate_changes,
    evaluate_resources,
    run_tests,
    served_agents,
)

TIMEOUT = {
    "name": "prod-tool-timeout",
    "deny": 'env == "prod" && kind == "tool" && has(resource.timeout) && duration(resource.timeout) > duration("30s")',
    "messageExpression": '"waits " + resource.timeout',
}
DELETE = {"name": "prod-delete", "on": "change", "deny": 'env == "prod" && change.action == "delete" && !("ok" in labels)'}


def rules(*raw: dict[str, object]) -> list:  # type: ignore[type-arg]
    return compile_rules([("p.yaml", PolicyFile.model_validate({"rules": list(raw)}))])


@settings(max_examples=60, deadline=None)
@given(millis=st.integers(min_value=0, max_value=120_000), env=st.sampled_from(["prod", "dev"]))
def test_timeout_rule_fires_exactly_over_30s_in_prod(millis: int, env: str) -> None:
    timeout = f"{millis / 1000:.3f}s"
    found = evaluate_resources(rules(TIMEOUT), env, [("tool", "t", {"timeout": timeout})])
    assert bool(found) == (env == "prod" and millis > 30_000)
    if found:
        assert found[0].verdict == "deny" and found[0].subject == "tool/t" and found[0].message == f"waits {timeout}"


@settings(max_examples=40, deadline=None)
@given(
    actions=st.lists(st.sampled_from(["create", "update", "delete"]), max_size=6),
    labels=st.lists(st.sampled_from(["ok", "other"]), max_size=2),
)
def test_change_rule_sees_each_change_and_the_labels(actions: list[str], labels: list[str]) -> None:
    plan = {"environment": "prod", "changes": [{"action": a, "kind": "tool", "id": f"t{i}"} for i, a in enumerate(actions)]}
    found = evaluate_changes(rules(DELETE), plan, labels)
    expected = [] if "ok" in labels else [f"tool/t{i}" for i, a in enumerate(actions) if a == "delete"]
    assert [f.subject for f in found] == expected


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ({"name": "x", "deny": "env =="}, "not valid CEL"),
        ({"name": "x", "deny": "nosuchvar == 1"}, "not valid CEL"),
        ({"name": "x", "on": "change", "deny": "resource.timeout == 1"}, "not valid CEL"),  # resource is not a change's
    ],
    ids=["syntax", "unknown-variable", "wrong-scope"],
)
def test_bad_expressions_are_errors_naming_the_rule(raw: dict[str, object], said: str) -> None:
    with pytest.raises(PolicyError, match=rf"p.yaml: rule 'x'.*{said}"):
        rules(raw)


def test_rule_needs_exactly_one_verdict_and_unique_names() -> None:
    with pytest.raises(ValueError, match="exactly one of deny or warn"):
        PolicyFile.model_validate({"rules": [{"name": "x", "deny": "true", "warn": "true"}]})
    with pytest.raises(PolicyError, match=r"also defined in p\.yaml"):
        rules({"name": "x", "deny": "true"}, {"name": "x", "warn": "true"})


def test_an_unguarded_missing_field_is_an_error_with_the_has_hint() -> None:
    bad = rules({"name": "x", "deny": 'resource.timeout == "1s"'})
    with pytest.raises(PolicyError, match=r"could not be evaluated on tool/t.*has\(\)"):
        evaluate_resources(bad, "prod", [("tool", "t", {})])


def test_a_non_boolean_rule_is_an_error() -> None:
    with pytest.raises(PolicyError, match="not true or false"):
        evaluate_resources(rules({"name": "x", "deny": "kind"}), "prod", [("tool", "t", {})])


@settings(max_examples=30, deadline=None)
@given(text=st.text(max_size=800))
def test_messages_are_one_bounded_line(text: str) -> None:
    found = evaluate_resources(
        rules({"name": "x", "warn": "true", "messageExpression": "resource.m"}), "e", [("tool", "t", {"m": text})]
    )
    assert "\n" not in found[0].message and len(found[0].message) <= 500


def test_run_tests_reports_pass_fail_and_unknown_rules() -> None:
    policy = PolicyFile.model_validate(
        {
            "rules": [TIMEOUT],
            "tests": [
                {
                    "name": "slow",
                    "resource": {"kind": "tool", "id": "t", "body": {"timeout": "31s"}},
                    "expect": ["prod-tool-timeout"],
                },
                {
                    "name": "wrong",
                    "resource": {"kind": "tool", "id": "t", "body": {"timeout": "1s"}},
                    "expect": ["prod-tool-timeout"],
                },
                {"name": "typo", "resource": {"kind": "tool", "id": "t", "body": {}}, "expect": ["no-such"]},
            ],
        }
    )
    results = run_tests(compile_rules([("p.yaml", policy)]), [("p.yaml", policy)])
    assert [(r.name, r.ok) for r in results] == [("slow", True), ("wrong", False), ("typo", False)]
    assert results[1].detail == "expected prod-tool-timeout; fired no rule"
    assert "no-such" in results[2].detail


APP = "projects/p/locations/l/apps/a"


def test_served_agents_follow_child_agents_and_agent_tools_only_with_a_deployment() -> None:
    remote = [
        Resource(THE_APP, "app", {"rootAgent": f"{APP}/agents/root", "guardrails": [f"{APP}/guardrails/stop"]}),
        Resource(KINDS["agent"], "root", {"childAgents": [f"{APP}/agents/child"], "tools": [f"{APP}/tools/as-agent"]}),
        Resource(KINDS["agent"], "child", {}),
        Resource(KINDS["tool"], "as-agent", {"agentTool": {"agent": f"{APP}/agents/via-tool"}}),
        Resource(KINDS["agent"], "via-tool", {}),
        Resource(KINDS["guardrail"], "stop", {"action": {"transferAgent": {"agent": f"{APP}/agents/human"}}}),
        Resource(KINDS["agent"], "human", {}),
        Resource(KINDS["agent"], "alone", {}),
    ]
    assert served_agents(remote, APP) == []
    assert served_agents([*remote, Resource(KINDS["deployment"], "web", {})], APP) == [
        f"{APP}/agents/child",
        f"{APP}/agents/human",  # a guardrail of the app hands the conversation to it
        f"{APP}/agents/root",
        f"{APP}/agents/via-tool",
    ]


def test_without_the_cel_runtime_policies_say_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python 3.10 has no wheel of cel-expr-python (the dependency's marker): a repo with policies is told so."""
    import sys

    monkeypatch.setitem(sys.modules, "cel_expr_python", None)  # what 'import' finds when the package is absent
    with pytest.raises(PolicyError, match=r"pip install cel-expr-python, or remove 'policies' from cesync\.yaml"):
        rules(TIMEOUT)

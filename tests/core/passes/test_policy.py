"""The policy pass runs the repo's rules on the desired state (sensitive paths masked) and on the
changes, and carries the labels; a deployment the plan deletes serves no agent any more."""

from __future__ import annotations

import pytest

from cesync.core.passes.compare import compare
from cesync.core.passes.ownership import ownership
from cesync.core.passes.policy import policy
from cesync.core.policy import CompiledRule, PolicyFile, compile_rules

from .data import empty, given, remote_tool, tool

pytest.importorskip("cel_expr_python", reason="the CEL runtime is installed on Python 3.11 and later")


def _rules(*raw: dict[str, str]) -> list[CompiledRule]:
    return compile_rules([("p.yaml", PolicyFile.model_validate({"rules": list(raw)}))])


def test_a_deny_on_a_change_and_a_warn_on_a_resource() -> None:
    rules = _rules(
        {"name": "no-deletes", "on": "change", "deny": 'change.action == "delete"'},
        {"name": "tool-named-f", "on": "resource", "warn": 'kind == "tool" && resource.clientFunction.name == "f"'},
    )
    g = given([tool("keep")], [remote_tool("keep"), remote_tool("gone")], prune=True, policy_rules=rules, labels=("ok",))
    plan = policy(ownership(compare(empty(g), g), g), g)
    assert {(f.rule, f.verdict) for f in plan.policy} == {("no-deletes", "deny"), ("tool-named-f", "warn")}
    assert plan.labels == ("ok",) and [f.rule for f in plan.denied] == ["no-deletes"]


def test_what_a_rule_sees_of_a_sensitive_path_is_the_mask() -> None:
    rules = _rules({"name": "leak", "on": "resource", "deny": 'resource.clientFunction.name == "s3cret-value"'})
    g = given([tool("t", "s3cret-value")], [], policy_rules=rules, sensitive={("tool", "t"): [("clientFunction", "name")]})
    assert policy(compare(empty(g), g), g).policy == ()


def test_without_rules_only_the_labels() -> None:
    g = given([tool("t")], [], labels=("reviewed",))
    plan = policy(compare(empty(g), g), g)
    assert plan.policy == () and plan.labels == ("reviewed",)

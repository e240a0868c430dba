"""The safety pass writes the guard's refusal into the plan, after any refusal a pass before it wrote."""

from __future__ import annotations

from dataclasses import replace

from cesync.core.passes import PlanInput, SafetyLimits
from cesync.core.passes.compare import compare
from cesync.core.passes.ownership import ownership
from cesync.core.passes.safety import safety
from cesync.core.plan import Plan

from .data import empty, given, remote_tool, tool


def _plan(limits: SafetyLimits | None) -> tuple[Plan, PlanInput]:
    g = given([tool("keep")], [remote_tool("keep"), *(remote_tool(f"t{i}") for i in range(12))], prune=True, safety=limits)
    return safety(ownership(compare(empty(g), g), g), g), g


def test_too_many_deletes_are_refused() -> None:
    plan, _ = _plan(SafetyLimits(0.3, 10))
    assert "deletes 12 of 13" in plan.refused


def test_no_limits_no_guard() -> None:
    plan, _ = _plan(None)
    assert plan.refused == ""


def test_a_refusal_of_an_earlier_pass_is_kept() -> None:
    plan, g = _plan(SafetyLimits(0.3, 10))
    again = safety(replace(plan, refused="another rule"), g)
    assert again.refused.startswith("another rule; ") and "deletes 12 of 13" in again.refused

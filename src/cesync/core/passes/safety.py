"""The safety pass: why apply would refuse a plan that deletes or rewrites too much of the app
(``cesync.core.safety``), written into the plan for every renderer to show, after any refusal
an earlier pass wrote (pure)."""

from __future__ import annotations

from dataclasses import replace

from ..plan import Plan
from ..safety import safety_refusal
from . import PlanInput

__all__ = ["safety"]


def safety(plan: Plan, given: PlanInput) -> Plan:
    if given.safety is None:
        return plan
    limits = given.safety
    reason = safety_refusal(plan, limits.max_change_fraction, limits.min_resources, limits.max_update_fraction)
    return replace(plan, refused="; ".join(r for r in (plan.refused, reason) if r))

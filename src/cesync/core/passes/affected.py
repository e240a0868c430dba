"""The affected pass: for each changed resource, the evaluations and tool
tests that exercise it (``cesync.core.affected``), read from the app as the plan leaves it: the
repo's resources, and the app's where only the app has one (what the plan deletes) (pure)."""

from __future__ import annotations

from dataclasses import replace

from ..affected import affected as affected_of
from ..plan import Plan
from . import PlanInput

__all__ = ["affected"]


def affected(plan: Plan, given: PlanInput) -> Plan:
    if not plan.changes:
        return plan  # nothing changed: nothing exercised to find
    present = {r.key: r for r in given.remote}
    present.update((d.key, d) for d in given.desired)
    changed = [f"{c.kind.name}/{c.id}" for c in plan.changes]
    return replace(plan, affected=affected_of(changed, present.values(), given.parent, given.tool_tests))

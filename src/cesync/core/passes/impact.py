"""The impact pass: what the plan touches, each change and every resource that uses one of them
through references (``cesync.core.graph.impact``), for the renderers' picture and the policies
(which run after it) (pure)."""

from __future__ import annotations

from dataclasses import replace

from ..graph import impact as impact_of
from ..plan import Plan
from . import PlanInput

__all__ = ["impact"]


def impact(plan: Plan, given: PlanInput) -> Plan:
    changed = {(c.kind.name, c.id): c.action for c in plan.changes}
    if not changed:
        return plan  # nothing touched: no graph of the app to build
    return replace(plan, impact=impact_of(changed, given.desired, given.remote, given.parent))

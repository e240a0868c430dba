"""The lock pass: how the app's lock (App.locked) meets the plan, for every renderer to say (pure)."""

from __future__ import annotations

from dataclasses import replace

from ..applock import lock_notice
from ..plan import Plan
from . import PlanInput

__all__ = ["lock"]


def lock(plan: Plan, given: PlanInput) -> Plan:
    app = next((r for r in given.remote if r.kind.singleton), None)
    return replace(plan, app_lock=lock_notice(app.body if app else None, plan.changes))

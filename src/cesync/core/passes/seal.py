"""The seal pass, last: where the plan was made, the keyed hashes of the sensitive values, each
change's body hash and the seal over everything the saved file holds (``cesync.core.planseal``) (pure)."""

from __future__ import annotations

from dataclasses import replace

from ..plan import Plan
from ..planseal import bind
from . import PlanInput

__all__ = ["seal"]


def seal(plan: Plan, given: PlanInput) -> Plan:
    if given.seal is None:
        return plan
    s = given.seal
    sensitive = replace(plan.sensitive, salt=s.salt, key=s.key_source, values=dict(s.values))
    made = replace(plan, endpoint=s.endpoint, sensitive=sensitive, promoted_from=s.promoted_from, commit=s.commit)
    return bind(made, given.key, s.scrub)

"""The policy pass: the repo's own rules (``cesync.core.policy``, CEL) on the desired state and on
the plan's changes; a deny stops apply, a warn is shown (pure).

What a rule sees is masked as the plan's JSON is: the rendered resources with their sensitive
paths masked, the changes as ``Plan.public()`` gives them."""

from __future__ import annotations

from dataclasses import replace

from ..plan import Plan
from ..policy import evaluate_changes, evaluate_resources, served_agents
from . import PlanInput
from .masking import masked

__all__ = ["policy"]


def policy(plan: Plan, given: PlanInput) -> Plan:
    if not given.policy_rules:
        return replace(plan, labels=tuple(given.labels))
    shown = [masked(r, given.paths(r.key)) for r in given.desired]
    found = evaluate_resources(given.policy_rules, given.env, [(r.kind.name, r.id, r.body) for r in shown])
    # what the app's deployments reach once the plan is applied: a deployment the plan deletes serves
    # nothing (a tear-down deletes the deployment with the agents it served)
    going = {c.name for c in plan.changes if c.action == "delete" and c.kind.serves}
    staying = [r for r in given.remote if r.kind.resource_name(given.parent, r.id) not in going]
    served = served_agents(staying, given.parent)
    found += evaluate_changes(given.policy_rules, plan.public(), given.labels, served)
    return replace(plan, policy=tuple(found), labels=tuple(given.labels))

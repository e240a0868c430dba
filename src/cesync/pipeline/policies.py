"""The repo's policies (core.policy) run on one environment: its rendered resources (validate) and a
plan of it (plan, apply): what each rule sees is masked as the plan's JSON is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..api.resource import Resource
from ..core.passes import PlanInput
from ..core.passes.masking import masked
from ..core.passes.policy import policy
from ..core.plan import Plan
from ..core.policy import Finding, evaluate_resources
from ..core.yamlfile import Path_
from ..errors import CesyncError
from ..repo.policies import Policies, load_policies
from ..repo.repo import Repo
from .context import Context

__all__ = ["PolicyDenied", "check_plan", "policies_of", "refuse_denied", "resource_findings"]


class PolicyDenied(CesyncError):
    """A plan a policy denies: apply stops before any write."""


def policies_of(repo: Repo) -> Policies:
    return load_policies(repo.root, repo.config.policies)


def resource_findings(
    policies: Policies, env: str, desired: Sequence[Resource], hidden: Mapping[tuple[str, str], Sequence[Path_]] | None = None
) -> list[Finding]:
    """The rules on: resource, on what the repo renders for env (sensitive fields masked)."""
    shown = [masked(r, hidden.get((r.kind.name, r.id)) if hidden else None) for r in desired]
    return evaluate_resources(policies.rules, env, [(r.kind.name, r.id, r.body) for r in shown])


def check_plan(ctx: Context, plan: Plan, remote: Sequence[Resource], labels: Sequence[str] = ()) -> Plan:
    """The plan with what the policies find in the desired state and in its changes (the policy
    pass, run again on a saved plan narrowed to what will run)."""
    rules = policies_of(ctx.repo).rules
    given = PlanInput(ctx.env.name, ctx.env.parent, ctx.desired, remote, sensitive=ctx.hidden, policy_rules=rules, labels=labels)
    return policy(plan, given)


def refuse_denied(plan: Plan) -> None:
    """PolicyDenied naming each deny, before apply asks or writes anything."""
    if plan.denied:
        said = "; ".join(f"{f.rule} on {f.subject}: {f.message}" for f in plan.denied)
        raise PolicyDenied(f"policy denies this plan ({said}); change the repo or the policy, nothing was applied")

"""The mass-change guard: a plan that would delete or rewrite too much of the app is refused."""

from __future__ import annotations

from ..errors import UnsafePlanError
from .plan import Plan


def check_safety(plan: Plan, max_fraction: float, min_resources: int, allow: bool, max_update_fraction: float = 0.8) -> None:
    """octoDNS-style: refuse plans that delete or rewrite too much of what is managed."""
    reason = safety_refusal(plan, max_fraction, min_resources, max_update_fraction)
    if reason and not allow:
        raise UnsafePlanError(reason)


def safety_refusal(plan: Plan, max_fraction: float, min_resources: int, max_update_fraction: float = 0.8) -> str:
    """Why apply would refuse this plan without --allow-mass-change ("" when it would not).

    What can lose data counts against max_fraction: deletes, renames (a create and a delete)
    included. Updates in place keep every resource and are the routine work of a change, so
    only a larger share of them (max_update_fraction) is refused. Creates never count.
    """
    counts = plan.counts()
    deletes, updates = counts["delete"], counts["update"]
    # The managed resources the app has before the apply: what the repo defines and the app
    # already holds, plus what the plan deletes. Not the repo's count after the change, which
    # shrinks with every delete (9 deletes of 13 read as 9 of 9, under minResources: let through).
    base = plan.managed - counts["create"] + deletes
    if deletes and plan.destroy:  # a tear-down deletes everything by design: said so, guarded all the same
        return f"a tear-down deletes {deletes} resources; refusing (pass --allow-mass-change if that is really meant)"
    if deletes and plan.managed == 0:
        return (
            f"the repo defines no resources but the plan deletes {deletes}; refusing "
            "(pass --allow-mass-change if that is really meant)"
        )
    if base < min_resources or base == 0:
        return ""
    review = "refusing. Review it, then pass --allow-mass-change"
    if deletes / base > max_fraction:
        return (
            f"the plan deletes {deletes} of {base} managed resources ({deletes / base:.0%} > {max_fraction:.0%} "
            f"safety.maxChangeFraction); {review} (or raise safety.maxChangeFraction)"
        )
    if updates / base > max_update_fraction:
        return (
            f"the plan updates {updates} of {base} managed resources ({updates / base:.0%} > {max_update_fraction:.0%} "
            f"safety.maxUpdateFraction); {review} (or raise safety.maxUpdateFraction)"
        )
    return ""

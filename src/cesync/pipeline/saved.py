"""A saved plan before it runs: the checks that need no connection (environment, endpoint, sensitive
values, seal, repo digest), then the part of it that may still run against the app as it is now."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from ..core.narrow import narrow
from ..core.plan import Plan
from ..core.planbuild import run_passes
from ..core.planseal import same, seal, seal_matches
from ..core.sensitive import KEY_ENV
from ..errors import PlanFileError
from ..repo.keys import plan_key
from .context import Context
from .planning import plan_input, read_for_plan, seal_input
from .policies import check_plan

if TYPE_CHECKING:  # the HTTP client loads when a command first uses it (see client/__init__.py)
    from ..client.api import CesClient


async def narrow_saved(
    ctx: Context, client: CesClient, saved: Plan, *, prune: bool | None = None, targets: Iterable[str] | None = None
) -> Plan:
    """The part of a saved plan that may run (see plan.narrow); PlanFileError before any write otherwise.

    targets (apply --target) narrow a saved plan further: only its changes they name run.
    They never widen it: a target the plan has no change for adds nothing.
    """
    key = check_saved(ctx, saved)
    read = await read_for_plan(ctx, client)
    selected = read.selected(targets)
    # recomputed whole (no targets) and narrowed afterwards, to be compared with what was saved
    given = plan_input(
        ctx,
        read,
        key,
        prune=saved.prune,
        targets=None,
        resend_input_only=saved.resend_input_only,
        prune_unmanaged=saved.prune_unmanaged,
        seal=seal_input(ctx, saved.sensitive.salt),
    )
    fresh = run_passes(given)
    present = {f"{r.kind}/{r.id}" for r in read.remote} | {f"{d.kind}/{d.id}" for d in ctx.desired}
    gone = frozenset(c.key for c in saved.changes if c.action == "delete" and c.key not in present)
    allowed = narrow(saved, fresh, prune=prune, gone=gone, scrub=ctx.scrubber.scrub)
    scope = set(saved.targets) if saved.targets else None  # a --target plan stays that partial
    if selected is not None:
        scope = selected if scope is None else scope & selected
    if scope is not None:
        allowed = replace(allowed, changes=tuple(c for c in allowed.changes if c.key in scope), targets=tuple(sorted(scope)))
    return check_plan(ctx, allowed, read.remote, saved.labels)  # the policies as they are now, on what will run


def check_saved(ctx: Context, saved: Plan) -> bytes:
    """The checks that need no connection: environment, endpoint, sensitive values, the seal, the repo digest.

    Returns the plan's binding key (cesync.core.planseal.binding_key), made from this
    process's CESYNC_PLAN_KEY and sensitive values, never from what the file says."""
    if saved.environment != ctx.env.name or saved.app != ctx.env.parent:
        raise PlanFileError(f"the plan is for {saved.environment} ({saved.app}), not {ctx.env.name} ({ctx.env.parent})")
    if saved.endpoint != ctx.endpoint_url:
        raise PlanFileError(
            f"the plan was made against {saved.endpoint or '(no endpoint recorded)'}, this apply would write to "
            f"{ctx.endpoint_url}: refusing; make a new plan for this endpoint"
        )
    names, now = set(saved.sensitive.values), set(ctx.secrets)
    if names != now:
        diff = sorted(names ^ now)
        raise PlanFileError(
            f"sensitive variables {', '.join(diff)} are set at plan or apply time but not both: refusing; make a new plan"
        )
    if not saved.sensitive.salt:
        raise PlanFileError("the plan has no salt: the plan file was changed after it was made")
    current = seal(ctx.secrets, saved.sensitive.salt, plan_key())
    wrong = sorted(n for n in names if not same(current[n], saved.sensitive.values[n]))
    if wrong:
        hint = f" (or {KEY_ENV} differs between plan and apply)" if len(wrong) == len(names) else ""
        raise PlanFileError(
            f"sensitive variable{'s' if len(wrong) > 1 else ''} {', '.join(wrong)} "
            f"{'have' if len(wrong) > 1 else 'has'} another value than when the plan was made{hint}: "
            "refusing before any write; make a new plan"
        )
    key = ctx.binding_key(saved.sensitive.salt)
    if not seal_matches(saved, key, ctx.scrubber.scrub):
        keyed = (saved.sensitive.key == KEY_ENV) != bool(plan_key())
        hint = f" ({KEY_ENV} is set for this apply, not for the plan)" if plan_key() else f" ({KEY_ENV} was set for the plan)"
        raise PlanFileError(
            "the plan file was changed after it was made (its seal does not match what it holds)"
            f"{hint if keyed else ''}: refusing before any connection; make a new plan"
        )
    if saved.digest != ctx.digest(key):
        raise PlanFileError("the repo changed since the plan was made (digest differs); make a new plan")
    return key

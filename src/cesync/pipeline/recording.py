"""After an apply: the applied record of what it made the app (see core/record.py, sync/record.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..api.kinds import APP
from ..core.plan import Plan
from ..core.record import AppliedRecord, owned_sums
from ..sync.record import current_key, last_applied, write_record
from ..sync.remote import read_remote
from ..sync.snapshot import commit_of
from .apply import DONE, ApplyResult

if TYPE_CHECKING:
    from ..client.api import CesClient
    from .context import Context

__all__ = ["owned_after", "record_apply", "record_if_moved"]


def owned_after(ctx: Context, plan: Plan, result: ApplyResult | None) -> set[str]:
    """What cesync owns once the apply is done: what it owned, what it created, what the repo
    defines that the app already held when planned (adopted), less what it deleted; a --target
    apply adds only what it wrote. Never what the app holds besides: a resource someone made
    during the apply, or under an id whose create this apply did not get done, is not cesync's."""
    outcomes = result.outcomes if result is not None else []
    deleted = {f"{o.kind}/{o.id}" for o in outcomes if o.action == "delete" and o.status == DONE}
    written = {f"{o.kind}/{o.id}" for o in outcomes if o.action != "delete" and o.status == DONE}
    not_created = {c.key for c in plan.changes if c.action == "create"} - written
    defined = written if plan.targets else {f"{d.kind}/{d.id}" for d in ctx.desired} - not_created
    return {k for k in (set(plan.owned) | defined) - deleted if not k.startswith(f"{APP}/")}


async def record_apply(client: CesClient, ctx: Context, plan: Plan, result: ApplyResult | None) -> AppliedRecord:
    owned = owned_after(ctx, plan, result)
    key = current_key()
    # what the app holds now, hashed under the key: drift is then judged against these, so a copy of
    # this record over a changed app (a version made later) hides nothing (core/record.py)
    sums = owned_sums(await read_remote(client, ctx.env.parent), owned, key) if key else {}
    return await write_record(
        client,
        ctx.env,
        ctx.repo.root,
        digest=plan.digest,
        owned=owned,
        keep=ctx.repo.config.records.keep,
        commit=ctx.promotion[1] or None,  # a promotion applied the commit it names, not a checkout
        owner=ctx.repo.config.owner or "",
        sums=sums,
    )


async def record_if_moved(client: CesClient, ctx: Context, plan: Plan) -> AppliedRecord | None:
    """The record of an apply that changed nothing, when what it would record has moved on.

    A pull committed, a commit that changes only another environment's variables, a resource
    made by hand and now defined by the repo: the app already matches, but the last record
    names an older commit (promote would take that one) or owns less (prune would keep what
    the repo now defines). Then a new record is written; with nothing moved (a GitOps loop
    re-applying the same commit) none is, so versions do not pile up."""
    last = await last_applied(client, ctx.env, owner=ctx.repo.config.owner or "")
    commit, _, dirty = (ctx.promotion[1], "", False) if ctx.promotion[1] else commit_of(ctx.repo.root)
    # Uncommitted changes alone are no reason (a record of them would only make promote refuse),
    # but a clean tree replaces a record of uncommitted changes, else promote refused for ever.
    same = last is not None and (last.commit, last.digest, set(last.owned)) == (commit, plan.digest, owned_after(ctx, plan, None))
    if last is not None and same and (dirty or not last.dirty):
        return None
    return await record_apply(client, ctx, plan, None)

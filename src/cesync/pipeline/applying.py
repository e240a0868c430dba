"""apply end to end for one environment: the plan to run (made now, or a saved one checked and
narrowed), the checks before any write (policies, the mass-change guard, the question), the
snapshot, the writes, what CES reports afterwards, and the applied record.

The command (cli/core.py) only wires: it opens the context, hands in ``ApplyOptions`` and an
``ApplyHooks`` that prints, asks and shows progress, and maps the result to an exit code.
Every decision of an apply is made here, and tested without the command line
(tests/pipeline/test_applying.py)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..core.plan import Plan
from ..core.safety import check_safety
from ..errors import ApiError, CesyncError, UnsafePlanError
from .apply import ApplyResult, apply_plan
from .context import Context
from .planning import make_plan
from .policies import refuse_denied
from .recording import record_apply, record_if_moved
from .saved import narrow_saved

if TYPE_CHECKING:
    from ..client.api import CesClient
    from ..core.record import AppliedRecord

__all__ = ["Applied", "ApplyHooks", "ApplyOptions", "QuietHooks", "apply_env", "check_saved_flags", "recorded"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ApplyOptions:
    """What the command line says of one apply."""

    prune: bool | None = None
    prune_unmanaged: bool = False
    targets: tuple[str, ...] = ()
    resend_input_only: bool = False
    labels: tuple[str, ...] = ()
    allow_mass_change: bool = False
    parallelism: int = 8
    force_delete: bool = False
    snapshot: bool = False


@dataclass
class Applied:
    """What an apply did: the plan it ran and its result; changed is False when there was nothing to do."""

    plan: Plan
    result: ApplyResult
    changed: bool


class ApplyHooks(Protocol):
    """What a command does around apply's decisions (cli/core.py prints, asks, shows progress)."""

    def planned(self, plan: Plan) -> None:
        """The plan apply will run, before the question."""

    def confirm(self, plan: Plan) -> None:
        """Raise CesyncError to stop before any write."""

    def say(self, line: str) -> None:
        """A line of the apply's own report (its text output)."""

    def warn(self, line: str) -> None:
        """A note that something around the writes did not work (they stand)."""

    async def write(self, client: CesClient, plan: Plan, parallelism: int, force_delete: bool) -> ApplyResult:
        """Run the plan's writes (apply_plan), with what the command shows meanwhile."""


class QuietHooks:
    """Hooks that print nothing, ask nothing (an apply through them is approved) and write without
    progress or Ctrl-C handling; what they were told is kept, for a caller (or a test) to read."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.warnings: list[str] = []

    def planned(self, plan: Plan) -> None:
        pass

    def confirm(self, plan: Plan) -> None:
        pass

    def say(self, line: str) -> None:
        self.lines.append(line)

    def warn(self, line: str) -> None:
        self.warnings.append(line)

    async def write(self, client: CesClient, plan: Plan, parallelism: int, force_delete: bool) -> ApplyResult:
        return await apply_plan(client, plan, parallelism=parallelism, force_delete=force_delete)


def check_saved_flags(saved: Plan, options: ApplyOptions) -> None:
    """What a saved plan fixes at plan time and apply may not change (before any connection)."""
    if saved.prune_unmanaged and not options.prune_unmanaged and any(c.action == "delete" for c in saved.changes):
        # as --prune for any delete: deleting what cesync did not make is asked for at apply time too
        raise CesyncError(
            "the plan was made with --prune-unmanaged (it may delete what cesync did not make): "
            "pass --prune-unmanaged to apply it, or make a new plan without it"
        )
    if options.labels:  # the labels a plan was made with are sealed in it: the reviewers' say, not the applier's
        raise CesyncError("--label: a saved plan carries the labels it was made with; make the plan with --label")
    if options.resend_input_only and not saved.resend_input_only:
        raise CesyncError("--resend-input-only: the saved plan was made without it; make the plan with it")


async def apply_env(
    ctx: Context, client: CesClient, saved: Plan | None, options: ApplyOptions, hooks: ApplyHooks | None = None
) -> Applied:
    """Plan (or narrow the saved plan), check, ask, write, read back, record."""
    hooks = hooks or QuietHooks()
    if saved is not None:
        current = await narrow_saved(ctx, client, saved, prune=options.prune, targets=options.targets)
    else:
        current = await make_plan(
            ctx,
            client,
            prune=options.prune,
            targets=options.targets,
            resend_input_only=options.resend_input_only,
            prune_unmanaged=options.prune_unmanaged,
            labels=options.labels,
        )
    hooks.planned(current)
    if not current.has_changes:
        return Applied(current, await _nothing_to_do(client, ctx, current, options, hooks), changed=False)
    refuse_denied(current)
    if current.refused and not options.allow_mass_change:  # a pass's refusal (the guard's, or a rule's)
        raise UnsafePlanError(current.refused)
    safety = ctx.repo.config.safety
    check_safety(current, safety.maxChangeFraction, safety.minResources, options.allow_mass_change, safety.maxUpdateFraction)
    hooks.confirm(current)
    version = await _snapshot_before(client, ctx, current, hooks) if options.snapshot else {}
    # a tear-down leaves only the app, whose own fields (rootAgent, guardrails, ...) still name what
    # goes: CES refuses those deletes without force, which removes the references with them
    force = options.force_delete or ctx.destroy
    log.debug(
        "apply: %s: %d change(s), parallelism %d, force %s", current.environment, len(current.changes), options.parallelism, force
    )
    result = await hooks.write(client, current, options.parallelism, force)
    result.snapshot = str(version.get("name", ""))
    if not result.interrupted:
        try:
            result.validation = await validation_after(client, current.app)
        except ApiError as exc:  # the writes are done: failing to read the app again must not hide that
            hooks.warn(f"note: could not read what CES reports about the app after the apply: {exc}")
    if result.ok:
        made = await record_apply(client, ctx, current, result)
        result.record = made.version
        hooks.say(f"Applied record: version {made.version.rsplit('/', 1)[-1]} ({recorded(made)}).")
    else:
        log.debug("apply: not every action is done: no record written")
    return Applied(current, result, changed=True)


async def _nothing_to_do(client: CesClient, ctx: Context, plan: Plan, options: ApplyOptions, hooks: ApplyHooks) -> ApplyResult:
    """An apply without changes: no version, but the record moves on when what it would say did."""
    if options.snapshot:
        hooks.say("No changes: no version created (--snapshot marks applies that changed the app).")
    noop = ApplyResult(plan.environment, plan.app)
    if plan.targets:  # a partial apply never speaks for the whole commit
        log.debug("apply: no changes, a --target apply: no record")
        return noop
    if ctx.destroy and not plan.record:
        # a tear-down where cesync never applied (or of an app already deleted): it owned nothing,
        # and a record owning nothing would say no more, in an app that may not exist to hold it
        log.debug("apply: a tear-down with nothing of cesync's in the app: no record")
        return noop
    # the first apply of a repo that already matches (an export, an import-archive) adopts it; a
    # later one records the commit and ownership the app now matches, if they moved
    made = await (record_if_moved(client, ctx, plan) if plan.record else record_apply(client, ctx, plan, None))
    if made is None:
        log.debug("apply: no changes, and the record still says what the app is")
        return noop
    noop.record = made.version
    what = "cesync now owns what the repo defines" if not plan.record else recorded(made) + ": the app already matched it"
    hooks.say(f"Applied record: version {made.version.rsplit('/', 1)[-1]} ({what}).")
    return noop


def recorded(made: AppliedRecord) -> str:
    """What a record holds, as the version's own name says it: promote refuses a record of uncommitted changes."""
    return (made.commit[:7] or "no commit") + (" + uncommitted changes" if made.dirty else "")


async def validation_after(client: CesClient, parent: str) -> dict[str, list[str]]:
    """What CES reports wrong once the writes are done: the app, its agents and examples read again."""
    import asyncio

    from ..api.kinds import APP, KINDS, THE_APP
    from ..api.resource import Resource
    from ..client.apps import get_app
    from ..core.validation import findings

    app, agents, examples = await asyncio.gather(
        get_app(client, parent), client.resources(parent, KINDS["agent"]), client.resources(parent, KINDS["example"])
    )
    return findings(parent, [*([Resource(THE_APP, APP, app)] if app else []), *agents, *examples])


async def _snapshot_before(client: CesClient, ctx: Context, plan: Plan, hooks: ApplyHooks) -> dict[str, Any]:
    """apply --snapshot: the app as it is before this apply's first write (nothing when the apply creates the app)."""
    from ..sync.snapshot import take_snapshot

    if any(c.kind.singleton and c.action == "create" for c in plan.changes):
        hooks.say("Snapshot: none (the app does not exist yet; this apply creates it).")
        return {}
    version = await take_snapshot(client, ctx.env, ctx.repo.root)
    vid, shown = str(version.get("name", "")).rsplit("/", 1)[-1], version.get("displayName", "")
    hooks.say(f"Snapshot: version {vid} ({shown}), the app before this apply: cesync rollback {vid} undoes it.")
    return version

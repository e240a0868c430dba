"""Executing a Plan through the client: ordered, concurrent, etag-guarded.

Creates and updates start once everything they depend on is done, at most
``parallelism`` at once. Deletes run only when every create and update
succeeded, each after the resources that reference it. A conflict (someone
changed a resource since the plan) or an interrupt stops new actions from
starting; running ones finish and everything is reported, so a new plan shows
exactly the work that remains.

A write whose reply was lost is resent by the client; if the resend is answered
ABORTED or NOT_FOUND (update, delete) or ALREADY_EXISTS (create), that may be our
own first attempt, so the resource is read back and compared with what was sent
(the masked fields of an update, the whole resource of a create, absence for a
delete): equal is done, anything else is a real conflict. A delete of something
already gone is done too.

An App or a Deployment has an OUTPUT_ONLY etag, which a server ignores in a request, so
its update is guarded by reading it just before the write and comparing it with what the
plan saw (cesync.api.behaviour.etag_guards); a difference is a conflict. What lands between
that read and the write cannot be refused, so it is looked for afterwards: CES's changelogs
of the resource from the read's updateTime to the write's (sync/changelog.py); another
author's write in that window was overwritten, and is reported as a conflict naming who,
when and which fields.

Two applies of the same change at once meet the same way without any lost reply:
the second one's update is answered ABORTED (the first changed the etag) and its
create ALREADY_EXISTS. Such a conflict is read back as well; a resource that already
is what this apply wanted is done ("already applied"), not a conflict.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from dataclasses import fields as dataclass_fields
from typing import Any, Literal

from ..api import behaviour as fb
from ..api.kinds import ResourceKind
from ..client import CesClient
from ..client.api import Written
from ..client.apps import Polling, create_app
from ..core.applock import LOCK_FIELDS, is_locked, lock_change
from ..core.diff import diff_resource, same
from ..core.passes.renames import unnamed
from ..core.plan import Action, Change, Plan
from ..errors import Aborted, AlreadyExists, ApiError, CesyncError, FailedPrecondition, NotFound

__all__ = ["ApplyResult", "Outcome", "apply_plan"]

log = logging.getLogger(__name__)

Status = Literal["done", "failed", "conflict", "skipped", "not started"]
DONE: Status = "done"
FAILED: Status = "failed"
CONFLICT: Status = "conflict"
SKIPPED: Status = "skipped"
NOT_STARTED: Status = "not started"


@dataclass
class Outcome:
    kind: ResourceKind  # reported as its name
    id: str
    action: Action
    status: Status = NOT_STARTED
    message: str = ""
    etag: str = ""  # the new etag after a create or update
    details: list[dict[str, Any]] = field(default_factory=list)  # the error's google.rpc details, as the server sent them
    reported: bool = field(default=False, repr=False, compare=False)  # printed as it happened (by on_event's printer)


@dataclass
class ApplyResult:
    environment: str
    app: str
    outcomes: list[Outcome] = field(default_factory=list)
    interrupted: bool = False
    snapshot: str = ""  # the app version apply --snapshot created
    validation: dict[str, list[str]] = field(default_factory=dict)  # what CES reports wrong after the writes
    record: str = ""  # the applied record (an app version) made after it

    @property
    def ok(self) -> bool:
        return all(o.status == DONE for o in self.outcomes) and not self.interrupted

    def counts(self) -> dict[str, int]:
        done = [o for o in self.outcomes if o.status == DONE]
        return {
            "created": sum(1 for o in done if o.action == "create"),
            "updated": sum(1 for o in done if o.action == "update"),
            "deleted": sum(1 for o in done if o.action == "delete"),
            "failed": sum(1 for o in self.outcomes if o.status in (FAILED, CONFLICT)),
            "not_done": sum(1 for o in self.outcomes if o.status in (SKIPPED, NOT_STARTED)),
        }

    def summary(self) -> str:
        c = self.counts()
        text = f"{c['created']} created, {c['updated']} updated, {c['deleted']} deleted, {c['failed']} failed"
        return text + (f", {c['not_done']} not done" if c["not_done"] else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "environment": self.environment,
            "app": self.app,
            "ok": self.ok,
            "interrupted": self.interrupted,
            "counts": self.counts(),
            "outcomes": [
                {f.name: getattr(o, f.name) for f in dataclass_fields(o) if f.name != "reported"} | {"kind": o.kind.name}
                for o in self.outcomes
            ],
            **({"snapshot": self.snapshot} if self.snapshot else {}),
            "validation": self.validation,
            **({"record": self.record} if self.record else {}),
        }


class _Run:
    def __init__(
        self, client: CesClient, plan: Plan, parallelism: int, force_delete: bool, on_event: Callable[[Outcome], None]
    ) -> None:
        self.client = client
        self.plan = plan
        self.polling: Polling | None = None  # how CreateApp's operation is waited for (default: Polling())
        self.sem = asyncio.Semaphore(max(1, parallelism))
        self.force_delete = force_delete
        self.on_event = on_event
        self.stop = asyncio.Event()  # set by a conflict: start nothing new
        self.interrupt = asyncio.Event()  # set by Ctrl-C: start nothing new
        self.finished: dict[str, asyncio.Event] = {c.name: asyncio.Event() for c in plan.changes}
        # set once a resource exists as its dependents need it: after the create of a create-then-patch,
        # after the whole change otherwise; ready_ok says whether it got there
        self.ready: dict[str, asyncio.Event] = {c.name: asyncio.Event() for c in plan.changes}
        self.ready_ok: dict[str, bool] = {}
        self.outcomes = {c.name: Outcome(c.kind, c.id, c.action) for c in plan.changes}
        self.unlocked = False  # this apply unlocked the app before its first write
        self.fresh_etag: dict[str, str] = {}  # an update's etag after a forced rename delete dropped a reference
        self.read_at: dict[str, tuple[str, str]] = {}  # an unguarded resource's (updateTime, etag), read before its write

    async def run_phase(self, changes: list[Change]) -> None:
        await asyncio.gather(*(self._one(c) for c in changes))

    async def _one(self, c: Change) -> None:
        outcome = self.outcomes[c.name]
        try:
            if missing := await self._wait_for(c.depends_on):
                outcome.status, outcome.message = SKIPPED, missing
                self.on_event(outcome)
                return
            async with self.sem:
                if self.stop.is_set() or self.interrupt.is_set():
                    return  # stays NOT_STARTED
                await self._call(c, outcome)
            if c.deferred and outcome.status == DONE:
                await self._patch_deferred(c, outcome)
            self.on_event(outcome)
        finally:
            self._ready(c.name, outcome.status == DONE)
            self.finished[c.name].set()

    def _ready(self, name: str, ok: bool) -> None:
        if not self.ready[name].is_set():
            self.ready_ok[name] = ok
            self.ready[name].set()

    async def _wait_for(self, names: tuple[str, ...]) -> str:
        """Wait until each of names (that this apply writes) exists; what never will, or ""."""
        for dep in names:
            if dep in self.ready:
                await self.ready[dep].wait()
                if not self.ready_ok[dep]:
                    return self._not_ready(dep)
        return ""

    def _not_ready(self, dep: str) -> str:
        """Why what waits for dep cannot start: dep's change did not succeed."""
        other = self.outcomes[dep]
        if other.action == "delete" and other.kind.unique_name:
            return (
                f"{other.kind} {other.id} was not deleted, and a {other.kind.singular}'s display name is unique in "
                f"the app, so it must go first: {other.message or other.status}"
            )
        return f"{other.kind} {other.id} was not {other.action}d"

    def blocked(self, c: Change) -> str:
        """Why c, skipped with its phase, could not have run anyway: a change it waits for that failed."""
        failed = [d for d in c.depends_on if d in self.outcomes and self.ready[d].is_set() and not self.ready_ok.get(d, True)]
        return self._not_ready(failed[0]) if failed else ""

    async def _patch_deferred(self, c: Change, outcome: Outcome) -> None:
        """Create-then-patch: the fields left out of the create (a reference cycle) once what they name exists."""
        self._ready(c.name, True)
        if missing := await self._wait_for(c.patch_after):
            # it exists, as created: only the patch is not done (and the next plan shows it)
            outcome.status, outcome.message = NOT_STARTED, f"created without {', '.join(c.deferred)}: {missing}"
            return
        patch = Change(kind=c.kind, id=c.id, action="update", name=c.name, etag=outcome.etag, body=c.body, update_mask=c.deferred)
        async with self.sem:
            if self.stop.is_set() or self.interrupt.is_set():
                outcome.status, outcome.message = NOT_STARTED, f"created without {', '.join(c.deferred)}; not patched"
                return
            await self._call(patch, outcome)
        if outcome.status != DONE:
            outcome.message = f"created, but setting {', '.join(c.deferred)} failed: {outcome.message}"
        elif not outcome.message:  # why this line comes after what it names
            fields = ", ".join(c.deferred)
            outcome.message = (
                f"created first; {fields} set once what {'they name' if len(c.deferred) > 1 else 'it names'} existed"
            )

    async def _call(self, c: Change, outcome: Outcome) -> None:
        if await self._changed_since_plan(c, outcome):
            return
        try:
            written = await self._send(c)
            met = isinstance(written.error, RESENT[c.action])
            lost_reply = written.retried and met
            if met:
                written = await self._settle(c, written)
        except ApiError as exc:  # reading the resource back failed
            written, lost_reply, met = Written(error=exc), False, False
        if written.error is None:
            outcome.status, outcome.etag = DONE, written.etag
            if c.name in self.read_at and (overwritten := await self._overwritten(c, written)):
                outcome.status, outcome.message = CONFLICT, overwritten
                return
            if c.first and c.force:
                await self._after_forced(c)
            if lost_reply:
                outcome.message = "the reply was lost; read back: " + ("gone" if c.action == "delete" else "as sent")
            elif met and c.action != "delete":
                outcome.message = "already applied: it was already as this apply wanted (another apply made the same change)"
            return
        outcome.status, outcome.message = _failure(c, written.error, lost_reply)
        outcome.details = list(written.error.details)
        if outcome.status == CONFLICT:
            self.stop.set()

    async def _changed_since_plan(self, c: Change, outcome: Outcome) -> bool:
        """The guard of a kind whose etag is OUTPUT_ONLY (App, Deployment: cesync.api.behaviour), which a
        server ignores in a request: read the resource just before writing it and compare it with what
        the plan saw. A difference is a conflict, as an etag mismatch is for every other kind. (What
        changes between this read and the write is not seen: the server offers nothing to close that.)"""
        if c.action != "update" or c.before is None or fb.etag_guards(c.kind.model_name):
            return False
        try:
            current: dict[str, Any] | None = (await self.client.read(c.name)).body
        except NotFound:
            current = None
        except ApiError as exc:
            outcome.status, outcome.message = FAILED, f"reading it before the write failed: {exc}"
            return True
        if current is not None and self._same_as_planned(c, current):
            self.read_at[c.name] = (str(current.get("updateTime", "")), str(current.get("etag", "")))
            return False
        if current is not None and _as_sent(c, current):
            log.debug("apply: %s %s: read before the write, already as sent: done without a write", c.kind, c.id)
            outcome.status, outcome.message = DONE, "already applied: it was already as this apply wanted"
            outcome.etag = str(current.get("etag", ""))
            return True
        log.debug("apply: %s %s: read before the write, it changed since the plan: conflict, nothing new starts", c.kind, c.id)
        outcome.status = CONFLICT
        outcome.message = (
            "deleted since the plan; plan again"
            if current is None
            else f"changed by someone else since the plan (read before writing: a {c.kind}'s etag is output only, "
            "so the server does not check it); nothing was overwritten: plan again"
        )
        self.stop.set()
        return True

    async def _after_forced(self, gone: Change) -> None:
        """A forced delete removed the references to gone from the resources naming it, which changes
        their etags: each update of one of them that is otherwise as the plan read it takes the new
        etag (anything else changed there is still a conflict)."""
        for c in self.plan.changes:
            read = c.read if c.read is not None else c.before
            if c.action != "update" or read is None or gone.name not in json.dumps(read):
                continue
            try:
                current = (await self.client.read(c.name)).body
            except ApiError:
                continue
            now = diff_resource(c.kind, c.id, c.body, current).before
            if now is not None and same(unnamed(now, gone.name), unnamed(read, gone.name)):
                self.fresh_etag[c.name] = str(current.get("etag", ""))

    async def _overwritten(self, c: Change, written: Written) -> str:
        """Another author's write to c between the read before the write and the write itself, as a
        conflict's words ("" if none): sync.changelog.overwrite_report."""
        from ..sync.changelog import overwrite_report

        etag = written.etag or str(written.body.get("etag", ""))
        return await overwrite_report(self.client, self.plan.app, c.name, str(c.kind), self.read_at[c.name], etag)

    def _same_as_planned(self, c: Change, current: dict[str, Any]) -> bool:
        """Whether the app is as the plan read it (both sides canonical and unmasked: Change.read)."""
        now = diff_resource(c.kind, c.id, c.body, current).before
        then = c.read if c.read is not None else c.before
        if self.unlocked and c.kind.singleton and now is not None and then is not None:
            now, then = _without(now, LOCK_FIELDS), _without(then, LOCK_FIELDS)  # our own unlock, made first
        return same(now, then)

    async def _send(self, c: Change) -> Written:
        if c.action == "create":
            body = {k: v for k, v in (c.body or {}).items() if k not in c.deferred}
            if c.kind.singleton:  # an app is created by its name, as a long-running operation
                return await create_app(self.client, c.name, body, self.polling)
            return await self.client.create(self.plan.app, c.kind.collection, c.id, body)
        if c.action == "update":
            # an INPUT_ONLY field (a one-time credential) travels only when the update sends it
            unsent = tuple(f for f in fb.fields(c.kind.model_name, fb.INPUT_ONLY) if f not in c.update_mask)
            etag = self.fresh_etag.get(c.name, c.etag)
            return await self.client.patch(c.name, {**_without(c.body or {}, unsent), "etag": etag}, list(c.update_mask))
        # force only where the kind's Delete request has the field (the behaviour table): a Delete
        # request without it has nothing to bind force=true to
        return await self.client.delete(c.name, c.etag or None, force=(self.force_delete or c.force) and _forceable(c.kind))

    async def _settle(self, c: Change, written: Written) -> Written:
        """After a write met a conflict: is the resource what we sent (our lost write, or another
        apply's same change), or not?"""
        if c.action == "delete" and isinstance(written.error, NotFound) and not written.retried:
            return written  # _failure says "already gone" without another read
        try:
            current: dict[str, Any] | None = (await self.client.read(c.name)).body
        except NotFound:
            current = None
        if _as_sent(c, current):
            log.debug("apply: %s %s %s: read back after %s, as sent: done", c.action, c.kind, c.id, type(written.error).__name__)
            return Written(current or {}, None, True)
        log.debug(
            "apply: %s %s %s: read back after %s, not as sent: a real conflict",
            c.action,
            c.kind,
            c.id,
            type(written.error).__name__,
        )
        return written


RESENT: dict[str, tuple[type[ApiError], ...]] = {
    "create": (AlreadyExists,),
    "update": (Aborted, NotFound),
    "delete": (Aborted, NotFound),
}


def _as_sent(c: Change, current: dict[str, Any] | None) -> bool:
    """Canonical comparison of what was sent with what is there (only the masked fields of an update)."""
    if c.action == "delete" or current is None:
        return c.action == "delete" and current is None
    sent = {k: v for k, v in (c.body or {}).items() if c.action != "create" or k not in c.deferred}
    differs = diff_resource(c.kind, c.id, sent, current).update_mask
    if c.action == "create":
        return not differs
    return not any(d == m or d.startswith(m + ".") or m.startswith(d + ".") for d in differs for m in c.update_mask)


def _failure(c: Change, exc: ApiError, lost_reply: bool) -> tuple[Status, str]:
    """(status, message) for an error answer to a change."""
    if lost_reply:
        return CONFLICT, "reply lost, and reading it back shows other than what was sent: changed by someone else; plan again"
    if isinstance(exc, Aborted):
        return CONFLICT, "changed by someone else since the plan (etag mismatch); nothing was overwritten: plan again"
    if isinstance(exc, AlreadyExists):
        return CONFLICT, f"{exc.message}: created by someone else since the plan; plan again"
    if isinstance(exc, NotFound):
        if c.action == "delete":
            return DONE, "already gone (deleted by someone else); nothing to do"
        return CONFLICT, f"{exc.message}: it was deleted since the plan; plan again"
    if isinstance(exc, FailedPrecondition) and c.action == "delete":
        if not _forceable(c.kind):
            return FAILED, f"{exc.message} (a {c.kind}'s delete has no force: change what uses it first)"
        return FAILED, f"{exc.message} (pass --force-delete to delete it anyway and remove those references)"
    return FAILED, str(exc)


def _forceable(kind: ResourceKind) -> bool:
    return fb.delete_has_force(kind.model_name)


def _without(body: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in fields}


def _lock_last(plan: Plan) -> tuple[Plan, Change | None]:
    """A plan that locks the app (App.locked: cesync.api.behaviour APP_LOCK) makes every other write
    first: the app's own change leaves the lock out, and (returned) is what locks it at the end."""
    app = next((c for c in plan.changes if c.kind.singleton and c.action != "delete"), None)
    if app is None or lock_change([app]) is not True:
        return plan, None
    mask = tuple(m for m in app.update_mask if m.split(".")[0] not in LOCK_FIELDS)
    adjusted = replace(app, body=_without(app.body or {}, LOCK_FIELDS), update_mask=mask)
    changes = tuple(adjusted if c is app else c for c in plan.changes)
    if app.action == "update" and not mask:  # locking was all it did: the lock is its write
        changes = tuple(c for c in changes if c is not adjusted)
    return replace(plan, changes=changes), app


async def _read_lock(client: CesClient, plan: Plan) -> bool:
    if any(c.kind.singleton and c.action == "create" for c in plan.changes):
        return False  # a new app: nothing locks it yet
    return is_locked(await client.get(plan.app))


async def _set_lock(client: CesClient, plan: Plan, value: bool) -> Written:
    field_name = LOCK_FIELDS[0]
    return await client.patch(plan.app, {field_name: value}, [field_name])


async def apply_plan(
    client: CesClient,
    plan: Plan,
    *,
    parallelism: int = 8,
    force_delete: bool = False,
    on_event: Callable[[Outcome], None] = lambda o: None,
    interrupt: asyncio.Event | None = None,
    polling: Polling | None = None,
) -> ApplyResult:
    original = plan
    plan, locker = _lock_last(plan)
    setting = f"App.{LOCK_FIELDS[0]}"
    unlock = lock_change(original.changes) is False
    if original.changes and await _read_lock(client, original):
        # "If the app is locked, modifications to the app resources will be rejected" (app.proto):
        # stop before the first write, unless the repo itself unlocks it, which then goes first.
        if not unlock:
            raise CesyncError(
                f"the app {plan.app} is locked ({setting} is true): nothing was written. Unlock it in the console, "
                "or set 'locked: false' in app.yaml to have apply unlock it first"
            )
        first = await _set_lock(client, plan, False)
        if first.error is not None:
            raise CesyncError(f"unlocking the app ({setting}: false) failed, so nothing else was written: {first.error}")
    run = _Run(client, plan, parallelism, force_delete, on_event)
    run.unlocked = unlock
    run.polling = polling
    if locker is not None and all(c.name != locker.name for c in plan.changes):
        run.outcomes[locker.name] = Outcome(locker.kind, locker.id, locker.action)
    if interrupt is not None:
        run.interrupt = interrupt
    # A rename's delete goes first where names are unique (core.passes.renames); examples and
    # deployments (kinds written last) see the whole app; other deletes run after every write.
    phases = [
        ([c for c in plan.changes if c.first], ""),
        ([c for c in plan.changes if c.action != "delete" and not c.kind.written_last], ""),
        (
            [c for c in plan.changes if c.action != "delete" and c.kind.written_last],
            "examples and deployments are written only after every other create and update succeeded",
        ),
        (
            [c for c in plan.changes if c.action == "delete" and not c.first],
            "deletes run only after every create and update succeeded",
        ),
    ]
    done: list[Change] = []
    for changes, why in phases:
        if all(run.outcomes[c.name].status == DONE for c in done) and not (run.stop.is_set() or run.interrupt.is_set()):
            await run.run_phase(changes)
        else:
            for c in changes:
                run.outcomes[c.name].status, run.outcomes[c.name].message = SKIPPED, run.blocked(c) or why
        done += changes
    if locker is not None:
        await _lock_at_the_end(run, locker)
    return ApplyResult(
        plan.environment, plan.app, [run.outcomes[c.name] for c in original.changes], interrupted=run.interrupt.is_set()
    )


async def _lock_at_the_end(run: _Run, locker: Change) -> None:
    """The lock of a plan that locks the app: once every other write succeeded, never before."""
    outcome = run.outcomes[locker.name]
    others = [o for name, o in run.outcomes.items() if name != locker.name]
    ready = all(o.status == DONE for o in others) and outcome.status in (DONE, NOT_STARTED)
    if not ready or run.stop.is_set() or run.interrupt.is_set():
        if outcome.status == NOT_STARTED:
            outcome.status, outcome.message = SKIPPED, "the app is locked only after every other write succeeded"
        elif outcome.status == DONE:
            outcome.message = "done, but not locked: locking waits until every other write succeeded"
            outcome.status = SKIPPED
        return
    written = await _set_lock(run.client, run.plan, True)
    if written.error is None:
        outcome.status, outcome.etag = DONE, written.etag
        outcome.message = "locked last, after every other write"
    else:
        outcome.status, outcome.message = FAILED, f"every other write was made, but locking the app failed: {written.error}"
    run.on_event(outcome)

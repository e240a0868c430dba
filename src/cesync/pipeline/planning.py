"""Planning one environment against its app: read everything the plan passes need (the app, the
applied record, the changelogs of what drifted, the clock, the keys), then run the passes
(cesync.core.planbuild) once."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..api.descriptors import description_id
from ..api.resource import Resource
from ..core.ownership import made_before
from ..core.passes import Compared, PlanInput, RecordsInput, SafetyLimits, SealInput
from ..core.passes.compare import writes_of
from ..core.passes.drift import maybe_drifted
from ..core.plan import Plan
from ..core.planbuild import run_passes
from ..core.planseal import new_salt, seal
from ..core.sensitive import KEY_ENV
from ..core.targets import resolve_targets, target_keys
from ..repo.cache import COMPARED_FILE, load_cache, save_cache, signing_key
from ..repo.config import EMBEDDED
from ..repo.keys import plan_key
from ..repo.repo import EnvTarget
from .context import Context
from .policies import policies_of
from .readahead import read_app
from .toolnames import tested_tools

if TYPE_CHECKING:  # the HTTP client loads when a command first uses it (see client/__init__.py)
    from ..client.api import CesClient
    from ..core.record import AppliedRecord
    from ..sync.record import RecordView


async def read_plan(
    ctx: Context,
    *,
    prune: bool | None = None,
    targets: Iterable[str] | None = None,
    resend_input_only: bool = False,
    prune_unmanaged: bool = False,
    labels: Iterable[str] = (),
) -> Plan:
    """make_plan with the app read ahead (open_context(read_ahead=True)) or, without it, read now."""
    options: dict[str, Any] = {
        "prune": prune,
        "targets": targets,
        "resend_input_only": resend_input_only,
        "prune_unmanaged": prune_unmanaged,
        "labels": labels,
    }
    if ctx.read_ahead is not None:
        return await make_plan(ctx, None, **options)
    async with ctx.client() as client:
        return await make_plan(ctx, client, **options)


async def make_plan(
    ctx: Context,
    client: CesClient | None,
    *,
    prune: bool | None = None,
    targets: Iterable[str] | None = None,
    salt: str | None = None,
    resend_input_only: bool = False,
    prune_unmanaged: bool = False,
    labels: Iterable[str] = (),
) -> Plan:
    """targets: --target values (ID, kind/ID, kinds/ID); one that names nothing is an error.

    resend_input_only: send the INPUT_ONLY fields the repo sets again (see core.passes.compare).
    prune_unmanaged: prune deletes what cesync does not own too (made by hand).
    labels: what reviewers said of the change (plan --label), for the policies (core.passes.policy)."""
    salt = salt or new_salt()
    key = ctx.binding_key(salt)
    read = await read_for_plan(ctx, client)
    safety = ctx.repo.config.safety
    given = plan_input(
        ctx,
        read,
        key,
        prune=ctx.env.prune if prune is None else prune,
        targets=read.selected(targets),
        resend_input_only=resend_input_only,
        prune_unmanaged=prune_unmanaged,
        safety=SafetyLimits(safety.maxChangeFraction, safety.minResources, safety.maxUpdateFraction),
        seal=seal_input(ctx, salt),
        labels=sorted(set(labels)),
    )
    store = load_cache(ctx.repo.root, COMPARED_FILE)
    if store is not None:
        # keyed with the cache's own key: the digests tell a reader of the file nothing to check guesses against
        pair_salt = description_id() + (signing_key() or b"")
        given = replace(given, compared=Compared(pair_salt, store.stored()))
    plan = run_passes(given)
    if store is not None and not ctx.promotion[1]:  # a commit's tree in a temporary folder keeps nothing
        store.keep_only(plan.same)
        save_cache(ctx.repo.root, store, COMPARED_FILE)
    if all(read.view.fresh) and not ctx.promotion[1]:
        from ..sync.recordcache import save_known

        save_known(ctx.repo.root, *read.view.fresh)
    return plan


@dataclass(frozen=True)
class Read:
    """What the plan passes need from the app: its resources, cesync's last applied record, and
    who changed what since that record (CES's changelogs, read only when something drifted)."""

    remote: list[Resource]
    view: RecordView  # what the records say: this owner's newest trusted one, other owners', those ignored
    authors: Mapping[str, tuple[str, str]]
    desired: Sequence[Resource]  # the repo's resources (what --target may name besides the app's)
    sum_key: bytes = b""  # the key records are sealed with (sync.record.current_key)

    @property
    def record(self) -> AppliedRecord | None:
        return self.view.record

    def selected(self, targets: Iterable[str] | None) -> set[str] | None:
        """--target values resolved against what exists on either side ("kind/id"); None: no --target."""
        if not targets:
            return None
        known = {d.key for d in self.desired} | {r.key for r in self.remote}
        return target_keys(resolve_targets(targets, known))


async def read_for_plan(ctx: Context, client: CesClient | None) -> Read:
    """The app and its record (read ahead, or read now with client), then the changelogs of what drifted."""
    ahead, ctx.read_ahead = ctx.read_ahead, None  # the read ahead is used once
    if ahead is not None:
        remote, view = await ahead.result()
    else:
        assert client is not None, "a client, unless the app was read ahead"
        from ..sync.recordcache import open_record_cache

        # the embedded emulator's app is a file of the repo's, which a branch writes as it likes
        cache = open_record_cache(ctx.repo.root) if ctx.endpoint_url != EMBEDDED else None
        remote, view = await read_app(client, ctx.env, ctx.repo.config.owner or "", cache)
    from ..sync.recordcache import AppBase

    record = view.record
    authors: dict[str, tuple[str, str]] = {}
    base = view.base
    # AppBase: the app as read stands for the base (it has the base's digest), so nothing drifted
    # (maybe_drifted finds nothing, each of its ten thousand lookups a copy)
    if record is not None and base is not None and not isinstance(base, AppBase):
        app_body = None if ctx.destroy else app_to_create(ctx.env, remote)
        writes = writes_of(PlanInput(ctx.env.name, ctx.env.parent, ctx.desired, remote, app_body=app_body))
        if names := maybe_drifted(ctx.env.parent, writes, remote, base):
            authors = await _authors(ctx, client, ctx.env.parent, record.time, names)
    from ..sync.record import current_key

    return Read(remote, view, authors, ctx.desired, current_key())


async def _authors(
    ctx: Context, client: CesClient | None, parent: str, since: str, names: set[str]
) -> dict[str, tuple[str, str]]:
    from ..sync.record import changes_since

    if client is not None:
        return await changes_since(client, parent, since, names)
    async with ctx.client() as own:  # read ahead, without a client of its own
        return await changes_since(own, parent, since, names)


def plan_input(
    ctx: Context,
    read: Read,
    key: bytes,
    *,
    prune: bool,
    targets: set[str] | None,
    resend_input_only: bool = False,
    prune_unmanaged: bool = False,
    safety: SafetyLimits | None = None,
    seal: SealInput | None = None,
    labels: Sequence[str] = (),
) -> PlanInput:
    """The one value the plan passes take: the repo rendered, what was read, the options, the clock."""
    from ..repo import parallel  # a large app's diffs on two cores, as a large repo's renders

    record = read.record
    return PlanInput(
        ctx.env.name,
        ctx.env.parent,
        ctx.desired,
        read.remote,
        prune=prune,
        prune_unmanaged=prune_unmanaged,
        targets=targets,
        sensitive=ctx.hidden,
        app_body=None if ctx.destroy else app_to_create(ctx.env, read.remote),  # a tear-down never creates the app
        destroy=ctx.destroy,
        ignore=ctx.ignore,
        resend_input_only=resend_input_only,
        owned=made_before(record.owned, read.remote, record.time) if record is not None else frozenset(),
        base=read.view.base,
        record=record.version if record is not None else "",
        authors=read.authors,
        records=RecordsInput(
            owner=ctx.repo.config.owner or "",
            others=read.view.others,
            sums=record.sums if record is not None else {},
            sum_key=read.sum_key,
            ignored=read.view.ignored,
            # the embedded emulator lives in this process: nobody else can write its records
            key_from=read.view.key_from or ("embedded" if ctx.endpoint_url == "embedded" else ""),
            declared=ctx.repo.declared_owners(),
        ),
        key=key,
        created_at=plan_time(),
        safety=safety,
        seal=seal,
        policy_rules=policies_of(ctx.repo).rules,
        labels=labels,
        tool_tests=tested_tools(ctx.repo.root, ctx.desired),
        mapper=parallel.run,
    )


def app_to_create(env: EnvTarget, remote: list[Resource]) -> dict[str, Any] | None:
    """The app's body when it does not exist and the repo has no app.yaml: its id as display name."""
    return None if any(r.kind.singleton for r in remote) else {"displayName": env.app}


def plan_time() -> str:
    """When a plan is made, as it records it (the clock is read here, never in the passes)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def seal_input(ctx: Context, salt: str) -> SealInput:
    """What the seal pass writes: where the plan was made, and the keyed hashes of the sensitive values."""
    promoted_from, commit = ctx.promotion
    return SealInput(
        salt=salt,
        key_source=KEY_ENV if plan_key() else "none",
        values=seal(ctx.secrets, salt, plan_key()) if ctx.secrets else {},
        endpoint=ctx.endpoint_url,
        promoted_from=promoted_from,
        commit=commit,
        scrub=ctx.scrubber.scrub,
    )

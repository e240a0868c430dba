"""Planning one environment against its app: read, resolve --target, diff (three-way from the last
applied record), label drift, apply the safety guard, seal and bind the plan."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..api.kinds import APP, by_snapshot_field
from ..api.resource import Resource
from ..core.ownership import drift_by_sums, other_owners, record_trust
from ..core.plan import Plan
from ..core.planbuild import build_plan
from ..core.planseal import bind
from ..core.safety import safety_refusal
from ..core.sensitive import KEY_ENV, new_salt, plan_key, seal
from ..core.targets import resolve_targets, target_keys
from ..repo.repo import EnvTarget
from .context import Context
from .policies import check_plan
from .readahead import read_app

if TYPE_CHECKING:  # the HTTP client loads when a command first uses it (see client/__init__.py)
    from ..client.api import CesClient
    from ..core.record import AppliedRecord


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
    if ctx.read_ahead is not None:
        return await make_plan(
            ctx,
            None,
            prune=prune,
            targets=targets,
            resend_input_only=resend_input_only,
            prune_unmanaged=prune_unmanaged,
            labels=labels,
        )
    async with ctx.client() as client:
        return await make_plan(
            ctx,
            client,
            prune=prune,
            targets=targets,
            resend_input_only=resend_input_only,
            prune_unmanaged=prune_unmanaged,
            labels=labels,
        )


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

    resend_input_only: send the INPUT_ONLY fields the repo sets again (see core.planbuild.build_plan).
    prune_unmanaged: prune deletes what cesync does not own too (made by hand).
    labels: what reviewers said of the change (plan --label), for the policies (pipeline.policies)."""
    prune_ = ctx.env.prune if prune is None else prune
    salt = salt or new_salt()
    key = ctx.binding_key(salt)
    plan, selected, remote = await plan_against_remote(
        ctx, client, prune_, targets, key, narrow=True, resend=resend_input_only, prune_unmanaged=prune_unmanaged
    )
    safety = ctx.repo.config.safety
    plan = replace(
        plan,
        targets=tuple(sorted(selected or ())),
        refused=safety_refusal(plan, safety.maxChangeFraction, safety.minResources, safety.maxUpdateFraction),
    )
    plan = check_plan(ctx, plan, remote, sorted(set(labels)))
    return seal_plan(plan, ctx, salt, key)


async def plan_against_remote(
    ctx: Context,
    client: CesClient | None,
    prune: bool,
    targets: Iterable[str] | None,
    key: bytes,
    *,
    narrow: bool,
    resend: bool = False,
    prune_unmanaged: bool = False,
) -> tuple[Plan, set[str] | None, list[Resource]]:
    """Read the app, resolve --target against what exists on either side, and diff.

    narrow: the plan itself keeps only the targets (a saved plan is recomputed whole and
    narrowed afterwards, so that it can be compared with what was saved)."""
    ahead, ctx.read_ahead = ctx.read_ahead, None  # read once, as before
    if ahead is not None:
        remote, view = await ahead.result()
    else:
        assert client is not None, "a client, unless the app was read ahead"
        remote, view = await read_app(client, ctx.env, ctx.repo.config.owner or "")
    record = view.record
    known = {d.key for d in ctx.desired} | {r.key for r in remote}
    selected = target_keys(resolve_targets(targets or (), known))
    plan = build_plan(
        ctx.env.name,
        ctx.env.parent,
        ctx.desired,
        remote,
        prune=prune,
        targets=selected if narrow else None,
        sensitive=ctx.hidden,
        app_body=None if ctx.destroy else app_to_create(ctx.env, remote),  # a tear-down never creates the app
        resend_input_only=resend,
        owned=record.owned if record is not None else frozenset(),
        prune_unmanaged=prune_unmanaged,
        base=base_of(record),
        key=key,
    )
    from ..sync.record import current_key

    # the ownership passes (core/ownership.py): another owner's resources, drift by the sealed sums, trust
    plan = other_owners(plan, view.others, ctx.repo.config.owner or "")
    plan = drift_by_sums(plan, remote, record.sums if record is not None else {}, current_key())
    plan = record_trust(plan, view.ignored, view.key_from)
    if ctx.destroy:
        plan = replace(plan, destroy=True)
    if record is not None:
        plan = replace(plan, record=record.version)
        if plan.drifted and client is not None:
            plan = await label_drift(client, plan, record.time)
        elif plan.drifted:  # read ahead, without a client of its own
            async with ctx.client() as own:
                plan = await label_drift(own, plan, record.time)
    return plan, selected, remote


def app_to_create(env: EnvTarget, remote: list[Resource]) -> dict[str, Any] | None:
    """The app's body when it does not exist and the repo has no app.yaml: its id as display name."""
    return None if any(r.kind.singleton for r in remote) else {"displayName": env.app}


def seal_plan(plan: Plan, ctx: Context, salt: str, key: bytes) -> Plan:
    """The plan with where it was made, the keyed hashes of the sensitive values, and bound (plan.bind)."""
    sealed = replace(
        plan.sensitive,
        salt=salt,
        key=KEY_ENV if plan_key() else "none",
        values=seal(ctx.secrets, salt, plan_key()) if ctx.secrets else {},
    )
    promoted_from, commit = ctx.promotion
    where = replace(plan, endpoint=ctx.endpoint_url, sensitive=sealed, promoted_from=promoted_from, commit=commit)
    return bind(where, key)


async def label_drift(client: CesClient, plan: Plan, since: str) -> Plan:
    """Each drifted change with its author and time, from CES's changelogs after the record (since)."""
    from ..sync.record import changes_since

    if not plan.drifted:
        return plan
    found = await changes_since(client, plan.app, since, {c.name for c in plan.drifted})
    changes = tuple(
        dataclasses.replace(c, drift={**c.drift, "by": found[c.name][0] or None, "at": found[c.name][1] or None})
        if c.drift is not None and c.name in found
        else c
        for c in plan.changes
    )
    return replace(plan, changes=changes)


def base_of(record: AppliedRecord | None) -> dict[tuple[str, str], dict[str, Any]] | None:
    """The record's snapshot per (kind, id): the base of a three-way plan."""
    if record is None:
        return None
    from ..sync.record import KIND_OF

    base: dict[tuple[str, str], dict[str, Any]] = {}
    for collection, items in record.snapshot.items():
        if (kind := by_snapshot_field(collection)) is not None and kind.singleton and isinstance(items, dict):
            base[(kind.name, APP)] = items
        elif collection in KIND_OF and isinstance(items, list):
            base.update(
                {(KIND_OF[collection], str(i.get("name", "")).rsplit("/", 1)[-1]): i for i in items if isinstance(i, dict)}
            )
    return base

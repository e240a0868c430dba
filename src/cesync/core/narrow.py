"""A saved plan may only narrow: what of it may still run, compared with a plan made fresh at apply time."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..errors import PlanFileError
from .plan import Change, Plan

_EXECUTED = ("action", "name", "etag", "body", "body_hash", "update_mask", "depends_on", "deferred", "patch_after")


def narrow(
    saved: Plan, fresh: Plan, *, prune: bool | None = None, gone: frozenset[str] = frozenset(), scrub: Callable[[str], str]
) -> Plan:
    """What a saved plan may do: its changes, each exactly as the repo and the app give it now.

    scrub: the run's (Scrubber.scrub), as plan --out wrote the file: fresh is compared as it
    would be saved.

    fresh is the plan recomputed at apply time from the repo (same digest) and the app,
    with the saved plan's prune setting. Every saved change must equal its recomputed
    counterpart in every field (bodies masked, and by their keyed hashes unmasked) and lie
    within the plan's targets. The plan's prune setting holds unless apply says --no-prune
    (prune False), which refuses its deletes. The result carries the recomputed changes (with the real values of sensitive
    fields, which the file never holds), in the recomputed order, and the recomputed
    metadata, so the mass-change guard counts what the repo defines.
    """
    where = f"{saved.environment} ({saved.app})"
    if (saved.environment, saved.app) != (fresh.environment, fresh.app):
        raise PlanFileError(f"the plan is for {where}, not {fresh.environment} ({fresh.app})")
    if saved.managed != fresh.managed:
        raise PlanFileError(
            f"the plan says the repo manages {saved.managed} resources, the repo defines {fresh.managed}; "
            "the plan file was changed after it was made: refusing"
        )
    if saved.sensitive.fields != fresh.sensitive.fields:
        raise PlanFileError("the plan's list of sensitive fields differs from the repo's: refusing; make a new plan")
    by_key = {c.key: c for c in fresh.changes}
    public = {c["kind"] + "/" + c["id"]: c for c in _as_saved(fresh, scrub)["changes"]}
    seen: set[str] = set()
    kept_gone: list[Change] = []
    for i, (c, raw) in enumerate(zip(saved.changes, _as_saved(saved, scrub)["changes"], strict=True)):
        what = f"change {i + 1} ({c.action} {c.kind} {c.id})"
        _inside_app(c, saved.app, what)
        if c.key in seen:
            raise PlanFileError(f"{what} appears twice in the plan: refusing")
        seen.add(c.key)
        if saved.targets and c.key not in saved.targets:
            raise PlanFileError(f"{what}: it is outside the plan's targets ({', '.join(saved.targets)}): refusing")
        if c.action == "delete" and not saved.prune:
            raise PlanFileError(f"{what}: the plan was made without prune, yet it deletes: refusing")
        if c.action == "delete" and prune is False:
            raise PlanFileError(
                f"{what}: the plan deletes, but prune is off for this apply (--no-prune); apply without --no-prune "
                "to run the plan's deletes, or make a new plan without --prune"
            )
        now = by_key.get(c.key)
        if now is None and c.action == "delete" and c.key in gone:
            kept_gone.append(c)  # neither in the repo nor in the app any more: apply reports it done
            continue
        if now is None:
            raise PlanFileError(
                f"{what}: the repo and the app give no such change now (already done, or the plan file was changed); "
                "make a new plan"
            )
        if now.etag != c.etag and now.action == c.action:
            raise PlanFileError(
                f"{what}: {c.name} changed in the app since the plan (etag {c.etag or '-'}, now {now.etag or '-'}); "
                "nothing was written: make a new plan"
            )
        expected = public[c.key]
        differing = [k for k in (*_EXECUTED, *(k for k in expected if k not in _EXECUTED)) if raw.get(k) != expected.get(k)]
        if differing:
            raise PlanFileError(
                f"{what}: its {', '.join(differing)} differ from what the repo and the app give; the plan file "
                "was changed after it was made (or made by another cesync): refusing, nothing was written"
            )
    changes = tuple(c for c in fresh.changes if c.key in seen) + tuple(kept_gone)
    return replace(fresh, changes=changes, prune=saved.prune if prune is None else prune)


def _as_saved(plan: Plan, scrub: Callable[[str], str]) -> dict[str, Any]:
    """The plan's data as plan --out writes it: masked, and every known sensitive value scrubbed
    (a remote body, a delete's before, may hold one)."""
    data: dict[str, Any] = json.loads(scrub(json.dumps(plan.public())))
    return data


def _inside_app(c: Change, app: str, what: str) -> None:
    expected = c.kind.resource_name(app, c.id)
    if c.name != expected:
        raise PlanFileError(f"{what}: it names {c.name!r}, which is not {c.kind} {c.id} of the plan's app {app}: refusing")
    outside = [d for d in (*c.depends_on, *c.patch_after) if d != app and not d.startswith(app + "/")]
    if outside:
        raise PlanFileError(f"{what}: it depends on {outside[0]!r}, outside the plan's app {app}: refusing")

"""The drift pass: a change whose app side differs from what cesync last applied is labelled drift,
with who made it and when where CES's changelogs say (a three-way plan) (pure).

The base is the applied record's snapshot (``PlanInput.base``); only the kinds a snapshot holds
can be told apart. ``maybe_drifted`` is a cheap superset of it for the pipeline, which reads the changelogs of
what drifted before the chain runs (``PlanInput.authors``)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from ...api.kinds import ResourceKind
from ...api.resource import Resource
from ..diff import diff_resource
from ..plan import Change, Plan
from . import PlanInput

__all__ = ["as_desired", "drift", "drift_fields", "maybe_drifted"]

log = logging.getLogger(__name__)


def drift(plan: Plan, given: PlanInput) -> Plan:
    if given.base is None:
        return plan
    return replace(plan, changes=tuple(_labelled(c, given.remote_by, given) for c in plan.changes))


def _labelled(c: Change, remote_by: Mapping[tuple[str, str], Resource], given: PlanInput) -> Change:
    if c.action == "delete" or given.base is None:
        return c
    fields = drift_fields(c.kind, c.id, given.base, remote_by.get((c.kind.name, c.id)))
    if not fields:
        return c
    by, at = given.authors.get(c.name, ("", ""))
    log.debug("plan: %s %s: drift in %s (by %s)", c.kind, c.id, ", ".join(fields), by or "unknown")
    return replace(c, drift={"fields": fields, "by": by or None, "at": at or None})


def drift_fields(
    kind: ResourceKind, rid: str, base: Mapping[tuple[str, str], dict[str, Any]], remote: Resource | None
) -> list[str]:
    """What of the app differs from the base for one resource ([]: nothing, or a kind no snapshot holds)."""
    if not kind.in_snapshot:
        return []
    was = base.get((kind.name, rid))
    if remote is None:
        return ["(deleted outside cesync)"] if was is not None else []
    if was is None:
        return ["(made outside cesync)"]
    return list(diff_resource(kind, rid, as_desired(was), remote.body).update_mask)


def maybe_drifted(
    parent: str, desired: Iterable[Resource], remote: Iterable[Resource], base: Mapping[tuple[str, str], dict[str, Any]]
) -> set[str]:
    """Names of the repo's resources whose app side may have drifted from base: whose changelogs
    the pipeline reads. Compared as read, without the canonical form drift_fields uses (the whole
    app would be canonicalized twice): equal as read is equal, so nothing drifted is left out."""
    remote_by = {r.key: r for r in remote}
    found: set[str] = set()
    for d in desired:
        if not d.kind.in_snapshot:
            continue
        key = d.key
        was, now = base.get(key), remote_by.get(key)
        if was is None or now is None:
            drifted = (was is None) != (now is None)
        else:  # equal with the server's fields is equal without them (a snapshot keeps them: the common case)
            drifted = was != now.body and as_desired(was) != as_desired(now.body)
        if drifted:
            found.add(d.kind.resource_name(parent, d.id))
    return found


def as_desired(body: dict[str, Any]) -> dict[str, Any]:
    """A resource as the server printed it, compared as if the repo had said it: server-set fields out.

    A base is compared only without these (sync.recordcache stands the app, its own server-set
    fields included, in for a snapshot it equals without them)."""
    return {k: v for k, v in body.items() if k not in ("name", "etag", "createTime", "updateTime")}

"""The diff pass: the repo against the app, resource by resource (pure).

Every resource of the repo (and the app, when it must be created and the repo has no
app.yaml) becomes a create or an update when it differs from the app, placed after what it
references (``cesync.core.order``); every deletable resource of the app that the repo lacks
becomes a delete, with the resources that reference it. Which of those stay is for the
passes after this one (targets, ownership). References are found in the bodies as full
resource names of the same app (``{app}/tools/x``, ``{app}/toolsets/y``), by the rule validate
checks cycles by (``cesync.core.references``)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from ...api import behaviour as fb
from ...api.kinds import APP, THE_APP
from ...api.resource import Resource
from ..diff import FieldChange, ResourceDiff, diff_resource, pair_digest
from ..documents import unreadable
from ..order import Node, Placed, order
from ..plan import RESENT, Change, Plan
from ..references import names
from ..sensitive import input_only_fields
from . import PlanInput

__all__ = ["compare", "named_by", "writes_of"]

log = logging.getLogger(__name__)


def compare(plan: Plan, given: PlanInput) -> Plan:
    parent = given.parent
    writes = writes_of(given)
    remote_by = given.remote_by
    placed = _placed(writes, remote_by, parent)
    changes: list[Change] = []
    unknown: dict[str, list[str]] = {}
    memo = given.compared
    known = memo.same if memo is not None and not given.resend_input_only else frozenset()
    sensitive = given.sensitive or {}
    same: set[bytes] = set()
    debug = log.isEnabledFor(logging.DEBUG)
    pairs: list[tuple[Resource, Resource | None, bytes | None]] = []
    for res in writes:
        r = remote_by.get(res.key)
        # a body holding a sensitive value is never known by a digest kept on disk (one could try guesses against it)
        pair = (
            pair_digest(res.kind, res.id, res.body, r.body, memo.salt)
            if memo is not None and r is not None and not sensitive.get(res.key)
            else None
        )
        if pair is not None and pair in known:
            same.add(pair)
            if debug:
                log.debug("plan: %s %s: unchanged (the same pair as an earlier run's)", res.kind, res.id)
            continue
        pairs.append((res, r, pair))
    diffs = given.mapper([(res.kind, res.id, res.body, r.body if r else None) for res, r, _ in pairs], _diffs)
    for (res, r, pair), found in zip(pairs, diffs, strict=True):
        kind, rid, body = res.kind, res.id, res.body
        d = found or _EQUAL if r is not None else diff_resource(kind, rid, body, None)
        if d is _EQUAL and given.resend_input_only and input_only_fields(kind.model_name, body):
            d = diff_resource(kind, rid, body, r.body if r else None)  # the update sends the body again: its diff shown
        if pair is not None and not d.update_mask and not d.unknown:
            same.add(pair)
        name = kind.resource_name(parent, rid)
        if d.unknown:
            unknown[name] = d.unknown
        where = placed.get(name, _NOWHERE)
        common: dict[str, Any] = {
            "kind": kind,
            "id": rid,
            "name": name,
            "after": d.after,
            "body": body,
            "depends_on": where.depends_on,
            "level": where.level,
        }
        log.debug(
            "plan: %s %s: %s",
            kind,
            rid,
            "create (not in the app)" if r is None else f"update {', '.join(d.update_mask)}" if d.update_mask else "unchanged",
        )
        if r is None:
            note = "the app does not exist yet: created first" if kind.singleton else ""
            if sent := input_only_fields(kind.model_name, body):
                said = f"sends {', '.join(sent)} (input only: sent on create, never read back, so never compared)"
                note = f"{note}; {said}" if note else said
            changes.append(Change(action="create", note=note, deferred=where.deferred, patch_after=where.patch_after, **common))
            continue
        resent = input_only_fields(kind.model_name, body) if given.resend_input_only else []
        if not d.update_mask and not resent:
            continue
        notes = [f"the app's {bad}; compared as text, the update replaces it" for bad in unreadable(r.body)]
        notes += [f"sends {', '.join(resent)} again (input only: --resend-input-only)"] if resent else []
        common["note"] = "; ".join(notes)
        changes.append(
            Change(
                action="update",
                etag=r.etag,
                before=d.before,
                read=d.before,
                fields=tuple(d.fields) + tuple(FieldChange(f, None, RESENT) for f in resent),
                update_mask=tuple(sorted({*d.update_mask, *resent})),
                **common,
            )
        )
    written = {d.key for d in writes}
    deletes = [_delete(r, given) for r in given.remote if r.key not in written and r.kind.deletable]
    return replace(plan, changes=(*changes, *deletes), unknown_fields=unknown, same=frozenset(same))


_NOWHERE = Placed()  # what order gives a write when the apply creates nothing
_EQUAL = ResourceDiff(None, None)  # a pair the diff found equal, with nothing unknown


def _diffs(pairs: list[tuple[Any, str, dict[str, Any], dict[str, Any] | None]]) -> list[ResourceDiff | None]:
    """diff_resource of each (kind, id, desired, remote) whose remote is there, None when it found
    them equal with nothing unknown (most of an unchanged app's: nothing of theirs is sent back
    from a second process)."""
    out: list[ResourceDiff | None] = []
    for kind, rid, desired, remote in pairs:
        d = diff_resource(kind, rid, desired, remote) if remote is not None else None
        out.append(d if d is not None and (d.update_mask or d.unknown) else None)
    return out


def _placed(writes: list[Resource], remote_by: Mapping[tuple[str, str], Resource], parent: str) -> Mapping[str, Placed]:
    """Where each write goes (cesync.core.order); empty when none is a create: a write waits
    only for what the same apply creates, so the bodies are not walked for references then."""
    created = [d for d in writes if d.key not in remote_by]
    if not created:
        return {}
    creating_app = any(d.kind.singleton for d in created)
    nodes = [
        Node(d.kind.resource_name(parent, d.id), d.key not in remote_by, _field_refs(d.body, parent), d.kind.deferrable)
        for d in writes
    ]
    return order(nodes, parent if creating_app else "")


def writes_of(given: PlanInput) -> list[Resource]:
    """The repo's resources, after the app when it must be created and the repo has no app.yaml."""
    if given.app_body is None or any(d.kind.singleton for d in given.desired):
        return list(given.desired)
    return [Resource(THE_APP, APP, given.app_body), *given.desired]


def _delete(r: Resource, given: PlanInput) -> Change:
    """A delete of r (what waits for what among deletes is the order pass's)."""
    name = r.kind.resource_name(given.parent, r.id)
    return Change(
        kind=r.kind, id=r.id, action="delete", name=name, etag=r.etag, before=diff_resource(r.kind, r.id, None, r.body).before
    )


def named_by(resources: Iterable[Resource], parent: str) -> dict[str, set[str]]:
    """For each full name, the full names of the resources that hold it in a field a request writes
    (the app's, for deletes and renames): an output-only field the server keeps (an evaluation's
    evaluationDatasets, the datasets that list it) is no reference of its own, and read as one it
    makes a cycle between two deletes that would wait on each other."""
    out: dict[str, set[str]] = {}
    for r in resources:
        output_only = fb.fields(r.kind.model_name, fb.OUTPUT_ONLY)
        name = r.kind.resource_name(parent, r.id)
        for target in names({k: v for k, v in r.body.items() if k not in output_only}, parent):
            out.setdefault(target, set()).add(name)
    return out


def _field_refs(body: dict[str, Any], parent: str) -> dict[str, frozenset[str]]:
    """Per top-level field, the full names of this app's resources it holds."""
    return {k: frozenset(found) for k, v in body.items() if (found := names(v, parent))}

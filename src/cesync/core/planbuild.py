"""Building the plan: desired against remote, resource by resource (pure).

Order is fixed here: creates and updates by dependency level (a resource after
everything it references), by kind rank at the same level (``cesync.api.kinds``: toolsets
before tools); deletes last, in reverse. References are found in the desired bodies as full resource names of
the same app (``{app}/tools/x``, ``{app}/toolsets/y``)."""

from __future__ import annotations

import datetime
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..api import behaviour as fb
from ..api.kinds import APP, KINDS, THE_APP, ResourceKind, names_pattern
from ..api.resource import Resource
from ..errors import CesyncError
from .applock import lock_notice
from .carry import carry_unknown
from .diff import FieldChange, diff_resource
from .documents import unreadable
from .order import Node, order
from .plan import RESENT, Change, Plan, Sealed
from .planseal import desired_digest
from .sensitive import CHANGED, cut, input_only_fields, mask, overlaps
from .validation import findings
from .yamlfile import Path_

log = logging.getLogger(__name__)  # planning decisions, shown with --verbose


def masked(resource: Resource, paths: Sequence[Path_] | None) -> Resource:
    """The resource with its sensitive paths masked; itself when it has none (mask copies)."""
    return replace(resource, body=mask(resource.body, paths)) if paths else resource


def _references(body: Any, parent: str) -> set[str]:
    """Full names of this app's tools and toolsets that appear anywhere in a body."""
    found: set[str] = set()
    pattern = names_pattern(parent)
    stack = [body]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and parent in item:
            found.update(m.group(0) for m in pattern.finditer(item))
    return found


def _written_references(resource: Resource, parent: str) -> set[str]:
    """The names a remote resource holds in the fields a request writes: an output-only field the
    server keeps (an evaluation's evaluationDatasets, the datasets that list it) is no reference of
    its own, and read as one it makes a cycle between two deletes that would wait on each other."""
    output_only = fb.fields(resource.kind.model_name, fb.OUTPUT_ONLY)
    return _references({k: v for k, v in resource.body.items() if k not in output_only}, parent)


def _field_refs(body: dict[str, Any], parent: str) -> dict[str, frozenset[str]]:
    """Per top-level field, the full names of this app's resources it holds."""
    return {k: frozenset(found) for k, v in body.items() if (found := _references(v, parent))}


def build_plan(
    env: str,
    parent: str,
    desired: list[Resource],
    remote: list[Resource],
    *,
    prune: bool = False,
    targets: set[str] | None = None,
    sensitive: Mapping[tuple[str, str], Sequence[Path_]] | None = None,
    app_body: dict[str, Any] | None = None,
    resend_input_only: bool = False,
    owned: frozenset[str] | None = None,
    prune_unmanaged: bool = False,
    base: Mapping[tuple[str, str], dict[str, Any]] | None = None,
    key: bytes = b"",
) -> Plan:
    """desired: the repo's resources (wire bodies). targets: ids (or kind/id) to limit the plan to.

    app_body: what to create the app with when neither the repo (app.yaml) nor remote has it
    (remote has the app whenever it exists: see remote.read_remote).

    resend_input_only: the INPUT_ONLY fields the repo sets on resources that exist (never read
    back, so never compared) are sent again, as an update of those fields.

    sensitive: per (kind, id), the body paths that hold sensitive values; they are masked
    in before, after and fields here and in bodies when the plan is written out; the digest
    covers them unmasked, keyed with key (see desired_digest).

    owned: "kind/id" of what cesync owns (the applied record); prune deletes only those, and
    everything, owned or not, with prune_unmanaged. None: every remote resource counts as owned
    (callers that keep no record).

    base: the app as cesync last applied it (the record's snapshot), per (kind, id), for the kinds
    the snapshot covers; a change whose remote differs from it is labelled drift.
    """
    hidden = {k: list(v) for k, v in (sensitive or {}).items() if v}

    def wanted(kind: ResourceKind, rid: str) -> bool:
        return not targets or rid in targets or f"{kind.name}/{rid}" in targets

    name_of = {d.key: d.kind.resource_name(parent, d.id) for d in desired}
    remote_by = {r.key: r for r in remote}
    # The app must exist before anything in it: created even when the repo has no app.yaml.
    implied = [Resource(THE_APP, APP, app_body)] if app_body is not None and not any(d.kind.singleton for d in desired) else []
    writes = implied + list(desired)
    name_of.update({d.key: d.kind.resource_name(parent, d.id) for d in implied})
    creating_app = any(d.kind.singleton and d.key not in remote_by for d in writes)
    placed = order(
        [Node(name_of[d.key], d.key not in remote_by, _field_refs(d.body, parent), d.kind.deferrable) for d in writes],
        parent if creating_app else "",
    )
    changes: list[Change] = []
    unknown: dict[str, list[str]] = {}
    for res in writes:
        kind, rid, body = res.kind, res.id, res.body
        name = name_of[res.key]
        r = remote_by.get(res.key)
        d = diff_resource(kind, rid, body, r.body if r else None)
        if d.unknown:
            unknown[name] = d.unknown
        if not wanted(kind, rid) and not (kind.singleton and r is None):
            log.debug("plan: %s %s: not a --target, not compared", kind, rid)
            continue
        where = placed[name]
        common: dict[str, Any] = {
            "kind": kind,
            "id": rid,
            "name": name,
            "after": d.after,
            "body": body,
            "depends_on": where.depends_on,
            "level": where.level,
        }
        paths = hidden.get(res.key, [])
        if paths:
            common["after"] = mask(d.after, [cut(p) for p in paths])
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
        elif d.update_mask or (resend_input_only and input_only_fields(kind.model_name, body)):
            if d.unknown:
                common.update(_carried(kind, rid, r.body, body, d.update_mask))
            resent = input_only_fields(kind.model_name, body) if resend_input_only else []
            for bad in unreadable(r.body):
                said = f"the app's {bad}; compared as text, the update replaces it"
                common["note"] = f"{common['note']}; {said}" if common.get("note") else said
            if resent:
                said = f"sends {', '.join(resent)} again (input only: --resend-input-only)"
                common["note"] = f"{common['note']}; {said}" if common.get("note") else said
            changes.append(
                Change(
                    action="update",
                    etag=r.etag,
                    before=mask(d.before, [cut(p) for p in paths]) if paths else d.before,
                    fields=_masked_fields(d.fields, paths, d.before, d.after)
                    + tuple(FieldChange(f, None, RESENT) for f in resent),
                    update_mask=tuple(sorted({*d.update_mask, *resent})),
                    **common,
                )
            )
    if targets:
        _untargeted_dependencies(changes, {name_of[d.key]: d.key for d in writes if d.key not in remote_by})
    unmanaged: list[str] = []
    deletes: list[Change] = []
    for r in remote:
        if r.key in name_of or not wanted(r.kind, r.id) or not r.kind.deletable:
            continue  # the app is never deleted, nor listed as unmanaged
        name = r.kind.resource_name(parent, r.id)
        if not prune or not (prune_unmanaged or owned is None or f"{r.kind.name}/{r.id}" in owned):
            log.debug("plan: %s %s: in the app, not in the repo: kept (prune is off, or cesync does not own it)", r.kind, r.id)
            unmanaged.append(name)
            continue
        log.debug("plan: %s %s: in the app, not in the repo: delete (prune)", r.kind, r.id)
        d = diff_resource(r.kind, r.id, None, r.body)
        dependents = sorted(
            n
            for n, refs in ((x.kind.resource_name(parent, x.id), _written_references(x, parent)) for x in remote)
            if name in refs and n != name
        )
        deletes.append(
            Change(kind=r.kind, id=r.id, action="delete", name=name, etag=r.etag, before=d.before, depends_on=tuple(dependents))
        )
    _mark_renames(changes, deletes)
    changes.sort(key=lambda c: (c.kind.written_last, c.level, c.kind.rank, c.id))
    deletes.sort(key=lambda c: (-len(c.depends_on), -c.kind.rank, c.id))
    deletes = _delete_order(deletes)
    app_remote = next((r for r in remote if r.kind.singleton), None)
    return Plan(
        resend_input_only=resend_input_only,
        app_lock=lock_notice(app_remote.body if app_remote else None, [*changes, *deletes]),
        environment=env,
        app=parent,
        digest=desired_digest(env, parent, desired, key),
        changes=tuple(_drift(c, remote_by, base) for c in changes) + tuple(deletes),
        unmanaged=tuple(sorted(unmanaged)),
        unknown_fields=unknown,
        validation=findings(parent, remote),
        managed=len(desired),
        prune=prune,
        created_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        sensitive=Sealed(fields={name_of[k]: [list(p) for p in v] for k, v in sorted(hidden.items()) if k in name_of}),
        owned=tuple(sorted(owned)) if owned is not None else (),
        prune_unmanaged=prune_unmanaged,
    )


def _drift(
    c: Change, remote_by: Mapping[tuple[str, str], Resource], base: Mapping[tuple[str, str], dict[str, Any]] | None
) -> Change:
    """The change labelled drift when the app differs from what cesync last applied (three-way)."""
    if base is None or not c.kind.in_snapshot:  # no base tells the drift of a kind no snapshot holds
        return c
    was = base.get((c.kind.name, c.id))
    r = remote_by.get((c.kind.name, c.id))
    if r is None:
        fields = ["(deleted outside cesync)"] if was is not None else []
    elif was is None:
        fields = ["(made outside cesync)"]
    else:
        fields = list(diff_resource(c.kind, c.id, _as_desired(was), r.body).update_mask)
    return _with(c, drift={"fields": fields, "by": None, "at": None}) if fields else c


def _as_desired(body: dict[str, Any]) -> dict[str, Any]:
    """A resource as the server printed it, compared as if the repo had said it: server-set fields out."""
    return {k: v for k, v in body.items() if k not in ("name", "etag", "createTime", "updateTime")}


def _carried(kind: ResourceKind, rid: str, remote: dict[str, Any], body: dict[str, Any], mask: list[str]) -> dict[str, Any]:
    """The body an update sends with the remote's unknown fields inside its masked fields (core.carry),
    and a note naming them; a change that would drop one is refused, naming each."""
    carried = carry_unknown(kind, remote, body, mask)
    if carried.lost:
        raise CesyncError(
            f"{kind} {rid}: the update would drop {', '.join(carried.lost)}, which the app has and this cesync "
            "does not know (a newer API field), because the repo adds and removes items of that list at once "
            "and cesync cannot tell which item they belong to; nothing was planned. Remove the old items in one "
            "apply and add the new ones in the next, or use a cesync that knows the field"
        )
    if not carried.kept:
        return {}
    return {"body": carried.body, "note": "keeps the app's fields cesync does not know: " + ", ".join(carried.kept)}


def _untargeted_dependencies(changes: list[Change], new: Mapping[str, tuple[str, str]]) -> None:
    """A targeted change naming something new that the targets leave out would fail at the API: say so now."""
    planned = {c.name for c in changes}
    for c in changes:
        missing = [new[n] for n in (*c.depends_on, *c.patch_after) if n in new and n not in planned]
        if missing:
            names = " ".join(f"--target {KINDS[k].collection}/{i}" for k, i in missing)
            raise CesyncError(
                f"{c.kind} {c.id} names {', '.join(f'{k} {i}' for k, i in missing)}, which does not exist yet and is "
                f"not targeted: add {names} (or plan without --target)"
            )


def _masked_fields(
    fields: list[FieldChange], paths: list[Path_], before: dict[str, Any] | None, after: dict[str, Any] | None
) -> tuple[FieldChange, ...]:
    """A changed sensitive field shows only that it changed; a field around one shows it masked."""
    if not paths:
        return tuple(fields)
    cuts = [cut(p) for p in paths]
    out = []
    for f in fields:
        inside, contains = overlaps(f.path, paths)
        if inside:
            out.append(FieldChange(f.path, None, CHANGED))
        elif contains:
            parts = f.path.split(".")
            out.append(FieldChange(f.path, _dig(mask(before, cuts), parts), _dig(mask(after, cuts), parts)))
        else:
            out.append(f)
    return tuple(out)


def _dig(data: Any, parts: list[str]) -> Any:
    for p in parts:
        data = data.get(p) if isinstance(data, dict) else None
    return data


def _delete_order(deletes: list[Change]) -> list[Change]:
    """Reverse dependency order: a resource is deleted after everything that references it."""
    names = {c.name for c in deletes}
    done: set[str] = set()
    ordered: list[Change] = []
    pending = list(deletes)
    while pending:
        ready = [c for c in pending if all(d in done or d not in names for d in c.depends_on)] or pending[:1]
        for c in ready:
            ordered.append(c)
            done.add(c.name)
            pending.remove(c)
    return ordered


def _mark_renames(changes: list[Change], deletes: list[Change]) -> None:
    """Same content under a new id: shown as create + delete, with a note on both."""
    for i, c in enumerate(changes):
        if c.action != "create":
            continue
        for j, d in enumerate(deletes):
            if d.kind == c.kind and d.before == c.after and not d.note:
                changes[i] = _with(c, note=f"rename of {d.id} (created before the old one is deleted)")
                deletes[j] = _with(d, note=f"renamed to {c.id}")
                break


def _with(c: Change, **kw: Any) -> Change:
    return replace(c, **kw)

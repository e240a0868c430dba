"""The plan: plain, immutable, ordered data with a versioned JSON form (pure).

    build_plan(env, desired, remote) -> Plan  ->  render (text, markdown, json)
                                              ->  apply (executes plan.changes in order)

Order is fixed here: creates and updates by dependency level (a resource after
everything it references), by kind rank at the same level (``cesync.api.kinds``: toolsets
before tools); deletes last, in reverse. References are found in the desired bodies as full resource names of
the same app (``{app}/tools/x``, ``{app}/toolsets/y``).
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, get_args

from .. import __version__
from ..api import behaviour as fb
from ..api.kinds import APP, KINDS, names_pattern
from ..api.resource import Resource
from ..errors import CesyncError, PlanFileError, UnsafePlanError
from .carry import carry_unknown
from .diff import FieldChange, diff_resource
from .order import Node, order
from .planfile import Action, PlanFile, parse_plan_file
from .sensitive import CHANGED, cut, input_only_fields, mask, overlaps, scrub
from .validation import findings
from .yamlfile import Path_

__all__ = [
    "FORMAT_VERSION",
    "Action",
    "Change",
    "Plan",
    "Sealed",
    "bind",
    "build_plan",
    "check_safety",
    "desired_digest",
    "is_locked",
    "lock_change",
    "narrow",
    "safety_refusal",
    "seal_matches",
    "seal_of",
]

log = logging.getLogger(__name__)  # planning decisions, shown with --verbose
FORMAT_VERSION = 3
RESENT = "(sensitive, input only: sent again)"
ACTIONS: tuple[Action, ...] = get_args(Action)


@dataclass(frozen=True)
class Change:
    kind: str  # a key of cesync.api.kinds.KINDS
    id: str
    action: Action
    name: str  # full resource name
    etag: str = ""  # the remote etag seen at plan time (update, delete)
    before: dict[str, Any] | None = None  # canonical remote
    after: dict[str, Any] | None = None  # canonical desired
    body: dict[str, Any] | None = None  # what create/update sends (wire JSON)
    fields: tuple[FieldChange, ...] = ()
    update_mask: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()  # resource names that must exist first
    level: int = 0
    note: str = ""
    deferred: tuple[str, ...] = ()  # create-then-patch: fields left out of the create (a reference cycle)
    patch_after: tuple[str, ...] = ()  # ... and patched in once these exist
    # the remote differs from what cesync last applied (the applied record): {"fields": [...], "by": ..., "at": ...}
    drift: dict[str, Any] | None = None
    body_hash: str = ""  # keyed hash of the unmasked body (see bind): a saved plan's masked fields are bound too

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.id}"


@dataclass(frozen=True)
class Sealed:
    """What a plan knows of sensitive values: never a value, only where they are and keyed hashes."""

    salt: str = ""  # hex, random per plan
    key: str = ""  # where the HMAC key came from: "CESYNC_PLAN_KEY" or "none"
    values: dict[str, str] = field(default_factory=dict)  # NAME -> keyed hash of its value
    fields: dict[str, list[list[str | int]]] = field(default_factory=dict)  # resource name -> body paths


@dataclass(frozen=True)
class Plan:
    environment: str
    app: str
    digest: str
    changes: tuple[Change, ...] = ()
    unmanaged: tuple[str, ...] = ()  # remote resources kept: prune is off, or cesync does not own them
    unknown_fields: dict[str, list[str]] = field(default_factory=dict)  # resource -> fields we do not model
    validation: dict[str, list[str]] = field(default_factory=dict)  # resource -> what CES reports wrong (core.validation)
    managed: int = 0  # resources the repo defines
    prune: bool = False
    targets: tuple[str, ...] = ()  # a --target plan: only these kind/id were compared (a partial plan)
    refused: str = ""  # why apply would refuse this plan (the mass-change guard), shown by every renderer
    app_lock: str = ""  # how the app's lock (App.locked) meets this plan, shown by every renderer
    resend_input_only: bool = False  # INPUT_ONLY fields the repo sets are sent again (--resend-input-only)
    created_at: str = ""
    endpoint: str = ""  # where the plan read the app; apply of a saved plan refuses any other
    promoted_from: str = ""  # cesync promote: the environment whose applied commit this plan was made from
    commit: str = ""  # ... and that commit: apply renders the repo as it is there, not the working tree
    sensitive: Sealed = field(default_factory=Sealed)
    record: str = ""  # the applied record (app version) the plan took as its base ("" without one)
    owned: tuple[str, ...] = ()  # "kind/id" cesync owns, from that record: what --prune may delete
    prune_unmanaged: bool = False  # --prune-unmanaged: also delete what cesync does not own
    seal: str = ""  # keyed hash of everything else in the saved file (see bind)
    cesync_version: str = __version__
    format_version: int = FORMAT_VERSION

    @property
    def has_changes(self) -> bool:
        return bool(self.changes)

    @property
    def drifted(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.drift is not None)

    def counts(self) -> dict[str, int]:
        return {a: sum(1 for c in self.changes if c.action == a) for a in ACTIONS}

    def public(self) -> dict[str, Any]:
        """The plan as plain JSON data, every sensitive field of every body masked."""
        data = asdict(self)
        for change in data["changes"]:
            paths = self.sensitive.fields.get(change["name"])
            if paths and change["body"] is not None:
                change["body"] = mask(change["body"], [tuple(p) for p in paths])
        public: dict[str, Any] = json.loads(json.dumps(data))  # tuples become lists, as in a file
        return public

    def to_json(self) -> str:
        return json.dumps(self.public(), indent=2, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str = "plan") -> Plan:
        return _from_file(parse_plan_file(text, source, FORMAT_VERSION))


def _from_file(f: PlanFile) -> Plan:
    data = f.model_dump()
    changes = tuple(
        Change(
            **{
                **c,
                "fields": tuple(FieldChange(**x) for x in c["fields"]),
                "update_mask": tuple(c["update_mask"]),
                "depends_on": tuple(c["depends_on"]),
                "deferred": tuple(c["deferred"]),
                "patch_after": tuple(c["patch_after"]),
            }
        )
        for c in data.pop("changes")
    )
    return Plan(
        **{
            **data,
            "changes": changes,
            "unmanaged": tuple(data["unmanaged"]),
            "owned": tuple(data["owned"]),
            "targets": tuple(data["targets"]),
            "sensitive": Sealed(**data["sensitive"]),
        }
    )


def desired_digest(env: str, app: str, desired: list[Resource], key: bytes = b"") -> str:
    """Keyed hash of the rendered desired configuration, sensitive fields unmasked (what apply would send).

    HMAC-SHA256 under key (cesync.core.sensitive.binding_key) of json.dumps({"env": env, "app": app,
    "resources": [[kind, id, body], ...]}, sort_keys=True), fed one resource at a time: the whole
    text at once (and its bytes) was the peak of a 10,000-tool plan's memory.
    """
    resources = sorted(((d.kind, d.id, d.body) for d in desired), key=lambda d: (d[0], d[1]))
    digest = hmac.new(key, f'{{"app": {json.dumps(app)}, "env": {json.dumps(env)}, "resources": ['.encode(), "sha256")
    for n, resource in enumerate(resources):
        digest.update(((", " if n else "") + json.dumps(resource, sort_keys=True)).encode())
    digest.update(b"]}")
    return "hmac-sha256:" + digest.hexdigest()


def _keyed(key: bytes, data: Any) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return "hmac-sha256:" + hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def bind(plan: Plan, key: bytes) -> Plan:
    """The plan with each change's unmasked body hashed and the whole file sealed, under key.

    The seal covers every field the file holds (environment, app, endpoint, digest, prune,
    targets, managed, every change with its body hash, the sensitive-field list and hashes),
    so an edit of any of them is refused before apply opens a connection (see seal_matches).
    """
    changes = tuple(replace(c, body_hash=_keyed(key, c.body) if c.body is not None else "") for c in plan.changes)
    return replace(plan, changes=changes, seal=seal_of(replace(plan, changes=changes), key))


def seal_of(plan: Plan, key: bytes) -> str:
    """The keyed hash of everything the saved file holds but its seal, as the file holds it: with
    every known sensitive value scrubbed, as plan --out writes it (a remote body may hold one)."""
    text = json.dumps(replace(plan, seal="").public(), sort_keys=True, separators=(",", ":"))
    return "hmac-sha256:" + hmac.new(key, scrub(text).encode(), hashlib.sha256).hexdigest()


def seal_matches(plan: Plan, key: bytes) -> bool:
    """A saved plan's seal is right, and its masked fields hold only the mask (the seal sees them masked)."""
    public = plan.public()
    as_read = [json.loads(json.dumps(c.body)) for c in plan.changes]
    if [c["body"] for c in public["changes"]] != as_read:
        return False
    return hmac.compare_digest(plan.seal.encode(), seal_of(plan, key).encode())


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

    def wanted(kind: str, rid: str) -> bool:
        return not targets or rid in targets or f"{kind}/{rid}" in targets

    name_of = {d.key: KINDS[d.kind].resource_name(parent, d.id) for d in desired}
    remote_by = {r.key: r for r in remote}
    # The app must exist before anything in it: created even when the repo has no app.yaml.
    implied = [Resource(APP, APP, app_body)] if app_body is not None and (APP, APP) not in name_of else []
    writes = implied + list(desired)
    name_of.update({d.key: KINDS[d.kind].resource_name(parent, d.id) for d in implied})
    creating_app = any(d.kind == APP and d.key not in remote_by for d in writes)
    placed = order(
        [Node(name_of[d.key], d.key not in remote_by, _field_refs(d.body, parent), KINDS[d.kind].deferrable) for d in writes],
        parent if creating_app else "",
    )
    changes: list[Change] = []
    unknown: dict[str, list[str]] = {}
    for kind, rid, body in ((d.kind, d.id, d.body) for d in writes):
        name = name_of[(kind, rid)]
        r = remote_by.get((kind, rid))
        d = diff_resource(kind, rid, body, r.body if r else None)
        if d.unknown:
            unknown[name] = d.unknown
        if not wanted(kind, rid) and not (kind == APP and r is None):
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
        paths = hidden.get((kind, rid), [])
        if paths:
            common["after"] = mask(d.after, [cut(p) for p in paths])
        log.debug(
            "plan: %s %s: %s",
            kind,
            rid,
            "create (not in the app)" if r is None else f"update {', '.join(d.update_mask)}" if d.update_mask else "unchanged",
        )
        if r is None:
            note = "the app does not exist yet: created first" if kind == APP else ""
            if sent := input_only_fields(KINDS[kind].model_name, body):
                said = f"sends {', '.join(sent)} (input only: sent on create, never read back, so never compared)"
                note = f"{note}; {said}" if note else said
            changes.append(Change(action="create", note=note, deferred=where.deferred, patch_after=where.patch_after, **common))
        elif d.update_mask or (resend_input_only and input_only_fields(KINDS[kind].model_name, body)):
            if d.unknown:
                common.update(_carried(kind, rid, r.body, body, d.update_mask))
            resent = input_only_fields(KINDS[kind].model_name, body) if resend_input_only else []
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
        if (r.kind, r.id) in name_of or not wanted(r.kind, r.id) or not KINDS[r.kind].deletable:
            continue  # the app is never deleted, nor listed as unmanaged
        name = KINDS[r.kind].resource_name(parent, r.id)
        if not prune or not (prune_unmanaged or owned is None or f"{r.kind}/{r.id}" in owned):
            log.debug("plan: %s %s: in the app, not in the repo: kept (prune is off, or cesync does not own it)", r.kind, r.id)
            unmanaged.append(name)
            continue
        log.debug("plan: %s %s: in the app, not in the repo: delete (prune)", r.kind, r.id)
        d = diff_resource(r.kind, r.id, None, r.body)
        dependents = sorted(
            n
            for n, refs in ((KINDS[x.kind].resource_name(parent, x.id), _references(x.body, parent)) for x in remote)
            if name in refs and n != name
        )
        deletes.append(
            Change(kind=r.kind, id=r.id, action="delete", name=name, etag=r.etag, before=d.before, depends_on=tuple(dependents))
        )
    _mark_renames(changes, deletes)
    changes.sort(key=lambda c: (KINDS[c.kind].written_last, c.level, KINDS[c.kind].rank, c.id))
    deletes.sort(key=lambda c: (-len(c.depends_on), -KINDS[c.kind].rank, c.id))
    deletes = _delete_order(deletes)
    app_remote = remote_by.get((APP, APP))
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


# Kinds an AppSnapshot holds (AppVersion.snapshot: app, agents, tools, examples, guardrails,
# toolsets): deployments are not in it, so no base tells their drift.
SNAPSHOT_KINDS = frozenset({"app", "agent", "tool", "toolset", "guardrail", "example"})


def _drift(
    c: Change, remote_by: Mapping[tuple[str, str], Resource], base: Mapping[tuple[str, str], dict[str, Any]] | None
) -> Change:
    """The change labelled drift when the app differs from what cesync last applied (three-way)."""
    if base is None or c.kind not in SNAPSHOT_KINDS:
        return c
    was = base.get((c.kind, c.id))
    r = remote_by.get((c.kind, c.id))
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


def _carried(kind: str, rid: str, remote: dict[str, Any], body: dict[str, Any], mask: list[str]) -> dict[str, Any]:
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


LOCK_FIELDS = fb.fields(KINDS[APP].model_name, fb.APP_LOCK)  # ("locked",)


def lock_change(changes: Sequence[Change]) -> bool | None:
    """What the plan does to the app lock: True locks it, False unlocks it, None leaves it."""
    for c in changes:
        if c.kind == APP and c.action in ("create", "update"):
            body = c.body or {}
            if any(f in c.update_mask for f in LOCK_FIELDS) or (c.action == "create" and any(body.get(f) for f in LOCK_FIELDS)):
                return any(bool(body.get(f)) for f in LOCK_FIELDS)
    return None


def is_locked(app: Mapping[str, Any] | None) -> bool:
    return app is not None and any(app.get(f) is True for f in LOCK_FIELDS)


def lock_notice(remote_app: Mapping[str, Any] | None, changes: Sequence[Change]) -> str:
    """How App.locked ("modifications to the app resources will be rejected") meets the plan."""
    setting = f"App.{LOCK_FIELDS[0]}" if LOCK_FIELDS else "App.locked"
    change = lock_change(changes)
    if is_locked(remote_app):
        if change is False:
            return f"the app is locked ({setting} is true); the repo unlocks it (locked: false): apply unlocks it first"
        if changes:
            return (
                f"the app is locked ({setting} is true): apply will stop before its first write. Unlock it in the "
                "console, or set 'locked: false' in app.yaml to have apply unlock it first"
            )
        return f"the app is locked ({setting} is true)"
    if change is True:
        return "the repo locks the app (locked: true): apply locks it last, after every other write"
    return ""


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
    return Change(**{**asdict(c), "fields": c.fields, **kw})


def check_safety(plan: Plan, max_fraction: float, min_resources: int, allow: bool, max_update_fraction: float = 0.8) -> None:
    """octoDNS-style: refuse plans that delete or rewrite too much of what is managed."""
    reason = safety_refusal(plan, max_fraction, min_resources, max_update_fraction)
    if reason and not allow:
        raise UnsafePlanError(reason)


def safety_refusal(plan: Plan, max_fraction: float, min_resources: int, max_update_fraction: float = 0.8) -> str:
    """Why apply would refuse this plan without --allow-mass-change ("" when it would not).

    What can lose data counts against max_fraction: deletes, renames (a create and a delete)
    included. Updates in place keep every resource and are the routine work of a change, so
    only a larger share of them (max_update_fraction) is refused. Creates never count.
    """
    counts = plan.counts()
    deletes, updates = counts["delete"], counts["update"]
    base = max(plan.managed, deletes + updates)
    if deletes and plan.managed == 0:
        return (
            f"the repo defines no resources but the plan deletes {deletes}; refusing "
            "(pass --allow-mass-change if that is really meant)"
        )
    if base < min_resources or base == 0:
        return ""
    review = "refusing. Review it, then pass --allow-mass-change"
    if deletes / base > max_fraction:
        return (
            f"the plan deletes {deletes} of {base} managed resources ({deletes / base:.0%} > {max_fraction:.0%} "
            f"safety.maxChangeFraction); {review} (or raise safety.maxChangeFraction)"
        )
    if updates / base > max_update_fraction:
        return (
            f"the plan updates {updates} of {base} managed resources ({updates / base:.0%} > {max_update_fraction:.0%} "
            f"safety.maxUpdateFraction); {review} (or raise safety.maxUpdateFraction)"
        )
    return ""


# --- a saved plan may only narrow ---------------------------------------------------------------

_EXECUTED = ("action", "name", "etag", "body", "body_hash", "update_mask", "depends_on", "deferred", "patch_after")


def narrow(saved: Plan, fresh: Plan, *, prune: bool | None = None, gone: frozenset[str] = frozenset()) -> Plan:
    """What a saved plan may do: its changes, each exactly as the repo and the app give it now.

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
    public = {c["kind"] + "/" + c["id"]: c for c in _as_saved(fresh)["changes"]}
    seen: set[str] = set()
    kept_gone: list[Change] = []
    for i, (c, raw) in enumerate(zip(saved.changes, _as_saved(saved)["changes"], strict=True)):
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


def _as_saved(plan: Plan) -> dict[str, Any]:
    """The plan's data as plan --out writes it: masked, and every known sensitive value scrubbed
    (a remote body, a delete's before, may hold one)."""
    data: dict[str, Any] = json.loads(scrub(json.dumps(plan.public())))
    return data


def _inside_app(c: Change, app: str, what: str) -> None:
    expected = KINDS[c.kind].resource_name(app, c.id)
    if c.name != expected:
        raise PlanFileError(f"{what}: it names {c.name!r}, which is not {c.kind} {c.id} of the plan's app {app}: refusing")
    outside = [d for d in (*c.depends_on, *c.patch_after) if d != app and not d.startswith(app + "/")]
    if outside:
        raise PlanFileError(f"{what}: it depends on {outside[0]!r}, outside the plan's app {app}: refusing")

"""The plan: plain, immutable, ordered data with a versioned JSON form (pure).

    build_plan(env, desired, remote) -> Plan  ->  render (text, markdown, json)
                                              ->  apply (executes plan.changes in order)

Order is fixed here: creates and updates by dependency level (a resource after
everything it references), toolsets before tools at the same level; deletes last,
in reverse. References are found in the desired bodies as full resource names of
the same app (``{app}/tools/x``, ``{app}/toolsets/y``).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from . import __version__
from .diff import FieldChange, Remote, diff_resource
from .errors import ConfigError, PlanFileError, Problem, UnsafePlanError

__all__ = ["FORMAT_VERSION", "Change", "Plan", "build_plan", "check_safety", "desired_digest", "safety_refusal"]

FORMAT_VERSION = 1
ACTIONS = ("create", "update", "delete")
COLLECTION = {"tool": "tools", "toolset": "toolsets"}


@dataclass(frozen=True)
class Change:
    kind: str  # tool | toolset
    id: str
    action: str  # create | update | delete
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

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.id}"


@dataclass(frozen=True)
class Plan:
    environment: str
    app: str
    digest: str
    changes: tuple[Change, ...] = ()
    unmanaged: tuple[str, ...] = ()  # remote resources kept because prune is off
    unknown_fields: dict[str, list[str]] = field(default_factory=dict)  # resource -> fields we do not model
    managed: int = 0  # resources the repo defines
    prune: bool = False
    targets: tuple[str, ...] = ()  # a --target plan: only these kind/id were compared (a partial plan)
    refused: str = ""  # why apply would refuse this plan (the mass-change guard), shown by every renderer
    created_at: str = ""
    cesync_version: str = __version__
    format_version: int = FORMAT_VERSION

    @property
    def has_changes(self) -> bool:
        return bool(self.changes)

    def counts(self) -> dict[str, int]:
        return {a: sum(1 for c in self.changes if c.action == a) for a in ACTIONS}

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str = "plan") -> Plan:
        try:
            raw = json.loads(text)
            if not isinstance(raw, dict):
                raise ValueError("not a JSON object")
            if raw.get("format_version") != FORMAT_VERSION:
                raise PlanFileError(
                    f"{source}: plan format {raw.get('format_version')!r} is not {FORMAT_VERSION}; "
                    "make a new plan with this cesync"
                )
            changes = tuple(
                Change(
                    **{
                        **c,
                        "fields": tuple(FieldChange(**f) for f in c.get("fields", ())),
                        "update_mask": tuple(c.get("update_mask", ())),
                        "depends_on": tuple(c.get("depends_on", ())),
                    }
                )
                for c in raw.pop("changes", [])
            )
            for c in changes:
                if c.action not in ACTIONS or c.kind not in COLLECTION:
                    raise ValueError(f"bad action {c.action!r} for {c.kind!r}")
            return cls(
                **{
                    **raw,
                    "changes": changes,
                    "unmanaged": tuple(raw.get("unmanaged", ())),
                    "targets": tuple(raw.get("targets", ())),
                }
            )
        except PlanFileError:
            raise
        except (ValueError, TypeError, KeyError) as exc:
            raise PlanFileError(f"{source} is not a cesync plan: {exc}") from None


def desired_digest(env: str, app: str, desired: list[tuple[str, str, dict[str, Any]]]) -> str:
    """sha256 of the rendered desired configuration (what apply would send)."""
    payload = json.dumps({"env": env, "app": app, "resources": sorted(desired, key=lambda d: (d[0], d[1]))}, sort_keys=True)
    return "sha256:" + hashlib.sha256(payload.encode()).hexdigest()


def _references(body: Any, parent: str) -> set[str]:
    """Full names of this app's tools and toolsets that appear anywhere in a body."""
    found: set[str] = set()
    pattern = re.compile(re.escape(parent) + r"/(?:tools|toolsets)/[A-Za-z0-9_-]+")
    stack = [body]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and parent in item:
            found.update(pattern.findall(item))
    return found


def _levels(names: list[str], deps: dict[str, set[str]]) -> dict[str, int]:
    """Dependency depth of each resource; a cycle is a configuration error."""
    level: dict[str, int] = {}
    visiting: set[str] = set()

    def visit(n: str, trail: list[str]) -> int:
        if n in level:
            return level[n]
        if n in visiting:
            cycle = " -> ".join([*trail[trail.index(n) :], n])
            raise ConfigError([Problem("(references)", 1, 1, f"reference cycle: {cycle}")])
        visiting.add(n)
        depth = 1 + max((visit(d, [*trail, n]) for d in deps.get(n, ()) if d in deps), default=-1)
        visiting.discard(n)
        level[n] = depth
        return depth

    for n in names:
        visit(n, [])
    return level


def build_plan(
    env: str,
    parent: str,
    desired: list[tuple[str, str, dict[str, Any]]],
    remote: list[Remote],
    *,
    prune: bool = False,
    targets: set[str] | None = None,
) -> Plan:
    """desired: (kind, id, wire body). targets: ids (or kind/id) to limit the plan to."""

    def wanted(kind: str, rid: str) -> bool:
        return not targets or rid in targets or f"{kind}/{rid}" in targets

    name_of = {(k, i): f"{parent}/{COLLECTION[k]}/{i}" for k, i, _ in desired}
    remote_by = {(r.kind, r.id): r for r in remote}
    deps = {name_of[(k, i)]: _references(b, parent) - {name_of[(k, i)]} for k, i, b in desired}
    levels = _levels(list(deps), deps)
    changes: list[Change] = []
    unknown: dict[str, list[str]] = {}
    for kind, rid, body in desired:
        name = name_of[(kind, rid)]
        r = remote_by.get((kind, rid))
        d = diff_resource(kind, rid, body, r.body if r else None)
        if d.unknown:
            unknown[name] = d.unknown
        if not wanted(kind, rid):
            continue
        common: dict[str, Any] = {
            "kind": kind,
            "id": rid,
            "name": name,
            "after": d.after,
            "body": body,
            "depends_on": tuple(sorted(deps[name])),
            "level": levels[name],
        }
        if r is None:
            changes.append(Change(action="create", **common))
        elif d.update_mask:
            changes.append(
                Change(
                    action="update",
                    etag=r.etag,
                    before=d.before,
                    fields=tuple(d.fields),
                    update_mask=tuple(d.update_mask),
                    **common,
                )
            )
    unmanaged: list[str] = []
    deletes: list[Change] = []
    for r in remote:
        if (r.kind, r.id) in name_of or not wanted(r.kind, r.id):
            continue
        name = f"{parent}/{COLLECTION[r.kind]}/{r.id}"
        if not prune:
            unmanaged.append(name)
            continue
        d = diff_resource(r.kind, r.id, None, r.body)
        dependents = sorted(
            n
            for n, refs in ((f"{parent}/{COLLECTION[x.kind]}/{x.id}", _references(x.body, parent)) for x in remote)
            if name in refs and n != name
        )
        deletes.append(
            Change(kind=r.kind, id=r.id, action="delete", name=name, etag=r.etag, before=d.before, depends_on=tuple(dependents))
        )
    _mark_renames(changes, deletes)
    kind_rank = {"toolset": 0, "tool": 1}
    changes.sort(key=lambda c: (c.level, kind_rank[c.kind], c.id))
    deletes.sort(key=lambda c: (-len(c.depends_on), -kind_rank[c.kind], c.id))
    deletes = _delete_order(deletes)
    return Plan(
        environment=env,
        app=parent,
        digest=desired_digest(env, parent, desired),
        changes=tuple(changes + deletes),
        unmanaged=tuple(sorted(unmanaged)),
        unknown_fields=unknown,
        managed=len(desired),
        prune=prune,
        created_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    )


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


def check_safety(plan: Plan, max_fraction: float, min_resources: int, allow: bool) -> None:
    """octoDNS-style: refuse plans that delete or update too much of what is managed."""
    reason = safety_refusal(plan, max_fraction, min_resources)
    if reason and not allow:
        raise UnsafePlanError(reason)


def safety_refusal(plan: Plan, max_fraction: float, min_resources: int) -> str:
    """Why apply would refuse this plan without --allow-mass-change ("" when it would not)."""
    counts = plan.counts()
    touched = counts["update"] + counts["delete"]
    base = max(plan.managed, counts["delete"] + counts["update"])
    if counts["delete"] and plan.managed == 0:
        return (
            f"the repo defines no resources but the plan deletes {counts['delete']}; refusing "
            "(pass --allow-mass-change if that is really meant)"
        )
    if base < min_resources or base == 0:
        return ""
    if touched / base > max_fraction:
        return (
            f"the plan updates or deletes {touched} of {base} managed resources ({touched / base:.0%} > {max_fraction:.0%}); "
            "refusing. Review it, then pass --allow-mass-change (or raise safety.maxChangeFraction)"
        )
    return ""

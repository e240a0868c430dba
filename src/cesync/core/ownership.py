"""Ownership passes of the plan (pure): each a function from plan (and what it needs) to plan.

- ``other_owners``: what another repo's records own (cesync.yaml ``owner``) is never deleted here,
  whatever the flags, and a repo that defines it is refused: one resource, one owner.
- ``drift_by_sums``: drift judged against the sealed hashes of the last record (core/record.py),
  not only against its snapshot, which a copied record would make the app's current state.
- ``record_trust``: the records ignored, and what a console user can steer when none is sealed.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace

from ..api.kinds import kind_of_name, names_pattern
from ..api.resource import Resource
from ..errors import CesyncError
from .normalize import canonical
from .plan import Change, Plan
from .record import resource_sum

__all__ = ["MAX_IGNORED_SHOWN", "UNSEALED", "drift_by_sums", "foreign_references", "made_before", "other_owners", "record_trust"]

UNSEALED = (
    "no record key (CESYNC_RECORD_KEY or CESYNC_PLAN_KEY) is set, so applied records are taken as written: "
    "anyone who can create an app version (a console user) can write one, and so choose what --prune deletes, "
    "hide drift from this plan, and choose the commit cesync promote lays out (within the reviewed branch)"
)
DIFFERS = "(differs from what cesync applied)"


_STAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)")


def _stamp(text: object) -> tuple[datetime.datetime, int] | None:
    """An RFC 3339 time as CES prints one (any fraction up to nanoseconds): (seconds, nanos); None if not one."""
    found = _STAMP.fullmatch(text) if isinstance(text, str) else None
    if found is None:
        return None
    zone = "+00:00" if found.group(3) == "Z" else found.group(3)
    try:
        whole = datetime.datetime.fromisoformat(found.group(1) + zone)
    except ValueError:
        return None
    return whole.astimezone(datetime.timezone.utc), int((found.group(2) or "0").ljust(9, "0"))


def made_before(owned: Iterable[str], remote: Iterable[Resource], record_time: str) -> frozenset[str]:
    """owned less what the app made after the record's version was made (record_time, its createTime).

    Every resource an apply creates or adopts exists before the version holding its record is
    made, so one the app made later is not the one that record names: its id was taken again by
    someone else (a console user, after cesync deleted the first, then deleted the newer records
    that said so). Both times are CES's own clock. A time that cannot be read leaves the key owned."""
    mine = frozenset(owned)
    since = _stamp(record_time)
    if since is None:
        return mine
    # Two UTC times written alike ("...T12:00:00Z", any fraction) are in the order of their
    # first 19 characters; a time that is no time is never later. So a time ending in Z whose
    # seconds come before the record's is not later, whatever it is: read no further.
    before = record_time[:19] if record_time.endswith("Z") else ""
    later = set()
    for r in remote:
        key = f"{r.kind.name}/{r.id}"
        if key not in mine:
            continue
        made_at = r.body.get("createTime")
        if before and isinstance(made_at, str) and made_at.endswith("Z") and made_at[:19] < before:
            continue
        made = _stamp(made_at)
        if made is not None and made > since:
            later.add(key)
    return mine - later


def other_owners(plan: Plan, others: Mapping[str, str], owner: str, defined: Iterable[str] = ()) -> Plan:
    """plan with what other owners own kept out of it. others: "kind/id" -> owner namespace ("" for a
    repo that names none) of another repo's newest record; owner: this repo's namespace; defined:
    "kind/id" the repo defines (one another owner owns is refused, changed or not)."""
    if not others:
        return plan
    theirs = sorted({*(c.key for c in plan.changes if c.action != "delete"), *defined} & set(others))
    if theirs:
        named = ", ".join(f"{k.replace('/', ' ', 1)} ({_who(others[k])})" for k in theirs)
        raise CesyncError(
            f"the repo defines what another repo owns in {plan.app}: {named}; this repo ({_who(owner)}) may not "
            "create, change or adopt it: remove its file here, or move it between the repos by removing it from "
            "the other repo's records first (apply that repo without it)"
        )
    kept = [c for c in plan.changes if c.action == "delete" and c.key in others]
    changes = tuple(c for c in plan.changes if c not in kept)
    unmanaged = tuple(sorted({*plan.unmanaged, *(c.name for c in kept)}))
    owners = {n: others[_key(n)] for n in unmanaged if _key(n) in others}
    return replace(plan, changes=changes, unmanaged=unmanaged, owners=owners)


def foreign_references(
    desired: Iterable[Resource],
    remote: Iterable[Resource],
    parent: str,
    others: Mapping[str, str],
    declared: Mapping[str, tuple[str, str]] | None = None,
) -> list[str]:
    """Problems with the repo's references to another owner's resources: each must be in the app,
    and a {ref: ..., owner: NAME} (declared: "kind/id" -> (file, NAME)) must name the owner whose
    newest record owns it. [] when every one holds (a reference across owners is allowed)."""
    if not declared and not others:
        return []  # nothing declared, and no other owner whose resource could be missing
    mine = {f"{d.kind.name}/{d.id}" for d in desired}
    there = {f"{r.kind.name}/{r.id}" for r in remote}
    pattern = names_pattern(parent)
    problems = []
    for key, (where, said) in sorted((declared or {}).items()):
        if key not in mine and others.get(key) != said:
            whose = f"{_who(others[key])}'s" if key in others else "no other owner's"
            problems.append(f"{where}: {{ref: {_ref(key)}, owner: {said}}}: the app's records make it {whose}")
    for d in desired if others else ():  # only another owner's resource can be missing here
        for match in sorted({m.group(0) for m in pattern.finditer(json.dumps(d.body))}):
            key = _key(match)
            if key not in mine and key in others and key not in there:
                problems.append(
                    f"{d.kind} {d.id} names {key} of {_who(others[key])}, which the app does not hold: apply that repo first"
                )
    return problems


def _ref(key: str) -> str:
    """ "tool/x" as a {ref:} writes it: tools/x."""
    from ..api.kinds import KINDS

    kind, _, rid = key.partition("/")
    return f"{KINDS[kind].collection}/{rid}"


def _who(namespace: str) -> str:
    return f"owner '{namespace}'" if namespace else "a repo that names no owner"


def _key(name: str) -> str:
    """ "kind/id" of a full resource name."""
    return f"{kind_of_name(name).name}/{name.rsplit('/', 1)[-1]}"


def drift_by_sums(plan: Plan, remote: Iterable[Resource], sums: Mapping[str, str], key: bytes) -> Plan:
    """Each change of an owned resource labelled drift exactly when the app's copy differs from the
    sealed hash of what the last apply left (sums: "kind/id" -> core.record.resource_sum under key).

    The snapshot-based label stays where it agrees (it can name the fields); where the snapshot is
    not what cesync applied (a copied record), the hash decides."""
    if not key or not sums:
        return plan
    now = {f"{r.kind.name}/{r.id}": r for r in remote}

    def judged(c: Change) -> Change:
        if c.key not in sums or not c.kind.in_snapshot or c.kind.singleton:
            return c
        r = now.get(c.key)
        if r is None:
            return c if c.drift else replace(c, drift={"fields": ["(deleted outside cesync)"], "by": None, "at": None})
        if resource_sum(key, canonical(r.kind, r.id, r.body).body) == sums[c.key]:
            return replace(c, drift=None) if c.drift else c
        return c if c.drift else replace(c, drift={"fields": [DIFFERS], "by": None, "at": None})

    return replace(plan, changes=tuple(judged(c) for c in plan.changes))


MAX_IGNORED_SHOWN = 10  # a console user can make thousands of versions that look like records


def record_trust(plan: Plan, ignored: Iterable[str], key_from: str) -> Plan:
    """plan with notes on its records: each ignored (why; the newest MAX_IGNORED_SHOWN, then how
    many more), and, with no key, what that lets anyone steer."""
    every = list(ignored)
    shown = every[:MAX_IGNORED_SHOWN]
    if len(every) > len(shown):
        shown.append(f"and {len(every) - len(shown)} more records ignored")
    notes = tuple(shown) + (() if key_from else (UNSEALED,))
    return replace(plan, record_notes=notes) if notes else plan

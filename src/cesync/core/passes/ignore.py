"""The ignore pass: fields left to the console (``ignoreChanges``, cesync.core.ignore) are never
changed (pure).

After compare, an update of a resource with ignored paths is compared again with the app's
value at each of them (core.ignore.leave_to_console): the fields, the update mask and the
body sent lose what is left to the console, and an update with nothing else goes. A create
keeps the repo's values. What differed there is recorded in ``plan.ignored`` for every
renderer. The digest stays the repo's (``start``), so a saved plan applies as any other."""

from __future__ import annotations

from dataclasses import replace

from ..diff import FieldChange, diff_resource
from ..ignore import leave_to_console
from ..plan import RESENT, Change, Plan
from . import PlanInput

__all__ = ["ignore"]


def ignore(plan: Plan, given: PlanInput) -> Plan:
    if not given.ignore:
        return plan
    updates = {(c.kind.name, c.id): c for c in plan.changes if c.action == "update" and (c.kind.name, c.id) in given.ignore}
    if not updates:
        return plan
    remote_by = given.remote_by
    desired = [d for d in given.desired if d.key in updates]
    left_desired, left = leave_to_console(desired, [remote_by[k] for k in updates if k in remote_by], given.ignore, given.parent)
    taken = {d.key: d for d in left_desired}
    changes: list[Change] = []
    for c in plan.changes:
        key = (c.kind.name, c.id)
        if key not in updates or c.name not in left:
            changes.append(c)
            continue
        body = taken[key].body
        d = diff_resource(c.kind, c.id, body, remote_by[key].body)
        resent = tuple(f for f in c.fields if f.after == RESENT)
        if not d.update_mask and not resent:
            continue  # only what the console owns differed
        fields = tuple(d.fields) + tuple(FieldChange(f.path, None, RESENT) for f in resent)
        mask = tuple(sorted({*d.update_mask, *(f.path for f in resent)}))
        changes.append(replace(c, body=body, after=d.after, fields=fields, update_mask=mask))
    return replace(plan, changes=tuple(changes), ignored=left)

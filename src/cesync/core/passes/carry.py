"""The carry pass: an update keeps the app's fields cesync does not know (pure).

A field of a newer API than cesync's is never compared, but an update that rewrites the field
holding it must send it along (``cesync.core.carry``). A change that would drop one is refused,
naming each, before anything is planned."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...errors import CesyncError
from ..carry import carry_unknown
from ..plan import RESENT, Change, Plan
from . import PlanInput

__all__ = ["carry"]


def carry(plan: Plan, given: PlanInput) -> Plan:
    if not plan.unknown_fields:
        return plan
    remote_by = given.remote_by
    return replace(
        plan, changes=tuple(_carried(c, remote_by[(c.kind.name, c.id)].body) if _carries(c, plan) else c for c in plan.changes)
    )


def _carries(c: Change, plan: Plan) -> bool:
    return c.action == "update" and c.name in plan.unknown_fields


def _carried(c: Change, remote: dict[str, Any]) -> Change:
    resent = {f.path for f in c.fields if f.after == RESENT}
    mask = [m for m in c.update_mask if m not in resent]
    carried = carry_unknown(c.kind, remote, c.body or {}, mask)
    if carried.lost:
        raise CesyncError(
            f"{c.kind} {c.id}: the update would drop {', '.join(carried.lost)}, which the app has and this cesync "
            "does not know (a newer API field), because the repo adds and removes items of that list at once "
            "and cesync cannot tell which item they belong to; nothing was planned. Remove the old items in one "
            "apply and add the new ones in the next, or use a cesync that knows the field"
        )
    if not carried.kept:
        return c
    said = "keeps the app's fields cesync does not know: " + ", ".join(carried.kept)
    return replace(c, body=carried.body, note=f"{said}; {c.note}" if c.note else said)

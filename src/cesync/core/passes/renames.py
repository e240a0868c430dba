"""The renames pass: a create with the same content as a delete of the same kind is a rename,
noted on both (shown as create + delete: the new one is created before the old one goes) (pure)."""

from __future__ import annotations

from dataclasses import replace

from ..plan import Plan
from . import PlanInput

__all__ = ["renames"]


def renames(plan: Plan, given: PlanInput) -> Plan:
    changes = list(plan.changes)
    deletes = [i for i, c in enumerate(changes) if c.action == "delete"]
    for i, c in enumerate(changes):
        if c.action != "create":
            continue
        for j in deletes:
            d = changes[j]
            if d.kind == c.kind and d.before == c.after and not d.note:
                changes[i] = replace(c, note=f"rename of {d.id} (created before the old one is deleted)")
                changes[j] = replace(d, note=f"renamed to {c.id}")
                break
    return replace(plan, changes=tuple(changes))

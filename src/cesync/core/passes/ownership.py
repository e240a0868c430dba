"""The ownership pass: prune deletes only what cesync owns (pure).

A resource of the app that the repo lacks is deleted only under --prune, and only when the
applied record says cesync owns it (``PlanInput.owned``), or under --prune-unmanaged; every
other one is kept and listed as unmanaged. With no record at all (``owned`` None), every
resource counts as owned. The plan carries the owned list, for a saved plan to show."""

from __future__ import annotations

import logging
from dataclasses import replace

from ..plan import Change, Plan
from . import PlanInput

__all__ = ["ownership"]

log = logging.getLogger(__name__)


def ownership(plan: Plan, given: PlanInput) -> Plan:
    kept: list[Change] = []
    unmanaged: list[str] = []
    for c in plan.changes:
        if c.action != "delete":
            kept.append(c)
        elif given.prune and (given.prune_unmanaged or given.owned is None or c.key in given.owned):
            log.debug("plan: %s %s: in the app, not in the repo: delete (prune)", c.kind, c.id)
            kept.append(c)
        else:
            log.debug("plan: %s %s: in the app, not in the repo: kept (prune is off, or cesync does not own it)", c.kind, c.id)
            unmanaged.append(c.name)
    return replace(
        plan,
        changes=tuple(kept),
        unmanaged=tuple(sorted(unmanaged)),
        prune=given.prune,
        prune_unmanaged=given.prune_unmanaged,
        owned=tuple(sorted(given.owned)) if given.owned is not None else (),
    )

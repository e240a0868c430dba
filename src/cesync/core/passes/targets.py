"""The targets pass: a --target plan keeps only the changes of what it names (pure).

The app itself stays when it must be created (nothing else can exist without it). A kept change
that names something new which the targets leave out would fail at the API, so it is refused
here, with the --target to add."""

from __future__ import annotations

import logging
from dataclasses import replace

from ...api.kinds import KINDS
from ...errors import CesyncError
from ..plan import Change, Plan
from . import PlanInput

__all__ = ["targets"]

log = logging.getLogger(__name__)


def targets(plan: Plan, given: PlanInput) -> Plan:
    if not given.targets:
        return plan
    existing = {r.key for r in given.remote}
    kept: list[Change] = []
    for c in plan.changes:
        if given.wanted(c.kind.name, c.id) or (c.kind.singleton and (c.kind.name, c.id) not in existing):
            kept.append(c)
        else:
            log.debug("plan: %s %s: not a --target, left out", c.kind, c.id)
    new = {c.name: (c.kind.name, c.id) for c in plan.changes if c.action == "create"}
    _untargeted_dependencies([c for c in kept if c.action != "delete"], new)
    return replace(plan, changes=tuple(kept), targets=tuple(sorted(given.targets)))


def _untargeted_dependencies(changes: list[Change], new: dict[str, tuple[str, str]]) -> None:
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

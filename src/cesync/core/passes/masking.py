"""The masking pass: the one place a plan's sensitive values are masked (pure).

What the plan shows of a create or an update (``after``, ``before``, ``fields``) has every
sensitive path (``PlanInput.sensitive``) masked; a changed sensitive field shows only that it
changed. The plan lists those paths per resource (``Plan.sensitive.fields``), so its JSON form
masks the bodies it must send as they are (``Plan.public``). ``Change.read`` keeps the app's
side unmasked, in memory only, for apply to compare the app with just before it writes."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ...api.jsonvalue import value_at
from ...api.resource import Resource
from ..diff import FieldChange
from ..plan import RESENT, Change, Plan
from ..sensitive import CHANGED, cut, mask, overlaps
from ..yamlfile import Path_
from . import PlanInput
from .compare import writes_of

__all__ = ["masked", "masking"]

log = logging.getLogger(__name__)


def masking(plan: Plan, given: PlanInput) -> Plan:
    if not given.sensitive:
        return plan
    changes = tuple(_masked(c, given.paths((c.kind.name, c.id))) if c.action != "delete" else c for c in plan.changes)
    names = {d.key: d.kind.resource_name(given.parent, d.id) for d in writes_of(given)}
    listed = {names[k]: [list(p) for p in v] for k, v in sorted(given.sensitive.items()) if v and k in names}
    return replace(plan, changes=changes, sensitive=replace(plan.sensitive, fields=listed))


def masked(resource: Resource, paths: Sequence[Path_] | None) -> Resource:
    """The resource with its sensitive paths masked; itself when it has none (mask copies)."""
    return replace(resource, body=mask(resource.body, paths)) if paths else resource


def _masked(c: Change, paths: list[Path_]) -> Change:
    if not paths:
        return c
    log.debug("plan: %s %s: %d sensitive path(s) masked", c.kind, c.id, len(paths))
    cuts = [cut(p) for p in paths]
    return replace(
        c,
        after=mask(c.after, cuts),
        before=mask(c.before, cuts) if c.before is not None else None,
        fields=tuple(_field(f, paths, cuts, c.before, c.after) for f in c.fields),
    )


def _field(f: FieldChange, paths: list[Path_], cuts: list[Path_], before: Any, after: Any) -> FieldChange:
    """A changed sensitive field shows only that it changed; a field around one shows it masked."""
    if f.after == RESENT:
        return f  # an input-only field sent again carries no value
    inside, contains = overlaps(f.path, paths)
    if inside:
        return FieldChange(f.path, None, CHANGED)
    if contains:
        parts = f.path.split(".")
        return FieldChange(f.path, value_at(mask(before, cuts), parts), value_at(mask(after, cuts), parts))
    return f

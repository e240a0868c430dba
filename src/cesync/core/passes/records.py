"""The passes of the app's records (``cesync.core.ownership`` holds their rules) (pure):

- ``other_owners``: what another repo's records own is never deleted here, and a repo that
  defines it is refused: one resource, one owner.
- ``sealed_drift``: drift judged against the sealed hashes of the last record too, which a
  copied record cannot launder.
- ``record_notes``: the records ignored, and what a console user can steer when none is sealed.

Each does nothing when no records were read (``PlanInput.records`` None)."""

from __future__ import annotations

from dataclasses import replace

from ...errors import CesyncError
from ..ownership import drift_by_sums, foreign_references, record_trust
from ..ownership import other_owners as keep_others
from ..plan import Change, Plan
from . import PlanInput

__all__ = ["other_owners", "record_notes", "sealed_drift"]


def other_owners(plan: Plan, given: PlanInput) -> Plan:
    if given.records is None:
        return plan
    records = given.records
    if problems := foreign_references(given.desired, given.remote, given.parent, records.others, records.declared):
        raise CesyncError("; ".join(problems))
    if not records.others:
        return plan  # no other owner's records: nothing to keep out
    defined = [f"{d.kind.name}/{d.id}" for d in given.desired]
    return keep_others(plan, records.others, records.owner, defined)


def sealed_drift(plan: Plan, given: PlanInput) -> Plan:
    if given.records is None:
        return plan
    judged = drift_by_sums(plan, given.remote, given.records.sums, given.records.sum_key)
    return replace(judged, changes=tuple(_with_author(c, given) for c in judged.changes))


def _with_author(c: Change, given: PlanInput) -> Change:
    """A drift the hashes found, with its author where the changelogs read before the chain name one."""
    if c.drift is None or c.drift.get("by") is not None or c.name not in given.authors:
        return c
    by, at = given.authors[c.name]
    return replace(c, drift={**c.drift, "by": by or None, "at": at or None})


def record_notes(plan: Plan, given: PlanInput) -> Plan:
    if given.records is None:
        return plan
    return record_trust(plan, given.records.ignored, given.records.key_from)

"""The renames pass: a create with the same content as a delete of the same kind is a rename,
noted on both (pure).

Where the kind's names are unique in the app (``ResourceKind.unique_name``: a toolset's, agent's,
guardrail's displayName), the new one cannot exist beside the old one, and ids are immutable, so
there is no update in place: the old one is deleted first (``Change.first``) and the new one's
create waits for that delete. Resources of the app that name the old one would make the delete
fail; when every one of them is in the repo (so this apply rewrites it to the new id) the delete
is forced, which drops those references until the rewrite. Otherwise the new one is created
after the old one goes, as any create after a delete."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from ..plan import Change, Plan
from . import PlanInput
from .compare import named_by

__all__ = ["renames", "unnamed"]


def renames(plan: Plan, given: PlanInput) -> Plan:
    changes = list(plan.changes)
    deletes = [i for i, c in enumerate(changes) if c.action == "delete"]
    naming: dict[str, set[str]] | None = None  # the app's bodies read once, at the first rename that asks
    for i, c in enumerate(changes):
        if c.action != "create":
            continue
        for j in deletes:
            d = changes[j]
            if d.kind == c.kind and d.before == c.after and not d.note:
                if c.kind.unique_name:
                    naming = named_by(given.remote, given.parent) if naming is None else naming
                    changes[i], changes[j] = _renamed(c, d, given, naming.get(d.name, set()))
                else:
                    changes[i], changes[j] = _noted(c, d)
                break
    return replace(plan, changes=tuple(changes))


def _noted(c: Change, d: Change) -> tuple[Change, Change]:
    return replace(c, note=f"rename of {d.id} (created before the old one is deleted)"), replace(d, note=f"renamed to {c.id}")


def _renamed(c: Change, d: Change, given: PlanInput, named: set[str]) -> tuple[Change, Change]:
    """The old one deleted first: the kind's names are unique in the app; named: the names of
    the app's resources that name it."""
    defined = {x.kind.resource_name(given.parent, x.id) for x in given.desired}
    naming = sorted(named - {d.name})
    outside = [n for n in naming if n not in defined]
    why = f"a {c.kind.singular}'s display name is unique in the app, so {d.id} goes first"
    note = f"renamed to {c.id}; deleted before {c.id} is created ({why}"
    if outside:
        note += f"; {', '.join(outside)}, not in the repo, still names it, so the delete may be refused)"
    else:
        note += ", forced: " + (f"{', '.join(naming)} is rewritten by this apply)" if naming else "nothing names it)")
    created = replace(
        c,
        note=f"rename of {d.id} ({why}: created once {d.id} is deleted)",
        depends_on=tuple(sorted({*c.depends_on, d.name})),
    )
    return created, replace(d, note=note, first=True, force=not outside, depends_on=())


def unnamed(data: Any, name: str) -> Any:
    """data without the list items that are, or hold, name (what a forced delete of name removes from
    the resources naming it), and without a list left empty by that (canonical form has none): apply
    compares a resource so with the plan's read of it to take the etag the force left."""
    if isinstance(data, dict):
        out = {k: unnamed(v, name) for k, v in data.items()}
        return {k: v for k, v in out.items() if v != [] or data[k] == []}
    if isinstance(data, list):
        return [unnamed(x, name) for x in data if x != name and not (isinstance(x, dict) and name in json.dumps(x))]
    return data

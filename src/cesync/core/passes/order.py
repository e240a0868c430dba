"""The order pass: the order apply runs the plan in (pure).

Creates and updates by dependency level (a resource after everything it references, placed by
the compare pass with ``cesync.core.order``), then by kind rank at the same level
(``cesync.api.kinds``: toolsets before tools); deletes last, each after every resource of the
app that names it in a field a request writes (``depends_on``); a rename's delete that goes
first (the renames pass) waits for nothing."""

from __future__ import annotations

import graphlib
import logging
from dataclasses import replace

from ..graph import rounds
from ..plan import Change, Plan
from . import PlanInput
from .compare import named_by

__all__ = ["order"]

log = logging.getLogger(__name__)


def order(plan: Plan, given: PlanInput) -> Plan:
    writes = sorted(
        (c for c in plan.changes if c.action != "delete"), key=lambda c: (c.kind.written_last, c.level, c.kind.rank, c.id)
    )
    deletes = [c for c in plan.changes if c.action == "delete"]
    if deletes:
        naming = named_by(given.remote, given.parent)
        deletes = [replace(c, depends_on=() if c.first else tuple(sorted(naming.get(c.name, set()) - {c.name}))) for c in deletes]
        deletes.sort(key=lambda c: (-len(c.depends_on), -c.kind.rank, c.id))
        deletes = _delete_order(deletes)
        log.debug("plan: deletes in this order: %s", ", ".join(c.key for c in deletes))
    return replace(plan, changes=(*writes, *deletes))


def _delete_order(deletes: list[Change]) -> list[Change]:
    """Reverse dependency order: a resource is deleted after everything that references it, in
    rounds (core/graph.py), each round in the order deletes come in. Deletes that name each
    other in a cycle (none is expected: output-only references are left out) go one at a time,
    the first of them first, so that apply tries them rather than refusing them all."""
    index = {c.name: i for i, c in enumerate(deletes)}
    graph = {c.name: [d for d in c.depends_on if d in index and d != c.name] for c in deletes}
    try:
        return [deletes[index[n]] for batch in rounds(graph, key=index.__getitem__) for n in batch]
    except graphlib.CycleError:
        log.debug("plan: deletes name each other in a cycle: taken one at a time where it holds")
    done: set[str] = set()
    ordered: list[Change] = []
    pending = list(deletes)
    while pending:
        ready = [c for c in pending if all(d in done or d not in index for d in c.depends_on)] or pending[:1]
        for c in ready:
            ordered.append(c)
            done.add(c.name)
            pending.remove(c)
    return ordered

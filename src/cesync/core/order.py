"""The order of an apply across kinds: what waits for what, and cycles broken by create-then-patch (pure).

A write waits only for the resources it references that the same apply creates: a
resource that already exists can be named at once. So only creates can form a
cycle (two new agents naming each other as child agent or in a transfer rule, a new
app whose root agent is new). Such a cycle is broken at one of its references whose
top-level field the kind lets go for a moment (``ResourceKind.deferrable``): the
resource is created without that field, and the field is patched in once everything
it names exists. A cycle with no such reference cannot be created in any order;
``validate`` reports it (see references.py), and :func:`order` refuses it too.

When the app itself is created, everything else waits for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import ConfigError, Problem
from .graph import CycleSearch, levels

__all__ = ["Node", "Placed", "order"]


@dataclass(frozen=True)
class Node:
    """One resource of the plan: the names it references, per top-level field."""

    name: str
    created: bool  # this apply creates it
    refs: Mapping[str, frozenset[str]] = field(default_factory=dict)  # field -> names of this app it holds
    deferrable: frozenset[str] = frozenset()  # fields that may be patched in after the create


@dataclass(frozen=True)
class Placed:
    """Where a resource goes: what its write waits for, its level, and what a create leaves for a patch."""

    depends_on: tuple[str, ...] = ()
    level: int = 0
    deferred: tuple[str, ...] = ()  # fields left out of the create, patched in afterwards
    patch_after: tuple[str, ...] = ()  # what that patch waits for (created by the same apply)


def order(nodes: list[Node], app: str = "") -> dict[str, Placed]:
    """Placement of every node; ``app``: the app's name when this apply creates the app."""
    created = {n.name for n in nodes if n.created}
    if app in created:  # everything waits for the app
        return _order(nodes, app, created)
    # A node neither created nor naming what is created has no edge, and none leads to it (only
    # creates are waited for): it is placed at Placed() and meets no search, so the search runs
    # over the others only (a plan of a few creates in a large app orders those few).
    moving = [n for n in nodes if n.created or any(t in created and t != n.name for ts in n.refs.values() for t in ts)]
    placed = _order(moving, app, created) if moving else {}
    return {n.name: placed.get(n.name, _IDLE) for n in nodes}


_IDLE = Placed()


def _order(nodes: list[Node], app: str, created: set[str]) -> dict[str, Placed]:
    by_name = {n.name: n for n in nodes}
    # edge (source -> target) with the fields of source that make it
    via: dict[str, dict[str, set[str]]] = {n.name: {} for n in nodes}
    for n in nodes:
        for fname, targets in n.refs.items():
            for t in targets:
                if t in created and t != n.name:
                    via[n.name].setdefault(t, set()).add(fname)
        if app and n.name != app and app in created:
            via[n.name].setdefault(app, set()).add("")  # implicit: nothing exists before its app
    deferred: dict[str, set[str]] = {n.name: set() for n in nodes}
    search = CycleSearch(via, key=str)
    while (loop := search.next()) is not None:
        # the reference that closes the loop is let go first, then the one before it
        edge = next(((s, t) for s, t in loop.edges() if via[s][t] <= by_name[s].deferrable), None)
        if edge is None:
            text = " -> ".join(loop.nodes())
            raise ConfigError([Problem("(references)", 1, 1, f"reference cycle: {text}; remove one reference")])
        source = edge[0]
        deferred[source] |= via[source][edge[1]]
        for t in [t for t, fields in via[source].items() if fields <= deferred[source]]:
            del via[source][t]
        search.cut(source)
    placed_at = levels({n: [t for t in targets if t in via] for n, targets in via.items()})
    out: dict[str, Placed] = {}
    for n in nodes:
        later = deferred[n.name]
        waits = sorted({t for f in later for t in n.refs.get(f, ()) if t in created and t != n.name})
        out[n.name] = Placed(
            depends_on=tuple(sorted(via[n.name])),
            level=placed_at[n.name],
            deferred=tuple(sorted(later)),
            patch_after=tuple(waits),
        )
    return out

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

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import pairwise

from ..errors import ConfigError, Problem

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
    by_name = {n.name: n for n in nodes}
    created = {n.name for n in nodes if n.created}
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
    while (loop := _find_cycle(via)) is not None:
        edge = next(
            ((s, t) for s, t in reversed(list(pairwise(loop))) if via[s][t] <= by_name[s].deferrable),
            None,
        )
        if edge is None:
            text = " -> ".join(loop)
            raise ConfigError([Problem("(references)", 1, 1, f"reference cycle: {text}; remove one reference")])
        source = edge[0]
        deferred[source] |= via[source][edge[1]]
        for t in [t for t, fields in via[source].items() if fields <= deferred[source]]:
            del via[source][t]
    levels = _levels(via)
    out: dict[str, Placed] = {}
    for n in nodes:
        later = deferred[n.name]
        waits = sorted({t for f in later for t in n.refs.get(f, ()) if t in created and t != n.name})
        out[n.name] = Placed(
            depends_on=tuple(sorted(via[n.name])),
            level=levels[n.name],
            deferred=tuple(sorted(later)),
            patch_after=tuple(waits),
        )
    return out


def _find_cycle(via: dict[str, dict[str, set[str]]]) -> list[str] | None:
    """One cycle as [a, b, ..., a], or None (iterative depth-first search)."""
    done: set[str] = set()
    for start in sorted(via):
        if start in done:
            continue
        trail = [start]
        pending: list[Iterator[str]] = [iter(sorted(via[start]))]
        while pending:
            target = next(pending[-1], None)
            if target is None:
                done.add(trail.pop())
                pending.pop()
                continue
            if target in trail:
                return [*trail[trail.index(target) :], target]
            if target not in done and target in via:
                trail.append(target)
                pending.append(iter(sorted(via[target])))
    return None


def _levels(via: dict[str, dict[str, set[str]]]) -> dict[str, int]:
    """Longest chain of dependencies below each node (the graph is acyclic here)."""
    level: dict[str, int] = {}
    for start in sorted(via):
        stack = [start]
        while stack:
            n = stack[-1]
            if n in level:
                stack.pop()
                continue
            missing = [t for t in via[n] if t in via and t not in level]
            if missing:
                stack.extend(missing)
                continue
            level[n] = 1 + max((level[t] for t in via[n] if t in via), default=-1)
            stack.pop()
    return level

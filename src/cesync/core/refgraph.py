"""The reference graph's walks, in one place (pure): its cycles, its levels, and the rounds a
set of nodes can be taken in. Ordering is the standard library's ``graphlib.TopologicalSorter``;
cycles are found by one depth-first search that resumes after each cycle is broken, so an app
of 10,000 resources costs one walk however many cycles it holds.

A graph is a mapping from each node to the nodes it waits for (its edges)."""

from __future__ import annotations

import graphlib
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

__all__ = ["CycleSearch", "has_cycle", "levels", "rounds"]

N = TypeVar("N", bound=Hashable)


def has_cycle(graph: Mapping[N, Iterable[N]]) -> bool:
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError:
        return True
    return False


def rounds(graph: Mapping[N, Iterable[N]], key: Callable[[N], Any]) -> list[list[N]]:
    """The nodes in rounds: each round what waits only for earlier rounds, sorted by key.
    graphlib.CycleError when the graph has a cycle."""
    sorter = graphlib.TopologicalSorter(graph)
    sorter.prepare()
    out: list[list[N]] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready(), key=key)
        out.append(ready)
        sorter.done(*ready)
    return out


def levels(graph: Mapping[N, Iterable[N]]) -> dict[N, int]:
    """Per node, the longest chain of edges below it (0: waits for nothing); the graph is acyclic."""
    return {n: i for i, batch in enumerate(rounds(graph, key=lambda n: 0)) for n in batch}


class CycleSearch(Generic[N]):
    """The cycles of a graph that the caller breaks as they are found: ``next()`` gives one cycle
    as [a, b, ..., a] (or None), the caller removes an edge of it, and the search goes on from
    where it was. Nodes already explored stay explored: removing edges never puts one on a cycle.

    graph: node -> its edges, as sorted lists would give them (the search takes them in order);
    edges to nodes outside the graph are ignored. The search sees the caller's changes to it."""

    def __init__(self, graph: Mapping[N, Mapping[N, object]], key: Callable[[N], Any]) -> None:
        self.graph = graph
        self.key = key
        self.starts = sorted(graph, key=key)
        self.start = 0  # every start before this one is explored
        self.done: set[N] = set()

    def _edges(self, node: N) -> Iterator[N]:
        return iter(sorted(self.graph[node], key=self.key))

    def next(self) -> list[N] | None:
        while self.start < len(self.starts):
            first = self.starts[self.start]
            if first in self.done:
                self.start += 1
                continue
            trail = [first]
            on_trail = {first}
            pending = [self._edges(first)]
            while pending:
                target = next(pending[-1], None)
                if target is None:
                    on_trail.discard(trail[-1])
                    self.done.add(trail.pop())
                    pending.pop()
                    continue
                if target in on_trail:
                    return [*trail[trail.index(target) :], target]
                if target not in self.done and target in self.graph:
                    trail.append(target)
                    on_trail.add(target)
                    pending.append(self._edges(target))
            self.start += 1
        return None

"""The reference graph (pure): the app's resources and the references between them, and the
walks every graph of references takes (order, levels, rounds, cycles).

A link ``A -> B`` says that A uses B: an agent names a tool in ``tools``, the app names its
root agent, a golden calls a tool, a deployment serves the app's draft or a version. The links
come from the kind registry's declared reference fields (``ResourceKind.references``), the
same table ``{ref:}`` is checked against, so a kind that gains a reference gains it here too.

What a change touches is what uses it, directly or through others: a changed tool reaches
the agents that list it, their parent agents, the app whose root they are, the deployments
that serve the draft, and the evaluations that call the tool.

The walks take any graph as a mapping from each node to the nodes it waits for (its edges):
the plan's order of writes and deletes (core/order.py, core/passes/order.py) and validate's
cycles (core/references.py) go through them. Ordering is the standard library's
``graphlib.TopologicalSorter``; cycles are found by one depth-first search that goes on
after each cycle is broken (:class:`CycleSearch`), so an app of 10,000 resources costs one
walk however many cycles it holds.
"""

from __future__ import annotations

import graphlib
from collections import deque
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Generic, TypeVar

from ..api.kinds import APP, DRAFT_VERSION, KINDS, by_collection
from ..api.resource import Resource

__all__ = [
    "VERSION",
    "CycleSearch",
    "Graph",
    "Key",
    "Link",
    "Loop",
    "build_graph",
    "graph_of",
    "has_cycle",
    "impact",
    "levels",
    "rounds",
    "values_at",
]

Key = tuple[str, str]  # (kind name, id); versions are ("version", id): not a kind cesync writes
VERSION = "version"
DRAFT = DRAFT_VERSION.rsplit("/", 1)[-1]  # the draft app as a version id: "-"


@dataclass(frozen=True, order=True)
class Link:
    source: Key
    target: Key
    field: str  # the reference field of the source, dotted (``tools``, ``golden.turns.steps...``)


@dataclass(frozen=True)
class Graph:
    nodes: tuple[Key, ...]  # registry order, then id; a referenced resource no file defines is a node too
    links: tuple[Link, ...]

    def uses(self, key: Key) -> list[Key]:
        return list(self._nexts[0].get(key, ()))

    def used_by(self, key: Key) -> list[Key]:
        return list(self._nexts[1].get(key, ()))

    def dependents(self, keys: Iterable[Key], depth: int | None = None) -> dict[Key, int]:
        """Each node that uses one of keys, directly or through others, with its distance (keys: 0)."""
        return _walk(self, keys, depth, upward=True)

    def dependencies(
        self, keys: Iterable[Key], depth: int | None = None, through: Callable[[Key], bool] | None = None
    ) -> dict[Key, int]:
        """Each node one of keys uses, directly or through others, with its distance (keys: 0); with
        through, only through the nodes it holds true of (the others are reached, not passed)."""
        return _walk(self, keys, depth, upward=False, through=through)

    @cached_property
    def _nexts(self) -> tuple[dict[Key, list[Key]], dict[Key, list[Key]]]:
        """(what each node uses, what uses each node), in link order: built once, as core.affected
        asks them of every evaluation."""
        down: dict[Key, list[Key]] = {}
        up: dict[Key, list[Key]] = {}
        for link in self.links:
            down.setdefault(link.source, []).append(link.target)
            up.setdefault(link.target, []).append(link.source)
        return down, up

    def around(self, keys: Iterable[Key], depth: int | None = None) -> Graph:
        """The neighbourhood of keys: what uses them and what they use, up to depth links away.

        Each path keeps one direction, so a tool's neighbourhood holds the agents that use it
        and their parents, not every other tool those agents use."""
        wanted = list(keys)
        return self.only({**self.dependencies(wanted, depth), **self.dependents(wanted, depth)})

    def only(self, keep: Iterable[Key]) -> Graph:
        kept = set(keep)
        return Graph(
            tuple(n for n in self.nodes if n in kept),
            tuple(link for link in self.links if link.source in kept and link.target in kept),
        )


def build_graph(resources: Iterable[Resource], parent: str) -> Graph:
    """The graph of an app's resources (the repo rendered for one environment, or the app read)."""
    nodes: set[Key] = set()
    links: set[Link] = set()
    for r in resources:
        nodes.add(r.key)
        for field, target in _references(r, parent):
            nodes.add(target)
            if target != r.key:  # a resource naming itself is no edge of the picture
                links.add(Link(r.key, target, field))
    ordered = sorted(links, key=lambda k: (_order(k.source), _order(k.target), k.field))
    return Graph(tuple(sorted(nodes, key=_order)), tuple(ordered))


def _references(r: Resource, parent: str) -> Iterator[tuple[str, Key]]:
    for dotted, collections in r.kind.references.items():
        for value in values_at(r.body, dotted.split(".")):
            key = _key_of(value, parent, collections)
            if key is not None:
                yield dotted, key
    if r.kind.serves and _serves_draft(r):
        yield r.kind.serves[0], (APP, APP)


def _serves_draft(r: Resource) -> bool:
    """Whether a deployment (a kind that serves) serves the app's draft: it names no version in
    its serving fields, or names ``versions/-`` in one of them (a traffic split may).

    An unset appVersion is taken as the draft: the discovery document is silent on it, and a
    deployment that names no version can serve nothing but what the app holds."""
    named = [v for dotted in r.kind.serves for v in values_at(r.body, dotted.split("."))]
    return not named or any(v.rsplit("/", 1)[-1] == DRAFT for v in named)


def _key_of(value: str, parent: str, collections: tuple[str, ...]) -> Key | None:
    head = parent + "/"
    if not value.startswith(head):
        return None
    parts = value[len(head) :].split("/")
    if len(parts) < 2 or parts[0] not in collections:
        return None
    if parts[0] == "versions":
        return None if parts[1] == DRAFT else (VERSION, parts[1])
    kind = by_collection(parts[0])
    return (kind.name, parts[1]) if kind is not None else None


def values_at(node: Any, path: list[str]) -> Iterator[str]:
    """The strings at a dotted path of a body, through any lists on the way."""
    stack: list[tuple[Any, int]] = [(node, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, list):
            stack.extend((x, depth) for x in reversed(item))
        elif depth == len(path):
            if isinstance(item, str):
                yield item
        elif isinstance(item, dict) and path[depth] in item:
            stack.append((item[path[depth]], depth + 1))


def _walk(
    graph: Graph, keys: Iterable[Key], depth: int | None, *, upward: bool, through: Callable[[Key], bool] | None = None
) -> dict[Key, int]:
    nexts = graph._nexts[1 if upward else 0]
    seen = {k: 0 for k in keys}
    queue = deque(seen)
    while queue:
        key = queue.popleft()
        if (depth is not None and seen[key] >= depth) or (through is not None and seen[key] and not through(key)):
            continue
        for other in nexts.get(key, ()):
            if other not in seen:
                seen[other] = seen[key] + 1
                queue.append(other)
    return seen


_RANK = {name: i for i, name in enumerate(KINDS)}


def _order(key: Key) -> tuple[int, str]:
    return (_RANK.get(key[0], len(_RANK)), key[1])


def impact(marks: Mapping[Key, str], desired: Iterable[Resource], remote: Iterable[Resource], parent: str) -> dict[str, Any]:
    """What a plan touches, as plain data: each changed resource (marks: key -> create, update or
    delete) and every resource that uses one of them, directly or through others ("affected").

    Links are read from the repo's bodies where it defines a resource and from the app's where
    only the app has it (a resource the plan deletes), so each arrow is one the app holds once
    the plan is applied, or held before it for what goes."""
    present = {r.key: r for r in remote}
    present.update((d.key, d) for d in desired)
    graph = build_graph(present.values(), parent)
    reached = graph.dependents(marks)
    shown = graph.only(reached)
    return {
        "nodes": [{"kind": k, "id": i, "mark": marks.get((k, i), "affected")} for k, i in shown.nodes],
        "links": [{"source": "/".join(x.source), "target": "/".join(x.target), "field": x.field} for x in shown.links],
    }


def graph_of(data: dict[str, Any]) -> tuple[Graph, dict[Key, str]]:
    """The graph and marks of impact()'s data (a plan's, or a saved plan's)."""
    nodes = tuple((n["kind"], n["id"]) for n in data.get("nodes", ()))
    marks = {(n["kind"], n["id"]): n["mark"] for n in data.get("nodes", ()) if n.get("mark")}
    links = tuple(Link(_split(x["source"]), _split(x["target"]), x["field"]) for x in data.get("links", ()))
    return Graph(nodes, links), marks


def _split(text: str) -> Key:
    kind, _, rid = text.partition("/")
    return (kind, rid)


# --- the walks of any graph: node -> the nodes it waits for ---------------------------------

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


class Loop(Generic[N]):
    """A cycle :class:`CycleSearch` found: the end of its trail from ``start``, closed by the edge
    from the trail's last node back to its node at ``start``. It reads the search's trail, so it
    is read before the next cut or search."""

    def __init__(self, trail: list[N], start: int) -> None:
        self._trail = trail
        self._start = start

    def nodes(self) -> list[N]:
        """[a, b, ..., a]."""
        return [*self._trail[self._start :], self._trail[self._start]]

    def edges(self) -> Iterator[tuple[N, N]]:
        """Its edges from the closing one back: taken one at a time, a caller that stops at the
        first it can break costs no more than that edge's distance from the end."""
        trail, start = self._trail, self._start
        yield trail[-1], trail[start]
        for i in range(len(trail) - 1, start, -1):
            yield trail[i - 1], trail[i]


class CycleSearch(Generic[N]):
    """Every cycle of a graph in one depth-first search, starts and edges taken in key order:
    ``next()`` gives the next edge that closes a cycle, as a :class:`Loop`, or None. A caller that
    breaks it removes edges of one node of the loop from the graph and says so with ``cut(node)``;
    the search goes on from that node, not from the start: nodes already explored stay explored
    (removing edges never puts one on a cycle), and the trail below the node is still a path.

    graph: node -> its edges (edges to nodes outside the graph are ignored); the search reads
    the caller's removals from it. Each edge is taken once, except that a cut below the end of
    the trail leaves the nodes above it to be taken again from what still leads to them;
    ``steps`` counts the edges taken."""

    def __init__(self, graph: Mapping[N, Collection[N]], key: Callable[[N], Any]) -> None:
        self.graph = graph
        self.key = key
        self.starts = iter(sorted(graph, key=key))
        self.done: set[N] = set()
        self.trail: list[N] = []
        self.at: dict[N, int] = {}  # the trail's nodes, by their place on it
        self.pending: list[Iterator[N]] = []  # per node of the trail, the edges not yet taken
        self.steps = 0

    def _enter(self, node: N) -> None:
        self.at[node] = len(self.trail)
        self.trail.append(node)
        self.pending.append(iter(sorted(self.graph[node], key=self.key)))

    def _leave(self) -> N:
        self.pending.pop()
        node = self.trail.pop()
        del self.at[node]
        return node

    def next(self) -> Loop[N] | None:
        while True:
            if not self.trail:
                first = next((n for n in self.starts if n not in self.done), None)
                if first is None:
                    return None
                self._enter(first)
            node = self.trail[-1]
            target = next(self.pending[-1], None)
            if target is None:
                self.done.add(self._leave())
                continue
            self.steps += 1
            if target not in self.graph[node]:  # cut after its edges were listed
                continue
            if target in self.at:
                return Loop(self.trail, self.at[target])
            if target not in self.done and target in self.graph:
                self._enter(target)

    def cut(self, node: N) -> None:
        """The caller removed edges of node, a node of the last loop. When one of them is the edge
        the trail goes on by, the search goes back to node; the nodes after it are not explored
        yet, and are reached again from what still leads to them."""
        place = self.at[node]
        if place + 1 < len(self.trail) and self.trail[place + 1] not in self.graph[node]:
            while len(self.trail) > place + 1:
                self._leave()

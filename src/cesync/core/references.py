"""References by name between the app's resources, and validate's cycles with positions.

A reference is any full name of one of this app's resources in a body or a rendered file
(a ``{ref: tools/x}`` or a name written out): the rule the plan orders creates and deletes by
(core/passes/compare.py, core/passes/order.py) and validate checks cycles by, found here
for both. A cycle can never be created in any order, so ``validate`` reports it at the
reference that closes it. The app's picture (core/graph.py) reads only the registry's
declared reference fields instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..api.kinds import KINDS, names_pattern
from ..errors import Problem
from .graph import CycleSearch, has_cycle
from .yamlfile import Path_

__all__ = ["Key", "Ref", "cycles", "names", "names_in"]

Key = tuple[str, str]  # (kind, id)


@dataclass(frozen=True)
class Ref:
    """A reference whose position is computed only if a cycle is reported (it may need a slow parse)."""

    source: Key
    target: Key
    at: Callable[[], Problem]


def names_in(data: Any, parent: str) -> Iterator[tuple[Path_, Key]]:
    """Each (path, (kind, id)) where a string of ``data`` names a tool or toolset of ``parent``."""
    pattern = names_pattern(parent)
    kind_of = {k.collection: k.name for k in KINDS.values()}
    stack: list[tuple[Path_, Any]] = [((), data)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, dict):
            stack.extend(((*path, k), v) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend(((*path, i), v) for i, v in enumerate(item))
        elif isinstance(item, str) and parent in item:
            for collection, rid in pattern.findall(item):
                yield path, (kind_of[collection], rid)


def names(data: Any, parent: str) -> set[str]:
    """The full names of this app's resources that ``data`` holds: what names_in finds, without the
    paths, which would double the cost of a walk the plan takes of every body."""
    pattern = names_pattern(parent)
    found: set[str] = set()
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and parent in item:
            found.update(m.group(0) for m in pattern.finditer(item))
    return found


def cycles(refs: list[Ref]) -> list[Problem]:
    """One problem per reference that closes a cycle, at that reference's position."""
    graph: dict[Key, set[Key]] = {}
    closing: dict[tuple[Key, Key], list[Ref]] = {}
    for r in refs:
        if r.source != r.target:  # a resource naming itself is no ordering problem
            graph.setdefault(r.source, set()).add(r.target)
            closing.setdefault((r.source, r.target), []).append(r)
    if not has_cycle(graph):
        return []
    problems: list[Problem] = []
    search = CycleSearch(graph, key=lambda k: k)
    while (loop := search.next()) is not None:  # nothing is cut: each closing reference is reported
        nodes = loop.nodes()
        text = " -> ".join(f"{k}/{i}" for k, i in nodes)
        message = (
            f"reference cycle: {text}; this reference closes it. A resource must exist before the ones "
            "that reference it, so CES cannot create these in any order: remove one reference"
        )
        at = sorted({(p.file, p.line, p.col) for r in closing[(nodes[-2], nodes[-1])] for p in (r.at(),)})
        problems += [Problem(file, line, col, message) for file, line, col in at]
    return problems

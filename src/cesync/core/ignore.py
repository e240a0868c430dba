"""Fields left to the console (``ignoreChanges``, as Terraform's ``lifecycle.ignore_changes``): pure.

A team that lets people tune an agent's instruction or a tool's description in the console
names those fields; cesync then never changes them and pull never writes them back. The
rule is applied before the diff, as one pass from (desired, remote) to desired: where the
app has the resource, the desired body takes the app's value at each ignored path (or goes
without it where the app has none), so the diff, the update mask, the apply and pull's
edits all see no difference there. A create still sends the repo's value: the console can
only tune what exists. What differed and was left is returned, for the plan to show.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..api.resource import Resource
from .diff import diff_resource

__all__ = ["IgnoreRules", "covers", "leave_to_console"]

# (kind, id) -> the dotted field paths (camelCase, as the files write them) left to the console
IgnoreRules = Mapping[tuple[str, str], Sequence[str]]


def covers(ignored: str, path: str) -> bool:
    """Whether a change at ``path`` is one at or inside, or around, the ignored path."""
    return path == ignored or path.startswith(ignored + ".") or ignored.startswith(path + ".")


def leave_to_console(
    desired: Sequence[Resource], remote: Sequence[Resource], rules: IgnoreRules, parent: str
) -> tuple[list[Resource], dict[str, list[str]]]:
    """The desired resources with every ignored path as the app has it, and, per resource name,
    the ignored paths where the repo and the app differ (what the plan shows as left)."""
    if not rules:
        return list(desired), {}
    remote_by = {r.key: r for r in remote}
    out: list[Resource] = []
    left: dict[str, list[str]] = {}
    for d in desired:
        paths = sorted(set(rules.get(d.key, ())))
        r = remote_by.get(d.key)
        if not paths or r is None:
            out.append(d)
            continue
        changed = [f.path for f in diff_resource(d.kind, d.id, d.body, r.body).fields]
        differing = [p for p in paths if any(covers(p, c) for c in changed)]
        if not differing:
            out.append(d)
            continue
        body = copy.deepcopy(d.body)
        for p in paths:
            _take(body, r.body, p.split("."))
        out.append(replace(d, body=body))
        left[d.kind.resource_name(parent, d.id)] = differing
    return out, left


def _take(body: dict[str, Any], remote: Mapping[str, Any], path: list[str]) -> None:
    """body's value at path set to remote's, or removed where remote has none."""
    node: Any = body
    there: Any = remote
    for step in path[:-1]:
        there = there.get(step) if isinstance(there, Mapping) else None
        if not isinstance(node.get(step), dict):
            if there is None:
                return  # neither side has the message: nothing to take
            node[step] = {}
        node = node[step]
    last = path[-1]
    value = there.get(last) if isinstance(there, Mapping) else None
    if value is None:
        node.pop(last, None)
    else:
        node[last] = copy.deepcopy(value)

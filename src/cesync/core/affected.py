"""Which evaluations and tool tests a change puts at risk (pure).

An evaluation exercises what its golden names (the tools of its tool calls and responses, the
agents of its transfers), every agent whose tool list holds one of those tools (or their
toolsets), the app's root agent (every conversation starts there), and the guardrails of the
agents it exercises and of the app. A tool test exercises its tool (and the toolset it comes
from). For each changed resource of a plan: the evaluations and tool tests that exercise it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..api.resource import Resource

__all__ = ["affected", "exercised"]

Key = str  # "kind/id"


def _names(body: Any, pattern: re.Pattern[str]) -> set[Key]:
    found: set[Key] = set()
    stack = [body]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            for m in pattern.finditer(item):
                found.add(f"{m.group(1)[:-1]}/{m.group(2)}")  # tools/x -> tool/x
    return found


def exercised(resources: Iterable[Resource], parent: str) -> dict[Key, set[Key]]:
    """Per evaluation ("evaluation/id"): the keys of the tools, toolsets, agents and guardrails it exercises."""
    pattern = re.compile(re.escape(parent) + r"/(tools|toolsets|agents|guardrails)/([A-Za-z0-9_-]+)")
    by_key = {f"{r.kind.name}/{r.id}": r for r in resources}
    agents = {k: _names(r.body, pattern) for k, r in by_key.items() if r.kind.name == "agent"}
    app = next((r.body for r in by_key.values() if r.kind.singleton), {})
    root = _names(app.get("rootAgent", ""), pattern) if isinstance(app, dict) else set()
    app_guards = _names(app.get("guardrails", []), pattern) if isinstance(app, dict) else set()
    out: dict[Key, set[Key]] = {}
    for key, r in by_key.items():
        if r.kind.name != "evaluation" or not isinstance(r.body.get("golden"), dict):
            continue
        named = _names(r.body["golden"], pattern)
        tools = {k for k in named if k.startswith(("tool/", "toolset/"))}
        holding = {a for a, refs in agents.items() if refs & tools}
        reached = named | holding | root
        guards = {g for a in reached if a in agents for g in agents[a] if g.startswith("guardrail/")}
        out[key] = reached | guards | (app_guards if reached else set())
    return out


def affected(
    changed: Sequence[Key],
    resources: Iterable[Resource],
    parent: str,
    tool_tests: Mapping[str, Sequence[Key]] | None = None,
) -> dict[Key, dict[str, list[str]]]:
    """For each changed tool, toolset, agent or guardrail: {"evaluations": ids, "toolTests": ids}, only
    those it has. tool_tests: test id -> the keys of the tools (or toolsets) it runs."""
    uses = exercised(resources, parent)
    out: dict[Key, dict[str, list[str]]] = {}
    for key in changed:
        if not key.startswith(("tool/", "toolset/", "agent/", "guardrail/")):
            continue
        evaluations = sorted(e.split("/", 1)[1] for e, keys in uses.items() if key in keys)
        tests = sorted(t for t, keys in (tool_tests or {}).items() if key in keys)
        found = {k: v for k, v in (("evaluations", evaluations), ("toolTests", tests)) if v}
        if found:
            out[key] = found
    return out

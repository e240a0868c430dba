"""Which evaluations and tool tests a change puts at risk (pure).

Read from the app's reference graph (core.graph, the registry's declared reference fields). An
evaluation with a golden exercises what its references reach: the tools its steps call or answer
for (and their toolsets), what those use in turn, the agents it transfers to (a conversation is in
an agent: the walk stops there, as an agent's other tools run only when called); every agent
that holds one of those tools or toolsets; the app's root agent and guardrails (every
conversation starts in the app); and the guardrails of every agent it exercises, which check each
of its turns. A tool test exercises its tool (and the toolset it comes from). For each changed
resource of a plan: the evaluations and tool tests that exercise it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..api.kinds import KINDS
from ..api.resource import Resource
from .graph import Key as Node
from .graph import build_graph

__all__ = ["affected", "exercised"]

Key = str  # "kind/id"


def exercised(resources: Iterable[Resource], parent: str) -> dict[Key, set[Key]]:
    """Per evaluation with a golden ("evaluation/id"): the keys of what it exercises."""
    present = list(resources)
    graph = build_graph(present, parent)
    app = next((r.key for r in present if r.kind.singleton), None)
    in_app = set(graph.uses(app)) if app is not None else set()  # its root agent and guardrails
    out: dict[Key, set[Key]] = {}
    for r in present:
        if not r.kind.run_by_eval or not isinstance(r.body.get("golden"), dict):
            continue  # goldens only (docs/evaluations.md): a scenario's turns are the simulated user's to choose
        reached = set(graph.dependencies([r.key], through=lambda k: not _converses(k))) - {r.key}
        holders = {u for k in reached if not _converses(k) for u in graph.used_by(k) if _converses(u)}
        reached |= holders | in_app
        guards = {g for a in reached if _converses(a) for g in graph.uses(a) if _checks_turns(g)}
        out[_text(r.key)] = {_text(k) for k in reached | guards}
    return out


def _converses(key: Node) -> bool:
    kind = KINDS.get(key[0])  # None for an app version: a node of no kind cesync writes
    return kind is not None and kind.converses


def _checks_turns(key: Node) -> bool:
    kind = KINDS.get(key[0])
    return kind is not None and kind.checks_turns


def _text(key: Node) -> Key:
    return "/".join(key)


def affected(
    changed: Sequence[Key],
    resources: Iterable[Resource],
    parent: str,
    tool_tests: Mapping[str, Sequence[Key]] | None = None,
) -> dict[Key, dict[str, list[str]]]:
    """For each changed resource an evaluation or tool test exercises: {"evaluations": ids,
    "toolTests": ids}, only those it has. tool_tests: test id -> the keys of the tools (or toolsets) it runs."""
    uses = exercised(resources, parent)
    out: dict[Key, dict[str, list[str]]] = {}
    for key in changed:
        evaluations = sorted(e.split("/", 1)[1] for e, keys in uses.items() if key in keys)
        tests = sorted(t for t, keys in (tool_tests or {}).items() if key in keys)
        found = {k: v for k, v in (("evaluations", evaluations), ("toolTests", tests)) if v}
        if found:
            out[key] = found
    return out

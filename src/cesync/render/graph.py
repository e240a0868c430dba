"""The app's graph as Mermaid (GitHub and GitLab draw it in Markdown), DOT (Graphviz) or JSON.

Every label is made of a kind, an id and a field name, and an id can come from the app (a
console user's or a server's text): Mermaid labels carry every character outside
``[A-Za-z0-9 _.-]`` as an entity code (``#34;``) inside a quoted label, and DOT labels and
ids are quoted with backslash and quote escaped, so no text can close a label, a code fence
or the diagram. A large graph is cut to ``limit`` nodes, the marked ones first, with one node
saying how many more there are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..api.kinds import KINDS
from ..api.words import count
from ..core.graph import Graph, Key, Link

__all__ = ["MARKS", "Cut", "cut", "label", "to_dot", "to_json", "to_mermaid", "visible"]

# What a node is in a plan's picture, most telling first (the order nodes survive a cut in).
MARKS = ("focus", "delete", "create", "update", "affected")
_FILL = {  # GitHub's diff colours, readable on light and dark themes
    "create": ("#dafbe1", "#1a7f37"),
    "update": ("#fff8c5", "#9a6700"),
    "delete": ("#ffebe9", "#cf222e"),
    "affected": ("#f6f8fa", "#57606a"),
    "focus": ("#ddf4ff", "#0969da"),
}
# ResourceKind.figure as each language draws it; a version (no kind of cesync's) as a cylinder.
_MERMAID_SHAPE = {
    "rectangle": ("[", "]"),
    "stadium": ("([", "])"),
    "subroutine": ("[[", "]]"),
    "hexagon": ("{{", "}}"),
    "circle": ("((", "))"),
    "parallelogram": ("[/", "/]"),
    "flag": (">", "]"),
    "cylinder": ("[(", ")]"),
}
_DOT_SHAPE = {
    "rectangle": "box",
    "stadium": "box, style=rounded",
    "subroutine": "box3d",
    "hexagon": "hexagon",
    "circle": "doublecircle",
    "parallelogram": "parallelogram",
    "flag": "cds",
    "cylinder": "cylinder",
}
_SAFE = re.compile(r"[A-Za-z0-9 _.,/\-]")
MORE = ("more", "")  # the node that says how many were cut


@dataclass(frozen=True)
class Cut:
    graph: Graph
    left_out: int  # nodes not shown


def cut(graph: Graph, limit: int | None, marks: Mapping[Key, str] | None = None) -> Cut:
    """At most limit nodes: the marked ones first (by MARKS), then the most linked (a picture of
    the app's hubs, its agents and the tools many use, not of the first tools by name), then the
    rest in graph order."""
    if limit is None or len(graph.nodes) <= limit:
        return Cut(graph, 0)
    marks = marks or {}
    rank = {m: i for i, m in enumerate(MARKS)}
    degree: dict[Key, int] = {}
    for link in graph.links:
        degree[link.source] = degree.get(link.source, 0) + 1
        degree[link.target] = degree.get(link.target, 0) + 1
    ordered = sorted(graph.nodes, key=lambda k: (rank.get(marks.get(k, ""), len(MARKS)), -degree.get(k, 0)))
    kept = graph.only(ordered[: max(limit, 1)])
    return Cut(kept, len(graph.nodes) - len(kept.nodes))


def label(key: Key) -> str:
    """What a node says: its kind and id, any character that does not print shown as an escape."""
    kind, rid = key
    return visible(f"{kind} {rid}" if rid != kind else kind)  # the app is "app", not "app app"


def visible(text: str) -> str:
    """Control, format and other unprintable characters as ``\\xNN`` / ``\\uNNNN`` text: never drawn raw."""
    return "".join(c if c.isprintable() else (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}") for c in text)


def field_label(field: str) -> str:
    """The word of a reference field an arrow says: ``tools``; ``toolsets.toolset`` -> ``toolsets``;
    ``request.evaluations`` -> ``evaluations``; ``golden.turns.steps.expectation.toolCall.tool`` -> ``toolCall``."""
    parts = field.split(".")
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        return parts[1] if parts[1].endswith("s") else parts[0]
    return parts[-2]


def figure(key: Key) -> str:
    kind = KINDS.get(key[0])
    return kind.figure if kind is not None else "cylinder"


def _labels(links: tuple[Link, ...]) -> dict[tuple[Key, Key], str]:
    """One arrow per pair, naming every field that links them."""
    fields: dict[tuple[Key, Key], list[str]] = {}
    for link in links:
        said = fields.setdefault((link.source, link.target), [])
        kind = KINDS.get(link.source[0])
        name = "serves" if kind is not None and link.field in kind.serves else field_label(link.field)
        if name not in said:
            said.append(name)
    return {pair: ", ".join(names) for pair, names in fields.items()}


def _mermaid_text(text: str) -> str:
    """Entity codes for all but plain characters; an outer space too, which Mermaid would trim."""
    last = len(text) - 1
    return "".join(c if _SAFE.match(c) and not (c == " " and i in (0, last)) else f"#{ord(c)};" for i, c in enumerate(text))


def to_mermaid(graph: Graph, *, marks: Mapping[Key, str] | None = None, limit: int | None = None) -> str:
    """A Mermaid flowchart, left to right; marks colour nodes (MARKS)."""
    marks = marks or {}
    shown = cut(graph, limit, marks)
    ids = {key: f"n{i}" for i, key in enumerate(shown.graph.nodes)}
    lines = ["flowchart LR"]
    for key, nid in ids.items():
        opening, closing = _MERMAID_SHAPE[figure(key)]
        lines.append(f'  {nid}{opening}"{_mermaid_text(label(key))}"{closing}')
    if shown.left_out:
        lines.append(f'  more["{_mermaid_text("and " + count(shown.left_out, "more resource"))}"]')
    for (source, target), text in _labels(shown.graph.links).items():
        lines.append(f'  {ids[source]} -->|"{_mermaid_text(text)}"| {ids[target]}')
    used = sorted({marks[k] for k in ids if k in marks}, key=MARKS.index)
    for mark in used:
        fill, stroke = _FILL[mark]
        dash = ",stroke-dasharray:4 3" if mark == "affected" else ""
        lines.append(f"  classDef {mark} fill:{fill},stroke:{stroke},color:#1f2328{dash}")
        lines.append(f"  class {','.join(nid for k, nid in ids.items() if marks.get(k) == mark)} {mark}")
    return "\n".join(lines) + "\n"


def _dot_text(text: str) -> str:
    """A DOT quoted string's contents: backslash first, then quote (label() leaves no line break)."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def to_dot(graph: Graph, *, marks: Mapping[Key, str] | None = None, limit: int | None = None) -> str:
    """A Graphviz digraph, left to right; marks colour nodes (MARKS). Nodes are n0, n1, ...: an id
    from the app is only ever a label (an id with a control character in it breaks SVG output)."""
    marks = marks or {}
    shown = cut(graph, limit, marks)
    ids = {key: f"n{i}" for i, key in enumerate(shown.graph.nodes)}
    lines = ["digraph app {", "  rankdir=LR;", '  node [shape=box, fontname="Helvetica"];']
    for key, nid in ids.items():
        attrs = [f'label="{_dot_text(label(key))}"', f"shape={_DOT_SHAPE[figure(key)]}"]
        if key in marks:
            fill, stroke = _FILL[marks[key]]
            attrs.append(f'style="filled{",dashed" if marks[key] == "affected" else ""}"')
            attrs += [f'fillcolor="{fill}"', f'color="{stroke}"']
        lines.append(f"  {nid} [{', '.join(attrs)}];")
    if shown.left_out:
        lines.append(f'  more [label="{_dot_text("and " + count(shown.left_out, "more resource"))}", shape=plaintext];')
    for (source, target), text in _labels(shown.graph.links).items():
        lines.append(f'  {ids[source]} -> {ids[target]} [label="{_dot_text(text)}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_json(graph: Graph, *, marks: Mapping[Key, str] | None = None) -> str:
    """The whole graph as data: nodes (kind, id, mark) and links (source, target, field)."""
    marks = marks or {}
    data = {
        "nodes": [{"kind": k, "id": i, **({"mark": marks[(k, i)]} if (k, i) in marks else {})} for k, i in graph.nodes],
        "links": [{"source": "/".join(x.source), "target": "/".join(x.target), "field": x.field} for x in graph.links],
    }
    return json.dumps(data, indent=2) + "\n"

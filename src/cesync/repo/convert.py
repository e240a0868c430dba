"""Tool files of a type CES makes only from toolsets, rewritten as toolset files (pure apart from reading).

``cesync convert-tools``: each ``tools/<id>.yaml`` holding an ``openApiTool``,
``connectorTool`` or ``mcpTool`` becomes ``toolsets/<id>.yaml`` (the id is kept, so
``environments.<env>.urls.<id>`` still gives its ``$env_var`` URL), with the fields
:func:`cesync.core.toolset_form.toolset_form` carries; comments, ``{file: ...}`` includes
(tools/ and toolsets/ are at the same depth) and ``${VAR}`` stay as written. An agent's
``{ref: tools/<id>}`` in ``tools`` moves to ``toolsets``; any other reference to the tool is
reported at ``file:line`` to be edited by hand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from .. import yamlconfig
from ..api.kinds import KINDS, SERVER_MADE_TOOLS
from ..core.limits import over_limits
from ..core.toolset_form import SHARED, TOOLSET_FIELDS, server_made_member
from ..core.yamlfile import read_text
from ..errors import Problem
from .loading import kind_files

__all__ = ["Conversion", "convert_repo"]


@dataclass
class Conversion:
    files: dict[str, str | None] = field(default_factory=dict)  # repo-relative path -> new text (None: remove)
    done: list[str] = field(default_factory=list)  # what was rewritten
    by_hand: list[Problem] = field(default_factory=list)  # what is left to edit


def _yaml() -> YAML:
    return yamlconfig.editor()


def _dump(data: Any) -> str:
    buf = StringIO()
    _yaml().dump(data, buf)
    return buf.getvalue()


def convert_repo(root: Path) -> Conversion:
    out = Conversion()
    moved: dict[str, str] = {}  # tool id -> toolset id
    for path in kind_files(root, KINDS["tool"]):
        rel = path.relative_to(root).as_posix()
        text = read_text(path, rel)
        if isinstance(text, Problem):
            out.by_hand.append(text)
            continue
        if (over := over_limits(text)) is not None:  # the limits of every document cesync reads
            out.by_hand.append(Problem(rel, 1, 1, f"{over}, not converted"))
            continue
        try:
            doc = _yaml().load(text)
        except YAMLError as exc:
            out.by_hand.append(Problem(rel, 1, 1, f"invalid YAML, not converted: {' '.join(str(exc).split())}"))
            continue
        member = server_made_member(doc) if isinstance(doc, CommentedMap) else None
        if member is None:
            continue
        target = SERVER_MADE_TOOLS[member]
        line = doc.lc.key(member)[0] + 1
        if not target:
            out.by_hand.append(Problem(rel, line, 1, f"{member} has no toolset form: CES makes it itself; remove this file"))
            continue
        rid = str(doc.get("id") or path.stem)
        new_rel = "toolsets/" + rel.split("/", 1)[1]
        if (root / new_rel).exists():
            out.by_hand.append(Problem(rel, line, 1, f"{new_rel} exists already: not converted"))
            continue
        _to_toolset(doc, member, target)
        new_text = re.sub(r"(?m)^(#.*schemas/)tool\.schema\.json", r"\1toolset.schema.json", _dump(doc))
        out.files[new_rel] = new_text
        out.files[rel] = None
        moved[rid] = rid
        out.done.append(f"{rel} -> {new_rel} ({member} -> {target})")
    if moved:
        _retarget(root, moved, out)
    return out


def _to_toolset(doc: CommentedMap, member: str, target: str) -> None:
    """In place, keeping the comments of what stays: the type's mapping under the toolset's key."""
    spec = doc[member] if isinstance(doc[member], CommentedMap) else CommentedMap()
    description = spec.get("description")
    for key in [k for k in spec if k not in TOOLSET_FIELDS[member] and not (member == "connectorTool" and k == "action")]:
        del spec[key]
    if member == "connectorTool" and "action" in spec:
        pos = list(spec).index("action")
        action = spec.pop("action")
        spec.insert(pos, "connectorActions", CommentedSeq([action]))
    pos = list(doc).index(member)
    comment = doc.ca.items.pop(member, None)
    del doc[member]
    doc.insert(pos, target, spec)
    if comment is not None:
        doc.ca.items[target] = comment
    if isinstance(description, str) and "description" not in doc:
        doc.insert(pos + 1, "description", description)
    for key in [k for k in doc if k not in (target, "id", "description", "displayName", *SHARED)]:
        del doc[key]


def _retarget(root: Path, moved: dict[str, str], out: Conversion) -> None:
    """Agents' tools entries move to toolsets; other references are reported."""
    pattern = re.compile(r"tools/(" + "|".join(map(re.escape, moved)) + r")\b")
    agent_files = {p.relative_to(root).as_posix() for p in kind_files(root, KINDS["agent"])}
    for path in sorted(p for kind in KINDS.values() for p in kind_files(root, kind)) + sorted(root.glob("tests/*.yaml")):
        rel = path.relative_to(root).as_posix()
        if rel in out.files:
            continue
        text = read_text(path, rel)
        if isinstance(text, Problem) or not pattern.search(text):
            continue
        if rel in agent_files:
            text = _agent(text, moved, rel, out)
        for n, line in enumerate(text.splitlines(), 1):
            for m in pattern.finditer(line):
                out.by_hand.append(
                    Problem(rel, n, m.start() + 1, f"names {m.group(0)}, now toolset {moved[m.group(1)]}: name its tool instead")
                )


def _agent(text: str, moved: dict[str, str], rel: str, out: Conversion) -> str:
    if over_limits(text) is not None:
        return text  # validate names it
    try:
        doc = _yaml().load(text)
    except YAMLError:
        return text
    tools = doc.get("tools") if isinstance(doc, CommentedMap) else None
    if not isinstance(tools, CommentedSeq):
        return text
    taken = [i for i, t in enumerate(tools) if isinstance(t, dict) and str(t.get("ref", "")).removeprefix("tools/") in moved]
    if not taken:
        return text
    toolsets = doc.get("toolsets")
    if not isinstance(toolsets, CommentedSeq):
        toolsets = CommentedSeq()
        doc.insert(list(doc).index("tools") + 1, "toolsets", toolsets)
    for i in reversed(taken):
        rid = moved[str(tools[i]["ref"]).removeprefix("tools/")]
        del tools[i]
        ref = CommentedMap(ref=f"toolsets/{rid}")
        ref.fa.set_flow_style()
        toolsets.insert(0, CommentedMap(toolset=ref))
        out.done.append(f"{rel}: tools entry tools/{rid} -> toolsets entry toolsets/{rid}")
    if not tools:
        del doc["tools"]
    new = _dump(doc)
    out.files[rel] = new
    return new

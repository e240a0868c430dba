"""A field path of a ``google.rpc.BadRequest`` violation, read back into a path of the resource's data (pure).

BadRequest's FieldViolation.field is "a sequence of dot-separated identifiers that identify
a protocol buffer field", with ``[i]`` for a list item (``emailAddresses[1].email``), in JSON
or proto names, and it starts from the request message: a create or update names the
resource's own field first (``agent.toolsets[0].toolset``). The result is the path into the
resource's body (``("toolsets", 0, "toolset")``), in JSON names, which the repo's positions
turn into ``file:line:col``.
"""

from __future__ import annotations

import re

from ..api.protojson import json_name
from .yamlfile import Path_, Positions

__all__ = ["data_path", "position"]

_TOKEN = re.compile(r"""\.?([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]|\['([^']*)'\]""")


def data_path(field: str, resource_field: str) -> Path_:
    """``agent.toolsets[0].tool_ids`` -> ("toolsets", 0, "toolIds"); resource_field ("agent") is dropped
    when the path starts with it. What does not parse ends the path there (its known part stays)."""
    path: list[str | int] = []
    at = 0
    while at < len(field):
        m = _TOKEN.match(field, at)
        if m is None or m.end() == at:
            break
        name, index, dquoted, squoted = m.groups()
        if name is not None:
            path.append(json_name(name))
        elif index is not None:
            path.append(int(index))
        else:
            path.append(dquoted if dquoted is not None else squoted)
        at = m.end()
    if path and path[0] == json_name(resource_field):
        path = path[1:]
    return tuple(path)


def position(positions: Positions, path: Path_) -> tuple[int, int]:
    """Where a data path stands in a file: each key as written there (camelCase or snake_case), else its nearest parent."""
    written: list[str | int] = []
    keys, values = positions.keys, positions.values
    for part in path:
        candidates = [part] if isinstance(part, int) else [part, re.sub(r"(?<!^)([A-Z])", r"_\1", part).lower()]
        found = next((c for c in candidates if (*written, c) in keys or (*written, c) in values), None)
        if found is None:
            break
        written.append(found)
    return positions.at(tuple(written), key=bool(written) and tuple(written) not in values)

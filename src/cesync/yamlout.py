"""Writing YAML for people: block style, | blocks for multi-line text, one-line {ref:} and {file:}."""

from __future__ import annotations

from io import StringIO
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.scalarstring import LiteralScalarString

__all__ = ["to_yaml"]


def to_yaml(data: Any) -> str:
    yaml = YAML()
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    buf = StringIO()
    yaml.dump(_literal(data), buf)
    return buf.getvalue()


def _literal(data: Any) -> Any:
    """Multi-line strings as | blocks where YAML can keep them exactly."""
    if isinstance(data, dict):
        if set(data) in ({"ref"}, {"file"}):  # {ref: tools/x} and {file: ../code/x.py} read best on one line
            flow = CommentedMap(data)
            flow.fa.set_flow_style()
            return flow
        return {k: _literal(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_literal(v) for v in data]
    if isinstance(data, str) and "\n" in data and _block_safe(data):
        return LiteralScalarString(data)
    return data


def _block_safe(text: str) -> bool:
    lines = text.split("\n")
    return (
        not any(line != line.rstrip() for line in lines)
        and not text.startswith((" ", "\t"))
        and "\t" not in text
        and all(c.isprintable() or c == "\n" for c in text)
    )

"""Round-trip YAML editing: a file loaded keeping its comments, key order, quoting, block style and
indentation; a mapping or list of it made equal to a value by editing only what differs (scalars
compared by their proto meaning, new keys placed in the schema's order); dumped back as it was written.

Every edit goes through a ``leaf`` callback, which says what to write for one value (or ``KEEP``):
pull's editor decides there about ${VAR} placeholders, {ref:} references and secrets."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from io import StringIO
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, FoldedScalarString, LiteralScalarString, SingleQuotedScalarString

from .. import yamlconfig
from ..api.protojson import is_default
from ..models import FieldSpec, Kind, ProtoModel, specs
from .documents import parse_document
from .jsonedit import json_in_place, json_indent
from .normalize import _scalar as _proto_scalar
from .yamlout import _block_safe


class _Keep:
    pass


KEEP: Any = _Keep()


def is_ref(value: Any) -> bool:
    """Whether a node is a ``{ref: kind/id}`` reference."""
    return isinstance(value, dict) and set(value) in ({"ref"}, {"ref", "owner"})


def styled(new: Any, old: Any) -> Any:
    """The new scalar in the old one's quoting or block style, where it can be."""
    if not isinstance(new, str) or isinstance(new, LiteralScalarString):
        return new
    if isinstance(old, LiteralScalarString | FoldedScalarString) and "\n" in new and _block_safe(new):
        return LiteralScalarString(new) if isinstance(old, LiteralScalarString) else FoldedScalarString(new)
    if isinstance(old, DoubleQuotedScalarString):
        return DoubleQuotedScalarString(new)
    if isinstance(old, SingleQuotedScalarString) and "\n" not in new:
        return SingleQuotedScalarString(new)
    return new


def assign(node: Any, key: Any, new: Any, old: Any, order: dict[str, int]) -> None:
    new = styled(new, old)
    if isinstance(node, CommentedMap) and key not in node:
        insert(node, key, new, order)
    else:
        node[key] = new


def insert(node: CommentedMap, key: str, value: Any, order: dict[str, int]) -> None:
    """A new key where the schema puts it among the keys already there."""
    rank = order.get(key, len(order))
    pos = len(node)
    for i, existing in enumerate(node):
        if order.get(str(existing), len(order)) > rank:
            pos = i
            break
    node.insert(pos, key, value)


def merge_map(
    node: CommentedMap, value: dict[str, Any], leaf: Any, model: type[ProtoModel] | None = None, values: FieldSpec | None = None
) -> None:
    """Make a mapping of the file equal value, touching only what differs.

    Not a :class:`~cesync.core.walk.SpecWalker` pass: the walker walks one value and
    builds a new one, this walks two (the file's ruamel nodes and the remote value) and
    edits the first in place, led by the file's structure (its keys, {ref:} and {file:}
    nodes, list items by position, quoting kept); a field's spec is only looked up here.

    model: the message the mapping is (its keys are fields); values: the field spec of a
    proto map's values. Equality of scalars is by their proto meaning (an enum number
    and its name, 1.5s and 1.500s); a default-valued key the remote leaves out stays.
    """
    table = specs(model) if model is not None else {}
    for key in [k for k in node if k not in value]:
        spec = table.get(str(key))
        if spec is not None and _scalar_spec(spec) and is_default(node[key], spec.kind, spec.enum):
            continue
        del node[key]
    for key, v in value.items():
        spec = values if values is not None else table.get(key)
        current = node.get(key)
        sub = spec.message if spec is not None else None
        if isinstance(current, CommentedMap) and isinstance(v, dict) and not is_ref(current):
            if spec is not None and spec.map and values is None:
                merge_map(current, v, leaf, None, map_value_spec(spec))
            else:
                merge_map(current, v, leaf, sub)
        elif isinstance(current, CommentedSeq) and isinstance(v, list):
            merge_seq(current, v, lambda c, x, i, k=key: leaf(c, x, k), spec)
        elif spec is not None and _scalar_spec(spec) and _same(current, v, spec):
            continue
        else:
            new = leaf(current, v, key)
            if new is not KEEP:
                assign(node, key, compact(new, spec), current, {})


def merge_seq(node: CommentedSeq, value: list[Any], leaf: Any, spec: FieldSpec | None = None) -> None:
    del node[len(value) :]
    sub = spec.message if spec is not None else None
    for i, v in enumerate(value):
        if i >= len(node):
            node.append(_portable_plain(v))
            continue
        current = node[i]
        if isinstance(current, CommentedMap) and isinstance(v, dict):
            merge_map(current, v, lambda c, x, k, i=i: leaf(c, x, i), sub)
        elif isinstance(current, CommentedSeq) and isinstance(v, list):
            merge_seq(current, v, leaf)
        elif spec is not None and sub is None and _same(current, v, spec):
            continue
        else:
            new = leaf(current, v, i)
            if new is not KEEP:
                node[i] = styled(compact(new, spec), current)


def _scalar_spec(spec: FieldSpec) -> bool:
    return spec.message is None and not spec.repeated and not spec.map and spec.kind not in (Kind.STRUCT, Kind.VALUE)


def map_value_spec(spec: FieldSpec) -> FieldSpec:
    """The spec of one value of a proto map field."""
    return dataclasses.replace(spec, map=False, repeated=False)


def _same(current: Any, value: Any, spec: FieldSpec) -> bool:
    if isinstance(current, dict | list) or isinstance(value, dict | list):
        return False
    a, b = _proto_scalar(current, spec.kind, spec.enum), _proto_scalar(value, spec.kind, spec.enum)
    return bool(a == b)


def compact(value: Any, spec: FieldSpec | None) -> Any:
    """A duration as people write it: 1.5s, not the server's 1.500s."""
    if spec is not None and spec.kind is Kind.DURATION and isinstance(value, str) and "." in value:
        return re.sub(r"\.?0+s$", "s", value)
    return value


def _portable_plain(value: Any) -> Any:
    if isinstance(value, str) and "\n" in value and _block_safe(value):
        return LiteralScalarString(value)
    return value


def _plain_leaf(current: Any, value: Any, _key: Any) -> Any:
    return KEEP if current == value and type(current) is type(value) else _portable_plain(value)


def document_text(old: str, new: str, rel: str) -> str:
    """An included OpenAPI document rewritten in its own format, minimally for YAML."""
    try:
        new_data, old_data = parse_document(new), parse_document(old)
    except ValueError:
        return new
    if new_data == old_data:
        return old
    if rel.endswith(".json") or old.lstrip().startswith("{"):
        edited = json_in_place(old, old_data, new_data)
        if edited is not None:
            return edited
        indent = json_indent(old)
        return json.dumps(new_data, indent=indent, ensure_ascii=False) + ("\n" if old.endswith("\n") else "")
    yaml, tree = load_roundtrip(old)
    if isinstance(tree, CommentedMap) and isinstance(new_data, dict):
        merge_map(tree, new_data, _plain_leaf)
        return dump_roundtrip(yaml, tree, old)
    return new


def load_roundtrip(text: str) -> tuple[YAML, Any]:
    yaml = yamlconfig.editor(indents(text))
    return yaml, yaml.load(text)


def indents(text: str) -> tuple[int, int, int]:
    """(mapping, sequence, offset) as the file already writes them (cesync's own style by default)."""
    mapping, sequence, offset = 2, 4, 2
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    for prev, line in itertools.pairwise(lines):
        p_ind = len(prev) - len(prev.lstrip())
        if prev.lstrip().startswith("- "):  # "- key:" opens a mapping at the key's column, not the dash's
            p_ind += 2
        ind = len(line) - len(line.lstrip())
        if prev.rstrip().endswith(":") and ind > p_ind:
            if line.lstrip().startswith("- "):
                offset = ind - p_ind
                sequence = offset + 2
            else:
                mapping = ind - p_ind
                break
    return mapping, sequence, offset


def dump_roundtrip(yaml: YAML, tree: Any, original: str) -> str:
    buf = StringIO()
    yaml.dump(tree, buf)
    text = buf.getvalue()
    if original.startswith("\ufeff"):
        text = "\ufeff" + text
    return text

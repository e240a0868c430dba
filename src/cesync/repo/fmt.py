"""One canonical layout for the repo's YAML files, keeping comments (pure apart from reading).

Keys are put where a file writes them (:func:`~cesync.core.walk.written_order`, the order
``export`` writes and ``pull`` inserts in): what names a resource first, then the API's
declaration order; mappings are indented by 2, sequences by 4 with the dash at 2
(``to_yaml``'s layout). Comments, quoting, flow or block style and
values stay as written; OpenAPI documents written as mappings keep their own order.
"""

from __future__ import annotations

from collections.abc import Iterable
from io import StringIO
from itertools import pairwise
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark, YAMLError
from ruamel.yaml.tokens import CommentToken

from .. import yamlconfig
from ..api.kinds import KINDS
from ..core.limits import over_limits
from ..core.normalize import DOCUMENT_FIELDS
from ..core.walk import Path as Path_
from ..core.walk import SpecWalker, written_order
from ..core.yamlfile import load_text, read_text
from ..errors import Problem
from ..models import FieldSpec, ProtoModel
from .config import Config
from .loading import CONFIG_FILE, kind_files
from .templating import INCLUDABLE

__all__ = ["format_repo", "format_text"]


def format_repo(root: Path) -> tuple[dict[str, str], list[Problem]]:
    """repo-relative path -> canonical text, for every file whose layout differs; and unreadable files."""
    changed: dict[str, str] = {}
    problems: list[Problem] = []
    files: list[tuple[Path, type[BaseModel]]] = [(root / CONFIG_FILE, Config)]
    for kind in KINDS.values():
        files += [(p, kind.model) for p in kind_files(root, kind)]
    for path, model in files:
        if not path.is_file() or path.name.startswith("."):
            continue
        rel = str(path.relative_to(root))
        text = read_text(path, rel)
        if isinstance(text, Problem):
            problems.append(text)
            continue
        if (over := over_limits(text)) is not None:  # the limits of every document cesync reads
            problems.append(Problem(rel, 1, 1, f"{over}; not formatted"))
            continue
        try:  # line endings are the checkout's business (git autocrlf), not the layout's
            new = format_text(text.replace("\r\n", "\n"), model)
            if "\r\n" in text:
                new = new.replace("\n", "\r\n")
        except YAMLError as exc:
            # validate's own message and position (a tab says so), not ruamel's text at 1:1
            found = load_text(text, rel)
            if isinstance(found, Problem):
                problems.append(Problem(rel, found.line, found.col, f"{found.message}; not formatted"))
            else:
                problems.append(Problem(rel, 1, 1, f"invalid YAML, not formatted: {' '.join(str(exc).split())}"))
            continue
        if new != text:
            changed[rel] = new
    return changed, problems


def format_text(text: str, model: type[BaseModel]) -> str:
    """The canonical layout of text, or text itself when no layout provably keeps its data.

    ruamel keeps comments as tokens under neighbouring nodes; moving them with their keys
    can, around block scalars and flow collections, land a comment where it reads as part
    of a value (a '# note' after a '|' text becomes text) or shift a blank line. So each
    result is checked: the same data, and formatting it again changes nothing; else the
    keys are reordered leaving comments where ruamel put them, and failing that too the
    file is left as written."""
    for move_comments in (True, False):
        new = _format(text, model, move_comments)
        if _same_data(text, new) and _format(new, model, move_comments) == new:
            return new
    return text


def _same_data(a: str, b: str) -> bool:
    safe = yamlconfig.safe()
    return bool(safe.load(a) == safe.load(b))


def _format(text: str, model: type[BaseModel], move_comments: bool) -> str:
    yaml = yamlconfig.editor()
    data = yaml.load(text)
    if isinstance(data, CommentedMap):
        if issubclass(model, ProtoModel):
            _Layout(move_comments).walk(data, model)
        else:
            _order_config(data, model, move_comments)
    buf = StringIO()
    yaml.dump(data, buf)
    return buf.getvalue() if data is not None else text


class _Layout(SpecWalker):
    """A resource file follows the API's shape, so it is laid out on the spec walker: each
    message's keys are put in the API's order in place (the ``order`` hook), and the walker
    enters messages, repeated fields and maps as every other pass does. The walk's result
    is not used: the ruamel tree itself, with its comments, is what changes."""

    def __init__(self, move_comments: bool) -> None:
        self.move_comments = move_comments

    def order(self, data: dict[str, Any], table: dict[str, FieldSpec]) -> Iterable[str]:
        if _is_include_or_ref(data):
            return ()
        if isinstance(data, CommentedMap):
            _sort_keys(data, written_order(table), self.move_comments)
        return list(data)

    def skip(self, spec: FieldSpec, value: Any, path: Path_) -> bool:
        return _left_as_written(path[-1])

    def message(self, spec: FieldSpec, value: Any, path: Path_) -> Any:
        if isinstance(value, list) and not spec.repeated:  # a list where one message (or a map) belongs
            return [self.walk(v, spec.message, path) if isinstance(v, dict) and spec.message else v for v in value]
        return super().message(spec, value, path)


def _is_include_or_ref(node: Any) -> bool:
    return isinstance(node, dict) and set(node) in ({"file"}, {"ref"})


def _left_as_written(key: Any) -> bool:
    return str(key) in DOCUMENT_FIELDS or str(key) in INCLUDABLE  # an OpenAPI document keeps its own order; code is text


def _sort_keys(node: CommentedMap, rank: dict[str, int], move_comments: bool) -> None:
    """Sort the keys of node by rank (unknown keys keep their place at the end)."""
    keys = list(node)
    wanted = sorted(keys, key=lambda k: (rank.get(str(k), len(rank)), keys.index(k)))
    if rank and wanted != keys:
        _reorder(node, wanted, move_comments)


def _order_config(node: CommentedMap, model: type[BaseModel] | None, move_comments: bool) -> None:
    """cesync.yaml: our own format, not the API's, so its models are pydantic's and not the
    walker's field specs; the keys are sorted as the fields are declared, then each value."""
    if _is_include_or_ref(node):
        return
    rank = {"id": -1, **{n: i for i, n in enumerate(model.model_fields)}} if model is not None else {}
    _sort_keys(node, rank, move_comments)
    for key in node:
        value = node[key]
        if _left_as_written(key):
            continue
        sub, is_map = _sub_model(model, str(key))
        if is_map and isinstance(value, CommentedMap):
            for v in value.values():
                if isinstance(v, CommentedMap):
                    _order_config(v, sub, move_comments)
        elif isinstance(value, CommentedMap):
            _order_config(value, sub, move_comments)
        elif isinstance(value, CommentedSeq):
            for item in value:
                if isinstance(item, CommentedMap):
                    _order_config(item, sub, move_comments)


def _sub_model(model: type[BaseModel] | None, key: str) -> tuple[type[BaseModel] | None, bool]:
    """The model of a field's value, and whether the field is a map (its values have that model)."""
    field = model.model_fields.get(key) if model is not None else None
    hint = field.annotation if field is not None else None
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        return hint, False
    args: tuple[Any, ...] = getattr(hint, "__args__", ())
    if len(args) == 2 and isinstance(args[1], type) and issubclass(args[1], BaseModel):  # dict[str, Model]
        return args[1], True
    return None, False


def _reorder(node: CommentedMap, wanted: list[Any], move_comments: bool) -> None:
    """Reorder in place; each key takes along its end-of-line comment and the full-line
    comments above it. ruamel files a full-line comment under whatever precedes it (the
    previous key, or the last item of that key's value), so those comments are cut from
    there first and put back above their key after the move (unless not move_comments).
    """
    keys = list(node)
    above: dict[Any, str] = {}
    after_all = ""
    if move_comments:
        above = {key: _cut_lines(_tail_slot(node, prev)) for prev, key in pairwise(keys)}
        after_all = _cut_lines(_tail_slot(node, keys[-1]))  # they belong to what follows this mapping
    items = [(k, node[k]) for k in wanted]
    comments = dict(node.ca.items)
    for k in list(node):
        del node[k]
    for i, (k, v) in enumerate(items):
        node.insert(i, k, v)
    node.ca.items.clear()
    node.ca.items.update(comments)
    for prev, key in pairwise(wanted):
        _add_lines(_tail_slot(node, prev), above.get(key, ""))
    if above.get(wanted[0]):  # a key moved first: its comments go between the mapping's own and it
        slots = node.ca.items.setdefault(wanted[0], [None, None, None, None])
        slots[1] = [_token(line) for line in above[wanted[0]].splitlines()] + (slots[1] or [])
    _add_lines(_tail_slot(node, wanted[-1]), after_all)


Slot = tuple[list[Any], int]  # a ruamel comment list and the index of the token in it


def _tail_slot(node: CommentedMap | CommentedSeq, key: Any) -> Slot:
    """Where ruamel keeps the comment that follows key's whole subtree."""
    value = node[key]
    if isinstance(value, CommentedMap) and value:
        return _tail_slot(value, list(value)[-1])
    if isinstance(value, CommentedSeq) and value:
        return _tail_slot(value, len(value) - 1)
    return node.ca.items.setdefault(key, [None, None, None, None]), 2 if isinstance(node, CommentedMap) else 0


def _cut_lines(slot: Slot) -> str:
    """Remove and return the full lines of the token at slot, leaving its end-of-line comment."""
    holder, i = slot
    token = holder[i]
    if not isinstance(token, CommentToken):
        return ""
    eol, _, lines = token.value.partition("\n")
    if not lines:
        return ""
    if eol.strip():
        token.value = eol + "\n"
    else:
        holder[i] = None
    return str(lines)


def _add_lines(slot: Slot, lines: str) -> None:
    if not lines:
        return
    holder, i = slot
    if isinstance(holder[i], CommentToken):
        holder[i].value += lines
    else:
        holder[i] = CommentToken("\n" + lines, CommentMark(0), None)


def _token(line: str) -> CommentToken:
    text = line.lstrip()
    return CommentToken(text + "\n", CommentMark(len(line) - len(text) if text else 0), None)

"""Reading YAML safely into plain data, keeping every key's and value's position.

The rest of cesync sees plain dicts, lists and scalars; a :class:`Positions` table
maps a data path (the tuple pydantic uses for ``loc``) to its 1-based line and
column, so any problem found later can be reported as ``file:line:col``.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from .errors import Problem

__all__ = ["MAX_FILE_BYTES", "MAX_NODES", "Document", "Path_", "Positions", "load_text", "read_text"]

MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_NODES = 200_000  # beyond this a document is an alias bomb or a mistake

Path_ = tuple[str | int, ...]


@dataclass
class Positions:
    """Line and column (1-based) of keys and values, by data path."""

    keys: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    values: dict[Path_, tuple[int, int]] = field(default_factory=dict)

    def at(self, path: Path_, *, key: bool = False) -> tuple[int, int]:
        """The closest known position: the path itself, else its nearest parent."""
        p = tuple(path)
        while True:
            table = (self.keys, self.values) if key else (self.values, self.keys)
            for t in table:
                if p in t:
                    return t[p]
            if not p:
                return (1, 1)
            p = p[:-1]


@dataclass
class Document:
    file: str
    data: Any
    positions: Positions

    def problem(self, path: Path_, message: str, *, key: bool = False) -> Problem:
        line, col = self.positions.at(path, key=key)
        return Problem(self.file, line, col, message)


class _Bomb(Exception):
    pass


class _BadText(Exception):
    def __init__(self, path: Path_) -> None:
        self.path = path


def read_text(path: Path, display: str) -> str | Problem:
    """A file's text, or a Problem for what makes it unreadable as text."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return Problem(display, 1, 1, f"file is {size} bytes; the limit is {MAX_FILE_BYTES}")
        raw = path.read_bytes()
    except OSError as exc:
        return Problem(display, 1, 1, f"cannot read: {exc.strerror or exc}")
    if b"\0" in raw:
        return Problem(display, 1, 1, "binary file (contains NUL bytes); expected UTF-8 text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return Problem(display, line, col, f"not UTF-8 text (byte 0x{raw[exc.start]:02x}); save the file as UTF-8")


def load_text(text: str, display: str) -> Document | Problem:
    """Parse one YAML document; a Problem (positioned) instead of any exception."""
    yaml = YAML(typ="rt", pure=True)
    yaml.allow_duplicate_keys = False
    try:
        node = yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        what = " ".join(s for s in (exc.context, exc.problem) if s) or "invalid YAML"
        if "found character '\\t'" in what:
            what = "tab character: YAML indents with spaces only"
        return Problem(display, line, col, f"invalid YAML: {_squash(what)}")
    except YAMLError as exc:
        return Problem(display, 1, 1, f"invalid YAML: {_squash(str(exc))}")
    except RecursionError:
        return Problem(display, 1, 1, "invalid YAML: nested too deeply")
    positions = Positions()
    try:
        data = _plain(node, (), positions, [0])
    except _Bomb:
        return Problem(display, 1, 1, f"document expands to more than {MAX_NODES} nodes (YAML alias bomb?)")
    except _BadText as exc:
        line, col = positions.at(exc.path)
        return Problem(display, line, col, "text with an unpaired surrogate escape (e.g. \\ud800) is not valid Unicode")
    except RecursionError:
        return Problem(display, 1, 1, "document nested too deeply")
    return Document(display, data, positions)


def _squash(text: str) -> str:
    return " ".join(text.split())


def _plain(node: Any, path: Path_, pos: Positions, count: list[int]) -> Any:
    count[0] += 1
    if count[0] > MAX_NODES:
        raise _Bomb
    if isinstance(node, CommentedMap):
        out: dict[str, Any] = {}
        for k, v in node.items():
            key = _text(str(k), (*path, str(k)))
            sub = (*path, key)
            try:
                kl, kc, vl, vc = node.lc.data[k]
                pos.keys.setdefault(sub, (kl + 1, kc + 1))
                pos.values.setdefault(sub, (vl + 1, vc + 1))
            except (KeyError, TypeError, ValueError):
                pass
            out[key] = _plain(v, sub, pos, count)
        return out
    if isinstance(node, CommentedSeq):
        items = []
        for i, v in enumerate(node):
            sub = (*path, i)
            try:
                line, col = node.lc.data[i]
                pos.values.setdefault(sub, (line + 1, col + 1))
            except (KeyError, TypeError, ValueError, IndexError):
                pass
            items.append(_plain(v, sub, pos, count))
        return items
    value = _scalar(node)
    return _text(value, path) if isinstance(value, str) else value


def _text(value: str, path: Path_) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _BadText(path) from None
    return value


def _scalar(node: Any) -> Any:
    if node is None or isinstance(node, bool):
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    if isinstance(node, (datetime.date, datetime.datetime)):
        return node.isoformat()
    if isinstance(node, (bytes, bytearray)):
        return node.decode("latin-1")
    return str(node)

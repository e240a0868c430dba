"""Reading YAML and JSON safely into plain data: the one loader of every document cesync reads.

The repo's files (:func:`load_text`, keeping every key's and value's position) and the
documents inside resource bodies, the app's own copies included (:func:`load_data`: an
OpenAPI schema a console user wrote), are read under the same limits: size, nodes (an
alias counts as the nodes it stands for), and depth. The limits are checked on the parser's
event stream before any tree is built (:func:`over_limits`, a loop, no recursion), or, on the
libyaml path, by the walk from libyaml's node graph (aliases shared, so as small as the text)
to plain data, which counts as over_limits does and stops at either limit; so an alias bomb
or a document nested 30,000 deep is refused at once, and everything after the load can walk
the data recursively: nothing deeper than :data:`MAX_DEPTH` gets that far.

The rest of cesync sees plain dicts, lists and scalars; a :class:`Positions` table
maps a data path (the tuple pydantic uses for ``loc``) to its 1-based line and
column, so any problem found later can be reported as ``file:line:col``.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from sys import intern
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.resolver import VersionedResolver
from yaml import YAMLError as PyYAMLError
from yaml.nodes import MappingNode, ScalarNode, SequenceNode
from yaml.resolver import BaseResolver

try:
    from yaml._yaml import CParser

    LIBYAML = True
except ImportError:  # PyYAML built without libyaml: every document takes ruamel's path
    CParser, LIBYAML = object, False  # type: ignore[misc, assignment]

from .. import yamlconfig
from ..api.jsonvalue import JsonValueError, check_depth
from ..api.jsonvalue import loads as json_loads
from ..errors import Problem
from . import parsecache
from .limits import BOMB_SAID, DEEP_SAID, MAX_DEPTH, MAX_NODES, TEXT_PER_NODE, Unreadable, check_json_nodes, over_limits
from .yamlwords import in_words

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "SLOW",
    "Document",
    "Path_",
    "Positions",
    "Unreadable",
    "fast_load",
    "load_data",
    "load_text",
    "over_limits",
    "read_text",
    "text_digest",
]

MAX_FILE_BYTES = 5 * 1024 * 1024

Path_ = tuple[str | int, ...]


class Positions:
    """Line and column (1-based) of keys and values, by data path. Built on first use from a callable
    (the round-trip parse of the text): a file that has no problem never pays for its positions."""

    def __init__(
        self,
        keys: dict[Path_, tuple[int, int]] | None = None,
        values: dict[Path_, tuple[int, int]] | None = None,
        *,
        later: Callable[[], Positions] | None = None,
    ) -> None:
        self._keys, self._values, self._later = keys or {}, values or {}, later

    def _built(self) -> None:
        if self._later is not None:
            later, self._later = self._later, None
            built = later()
            self._keys, self._values = built._keys, built._values

    @property
    def keys(self) -> dict[Path_, tuple[int, int]]:
        self._built()
        return self._keys

    @property
    def values(self) -> dict[Path_, tuple[int, int]]:
        self._built()
        return self._values

    def at(self, path: Path_, *, key: bool = False) -> tuple[int, int]:
        """The closest known position: the path itself, else its nearest parent."""
        p = tuple(path)
        keys, values = self.keys, self.values
        while True:
            table = (keys, values) if key else (values, keys)
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
    text: str = field(default="", repr=False, compare=False)  # what was parsed: a lint of the text reads no file again
    digest: bytes = b""  # of the text (what a render of it is cached by)

    def problem(self, path: Path_, message: str, *, key: bool = False) -> Problem:
        line, col = self.positions.at(path, key=key)
        return Problem(self.file, line, col, message)


class _Bomb(Exception):
    pass


class _BadText(Exception):
    def __init__(self, path: Path_) -> None:
        self.path = path


def read_text(path: Path, display: str, *, root: Path | None = None, folder: Path | None = None) -> str | Problem:
    """A file's text, or a Problem for what makes it unreadable as text.

    With ``root`` (a resolved repo folder), a file that resolves outside it (a symlink
    out of the repo, or through a symlinked folder) is refused instead of read. ``folder``:
    path.parent already resolved (by the caller, once for the files of one folder).
    """
    if root is not None and not resolved(path, folder).is_relative_to(root):
        return Problem(
            display, 1, 1, "resolves outside the repo (a symlink?); cesync reads only files inside the repo: copy the file in"
        )
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


def resolved(path: Path, folder: Path | None = None) -> Path:
    """path.resolve(); given its folder resolved, only the file itself is looked at (a file
    that is no symlink resolves to its resolved folder / its name), not every folder above it
    again (the resolve of each of 1,000 files was most of reading them)."""
    if folder is None or path.name in ("", ".", ".."):
        return path.resolve()
    try:
        link = stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        link = True  # let resolve() decide, as without folder
    return path.resolve() if link else folder / path.name


def load_text(text: str, display: str) -> Document | Problem:
    """Parse one YAML document; a Problem (positioned) instead of any exception.

    The common document goes through libyaml (:func:`fast_load`) and gets its
    positions only if something asks for them; anything the fast path does not
    handle exactly like ruamel (and every error) takes the round-trip parse.
    """
    data = fast_load(text)
    digest = text_digest(text)
    if data is not SLOW:
        # a partial, not a lambda: a Document pickles (repo/parallel.py sends those a child parsed)
        return Document(display, data, Positions(later=functools.partial(_positions, text, display)), text, digest)
    doc = _load_rt(text, display)
    if isinstance(doc, Document):
        doc.digest = digest
    return doc


def text_digest(text: str) -> bytes:
    """What a text is known by in caches: its BLAKE2b digest."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).digest()


def _positions(text: str, display: str) -> Positions:
    doc = _load_rt(text, display)
    return doc.positions if isinstance(doc, Document) else Positions()


def _load_rt(text: str, display: str) -> Document | Problem:
    if (over := over_limits(text)) is not None:
        return Problem(display, 1, 1, over)
    yaml = yamlconfig.positioned()
    try:
        node = yaml.load(text)
    except MarkedYAMLError as exc:
        what, mark = in_words(exc)
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        return Problem(display, line, col, f"invalid YAML: {what}")
    except YAMLError as exc:
        return Problem(display, 1, 1, f"invalid YAML: {_squash(str(exc))}")
    except RecursionError:
        return Problem(display, 1, 1, "invalid YAML: nested too deeply")
    except Exception as exc:  # ruamel.yaml's constructors fail on some plain scalars ('._', '0b_'): never a traceback
        said = f"{type(exc).__name__}: {_squash(str(exc))}"
        return Problem(display, 1, 1, f"invalid YAML: a plain value looks like a number or date but is none ({said}); quote it")
    positions = Positions()
    try:
        data = _plain(node, (), positions, [0])
    except _Bomb:
        return Problem(display, 1, 1, BOMB_SAID)
    except _BadText as exc:
        line, col = positions.at(exc.path)
        return Problem(display, line, col, "text with an unpaired surrogate escape (e.g. \\ud800) is not valid Unicode")
    except RecursionError:
        return Problem(display, 1, 1, "document nested too deeply")
    return Document(display, data, positions, text)


@functools.partial(parsecache.cached, b"d")  # the limits checked once per text, not on every run
def load_data(text: str) -> Any:
    """One JSON or YAML document as plain data, under the limits of the repo's files; Unreadable if not.

    For documents inside resource bodies, whoever wrote them (the repo, or a console user
    writing the app): no position is kept. JSON goes to the JSON parser (its depth and size
    checked after, without recursion); anything else through :func:`over_limits` first.
    """
    if len(text) > MAX_FILE_BYTES:
        raise Unreadable(f"document is {len(text)} characters; the limit is {MAX_FILE_BYTES}")
    if text.lstrip().startswith(("{", "[")):
        try:
            data = json_loads(text)
        except JsonValueError as exc:
            if "nested deeper" in str(exc):
                raise Unreadable(DEEP_SAID) from None
        else:
            check_json_nodes(data)
            return data
    data, nodes = _fast(text)
    if data is not SLOW and nodes <= MAX_NODES:
        return data  # libyaml read it, within the depth: over_limits would find nothing (one parse, not two)
    if (over := over_limits(text)) is not None:
        raise Unreadable(over)
    if data is not SLOW:
        return data
    try:
        data = yamlconfig.safe().load(text)
    except MarkedYAMLError as exc:  # in the words a repo file's mistake is said in
        what, mark = in_words(exc)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise Unreadable(f"not valid JSON or YAML{where}: {what}") from None
    except YAMLError as exc:
        raise Unreadable(f"not valid JSON or YAML: {_squash(str(exc))}") from None
    except RecursionError:  # over_limits passes what its parser cannot read, for ruamel's message
        raise Unreadable(DEEP_SAID) from None
    try:
        check_depth(data)
    except JsonValueError:
        raise Unreadable(DEEP_SAID) from None
    return data


def _squash(text: str) -> str:
    return " ".join(text.split())


def _plain(node: Any, path: Path_, pos: Positions, count: list[int]) -> Any:
    count[0] += 1 + (len(node) // TEXT_PER_NODE if isinstance(node, str) else 0)
    if count[0] > MAX_NODES:
        raise _Bomb
    if isinstance(node, CommentedMap):
        out: dict[str, Any] = {}
        for k, v in node.items():
            count[0] += len(str(k)) // TEXT_PER_NODE
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


# --- the fast path: libyaml parses, this module resolves (YAML 1.2) ------------------------
#
# libyaml (PyYAML's C parser) builds the node graph; plain scalars come back unresolved
# and are resolved here with the YAML 1.2 core rules ruamel applies: only true/false are
# booleans (yes/no/on/off stay strings), no sexagesimal numbers. Everything outside the
# common subset (explicit tags, merge keys, timestamps, octal/hex/underscored numbers,
# non-string keys, duplicate keys, %YAML directives, any parse error) returns SLOW so
# the caller uses ruamel and gets exactly its data or its error message.

SLOW: Any = object()
_PLAIN = "?"  # the tag our resolver gives plain scalars without an explicit tag
_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_NULL, _BOOL, _INT, _FLOAT = (f"tag:yaml.org,2002:{t}" for t in ("null", "bool", "int", "float"))
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_POINT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\.[0-9]+(?:[eE][-+]?[0-9]+)?")
_BLOCK_HEADER_COMMENT = re.compile(r"[|>][-+0-9]*#")  # hypothesis found this one: see tests/core/test_yamlfile.py
_RESOLVER = VersionedResolver()  # ruamel's own rules decide what a plain scalar is


class _Slow(Exception):
    pass


class _NodeLoader(CParser, BaseResolver):
    def __init__(self, text: str) -> None:
        CParser.__init__(self, text)
        BaseResolver.__init__(self)

    # libyaml calls these three for every node: kept to what BaseResolver does without
    # path resolvers (cesync adds none), at the cost of one call each.
    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is ScalarNode:
            return _PLAIN if implicit[0] else _STR
        return _MAP if kind is MappingNode else _SEQ

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass


@functools.partial(parsecache.cached, b"y", uncachable=SLOW)  # from the parse cache when it knows the text
def fast_load(text: str) -> Any:
    """The plain data of one YAML document as ruamel (YAML 1.2) reads it, or SLOW."""
    return _fast(text)[0]


def _fast(text: str) -> tuple[Any, int]:
    """fast_load's data (or SLOW), and its nodes as over_limits counts them (a key is a node of its own)."""
    if not LIBYAML or ("%" in text and re.search(r"^%", text, re.M)):
        return SLOW, 0  # a directive (%YAML 1.1 changes the rules)
    if "\t" in text:
        return SLOW, 0  # libyaml and ruamel disagree on tabs as white space ('a: \t' is null to one, an error to the other)
    if _BLOCK_HEADER_COMMENT.search(text):
        return SLOW, 0  # 'a: >#': a comment without a space before it is an error to ruamel, '' to libyaml
    loader = _NodeLoader(text)
    try:
        node = loader.get_single_node()
        return (None, 0) if node is None else _data(node)
    except (_Slow, PyYAMLError, RecursionError, UnicodeError, ValueError):
        return SLOW, 0
    finally:
        loader.dispose()


def _data(root: Any) -> tuple[Any, int]:
    """The node graph as plain data, and its nodes as over_limits counts them (each alias as what
    it names, expanded here too: count plus one per key); _Slow for anything outside the common subset.

    One closure over a local counter: this walk meets every node of every document
    (most of them scalars, handled inline), so it avoids a call per scalar.
    """
    count = keys = 0

    def scalar(node: Any) -> Any:
        nonlocal count
        value = node.value
        count += 1 + len(value) // TEXT_PER_NODE
        if count > MAX_NODES:
            raise _Slow
        tag = node.tag
        if tag == _PLAIN:
            return _plain_scalar(value)
        if tag != _STR or not (value or node.style):
            raise _Slow  # an explicit tag; or an empty plain one ('a: !' is null to ruamel, '' to libyaml)
        value.isascii() or value.encode("utf-8")  # an unpaired surrogate: ruamel reports it
        return value

    def walk(node: Any, depth: int = 1) -> Any:
        nonlocal count, keys
        kind = node.__class__
        if kind is ScalarNode:
            return scalar(node)
        count += 1
        if count > MAX_NODES or depth > MAX_DEPTH:
            raise _Slow  # ruamel's path says which limit (over_limits)
        if kind is MappingNode:
            if node.tag != _MAP:
                raise _Slow
            out: dict[str, Any] = {}
            keys += len(node.value)
            for key_node, value_node in node.value:
                tag = key_node.tag
                if key_node.__class__ is not ScalarNode or (tag != _PLAIN and tag != _STR):
                    raise _Slow
                key = key_node.value
                count += len(key) // TEXT_PER_NODE
                if key in out or (tag == _PLAIN and _plain_scalar(key).__class__ is not str):
                    raise _Slow  # duplicate keys are ruamel's error; non-string keys its spelling
                key.isascii() or key.encode("utf-8")  # ASCII holds no surrogate: no copy of each key to check
                # Keys repeat across documents ('type', 'description'): one string each, not
                # one per occurrence (a third of a 10,000-tool plan's parsed data).
                out[intern(key)] = scalar(value_node) if value_node.__class__ is ScalarNode else walk(value_node, depth + 1)
            return out
        if kind is SequenceNode and node.tag == _SEQ:
            return [scalar(v) if v.__class__ is ScalarNode else walk(v, depth + 1) for v in node.value]
        raise _Slow

    data = walk(root)
    return data, count + keys


@functools.lru_cache(maxsize=8192)
def _plain_scalar(value: str) -> Any:
    tag = _implicit_tag(value)
    if tag == _STR:
        value.encode("utf-8")  # an unpaired surrogate: ruamel reports it
        return value
    if tag == _NULL:
        return None
    if tag == _BOOL:
        return value in ("true", "True", "TRUE")
    if tag == _INT and _DECIMAL.fullmatch(value):
        return int(value)
    if tag == _FLOAT and _POINT.fullmatch(value):
        return float(value)
    raise _Slow  # numbers in other spellings, .inf/.nan, timestamps, merge keys, '='


def _implicit_tag(value: str) -> str:
    """ruamel's VersionedResolver.resolve for a plain scalar, from its YAML 1.2 table.

    The table (first character -> [(tag, regexp)]) is read once instead of on every
    call, which spent most of its time finding out which YAML version applies.
    """
    table = _resolver_table()
    for tag, regexp in (*table.get(value[0] if value else "", ()), *table.get(None, ())):
        if regexp.match(value):
            return str(tag)
    return _STR


@functools.cache
def _resolver_table() -> dict[str | None, list[tuple[str, Any]]]:
    return dict(_RESOLVER.versioned_resolver)

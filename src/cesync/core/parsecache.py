"""What parsing a text gave, by the text's digest, kept between runs (pure: the store is handed in).

Parsing is most of reading a large repo (YAML files, the OpenAPI documents they hold or
include, the Python code of each function tool), and a repo changes a few files between
two runs. A parse is a function of the text alone, so its result can be looked up by a
digest of the text: the data comes back exactly as the parse made it (marshal keeps
types, order and interned keys), a fresh copy each time, since callers change what they
are given. Only plain data is kept (dicts, lists, strings, numbers, booleans, None,
tuples); anything else is parsed again each run.

The repo layer (repo/cache.py) reads the store from disk, checks that this machine wrote
it, and writes back what a run used; this module never touches a file.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import marshal
from collections.abc import Callable
from typing import Any

__all__ = ["MISSING", "ParseCache", "cached", "current", "install"]

MISSING: Any = object()
MARSHAL_VERSION = 4


class ParseCache:
    """Parsed results by (what parsed it, digest of the text)."""

    def __init__(self, entries: dict[bytes, bytes] | None = None) -> None:
        self._old = entries or {}
        self.used: dict[bytes, bytes] = {}  # what this run read or made: what the next run keeps
        self.hits = 0
        # the parsers this run asked (the key's first byte): the entries of another command's
        # parsers (validate's credential scan, which plan never asks for) are kept as they were
        self._asked: set[int] = set()
        self._only = False
        # the sensitive values of the run (withhold): no entry holding one is kept, and no text
        # holding one is looked up (its key, a digest of the text, would let a reader of the file
        # check guesses of the value)
        self._secrets: tuple[str, ...] = ()
        self._needles: tuple[bytes, ...] = ()
        self._withheld: frozenset[bytes] = frozenset()
        self._replaced = False  # an entry put under a key the store holds with another value

    @staticmethod
    def key(parser: bytes, text: str) -> bytes:
        """parser: one byte per parse (b"y" YAML, b"p" Python function names)."""
        return parser + hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).digest()

    def get(self, key: bytes) -> Any:
        """A fresh copy of what key's parse gave, or MISSING."""
        self._asked.add(key[0])
        raw = self.used.get(key) or self._old.get(key)
        if raw is None or key in self._withheld:
            return MISSING
        try:
            value = marshal.loads(raw)
        except (ValueError, EOFError, TypeError):
            return MISSING
        self.used[key] = raw
        self.hits += 1
        return value

    def put(self, key: bytes, value: Any) -> None:
        """Keep value for key (not kept if it is not plain data)."""
        with contextlib.suppress(ValueError):  # a type marshal does not write (a date YAML read): parsed again
            raw = marshal.dumps(value, MARSHAL_VERSION)
            if not self._holds(raw):
                self.used[key] = raw
                self._replaced |= self._old.get(key, raw) != raw

    def keep(self, keys: list[bytes]) -> None:
        """Leave the entries of keys for the next run, as if this one had used them (a whole
        result was taken instead: its parts are what a run after a small change needs)."""
        for key in keys:
            raw = self._old.get(key)
            if raw is not None and key not in self._withheld:
                self.used.setdefault(key, raw)

    def withhold(self, values: list[str]) -> None:
        """Keep nothing that holds one of values (the sensitive variables' values: a document or
        code a ${NAME} was substituted into), neither what this run made nor what the store held
        (a variable marked sensitive since): the cache is a file CI keeps and hands to other jobs."""
        secrets = tuple(sorted({v for v in values if v}))
        if secrets == self._secrets:
            return
        self._secrets, self._needles = secrets, tuple(v.encode("utf-8", "surrogatepass") for v in secrets)
        self.used = {k: v for k, v in self.used.items() if not self._holds(v)}
        self._withheld = frozenset(k for k, v in self._old.items() if self._holds(v))

    def withholds(self, text: str) -> bool:
        """Whether text holds a withheld value: parsed without the cache."""
        return any(secret in text for secret in self._secrets)

    def _holds(self, raw: bytes) -> bool:
        return any(needle in raw for needle in self._needles)  # marshal writes a text as its UTF-8

    def since(self, before: frozenset[bytes]) -> dict[bytes, bytes]:
        """What this run used or made that is not in before (the keys used at some point): what a
        process forked to parse part of the run hands to its parent (take)."""
        return {k: v for k, v in self.used.items() if k not in before}

    def take(self, entries: dict[bytes, bytes]) -> None:
        """Keep what another process of this run used or made (since) as if this one had."""
        for key, raw in entries.items():
            self._asked.add(key[0])
            if not self._holds(raw):
                self.used.setdefault(key, raw)

    def stored(self) -> frozenset[bytes]:
        """The keys the store held when it was handed in."""
        return frozenset(self._old)

    def keep_only(self, keys: frozenset[bytes] | set[bytes]) -> None:
        """What this run leaves for the next: keys alone (a store used as a set)."""
        self.used = dict.fromkeys(keys, b"")
        self._only = True

    def kept(self) -> dict[bytes, bytes]:
        """What the next run finds: what this run used, and the entries of the parsers it never asked."""
        if self._only:
            return self.used
        others = {
            k: v for k, v in self._old.items() if k[0] not in self._asked and k not in self.used and k not in self._withheld
        }
        return {**self.used, **others} if others else self.used

    @property
    def changed(self) -> bool:
        """Whether the store on disk would differ from what the next run is to find."""
        return self._replaced or self.kept().keys() != self._old.keys()


_current: ParseCache | None = None


def cached(parser: bytes, parse: Callable[[str], Any], uncachable: Any = MISSING) -> Callable[[str], Any]:
    """parse, looked up first in the installed cache (if any) by parser and the text's digest; a
    result that is uncachable (a parser's "ask another parser") is not kept."""

    def lookup(text: str) -> Any:
        cache = _current
        if cache is None or cache.withholds(text):
            return parse(text)
        key = cache.key(parser, text)
        found = cache.get(key)
        if found is MISSING:
            found = parse(text)
            if found is not uncachable:
                cache.put(key, found)
        return found

    functools.update_wrapper(lookup, parse)
    return lookup


def install(cache: ParseCache | None) -> None:
    """The cache the parsers of this process consult (None: none)."""
    global _current
    _current = cache


def current() -> ParseCache | None:
    return _current

"""Documents a client wrote, read under limits (the emulator's own: it shares no code with cesync).

What a client sends is read here: a request's JSON body, a tool's or toolset's OpenAPI schema
(JSON or YAML text inside a resource), the files of an imported archive. Google's sources are
silent on CES's limits for these; protobuf's JSON parser (``json_format.Parse``) refuses a
message nested more than 100 levels (its ``max_recursion_depth``), so CES refuses at least as
much in its bodies. The emulator holds every document to the limits cesync holds the repo's
documents to (core/limits.py: 200 levels, 200,000 nodes), so what cesync writes it reads, and
what it refuses is refused before any tree is built:

- YAML is checked on the parser's event stream in one loop (the parser is a state machine, not
  a recursion), an alias counting as the nodes and levels of what it names: ten levels of ten
  aliases (10^10 nodes once expanded, which a walk of the schema would visit) are refused
  after counting, not expanded;
- JSON's nesting is counted on its brackets outside strings, before ``json.loads`` (which
  recurses once per level and fails with RecursionError past the interpreter's limit).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ruamel.yaml import YAML

__all__ = ["MAX_DEPTH", "MAX_NODES", "TEXT_PER_NODE", "TooLarge", "load_json", "load_yaml"]

MAX_DEPTH = 200
MAX_NODES = 200_000
TEXT_PER_NODE = 256  # a long string aliased many times is large once expanded: it counts per this many characters
DEEP_SAID = f"document nested deeper than {MAX_DEPTH} levels"
BOMB_SAID = f"document expands to more than {MAX_NODES} nodes (a YAML alias bomb?)"

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


class TooLarge(ValueError):
    """A document over a limit; str() says which."""


def load_json(text: str | bytes) -> Any:
    """JSON as data; TooLarge when nested deeper than MAX_DEPTH, ValueError when not JSON."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub("", text)):
        depth += 1 if match.group() in "[{" else -1
        if depth > MAX_DEPTH:
            raise TooLarge(DEEP_SAID)
    return json.loads(text)


def load_yaml(text: str) -> Any:
    """YAML (or JSON) as data; TooLarge when over a limit, YAMLError when not YAML."""
    _check_events(text)
    return YAML(typ="safe", pure=True).load(text)


def _check_events(text: str) -> None:
    count = 0
    open_: list[list[Any]] = []  # per open collection: [anchor, count at its start, levels below it]
    sizes: dict[str, tuple[int, int]] = {}  # anchor -> (nodes, levels) of what it names
    for event in YAML(typ="safe", pure=True).parse(text):
        what = type(event).__name__
        if what in ("ScalarEvent", "AliasEvent"):
            if what == "ScalarEvent":
                nodes, levels = 1 + len(event.value) // TEXT_PER_NODE, 0
                if event.anchor:
                    sizes[event.anchor] = (nodes, 0)
            else:
                nodes, levels = sizes.get(event.anchor, (1, 0))
            count += nodes
            if open_:
                open_[-1][2] = max(open_[-1][2], levels)
            if len(open_) + levels > MAX_DEPTH:
                raise TooLarge(DEEP_SAID)
        elif what in ("SequenceStartEvent", "MappingStartEvent"):
            count += 1
            open_.append([event.anchor, count - 1, 0])
            if len(open_) > MAX_DEPTH:
                raise TooLarge(DEEP_SAID)
        elif what in ("SequenceEndEvent", "MappingEndEvent"):
            anchor, start, below = open_.pop()
            if anchor:
                sizes[anchor] = (count - start, below + 1)
            if open_:
                open_[-1][2] = max(open_[-1][2], below + 1)
        if count > MAX_NODES:
            raise TooLarge(BOMB_SAID)

"""The limits every document cesync reads is held to, checked without recursion (pure).

Size, nodes (an alias counts as the nodes it stands for) and depth: the repo's files and the
documents inside resource bodies, the app's own copies included (an OpenAPI schema a console
user wrote), are read under the same ones (core/yamlfile). They are checked on the parser's
event stream, in one loop, before any tree is built; anything deeper than :data:`MAX_DEPTH`
is refused there, so every recursive walk after the load (normalize, diff, the seal's copy,
printing) meets at most that many levels.
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml.error import YAMLError
from yaml import YAMLError as PyYAMLError

from .. import yamlconfig
from ..api.jsonvalue import MAX_DEPTH, JsonValueError, check_depth

try:
    from yaml._yaml import CParser

    LIBYAML = True
except ImportError:  # PyYAML built without libyaml: ruamel's parser reads the events
    CParser, LIBYAML = object, False  # type: ignore[misc, assignment]

__all__ = ["BOMB_SAID", "DEEP_SAID", "MAX_DEPTH", "MAX_NODES", "TEXT_PER_NODE", "Unreadable", "check_json_nodes", "over_limits"]

MAX_NODES = 200_000  # beyond this a document is an alias bomb or a mistake
# Text counts too, one node per this many characters: an alias of a long string repeated
# 10,000 times is a small file but gigabytes of data once expanded (JSON, digests, diffs).
TEXT_PER_NODE = 256
BOMB_SAID = f"document expands to more than {MAX_NODES} nodes (YAML alias bomb?)"
DEEP_SAID = f"document nested deeper than {MAX_DEPTH} levels"


class Unreadable(ValueError):
    """A document that is not JSON or YAML, or is over a limit; str() says what, for a person."""


def check_json_nodes(data: Any) -> None:
    """Unreadable when parsed JSON is deeper or larger than a YAML document may be (no recursion)."""
    try:
        check_depth(data)
    except JsonValueError:
        raise Unreadable(DEEP_SAID) from None
    count, stack = 0, [data]
    while stack:
        item = stack.pop()
        count += 1 + (len(item) // TEXT_PER_NODE if isinstance(item, str) else 0)
        if count > MAX_NODES:
            raise Unreadable(f"document has more than {MAX_NODES} nodes")
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def over_limits(text: str) -> str | None:
    """What limit a YAML (or JSON) text is over, read from its parser's events in one loop; None if none.

    Aliases count as the nodes and levels of what they name, so ten levels of ten aliases
    each (10^10 nodes once expanded) are refused after MAX_NODES events' worth of counting,
    before any tree is built or copied. A text the parser cannot read is None here: the
    loader that reads it says what is wrong, with its position.
    """
    count = 0
    open_: list[list[Any]] = []  # per open collection: [anchor, count at its start, depth below it]
    sizes: dict[str, tuple[int, int]] = {}  # anchor -> (nodes, levels) of what it names
    try:
        for event in _events(text):
            what = event.__class__.__name__
            if what == "ScalarEvent":
                nodes = 1 + len(event.value) // TEXT_PER_NODE
                count += nodes
                if event.anchor:
                    sizes[event.anchor] = (nodes, 0)
            elif what == "AliasEvent":
                nodes, levels = sizes.get(event.anchor, (1, 0))
                count += nodes
                if len(open_) + levels > MAX_DEPTH:
                    return DEEP_SAID
                if open_:
                    open_[-1][2] = max(open_[-1][2], levels)
            elif what in ("SequenceStartEvent", "MappingStartEvent"):
                count += 1
                open_.append([event.anchor, count, 0])
                if len(open_) > MAX_DEPTH:
                    return DEEP_SAID
            elif what in ("SequenceEndEvent", "MappingEndEvent"):
                anchor, start, below = open_.pop()
                if anchor:
                    sizes[anchor] = (count - start + 1, below + 1)
                if open_:
                    open_[-1][2] = max(open_[-1][2], below + 1)
            if count > MAX_NODES:
                return BOMB_SAID
    except PyYAMLError as exc:
        # libyaml's scanner stops at 1,000 open flow levels before it gives their events
        return DEEP_SAID if "maximum nesting depth" in str(exc) else None
    except (YAMLError, UnicodeError, ValueError):
        return None
    return None


def _events(text: str) -> Any:
    """The parser's events one by one: libyaml's when PyYAML has it, else ruamel's (both iterative)."""
    if not LIBYAML:
        yield from yamlconfig.safe().parse(text)
        return
    parser = CParser(text)
    try:
        while (event := parser.get_event()) is not None:
            yield event
    finally:
        parser.dispose()

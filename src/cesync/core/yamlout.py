"""Writing YAML for people: block style, | blocks for multi-line text, one-line {ref:} and {file:}."""

from __future__ import annotations

import functools
import math
import re
from io import StringIO
from typing import Any

from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, LiteralScalarString

from .. import yamlconfig

__all__ = ["to_yaml"]


def to_yaml(data: Any) -> str:
    fast = _fast_yaml(data)
    return fast if fast is not None else _ruamel_yaml(data)


def _ruamel_yaml(data: Any) -> str:
    yaml = yamlconfig.writer()
    buf = StringIO()
    yaml.dump(_literal(data), buf)
    return buf.getvalue()


def _literal(data: Any) -> Any:
    """Multi-line strings as | blocks where YAML can keep them exactly."""
    if isinstance(data, dict):
        if set(data) in ({"ref"}, {"file"}):  # {ref: tools/x} and {file: ../code/x.py} read best on one line
            flow = CommentedMap({k: _flow_quoted(v) for k, v in data.items()})
            flow.fa.set_flow_style()
            return flow
        return {_quoted(k): _literal(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_literal(v) for v in data]
    if isinstance(data, str) and "\n" in data and _block_safe(data):
        return LiteralScalarString(data)
    return _quoted(data)


# ruamel's emitter may put these line breaks raw into a single-quoted scalar with a single
# break, which every reader folds into a space ('\x85' came back as ' '); double quotes
# escape them (\N, \L, \P, \r), so the text is read back exactly.
_BREAKS = re.compile("[\r\x85\u2028\u2029]")


def _quoted(value: Any) -> Any:
    if isinstance(value, str) and _BREAKS.search(value):
        return DoubleQuotedScalarString(value)
    return value


def _flow_quoted(value: Any) -> Any:
    """ruamel writes '?x' and ': x' plain inside {ref: ...}, and reads neither back: quote them."""
    if isinstance(value, str) and value.startswith(("?", ":")):
        return DoubleQuotedScalarString(value)
    return _quoted(value)


def _block_safe(text: str) -> bool:
    lines = text.split("\n")
    return (
        not any(line != line.rstrip() for line in lines)
        and not text.startswith((" ", "\t"))
        and "\t" not in text
        and text.replace("\n", "").isprintable()  # every character printable or a line break; in C, not per character
    )


# --- the fast path -------------------------------------------------------------------------
#
# A plan shows every created body; ruamel's pure-Python emitter took ~8 ms a body. For the
# common shapes (a mapping of mappings, lists of scalars or mappings, ASCII scalars that
# are plain or need only single quotes, | blocks in mappings) the text ruamel writes with
# the settings above is written here directly; anything else returns None and ruamel
# writes it. tests/core/test_yamlout.py compares the two on generated data.


class _Slow(Exception):
    pass


_PRINTABLE = re.compile(r"[!-~](?:[ -~]*[!-~])?")  # printable ASCII, no space at either end
_INDICATORS = (*"#[]{}%@!&*|>'\"`,", "- ", "? ", ": ", "---", "...")
_FLOW_UNSAFE = re.compile(r"[,\[\]{}]")
_RESOLVER = VersionedResolver()


def _fast_yaml(data: Any) -> str | None:
    if not isinstance(data, dict) or not data:
        return None
    out: list[str] = []
    try:
        _mapping(data, 0, out)
    except (_Slow, RecursionError):
        return None
    return "".join(out)


def _mapping(data: dict[Any, Any], indent: int, out: list[str], first_prefix: str | None = None) -> None:
    pad = " " * indent
    for i, (key, value) in enumerate(data.items()):
        if not isinstance(key, str):
            raise _Slow
        head = (first_prefix if i == 0 and first_prefix is not None else pad) + _scalar(key, flow=False) + ":"
        _value(head, value, indent, out)


def _value(head: str, value: Any, indent: int, out: list[str]) -> None:
    if isinstance(value, dict):
        if not value:
            out.append(head + " {}\n")
        elif set(value) in ({"ref"}, {"file"}):
            ((k, v),) = value.items()
            out.append(f"{head} {{{k}: {_scalar(v, flow=True)}}}\n")
        else:
            out.append(head + "\n")
            _mapping(value, indent + 2, out)
    elif isinstance(value, list):
        if not value:
            out.append(head + " []\n")
            return
        out.append(head + "\n")
        dash = " " * (indent + 2) + "- "
        for item in value:
            if isinstance(item, dict) and item and set(item) not in ({"ref"}, {"file"}):
                _mapping(item, indent + 4, out, first_prefix=dash)
            elif isinstance(item, (dict, list)) or (isinstance(item, str) and "\n" in item):
                raise _Slow
            else:
                out.append(dash + _scalar(item, flow=False) + "\n")
    elif isinstance(value, str) and "\n" in value:
        out.append(head + " " + _block(value, indent + 2))
    elif value is None:
        out.append(head + "\n")
    else:
        out.append(head + " " + _scalar(value, flow=False) + "\n")


def _block(text: str, indent: int) -> str:
    if not _block_safe(text) or not text.isascii() or text.endswith("\n\n") or text.startswith("\n"):
        raise _Slow
    pad = " " * indent
    body = text[:-1] if text.endswith("\n") else text
    lines = "".join((pad + line if line else "") + "\n" for line in body.split("\n"))
    return ("|\n" if text.endswith("\n") else "|-\n") + lines


def _plain_float(text: str) -> bool:
    return str(_RESOLVER.resolve(ScalarNode, text, (True, False))) == "tag:yaml.org,2002:float"


def _plain_str(text: str) -> bool:
    return str(_RESOLVER.resolve(ScalarNode, text, (True, False))) == "tag:yaml.org,2002:str"


def _scalar(value: Any, *, flow: bool) -> str:
    if isinstance(value, str):
        text = _string(value, flow)
        if text is None:
            raise _Slow
        return text
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value).lower()  # ruamel's spelling of a finite float, plain where it reads back as one
        if math.isfinite(value) and _plain_float(text):
            return text
    raise _Slow  # None in a list, other types


@functools.lru_cache(maxsize=8192)  # keys and many values repeat across a plan's bodies
def _string(value: str, flow: bool) -> str | None:
    """A string as ruamel writes it in block context (flow: inside {ref: ...}), or None to let ruamel write it."""
    if value == "":
        return "''"
    if len(value) > 1000 or not _PRINTABLE.fullmatch(value) or value in ("-", "?", ":") or (flow and value[0] in "?:"):
        return None  # ruamel writes these (a '?x' or ':x' in {ref: ...} double-quoted, see _flow_quoted)
    special = value.startswith(_INDICATORS) or value.endswith(":") or ": " in value or " #" in value
    if not special and not (flow and _FLOW_UNSAFE.search(value)) and _plain_str(value):
        return value
    if flow or "'" in value:
        return None  # ruamel writes those in double quotes
    return f"'{value}'"  # '"' and '\\' are literal in single quotes

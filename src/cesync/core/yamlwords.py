"""The YAML parser's words for the mistakes people make, said as what to fix (pure).

ruamel's messages name its grammar ("while parsing a block mapping expected <block end>");
a person needs the line to change and how. Used for every document cesync reads: the repo's
files and the documents inside them (an included OpenAPI file).
"""

from __future__ import annotations

import re
from typing import Any

from ruamel.yaml.error import MarkedYAMLError

__all__ = ["in_words"]

# The parser's own words for the mistakes people make, said as what to fix; (pattern, words,
# whether the parser's context mark, where the construct began, is the better position).
PARSER_WORDS: tuple[tuple[re.Pattern[str], str, bool], ...] = tuple(
    (re.compile(pattern), words, at_context)
    for pattern, words, at_context in (
        (r"found character '\\t'", "tab character: YAML indents with spaces only", False),
        (
            r"while parsing a block (mapping|collection) expected <block end>",
            "this line is indented differently from the lines above it: the keys of one mapping, "
            "and the items of one list, start in the same column",
            False,
        ),
        (
            r"mapping values are not allowed here",
            "a ':' here starts a key where none can be: indent the line under its key, or quote a value that holds ': '",
            False,
        ),
        (r"while scanning a simple key could not find expected ':'", "this line is not 'key: value' (a missing ':'?)", True),
        (r"while parsing a flow mapping", "this '{' is not closed by a '}' (or a ',' is missing between its entries)", True),
        (r"while parsing a flow sequence", "this '[' is not closed by a ']' (or a ',' is missing between its items)", True),
        (r"while scanning a quoted scalar found unexpected end", "this quoted text has no closing quote", True),
        (
            r"while parsing a flow node expected the node content, but found '<stream end>'",
            "the file ends inside a '[' or '{' that is never closed: add its ']' or '}'",
            False,
        ),
        (r'found duplicate key "(.*)" with value', r"the key '\1' is written twice in one mapping: keep one", False),
        (
            r"found character '(.)' that cannot start any token",
            r"a value cannot start with '\1' (YAML reserves it): put the value in quotes",
            False,
        ),
    )
)


def _words(what: str) -> tuple[str, bool]:
    """The parser's message in the words of PARSER_WORDS (its own when none fits), and where to point."""
    for pattern, words, at_context in PARSER_WORDS:
        if found := pattern.search(what):
            return found.expand(words), at_context
    return what or "not YAML", False


def in_words(exc: MarkedYAMLError) -> tuple[str, Any]:
    """What went wrong in words, and the mark to point at (None when the parser gave none)."""
    what, at_context = _words(" ".join(" ".join(s for s in (exc.context, exc.problem) if s).split()))
    mark = (exc.context_mark or exc.problem_mark) if at_context else (exc.problem_mark or exc.context_mark)
    return what, mark

"""Text from outside made inert, one escaper per channel it leaves cesync by (pure).

What the app, a server, a forge or a tool said (descriptions, display names, version names,
``validationErrors``, error messages, tool answers) is data. Like a browser escaping a page's
text, each output channel has one escaper here, and the places where text leaves cesync use
it:

- :func:`terminal`: control characters (escape sequences, backspace, carriage return, bell)
  and the Unicode controls that reorder or hide text are shown as ``\\u001b``, never sent;
- :func:`ci_log`: no line can start a CI runner's command: GitHub's ``::name::`` (the runner
  reads it after leading white space), its older ``##[name]`` (anywhere in a line), Azure's
  ``##vso[``, GitLab's ``section_start:``/``section_end:`` markers;
- :func:`output`: both, over everything cesync prints (``cli.out``/``err``, log lines); it
  keeps cesync's own colours, the only escape sequences cesync writes;
- :func:`md_code`, :func:`md_cell` and :func:`md_fence`: Markdown, where outside text is only
  ever code that it cannot close, so HTML, images, links, emphasis and ``@mentions`` in it
  stay text;
- :func:`xml_text`: XML 1.0 (JUnit), where most control characters cannot be written at all,
  even escaped.

The escapes are valid inside a JSON string too (``\\u001b``), so the last pass over printed
text never breaks ``--format json``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # every command imports this module; only a JUnit report makes a tree
    import xml.etree.ElementTree as ET

__all__ = ["ci_log", "md_cell", "md_code", "md_fence", "one_line", "output", "terminal", "xml_text", "xml_tree"]

# C0 but tab and line feed, DEL, C1; and the Unicode format controls that reorder or hide
# text on screen ("Trojan Source", CVE-2021-42574): bidi embeddings, overrides and isolates,
# the marks, zero-width characters, line and paragraph separators, the byte-order mark; and the
# format characters no terminal draws that can carry text unseen: the soft hyphen, the Mongolian
# vowel separator, interlinear annotation marks, and the tag characters (U+E0000 block) that
# spell ASCII invisibly ("ASCII smuggling").
# A carriage return that ends a line (CRLF: a Windows file's diff, pull --dry-run) moves nothing
# the next line does not: only a lone one, which draws over its line, is shown.
_CONTROL = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069"
    "\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]|\r(?!\n)"
)
# The colours cesync's own text renderer writes (render/text.py COLORS and RESET): kept by output().
_OWN_SGR = re.compile("\x1b\\[(?:0|1|2|31|32|33)m")
# GitHub's runner trims a line's leading white space, Unicode's included (.NET TrimStart), before it looks for '::'.
_CI_COMMAND = re.compile(r"^([^\S\n]*)::|##(?=\[|vso\[)|section_(?=start:|end:)", re.M)
# Characters XML 1.0 cannot hold (https://www.w3.org/TR/xml/#charsets), surrogates included.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code > 0xFFFF:  # as JSON writes it, a surrogate pair: the escape stays valid in a JSON string
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def terminal(text: str) -> str:
    """text with every control character shown as an escape; tabs and line breaks (LF, CRLF) kept."""
    return _CONTROL.sub(_shown, text)


def one_line(text: str) -> str:
    """text on one line for a terminal: line breaks shown as \\n, the rest as terminal()."""
    return terminal(text.replace("\r\n", "\n").replace("\n", "\\n"))


def _ci_shown(match: re.Match[str]) -> str:
    if match.group(1) is not None:
        return match.group(1) + "\\u003a:"
    return "\\u0023#" if match.group().startswith("#") else "section\\u005f"


def ci_log(text: str) -> str:
    """text in which no line starts a CI runner's command (see the module's docstring)."""
    return _CI_COMMAND.sub(_ci_shown, text)


def output(text: str) -> str:
    """The last pass over what cesync prints: terminal() but for its own colours, then ci_log()."""
    if "\x1b" in text:
        parts = _OWN_SGR.split(text)
        colours = _OWN_SGR.findall(text)
        text = "".join(terminal(p) + (colours[i] if i < len(colours) else "") for i, p in enumerate(parts))
    else:
        text = terminal(text)
    return ci_log(text)


def md_code(text: str) -> str:
    """text as one inline code span it cannot close: the fence is one backtick longer than its
    longest run of them; line breaks shown as \\n (a blank line would end the paragraph, and
    the span with it, whatever its fence)."""
    text = one_line(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_cell(text: str) -> str:
    """md_code for a table cell: a '|' would end the cell even inside code (GFM), so it is escaped."""
    return md_code(text).replace("|", "\\|")


def md_fence(lines: list[str], info: str = "") -> list[str]:
    """lines as a fenced code block that no line of them can close (longer than any backtick run)."""
    shown = [terminal(line) for line in lines]
    longest = max((len(run) for line in shown for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{info}", *shown, fence]


def xml_text(text: str) -> str:
    """text XML 1.0 can hold: the characters it cannot shown as escapes (ElementTree escapes the rest)."""
    return _NOT_XML.sub(_shown, text)


def xml_tree(root: ET.Element) -> ET.Element:
    """Every text, tail and attribute of the tree through xml_text, in place; the tree returned."""
    for node in root.iter():
        if node.text:
            node.text = xml_text(node.text)
        if node.tail:
            node.tail = xml_text(node.tail)
        for key, value in node.attrib.items():
            node.attrib[key] = xml_text(value)
    return root

"""Hostile text as the app, a server, a forge or a tool could send it, and what each output
channel must show of it (issue #34 findings 3, 4 and 5): one place, for every test that
plants such text in a remote field and reads what cesync printed, commented or wrote.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

from hypothesis import strategies as st
from markdown_it import MarkdownIt

# What each channel has been driven by: terminal sequences that move the cursor, erase lines,
# link (OSC 8) or back up; CI workflow commands (GitHub, its legacy form, Azure, GitLab
# sections); Markdown and HTML that fake a paragraph, beacon, mention or close a block;
# GitLab quick actions;
# characters XML cannot hold; Unicode controls that reorder text.
FRAGMENTS = [
    "\x1b[1A\x1b[2K",
    "\x1b[2J\x1b[H",
    "\x1b]8;;https://attacker.example/\x07click\x1b]8;;\x07",
    "\x1b[8m",
    "\b\b\b\b",
    "\rPlan: 0 to create",
    "\x9b2J",
    "\x07",
    "\x01",
    "\u202e",
    "ok\U000e0020\U000e0061\U000e0070\U000e0070\U000e006c\U000e0079",  # Unicode tag characters: text no terminal draws
    "\xad\u180e\ufff9",
    "\n::add-mask::Apply\n",
    "\n  ::stop-commands::pwned\n",
    "\n\u00a0::error::forged\n",
    "::warning::x",
    "\n##[group]hidden\n",
    "x ##[endgroup]",
    "##vso[task.setvariable variable=a]b",
    "\nsection_start:1:fake\r\x1b[0Kfake",
    "\n\n**No changes.**\n\n",
    "<img src=https://attacker.example/beacon.png>",
    "![x](https://attacker.example/p.png)",
    "[click](https://attacker.example/)",
    "@org/team @someone",
    "```",
    "`",
    "|",
    "</details></summary>",
    "<!--",
    "# heading",
    "\n/merge\n",
    "\n/assign @attacker\n/approve",
]

hostile = st.builds(
    lambda a, frag, b: f"{a}{frag}{b}",
    st.text(st.characters(min_codepoint=32, max_codepoint=0x2FFF, exclude_categories=("Cs",)), max_size=12),
    st.sampled_from(FRAGMENTS),
    st.text(st.characters(min_codepoint=32, max_codepoint=0x2FFF, exclude_categories=("Cs",)), max_size=12),
)

OWN_COLOURS = re.compile("\x1b\\[(?:0|1|2|31|32|33)m")
CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]"
)


def terminal_and_ci_problems(text: str, *, colour: bool = False) -> list[str]:
    """What in printed text a terminal would interpret, or a CI runner would read as a command."""
    problems = []
    shown = OWN_COLOURS.sub("", text) if colour else text
    if found := CONTROL.search(shown):
        problems.append(f"control character {found.group()!r}")
    for line in text.split("\n"):
        if line.lstrip().startswith("::"):  # the GitHub runner trims white space, Unicode's too
            problems.append(f"workflow command line {line!r}")
        if "##[" in line or "##vso[" in line:
            problems.append(f"legacy workflow command {line!r}")
        if "section_start:" in line or "section_end:" in line:
            problems.append(f"GitLab section marker {line!r}")
    return problems


_MD = MarkdownIt("commonmark").enable("table")
# The HTML cesync's own comments hold: its marker, the collapsible sections, a cell's line break.
# A summary's text is cesync's words around a <code> whose content is HTML-escaped: no '<' of theirs.
OWN_HTML = re.compile(
    r"^(<!-- cesync-(plan|eval):[^\n]*-->|<details( open)?>|</details>|(<details( open)?>)?<summary>(<code>[^<]*</code>)?[^<]*</summary>|<br>)$"
)


def markdown_problems(text: str, *, no_changes: bool = False) -> list[str]:
    """What in a comment is Markdown or HTML that cesync did not write: every outside text is code.
    no_changes: cesync itself says **No changes.** (once)."""
    problems = []
    strong = [0]

    def walk(tokens: list) -> None:  # type: ignore[type-arg]
        for t in tokens:
            own = all(OWN_HTML.match(line.strip()) for line in t.content.strip().split("\n"))
            if t.type in ("html_inline", "html_block") and not own:
                problems.append(f"HTML {t.content!r}")
            if t.type in ("image", "link_open"):
                problems.append(f"{t.type} {t.attrs}")
            if t.type == "text" and "@" in t.content:
                problems.append(f"a mention outside code {t.content!r}")
            if t.type == "text" and "No changes." in t.content:
                strong[0] += 1
            if t.type == "heading_open" and t.tag != "h3":
                problems.append("a heading cesync did not write")
            walk(t.children or [])

    walk(_MD.parse(text))
    # GitLab runs a comment's quick actions (/merge, /approve) from lines that start with '/',
    # outside code blocks, for notes posted through its API too
    problems += [f"a GitLab quick action {line!r}" for line in text.split("\n") if line.startswith("/")]
    if strong[0] > int(no_changes):
        problems.append("a 'No changes.' cesync did not write")
    return problems


def parses_as_xml(text: str) -> bool:
    ET.fromstring(text.split("\n", 1)[1])
    return True


def parses_as_json(text: str) -> bool:
    json.loads(text)
    return True

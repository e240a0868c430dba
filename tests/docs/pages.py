"""The user docs as data: every page (README.md and docs/**/*.md) and the fenced examples on it.

An example is a fenced block. A `bash` block is a command example: tests/docs/test_examples.py
runs it. The HTML comment right above a block (invisible on the site) says how:

    <!-- docs-test: not run: REASON -->   what keeps it from running offline (a Google project, ...)
    <!-- docs-test: exit 2 -->            the exit status the block ends with (default 0)
    <!-- docs-test: in DIR -->            where it runs, inside the page's scratch folder
    <!-- docs-test: before: COMMAND -->   what the page takes for granted, run first (an app that exists)

Directives combine with `;` (`<!-- docs-test: in my-tools; exit 2 -->`); `not run:` comes last,
its reason being the rest of the comment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from markdown_it import MarkdownIt

from tests.conftest import ROOT

DOCS = ROOT / "docs"
DIRECTIVE = re.compile(r"<!--\s*docs-test:\s*(.*?)\s*-->", re.DOTALL)


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@dataclass(frozen=True)
class Example:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    directives: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{page_id(self.page)}:{self.line}"

    def directive(self, name: str) -> str | None:
        """The value of `name: VALUE` or `name VALUE`, '' for a bare `name`, None when absent."""
        for d in self.directives:
            if d == name:
                return ""
            if d.startswith((name + ":", name + " ")):
                return d[len(name) + 1 :].strip()
        return None


@cache
def examples(page: Path) -> tuple[Example, ...]:
    tokens = MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8"))
    found = []
    for i, token in enumerate(tokens):
        if token.type != "fence" or token.map is None:
            continue
        before = tokens[i - 1] if i else None
        said = DIRECTIVE.search(before.content) if before is not None and before.type == "html_block" else None
        head, run_not, reason = said.group(1).partition("not run:") if said else ("", "", "")
        directives = tuple(d.strip() for d in head.split(";") if d.strip())
        directives += (f"not run: {reason.strip()}",) if run_not else ()  # a reason may hold ';'
        lang = token.info.split()[0] if token.info else ""
        found.append(Example(page, token.map[0] + 1, lang, token.content, directives))
    return tuple(found)


def all_examples() -> list[Example]:
    return [e for page in pages() for e in examples(page)]

"""The resource files the docs show are in `cesync fmt`'s layout.

A new team copies them (the getting-started page writes them with `cat > FILE <<'EOF'`) and
then runs the pre-commit hook or `fmt --check` the CI page recommends: an example out of
layout fails their first commit with files they did not write.
"""

from __future__ import annotations

import re

import pytest

from cesync.api.kinds import KINDS, by_collection
from cesync.repo.fmt import format_text
from tests.docs.pages import examples, page_id, pages

HEADED = re.compile(r"\A# ([a-z]+)/[A-Za-z0-9_-]+\.yaml[^\n]*\n")  # a block that says which file it is
HEREDOC = re.compile(r"^cat > ([a-z]+)/[A-Za-z0-9_-]+\.yaml <<'EOF'\n(.*?)^EOF$", re.M | re.S)


def _shown() -> list[tuple[str, str, str]]:
    """(where, collection, text) of every resource file a page shows or writes."""
    found = []
    for page in pages():
        for e in examples(page):
            if e.lang == "yaml" and (m := HEADED.match(e.text)):
                found.append((e.where, m.group(1), e.text))
            if e.lang == "bash":
                found += [(e.where, m.group(1), m.group(2)) for m in HEREDOC.finditer(e.text)]
    return [(w, c, t) for w, c, t in found if by_collection(c) is not None]


SHOWN = _shown()


def test_the_docs_show_files_of_several_kinds() -> None:
    assert {by_collection(c).name for _, c, _ in SHOWN} >= {"tool", "toolset", "agent", "guardrail"}  # type: ignore[union-attr]
    assert any(w.startswith(page_id(pages()[0]).replace("README.md", "docs/getting-started")) for w, _, _ in SHOWN)


@pytest.mark.parametrize(("where", "collection", "text"), SHOWN, ids=[w for w, _, _ in SHOWN])
def test_a_file_the_docs_show_is_in_fmts_layout(where: str, collection: str, text: str) -> None:
    kind = by_collection(collection)
    assert kind is not None and kind.name in KINDS
    assert format_text(text, kind.model) == text, f"{where}: 'cesync fmt' would rewrite this {kind.name} file"

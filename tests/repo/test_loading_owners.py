"""The owners the repo's files declare of what they reference (loading.declared_owners)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.api.kinds import KINDS
from cesync.core.yamlfile import Document, load_text
from cesync.repo.loading import SourceFile, declared_owners
from cesync.repo.repo import load_repo
from tests.helpers import make_repo


def _file(text: str, rid: str = "a") -> SourceFile:
    doc = load_text(text, f"agents/{rid}.yaml")
    assert isinstance(doc, Document), doc
    return SourceFile(KINDS["agent"], rid, Path(f"agents/{rid}.yaml"), doc)


def test_an_owner_is_found_however_its_key_is_written() -> None:
    files = [
        _file("tools:\n  - {ref: tools/t1, owner: team-a}\n", "a"),
        _file('tools:\n  - {ref: tools/t2, "\\x6fwner": team-b}\n', "b"),  # the key escaped: no "owner" in the text
        _file("tools:\n  - {ref: tools/t3}\ndescription: nobody's\n", "c"),
    ]
    assert declared_owners(files) == {"tool/t1": ("agents/a.yaml", "team-a"), "tool/t2": ("agents/b.yaml", "team-b")}


SPELLINGS = ["owner", '"owner"', "'owner'", '"\\x6fwner"', '"ow\\u006eer"', "'own er'"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([None, *SPELLINGS]), st.booleans()), max_size=4), st.booleans())
def test_the_text_leaves_out_only_files_without_an_owner(items: list[tuple[str | None, bool]], nested: bool) -> None:
    """Skipping a file whose text cannot hold the key finds what walking every file finds."""
    refs = [
        ", ".join(["ref: tools/t1", *([f"{owner}: team"] if owner else []), *(["other: x"] if other else [])])
        for owner, other in items
    ]
    lines = [f"  - toolset: {{{r}}}" if nested else f"  - {{{r}}}" for r in refs]
    f = _file("tools:\n" + ("\n".join(lines) if lines else "  []") + "\n")
    blind = replace(f, doc=replace(f.doc, text=""))  # the text unknown: every file is walked
    assert declared_owners([f]) == declared_owners([blind])


@pytest.mark.parametrize(
    "written",
    [
        "tools: [{ref: tools/t, owner: team-a}]\n",
        'tools: [{ref: tools/t, "\\x6fwner": team-a}]\n',
        'tools:\n  - ref: tools/t\n    ? "ow\\\n      ner"\n    : team-a\n',
    ],
    ids=["plain", "escaped", "continued"],
)
def test_an_owner_is_found_in_a_loaded_repo_however_it_is_written(tmp_path: Path, written: str) -> None:
    root = make_repo(tmp_path, {"agents/a.yaml": "displayName: a\nllmAgent: {}\n" + written})
    files = load_repo(root).files
    assert declared_owners(files) == {"tool/t": ("agents/a.yaml", "team-a")}

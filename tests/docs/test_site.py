"""What `mkdocs build --strict` cannot see: the docs describe the product as it is, and cite only what exists.

mkdocs itself (in .ci/run) fails on a dead internal link or anchor and on a page outside
the nav (mkdocs.yml sets `strict` and `validation`). Here: no project history in any page,
every link into this repository names a file it has, no citation of a document the repo
does not have, and every page is in the nav.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.conftest import ROOT
from tests.docs.pages import DOCS, page_id, pages

REPO_URL = "https://github.com/cesync/cesync"
# How it got here, not what it is: words that narrate the project's past or its work in progress.
HISTORY = re.compile(
    r"\b(now|used to|this round|no more|the old|the new behaviour|brings back|previously|formerly|"
    r"until recently|as of|Where it stands|Blocked|TODO|WIP)\b|\b20\d\d-\d\d-\d\d\b",
    re.IGNORECASE,
)


def _prose(page: Path) -> str:
    """The page without its fenced blocks and inline code: outputs and examples may say 'now'."""
    text = re.sub(r"^( *)(```|~~~).*?^\1\2", "", page.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
    return re.sub(r"`[^`\n]*`", "``", text)


@pytest.mark.parametrize("page", pages(), ids=page_id)
def test_no_project_history(page: Path) -> None:
    found = [(n, m.group(0)) for n, line in enumerate(_prose(page).splitlines(), 1) for m in HISTORY.finditer(line)]
    assert not found, f"{page_id(page)} narrates history (say what the product does instead): {found}"


@pytest.mark.parametrize("page", pages(), ids=page_id)
def test_links_into_the_repository_name_files_it_has(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for path in re.findall(re.escape(REPO_URL) + r"/(?:blob|tree)/main/([^)#\s]+)", text):
        assert (ROOT / path).exists(), f"{page_id(page)} links {path}, which the repo does not have"


def test_nothing_cites_a_spec_the_repo_does_not_have() -> None:
    cited = []
    for path in [*pages(), *sorted((ROOT / "src").rglob("*.py")), *sorted((ROOT / "scripts").glob("*.py"))]:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\bSPEC(\.md| section| §)", line):
                cited.append(f"{path.relative_to(ROOT)}:{n}")
    assert not cited, f"citations of a SPEC document the repo does not have: {cited}"


def test_every_page_is_in_the_nav() -> None:
    yaml = YAML(typ="safe", pure=True)
    # mkdocs names Python objects by tag (the Mermaid fence's formatter): text here, never imported
    yaml.constructor.add_multi_constructor("tag:yaml.org,2002:python/name:", lambda loader, suffix, node: suffix)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))

    def walk(node: object) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, list):
            return [p for item in node for p in walk(item)]
        if isinstance(node, dict):
            return [p for value in node.values() for p in walk(value)]
        return []

    in_nav = set(walk(config["nav"]))
    on_disk = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert on_disk - in_nav == set(), f"pages outside the nav: {sorted(on_disk - in_nav)}"
    assert in_nav - on_disk == set(), f"nav entries with no page: {sorted(in_nav - on_disk)}"

"""The getting-started page ends in a real app (issue #38, finding 10 and item 6), every command of
it run by tests/docs/test_examples.py, and no command scrolls sideways on the site."""

from __future__ import annotations

import re

from tests.docs.pages import DOCS, examples

PAGE = DOCS / "getting-started.md"
SHELL = ("bash", "sh", "shell", "console")
WIDTH = 80  # what a code block of the site shows without scrolling on a laptop


def _run_text() -> str:
    return "\n".join(e.text for e in examples(PAGE) if e.lang in SHELL and e.directive("not run") is None)


def test_the_path_ends_in_a_real_app() -> None:
    """Two environments, a toolset with a per-environment URL, an agent, a secret per environment,
    the app over plain HTTP, drift, pull and promote: each done by a command the tests run."""
    text = _run_text()
    for needed in (
        r"^  dev:$",
        r"^  prod:$",  # two environments
        r"url: \$\{ORDERS_URL\}",  # the toolset's per-environment URL
        r"^  - url: \$env_var",
        r"cat > agents/front\.yaml",
        r"rootAgent: \{ref: agents/front\}",
        r"export CESYNC_DEV_VAR_ORDERS_KEY=",
        r"export CESYNC_PROD_VAR_ORDERS_KEY=",  # a secret per environment
        r"cesync emulator --state \.cesync/dev\.sqlite",
        r"curl -s -X PATCH",  # the embedded emulator with plain HTTP
        r"cesync plan --env dev --fail-on-drift",
        r"cesync pull --env dev",
        r"cesync promote --from dev --to prod",
        r"cesync apply promote\.json",
        r"cesync diff --from dev --to prod",
    ):
        assert re.search(needed, text, re.M), f"getting-started.md runs nothing matching {needed!r}"


def test_no_command_scrolls_sideways() -> None:
    long = [(e.line, line) for e in examples(PAGE) if e.lang in SHELL for line in e.text.splitlines() if len(line) > WIDTH]
    assert not long, f"lines over {WIDTH} characters (wrap them with a trailing \\): {long}"


def test_the_site_wraps_shell_blocks() -> None:
    """A command longer than the block wraps on any page, never scrolls (docs/stylesheets/extra.css)."""
    mkdocs = (DOCS.parent / "mkdocs.yml").read_text()
    css = (DOCS / "stylesheets" / "extra.css").read_text()
    assert "stylesheets/extra.css" in mkdocs
    assert re.search(r"\.language-bash pre code[^{]*\{[^}]*white-space: pre-wrap", css, re.S)

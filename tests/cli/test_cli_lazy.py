"""The command line imports a command's module only when it runs, and nothing heavy for --help, validate, schema."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from cesync.cli import COMMANDS, MODULES, main

FIXTURE = Path(__file__).parents[1] / "fixtures" / "minimal"
HEAVY = ["httpx", "httpcore", "rich", "google.auth", "starlette", "uvicorn", "tenacity"]
# What validate of a valid repo of tools (FIXTURE) never needs: the client, the emulator, the
# plan's passes and the libraries only they use; the API's descriptors, the models of the kinds
# it lacks (cesync.models.msg_KIND), the messages no resource holds, the release schedule's
# models (no releases/), the XML of a JUnit report.
UNREAD_BY_VALIDATE = [
    *("deepdiff", "asyncio", "sqlite3", "ssl", "subprocess", "concurrent.futures", "pickle"),
    *("cesync.client", "cesync.emulator", "cesync.sync", "cesync.forge", "cesync.pipeline.planning", "cesync.core.diff"),
    "google.protobuf",
    "cesync.api.discoverydoc",
    "cesync.core.release",
    "xml.etree.ElementTree",
    *(f"cesync.models.msg_{kind}" for kind in ("app", "agent", "guardrail", "example", "deployment", "appversion")),
    "cesync.models.other",
    "cesync.models.evaluations",
]


def test_the_command_table_matches_the_commands() -> None:
    for module in MODULES:
        importlib.import_module(f"cesync.cli.{module}")
    registered = {
        name: (cmd.callback.__module__.rsplit(".", 1)[1], (cmd.help or "").split("\n")[0])  # type: ignore[union-attr]
        for name, cmd in main.commands.items()
    }
    assert registered == COMMANDS  # a new command: add it to cesync.cli.COMMANDS


def test_help_lists_the_same_commands_before_and_after_loading_them() -> None:
    def help_text(preload: str) -> str:
        code = f"{preload}\nfrom cesync.cli import main\nmain(['--help'], prog_name='cesync')"
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout

    lazy = help_text("")
    loaded = help_text("".join(f"import cesync.cli.{m}; " for m in MODULES))
    assert lazy == loaded
    assert all(f"  {name} " in lazy for name in main.list_commands(click.Context(main)))


def imported_by(*args: str) -> set[str]:
    """The modules a fresh process has imported after running the command line with args."""
    code = (
        "import sys, json\nfrom cesync.cli import main\n"
        f"try:\n    main({list(args)!r})\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return set(json.loads(result.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    ("args", "absent"),
    [
        (["--help"], [*HEAVY, "pydantic", "ruamel.yaml", "cesync.cli.core", "cesync.models"]),
        # a repo without tests or policies loads neither their modules nor the plan's; a valid one
        # needs the facts of the API description, not its descriptors
        (
            ["validate", "--dir", str(FIXTURE)],
            [*HEAVY, "cesync.tooltests.schema", "cesync.pipeline.policies", "cesync.core.plan", *UNREAD_BY_VALIDATE],
        ),
        (["schema", "--check", "--out", str(Path(__file__).parents[2] / "schemas")], [*HEAVY, "ruamel.yaml"]),
        (["plan", "--help"], HEAVY),
    ],
)
def test_commands_import_only_what_they_use(args: list[str], absent: list[str]) -> None:
    modules = imported_by(*args)
    assert "click" in modules
    assert [m for m in absent if m in modules] == []

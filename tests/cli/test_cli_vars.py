"""--var NAME=VALUE and --var-file FILE on every command that renders the repo."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click
import pytest

from cesync.cli import main
from tests.helpers import cesync, make_repo
from tests.pipeline.test_pull import cli

ALL: dict[str, Any] = {n: main.get_command(click.Context(main), n) for n in main.list_commands(click.Context(main))}

RENDERING = ["validate", "plan", "apply", "pull", "export", "diff", "preview", "graph"]
# they take --var too; their own tests render with it (tests/pipeline/test_promote.py, test_local.py,
# tests/cli/test_destroy.py, test_release.py)
ALSO_RENDERING = ["promote", "exec", "test", "eval", "destroy", "release"]
TOOL = "googleSearchTool:\n  name: ${SEARCH_NAME}\n"


@pytest.mark.parametrize("command", RENDERING)
def test_every_rendering_command_takes_var_and_var_file(tmp_path: Path, command: str) -> None:
    root = make_repo(tmp_path, {"tools/s.yaml": TOOL})
    var_file = tmp_path / "vars.yaml"
    var_file.write_text("SEARCH_NAME: from_file\n")
    extra = {
        "validate": [],
        "plan": [],
        "apply": ["--auto-approve"],
        "pull": [],
        "export": ["--out", str(tmp_path / "out"), "--force"],
        "diff": ["--from", "local", "--to", "local"],
        "preview": ["--env", "local", "--name", "pr-1", "--auto-approve"],
        "graph": [],
    }[command]
    base = [command, "--dir", str(root), *extra]
    missing = cli(*base)
    if command not in ("export", "diff"):  # these read cesync.yaml only: no tool file to render
        assert missing.exit_code == 1 and "variable 'SEARCH_NAME' is not set" in missing.output
    if command in ("pull", "export", "diff"):  # they read the app: put the tool there first
        assert cli("apply", "--dir", str(root), "--auto-approve", "--var", "SEARCH_NAME=web").exit_code == 0
    r = cli(*base, "--var-file", str(var_file), "--var", "SEARCH_NAME=web")  # --var wins over the file
    assert r.exit_code == 0, r.output
    if command == "export":
        assert "${SEARCH_NAME}" in (tmp_path / "out" / "tools" / "s.yaml").read_text()  # the value went back to its name
    if command == "validate":
        assert cli(*base, "--var-file", str(var_file)).exit_code == 0


def test_var_wins_over_the_process_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_repo(tmp_path, {"tools/s.yaml": TOOL})
    monkeypatch.setenv("CESYNC_VAR_SEARCH_NAME", "from_env")
    assert cli("apply", "--dir", str(root), "--auto-approve", "--var", "SEARCH_NAME=from_var").exit_code == 0
    r = cli("plan", "--dir", str(root), "--detailed-exitcode")
    assert r.exit_code == 2 and '"from_var" -> "from_env"' in r.output
    assert os.environ["CESYNC_VAR_SEARCH_NAME"] == "from_env"


@pytest.mark.parametrize(
    ("args", "content", "message"),
    [
        (["--var", "NOEQUALS"], None, "write NAME=VALUE"),
        (["--var", "1BAD=x"], None, "write NAME=VALUE"),
        (["--var-file", "{f}"], "- a\n", "expected a mapping of NAME: value"),
        (["--var-file", "{f}"], "A: {b: 1}\n", "must be a NAME"),
        (["--var-file", "{f}"], "A: [\n", "invalid YAML"),
        (["--var-file", "/no/such/vars.yaml"], None, "cannot read"),
    ],
)
def test_bad_vars_are_clear_errors(tmp_path: Path, args: list[str], content: str | None, message: str) -> None:
    root = make_repo(tmp_path, {})
    f = tmp_path / "vars.yaml"
    if content is not None:
        f.write_text(content)
    r = cli("validate", "--dir", str(root), *[a.format(f=f) for a in args])
    assert r.exit_code == 1 and message in r.output, r.output


def test_the_rendering_commands_are_all_covered() -> None:
    with_var = sorted(n for n, c in ALL.items() if any(p.name == "var_pairs" for p in c.params))
    assert with_var == sorted(RENDERING + ALSO_RENDERING)


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_a_sensitive_value_is_never_in_a_problem(tmp_path: Path, command: str) -> None:
    """A sensitive variable's value that lands in a problem message (here a duplicate tool name)
    is masked there by every command, validate too, not only by those that read the app."""
    secret = "S3cr3tValue-0123456789"
    tool = "googleSearchTool:\n  name: ${DB_PASS}\n"
    root = make_repo(tmp_path, {"tools/a.yaml": tool, "tools/b.yaml": tool})
    config = root / "cesync.yaml"
    config.write_text(config.read_text().replace("environments:", "defaults:\n  sensitive: [DB_PASS]\nenvironments:"))
    r = cesync(command, "--dir", str(root), env={"CESYNC_VAR_DB_PASS": secret})
    assert r.returncode == 1 and "duplicate tool name" in r.stderr, (r.stdout, r.stderr)
    assert secret not in r.stdout + r.stderr

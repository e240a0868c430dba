"""What a console user writes into the app's documents is read under the repo's limits (issue #34
findings 1 and 2): an alias bomb or a schema nested 30,000 deep in a toolset, managed or not,
is one named resource the plan, pull and test go on without, never a hang or a RecursionError.

The console user is played by an HTTP client writing the emulator as the API allows.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from cesync.emulator.server import BackgroundServer
from tests.pipeline.test_pull import _set, console_edit, fresh_repo


def _bomb() -> str:
    lines = [
        "openapi: 3.0.0",
        "info: {title: t, version: '1'}",
        "paths: {}",
        "x-a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol]",
    ]
    lines += [f"x-a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    return "\n".join(lines) + "\n"


def _deep() -> str:
    n = 30_000
    head = '{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {}, "x": '
    return head + "[" * n + "]" * n + "}"


DOCUMENTS = {"alias bomb": (_bomb(), "alias bomb"), "30,000 deep": (_deep(), "nested deeper than 200 levels")}


def _run(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    """A process of its own, with a deadline: an alias bomb once ran until killed."""
    return subprocess.run(
        [sys.executable, "-m", "cesync.cli", *args, "--endpoint", url],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "HOME": "/nonexistent"},
    )


@pytest.mark.parametrize("what", list(DOCUMENTS))
def test_a_managed_toolset_with_an_unreadable_schema_is_named_and_the_plan_goes_on(
    tmp_path: Path, emulator: BackgroundServer, what: str
) -> None:
    text, said = DOCUMENTS[what]
    root, parent = fresh_repo(tmp_path, emulator)
    console_edit(
        emulator, f"{parent}/toolsets/shop", "openApiToolset.openApiSchema", _set(["openApiToolset", "openApiSchema"], text)
    )
    console_edit(emulator, f"{parent}/tools/ask", "clientFunction.description", _set(["clientFunction", "description"], "A"))
    r = _run("plan", "--dir", str(root), url=emulator.url)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    assert "~ toolset shop will be updated in place" in r.stdout and said in r.stdout, r.stdout
    assert "the app's openApiToolset.openApiSchema" in r.stdout
    assert "~ tool ask will be updated in place" in r.stdout  # the rest of the plan is there


@pytest.mark.parametrize("what", list(DOCUMENTS))
def test_an_unmanaged_toolset_with_an_unreadable_schema_is_left_out_of_pull_and_test(
    tmp_path: Path, emulator: BackgroundServer, what: str
) -> None:
    text, said = DOCUMENTS[what]
    root, parent = fresh_repo(tmp_path, emulator)
    made = httpx.post(
        f"{emulator.url}/v1/{parent}/toolsets", params={"toolsetId": "evil"}, json={"openApiToolset": {"openApiSchema": text}}
    )
    assert made.status_code == 200, made.text
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "t.yaml").write_text(
        "tests:\n  - name: hi\n    toolCall: {tool: greet, args: {name: x}}\n    toolResponse: {response: {result: hi}}\n"
    )
    pulled = _run("pull", "--dir", str(root), url=emulator.url)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    note = next(line for line in pulled.stderr.splitlines() if "toolset evil" in line)
    assert note.startswith("note: left toolset evil out: the app's openApiToolset.openApiSchema: document") and said in note
    assert not (root / "toolsets" / "evil.yaml").exists()
    tested = _run("test", "--dir", str(root), url=emulator.url)
    assert "1 test:" in tested.stdout and "internal error" not in tested.stderr, tested.stdout + tested.stderr
    planned = _run("plan", "--dir", str(root), url=emulator.url)
    assert planned.returncode == 0 and "toolsets/evil" in planned.stdout, planned.stdout + planned.stderr

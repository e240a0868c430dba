"""exec/test --local (the repo's code in a throw-away app) and the word when the deployed
tool differs from the repo (--strict fails), end to end through the CLI on the embedded emulator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cesync.api.kinds import KINDS
from cesync.pipeline.local import Difference, tool_keys
from tests.helpers import cesync_in_process, make_repo

GREET_TEST = """tests:
  - name: greets by name
    toolCall: {tool: greet, args: {name: Ada}}
    toolResponse:
      response: {result: {greeting: Hello Ada}}
"""
CHANGED = """pythonFunction:
  name: greet
  pythonCode: |
    def greet(name: str) -> dict:
        \"\"\"Greet someone.\"\"\"
        return {"greeting": "Goodbye " + name}
timeout: 1.5s
"""


@pytest.fixture
def applied(tmp_path: Path) -> Path:
    """The minimal repo with one tool test, applied to its embedded app; then the code changed
    in the repo and not applied (a pull request's state)."""
    root = make_repo(tmp_path, {"tests/greet.yaml": GREET_TEST})
    r = cesync_in_process("apply", "--dir", str(root), "--env", "local", "--auto-approve")
    assert r.returncode == 0, r.stderr
    (root / "tools" / "greet.yaml").write_text(CHANGED, encoding="utf-8")
    return root


def test_test_against_the_app_warns_that_the_deployed_tool_differs(applied: Path) -> None:
    r = cesync_in_process("test", "--dir", str(applied), "--env", "local")
    assert r.returncode == 0, r.stdout + r.stderr  # the deployed (old) code still passes ...
    assert "1 passed" in r.stdout
    # ... and the run says it tested the deployed code, naming the tool and the field
    assert "warning: tools/greet differs from the repo (pythonFunction.pythonCode)" in r.stderr
    assert "--local" in r.stderr


def test_strict_fails_before_running_anything(applied: Path) -> None:
    r = cesync_in_process("test", "--dir", str(applied), "--env", "local", "--strict")
    assert r.returncode == 1
    assert "error: tools/greet differs from the repo" in r.stderr
    assert "PASS" not in r.stdout and "passed" not in r.stdout


def test_local_runs_the_repo_code_and_leaves_the_app_alone(applied: Path) -> None:
    state = applied / ".cesync" / "local.sqlite"
    before = state.stat().st_mtime_ns, state.stat().st_size
    r = cesync_in_process("test", "--dir", str(applied), "--env", "local", "--local")
    assert r.returncode == 1  # the repo's code says Goodbye: the test of the change fails, as it should
    assert "1 failed" in r.stdout and "Goodbye Ada" in r.stdout
    assert "differs" not in r.stderr  # nothing deployed is involved
    e = cesync_in_process("exec", "greet", "--dir", str(applied), "--env", "local", "--local", "--args", '{"name": "Bo"}')
    assert e.returncode == 0, e.stderr
    assert "Goodbye Bo" in json.dumps(json.loads(e.stdout)) and "Hello" not in e.stdout
    assert (state.stat().st_mtime_ns, state.stat().st_size) == before  # the environment's app was not touched
    deployed = cesync_in_process("exec", "greet", "--dir", str(applied), "--env", "local", "--args", '{"name": "Bo"}')
    assert "Hello Bo" in deployed.stdout and "warning: tools/greet differs" in deployed.stderr


def test_local_needs_no_app_and_no_network(tmp_path: Path) -> None:
    """An environment that points at Google is never contacted with --local."""
    config = "version: 1\nenvironments:\n  prod:\n    project: p\n    location: us\n    app: a\n"
    root = make_repo(tmp_path, {"tests/greet.yaml": GREET_TEST, "cesync.yaml": config})
    r = cesync_in_process("test", "--dir", str(root), "--env", "prod", "--local")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout


def test_local_reports_a_repo_that_does_not_render(tmp_path: Path) -> None:
    root = make_repo(tmp_path, {"tests/greet.yaml": GREET_TEST, "tools/broken.yaml": "pythonFunction: {name: 3, bogus: 1}\n"})
    r = cesync_in_process("test", "--dir", str(root), "--env", "local", "--local")
    assert r.returncode == 1
    assert "tools/broken.yaml:1:" in r.stderr and "Traceback" not in r.stderr


def test_an_unrenderable_repo_is_a_warning_without_strict_and_an_error_with(applied: Path) -> None:
    (applied / "tools" / "broken.yaml").write_text("pythonFunction: {name: 3, bogus: 1}\n", encoding="utf-8")
    r = cesync_in_process("test", "--dir", str(applied), "--env", "local")
    assert r.returncode == 0, r.stderr
    assert "warning: the deployed tools were not compared with the repo" in r.stderr
    s = cesync_in_process("test", "--dir", str(applied), "--env", "local", "--strict")
    assert s.returncode == 1 and "--strict: the repo does not render" in s.stderr


@pytest.mark.parametrize(
    ("tools", "names", "keys"),
    [
        (["greet"], {}, {"tool/greet"}),
        (["Greeter"], {"Greeter": "greet"}, {"tool/greet"}),
        (["catalog/getProduct"], {}, {"toolset/catalog"}),
        (["shop_getProduct"], {"shop_getProduct": "catalog/getProduct"}, {"toolset/catalog"}),
    ],
    ids=["id", "display-name", "toolset-tool", "scrapi-name"],
)
def test_tool_keys(tools: list[str], names: dict[str, str], keys: set[str]) -> None:
    assert tool_keys(tools, names) == keys


@pytest.mark.parametrize(
    ("difference", "text"),
    [
        (Difference(KINDS["tool"], "x", "create"), "tools/x is in the repo but not deployed"),
        (Difference(KINDS["tool"], "x", "delete"), "tools/x is deployed but no longer in the repo"),
        (Difference(KINDS["toolset"], "t", "update", ("a", "b")), "toolsets/t differs from the repo (a, b)"),
        (Difference(KINDS["tool"], "x", "update", tuple("abcde")), "tools/x differs from the repo (a, b, c, d, ...)"),
    ],
)
def test_difference_words(difference: Difference, text: str) -> None:
    assert difference.describe() == text

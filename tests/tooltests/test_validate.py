"""validate reads tests/*.yaml as 'cesync test' does: misspelt keys and tools the repo lacks are
problems at file:line:col with the closest name; at run time a missing tool is an ERROR, not a FAIL."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import EXAMPLES
from tests.helpers import cesync, cesync_in_process, make_repo

TEST = """tests:
  - name: greets
    toolCall:
      tool: {tool}
      args: {{name: Ada}}
    toolResponse:
      response: {{result: {{greeting: Hello Ada}}}}
"""
KEYS = ["toolCall", "toolResponse", "mockConfig", "expectVariables", "variables"]


def typo(word: str, how: int, at: int) -> str:
    """word with one character dropped (how 0) or two neighbours swapped (how 1), inside the word."""
    i = 1 + at % (len(word) - 2)
    return word[:i] + word[i + 1 :] if how == 0 else word[:i] + word[i + 1] + word[i] + word[i + 2 :]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(KEYS), how=st.integers(0, 1), at=st.integers(0, 20))
def test_a_misspelt_test_key_is_a_validate_problem(tmp_path_factory: pytest.TempPathFactory, key: str, how: int, at: int) -> None:
    wrong = typo(key, how, at)
    if wrong == key:
        return
    text = TEST.format(tool="greet") + f"    {wrong}: {{}}\n"
    if key in ("toolCall", "toolResponse"):  # the misspelling replaces the key itself
        text = TEST.format(tool="greet").replace(f"{key}:", f"{wrong}:")
    root = make_repo(tmp_path_factory.mktemp("t"), {"tests/greet.yaml": text})
    result = cesync_in_process("validate", "--dir", str(root))
    assert result.returncode == 1, result.stdout + result.stderr
    lines = [x for x in (result.stdout + result.stderr).splitlines() if x.startswith("tests/greet.yaml:")]
    assert lines == [next(x for x in lines if f"unknown test field '{wrong}'; did you mean '{key}'?" in x)], lines


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dst = tmp_path_factory.mktemp("bot") / "support-bot"
    shutil.copytree(EXAMPLES / "support-bot", dst, ignore=shutil.ignore_patterns(".cesync"))
    return dst


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tool=st.sampled_from(["refund-policy", "order-status", "faq-search", "open-ticket"]), at=st.integers(0, 20))
def test_a_test_naming_a_tool_the_repo_lacks_is_a_validate_problem(bot: Path, tool: str, at: int) -> None:
    wrong = typo(tool, 0, at)
    path = bot / "tests" / "typo.yaml"
    path.write_text(TEST.format(tool=wrong))
    try:
        result = cesync_in_process("validate", "--dir", str(bot))
    finally:
        path.unlink()
    assert result.returncode == 1
    said = f"tests/typo.yaml:4:13: test 'greets': tool '{wrong}' is not in the repo; did you mean '"
    line = next((x for x in (result.stdout + result.stderr).splitlines() if x.startswith(said)), "")
    assert line.removeprefix(said).replace("_", "-") == f"{tool}'?", result.stdout + result.stderr  # id or own name


def test_the_example_tests_validate() -> None:
    result = cesync_in_process("validate", "--dir", str(EXAMPLES / "support-bot"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_running_a_test_of_a_missing_tool_is_an_error_not_a_failure(tmp_path: Path) -> None:
    root = make_repo(tmp_path, {"tests/greet.yaml": TEST.format(tool="gret")})
    result = cesync("test", "--dir", str(root), "--local")
    assert result.returncode == 1
    assert "1 test: 0 passed, 0 failed, 1 error" in result.stdout, result.stdout
    assert "tool 'gret' is not in the app; did you mean 'greet'? (the test cannot run)" in result.stdout

"""cesync policy test: the example's policies pass their own tests; a failing test, a missing folder
and a broken rule each exit 1 with a message, never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import EXAMPLES
from tests.helpers import cesync


def test_the_example_policies_pass_their_tests(tmp_path: Path) -> None:
    result = cesync("policy", "test", "--dir", str(EXAMPLES / "support-bot"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS policies/prod.yaml: a 45 s tool is denied in prod" in result.stdout
    data = json.loads(cesync("policy", "test", "--dir", str(EXAMPLES / "support-bot"), "--format", "json").stdout)
    assert data["failed"] == 0 and data["passed"] == len(data["tests"]) >= 9


def test_a_wrong_expectation_fails_and_says_what_fired(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    shutil.copytree(EXAMPLES / "support-bot", repo, ignore=shutil.ignore_patterns(".cesync"))
    path = repo / "policies" / "prod.yaml"
    path.write_text(path.read_text().replace('duration("30s")', 'duration("60s")'))
    result = cesync("policy", "test", "--dir", str(repo))
    assert result.returncode == 1
    assert "FAIL policies/prod.yaml: a 45 s tool is denied in prod: expected prod-tool-timeout; fired no rule" in result.stdout


def test_no_folder_and_bad_cel_are_clear_errors(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    shutil.copytree(EXAMPLES / "support-bot", repo, ignore=shutil.ignore_patterns(".cesync"))
    path = repo / "policies" / "prod.yaml"
    path.write_text(path.read_text().replace("change.action ==", "change.action ===", 1))
    broken = cesync("policy", "test", "--dir", str(repo))
    assert broken.returncode == 1 and "rule 'served-agent-delete': its deny is not valid CEL" in broken.stderr
    config = repo / "cesync.yaml"
    config.write_text(config.read_text().replace("policies: policies", ""))
    none = cesync("policy", "test", "--dir", str(repo))
    assert none.returncode == 1 and "cesync.yaml names no policy folder" in none.stderr

"""cesync eval --affected-by PLANFILE: the plan of a changed tool names the goldens and tool tests
that exercise it (text, JSON, Markdown), and eval runs only those goldens."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import EXAMPLES
from tests.helpers import cesync

LOCAL = ("--env", "local", "--endpoint", "embedded")


def test_a_plan_names_what_a_change_risks_and_eval_runs_only_that(tmp_path: Path) -> None:
    repo = tmp_path / "support-bot"
    shutil.copytree(EXAMPLES / "support-bot", repo, ignore=shutil.ignore_patterns(".cesync"))
    assert cesync("apply", "--dir", str(repo), *LOCAL, "--auto-approve").returncode == 0
    tool = repo / "tools" / "order-status.yaml"
    tool.write_text(tool.read_text().replace("timeout: 5s", "timeout: 6s"))
    saved = repo / "plan.json"
    text = cesync("plan", "--dir", str(repo), *LOCAL, "--out", str(saved)).stdout
    assert "tool/order-status: tool tests tests/order_status.yaml::" in text
    affected = json.loads(saved.read_text())["affected"]
    assert set(affected) == {"tool/order-status"} and "evaluations" not in affected["tool/order-status"]
    none = cesync("eval", "--dir", str(repo), *LOCAL, "--affected-by", str(saved))
    assert none.returncode == 0 and "puts no evaluation at risk: nothing to run" in none.stdout
    policy = repo / "tools" / "refund-policy.yaml"
    policy.write_text(policy.read_text().replace("timeout: 5s", "timeout: 6s"))
    cesync("plan", "--dir", str(repo), *LOCAL, "--out", str(saved))
    md = cesync("show", str(saved), "--format", "markdown").stdout
    assert "- `tool/refund-policy`: evaluations `refund-full`, `refund-small-order`, `refund-too-late`" in md
    assert cesync("apply", str(saved), "--dir", str(repo), "--endpoint", "embedded", "--auto-approve").returncode == 0
    ran = cesync("eval", "--dir", str(repo), *LOCAL, "--affected-by", str(saved), "--format", "json")
    assert ran.returncode == 0, ran.stderr
    assert sorted(o["id"] for o in json.loads(ran.stdout)["outcomes"]) == [
        "refund-full",
        "refund-small-order",
        "refund-too-late",
    ]


def test_test_affected_by_runs_only_the_tool_tests_at_risk(tmp_path: Path) -> None:
    repo = tmp_path / "support-bot"
    shutil.copytree(EXAMPLES / "support-bot", repo, ignore=shutil.ignore_patterns(".cesync"))
    assert cesync("apply", "--dir", str(repo), *LOCAL, "--auto-approve").returncode == 0
    tool = repo / "tools" / "refund-policy.yaml"
    tool.write_text(tool.read_text().replace("timeout: 5s", "timeout: 6s"))
    saved = repo / "plan.json"
    cesync("plan", "--dir", str(repo), *LOCAL, "--out", str(saved))
    ran = cesync("test", "--dir", str(repo), "--env", "local", "--local", "--affected-by", str(saved), "--format", "json")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    names = sorted(r["name"] for r in json.loads(ran.stdout)["tests"])
    want = json.loads(saved.read_text())["affected"]["tool/refund-policy"]["toolTests"]
    assert names and sorted(t.split("::", 1)[1] for t in want) == names

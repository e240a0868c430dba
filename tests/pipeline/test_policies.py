"""pipeline.policies end to end: the example repo's policy folder on plan, apply and validate of its prod
environment (against the embedded emulator): a deny shows in text, JSON and Markdown and stops apply."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES
from tests.helpers import cesync

PROD = ("--env", "prod", "--endpoint", "embedded")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    dst = tmp_path / "support-bot"
    shutil.copytree(EXAMPLES / "support-bot", dst, ignore=shutil.ignore_patterns(".cesync"))
    return dst


def slow(repo: Path) -> None:
    path = repo / "tools" / "order-status.yaml"
    path.write_text(path.read_text().replace("timeout: 5s", "timeout: 45s"))


def test_a_denied_plan_shows_the_rule_everywhere_and_apply_writes_nothing(repo: Path) -> None:
    slow(repo)
    text = cesync("plan", "--dir", str(repo), *PROD)
    assert text.returncode == 1
    assert "Policy: apply will refuse this plan: denied by prod-tool-timeout" in text.stdout
    assert "DENY prod-tool-timeout: tool/order-status: waits up to 45s; prod allows 30s" in text.stdout
    assert "policy: apply will refuse this plan: denied by prod-tool-timeout" in text.stderr
    data = json.loads(cesync("plan", "--dir", str(repo), *PROD, "--format", "json").stdout)
    assert [(f["rule"], f["verdict"], f["subject"], f["source"]) for f in data["policy"]] == [
        ("prod-tool-timeout", "deny", "tool/order-status", "policies/prod.yaml")
    ]
    md = cesync("plan", "--dir", str(repo), *PROD, "--format", "markdown").stdout
    assert "> **Policy:** apply will refuse this plan: denied by prod-tool-timeout" in md
    assert "- **deny** `prod-tool-timeout` on `tool/order-status`: `waits up to 45s" in md
    applied = cesync("apply", "--dir", str(repo), *PROD, "--auto-approve")
    assert applied.returncode == 1
    assert "policy denies this plan (prod-tool-timeout on tool/order-status" in applied.stderr
    assert "nothing was applied" in applied.stderr
    assert "Plan: 23 to create, 0 to update, 0 to delete." in cesync("plan", "--dir", str(repo), *PROD).stdout
    bad = cesync("validate", "--dir", str(repo), "--env", "prod")
    assert bad.returncode == 1 and "tools/order-status.yaml:1:1: [prod] policy deny prod-tool-timeout" in bad.stderr
    assert cesync("validate", "--dir", str(repo), "--env", "dev").returncode == 0  # the rule is prod's


def test_a_prod_delete_needs_the_label_and_a_saved_plan_keeps_it(repo: Path) -> None:
    assert cesync("apply", "--dir", str(repo), *PROD, "--auto-approve").returncode == 0
    (repo / "tools" / "web-search.yaml").unlink()
    denied = cesync("plan", "--dir", str(repo), *PROD)
    assert denied.returncode == 1 and "DENY prod-delete-label: tool/web-search" in denied.stdout
    saved = repo / "plan.json"
    labelled = cesync("plan", "--dir", str(repo), *PROD, "--label", "allow-delete", "--out", str(saved))
    assert labelled.returncode == 0 and "Policy" not in labelled.stdout
    assert json.loads(saved.read_text())["labels"] == ["allow-delete"]
    done = cesync("apply", str(saved), "--dir", str(repo), "--endpoint", "embedded", "--auto-approve")
    assert done.returncode == 0, done.stderr
    assert "- tool web-search" not in cesync("plan", "--dir", str(repo), *PROD).stdout


def test_a_saved_plan_cannot_gain_a_label_by_editing_the_file(repo: Path) -> None:
    assert cesync("apply", "--dir", str(repo), *PROD, "--auto-approve").returncode == 0
    (repo / "tools" / "web-search.yaml").unlink()
    saved = repo / "plan.json"
    cesync("plan", "--dir", str(repo), *PROD, "--out", str(saved))
    data = json.loads(saved.read_text())
    data["labels"], data["policy"] = ["allow-delete"], []
    saved.write_text(json.dumps(data))
    refused = cesync("apply", str(saved), "--dir", str(repo), "--endpoint", "embedded", "--auto-approve")
    assert refused.returncode == 1 and "web-search" in cesync("plan", "--dir", str(repo), *PROD).stdout


def test_apply_of_a_saved_plan_takes_no_labels_of_its_own(repo: Path) -> None:
    saved = repo / "plan.json"
    cesync("plan", "--dir", str(repo), *PROD, "--out", str(saved))
    refused = cesync(
        "apply", str(saved), "--dir", str(repo), "--endpoint", "embedded", "--auto-approve", "--label", "allow-delete"
    )
    assert refused.returncode == 1 and "a saved plan carries the labels it was made with" in refused.stderr


def test_validate_judges_what_it_rendered_without_rendering_again(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The policies of validate read each environment's resources as validate rendered them."""
    from cesync.repo.repo import Repo

    renders: list[str] = []
    whole = Repo.render

    def counted(self: Repo, env: object, **kw: object) -> object:
        renders.append(str(getattr(env, "name", "")))
        return whole(self, env, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Repo, "render", counted)
    slow(repo)
    bad = cesync("validate", "--dir", str(repo))
    assert bad.returncode == 1 and "[prod] policy deny prod-tool-timeout" in bad.stderr
    assert renders == []

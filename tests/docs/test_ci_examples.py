"""The example pipelines do what the docs recommend (issue #34 finding 9): the plan key wherever a
saved plan is made or applied or a record is read, never in a job a pull request's author writes;
the least-scoped GitLab token in merge-request jobs; cesync installed pinned. Each rule is read
from the examples and from the page that recommends it, so either drifting fails here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.conftest import EXAMPLES, ROOT

WORKFLOWS = sorted((EXAMPLES / "ci" / "github").glob("*.yml"))
GITLAB = EXAMPLES / "ci" / "gitlab" / ".gitlab-ci.yml"
CI_DOCS = (ROOT / "docs" / "ci-cd.md").read_text()
SECURITY_DOCS = (ROOT / "docs" / "security.md").read_text()
KEY = "${{ secrets.CESYNC_PLAN_KEY }}"
# What makes or applies a saved plan, or reads the applied records a key seals.
KEYED_COMMANDS = {"plan", "apply", "promote", "release", "diff"}


def _load(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text())


def _cesync_commands(job: dict[str, Any]) -> set[str]:
    found = set()
    for step in job.get("steps", []):
        if str(step.get("uses", "")).startswith("cesync/cesync@"):
            found.add(str(step.get("with", {}).get("command", "plan")))
        found.update(re.findall(r"\bcesync (\w+)", str(step.get("run", ""))))
    return found


def _triggers(workflow: dict[str, Any]) -> set[str]:
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 readers take 'on' for true
    return set(on) if isinstance(on, dict) else {on} if isinstance(on, str) else set(on or ())


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_a_github_workflow_has_the_plan_key_exactly_where_the_docs_say(path: Path) -> None:
    workflow = _load(path)
    from_pull_requests = bool(_triggers(workflow) & {"pull_request", "pull_request_target"})
    if from_pull_requests:
        assert "CESYNC_PLAN_KEY" not in path.read_text(), f"{path.name}: a pull request's author could print the key"
        return
    keyed = [name for name, job in workflow["jobs"].items() if _cesync_commands(job) & KEYED_COMMANDS]
    for name in keyed:
        env = {**workflow.get("env", {}), **workflow["jobs"][name].get("env", {})}
        assert env.get("CESYNC_PLAN_KEY") == KEY, (
            f"{path.name}: job {name} makes, applies or reads a plan or record without the key"
        )
    if keyed:
        assert f"`{path.name}`" in CI_DOCS.split("## The plan key", 1)[1].split("\n## ", 1)[0], f"docs/ci-cd.md: {path.name}"


def test_gitlab_gives_the_plan_key_to_protected_branches_only() -> None:
    text, pipeline = GITLAB.read_text(), _load(GITLAB)
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    assert re.search(r"CESYNC_PLAN_KEY[^.]*protected, masked variable", " ".join(header.replace("#", "").split()))
    assert "protected, masked CI variable" in CI_DOCS
    for name, job in pipeline.items():
        if not isinstance(job, dict) or "script" not in job:
            continue
        from_merge_requests = any("merge_request_event" in str(rule.get("if", "")) for rule in job.get("rules", []))
        assert not (from_merge_requests and "CESYNC_PLAN_KEY" in str(job)), name
        writes_plans = any(re.search(r"cesync (apply|promote)|cesync plan .*--out", line) for line in job["script"])
        if writes_plans and not from_merge_requests:
            assert any("CI_DEFAULT_BRANCH" in str(rule.get("if", "")) for rule in job["rules"]), (
                f"{name}: not a protected branch's job"
            )


def test_merge_request_jobs_get_the_least_scoped_gitlab_token() -> None:
    """Docs and example say the same: a project access token, Reporter role, expiring, masked."""
    header = " ".join(line.lstrip("# ") for line in GITLAB.read_text().splitlines() if line.startswith("#"))
    for where, text in (("the GitLab example", " ".join(header.split())), ("docs/ci-cd.md", " ".join(CI_DOCS.split()))):
        assert "GITLAB_TOKEN" in text, where
        said = text.split("GITLAB_TOKEN", 1)[1][:400]
        assert "project access token" in said and "Reporter role" in said and "expiry" in said, (where, said)
        assert "mask" in said, (where, said)
    assert "GITLAB_TOKEN (api scope)" not in GITLAB.read_text()


PINNED = re.compile(r"==\S+|@[0-9a-f]{40}\b")


def _commands(path: Path) -> list[str]:
    """The lines a reader runs: all of a pipeline, the code blocks of a page (not its prose)."""
    lines = path.read_text().splitlines()
    if path.suffix != ".md":
        return lines
    out, fenced = [], False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            out.append(line)
    return out


@pytest.mark.parametrize(
    "path",
    [*WORKFLOWS, GITLAB, *sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_install_of_cesync_is_pinned(path: Path) -> None:
    """A version (==X) or a commit: an unpinned install runs whatever the index serves that day in
    the jobs that hold deploy credentials."""
    for line in _commands(path):
        if not re.search(r"pip3? install\b", line):
            continue
        for spec in re.findall(r"(?<![\w./-])(?:\"|')?(cesync(?:\[[^\]]*\])?\S*|git\+\S*cesync\S*)", line.split(" #", 1)[0]):
            if spec.startswith("cesync-") or spec.startswith("cesync/"):
                continue  # another package, or a path
            assert PINNED.search(spec), f"{path.relative_to(ROOT)}: {line.strip()}"

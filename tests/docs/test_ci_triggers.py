"""The example pipelines run for every file cesync reads.

A path filter that names a few folders leaves a pull request that changes only an agent's
instruction, app.yaml, a guardrail or an OpenAPI file elsewhere without a plan comment. Here every file cesync reads of the
example app (cesync.yaml, every kind's files, what they include, the tool tests, the
policies), placed anywhere in a repo, must start each example's pull-request and
merge-request pipelines.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from cesync.repo.repo import load_repo
from tests.conftest import EXAMPLES

GITHUB = sorted((EXAMPLES / "ci" / "github").glob("*.yml"))
GITLAB = EXAMPLES / "ci" / "gitlab" / ".gitlab-ci.yml"
BOT = EXAMPLES / "support-bot"


def read_by_cesync(root: Path) -> list[str]:
    """Every file of the repo at root that cesync reads, relative to it."""
    repo = load_repo(root)
    found = {"cesync.yaml", *(str(f.path.relative_to(root)) for f in repo.files)}
    for f in repo.files:
        found |= {str((f.path.parent / rel).resolve().relative_to(root.resolve())) for rel in _includes(f.doc.data)}
    found |= {str(p.relative_to(root)) for p in (root / "tests").glob("*.y*ml")}
    return sorted(found)


def _includes(data: Any) -> list[str]:
    if isinstance(data, dict):
        if set(data) == {"file"} and isinstance(data["file"], str):
            return [data["file"]]
        return [x for v in data.values() for x in _includes(v)]
    if isinstance(data, list):
        return [x for v in data for x in _includes(v)]
    return []


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A GitHub Actions path filter as a regular expression: ** crosses folders, * and ? do not."""
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + r"\Z")


def starts(trigger: Any, path: str) -> bool:
    """Whether a change to path starts a workflow with this on.pull_request (or push) trigger."""
    if not isinstance(trigger, dict):
        return True  # `pull_request:` with nothing under it: every change
    included = [p for p in trigger.get("paths", ["**"]) if not p.startswith("!")]
    excluded = [p[1:] for p in trigger.get("paths", []) if p.startswith("!")] + trigger.get("paths-ignore", [])
    return any(glob_regex(p).match(path) for p in included) and not any(glob_regex(p).match(path) for p in excluded)


def test_the_example_app_reads_every_kind_and_an_include_outside_schemas() -> None:
    read = read_by_cesync(BOT)
    folders = {p.split("/")[0] for p in read}
    assert {"agents", "guardrails", "examples", "deployments", "evaluations", "tools", "toolsets", "tests"} <= folders
    assert "app.yaml" in read and "code/refund_policy.py" in read and "schemas/orders.yaml" in read


@pytest.mark.parametrize("workflow", [w for w in GITHUB if "pull_request" in YAML(typ="safe").load(w.read_text())["on"]])
@pytest.mark.parametrize("prefix", ["", "apps/support-bot/"])
def test_every_file_cesync_reads_starts_the_pull_request_workflows(workflow: Path, prefix: str) -> None:
    trigger = YAML(typ="safe").load(workflow.read_text())["on"]["pull_request"]
    # an OpenAPI document may sit anywhere an include can reach, not only in schemas/
    read = [*read_by_cesync(BOT), "openapi/orders.yaml", "shared/specs/crm.json"]
    missed = [p for p in read if not starts(trigger, prefix + p)]
    assert not missed, f"{workflow.name}: a pull request that changes only these gets no run: {missed}"


def test_the_path_filter_reader_is_githubs() -> None:
    """The matcher the test above relies on, against GitHub's documented examples."""
    assert starts({"paths": ["**.js"]}, "app/a.js") and starts({"paths": ["docs/**"]}, "docs/x/y.md")
    assert not starts({"paths": ["docs/*"]}, "docs/x/y.md") and starts({"paths": ["**/tools/**"]}, "tools/a.yaml")
    assert not starts({"paths": ["**/tools/**"]}, "agents/a.yaml")
    assert not starts({"paths": ["**", "!agents/**"]}, "agents/a.yaml")


def test_the_merge_request_pipeline_runs_for_every_file_cesync_reads() -> None:
    config = YAML(typ="safe").load(GITLAB.read_text())
    for name, job in config.items():
        if not isinstance(job, dict):
            continue
        for rule in job.get("rules", []):
            changes = rule.get("changes") if isinstance(rule, dict) else None
            if changes is None:
                continue
            paths = changes.get("paths", []) if isinstance(changes, dict) else changes
            missed = [p for p in read_by_cesync(BOT) if not any(glob_regex(c).match(p) for c in paths)]
            assert not missed, f"{name}: a merge request that changes only these gets no run: {missed}"


HOOKS = Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml"


@pytest.mark.parametrize("hook", ["cesync-validate", "cesync-fmt"])
@pytest.mark.parametrize("prefix", ["", "apps/support-bot/"])
def test_every_file_cesync_reads_starts_the_pre_commit_hooks(hook: str, prefix: str) -> None:
    """A commit that changes only an agent, app.yaml, a guardrail or an OpenAPI file anywhere must
    run validate and fmt: pre-commit runs a hook only for staged files its `files` regex searches."""
    (spec,) = [h for h in YAML(typ="safe").load(HOOKS.read_text()) if h["id"] == hook]
    files, exclude = re.compile(spec.get("files", "")), spec.get("exclude")
    if hook == "cesync-fmt":  # what fmt rewrites: cesync.yaml and every kind's files
        read = ["cesync.yaml", *(str(f.path.relative_to(BOT)) for f in load_repo(BOT).files)]
    else:
        read = [*read_by_cesync(BOT), "openapi/orders.yaml", "shared/specs/crm.json"]
    missed = [p for p in read if not files.search(prefix + p) or (exclude and re.search(exclude, prefix + p))]
    assert not missed, f"{hook}: a commit that changes only these does not run it: {missed}"
    assert "tool and toolset" not in spec["description"]  # every kind is validated and formatted

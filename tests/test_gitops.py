"""GitOps: the GitHub Action's script against the emulator and a fake GitHub, sticky comments,
cut plans, GitLab notes, the matrix of apps, workflow lint and the pre-commit hooks."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.core.planbuild import build_plan
from cesync.core.scrubber import Scrubber
from cesync.errors import CesyncError
from cesync.forge.comments import CommentTarget, upsert_comment
from cesync.render import render_markdown
from cesync.render.markdown import GITHUB_COMMENT_LIMIT
from tests.conftest import EXAMPLES, ROOT
from tests.fake_forge import TOKEN, Forge, serve
from tests.helpers import cesync

BIN = Path(sys.executable).parent


@pytest.fixture
def forge() -> Iterator[Forge]:
    fake, server = serve()
    yield fake
    server.shutdown()


@pytest.fixture
def bot(tmp_path: Path) -> Path:
    dst = tmp_path / "support-bot"
    shutil.copytree(EXAMPLES / "support-bot", dst, ignore=shutil.ignore_patterns(".cesync"))
    return dst


def github_env(forge: Forge, event: Path, number: int) -> dict[str, str]:
    """What GitHub Actions sets for a pull-request run, pointed at the fake API."""
    event.write_text(json.dumps({"pull_request": {"number": number}}))
    return {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_API_URL": forge.url,
        "GITHUB_REPOSITORY": "acme/tools",
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_RUN_ID": "42",
        "GITHUB_SERVER_URL": "https://github.example",
    }


def action(repo: Path, tmp: Path, forge: Forge, emulator_url: str, **inputs: str) -> tuple[int, dict[str, str], str]:
    """Run scripts/github-action.sh the way action.yml does; return (exit code, outputs, summary)."""
    event = tmp / "event.json"
    outputs, summary = tmp / "outputs.txt", tmp / "summary.md"
    outputs.write_text("")
    summary.write_text("")
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "NO_COLOR": "1",
        "CES_EMULATOR_HOST": emulator_url,
        "CESYNC_ENDPOINT": "emulator",  # the example's environments point at Google
        **github_env(forge, event, 7),
        "GITHUB_OUTPUT": str(outputs),
        "GITHUB_STEP_SUMMARY": str(summary),
        "RUNNER_TEMP": str(tmp / "runner"),
        **{f"INPUT_{k.upper()}": v for k, v in inputs.items()},
    }
    r = subprocess.run(
        ["bash", str(ROOT / "scripts" / "github-action.sh")], cwd=repo, env=env, capture_output=True, text=True, timeout=180
    )
    values = dict(line.split("=", 1) for line in outputs.read_text().splitlines() if "=" in line)
    return r.returncode, values, summary.read_text() + r.stdout + r.stderr


def plan_comments(forge: Forge) -> list[dict[str, Any]]:
    return [c for c in forge.thread("gh:acme/tools#7") if "cesync-plan:" in c["body"]]


def test_action_plan_comment_is_sticky_per_environment(bot: Path, tmp_path: Path, forge: Forge, emulator: Any) -> None:
    thread = forge.thread("gh:acme/tools#7")
    thread += [{"id": i, "body": f"review comment {i}"} for i in range(1, 4)]  # pagination: 2 per page
    code, out, log = action(bot, tmp_path, forge, emulator.url, command="plan", environment="dev")
    assert code == 0, log
    assert out["exitcode"] == "2" and out["has-changes"] == "true" and Path(out["plan-json"]).is_file()
    assert "### cesync plan: `dev`" in log  # the job summary
    [first] = plan_comments(forge)
    assert (
        "| 22 | 1 | 0 | 0 |" in first["body"]
    )  # the shared emulator makes apps on first use and "support-bot-dev" in first["body"]

    (bot / "tools" / "web-search.yaml").write_text("googleSearchTool:\n  name: web_search\n  description: Changed in the PR.\n")
    code, _, log = action(bot, tmp_path, forge, emulator.url, command="plan", environment="dev")
    assert code == 0, log
    [edited] = plan_comments(forge)
    assert edited["id"] == first["id"] and "Changed in the PR." in edited["body"]
    assert [m for m, _ in forge.requests].count("PATCH") == 1

    code, _, log = action(bot, tmp_path, forge, emulator.url, command="plan", environment="staging")
    assert code == 0, log
    comments = plan_comments(forge)
    assert len(comments) == 2 and "support-bot-staging" in comments[1]["body"]
    assert len(thread) == 5  # the reviewers' comments are untouched

    off_code, _, _ = action(bot, tmp_path, forge, emulator.url, command="plan", environment="prod", comment="off")
    assert off_code == 0 and len(plan_comments(forge)) == 2


def test_action_apply_saved_plan_then_drift_check(bot: Path, tmp_path: Path, forge: Forge, emulator: Any) -> None:
    code, out, log = action(bot, tmp_path, forge, emulator.url, command="validate", environment="dev")
    assert code == 0 and out["exitcode"] == "0", log
    code, out, log = action(bot, tmp_path, forge, emulator.url, command="plan", environment="dev", comment="off")
    assert code == 0 and out["has-changes"] == "true", log
    code, out, log = action(bot, tmp_path, forge, emulator.url, command="apply", **{"plan_file": out["plan-json"]})
    assert code == 0 and "22 created, 1 updated" in log, log
    code, out, log = action(bot, tmp_path, forge, emulator.url, command="plan", environment="dev", fail_on_changes="true")
    assert code == 0 and out["has-changes"] == "false", log
    (bot / "tools" / "web-search.yaml").write_text("googleSearchTool:\n  name: web_search\n  description: Drifted.\n")
    code, out, log = action(bot, tmp_path, forge, emulator.url, command="plan", environment="dev", fail_on_changes="true")
    assert code == 2 and out["has-changes"] == "true" and "Drifted." in log
    code, _, log = action(bot, tmp_path, forge, emulator.url, command="diff", environment="prod", **{"from": "dev"})
    assert code == 0 and "Live `dev` → `prod` (a comparison, not a promotion)" in log, log
    code, _, log = action(bot, tmp_path, forge, emulator.url, command="destroy")
    assert code == 1 and "unknown command 'destroy'" in log


def _big_plan(n: int) -> Any:
    parent = "projects/p/locations/us/apps/a"
    desired = [
        Resource(KINDS["tool"], f"t{i:04d}", {"googleSearchTool": {"name": f"s{i}", "description": "x" * 400}}) for i in range(n)
    ]
    return build_plan("prod", parent, desired, [])


@pytest.mark.parametrize("n", [3, 400])
def test_markdown_is_cut_on_resource_boundaries(n: int) -> None:
    plan = _big_plan(n)
    full = render_markdown(plan)
    text = render_markdown(plan, max_chars=GITHUB_COMMENT_LIMIT, full_plan="[the artifacts](https://x)")
    if len(full) <= GITHUB_COMMENT_LIMIT:
        assert text == full and "Cut to fit" not in text
        return
    assert len(text) <= GITHUB_COMMENT_LIMIT and text.startswith("<!-- cesync-plan:prod:")
    shown = text.count("<summary><code>")  # a resource's section (the picture of what it touches is no resource)
    assert text.count("<details") == text.count("</details>") and shown > 0  # only whole sections
    assert f"{n - shown} of {n} resources are not shown here. The full plan is in [the artifacts](https://x)." in text
    assert text.rstrip().endswith(f"Digest `{plan.digest[:19]}`.")
    assert full.startswith(text.split("> **Cut")[0])  # what is shown is the plan's own beginning


def test_comment_command_cuts_big_plans_and_links_the_run(tmp_path: Path, forge: Forge) -> None:
    planfile = tmp_path / "plan.json"
    planfile.write_text(_big_plan(400).to_json())
    r = cesync("comment", str(planfile), env=github_env(forge, tmp_path / "event.json", 9))
    assert r.returncode == 0 and "created the plan comment for 'prod' on #9" in r.stdout, r.stderr
    [comment] = forge.thread("gh:acme/tools#9")
    assert len(comment["body"]) <= GITHUB_COMMENT_LIMIT
    assert "[this run's artifacts](https://github.example/acme/tools/actions/runs/42)" in comment["body"]


def test_gitlab_notes_are_sticky_too(tmp_path: Path, forge: Forge) -> None:
    target = CommentTarget("gitlab", f"{forge.url}/api/v4", "1234", 5, TOKEN)
    forge.thread("gl:1234!5").extend({"id": i, "body": "a note"} for i in range(1, 4))
    marker = "<!-- cesync-plan:dev:projects/p/locations/us/apps/a -->"
    assert upsert_comment(target, marker, marker + "\nfirst", scrubber=Scrubber()) == "created"
    assert upsert_comment(target, marker, marker + "\nsecond", scrubber=Scrubber()) == "updated"
    notes = [n for n in forge.thread("gl:1234!5") if marker in n["body"]]
    assert [n["body"].splitlines()[1] for n in notes] == ["second"]


MARKER = "<!-- cesync-plan:dev:projects/p/locations/us/apps/a -->"
HUMAN_GH = {"login": "mallory", "type": "User"}
OTHER_BOT_GL = {"id": 99, "username": "someone"}


@pytest.mark.parametrize(
    ("provider", "personal", "planted"),
    [
        ("github", None, {"user": HUMAN_GH}),  # Actions' token: only a Bot's comment counts
        ("github", {"login": "deployer", "type": "User"}, {"user": HUMAN_GH}),  # a personal token: only its own
        ("github", {"login": "deployer", "type": "User"}, {"user": {"login": "github-actions[bot]", "type": "Bot"}}),
        ("gitlab", None, {"author": OTHER_BOT_GL}),
        ("gitlab", None, {}),  # no author at all
    ],
    ids=["gh-actions-vs-human", "gh-personal-vs-human", "gh-personal-vs-other-bot", "gl-other-user", "gl-no-author"],
)
def test_a_planted_marker_is_never_edited(
    forge: Forge, provider: str, personal: dict[str, str] | None, planted: dict[str, Any]
) -> None:
    """Someone else's comment holding the marker (a PR author pasting it) is left alone: cesync
    writes its own comment and keeps editing that one."""
    forge.github_user = personal
    if provider == "github":
        target, key = CommentTarget("github", forge.url, "acme/tools", 5, TOKEN), "gh:acme/tools#5"
    else:
        target, key = CommentTarget("gitlab", f"{forge.url}/api/v4", "1234", 5, TOKEN), "gl:1234!5"
    forge.thread(key).append({"id": 1, "body": f"{MARKER}\nplanted text", **planted})
    assert upsert_comment(target, MARKER, MARKER + "\nfirst", scrubber=Scrubber()) == "created"
    assert upsert_comment(target, MARKER, MARKER + "\nsecond", scrubber=Scrubber()) == "updated"
    assert [c["body"].splitlines()[1] for c in forge.thread(key)] == ["planted text", "second"]


def test_another_marker_quoted_in_our_comment_does_not_make_it_that_comment(forge: Forge) -> None:
    """A plan quotes the repo's text: a marker of another app written into a field shows up in
    our comment's body, and must not make the other app's run edit it."""
    target = CommentTarget("github", forge.url, "acme/tools", 5, TOKEN)
    other = "<!-- cesync-plan:dev:projects/p/locations/us/apps/other -->"
    assert upsert_comment(target, MARKER, f"{MARKER}\n```diff\n+ instruction: {other}\n```", scrubber=Scrubber()) == "created"
    assert upsert_comment(target, other, f"{other}\nthe other app's plan", scrubber=Scrubber()) == "created"
    assert [c["body"].splitlines()[0] for c in forge.thread("gh:acme/tools#5")] == [MARKER, other]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["```", "````", " ```", "<!--", "-->", "text", "~~~", "`"]), min_size=1, max_size=8))
def test_no_field_text_can_end_the_diff_block(parts: list[str]) -> None:
    """Whatever an instruction holds (code fences, HTML comments), every line of the change stays
    inside the rendered diff block: nothing of the plan turns into Markdown the repo chose."""
    from markdown_it import MarkdownIt

    parent = "projects/p/locations/us/apps/a"
    before = "\n".join(["You are a bot.", *parts, "Never give refunds."]) + "\n"
    after = before.replace("Never give refunds.", "Always give full refunds.")
    desired = [Resource(KINDS["agent"], "a", {"displayName": "A", "llmAgent": {}, "instruction": after})]
    remote = [Resource(KINDS["agent"], "a", {"displayName": "A", "llmAgent": {}, "instruction": before}, etag="e")]
    text = render_markdown(build_plan("prod", parent, desired, remote))
    code = "".join(t.content for t in MarkdownIt("commonmark").parse(text) if t.type == "fence")
    assert "-Never give refunds." in code and "+Always give full refunds." in code, text


def test_a_page_link_to_another_host_gets_no_token() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        link = '<https://evil.example/repos/acme/tools/issues/5/comments?page=2>; rel="next"'
        return httpx.Response(200, json=[{"id": 1, "body": "x"}], headers={"Link": link})

    target = CommentTarget("github", "https://api.github.com", "acme/tools", 5, TOKEN)
    with pytest.raises(CesyncError, match=r"refusing to follow a comment page link to https://evil\.example"):
        upsert_comment(target, MARKER, "body", transport=httpx.MockTransport(handler), scrubber=Scrubber())
    assert seen and not any("evil.example" in url for url in seen)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"GITHUB_REPOSITORY": "acme/tools", "GITHUB_TOKEN": "wrong", "GITHUB_EVENT_PATH": "EVENT"}, "401"),
        ({"GITHUB_REPOSITORY": "acme/tools", "GITHUB_TOKEN": TOKEN}, "not for a pull/merge request"),
        ({"GITHUB_TOKEN": TOKEN, "GITHUB_EVENT_PATH": "EVENT"}, "GITHUB_REPOSITORY not set"),
    ],
    ids=["bad-token", "no-pr", "no-repo"],
)
def test_comment_errors_are_clear(tmp_path: Path, forge: Forge, env: dict[str, str], expected: str) -> None:
    planfile = tmp_path / "plan.json"
    planfile.write_text(_big_plan(1).to_json())
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 3}}))
    env = {k: (str(event) if v == "EVENT" else v) for k, v in env.items()} | {"GITHUB_API_URL": forge.url}
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_") and k != "GITLAB_CI"}
    r = subprocess.run(
        [sys.executable, "-m", "cesync.cli", "comment", str(planfile)],
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1 and expected in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_upsert_reports_unreachable_api() -> None:
    with pytest.raises(CesyncError, match=r"cannot reach http://127\.0\.0\.1:9"):
        upsert_comment(CommentTarget("github", "http://127.0.0.1:9", "a/b", 1, "t"), "m", "body", scrubber=Scrubber())


def test_matrix_lists_every_app_and_environment(tmp_path: Path) -> None:
    for app in ("support-bot", "sales-bot"):
        shutil.copytree(EXAMPLES / "support-bot", tmp_path / "apps" / app, ignore=shutil.ignore_patterns(".cesync"))
    shutil.copytree(EXAMPLES / "support-bot", tmp_path / ".hidden" / "x")  # skipped
    r = cesync("matrix", "--root", str(tmp_path), "--env", "dev", "--env", "prod")
    assert r.returncode == 0, r.stderr
    jobs = json.loads(r.stdout)
    assert [(j["dir"], j["environment"]) for j in jobs] == [
        ("apps/sales-bot", "dev"),
        ("apps/sales-bot", "prod"),
        ("apps/support-bot", "dev"),
        ("apps/support-bot", "prod"),
    ]
    (tmp_path / "apps" / "sales-bot" / "tools" / "broken.yaml").write_text("googleSearchTool: {nme: x}\n")
    bad = cesync("validate", "--recursive", "--dir", str(tmp_path / "apps"))
    assert bad.returncode == 1 and "sales-bot/tools/broken.yaml:1:" in bad.stderr
    assert "ok: 23 files in support-bot valid" in bad.stdout


def test_matrix_names_the_folder_of_a_broken_cesync_yaml(tmp_path: Path) -> None:
    for app in ("a", "b"):
        shutil.copytree(EXAMPLES / "support-bot", tmp_path / "apps" / app, ignore=shutil.ignore_patterns(".cesync"))
    config = tmp_path / "apps" / "b" / "cesync.yaml"
    config.write_text(config.read_text().replace("version: 1", "version: 1\nbogus: 1"))
    r = cesync("matrix", "--root", str(tmp_path))
    assert r.returncode == 1 and r.stderr.startswith("apps/b/cesync.yaml:"), r.stderr


# --- lint of what CI runs ---------------------------------------------------------------------

WORKFLOWS = sorted((EXAMPLES / "ci" / "github").glob("*.yml"))
GITLAB = EXAMPLES / "ci" / "gitlab" / ".gitlab-ci.yml"


@pytest.mark.parametrize(
    ("schema", "files"),
    [
        ("vendor.github-workflows", WORKFLOWS),
        ("vendor.github-actions", [ROOT / "action.yml"]),
        ("vendor.gitlab-ci", [GITLAB]),
    ],
    ids=["workflows", "action", "gitlab"],
)
def test_ci_files_match_their_schemas(schema: str, files: list[Path]) -> None:
    assert files
    r = subprocess.run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", schema, *map(str, files)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stdout + r.stderr


def _run_blocks() -> list[tuple[str, str]]:
    """Every shell script the CI files run, with ${{ }} expressions replaced as the runner would."""
    yaml = YAML(typ="safe", pure=True)
    blocks: list[tuple[str, str]] = [("scripts/github-action.sh", (ROOT / "scripts" / "github-action.sh").read_text())]
    for path in [*WORKFLOWS, ROOT / "action.yml"]:
        doc = yaml.load(path.read_text())
        jobs = doc.get("jobs", {}) if "jobs" in doc else {"action": doc["runs"]}
        for name, job in jobs.items():
            for i, step in enumerate(job.get("steps", [])):
                if "run" in step:
                    blocks.append((f"{path.name}:{name}:{i}", step["run"]))
    gitlab = yaml.load(GITLAB.read_text())
    for name, job in gitlab.items():
        if isinstance(job, dict):
            for key in ("before_script", "script"):
                if key in job:
                    blocks.append((f".gitlab-ci.yml:{name}:{key}", "\n".join(job[key])))
    return [(where, re.sub(r"\$\{\{[^}]*\}\}", "expr", text)) for where, text in blocks]


@pytest.mark.parametrize(("where", "script"), _run_blocks(), ids=[w for w, _ in _run_blocks()])
def test_shell_steps_pass_shellcheck(where: str, script: str) -> None:
    r = subprocess.run(
        [str(BIN / "shellcheck"), "--shell=bash", "--severity=warning", "-"],
        input=script,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, f"{where}:\n{r.stdout}"


def test_pre_commit_hooks_with_try_repo(tmp_path: Path) -> None:
    """The hooks as a user gets them: pre-commit installs cesync from this repo and runs them.

    The config and the commit are the ones ``pre-commit try-repo`` makes (its own _repo_ref: this
    repo's HEAD, or a commit of its uncommitted changes), run with ``pre-commit run`` over one
    PRE_COMMIT_HOME: try-repo keeps its store in a temporary directory of its own, so each of the
    three runs would install cesync into a new hook environment (15 s to 30 s each)."""
    from pre_commit.commands.try_repo import _repo_ref

    repo = tmp_path / "tools-repo"
    shutil.copytree(EXAMPLES / "support-bot", repo, ignore=shutil.ignore_patterns(".cesync"))
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    (tmp_path / "shadow").mkdir()
    hooks_repo, rev = _repo_ref(str(tmp_path / "shadow"), str(ROOT), None)
    config = tmp_path / "pre-commit-config.yaml"
    hooks = [{"id": "cesync-validate"}, {"id": "cesync-schema-check"}]
    config.write_text(json.dumps({"repos": [{"repo": hooks_repo, "rev": rev, "hooks": hooks}]}))

    def run_hook(hook: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / "pre-commit"), "run", "--config", str(config), hook, "--all-files"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    ok = run_hook("cesync-validate")
    assert ok.returncode == 0 and "Passed" in ok.stdout, ok.stdout + ok.stderr
    (repo / "tools" / "web-search.yaml").write_text("googleSearchTool:\n  nme: web_search\n")
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    bad = run_hook("cesync-validate")
    assert bad.returncode == 1 and "tools/web-search.yaml:2:3: unknown field 'nme'" in bad.stdout, bad.stdout
    schemas = repo / "schemas"
    subprocess.run([str(BIN / "cesync"), "schema", "--out", str(schemas)], check=True, capture_output=True)
    (schemas / "tool.schema.json").write_text("{}")
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    stale = run_hook("cesync-schema-check")
    assert stale.returncode == 1 and "stale JSON Schemas" in stale.stdout, stale.stdout
    installs = [line for line in (ok.stdout + bad.stdout + stale.stdout).splitlines() if "Installing environment" in line]
    assert len(installs) == 1, installs  # one hook environment served the three runs


def test_comment_command_on_gitlab(tmp_path: Path, forge: Forge) -> None:
    """What the GitLab example's plan job runs: cesync comment plan.json --provider gitlab."""
    planfile = tmp_path / "plan.json"
    planfile.write_text(_big_plan(2).to_json())
    env = {
        "GITLAB_CI": "true",
        "CI_API_V4_URL": f"{forge.url}/api/v4",
        "CI_PROJECT_ID": "77",
        "CI_MERGE_REQUEST_IID": "12",
        "GITLAB_TOKEN": TOKEN,
        "CI_JOB_URL": "https://gitlab.example/acme/tools/-/jobs/5",
    }
    for expected in ("created", "updated"):
        r = cesync("comment", str(planfile), "--provider", "gitlab", env=env)
        assert r.returncode == 0 and f"{expected} the plan comment for 'prod' on #12" in r.stdout, r.stderr
    [note] = forge.thread("gl:77!12")
    assert note["body"].startswith("<!-- cesync-plan:prod:projects/p/locations/us/apps/a -->")


def _identity(job: dict[str, Any]) -> str:
    """The service-account variable a GitHub job authenticates as."""
    accounts = [s["with"]["service_account"] for s in job.get("steps", []) if "google-github-actions/auth" in s.get("uses", "")]
    assert len(accounts) == 1, job
    return accounts[0]


def test_examples_plan_read_only_and_apply_only_in_a_protected_environment() -> None:
    """Least privilege (#13 item 4): only jobs that apply hold the deploy identity, and only in an environment."""
    yaml = YAML(typ="safe", pure=True)
    seen = {"plan": 0, "apply": 0}
    for path in WORKFLOWS:
        for name, job in yaml.load(path.read_text())["jobs"].items():
            commands = [s.get("with", {}).get("command") for s in job.get("steps", []) if s.get("uses") == "cesync/cesync@v1"]
            if not commands:
                continue
            steps = [s for s in job.get("steps", []) if s.get("uses") == "cesync/cesync@v1"]
            if all(s["with"].get("command") == "test" and "--local" in s["with"].get("args", "") for s in steps):
                # runs the pull request's code: no credential of any kind in reach
                assert not any("google-github-actions/auth" in s.get("uses", "") for s in job["steps"]), name
                assert job.get("permissions") == {"contents": "read"}, f"{path.name}:{name}"
                assert all(s["with"].get("github-token") == "" for s in steps), name
                seen["local"] = seen.get("local", 0) + 1
                continue
            kind = "apply" if "apply" in commands else "plan"
            seen[kind] += 1
            expected = "GCP_DEPLOY_SERVICE_ACCOUNT" if kind == "apply" else "GCP_PLAN_SERVICE_ACCOUNT"
            assert expected in _identity(job), f"{path.name}:{name}"
            assert ("environment" in job) == (kind == "apply"), f"{path.name}:{name}"
    gitlab = yaml.load(GITLAB.read_text())
    for name, job in gitlab.items():
        if not isinstance(job, dict) or "script" not in job:
            continue
        if any("cesync preview" in line for line in job["script"]):
            # a preview writes only to its own app, with the editor of a sandbox project of its own
            assert job.get("variables", {}).get("GCP_SERVICE_ACCOUNT") == "$GCP_PREVIEW_SERVICE_ACCOUNT", name
            seen["preview"] = seen.get("preview", 0) + 1
            continue
        kind = "apply" if any("cesync apply" in line for line in job["script"]) else "plan"
        seen[kind] += 1
        expected = "$GCP_DEPLOY_SERVICE_ACCOUNT" if kind == "apply" else "$GCP_PLAN_SERVICE_ACCOUNT"
        assert job.get("variables", {}).get("GCP_SERVICE_ACCOUNT") == expected, name
        assert ("environment" in job) == (kind == "apply"), name
    assert seen["plan"] >= 5 and seen["apply"] >= 4 and seen.get("local") == 1 and seen.get("preview") == 2


def test_preview_jobs_hold_only_the_sandbox_identity_and_skip_forks() -> None:
    """A preview writes on a pull request's behalf: only the preview identity, never from a fork."""
    yaml = YAML(typ="safe", pure=True)
    jobs = [
        (path.name, name, job)
        for path in WORKFLOWS
        for name, job in yaml.load(path.read_text())["jobs"].items()
        if any("cesync preview" in str(s.get("run", "")) for s in job.get("steps", []))
    ]
    assert {n for _, n, _ in jobs} == {"preview", "cleanup"}
    for file, name, job in jobs:
        assert "GCP_PREVIEW_SERVICE_ACCOUNT" in _identity(job), f"{file}:{name}"
        assert "head.repo.full_name == github.repository" in job["if"], f"{file}:{name}"
        assert "environment" not in job
        runs = [str(s.get("run", "")) for s in job["steps"]]
        assert all("--env preview" in r for r in runs if r.startswith("cesync ")), runs

"""One sticky plan comment per (environment, app) on a pull or merge request.

The comment carries the renderer's marker (``<!-- cesync-plan:ENV:APP -->``): a run
finds the comment with its marker and edits it, or creates one. Comments of other
environments and apps, and everyone else's, are left alone.

Where the request and the token come from, as CI systems set them:

- GitHub Actions: ``GITHUB_API_URL``, ``GITHUB_REPOSITORY``, the pull request number
  from ``GITHUB_EVENT_PATH``, a token in ``GITHUB_TOKEN``;
- GitLab CI: ``CI_API_V4_URL``, ``CI_PROJECT_ID``, ``CI_MERGE_REQUEST_IID``, a token with
  the api scope in ``GITLAB_TOKEN``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from .errors import CesyncError

__all__ = ["CommentTarget", "find_target", "run_link", "upsert_comment"]

TIMEOUT = httpx.Timeout(30.0)


@dataclass(frozen=True)
class CommentTarget:
    provider: str  # github | gitlab
    api: str  # base URL of the REST API
    project: str  # owner/name (GitHub) or project id (GitLab)
    number: int  # pull request number or merge request iid
    token: str

    @property
    def headers(self) -> dict[str, str]:
        if self.provider == "github":
            return {
                "Authorization": f"Bearer {self.token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
            }
        return {"PRIVATE-TOKEN": self.token}

    @property
    def list_url(self) -> str:
        if self.provider == "github":
            return f"{self.api}/repos/{self.project}/issues/{self.number}/comments"
        return f"{self.api}/projects/{quote(self.project, safe='')}/merge_requests/{self.number}/notes"

    def edit_url(self, comment_id: Any) -> str:
        if self.provider == "github":
            return f"{self.api}/repos/{self.project}/issues/comments/{comment_id}"
        return f"{self.list_url}/{comment_id}"


def find_target(env: Mapping[str, str], *, provider: str | None = None, number: int | None = None) -> CommentTarget:
    """The pull/merge request this CI job runs for, from the CI's own variables."""
    provider = provider or ("gitlab" if env.get("GITLAB_CI") else "github")
    if provider == "github":
        repo, token = env.get("GITHUB_REPOSITORY", ""), env.get("GITHUB_TOKEN", "")
        if number is None and env.get("GITHUB_EVENT_PATH"):
            number = _pr_number(Path(env["GITHUB_EVENT_PATH"]))
        api = env.get("GITHUB_API_URL", "https://api.github.com")
        missing = [n for n, v in (("GITHUB_REPOSITORY", repo), ("GITHUB_TOKEN", token)) if not v]
    elif provider == "gitlab":
        repo, token = env.get("CI_PROJECT_ID", ""), env.get("GITLAB_TOKEN", "")
        if number is None and env.get("CI_MERGE_REQUEST_IID", "").isdigit():
            number = int(env["CI_MERGE_REQUEST_IID"])
        api = env.get("CI_API_V4_URL", "https://gitlab.com/api/v4")
        missing = [n for n, v in (("CI_PROJECT_ID", repo), ("GITLAB_TOKEN", token)) if not v]
    else:
        raise CesyncError(f"unknown provider {provider!r}: github or gitlab")
    if missing:
        raise CesyncError(f"cannot comment: {' and '.join(missing)} not set (run this in CI, or set them)")
    if number is None:
        raise CesyncError("cannot comment: this run is not for a pull/merge request (pass --pr N)")
    return CommentTarget(provider, api.rstrip("/"), repo, number, token)


def _pr_number(event_path: Path) -> int | None:
    try:
        event = json.loads(event_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    number = (event.get("pull_request") or {}).get("number") or (event.get("issue") or {}).get("number")
    return int(number) if isinstance(number, int) else None


def upsert_comment(target: CommentTarget, marker: str, body: str, *, transport: httpx.BaseTransport | None = None) -> str:
    """Edit the comment holding marker, or create it; returns 'created' or 'updated'."""
    try:
        with httpx.Client(headers=target.headers, timeout=TIMEOUT, transport=transport) as client:
            existing = next((c for c in _comments(client, target) if marker in str(c.get("body", ""))), None)
            if existing is None:
                _check(client.post(target.list_url, json={"body": body}), "create the comment")
                return "created"
            edit = client.patch if target.provider == "github" else client.put
            _check(edit(target.edit_url(existing["id"]), json={"body": body}), "edit the comment")
            return "updated"
    except httpx.HTTPError as exc:
        raise CesyncError(f"cannot reach {target.api}: {exc or type(exc).__name__}") from None


def _comments(client: httpx.Client, target: CommentTarget) -> list[dict[str, Any]]:
    """Every comment, following pagination (GitHub's Link header, GitLab's X-Next-Page)."""
    out: list[dict[str, Any]] = []
    url: str | None = target.list_url
    params: dict[str, Any] | None = {"per_page": 100}
    seen: set[str] = set()
    for _ in range(100):  # 10,000 comments is enough for any pull request
        if url is None:
            break
        key = f"{url}?{params}"
        if key in seen:  # a server that repeats a page must not make us loop
            break
        seen.add(key)
        reply = _check(client.get(url, params=params), "list the comments")
        page = reply.json()
        if not isinstance(page, list):
            raise CesyncError(f"unexpected answer listing comments at {url}")
        out += [c for c in page if isinstance(c, dict)]
        next_link = reply.links.get("next", {}).get("url")
        if next_link:
            url, params = next_link, None  # the link carries its own query
        elif reply.headers.get("X-Next-Page"):
            params = {"per_page": 100, "page": reply.headers["X-Next-Page"]}
        else:
            url = None
    return out


def _check(reply: httpx.Response, what: str) -> httpx.Response:
    if reply.is_success:
        return reply
    try:
        message = reply.json().get("message", reply.text)
    except ValueError:
        message = reply.text
    hint = ""
    if reply.status_code in (401, 403):
        hint = " (the token needs permission to write pull request comments: pull-requests: write / api scope)"
    raise CesyncError(f"cannot {what}: {reply.status_code} from {reply.request.url}: {message}{hint}")


def run_link(env: Mapping[str, str]) -> str | None:
    """Where this CI run's artifacts are, for the note on a cut comment."""
    if env.get("GITHUB_RUN_ID") and env.get("GITHUB_REPOSITORY"):
        server = env.get("GITHUB_SERVER_URL", "https://github.com")
        return f"[this run's artifacts]({server}/{env['GITHUB_REPOSITORY']}/actions/runs/{env['GITHUB_RUN_ID']})"
    if env.get("CI_JOB_URL"):
        return f"[this job's artifacts]({env['CI_JOB_URL']}/artifacts/browse)"
    return None

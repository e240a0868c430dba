"""One sticky plan comment per (environment, app) on a pull or merge request.

The comment carries the renderer's marker (``<!-- cesync-plan:ENV:APP -->``): a run
finds the comment with its marker and edits it, or creates one. Comments of other
environments and apps, and everyone else's, are left alone: only a comment written by the
token's own identity counts, so a pull request author who pastes the marker into a
comment of theirs cannot have cesync overwrite it (or plant text above the plan). Each code host is a
:class:`Forge` in ``FORGES``, chosen by name; adding one is one subclass.

Where the request and the token come from, as CI systems set them:

- GitHub Actions: ``GITHUB_API_URL``, ``GITHUB_REPOSITORY``, the pull request number
  from ``GITHUB_EVENT_PATH``, a token in ``GITHUB_TOKEN``;
- GitLab CI: ``CI_API_V4_URL``, ``CI_PROJECT_ID``, ``CI_MERGE_REQUEST_IID``, a token with
  the api scope in ``GITLAB_TOKEN``.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote

import httpx

from ..core.scrubber import Scrubber, clip
from ..errors import CesyncError

__all__ = ["FORGES", "CommentTarget", "Forge", "GitHub", "GitLab", "find_target", "run_link", "upsert_comment"]

TIMEOUT = httpx.Timeout(30.0)


@dataclass(frozen=True)
class CommentTarget:
    provider: str  # a name in FORGES: github | gitlab
    api: str  # base URL of the REST API
    project: str  # owner/name (GitHub) or project id (GitLab)
    number: int  # pull request number or merge request iid
    token: str

    @property
    def forge(self) -> type[Forge]:
        return FORGES[self.provider]

    @property
    def headers(self) -> dict[str, str]:
        return self.forge.headers(self.token)

    @property
    def list_url(self) -> str:
        return self.forge.list_url(self)

    def edit_url(self, comment_id: Any) -> str:
        return self.forge.edit_url(self, comment_id)


@dataclass(frozen=True)
class Located:
    """What a CI job's variables say about its pull/merge request."""

    api: str
    project: str
    number: int | None
    token: str
    missing: list[str]  # the variables that should have said it


Params = dict[str, Any] | None


class Forge(ABC):
    """One code host's comment API. The sticky-comment logic (find by marker, then create or
    update) and the page loop are shared; a forge says where, how and what comes next."""

    name: ClassVar[str]
    edit_method: ClassVar[str]

    def __init__(self, target: CommentTarget, client: httpx.Client) -> None:
        self.target, self.client = target, client

    @staticmethod
    @abstractmethod
    def detect(env: Mapping[str, str]) -> bool:
        """Whether this job runs in this forge's CI (the default forge when none says so)."""

    @staticmethod
    @abstractmethod
    def locate(env: Mapping[str, str], number: int | None) -> Located: ...

    @staticmethod
    @abstractmethod
    def run_link(env: Mapping[str, str]) -> str | None:
        """A Markdown link to this CI run's artifacts, where the job's variables give one."""

    @staticmethod
    @abstractmethod
    def headers(token: str) -> dict[str, str]: ...

    @staticmethod
    @abstractmethod
    def list_url(target: CommentTarget) -> str: ...

    @staticmethod
    @abstractmethod
    def edit_url(target: CommentTarget, comment_id: Any) -> str: ...

    @staticmethod
    @abstractmethod
    def next_page(reply: httpx.Response, url: str, params: Params) -> tuple[str, Params] | None:
        """The request for the page after reply, or None after the last one."""

    @abstractmethod
    def is_ours(self, comment: dict[str, Any]) -> bool:
        """Whether the token's own identity wrote comment."""

    def find(self, marker: str) -> dict[str, Any] | None:
        """Our comment whose first line is marker: the plan quotes the repo's text, so another
        app's or environment's marker can stand further down in a comment of ours."""
        return next(
            (c for c in self.comments() if str(c.get("body", "")).split("\n", 1)[0].strip() == marker and self.is_ours(c)), None
        )

    @cached_property
    def me(self) -> dict[str, Any]:
        """The token's own user (``{api}/user`` on both forges), or {} where it has none to read."""
        reply = self.client.get(f"{self.target.api}/user")
        if reply.status_code in (401, 403, 404):
            return {}
        body = _json(_check(reply, "read the token's user"), "read the token's user")
        return body if isinstance(body, dict) else {}

    def create(self, body: str) -> None:
        _check(self.client.post(self.list_url(self.target), json={"body": body}), "create the comment")

    def update(self, comment_id: Any, body: str) -> None:
        url = self.edit_url(self.target, comment_id)
        _check(self.client.request(self.edit_method, url, json={"body": body}), "edit the comment")

    def comments(self) -> list[dict[str, Any]]:
        """Every comment, following the forge's pagination."""
        out: list[dict[str, Any]] = []
        request: tuple[str, Params] | None = (self.list_url(self.target), {"per_page": 100})
        seen: set[str] = set()
        for _ in range(100):  # 10,000 comments is enough for any pull request
            if request is None:
                break
            url, params = request
            key = f"{url}?{params}"
            if key in seen:  # a server that repeats a page must not make us loop
                break
            seen.add(key)
            reply = _check(self.client.get(url, params=params), "list the comments")
            page = _json(reply, "list the comments")
            if not isinstance(page, list):
                raise CesyncError(f"unexpected answer listing comments at {url}")
            out += [c for c in page if isinstance(c, dict)]
            request = self.next_page(reply, url, params)
            if request is not None:
                _same_origin(request[0], self.target.api)
        return out


def _json(reply: httpx.Response, what: str) -> Any:
    try:
        return reply.json()
    except ValueError:  # JSONDecodeError and UnicodeDecodeError alike
        raise CesyncError(f"cannot {what}: the answer from {reply.request.url} is not JSON") from None


def _object(value: Any) -> dict[str, Any]:
    """A part of a forge's answer that should be an object: anything else counts as empty."""
    return value if isinstance(value, dict) else {}


def _link_next(reply: httpx.Response) -> tuple[str, Params] | None:
    link = reply.links.get("next", {}).get("url")
    return (link, None) if link else None  # the link carries its own query


def _same_origin(url: str, api: str) -> None:
    """The token goes with every page request: a Link header naming another host or scheme
    (a compromised or misconfigured proxy, a hostile mirror) must not receive it."""
    try:
        link, base = httpx.URL(url), httpx.URL(api)
    except httpx.InvalidURL:
        raise CesyncError(f"refusing to follow a comment page link that is not a URL: {clip(repr(url), 120)}") from None
    if (link.scheme, link.host, link.port) != (base.scheme, base.host, base.port):
        raise CesyncError(f"refusing to follow a comment page link to {link.scheme}://{link.host}: not the API at {api}")


class GitHub(Forge):
    """Pull request comments (issue comments); pages by the Link header."""

    name = "github"
    edit_method = "PATCH"

    @staticmethod
    def detect(env: Mapping[str, str]) -> bool:
        return bool(env.get("GITHUB_ACTIONS"))

    @staticmethod
    def run_link(env: Mapping[str, str]) -> str | None:
        if env.get("GITHUB_RUN_ID") and env.get("GITHUB_REPOSITORY"):
            server = env.get("GITHUB_SERVER_URL", "https://github.com")
            return f"[this run's artifacts]({server}/{env['GITHUB_REPOSITORY']}/actions/runs/{env['GITHUB_RUN_ID']})"
        return None

    @staticmethod
    def locate(env: Mapping[str, str], number: int | None) -> Located:
        repo, token = env.get("GITHUB_REPOSITORY", ""), env.get("GITHUB_TOKEN", "")
        if number is None and env.get("GITHUB_EVENT_PATH"):
            number = _pr_number(Path(env["GITHUB_EVENT_PATH"]))
        api = env.get("GITHUB_API_URL", "https://api.github.com")
        missing = [n for n, v in (("GITHUB_REPOSITORY", repo), ("GITHUB_TOKEN", token)) if not v]
        return Located(api, repo, number, token, missing)

    @staticmethod
    def headers(token: str) -> dict[str, str]:
        return {
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
        }

    @staticmethod
    def list_url(target: CommentTarget) -> str:
        return f"{target.api}/repos/{target.project}/issues/{target.number}/comments"

    @staticmethod
    def edit_url(target: CommentTarget, comment_id: Any) -> str:
        return f"{target.api}/repos/{target.project}/issues/comments/{comment_id}"

    @staticmethod
    def next_page(reply: httpx.Response, url: str, params: Params) -> tuple[str, Params] | None:
        return _link_next(reply)

    def is_ours(self, comment: dict[str, Any]) -> bool:
        # A personal or app token can read its user; Actions' GITHUB_TOKEN cannot (403), and
        # then a comment is ours when a bot wrote it: no person's account is of type Bot.
        user = _object(comment.get("user"))
        if login := self.me.get("login"):
            return bool(user.get("login") == login)
        return bool(user.get("type") == "Bot")


class GitLab(Forge):
    """Merge request notes; pages by the Link header, or X-Next-Page where there is none."""

    name = "gitlab"
    edit_method = "PUT"

    @staticmethod
    def detect(env: Mapping[str, str]) -> bool:
        return bool(env.get("GITLAB_CI"))

    @staticmethod
    def run_link(env: Mapping[str, str]) -> str | None:
        return f"[this job's artifacts]({env['CI_JOB_URL']}/artifacts/browse)" if env.get("CI_JOB_URL") else None

    @staticmethod
    def locate(env: Mapping[str, str], number: int | None) -> Located:
        repo, token = env.get("CI_PROJECT_ID", ""), env.get("GITLAB_TOKEN", "")
        if number is None and env.get("CI_MERGE_REQUEST_IID", "").isdigit():
            number = int(env["CI_MERGE_REQUEST_IID"])
        api = env.get("CI_API_V4_URL", "https://gitlab.com/api/v4")
        missing = [n for n, v in (("CI_PROJECT_ID", repo), ("GITLAB_TOKEN", token)) if not v]
        return Located(api, repo, number, token, missing)

    @staticmethod
    def headers(token: str) -> dict[str, str]:
        return {"PRIVATE-TOKEN": token}

    @staticmethod
    def list_url(target: CommentTarget) -> str:
        return f"{target.api}/projects/{quote(target.project, safe='')}/merge_requests/{target.number}/notes"

    @staticmethod
    def edit_url(target: CommentTarget, comment_id: Any) -> str:
        return f"{GitLab.list_url(target)}/{comment_id}"

    @staticmethod
    def next_page(reply: httpx.Response, url: str, params: Params) -> tuple[str, Params] | None:
        if following := _link_next(reply):
            return following
        if reply.headers.get("X-Next-Page"):
            return url, {"per_page": 100, "page": reply.headers["X-Next-Page"]}
        return None

    def is_ours(self, comment: dict[str, Any]) -> bool:
        # Every GitLab token (personal, project, job) can read its user.
        me = self.me.get("id")
        return me is not None and _object(comment.get("author")).get("id") == me


FORGES: dict[str, type[Forge]] = {f.name: f for f in (GitHub, GitLab)}
DEFAULT_FORGE = GitHub  # where no CI variable names one


def find_target(env: Mapping[str, str], *, provider: str | None = None, number: int | None = None) -> CommentTarget:
    """The pull/merge request this CI job runs for, from the CI's own variables."""
    provider = provider or next((f for f in FORGES.values() if f.detect(env)), DEFAULT_FORGE).name
    forge = FORGES.get(provider)
    if forge is None:
        raise CesyncError(f"unknown provider {provider!r}: {' or '.join(FORGES)}")
    found = forge.locate(env, number)
    if found.missing:
        raise CesyncError(f"cannot comment: {' and '.join(found.missing)} not set (run this in CI, or set them)")
    if found.number is None:
        raise CesyncError("cannot comment: this run is not for a pull/merge request (pass --pr N)")
    return CommentTarget(provider, found.api.rstrip("/"), found.project, found.number, found.token)


def _pr_number(event_path: Path) -> int | None:
    try:
        event = json.loads(event_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    number = (event.get("pull_request") or {}).get("number") or (event.get("issue") or {}).get("number")
    return int(number) if isinstance(number, int) else None


def upsert_comment(
    target: CommentTarget, marker: str, body: str, *, scrubber: Scrubber, transport: httpx.BaseTransport | None = None
) -> str:
    """Edit the comment holding marker, or create it; returns 'created' or 'updated'.

    The body takes the same safety net as the terminal (the run's scrubber): a comment is
    public to everyone who can read the pull request."""
    body = scrubber.scrub(body)
    try:
        with httpx.Client(headers=target.headers, timeout=TIMEOUT, transport=transport) as client:
            forge = target.forge(target, client)
            existing = forge.find(marker)
            if existing is None:
                forge.create(body)
                return "created"
            comment_id = existing.get("id")
            if not isinstance(comment_id, int) or isinstance(comment_id, bool) or comment_id < 1:
                # Both forges number their comments; any other id would be pasted into the edit
                # URL ('../../..' or '?') and send the token's PATCH to another resource of the API.
                raise CesyncError(
                    f"the API gave our comment a comment id that is not a number ({clip(repr(str(comment_id)), 60)}): not edited"
                )
            forge.update(comment_id, body)
            return "updated"
    except httpx.HTTPError as exc:
        raise CesyncError(f"cannot reach {target.api}: {exc or type(exc).__name__}") from None


def _check(reply: httpx.Response, what: str) -> httpx.Response:
    if reply.is_success:
        return reply
    try:
        message = _object(reply.json()).get("message", reply.text)
    except ValueError:
        message = reply.text
    hint = ""
    if reply.status_code in (401, 403):
        hint = " (the token needs permission to write pull request comments: pull-requests: write / api scope)"
    raise CesyncError(f"cannot {what}: {reply.status_code} from {reply.request.url}: {message}{hint}")


def run_link(env: Mapping[str, str]) -> str | None:
    """Where this CI run's artifacts are, for the note on a cut comment."""
    return next((link for f in FORGES.values() if (link := f.run_link(env))), None)

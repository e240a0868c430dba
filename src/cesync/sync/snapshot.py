"""``apply --snapshot``: an app version of the app before the apply, named after the git commit the repo is at."""

from __future__ import annotations

import datetime
import subprocess
from pathlib import Path
from typing import Any

from ..client import CesClient
from ..client.apps import create_version
from ..repo.repo import EnvTarget

__all__ = ["commit_of", "take_snapshot", "version_body"]

MAX_DISPLAY = 100


def commit_of(root: Path) -> tuple[str, str, bool]:
    """(full sha, subject, uncommitted changes) of the checkout holding root; ("", "", False) outside git."""
    try:
        log = subprocess.run(
            ["git", "log", "-1", "--format=%H%n%s"], cwd=root, capture_output=True, text=True, timeout=10, check=True
        ).stdout
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "."], cwd=root, capture_output=True, text=True, timeout=10, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return "", "", False
    sha, _, subject = log.partition("\n")
    return sha.strip(), subject.strip(), bool(dirty.strip())


def version_body(env: EnvTarget, sha: str, subject: str, dirty: bool, now: datetime.datetime) -> dict[str, Any]:
    """The AppVersion to create (pure): display name from the commit, else the time."""
    stamp = now.strftime("%Y-%m-%d %H:%M:%S UTC")
    if sha:
        display = f"{sha[:7]} {subject}".strip() + (" (+ uncommitted changes)" if dirty else "")
        description = f"the app before cesync apply --snapshot to {env.name} at {stamp}, commit {sha}" + (
            " with uncommitted changes" if dirty else ""
        )
    else:
        display = f"cesync apply {stamp}"
        description = f"the app before cesync apply --snapshot to {env.name} at {stamp} (not a git checkout)"
    if len(display) > MAX_DISPLAY:
        display = display[: MAX_DISPLAY - 3] + "..."
    return {"displayName": display, "description": description}


async def take_snapshot(client: CesClient, env: EnvTarget, root: Path) -> dict[str, Any]:
    sha, subject, dirty = commit_of(root)
    body = version_body(env, sha, subject, dirty, datetime.datetime.now(datetime.timezone.utc))
    return await create_version(client, env.parent, body)

"""Preview apps: the repo applied to a throw-away app beside an environment's (``APP-NAME``).

A preview app carries a mark in ``App.metadata`` (a map of strings the proto offers for
"additional information relevant to the app's details or intended usages"), so that the
one app cesync ever deletes is an app one of its previews made, and a preview never
writes into an app that happens to have the same id but is someone else's.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from ..api.kinds import APP, THE_APP
from ..api.resource import Resource
from ..client.api import CesClient
from ..client.apps import delete_app, get_app
from ..errors import CesyncError
from ..repo.environments import EnvTarget

__all__ = ["MARK", "check_preview", "delete_preview", "mark_desired", "preview_env"]

MARK = "cesync-preview"  # App.metadata key: "<environment>/<name>" of the preview that made the app
NAME_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?\Z")  # a pull request number, a branch slug


def preview_env(env: EnvTarget, name: str) -> EnvTarget:
    """The environment with its app id replaced by ``APP-NAME`` (everything else kept)."""
    if not NAME_RE.fullmatch(name):
        raise CesyncError(f"--name {name!r}: use 1-40 lowercase letters, digits and '-' (not first or last), e.g. pr-123")
    return replace(env, app=f"{env.app}-{name}")


def mark_of(env: EnvTarget, name: str) -> str:
    return f"{env.name}/{name}"


def mark_desired(desired: list[Resource], env: EnvTarget, name: str) -> list[Resource]:
    """desired with the preview's mark in the app's metadata (an app resource added when the
    repo has no app.yaml: the app is created with its id as display name, as apply does)."""
    mark = {MARK: mark_of(env, name)}
    out = [r for r in desired if not r.kind.singleton]
    app = next((r for r in desired if r.kind.singleton), None)
    body: dict[str, Any] = dict(app.body) if app else {"displayName": env.app}
    metadata = body.get("metadata")
    body["metadata"] = {**(metadata if isinstance(metadata, dict) else {}), **mark}
    out.append(replace(app, body=body) if app else Resource(THE_APP, APP, body))
    return out


def check_preview(app: dict[str, Any] | None, env: EnvTarget, name: str, parent: str) -> None:
    """An existing app of the preview's id must be this preview's: refuse anything else."""
    if app is None:
        return
    metadata = app.get("metadata")
    found = metadata.get(MARK) if isinstance(metadata, dict) else None
    if found != mark_of(env, name):
        whose = f"it is the preview {found!r}" if isinstance(found, str) else "it was not made by 'cesync preview'"
        raise CesyncError(
            f"{parent} exists and {whose}: cesync writes to or deletes only the app its own preview "
            f"'{mark_of(env, name)}' made; choose another --name"
        )


async def delete_preview(client: CesClient, env: EnvTarget, name: str, parent: str) -> bool:
    """Delete the preview app; False when there was none. Refuses an app the preview did not make."""
    app = await get_app(client, parent)
    if app is None:
        return False
    check_preview(app, env, name, parent)
    await delete_app(client, parent, str(app.get("etag", "")))
    return True

"""Reading and writing the applied record (core/record.py) in the app's versions.

``last_applied(client, env)`` is the one way to ask what cesync last applied to an
environment: the commit, the repo digest, the environment, cesync's version and the time,
with what cesync owns and the app as it was after that apply (the version's snapshot).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from .. import __version__
from ..api import descriptors
from ..api.kinds import KINDS
from ..client import CesClient
from ..client.apps import create_version, list_versions
from ..core.record import AppliedRecord, parse_record, record_body
from ..errors import ApiError, NotFound, PermissionDenied
from ..repo.repo import EnvTarget
from .snapshot import commit_of

__all__ = ["KIND_OF", "changes_since", "last_applied", "records", "records_in", "write_record"]

KIND_OF = {k.collection: k.name for k in KINDS.values() if not k.singleton}


@cache
def _in_snapshot() -> frozenset[str]:
    """The kinds an app version's snapshot holds (AppSnapshot's fields: app, agents, tools, examples,
    guardrails, toolsets): the evaluation kinds and deployments are not in it."""
    fields = {f.json_name for f in descriptors.message(f"{descriptors.PACKAGE}.AppSnapshot").fields}
    return frozenset(kind for collection, kind in KIND_OF.items() if collection in fields)


async def records(client: CesClient, env: EnvTarget) -> list[AppliedRecord]:
    """Every applied record of env's app for env, newest first."""
    return records_in(await list_versions(client, env.parent), env)


def records_in(versions: list[dict[str, Any]], env: EnvTarget) -> list[AppliedRecord]:
    """The applied records for env among versions as listVersions gives them (newest first)."""
    found = (parse_record(v, KIND_OF) for v in versions)
    return [r for r in found if r is not None and r.env == env.name]


async def last_applied(client: CesClient, env: EnvTarget) -> AppliedRecord | None:
    """What cesync last applied to env (None: never, or only by a cesync without records)."""
    found = await records(client, env)
    return found[0] if found else None


async def write_record(
    client: CesClient,
    env: EnvTarget,
    root: Path,
    *,
    digest: str,
    owned: Iterable[str],
    present: Iterable[str],
    keep: int,
    commit: str | None = None,
) -> AppliedRecord:
    """Create the record of an apply that succeeded, then delete the env's records beyond the newest keep.

    commit: what was applied when it is not root's checkout (a promotion renders a commit's tree
    in a temporary folder; "" for a rollback to a version no commit made). A record a deployment
    still serves (FAILED_PRECONDITION) is kept: deleting it is not ours to force.
    """
    sha, _, dirty = (commit, "", False) if commit is not None else commit_of(root)
    # The record's short form names what the snapshot holds and cesync does not own; what the
    # snapshot lacks (an evaluation) is then not present to it, so owning one keeps the long form.
    present = [key for key in present if key.split("/", 1)[0] in _in_snapshot()]
    body = record_body(env.name, sha, dirty, digest, __version__, owned, present)
    made = parse_record(await create_version(client, env.parent, body), KIND_OF)
    assert made is not None, "a record cesync just wrote reads back"
    for old in (await records(client, env))[keep:]:
        with contextlib.suppress(ApiError):
            (await client.delete(old.version, None)).unwrap()
    return made


MAX_CHANGELOG_PAGES = 20  # newest first: enough to reach back to the last apply without reading a whole history


async def changes_since(client: CesClient, parent: str, since: str, names: set[str]) -> dict[str, tuple[str, str]]:
    """Per resource name of names, (author, time) of the newest changelog after since (CES's
    projects.locations.apps.changelogs, newest first). {} where CES keeps none or we may not read them."""
    found: dict[str, tuple[str, str]] = {}
    token = ""
    try:
        for _ in range(MAX_CHANGELOG_PAGES):
            params = {"pageSize": 1000, **({"pageToken": token} if token else {})}
            page = await client.list_page(f"{parent}/changelogs", "list changelogs", parent, params)
            for entry in page.get("changelogs", []):
                if not isinstance(entry, dict):
                    continue
                at, name = str(entry.get("createTime", "")), str(entry.get("resource", ""))
                if at <= since:
                    return found  # older than the record: what follows is older still
                if name in names and name not in found:
                    found[name] = (str(entry.get("author", "")), at)
            token = str(page.get("nextPageToken", ""))
            if not token:
                break
    except (NotFound, PermissionDenied):
        return found  # no changelogs here, or no ces.changelogs.list: drift is still shown, without its author
    return found

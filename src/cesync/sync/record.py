"""Reading and writing the applied record (core/record.py) in the app's versions.

``last_applied(client, env)`` is the one way to ask what cesync last applied to an
environment: the commit, the repo digest, the environment, cesync's version and the time,
with what cesync owns and the app as it was after that apply (the version's snapshot).

The records are found from the versions' heads alone: the list asks for every field but the
snapshot (a snapshot is as large as the app, and ten records kept would be ten apps), newest
first, a page at a time, and the one record wanted is then read whole. What a snapshot-less
head says (env, commit) the record module reads from it as from a whole version.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Iterable
from functools import cache
from pathlib import Path
from typing import Any

from .. import __version__
from ..api import descriptors
from ..api.kinds import KINDS
from ..client import CesClient
from ..client.apps import create_version, get_version
from ..core.record import AppliedRecord, parse_record, record_body
from ..errors import ApiError, NotFound, PermissionDenied
from ..repo.repo import EnvTarget
from .snapshot import commit_of

__all__ = ["KIND_OF", "changes_since", "last_applied", "record_heads", "records", "records_in", "version_heads", "write_record"]

KIND_OF = {k.collection: k.name for k in KINDS.values() if not k.singleton}


@cache
def _in_snapshot() -> frozenset[str]:
    """The kinds an app version's snapshot holds (AppSnapshot's fields: app, agents, tools, examples,
    guardrails, toolsets): the evaluation kinds and deployments are not in it."""
    fields = {f.json_name for f in descriptors.message(f"{descriptors.PACKAGE}.AppSnapshot").fields}
    return frozenset(kind for collection, kind in KIND_OF.items() if collection in fields)


_VERSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.~-]*", re.ASCII)  # a name from the server, read before it is asked for
# ListAppVersions (discovery document ces.v1, projects.locations.apps.versions.list): orderBy takes
# "name" and "create_time" (AIP-132: "desc" reverses), pageSize is the page's bound.
NEWEST_FIRST = "create_time desc"
HEAD_PAGE = 20  # an env's newest record is nearly always among the newest few versions
# The system parameter every Google API takes (the discovery document's top-level "fields":
# "Selector specifying which fields to include in a partial response"): a version without its snapshot.
HEAD_FIELDS = "appVersions(name,displayName,description,createTime),nextPageToken"


async def version_heads(client: CesClient, parent: str) -> AsyncIterator[dict[str, Any]]:
    """The app's versions, newest first, each without its snapshot (a server that ignores ``fields``
    sends it anyway, and it is dropped: a page of HEAD_PAGE at a time is then held)."""
    params = {"orderBy": NEWEST_FIRST, "pageSize": HEAD_PAGE, "fields": HEAD_FIELDS}
    async for page in client.each_page(f"{parent}/versions", "appVersions", "list app versions", parent, params):
        # newest first as asked; sorted again within the page, as list_versions sorts, since a page is cheap to sort
        for version in sorted(page, key=lambda v: str(v.get("createTime", "")), reverse=True):
            yield {k: v for k, v in version.items() if k != "snapshot"}


async def record_heads(client: CesClient, env: EnvTarget) -> AsyncIterator[dict[str, Any]]:
    """The versions that carry a record of env, newest first, each without its snapshot."""
    async for head in version_heads(client, env.parent):
        found = parse_record(head, KIND_OF)
        if found is not None and found.env == env.name:
            yield head


async def records(client: CesClient, env: EnvTarget) -> list[AppliedRecord]:
    """Every applied record of env's app for env, newest first, each with its snapshot (one read per record)."""
    return [r for r in [await _whole(client, env.parent, head) async for head in record_heads(client, env)] if r is not None]


def records_in(versions: list[dict[str, Any]], env: EnvTarget) -> list[AppliedRecord]:
    """The applied records for env among versions as listVersions gives them (newest first)."""
    found = (parse_record(v, KIND_OF) for v in versions)
    return [r for r in found if r is not None and r.env == env.name]


async def _whole(client: CesClient, parent: str, head: dict[str, Any]) -> AppliedRecord | None:
    """The record of the version head names, read whole (its snapshot with it)."""
    name = str(head.get("name", ""))
    rid = name[len(parent) + len("/versions/") :] if name.startswith(f"{parent}/versions/") else ""
    version = await get_version(client, name) if _VERSION_ID.fullmatch(rid) else None
    return parse_record(version, KIND_OF) if version is not None else None  # None: deleted since it was listed


async def last_applied(client: CesClient, env: EnvTarget) -> AppliedRecord | None:
    """What cesync last applied to env (None: never, or only by a cesync without records): the
    newest record found in the versions' heads, then that one version read whole."""
    async for head in record_heads(client, env):
        found = await _whole(client, env.parent, head)
        if found is not None and found.env == env.name:
            return found
    return None


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
    old = [str(head.get("name", "")) async for head in record_heads(client, env)][keep:]
    for name in old:
        with contextlib.suppress(ApiError):
            (await client.delete(name, None)).unwrap()
    return made


# a record's createTime, as CES prints a Timestamp: only such a text goes into a filter
_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)")
MAX_CHANGELOG_PAGES = 20  # newest first: enough to reach back to the last apply without reading a whole history


async def changes_since(client: CesClient, parent: str, since: str, names: set[str]) -> dict[str, tuple[str, str]]:
    """Per resource name of names, (author, time) of the newest changelog after since (CES's
    projects.locations.apps.changelogs). {} where CES keeps none or we may not read them.

    ListChangelogs documents no default order, so the newest first is asked for (its orderBy takes
    "create_time", AIP-132's " desc" reverses it), and only those after since (its filter takes
    ``create_time > "..."``, ces.v1.json revision 20261016)."""
    found: dict[str, tuple[str, str]] = {}
    token = ""
    asked = {"orderBy": "create_time desc", **({"filter": f'create_time > "{since}"'} if _RFC3339.fullmatch(since) else {})}
    try:
        for _ in range(MAX_CHANGELOG_PAGES):
            params = {"pageSize": 1000, **asked, **({"pageToken": token} if token else {})}
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

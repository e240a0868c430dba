"""Reading and writing the applied record (core/record.py) in the app's versions.

``last_applied(client, env)`` is the one way to ask what cesync last applied to an
environment: the commit, the repo digest, the environment, cesync's version and the time,
with what cesync owns and the app as it was after that apply (the version's snapshot).

The records are found from the versions' heads alone: the list asks for every field but the
snapshot (a snapshot is as large as the app, and ten records kept would be ten apps), newest
first, a page at a time, and the one record wanted is then read whole, unless the repo's record
cache knows its snapshot's digest and the app has it (sync.recordcache). What a snapshot-less
head says (env, commit) the record module reads from it as from a whole version.

Only trusted records count (core.record.untrusted under the record key): one that fails is
skipped and named in ``ignored``; a record is one owner's (cesync.yaml ``owner``), and the
other owners' newest records say what this repo must leave alone (read_records).
"""

from __future__ import annotations

import contextlib
import datetime
import re
from collections.abc import AsyncGenerator, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import __version__
from ..api.kinds import KINDS
from ..api.resource import Resource
from ..client import CesClient
from ..client.apps import create_version, get_version
from ..core.record import AppliedRecord, parse_record, record_body, record_key, untrusted
from ..errors import ApiError, CesyncError, NotFound, PermissionDenied
from ..repo.keys import record_secret
from ..repo.repo import EnvTarget
from .recordcache import AppBase, RecordCache, base_of
from .snapshot import commit_of

__all__ = [
    "KIND_OF",
    "MAX_OWNERS",
    "RecordView",
    "changes_since",
    "current_key",
    "distrust",
    "ignored_note",
    "last_applied",
    "read_records",
    "record_heads",
    "records",
    "records_in",
    "settle_base",
    "version_heads",
    "write_record",
]

KIND_OF = {k.collection: k.name for k in KINDS.values() if not k.singleton}


def current_key() -> bytes:
    """The key records are sealed and checked with (core.record.record_key of the pipeline's secret)."""
    return record_key(record_secret()[1])


_VERSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.~-]*", re.ASCII)  # a name from the server, read before it is asked for
# ListAppVersions (discovery document ces.v1, projects.locations.apps.versions.list): orderBy takes
# "name" and "create_time" (AIP-132: "desc" reverses), pageSize is the page's bound.
NEWEST_FIRST = "create_time desc"
HEAD_PAGE = 20  # an env's newest record is nearly always among the newest few versions
MAX_OWNERS = 16  # other repos sharing one app: a few teams, not hundreds
# The system parameter every Google API takes (the discovery document's top-level "fields":
# "Selector specifying which fields to include in a partial response"): a version without its snapshot.
# etag too: what a version is known by in the record cache (sync.recordcache), which a version made
# again under the same id changes with its createTime.
HEAD_FIELDS = "appVersions(name,displayName,description,createTime,etag),nextPageToken"


async def version_heads(client: CesClient, parent: str) -> AsyncGenerator[dict[str, Any], None]:
    """The app's versions, newest first, each without its snapshot (a server that ignores ``fields``
    sends it anyway, and it is dropped: a page of HEAD_PAGE at a time is then held)."""
    params = {"orderBy": NEWEST_FIRST, "pageSize": HEAD_PAGE, "fields": HEAD_FIELDS}
    pages = client.each_page(f"{parent}/versions", "appVersions", "list app versions", parent, params)
    async with contextlib.aclosing(pages):  # a caller that stops early closes the list with it, in its loop
        async for page in pages:
            # newest first as asked; sorted again within the page, as list_versions sorts, since a page is cheap to sort
            for version in sorted(page, key=lambda v: str(v.get("createTime", "")), reverse=True):
                yield {k: v for k, v in version.items() if k != "snapshot"}


def distrust(record: AppliedRecord, key: bytes, first_of: Mapping[str, str] | None = None) -> str:
    """Why record is not to be trusted ("" when it is); first_of: seal -> the oldest version holding it."""
    why = untrusted(record, key)
    if not why and first_of and record.seal and first_of.get(record.seal, record.version) != record.version:
        why = f"it is a copy of the record in {_shown(first_of[record.seal])}"
    return why


def ignored_note(record: AppliedRecord, why: str) -> str:
    """The note naming an ignored record: the version's name as the server gave it, on one line,
    bounded (a name is the server's text; the reasons are cesync's own words and sealed values)."""
    return f"ignored the applied record in {_shown(record.version)}: {why}"


def _shown(name: str) -> str:
    """A version's name as the server gave it, on one line, bounded, no markup."""
    return "".join(ch if ch.isprintable() and ch not in "`<>|*[]" else "?" for ch in name[:300])


async def record_heads(
    client: CesClient, env: EnvTarget, *, owner: str = "", key: bytes | None = None, ignored: list[str] | None = None
) -> AsyncGenerator[dict[str, Any], None]:
    """The versions that carry a trusted record of env and owner, newest first, each without its snapshot.

    key: the record key (None: current_key()); an untrusted record is skipped and named in ignored."""
    key = current_key() if key is None else key
    heads = version_heads(client, env.parent)
    async with contextlib.aclosing(heads):
        async for head in heads:
            found = parse_record(head, KIND_OF)
            if found is None or found.env != env.name:
                continue
            if why := distrust(found, key):
                if ignored is not None:
                    ignored.append(ignored_note(found, why))
            elif found.namespace == owner:
                yield head


async def records(client: CesClient, env: EnvTarget, *, owner: str = "") -> list[AppliedRecord]:
    """Every trusted applied record of env's app for env and owner, newest first, each with its snapshot
    (one read per record)."""
    heads = [head async for head in record_heads(client, env, owner=owner)]
    return [r for r in [await _whole(client, env.parent, head) for head in heads] if r is not None]


def records_in(
    versions: list[dict[str, Any]],
    env: EnvTarget,
    *,
    owner: str = "",
    key: bytes | None = None,
    ignored: list[str] | None = None,
) -> list[AppliedRecord]:
    """The trusted applied records for env and owner among versions as listVersions gives them (newest first).

    key: the record key (None: current_key()). A record that fails core.record.untrusted is left out
    and named in ignored; so is each later version holding a copy of an earlier one's seal."""
    key = current_key() if key is None else key
    found = [r for r in (parse_record(v, KIND_OF) for v in versions) if r is not None and r.env == env.name]
    first_of: dict[str, str] = {}
    for r in sorted(found, key=lambda r: r.time):
        if r.seal:
            first_of.setdefault(r.seal, r.version)
    trusted = []
    for r in found:
        if why := distrust(r, key, first_of):
            if ignored is not None:
                ignored.append(ignored_note(r, why))
        elif r.namespace == owner:
            trusted.append(r)
    return trusted


@dataclass(frozen=True)
class RecordView:
    """What one plan takes from the app's records: this owner's newest trusted record, the base
    it holds (its snapshot per (kind, id)), what the other owners' newest trusted records own,
    and the records ignored (each with why)."""

    record: AppliedRecord | None = None  # without its snapshot: base holds what plan takes of it
    others: Mapping[str, str] = field(default_factory=dict)  # "kind/id" -> the owner namespace that owns it
    ignored: tuple[str, ...] = ()
    key_from: str = ""  # where the record key came from ("" unsealed: see repo.keys.record_secret)
    base: Mapping[tuple[str, str], dict[str, Any]] | None = None  # None: no record, or not read yet (known)
    known: bytes = b""  # the base's digest the record cache holds (sync.recordcache): base is the app's if it has it
    fresh: tuple[bytes, bytes] = (b"", b"")  # (head id, base digest) of a record read whole, for the cache to keep


async def read_records(
    client: CesClient, env: EnvTarget, owner: str = "", cache: RecordCache | None = None, *, whole: bool = True
) -> RecordView:
    """The records of env's app as plan needs them: every version's head (no snapshot), and one
    version read whole, this owner's newest trusted record of env, unless cache knows its base
    (then ``known`` says by what digest, for settle_base). whole=False: none is read whole (the
    view has no base), for a caller that needs only what the heads say.

    Another owner's records are read whatever environment they name (each repo names its
    environments as it likes): the newest trusted one per owner says what that owner owns."""
    key_from, secret = record_secret()
    key = record_key(secret)
    heads = [head async for head in version_heads(client, env.parent)]
    ignored: list[str] = []
    mine = records_in(heads, env, owner=owner, key=key, ignored=ignored)
    newest: dict[str, AppliedRecord] = {}
    for r in (parse_record(h, KIND_OF) for h in heads):
        if r is not None and r.namespace != owner and r.namespace not in newest and not untrusted(r, key):
            newest[r.namespace] = r
            if len(newest) > MAX_OWNERS:  # each is read whole: without a key, anyone can make thousands
                raise CesyncError(
                    f"the app {env.parent} holds trusted records of more than {MAX_OWNERS} other owners (cesync.yaml "
                    "owner), each of which plan would read"
                    + (
                        "; without a record key anyone who can create an app version writes them: set "
                        "CESYNC_RECORD_KEY (or CESYNC_PLAN_KEY) in the pipeline"
                        if not key
                        else ""
                    )
                )
    others = {k: ns for ns, r in sorted(newest.items(), reverse=True) for k in r.owned}
    found = RecordView(None, others, tuple(ignored), key_from)
    for r in mine:  # trusted on its head: the version read whole adds only its snapshot, which no one can change
        if not whole:
            return replace(found, record=r)
        head = next(h for h in heads if h.get("name") == r.version)
        head_id = cache.head_id(client.base_url, head) if cache is not None else b""
        if known := cache.known(head_id) if cache is not None else b"":
            return replace(found, record=r, known=known)
        full = await _whole(client, env.parent, head)
        if full is not None and full.time == r.time:  # not made again since it was listed
            base = base_of(full.snapshot, KIND_OF)
            fresh = (head_id, cache.of_base(base)) if cache is not None else (b"", b"")
            return replace(found, record=r, base=base, fresh=fresh)
    return found


async def settle_base(
    client: CesClient, env: EnvTarget, owner: str, view: RecordView, remote: list[Resource], cache: RecordCache
) -> RecordView:
    """view with its base: the app as read, when it has the digest the cache knows the record's base
    by (nothing changed since the apply); else the record's version read whole (the records read
    again if it went since it was listed)."""
    if view.base is not None or not view.known or view.record is None:
        return view
    if cache.of_app(remote) == view.known:
        return replace(view, base=AppBase(remote))
    whole = await _whole(client, env.parent, {"name": view.record.version})
    if whole is not None and whole.time == view.record.time:
        return replace(view, base=base_of(whole.snapshot, KIND_OF))
    return await read_records(client, env, owner)


async def _whole(client: CesClient, parent: str, head: dict[str, Any]) -> AppliedRecord | None:
    """The record of the version head names, read whole (its snapshot with it)."""
    name = str(head.get("name", ""))
    rid = name[len(parent) + len("/versions/") :] if name.startswith(f"{parent}/versions/") else ""
    version = await get_version(client, name) if _VERSION_ID.fullmatch(rid) else None
    return parse_record(version, KIND_OF) if version is not None else None  # None: deleted since it was listed


async def last_applied(
    client: CesClient, env: EnvTarget, *, owner: str = "", ignored: list[str] | None = None
) -> AppliedRecord | None:
    """What cesync last applied to env (None: never, or only by a cesync without records): the
    newest trusted record found in the versions' heads, then that one version read whole."""
    heads = record_heads(client, env, owner=owner, ignored=ignored)
    async with contextlib.aclosing(heads):  # a return inside closes the list in this loop
        async for head in heads:
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
    keep: int,
    commit: str | None = None,
    owner: str = "",
    sums: Mapping[str, str] | None = None,
    now: datetime.datetime | None = None,
) -> AppliedRecord:
    """Create the record of an apply that succeeded, then delete the env's records beyond the newest keep.

    commit: what was applied when it is not root's checkout (a promotion renders a commit's tree
    in a temporary folder; "" for a rollback to a version no commit made). A record a deployment
    still serves (FAILED_PRECONDITION) is kept: deleting it is not ours to force.
    """
    sha, _, dirty = (commit, "", False) if commit is not None else commit_of(root)
    when = now or datetime.datetime.now(datetime.timezone.utc)
    body = record_body(
        env.parent,
        env.name,
        sha,
        dirty,
        digest,
        __version__,
        owned,
        written_at=when.isoformat(timespec="seconds"),
        namespace=owner,
        sums=sums,
        key=current_key(),
    )
    made = parse_record(await create_version(client, env.parent, body), KIND_OF)
    assert made is not None, "a record cesync just wrote reads back"
    old = [str(head.get("name", "")) async for head in record_heads(client, env, owner=owner)][keep:]
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

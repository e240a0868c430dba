"""App versions: what restoring one would change in the app now, as a plan."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..api.kinds import APP, THE_APP, by_snapshot_field
from ..api.resource import Resource
from ..core.plan import Plan
from ..core.planbuild import build_plan
from ..core.scrubber import clip
from ..errors import CesyncError, NotFound
from ..repo.repo import ID_RE, EnvTarget, Repo
from ..sync.remote import read_remote
from .masking import hidden_fields
from .planning import plan_time

if TYPE_CHECKING:  # the HTTP client loads when a command first uses it (see client/__init__.py)
    from ..client.api import CesClient
    from ..core.record import AppliedRecord


async def restore_plan(client: CesClient, env: EnvTarget, version: str, repo: Repo | None = None) -> tuple[str, Plan]:
    """The version's full name and, as a plan, what restoring it would change in the app now.

    A version's snapshot holds the app's settings, agents, tools, toolsets, guardrails and
    examples (not deployments): compared with the app, deletes included. Fields the repo
    renders from a sensitive variable, and fields holding a known sensitive value, are
    masked on both sides: the snapshot's old value is one cesync may no longer know.
    """
    name = version if version.startswith(env.parent + "/versions/") else f"{env.parent}/versions/{version}"
    if ("/" in version and name != version) or not ID_RE.match(name.rsplit("/", 1)[-1]):
        raise CesyncError(f"{version!r} is not a version of {env.parent}; 'cesync versions' lists them")
    try:
        found = await client.get(name)
    except NotFound:
        raise CesyncError(f"no version {version!r} in {env.parent}; 'cesync versions' lists them") from None
    snapshot = found.get("snapshot") if isinstance(found.get("snapshot"), dict) else {}
    assert isinstance(snapshot, dict)
    app = snapshot.get(THE_APP.snapshot_field)
    wanted = [Resource(THE_APP, APP, app)] if isinstance(app, dict) else []
    for collection, items in snapshot.items():
        kind = by_snapshot_field(collection)
        if kind is not None and not kind.singleton and isinstance(items, list):
            for b in (b for b in items if isinstance(b, dict) and kind.managed(b)):
                rid = kind.id_in(env.parent, b.get("name"))
                if rid is None:
                    raise CesyncError(
                        f"the version's snapshot holds a {kind.name} named {clip(repr(str(b.get('name'))), 120)}, which is not a "
                        f"{kind.name} of {env.parent}: nothing was changed"
                    )
                wanted.append(Resource(kind, rid, b))
    remote = [r for r in await read_remote(client, env.parent) if r.kind.in_snapshot]
    hidden = hidden_fields(repo, env, [*wanted, *remote]) if repo is not None else {}
    return name, build_plan(env.name, env.parent, wanted, remote, prune=True, sensitive=hidden, created_at=plan_time())


async def record_rollback(
    client: CesClient, env: EnvTarget, repo: Repo, restored: str, versions: list[dict[str, Any]]
) -> AppliedRecord | None:
    """The applied record after restoring the version named restored (None: cesync never applied here);
    versions: the app's versions as listed after the restore.

    The restore brings back what the last apply deleted, which that apply's record no longer
    owns: without a new record, plan would call cesync's own tools "kept: cesync did not make
    them". So the new record owns what the last record owns and what cesync owned when the
    restored version was made: the version's own record, or else the newest record made before
    it (a version --snapshot took just before an apply), of what the app now holds. Not what any
    older record owned: an id cesync once made, pruned, and someone then made again by hand
    would become cesync's, for --prune to delete. The commit is the restored record's, when the
    version is one (the app is then what that commit made); else none, so promote refuses it."""
    from ..core.record import owned_sums
    from ..sync.record import current_key, records_in, write_record

    owner = repo.config.owner or ""
    found = records_in(versions, env, owner=owner)  # newest first
    if not found:
        return None
    made_at = _nanos(next((v.get("createTime") for v in versions if v.get("name") == restored), None))
    was = next((r for r in found if r.version == restored), None)
    then = was or next((r for r in found if made_at is not None and (_nanos(r.time) or made_at + 1) <= made_at), None)
    now = await read_remote(client, env.parent)
    present = {f"{r.kind}/{r.id}" for r in now if not r.kind.singleton}
    owned = {*found[0].owned, *(then.owned if then is not None else ())} & present
    return await write_record(
        client,
        env,
        repo.root,
        digest=was.digest if was is not None else "",
        owned=owned,
        keep=repo.config.records.keep,
        owner=owner,
        sums=owned_sums(now, owned, current_key()),
        commit=was.commit if was is not None and not was.dirty else "",
    )


def _nanos(stamp: object) -> int | None:
    """An RFC 3339 createTime as nanoseconds (protobuf's Timestamp reads any precision), None if it is not one."""
    from google.protobuf.timestamp_pb2 import Timestamp

    parsed = Timestamp()
    try:
        parsed.FromJsonString(str(stamp))
    except ValueError:
        return None
    return int(parsed.ToNanoseconds())

"""Reading an app: the app itself and one request per page of each kind, all at once."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..api.kinds import APP, KINDS, THE_APP, ResourceKind
from ..api.resource import Resource
from ..errors import CesyncError

if TYPE_CHECKING:
    from ..client import CesClient

__all__ = ["left_out_notes", "list_app", "read_existing", "read_remote"]


async def list_app(client: CesClient, parent: str) -> dict[ResourceKind, list[Resource]]:
    """Every listed resource of the app, by kind (unfiltered: system tools included)."""
    kinds = [k for k in KINDS.values() if k.listable]
    # Every list finishes before an error is raised: one failing first must not leave the others
    # running unawaited (their errors were printed as "Task exception was never retrieved" tracebacks).
    listed = await asyncio.gather(*(client.resources(parent, k) for k in kinds), return_exceptions=True)
    failed = next((x for x in listed if isinstance(x, BaseException)), None)
    if failed is not None:
        raise failed
    return {k: items for k, items in zip(kinds, listed, strict=True) if not isinstance(items, BaseException)}


def left_out_notes(found: list[Resource]) -> list[str]:
    """Why listed resources are not cesync's to write (tools CES makes: api.behaviour's READ_ONLY),
    one note per reason naming its resources: every app has the same three system tools, and a
    line each on every export and pull was noise."""
    groups: dict[tuple[str, str, str], list[Resource]] = {}
    for r in found:  # by kind too: a note speaks of one kind's resources
        groups.setdefault((r.kind.name, *_reason(r)), []).append(r)
    return [_note(reason, detail, rs) for (_, reason, detail), rs in groups.items()]


def _reason(r: Resource) -> tuple[str, str]:
    name = str(r.body.get("name", ""))
    if "/toolsets/" in name:
        return "generated", name.split("/toolsets/", 1)[1].split("/", 1)[0]
    member = next((t for t in r.kind.server_made if t in r.body), None)
    if member == "systemTool":
        return "system", ""
    return ("member", member) if member is not None else ("other", "")


def _note(reason: str, detail: str, rs: list[Resource]) -> str:
    kind, ids = rs[0].kind, ", ".join(r.id for r in rs)
    one = len(rs) == 1
    if reason == "generated":
        what = f"{kind} {ids}: generated" if one else f"{kind.counted(len(rs))} generated"
        by = f" by toolset {detail}" + ("" if one else f" ({ids})")
        return f"left out {what}{by}, read-only (toolsets/{detail}.yaml defines {'it' if one else 'them'})"
    if reason == "system":
        if one:
            return f"left out {kind} {ids}: a system tool, which CES makes with every app (read-only)"
        return f"left out {len(rs)} system {kind.plural} ({ids}): CES makes them with every app (read-only)"
    if reason == "member":
        if one:
            return f"left out {kind} {ids} ({detail}): CES makes these itself, read-only; not a file to apply"
        return f"left out {kind.counted(len(rs))} ({detail}: {ids}): CES makes these itself, read-only; not files to apply"
    if one:
        return f"left out {kind} {ids}: cesync does not manage it"
    return f"left out {kind.counted(len(rs))} ({ids}): cesync does not manage them"


async def read_remote(client: CesClient, parent: str, left_out: list[str] | None = None) -> list[Resource]:
    """The resources cesync manages, in registry order; the app first when it exists, nothing when it does not.

    left_out: gets the notes (left_out_notes) of the listed resources that are not cesync's to write."""
    from ..client.apps import get_app  # with the client: plan imports it in the thread that reads ahead

    app, listed = await asyncio.gather(get_app(client, parent), list_app(client, parent), return_exceptions=True)
    if isinstance(app, BaseException):
        raise app
    if app is None:
        return []  # no app, nothing in it (the lists' NOT_FOUND says the same)
    if isinstance(listed, BaseException):
        raise listed
    if left_out is not None:
        left_out += left_out_notes([r for items in listed.values() for r in items if not r.kind.managed(r.body)])
    return [Resource(THE_APP, APP, app)] + [r for kind, items in listed.items() for r in items if kind.managed(r.body)]


async def read_existing(
    client: CesClient, parent: str, left_out: list[str] | None = None, *, writes: bool = True
) -> list[Resource]:
    """read_remote for commands that draw or write files from the app: a missing app is an error, not an empty app.

    writes: whether the command writes files (pull, export), so the error says none was written."""
    remote = await read_remote(client, parent, left_out)
    if not remote:
        said = "; nothing was written" if writes else ""
        raise CesyncError(f"the app {parent} does not exist (check project, location and app){said}")
    return remote

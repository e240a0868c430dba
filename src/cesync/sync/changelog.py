"""CES's changelogs of one resource after a moment: who else wrote it while cesync did.

An App's or a Deployment's etag is output only, so the server cannot refuse a write made over
someone else's (cesync.api.behaviour.etag_guards): apply reads the resource just before writing
it, and reads the changelogs (``projects.locations.apps.changelogs``: author, description of
the changed fields, resource, action, createTime) afterwards to see what landed in between.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..client import CesClient
from ..errors import NotFound, PermissionDenied

__all__ = ["Entry", "nanos", "overwrite_report", "overwritten", "writes_since"]

MAX_PAGES = 5  # oldest first from the read: the apply's own write follows within moments
MAX_TEXT = 200  # a server's words, bounded before anything prints them


@dataclass(frozen=True)
class Entry:
    author: str
    at: str  # createTime
    fields: str  # the changelog's description: the changed fields, as CES words them
    action: str
    etag: str  # the etag the write left (newResource.etag): which write made which state


def _plain(value: object) -> str:
    """A server's words on one line of printable text, bounded: they end up in a conflict message."""
    return "".join(ch if ch.isprintable() else " " for ch in str(value)[:MAX_TEXT])


def nanos(stamp: str) -> int | None:
    """An RFC 3339 time as nanoseconds since the epoch (any precision, as protobuf reads it); None if not one."""
    from google.protobuf.timestamp_pb2 import Timestamp

    found = Timestamp()
    try:
        found.FromJsonString(stamp)
    except ValueError:
        return None
    return found.seconds * 10**9 + found.nanos


async def writes_since(client: CesClient, parent: str, resource: str, after: str) -> list[Entry] | None:
    """The changelog entries of resource made after `after` (createTime), oldest first; None where
    CES keeps none or the identity may not read them (nothing can be said)."""
    low = nanos(after)
    if low is None:
        return None
    params: dict[str, Any] = {"orderBy": "create_time", "filter": f'create_time > "{after}"', "pageSize": 100}
    found: list[Entry] = []
    token = ""
    try:
        for _ in range(MAX_PAGES):
            page = await client.list_page(
                f"{parent}/changelogs", "list changelogs", parent, {**params, **({"pageToken": token} if token else {})}
            )
            for entry in page.get("changelogs", []):
                if not isinstance(entry, dict) or str(entry.get("resource", "")) != resource:
                    continue
                at = nanos(str(entry.get("createTime", "")))
                if at is not None and low < at:
                    after_write = entry.get("newResource")
                    found.append(
                        Entry(
                            author=_plain(entry.get("author", "")),
                            at=_plain(entry.get("createTime", "")),
                            fields=_plain(entry.get("description", "")),
                            action=_plain(entry.get("action", "")),
                            etag=_plain(after_write.get("etag", "")) if isinstance(after_write, dict) else "",
                        )
                    )
            token = str(page.get("nextPageToken", ""))
            if not token:
                break
    except (NotFound, PermissionDenied):
        return None
    return sorted(found, key=lambda e: nanos(e.at) or 0)


def overwritten(entries: list[Entry], read_etag: str, written_etag: str) -> list[Entry]:
    """Among entries (oldest first), the writes of other authors between the one that left the state
    read before the write (read_etag) and the write itself (written_etag). Each write is known by the
    etag it left, not by its time: a server stamps a resource and its changelog apart. [] when the
    write is not among them (nothing can be said)."""
    ours = next((i for i in range(len(entries) - 1, -1, -1) if entries[i].etag == written_etag), None)
    if ours is None or not written_etag:
        return []
    start = next((i + 1 for i in range(ours - 1, -1, -1) if read_etag and entries[i].etag == read_etag), 0)
    return [e for e in entries[start:ours] if e.author != entries[ours].author]


async def overwrite_report(client: CesClient, parent: str, resource: str, kind: str, read: tuple[str, str], etag: str) -> str:
    """What another author wrote to resource between apply's read of it (read: its updateTime and
    etag) and apply's write (which left etag), worded as a conflict; "" if nothing can be said."""
    from ..errors import ApiError

    try:
        entries = await writes_since(client, parent, resource, read[0])
    except ApiError:
        entries = None
    others = overwritten(entries or [], read[1], etag)
    if not others:
        return ""
    said = "; ".join(f"{e.author} at {e.at} ({e.fields or e.action})" for e in others)
    return (
        f"written, over a change made between cesync's read and its write: {said}. A {kind}'s etag is output "
        "only, so the server could not refuse the write: that change is overwritten; put it in the repo (cesync "
        "pull) or make it again"
    )

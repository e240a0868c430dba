"""Changelogs: one per write, ListChangelogs and GetChangelog."""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from . import lists
from .calls import api_version, page_args, query
from .errors import RpcError
from .resources import COLLECTIONS
from .service import Service
from .store import now, page_token
from .wire import Printed

_EMAIL = re.compile(r"^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,190}\Z")


def _author(request: Request) -> str:
    """The caller's identity: a bearer token that is an e-mail address (a test identity), else anonymous."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token if scheme.lower() == "bearer" and _EMAIL.match(token) else "emulator@cesync.local"


class Changelogs(Service):
    """The app's changelog: written by every write, read by two calls."""

    def _log(
        self,
        db: Any,
        request: Request,
        parent: str,
        action: str,
        collection: str,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
    ) -> None:
        """A Changelog of one write (google.cloud.ces.v1.Changelog: author, displayName, description,
        resource, resourceType, action, originalResource, newResource, createTime, sequenceNumber).

        The proto documents the fields, not their values: the action words are Create, Update and
        Delete, as the list filter's example ``action="Create"`` writes them; the resource type (the
        resource's message name) and the description's wording ("changed fields") are the
        emulator's own. The author is the caller's identity: the
        emulator takes any bearer token, and one that is an e-mail address names a test identity
        (anonymous callers are emulator@cesync.local, as the app versions' creator).
        """
        if collection == "versions":
            return
        seq = int(self.store.next_id(db, parent, "changelog").rsplit("-", 1)[-1])
        cid = f"changelog-{seq:06d}"
        resource = after or before or {}
        server = {"name", "etag", "createTime", "updateTime"}
        changed = sorted(k for k in {*(before or {}), *(after or {})} - server if (before or {}).get(k) != (after or {}).get(k))
        data: dict[str, Any] = {
            "name": f"{parent}/changelogs/{cid}",
            "author": _author(request),
            "displayName": str(resource.get("displayName") or str(resource.get("name", "")).rsplit("/", 1)[-1]),
            "description": ", ".join(changed) if action == "UPDATE" else action.lower(),
            "resource": str(resource.get("name", parent)),
            "resourceType": "App" if collection == "apps" else COLLECTIONS[collection].message,
            # ListChangelogs' filter doc (ces.v1.json) gives `action="Create"` as a case-sensitive exact
            # match: the action words are capitalised so
            "action": action.capitalize(),
            "createTime": now(),
            "sequenceNumber": str(seq),
        }
        if before is not None:
            data["originalResource"] = before
        if after is not None:
            data["newResource"] = after
        text = json.dumps(data, separators=(",", ":"))
        self.store.put(db, parent, "changelogs", cid, Printed(data, text, text))

    async def list_changelogs(self, request: Request, parent: str, collection: str, _: str | None) -> Any:
        """ListChangelogs: its documented filter and orderBy (lists.py); by name (oldest first) when
        no order is asked for, as the emulator's other v1 lists."""
        asked = lists.listing("changelogs", query(request), version=api_version(request))
        offset, size = page_args(request, f"{parent}|{asked.key}")
        self.store.app(parent)
        with self.store.transaction() as db:
            self._existing_app(db, parent)
            rows, total = self.store.page(
                db,
                parent,
                "changelogs",
                system=True,
                offset=offset,
                size=size,
                order=asked.plain,
                arrange=lambda found: asked.arranged(found, lambda r: r[2]),
            )
        text = '{"changelogs":[' + ",".join(r[0] for r in rows) + "]"
        if offset + size < total:
            text += f',"nextPageToken":{json.dumps(page_token(offset + size, f"{parent}|{asked.key}"))}'
        return Response(text + "}", media_type="application/json")

    async def get_changelog(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        self.store.app(parent)
        with self.store.transaction() as db:
            text = self.store.text(db, parent, "changelogs", rid, False)
        if text is None:
            raise RpcError("NOT_FOUND", f"changelog {parent}/changelogs/{rid} not found")
        return Response(text, media_type="application/json")
